//! `sample-flow`: the system under test that oemputx drives.
//!
//! `--echo` is a bare responder: it consumes the input queue and answers each request on its
//! `reply_to` queue with the request's `correlation_id` (or, when it has none, its
//! `message_id`, the MQ habit), acknowledging the request only after the reply is published.
//! `--extra-cpu-us N` burns N µs of CPU per message, measured on the thread's own CPU clock:
//! a controlled cost for calibrating oemputx. On exit each thread prints the process CPU
//! clock's growth from its first request to its last reply, the truth to compare with.
//! The full reference flow (validation, transformation, audit queue, database insert) is
//! not yet built; without `--echo` the binary says so.

use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, BasicQosArguments,
    QueueDeclareArguments,
};
use amqprs::connection::Connection;
use anyhow::{Context, bail};
use clap::Parser;
use oemputx::config::{AmqpEndpoint, Endpoint, parse_url};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A message flow for oemputx to drive: consumes requests, replies to `reply_to`.
#[derive(Debug, Parser)]
#[command(name = "sample-flow", version)]
struct Args {
    /// Broker URL.
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    url: String,
    /// Queue to consume requests from (declared durable if missing).
    #[arg(long, default_value = "MQSI.IN")]
    input_queue: String,
    /// Bare responder: reply with the request's body and correlation id.
    #[arg(long)]
    echo: bool,
    /// Unacknowledged requests the broker may push ahead.
    #[arg(long, default_value_t = 64)]
    prefetch: u16,
    /// Independent consumers (connections) in this process, one thread each.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Burn this much extra CPU per message (on the thread's own CPU clock): a controlled
    /// cost, for calibrating oemputx or simulating a regression.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 0)]
    extra_cpu_us: u64,
}

/// What each echo thread needs.
#[derive(Clone)]
struct Echo {
    ep: AmqpEndpoint,
    queue: String,
    prefetch: u16,
    extra_cpu: Duration,
    stop: Arc<AtomicBool>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-flow: error: {e:#}");
            let usage = e.chain().any(|c| c.is::<oemputx::config::ConfigError>());
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    if !args.echo {
        bail!("the full reference flow is not yet available; run with --echo for a bare responder");
    }
    let Endpoint::Amqp(ep) = parse_url(&args.url)? else {
        bail!("--url must be an amqp:// URL (the embedded queue manager has its own responder)");
    };
    if args.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let echo = Echo {
        ep,
        queue: args.input_queue.clone(),
        prefetch: args.prefetch,
        extra_cpu: Duration::from_micros(args.extra_cpu_us),
        stop,
    };
    let handles: Vec<_> = (0..args.threads)
        .map(|i| {
            let echo = echo.clone();
            std::thread::Builder::new()
                .name(format!("flow-{i}"))
                .spawn(move || echo_thread(i, &echo))
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

/// Spin until this thread has used `extra` more CPU.
fn burn(extra: Duration) -> anyhow::Result<()> {
    if extra.is_zero() {
        return Ok(());
    }
    let start = oemputx::cpu::self_thread()?;
    while oemputx::cpu::self_thread()? - start < extra {
        std::hint::spin_loop();
    }
    Ok(())
}

fn echo_thread(i: usize, echo: &Echo) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let (ep, queue) = (&echo.ep, echo.queue.as_str());
    rt.block_on(async {
        let target = ep.redacted();
        let open = oemputx::transport::amqp::connection_args(ep, &format!("sample-flow-{i}"))
            .map_err(|e| anyhow::anyhow!("{target}: {e}"))?;
        let conn = tokio::time::timeout(Duration::from_secs(5), Connection::open(&open))
            .await
            .map_err(|_| anyhow::anyhow!("cannot reach {target}: no answer within 5 s"))?
            .map_err(|e| anyhow::anyhow!("cannot connect to {target}: {e}"))?;
        let ch = conn.open_channel(None).await.context("opening a channel")?;
        ch.queue_declare(QueueDeclareArguments::durable_client_named(queue))
            .await
            .with_context(|| format!("declaring input queue '{queue}'"))?;
        ch.basic_qos(BasicQosArguments::new(0, echo.prefetch, false))
            .await
            .context("setting prefetch")?;
        let consume = BasicConsumeArguments::new(queue, &format!("sample-flow-{i}"))
            .manual_ack(true)
            .finish();
        let (_tag, mut rx) = ch
            .basic_consume_rx(consume)
            .await
            .with_context(|| format!("consuming from '{queue}'"))?;
        eprintln!("sample-flow[{i}]: echoing requests from '{queue}' on {target}");
        let (mut replied, mut dropped) = (0u64, 0u64);
        // Process CPU at the first request and after the latest reply: the truth that
        // calibration compares oemputx's figure with.
        let (mut cpu_first, mut cpu_last) = (None, None);
        while !echo.stop.load(Ordering::Relaxed) {
            let msg = match tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
                Err(_) => continue,
                Ok(None) => bail!("the broker closed the consumer on '{queue}'"),
                Ok(Some(m)) => m,
            };
            if cpu_first.is_none() {
                cpu_first = oemputx::cpu::self_process().ok();
            }
            burn(echo.extra_cpu)?;
            let tag = msg.deliver.as_ref().map(|d| d.delivery_tag());
            let props = msg.basic_properties.unwrap_or_default();
            let correl = props.correlation_id().or(props.message_id()).cloned();
            match props.reply_to() {
                Some(reply_to) => {
                    let mut reply = BasicProperties::default();
                    if let Some(c) = &correl {
                        reply.with_correlation_id(c);
                    }
                    if let Some(mode) = props.delivery_mode() {
                        reply.with_delivery_mode(mode);
                    }
                    let body = msg.content.unwrap_or_default();
                    ch.basic_publish(reply.finish(), body, BasicPublishArguments::new("", reply_to))
                        .await
                        .context("publishing a reply")?;
                    replied += 1;
                }
                // Nowhere to reply: acknowledge and count it rather than redeliver forever.
                None => dropped += 1,
            }
            if let Some(tag) = tag {
                ch.basic_ack(BasicAckArguments::new(tag, false))
                    .await
                    .context("acknowledging a request")?;
            }
            cpu_last = oemputx::cpu::self_process().ok();
        }
        let cpu_ns = match (cpu_first, cpu_last) {
            (Some(a), Some(b)) => b.saturating_sub(a).as_nanos(),
            _ => 0,
        };
        eprintln!(
            "sample-flow[{i}]: stopping after {replied} replies ({dropped} requests without reply_to); process CPU first request to last reply: {cpu_ns} ns"
        );
        let _ = ch.close().await;
        let _ = conn.close().await;
        Ok(())
    })
}
