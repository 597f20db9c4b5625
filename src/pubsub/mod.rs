//! Publish/subscribe runs (`oemputx pubsub`): the stock-ticker experiment of the JMS study.
//!
//! One or more publishers send the symbols' trades in order (S00, S01, …, S99, S00, …);
//! each subscriber asks the broker for a contiguous block of symbols, and the broker does
//! the selecting (RabbitMQ: a headers or topic exchange; NATS: a subject per symbol; MQTT: a
//! topic per symbol; ActiveMQ over STOMP: a JMS message selector, or a topic per symbol). Every
//! message carries `symbol`, `seq`, `ts_ns` (and `publisher`), so any client can take part
//! and count. Because the publishers' order is fixed, what each subscriber must receive is
//! known in advance ([`plan::Plan::expected`]): lost and duplicated are exact.
//!
//! A broker is a [`Broker`] in its own file; the run itself ([`engine`]) is written once.

pub mod engine;
pub mod memory;
// A broker comes with its transport's cargo feature (its client is that transport's).
#[cfg(feature = "mqtt")]
pub mod mqtt;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "nats")]
pub mod nats_js;
pub mod plan;
#[cfg(feature = "rabbitmq")]
pub mod rabbit;
pub mod report;
#[cfg(feature = "stomp")]
pub mod stomp;

use crate::transport::{Endpoint, TransportError};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// What every message says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub publisher: u32,
    /// The publisher's own sequence number, from 0.
    pub seq: u64,
    pub symbol: u16,
    /// Publish time, ns since the Unix epoch (CLOCK_REALTIME: comparable across processes).
    pub ts_ns: u64,
}

/// How subscribers acknowledge, mapped to each broker's nearest mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ack {
    /// No acknowledgement (RabbitMQ no-ack; NATS core; MQTT QoS 0).
    None,
    /// Each message acknowledged on receipt (JMS AUTO_ACKNOWLEDGE).
    Auto,
    /// Acknowledged by the application in batches (JMS CLIENT_ACKNOWLEDGE): every 100.
    Client,
}

/// How the broker selects a subscriber's symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SelectBy {
    /// A message property/header `symbol` (RabbitMQ headers exchange: the JMS selector's
    /// analogue).
    Header,
    /// The routing key or subject carries the symbol (`ticker.S07`).
    Topic,
}

/// Messages a `client` acknowledgement covers.
pub const CLIENT_ACK_BATCH: u64 = 100;

/// One publisher's connection.
pub trait Publisher {
    /// Send one message; it is on its way to the broker when this returns (the client's
    /// I/O has run), not buffered for later.
    fn publish(&mut self, stamp: Stamp, body: &[u8]) -> Result<(), TransportError>;
    /// Wait `d` while the client's I/O keeps running (a think time, or pacing).
    fn pause(&mut self, d: Duration);
    /// Flush what is buffered and close.
    fn close(self: Box<Self>) -> Result<(), TransportError>;
}

/// One subscriber's connection and subscription.
pub trait Subscriber {
    /// The next message's stamp, or `None` when none came within `wait`.
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError>;
    /// Messages waiting for this subscriber in the broker's own queue, where the broker
    /// tells (RabbitMQ: its queue's depth); `None` elsewhere.
    fn broker_depth(&mut self) -> Option<u64> {
        None
    }
    fn close(self: Box<Self>);
}

/// What a pub/sub run asks of whichever broker serves it.
#[derive(Debug, Clone)]
pub struct BrokerOptions {
    pub plan: plan::Plan,
    pub ack: Ack,
    pub select_by: SelectBy,
    pub persistent: bool,
    pub declare: bool,
}

/// A broker that cannot run these options: the user's, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{flag}: {why}")]
pub struct Unsupported {
    pub flag: &'static str,
    pub why: String,
}

// The user's input (exit 2): an option this broker cannot serve.
crate::usage_error!(Unsupported);

/// One transport's pub/sub: given an endpoint, its broker when the endpoint is its own
/// (None when it is another transport's). Each transport's module knows its own endpoint.
type Factory = fn(&Endpoint, &BrokerOptions) -> Option<Result<Arc<dyn Broker>, Unsupported>>;

/// The transports this build runs pub/sub on.
const FACTORIES: &[Factory] = &[
    #[cfg(feature = "mqtt")]
    mqtt::broker,
    #[cfg(feature = "stomp")]
    stomp::broker,
    #[cfg(feature = "rabbitmq")]
    rabbit::broker,
    #[cfg(feature = "nats")]
    nats::broker,
];

/// The broker `endpoint` names, built by its transport. A URL of a transport this build
/// left out never gets here (parsing it names the feature).
pub fn broker(endpoint: &Endpoint, o: &BrokerOptions) -> Result<Arc<dyn Broker>, Unsupported> {
    FACTORIES
        .iter()
        .find_map(|f| f(endpoint, o))
        .unwrap_or_else(|| {
            Err(Unsupported {
                flag: "--qmgr",
                why: format!(
                    "pub/sub runs on RabbitMQ (amqp://), NATS (nats://), MQTT (mqtt://) and ActiveMQ (stomp://) so far, not on {}",
                    endpoint.redacted()
                ),
            })
        })
}

/// A broker that can run the experiment.
pub trait Broker: Send + Sync {
    /// The broker, safe to print.
    fn describe(&self) -> String;
    /// What `--ack` and `--select-by` became on this broker, for the report.
    fn modes(&self) -> String;
    /// Create what the run needs (`--declare`) or check that it is there.
    fn prepare(&self) -> Result<(), TransportError>;
    fn publisher(&self, p: usize) -> Result<Box<dyn Publisher>, TransportError>;
    /// A subscriber to the symbols in `block`, subscribed before this returns.
    fn subscriber(
        &self,
        i: usize,
        block: Range<u16>,
    ) -> Result<Box<dyn Subscriber>, TransportError>;
    /// A subscriber competing with the others for one queue of every symbol: each message
    /// goes to one of them (RabbitMQ: one shared queue; NATS: a queue group; MQTT: a shared
    /// subscription).
    fn competitor(&self, i: usize) -> Result<Box<dyn Subscriber>, TransportError>;
    /// Groups accounted when the user names none, e.g. `QMGR=@nats`.
    fn default_groups(&self) -> Vec<&'static str>;
    /// The transport's name in reports, as a put/get run on the same broker names it.
    fn transport(&self) -> &'static str;
}

/// Now, ns since the Unix epoch.
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A publisher's pause: the thread's sleep, not tokio's (whose timer rounds up to whole
/// milliseconds: a 2 ms think became 3); the last publish has already been written, and
/// the client's I/O on `rt` runs again right after.
pub fn pause_then_drive(rt: &tokio::runtime::Runtime, d: Duration) {
    std::thread::sleep(d);
    rt.block_on(tokio::task::yield_now());
}
