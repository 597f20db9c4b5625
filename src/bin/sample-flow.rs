//! `sample-flow`: the system under test that oemputx drives.
//!
//! `--echo` is a bare responder: it consumes the input queue and answers each request on its
//! `reply_to` queue with the request's `correlation_id` (or, when it has none, its
//! `message_id`, the MQ habit), acknowledging the request only after the reply is published.
//! The full reference flow (validation, transformation, audit queue, database insert) is
//! not yet built; without `--echo` the binary says so.

use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, BasicQosArguments,
    QueueDeclareArguments,
};
use amqprs::connection::{Connection, OpenConnectionArguments};
use anyhow::{Context, bail};
use clap::Parser;
use oemputx::config::{Endpoint, parse_url};
use std::process::ExitCode;

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
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-flow: error: {e:#}");
            ExitCode::from(
                if e.chain().any(|c| c.is::<oemputx::config::ConfigError>()) {
                    2
                } else {
                    1
                },
            )
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
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let handles: Vec<_> = (0..args.threads)
        .map(|i| {
            let (ep, queue, stop, prefetch) = (
                ep.clone(),
                args.input_queue.clone(),
                stop.clone(),
                args.prefetch,
            );
            std::thread::Builder::new()
                .name(format!("flow-{i}"))
                .spawn(move || echo_thread(i, &ep, &queue, prefetch, &stop))
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

fn echo_thread(
    i: usize,
    ep: &oemputx::config::AmqpEndpoint,
    queue: &str,
    prefetch: u16,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let target = ep.redacted();
        let mut open = OpenConnectionArguments::new(&ep.host, ep.port, &ep.user, &ep.password);
        open.virtual_host(&ep.vhost).connection_name(&format!("sample-flow-{i}"));
        let conn = tokio::time::timeout(std::time::Duration::from_secs(5), Connection::open(&open))
            .await
            .map_err(|_| anyhow::anyhow!("cannot reach {target}: no answer within 5 s"))?
            .map_err(|e| anyhow::anyhow!("cannot connect to {target}: {e}"))?;
        let ch = conn.open_channel(None).await.context("opening a channel")?;
        ch.queue_declare(QueueDeclareArguments::durable_client_named(queue))
            .await
            .with_context(|| format!("declaring input queue '{queue}'"))?;
        ch.basic_qos(BasicQosArguments::new(0, prefetch, false)).await.context("setting prefetch")?;
        let (_tag, mut rx) = ch
            .basic_consume_rx(BasicConsumeArguments::new(queue, &format!("sample-flow-{i}")).manual_ack(true).finish())
            .await
            .with_context(|| format!("consuming from '{queue}'"))?;
        eprintln!("sample-flow[{i}]: echoing requests from '{queue}' on {target}");
        let (mut replied, mut dropped) = (0u64, 0u64);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let msg = match tokio::time::timeout(std::time::Duration::from_millis(200), rx.recv()).await {
                Err(_) => continue,
                Ok(None) => anyhow::bail!("the broker closed the consumer on '{queue}'"),
                Ok(Some(m)) => m,
            };
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
                    ch.basic_publish(reply.finish(), msg.content.unwrap_or_default(), BasicPublishArguments::new("", reply_to))
                        .await
                        .context("publishing a reply")?;
                    replied += 1;
                }
                // Nowhere to reply: acknowledge and count it rather than redeliver forever.
                None => dropped += 1,
            }
            if let Some(tag) = tag {
                ch.basic_ack(BasicAckArguments::new(tag, false)).await.context("acknowledging a request")?;
            }
        }
        eprintln!("sample-flow[{i}]: stopping after {replied} replies ({dropped} requests without reply_to)");
        let _ = ch.close().await;
        let _ = conn.close().await;
        Ok(())
    })
}
