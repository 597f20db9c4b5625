//! The core every transport's endpoint shares: what a parsed URL is ([`Endpoint`]), what it
//! tells and does ([`EndpointKind`]), how a transport registers its schemes
//! ([`Registered`]) and refuses run options it cannot serve ([`OptionRefused`]). This file
//! imports no transport; [`super::registry`] maps schemes to them.

use super::{QueueSetup, ReplyQueue, Transport, TransportError};
use std::sync::Arc;

/// A URL or queue manager name that cannot be used: the user's input, exit 2.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("--qmgr {url}: {why}")]
    BadUrl { url: String, why: String },
    #[error(
        "--qmgr {url}: the {scheme}:// transport is not yet supported for put/get; use {known}"
    )]
    NotYet {
        url: String,
        scheme: String,
        known: String,
    },
    /// A transport this build left out: `what` was asked (`--qmgr nats://…`), `feature` is
    /// the cargo feature that brings it.
    #[error("{what} {}", crate::features::needs(.feature))]
    NotBuilt { what: String, feature: &'static str },
}

// The user's input (exit 2).
crate::usage_error!(EndpointError);

impl EndpointError {
    /// A bad URL, shown with its password masked.
    pub fn bad(raw: &str, why: impl Into<String>) -> EndpointError {
        EndpointError::BadUrl {
            url: crate::secret::redact_url(raw),
            why: why.into(),
        }
    }
}

/// A run option a transport cannot serve: the flag and why, with the way out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionRefused {
    pub flag: &'static str,
    pub why: String,
}

impl OptionRefused {
    pub fn new(flag: &'static str, why: impl Into<String>) -> OptionRefused {
        OptionRefused {
            flag,
            why: why.into(),
        }
    }
}

/// The request queue when neither the flag nor a profile names one, on a transport that
/// has no name of its own ([`EndpointKind::default_request_queue`]).
pub const DEFAULT_REQUEST_QUEUE: &str = "MQSI.IN";

/// What a transport's endpoint tells and does, whatever the transport.
pub trait EndpointKind: std::fmt::Debug + Send + Sync + std::any::Any {
    /// The transport's name in reports.
    fn transport(&self) -> &'static str;
    /// The request queue (topic, subject) oemputx puts to and sample-flow consumes when
    /// neither names one: the shipped profile's for this transport, so that the defaults
    /// meet (an MQTT flow on `MQSI.IN` and a profile on `MQSI/IN` measured nothing for
    /// three minutes). One place for both, checked against oemputx.toml by a test.
    fn default_request_queue(&self) -> &'static str {
        DEFAULT_REQUEST_QUEUE
    }
    /// A description safe to print: passwords are replaced by `***`.
    fn redacted(&self) -> String;
    /// Open the transport for a run.
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError>;
    /// The URL a flow process started by oemputx connects with, password included (never
    /// for printing); `None` when no flow of ours can serve this transport.
    fn url_for_flow(&self) -> Option<String> {
        None
    }
    /// The broker's host and port, for a transport that talks TCP to one: its clients'
    /// connections are found by this address (who serves the request queue).
    fn broker_address(&self) -> Option<(String, u16)> {
        None
    }
    /// The queue's consumers as the broker counts them, asked without touching the queue
    /// (RabbitMQ's passive declare); `None` where the broker keeps no such count, or only a
    /// probe could tell (NATS answers "no responders" to a request, which reaches a flow).
    fn counted_consumers(&self, _queue: &str) -> Option<u32> {
        None
    }
    /// How many consumers the queue has, when the transport can tell (to wait until the
    /// flows oemputx started are ready).
    fn consumers(&self, _queue: &str) -> Result<Option<u32>, TransportError> {
        Ok(None)
    }
    /// Delete a queue oemputx declared for a run of its own (the A/B gate's); nothing to do
    /// where queues need no deleting.
    fn delete_queue(&self, _queue: &str) -> Result<(), TransportError> {
        Ok(())
    }
    /// The groups a run accounts when neither the options nor a profile name any
    /// (`NAME=SEL,...`, as `--group` takes them).
    fn default_groups(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// Why consumers the broker counted on the request queue may answer nothing over this
    /// transport, when it knows a reason of its own (a run that timed out with every
    /// request unanswered says it); `None` gives the usual suspects.
    fn silent_consumers_hint(&self) -> Option<&'static str> {
        None
    }
    /// Whether `--replicas` means something here (a store whose copies a run can set).
    fn replicates(&self) -> bool {
        false
    }
    /// Whether `--queue-type` means something here (a broker with kinds of queue).
    fn has_queue_types(&self) -> bool {
        false
    }
    /// The run options this transport cannot serve, checked before anything starts. The
    /// default refuses IBM MQ's own calls; a transport adds its own rules.
    fn refuse(&self, setup: &QueueSetup) -> Result<(), OptionRefused> {
        refuse_mq_calls(setup)?;
        refuse_rabbitmq_paths(setup, self.transport())
    }
    /// What this broker is known to do to a run whose median round trip took `p50_us`, when
    /// that is far above what its CPU explains (a setting of the broker's, not the driver's),
    /// for the report's warnings. None by default.
    fn slow_round_trip_hint(&self, _persistent: bool, _p50_us: f64) -> Option<String> {
        None
    }
}

/// The hint of a broker that leaves TCP_NODELAY off: a persistent run's median round trip
/// of 30 ms or more is Nagle's algorithm meeting the peer's delayed ACK (40 ms), not work.
/// `waits` says what the client waits for, `fix` the broker's setting and what it measured.
pub fn nagle_hint(persistent: bool, p50_us: f64, waits: &str, fix: &str) -> Option<String> {
    (persistent && p50_us >= 30_000.0).then(|| {
        format!(
            "the median round trip took {:.1} ms {waits}: that is Nagle's algorithm meeting delayed ACKs in the broker, not work; {fix}",
            p50_us / 1000.0
        )
    })
}

/// `--put1` and `--model-queue` name IBM MQ calls and objects: refused everywhere else.
pub(crate) fn refuse_mq_calls(setup: &QueueSetup) -> Result<(), OptionRefused> {
    if setup.put1 {
        return Err(OptionRefused::new(
            "--put1",
            "MQPUT1 is an IBM MQ call: use it with an IBM MQ queue manager",
        ));
    }
    if setup.model_queue.is_some() {
        return Err(OptionRefused::new(
            "--model-queue",
            "model queues are IBM MQ's: use it with an IBM MQ queue manager",
        ));
    }
    Ok(())
}

/// Direct reply-to, a reply queue per request and publisher confirms are AMQP 0-9-1's (the
/// `amqp://` transport): refused on every other, naming the transport.
pub(crate) fn refuse_rabbitmq_paths(
    setup: &QueueSetup,
    transport: &str,
) -> Result<(), OptionRefused> {
    match setup.reply_queue {
        ReplyQueue::Direct => {
            return Err(OptionRefused::new(
                "--reply-queue",
                format!(
                    "{} is RabbitMQ's direct reply-to, an AMQP 0-9-1 feature: use it with an amqp:// URL, or leave --reply-queue out on {transport}",
                    super::DIRECT_REPLY_TO
                ),
            ));
        }
        ReplyQueue::PerRequest => {
            return Err(OptionRefused::new(
                "--reply-queue",
                format!(
                    "per-request (a reply queue per request) is not yet supported on {transport}, only on amqp://: leave --reply-queue out for a reply queue per task"
                ),
            ));
        }
        _ => {}
    }
    if setup.confirm_window.is_some() {
        return Err(OptionRefused::new(
            "--confirm-window",
            format!(
                "publisher confirms are AMQP 0-9-1's (amqp://); on {transport} leave --confirm-window out"
            ),
        ));
    }
    Ok(())
}

/// A named reply queue shared by several tasks, where a transport cannot route replies to
/// the task that waits for them.
pub fn refuse_shared_reply_queue(setup: &QueueSetup, scheme: &str) -> Result<(), OptionRefused> {
    if matches!(setup.reply_queue, ReplyQueue::Named(_)) && setup.tasks > 1 {
        return Err(OptionRefused::new(
            "--reply-queue",
            format!(
                "a reply queue shared by several tasks is not yet supported on {scheme} (each task's receiver would take the others' replies): use one task, or leave --reply-queue out for a temporary reply queue per task"
            ),
        ));
    }
    Ok(())
}

/// Where a run connects: one transport's endpoint, behind the kind every transport shares.
#[derive(Clone)]
pub struct Endpoint(Arc<dyn EndpointKind>);

impl Endpoint {
    pub fn new(kind: impl EndpointKind + 'static) -> Endpoint {
        Endpoint(Arc::new(kind))
    }

    /// What this endpoint's transport does.
    pub fn kind(&self) -> &dyn EndpointKind {
        self.0.as_ref()
    }

    /// The transport's own endpoint type, when it is `T` (for code that speaks one
    /// transport's protocol besides put/get: pub/sub, tests).
    pub fn downcast<T: EndpointKind + 'static>(&self) -> Option<&T> {
        let any: &dyn std::any::Any = self.0.as_ref();
        any.downcast_ref::<T>()
    }

    /// The transport's name in reports.
    pub fn transport(&self) -> &'static str {
        self.kind().transport()
    }

    /// A description safe to print: passwords are replaced by `***`.
    pub fn redacted(&self) -> String {
        self.kind().redacted()
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// How a transport registers itself: its URL schemes, an example for errors and help, its
/// parser, and optionally the bare names it takes (an IBM MQ queue manager's).
#[derive(Clone, Copy)]
pub struct Registered {
    pub schemes: &'static [&'static str],
    pub example: &'static str,
    pub parse: fn(&str) -> Result<Endpoint, EndpointError>,
    /// A name that is no profile, taken by this transport when it can be one of its own;
    /// the note says why it was taken so (for errors).
    pub bare_name: Option<fn(&str, String) -> Option<Endpoint>>,
    /// Whether one URL may name a cluster's nodes, comma-separated (issue 63); a list given
    /// to a transport that does not take one is refused as not built yet.
    pub node_lists: bool,
}
