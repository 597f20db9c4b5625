//! The flow's engine: one thread per instance, each with its own broker connection (and
//! database connection), taking requests and running every message through the nodes. The
//! broker's side is a [`FlowIo`]: AMQP 0-9-1 (`amqp_io.rs`), NATS (`nats_io.rs`), AMQP 1.0
//! (`amqp10_io.rs`), STOMP (`stomp_io.rs`), MQTT (`mqtt_io.rs`) or Kafka (`kafka_io.rs`).
//!
//! A request is acknowledged only after its audit copy, its database row and its reply are
//! written, so a flow that dies mid-message leaves it on the queue for redelivery (AMQP):
//! nothing is lost. On SIGTERM a thread finishes the message in hand, then closes.

use super::db::Db;
use super::flow_statistics::{Collector, Level, Sink};
use super::nodes::{self, Invalid};
use oemputx::transport::amqp::url::AmqpEndpoint;
use oemputx::transport::amqp10::url::Amqp10Endpoint;
use oemputx::transport::kafka::url::KafkaEndpoint;
use oemputx::transport::mqtt::url::MqttEndpoint;
use oemputx::transport::nats::url::NatsEndpoint;
use oemputx::transport::stomp::url::StompEndpoint;
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
    pub ep: Broker,
    pub input_queue: String,
    pub audit_queue: Option<String>,
    /// Database URL and table; no database node without it.
    pub db: Option<(String, String)>,
    /// Commit without waiting for the WAL flush (PostgreSQL's synchronous_commit = off).
    pub db_async_commit: bool,
    pub echo: bool,
    pub prefetch: u16,
    /// NATS: read the JetStream stream that captures the input subject, not the subject.
    pub jetstream: bool,
    /// With `jetstream`: the stream's replicas when the flow creates it.
    pub replicas: Option<usize>,
    /// AMQP 0-9-1: the kind of input queue the flow declares (None: the broker's default).
    pub queue_type: Option<oemputx::transport::QueueType>,
    /// Instances in this process (Kafka: instance i reads the partitions p with p mod
    /// threads = i).
    pub threads: usize,
    pub extra_cpu: Duration,
    pub extra_work: u64,
    pub stats: Level,
    pub stats_interval: Duration,
    pub sink: Sink,
    pub stop: Arc<AtomicBool>,
}

/// The broker a flow serves.
#[derive(Clone)]
pub enum Broker {
    Amqp(AmqpEndpoint),
    Nats(NatsEndpoint),
    Amqp10(Amqp10Endpoint),
    Stomp(StompEndpoint),
    Mqtt(MqttEndpoint),
    Kafka(KafkaEndpoint),
}

/// A request as the nodes see it, with what its transport needs to answer and acknowledge it.
pub struct Incoming<M> {
    pub body: Vec<u8>,
    /// The request's correlation id (AMQP: its correlation id or message id).
    pub correl: Option<String>,
    pub meta: M,
}

/// What became of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replied {
    Sent,
    /// The request names nowhere to reply.
    NoReplyTo,
    /// It could not be written (the connection it came on broke, or its reply topic is
    /// gone): the broker gives an unacknowledged request again.
    Dropped,
}

/// One flow instance's connection to its broker.
#[allow(async_fn_in_trait)] // used generically within this binary, never as `dyn`
pub trait FlowIo {
    /// What a request carries for its reply and acknowledgement.
    type Meta;
    /// The next request, or `None` when none came within `wait`; an error when the broker
    /// ended the subscription.
    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Self::Meta>>>;
    /// Publish `body` as the reply, or say why it was not.
    async fn reply(&mut self, req: &Incoming<Self::Meta>, body: Vec<u8>)
    -> anyhow::Result<Replied>;
    /// Acknowledge the request (its work is done).
    async fn commit(&mut self, req: &Incoming<Self::Meta>) -> anyhow::Result<()>;
    /// Publish a copy of the request to the audit queue (or subject).
    async fn audit(&mut self, req: &Incoming<Self::Meta>, to: &str) -> anyhow::Result<()>;
    /// Whether the connection `req` came on broke since: the broker gives it again, so its
    /// work stops here (its row is not written twice).
    fn stale(&self, _req: &Incoming<Self::Meta>) -> bool {
        false
    }
    /// Close the connection.
    async fn close(self);
}

/// Rounds of [`work`] per ns of this machine's CPU, measured once per process.
static ROUNDS_PER_NS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();

/// How long the burn's speed is measured for, in the thread's CPU time.
const BURN_CALIBRATION: Duration = Duration::from_millis(50);

/// Measure how many rounds of [`work`] a ns of CPU holds (once; later calls return it).
/// Call before the first message when `--extra-cpu-us` is set, so that no message waits.
pub fn calibrate_burn() -> anyhow::Result<f64> {
    if let Some(r) = ROUNDS_PER_NS.get() {
        return Ok(*r);
    }
    const CHUNK: u64 = 20_000;
    let start = oemputx::accounting::clock::self_thread()?;
    let mut rounds = 0u64;
    let spent = loop {
        work(CHUNK);
        rounds += CHUNK;
        let spent = oemputx::accounting::clock::self_thread()? - start;
        if spent >= BURN_CALIBRATION {
            break spent;
        }
    };
    let r = rounds as f64 / spent.as_nanos().max(1) as f64;
    Ok(*ROUNDS_PER_NS.get_or_init(|| r))
}

/// Burn `extra` more CPU: a controlled cost per message. It spins [`work`] for as many
/// rounds as `extra` holds at the speed measured at start, not until the thread's CPU
/// clock says so: reading that clock is a system call (about 1 µs here), and the reads and
/// the last one's overshoot made a 2.35 µs burn cost about 4.5 µs, "+2 %" into +4 %.
fn burn(extra: Duration) -> anyhow::Result<()> {
    if extra.is_zero() {
        return Ok(());
    }
    let per_ns = calibrate_burn()?;
    work((extra.as_nanos() as f64 * per_ns).round() as u64);
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

/// What one thread did, for its closing line.
#[derive(Debug, Default)]
struct Tally {
    replied: u64,
    rejected: u64,
    no_reply_to: u64,
    dropped: u64,
}

/// The instance's loop over its broker's requests.
pub async fn serve<I: FlowIo>(
    i: usize,
    o: &FlowOptions,
    mut io: I,
    target: &str,
) -> anyhow::Result<()> {
    let mut db = match &o.db {
        Some((url, table)) if !o.echo => Some(Db::connect(url, table, o.db_async_commit).await?),
        _ => None,
    };
    let queue = o.input_queue.as_str();
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
        let req = match io.next(Duration::from_millis(200)).await {
            Err(e) => break Err(e),
            Ok(None) => {
                stats.maybe_emit(false);
                continue;
            }
            Ok(Some(req)) => req,
        };
        if cpu_first.is_none() {
            cpu_first = oemputx::accounting::clock::self_process().ok();
        }
        stats.message_start();
        let handled = if o.echo {
            echo(&mut io, req, o, &mut stats, &mut tally).await
        } else {
            process(&mut io, req, o, db.as_mut(), &mut stats, &mut tally).await
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
        "sample-flow[{i}]: stopping after {} replies ({} rejected requests, {} without reply_to, {} not written); process CPU first request to last reply: {cpu_ns} ns",
        tally.replied, tally.rejected, tally.no_reply_to, tally.dropped
    );
    io.close().await;
    outcome
}

fn count_reply(tally: &mut Tally, replied: Replied) {
    match replied {
        Replied::Sent => tally.replied += 1,
        // Nowhere to reply: acknowledged and counted rather than redelivered forever.
        Replied::NoReplyTo => tally.no_reply_to += 1,
        Replied::Dropped => tally.dropped += 1,
    }
}

/// `--echo`: the request's body back, nothing else.
async fn echo<I: FlowIo>(
    io: &mut I,
    mut req: Incoming<I::Meta>,
    o: &FlowOptions,
    stats: &mut Collector,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    stats.node_start();
    burn(o.extra_cpu)?;
    work(o.extra_work);
    stats.node_end(0);
    stats.node_start();
    let body = std::mem::take(&mut req.body);
    let replied = io.reply(&req, body).await?;
    stats.node_end(1);
    stats.node_start();
    io.commit(&req).await?;
    stats.node_end(2);
    count_reply(tally, replied);
    Ok(())
}

/// The full flow, node by node (indexes into [`NODES`]).
async fn process<I: FlowIo>(
    io: &mut I,
    req: Incoming<I::Meta>,
    o: &FlowOptions,
    db: Option<&mut Db>,
    stats: &mut Collector,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    stats.node_start();
    stats.node_end(0);
    let Some(outcome) = run_nodes(io, &req, o, db, stats).await? else {
        count_reply(tally, Replied::Dropped);
        return Ok(());
    };
    let body = match outcome {
        Ok(body) => body,
        Err(why) => {
            tally.rejected += 1;
            nodes::error_reply(&why)
        }
    };
    stats.node_start();
    let replied = io.reply(&req, body).await?;
    stats.node_end(9);
    stats.node_start();
    io.commit(&req).await?;
    stats.node_end(10);
    count_reply(tally, replied);
    Ok(())
}

/// Nodes 1 to 8: the reply body, or why the request was turned away; `None` when its
/// connection broke under the audit copy (it comes again). The outer error is an I/O
/// failure that stops the flow with the request unacknowledged.
async fn run_nodes<I: FlowIo>(
    io: &mut I,
    req: &Incoming<I::Meta>,
    o: &FlowOptions,
    db: Option<&mut Db>,
    stats: &mut Collector,
) -> anyhow::Result<Option<Result<Vec<u8>, Invalid>>> {
    stats.node_start();
    let checked = nodes::check_request(&req.body);
    stats.node_end(1);
    let request = match checked {
        Ok(r) => r,
        Err(why) => return Ok(Some(Err(why))),
    };
    stats.node_start();
    let record = nodes::transform(request);
    burn(o.extra_cpu)?;
    work(o.extra_work);
    stats.node_end(2);
    stats.node_start();
    if let Some(audit) = &o.audit_queue {
        io.audit(req, audit).await?;
        if io.stale(req) {
            stats.node_end(3);
            return Ok(None);
        }
    }
    stats.node_end(3);
    stats.node_start();
    let rules = nodes::check_record(&record);
    stats.node_end(4);
    if let Err(why) = rules {
        return Ok(Some(Err(why)));
    }
    stats.node_start();
    let enriched = nodes::enrich(record);
    stats.node_end(5);
    stats.node_start();
    if let Some(db) = db {
        db.insert(req.correl.as_deref(), &enriched, req.body.len())
            .await?;
    }
    stats.node_end(6);
    stats.node_start();
    let route = nodes::filter(&enriched);
    stats.node_end(7);
    stats.node_start();
    let body = nodes::build_reply(&enriched, route);
    stats.node_end(8);
    Ok(Some(Ok(body)))
}
