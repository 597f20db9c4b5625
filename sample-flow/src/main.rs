//! `sample-flow`: the system under test that oemputx drives.
//!
//! By default the reference flow (a system under test modelled on the production flow of
//! IBM's WebSphere Message Broker for z/OS performance report: 630-byte XML in, a dozen nodes,
//! a database insert): check the XML request, transform
//! it, copy it to an audit queue, check it again, enrich it, insert a row into PostgreSQL,
//! filter, build the reply and send it to `reply_to` with the request's correlation id.
//! `--echo` is a bare responder that sends the request's body back. Both acknowledge a
//! request only after everything it causes is written. On exit each thread prints the
//! process CPU clock's growth from its first request to its last reply, the truth to
//! compare oemputx's figure with.

use anyhow::Context;
use clap::Parser;
mod amqp10_io;
mod amqp_io;
mod db;
mod engine;
mod flow_statistics;
mod kafka_io;
mod mqtt_io;
mod nats_io;
mod nodes;
mod stomp_io;

use engine::{Broker, FlowOptions};
use flow_statistics::{Level, Sink};
use oemputx::transport::amqp::url::AmqpEndpoint;
use oemputx::transport::amqp10::url::Amqp10Endpoint;
use oemputx::transport::kafka::url::KafkaEndpoint;
use oemputx::transport::mqtt::url::MqttEndpoint;
use oemputx::transport::nats::url::NatsEndpoint;
use oemputx::transport::parse_url;
use oemputx::transport::stomp::url::StompEndpoint;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A message flow for oemputx to drive: consumes requests, replies to `reply_to`.
#[derive(Debug, Parser)]
#[command(name = "sample-flow", version)]
struct Args {
    /// Broker URL (amqp://, amqps://, nats://, amqp10://, stomp://, mqtt:// or kafka://). oemputx passes a URL with a password in
    /// OEMPUTX_URL rather than on the command line, where every local user could read it.
    #[arg(
        long,
        env = "OEMPUTX_URL",
        hide_env_values = true,
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
    )]
    url: String,
    /// Queue (subject, topic) to consume requests from, declared durable if missing.
    /// [default: the shipped profile's for the URL's transport, as oemputx's
    /// --request-queue: MQSI.IN; MQSI.IN.AMQP10 over amqp10://, MQSI.IN.STOMP over
    /// stomp://, MQSI/IN over mqtt://]
    #[arg(long)]
    input_queue: Option<String>,
    /// Queue for an audit copy of each valid request (declared durable if missing).
    #[arg(long, value_name = "QUEUE")]
    audit_queue: Option<String>,
    /// PostgreSQL URL, e.g. postgres://postgres@127.0.0.1:5432/test: insert one row per
    /// message. Without it the flow has no database node. A URL without a password takes
    /// PGPASSWORD's, as libpq does.
    #[arg(long, value_name = "URL")]
    db: Option<String>,
    /// Table for --db, created if missing.
    #[arg(long, value_name = "NAME", default_value = "oemputx_flow")]
    db_table: String,
    /// Do not wait for each row's commit to reach the disk (PostgreSQL's synchronous_commit =
    /// off): a crash of the database may lose the last rows, never corrupt them. For
    /// measurements where the disk's flush latency, not CPU, would set the rate.
    #[arg(long, requires = "db")]
    db_async_commit: bool,
    /// Bare responder: reply with the request's body and correlation id.
    #[arg(long)]
    echo: bool,
    /// Unacknowledged requests the broker may push ahead to each instance.
    #[arg(long, default_value_t = 64)]
    prefetch: u16,
    /// NATS: read requests from the JetStream stream that captures --input-queue (created as
    /// a work queue in files if missing), for oemputx's --persistent; reply to each request's
    /// Reply-To header and acknowledge it after the reply.
    #[arg(long)]
    jetstream: bool,
    /// With --jetstream: the replicas of the stream, when the flow creates it (1 to 5; a
    /// cluster's nodes each keep a copy). A stream found with another number is refused.
    #[arg(long, value_name = "N", requires = "jetstream", value_parser = clap::value_parser!(u8).range(1..=5))]
    replicas: Option<u8>,
    /// AMQP 0-9-1: the kind of input queue the flow declares (classic, quorum, stream), as
    /// oemputx --queue-type asks for it; a queue found of another kind is refused by the
    /// broker. [default: the broker's, classic]
    #[arg(long, value_name = "KIND")]
    queue_type: Option<oemputx::transport::QueueType>,
    /// Instances in this process, one thread and connection each (IBM's broker report's additional
    /// instances; several processes are its execution groups).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Burn this much extra CPU per message: a controlled cost, for calibrating oemputx or
    /// simulating a regression. Spins a fixed integer loop for as many rounds as the time
    /// holds at the speed measured over 50 ms of CPU at start (no clock read per message).
    /// Fractions are allowed (4.4): a change sized as a share of tens of µs needs them.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 0.0, value_parser = microseconds)]
    extra_cpu_us: f64,
    /// Do this many rounds of fixed arithmetic per message: a controlled cost counted in
    /// instructions, the same under valgrind as without it (--extra-cpu-us burns time, so its
    /// instructions depend on the speed it runs at). About 6 instructions a round.
    #[arg(long, value_name = "ROUNDS", default_value_t = 0)]
    extra_work: u64,
    /// Accounting and statistics like the broker's own: per thread, or per thread and node.
    #[arg(long, value_enum, default_value_t = Level::Off)]
    stats: Level,
    /// How often each thread writes a statistics snapshot (one JSON line).
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    stats_interval: humantime::Duration,
    /// Write statistics to this file (appended) instead of stdout.
    #[arg(long, value_name = "PATH")]
    stats_file: Option<PathBuf>,
}

/// A non-negative, finite number of microseconds.
fn microseconds(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(us) if (0.0..1e9).contains(&us) => Ok(us),
        _ => Err(format!(
            "'{v}' is not a number of microseconds: give e.g. 4 or 4.4 (0 or more)"
        )),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-flow: error: {e:#}");
            let usage = e
                .chain()
                .any(|c| c.is::<oemputx::config::ConfigError>() || c.is::<clap::Error>());
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// sample-flow serves a node list on amqp:// and nats:// (reconnecting node by node);
/// elsewhere a list is refused rather than served on its first node alone.
fn one_node(later: &[(String, u16)], scheme: &str) -> anyhow::Result<()> {
    if later.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "sample-flow on a list of {scheme}:// nodes is not built yet (it is on amqp:// and nats://): give --url one node"
    )
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let endpoint = parse_url(&args.url)?;
    let ep = if let Some(ep) = endpoint.downcast::<AmqpEndpoint>() {
        Broker::Amqp(ep.clone())
    } else if let Some(ep) = endpoint.downcast::<NatsEndpoint>() {
        Broker::Nats(ep.clone())
    } else if let Some(ep) = endpoint.downcast::<Amqp10Endpoint>() {
        one_node(&ep.later, "amqp10")?;
        Broker::Amqp10(ep.clone())
    } else if let Some(ep) = endpoint.downcast::<StompEndpoint>() {
        one_node(&ep.later, "stomp")?;
        Broker::Stomp(ep.clone())
    } else if let Some(ep) = endpoint.downcast::<MqttEndpoint>() {
        one_node(&ep.later, "mqtt")?;
        Broker::Mqtt(ep.clone())
    } else if let Some(ep) = endpoint.downcast::<KafkaEndpoint>() {
        Broker::Kafka(ep.clone())
    } else {
        anyhow::bail!(
            "--url must be an amqp://, amqps://, nats://, amqp10://, stomp://, mqtt:// or kafka:// URL, not {} (the embedded queue manager has its own responder; IBM MQ queues are served by App Connect Enterprise flows)",
            endpoint.redacted()
        )
    };
    if args.queue_type.is_some() && !matches!(ep, Broker::Amqp(_)) {
        anyhow::bail!("--queue-type needs an amqp:// --url: the kinds of queue are RabbitMQ's");
    }
    if args.jetstream && !matches!(ep, Broker::Nats(_)) {
        anyhow::bail!("--jetstream needs a nats:// --url: JetStream is NATS's store");
    }
    if args.threads == 0 {
        anyhow::bail!("--threads must be at least 1");
    }
    let db = match (&args.db, args.echo) {
        (Some(url), false) => {
            db::check_table(&args.db_table)?;
            // Once per process, before the threads: they only insert.
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the runtime")?
                .block_on(db::create_table(url, &args.db_table))?;
            Some((url.clone(), args.db_table.clone()))
        }
        _ => None,
    };
    let sink = match &args.stats_file {
        None => Sink::Stdout,
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening --stats-file {}", path.display()))?;
            Sink::File(Arc::new(Mutex::new(f)))
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let input_queue = input_queue(&args, &endpoint);
    let options = FlowOptions {
        ep,
        input_queue,
        audit_queue: args.audit_queue.clone().filter(|_| !args.echo),
        db,
        db_async_commit: args.db_async_commit,
        echo: args.echo,
        prefetch: args.prefetch,
        jetstream: args.jetstream,
        replicas: args.replicas.map(usize::from),
        queue_type: args.queue_type,
        threads: args.threads,
        extra_cpu: Duration::from_secs_f64(args.extra_cpu_us / 1e6),
        extra_work: args.extra_work,
        stats: args.stats,
        stats_interval: args.stats_interval.into(),
        sink,
        stop,
    };
    if !options.extra_cpu.is_zero() {
        // Measured before any message, so that no reply waits for it.
        engine::calibrate_burn().context("measuring the speed of --extra-cpu-us's loop")?;
    }
    let handles: Vec<_> = (0..args.threads)
        .map(|i| {
            let o = options.clone();
            std::thread::Builder::new()
                .name(format!("flow-{i}"))
                .spawn(move || run_thread(i, &o))
        })
        .collect::<Result<_, _>>()
        .context("starting flow threads")?;
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(anyhow::anyhow!("a flow thread panicked"));
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// The queue to consume: --input-queue, else the transport's default, the one oemputx and
/// the shipped profile use on it, so that `sample-flow --url U` and `oemputx --qmgr U` (or
/// the profile) meet.
fn input_queue(args: &Args, endpoint: &oemputx::transport::Endpoint) -> String {
    args.input_queue
        .clone()
        .unwrap_or_else(|| endpoint.kind().default_request_queue().to_string())
}

/// Run flow instance `i` until stopped; its own runtime, connection and subscription.
fn run_thread(i: usize, o: &FlowOptions) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        match &o.ep {
            Broker::Amqp(ep) => {
                let io = amqp_io::AmqpIo::open(i, ep, o).await?;
                engine::serve(i, o, io, &ep.redacted()).await
            }
            Broker::Nats(ep) => {
                let io = nats_io::NatsIo::open(i, ep, o).await?;
                engine::serve(i, o, io, &ep.redacted()).await
            }
            Broker::Amqp10(ep) => {
                let io = amqp10_io::Amqp10Io::open(i, ep, o).await?;
                engine::serve(i, o, io, &ep.redacted()).await
            }
            Broker::Stomp(ep) => {
                let io = stomp_io::StompIo::open(i, ep, o).await?;
                engine::serve(i, o, io, &ep.redacted()).await
            }
            Broker::Mqtt(ep) => {
                let io = mqtt_io::MqttIo::open(i, ep, o).await?;
                engine::serve(i, o, io, &ep.redacted()).await
            }
            Broker::Kafka(ep) => {
                let io = kafka_io::KafkaIo::open(i, ep, o).await?;
                engine::serve(i, o, io, &ep.redacted()).await
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shipped profile meets sample-flow started with nothing but the profile's URL:
    /// the queue (topic, subject) the flow consumes by default is the one the profile puts
    /// requests to, and the one oemputx puts to on that URL without a profile. (The MQTT
    /// profile's `MQSI/IN` against the flow's `MQSI.IN` ran 181 s for 0 transactions.)
    #[test]
    fn every_shipped_profile_s_request_queue_is_the_sample_flow_s_default_on_its_transport() {
        let profiles = oemputx::config::profile::built_in().expect("the shipped profiles parse");
        let mut checked = Vec::new();
        for (name, p) in &profiles {
            let endpoint = parse_url(&p.url).expect("a shipped profile's URL parses");
            let want = p
                .request_queue
                .clone()
                .unwrap_or_else(|| oemputx::config::DEFAULT_REQUEST_QUEUE.into());
            let oemputx_default = endpoint.kind().default_request_queue();
            assert_eq!(
                oemputx_default, want,
                "{name}: oemputx --qmgr {} would put to {oemputx_default}, the profile to {want}",
                p.url
            );
            // The embedded queue manager serves itself; sample-flow refuses it.
            if endpoint.kind().transport() == "embedded" {
                continue;
            }
            let args = Args::try_parse_from(["sample-flow", "--url", &p.url])
                .expect("sample-flow takes the profile's URL");
            assert_eq!(
                input_queue(&args, &endpoint),
                want,
                "{name}: `sample-flow --url {}` consumes another queue than the profile's",
                p.url
            );
            checked.push(endpoint.kind().transport());
        }
        // Every transport sample-flow serves has a shipped profile that was checked.
        for t in ["amqp", "amqp10", "nats", "stomp", "mqtt"] {
            assert!(
                checked.contains(&t),
                "no shipped profile for {t}: {checked:?}"
            );
        }
    }
}
