//! The flow's I/O: one thread per instance, each with its own AMQP connection (and database
//! connection), consuming the input queue and running every message through the nodes.
//!
//! A request is acknowledged only after its audit copy, its database row and its reply are
//! written, so a flow that dies mid-message leaves the request on the queue for redelivery:
//! nothing is lost. On SIGTERM a thread finishes the message in hand, then closes.

use super::db::Db;
use super::flow_statistics::{Collector, Level, Sink};
use super::nodes::{self, Invalid};
use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, BasicQosArguments, Channel,
    ConsumerMessage, QueueDeclareArguments,
};
use amqprs::connection::Connection;
use anyhow::Context;
use oemputx::transport::amqp::url::AmqpEndpoint;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The nodes of the full flow, in order; statistics at level `node` use these names.
pub const NODES: [&str; 11] = [
    "Input",
    "CheckRequest",
    "Transform",
    "AuditOutput",
    "CheckRecord",
    "Enrich",
    "DatabaseInsert",
    "Filter",
    "BuildReply",
    "ReplyOutput",
    "Commit",
];
/// The nodes of `--echo`.
pub const ECHO_NODES: [&str; 3] = ["Input", "ReplyOutput", "Commit"];

/// What every flow thread shares.
#[derive(Clone)]
pub struct FlowOptions {
    pub ep: AmqpEndpoint,
    pub input_queue: String,
    pub audit_queue: Option<String>,
    /// Database URL and table; no database node without it.
    pub db: Option<(String, String)>,
    /// Commit without waiting for the WAL flush (PostgreSQL's synchronous_commit = off).
    pub db_async_commit: bool,
    pub echo: bool,
    pub prefetch: u16,
    pub extra_cpu: Duration,
    pub extra_work: u64,
    pub stats: Level,
    pub stats_interval: Duration,
    pub sink: Sink,
    pub stop: Arc<AtomicBool>,
}

/// Spin until this thread has used `extra` more CPU: a controlled cost per message.
fn burn(extra: Duration) -> anyhow::Result<()> {
    if extra.is_zero() {
        return Ok(());
    }
    let start = oemputx::accounting::clock::self_thread()?;
    while oemputx::accounting::clock::self_thread()? - start < extra {
        std::hint::spin_loop();
    }
    Ok(())
}

/// `rounds` of a fixed integer mix (xorshift-multiply), kept from being optimised away: the
/// same instructions every time, whatever the machine's speed.
fn work(rounds: u64) {
    let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..rounds {
        x ^= x >> 29;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
    std::hint::black_box(x);
}

/// The channel callback: accepts the broker's cancel of the consumer (so that its stream
/// ends) and otherwise behaves like amqprs's default.
struct CancelEndsTheConsumer;

#[async_trait::async_trait]
impl amqprs::callbacks::ChannelCallback for CancelEndsTheConsumer {
    async fn close(
        &mut self,
        _channel: &Channel,
        close: amqprs::CloseChannel,
    ) -> Result<(), amqprs::error::Error> {
        eprintln!("sample-flow: the broker closed the channel: {close}");
        Ok(())
    }
    async fn cancel(
        &mut self,
        _channel: &Channel,
        cancel: amqprs::Cancel,
    ) -> Result<(), amqprs::error::Error> {
        eprintln!(
            "sample-flow: the broker cancelled consumer {} (was the input queue deleted?)",
            cancel.consumer_tag()
        );
        Ok(())
    }
    async fn flow(
        &mut self,
        _channel: &Channel,
        active: bool,
    ) -> Result<bool, amqprs::error::Error> {
        Ok(active)
    }
    async fn publish_ack(&mut self, _channel: &Channel, _ack: amqprs::Ack) {}
    async fn publish_nack(&mut self, _channel: &Channel, _nack: amqprs::Nack) {}
    async fn publish_return(
        &mut self,
        _channel: &Channel,
        _ret: amqprs::Return,
        _basic_properties: BasicProperties,
        _content: Vec<u8>,
    ) {
    }
}

/// What one thread did, for its closing line.
#[derive(Debug, Default)]
struct Tally {
    replied: u64,
    rejected: u64,
    no_reply_to: u64,
}

/// Run flow instance `i` until stopped; its own runtime, connection and consumer.
pub fn run_thread(i: usize, o: &FlowOptions) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(run_async(i, o))
}

async fn run_async(i: usize, o: &FlowOptions) -> anyhow::Result<()> {
    let target = o.ep.redacted();
    let open = oemputx::transport::amqp::connection_args(&o.ep, &format!("sample-flow-{i}"))
        .map_err(|e| anyhow::anyhow!("{target}: {e}"))?;
    let conn = tokio::time::timeout(Duration::from_secs(5), Connection::open(&open))
        .await
        .map_err(|_| anyhow::anyhow!("cannot reach {target}: no answer within 5 s; check that the broker runs and --url is right"))?
        .map_err(|e| anyhow::anyhow!("cannot connect to {target}: {e}; check that the broker runs and the user and password in --url"))?;
    let ch = conn.open_channel(None).await.context("opening a channel")?;
    // Without a callback amqprs ignores the broker's Basic.Cancel (the input queue deleted):
    // the flow would keep running, consuming nothing. With it the consumer's stream ends,
    // and the loop below exits with an error.
    ch.register_callback(CancelEndsTheConsumer)
        .await
        .context("registering the channel callback")?;
    let queue = o.input_queue.as_str();
    ch.queue_declare(QueueDeclareArguments::durable_client_named(queue))
        .await
        .with_context(|| format!("declaring input queue '{queue}'"))?;
    if let Some(audit) = &o.audit_queue {
        ch.queue_declare(QueueDeclareArguments::durable_client_named(audit))
            .await
            .with_context(|| format!("declaring audit queue '{audit}'"))?;
    }
    let mut db = match &o.db {
        Some((url, table)) if !o.echo => Some(Db::connect(url, table, o.db_async_commit).await?),
        _ => None,
    };
    ch.basic_qos(BasicQosArguments::new(0, o.prefetch, false))
        .await
        .context("setting prefetch")?;
    let consume = BasicConsumeArguments::new(queue, &format!("sample-flow-{i}"))
        .manual_ack(true)
        .finish();
    let (_tag, mut rx) = ch
        .basic_consume_rx(consume)
        .await
        .with_context(|| format!("consuming from '{queue}'"))?;
    let mode = if o.echo { "echoing" } else { "processing" };
    eprintln!("sample-flow[{i}]: {mode} requests from '{queue}' on {target}");
    let nodes: &[&'static str] = if o.echo { &ECHO_NODES } else { &NODES };
    let mut stats = Collector::new(o.stats, i, nodes, o.stats_interval, o.sink.clone());
    let mut tally = Tally::default();
    // Process CPU at the first request and after the latest reply: the truth that
    // calibration compares oemputx's figure with.
    let (mut cpu_first, mut cpu_last) = (None, None);
    let outcome = loop {
        if o.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        let msg = match tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
            Err(_) => {
                stats.maybe_emit(false);
                continue;
            }
            Ok(None) => {
                break Err(anyhow::anyhow!(
                    "the broker closed the consumer on '{queue}'"
                ));
            }
            Ok(Some(m)) => m,
        };
        if cpu_first.is_none() {
            cpu_first = oemputx::accounting::clock::self_process().ok();
        }
        stats.message_start();
        let handled = if o.echo {
            echo(&ch, msg, o, &mut stats, &mut tally).await
        } else {
            process(&ch, msg, o, db.as_mut(), &mut stats, &mut tally).await
        };
        if let Err(e) = handled {
            break Err(e);
        }
        stats.message_end();
        stats.maybe_emit(false);
        cpu_last = oemputx::accounting::clock::self_process().ok();
    };
    stats.maybe_emit(true);
    let cpu_ns = match (cpu_first, cpu_last) {
        (Some(a), Some(b)) => b.saturating_sub(a).as_nanos(),
        _ => 0,
    };
    eprintln!(
        "sample-flow[{i}]: stopping after {} replies ({} rejected requests, {} without reply_to); process CPU first request to last reply: {cpu_ns} ns",
        tally.replied, tally.rejected, tally.no_reply_to
    );
    let _ = ch.close().await;
    let _ = conn.close().await;
    outcome
}

/// The parts of a delivery the nodes use.
struct Incoming {
    tag: Option<u64>,
    props: BasicProperties,
    body: Vec<u8>,
}

fn input(msg: ConsumerMessage) -> Incoming {
    Incoming {
        tag: msg.deliver.as_ref().map(|d| d.delivery_tag()),
        props: msg.basic_properties.unwrap_or_default(),
        body: msg.content.unwrap_or_default(),
    }
}

impl Incoming {
    /// The request's correlation id, or its message id (the MQ habit) when it has none.
    fn correl(&self) -> Option<String> {
        self.props
            .correlation_id()
            .or(self.props.message_id())
            .cloned()
    }
}

/// Publish `body` to the request's `reply_to` with its correlation id; false when the request
/// names no reply queue.
async fn reply(ch: &Channel, req: &Incoming, body: Vec<u8>) -> anyhow::Result<bool> {
    let Some(reply_to) = req.props.reply_to() else {
        return Ok(false);
    };
    let mut props = BasicProperties::default();
    if let Some(c) = req.correl() {
        props.with_correlation_id(&c);
    }
    if let Some(mode) = req.props.delivery_mode() {
        props.with_delivery_mode(mode);
    }
    ch.basic_publish(
        props.finish(),
        body,
        BasicPublishArguments::new("", reply_to),
    )
    .await
    .context("publishing a reply")?;
    Ok(true)
}

async fn commit(ch: &Channel, tag: Option<u64>) -> anyhow::Result<()> {
    if let Some(tag) = tag {
        ch.basic_ack(BasicAckArguments::new(tag, false))
            .await
            .context("acknowledging a request")?;
    }
    Ok(())
}

fn count_reply(tally: &mut Tally, replied: bool) {
    if replied {
        tally.replied += 1;
    } else {
        // Nowhere to reply: acknowledged and counted rather than redelivered forever.
        tally.no_reply_to += 1;
    }
}

/// `--echo`: the request's body back, nothing else.
async fn echo(
    ch: &Channel,
    msg: ConsumerMessage,
    o: &FlowOptions,
    stats: &mut Collector,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    stats.node_start();
    let mut req = input(msg);
    burn(o.extra_cpu)?;
    work(o.extra_work);
    stats.node_end(0);
    stats.node_start();
    let body = std::mem::take(&mut req.body);
    let replied = reply(ch, &req, body).await?;
    stats.node_end(1);
    stats.node_start();
    commit(ch, req.tag).await?;
    stats.node_end(2);
    count_reply(tally, replied);
    Ok(())
}

/// The full flow, node by node (indexes into [`NODES`]).
async fn process(
    ch: &Channel,
    msg: ConsumerMessage,
    o: &FlowOptions,
    db: Option<&mut Db>,
    stats: &mut Collector,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    stats.node_start();
    let req = input(msg);
    stats.node_end(0);
    let outcome = run_nodes(ch, &req, o, db, stats).await?;
    let body = match outcome {
        Ok(body) => body,
        Err(why) => {
            tally.rejected += 1;
            nodes::error_reply(&why)
        }
    };
    stats.node_start();
    let replied = reply(ch, &req, body).await?;
    stats.node_end(9);
    stats.node_start();
    commit(ch, req.tag).await?;
    stats.node_end(10);
    count_reply(tally, replied);
    Ok(())
}

/// Nodes 1 to 8: the reply body, or why the request was turned away (the outer error is an
/// I/O failure that stops the flow with the request unacknowledged).
async fn run_nodes(
    ch: &Channel,
    req: &Incoming,
    o: &FlowOptions,
    db: Option<&mut Db>,
    stats: &mut Collector,
) -> anyhow::Result<Result<Vec<u8>, Invalid>> {
    stats.node_start();
    let checked = nodes::check_request(&req.body);
    stats.node_end(1);
    let request = match checked {
        Ok(r) => r,
        Err(why) => return Ok(Err(why)),
    };
    stats.node_start();
    let record = nodes::transform(request);
    burn(o.extra_cpu)?;
    work(o.extra_work);
    stats.node_end(2);
    stats.node_start();
    if let Some(audit) = &o.audit_queue {
        ch.basic_publish(
            req.props.clone(),
            req.body.clone(),
            BasicPublishArguments::new("", audit),
        )
        .await
        .with_context(|| format!("publishing the audit copy to '{audit}'"))?;
    }
    stats.node_end(3);
    stats.node_start();
    let rules = nodes::check_record(&record);
    stats.node_end(4);
    if let Err(why) = rules {
        return Ok(Err(why));
    }
    stats.node_start();
    let enriched = nodes::enrich(record);
    stats.node_end(5);
    stats.node_start();
    if let Some(db) = db {
        db.insert(req.correl().as_deref(), &enriched, req.body.len())
            .await?;
    }
    stats.node_end(6);
    stats.node_start();
    let route = nodes::filter(&enriched);
    stats.node_end(7);
    stats.node_start();
    let body = nodes::build_reply(&enriched, route);
    stats.node_end(8);
    Ok(Ok(body))
}
