//! The seam between the driver and a queue manager: one trait, one file per transport.
//!
//! A [`Transport`] is opened once per run; it checks or creates the queues and clears the
//! reply queue ([`Transport::prepare`]), then opens one session (its own connection) per
//! driver task: a blocking [`Session`], or an async one for a client that runs on a runtime
//! ([`TaskSession`]). A session puts requests carrying a correlation id and gets replies
//! with a wait; pairing replies with requests is the driver's job, written once for all
//! transports.

// A transport's folder is compiled only with its cargo feature (Cargo.toml); the registry
// knows every scheme either way, and answers a left-out one with the feature it needs.
#[cfg(feature = "rabbitmq")]
pub mod amqp;
#[cfg(feature = "amqp10")]
pub mod amqp10;
pub mod correl;
pub mod deadline;
pub mod embedded;
pub mod endpoint;
#[cfg(feature = "ibmmq")]
pub mod ibmmq;
#[cfg(feature = "kafka")]
pub mod kafka;
#[cfg(feature = "mqtt")]
pub mod mqtt;
#[cfg(feature = "nats")]
pub mod nats;
pub mod registry;
pub mod session;
#[cfg(feature = "stomp")]
pub mod stomp;
pub mod subject;
#[cfg(any(
    feature = "rabbitmq",
    feature = "amqp10",
    feature = "stomp",
    feature = "kafka"
))]
pub mod tls;

pub use endpoint::{Endpoint, EndpointError, EndpointKind, OptionRefused};
pub use registry::parse_url;
pub use session::{
    AsyncSession, Immediate, LoopSession, PhaseRunner, Session, SessionFuture, TaskSession,
};
use std::sync::Arc;

/// What lies beneath an error a client library returned: each level of its `source()`
/// chain as text with credentials scrubbed ([`crate::secret::scrub`]), so that the chain can
/// be printed without a password in it. A level whose text the level above already
/// contains is left out (libraries that print their source in their own message).
#[derive(Debug)]
pub struct Cause {
    text: String,
    next: Option<Box<Cause>>,
}

impl Cause {
    /// The chain beneath `e` (not `e` itself); None when there is nothing beneath it.
    pub fn below(e: &(dyn std::error::Error + 'static)) -> Option<Cause> {
        let mut levels = Vec::new();
        let mut above = e.to_string();
        let mut at = e.source();
        while let Some(level) = at {
            let text = level.to_string();
            if !text.is_empty() && !above.contains(&text) {
                levels.push(crate::secret::scrub(&text));
            }
            above = text;
            at = level.source();
        }
        levels.into_iter().rev().fold(None, |next, text| {
            Some(Cause {
                text,
                next: next.map(Box::new),
            })
        })
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.next
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// A failure talking to a queue manager.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(
        "cannot reach {target}: {why}. Check that the broker is running and the host and port are right"
    )]
    Unreachable { target: String, why: String },
    #[error(
        "{target} refused the login of user '{user}': check the user name and password in --qmgr or the profile"
    )]
    AuthRefused { target: String, user: String },
    #[error(
        "{target} refused virtual host '{vhost}': create it, or name an existing one in the URL path (%2f is \"/\")"
    )]
    VhostRefused { target: String, vhost: String },
    #[error(
        "queue '{queue}' does not exist on {target}: start the flow that owns it, or pass --declare to create it"
    )]
    MissingQueue { queue: String, target: String },
    /// A signal ended a wait before the run began (exit 130, from `exit_for_now`).
    #[error("interrupted while {what}")]
    Interrupted { what: String },
    #[error(
        "exchange '{exchange}' does not exist on {target}: pass --declare to create it (durable, {kind} type), or name an existing one with --topic"
    )]
    MissingExchange {
        exchange: String,
        kind: &'static str,
        target: String,
    },
    #[error(
        "exchange '{exchange}' on {target} is not a durable {kind} exchange, which --select-by {select_by} needs (the broker refused to take it as one): name another with --topic (with --declare to create it), or choose the --select-by its type serves"
    )]
    ExchangeClash {
        exchange: String,
        kind: &'static str,
        select_by: &'static str,
        target: String,
    },
    #[error(
        "message of {size} bytes is larger than {transport} allows ({max} bytes): use a smaller --msgfile or --msg-size"
    )]
    TooLarge {
        size: usize,
        max: usize,
        transport: String,
    },
    #[error("{what} failed on {target}: {why}")]
    Broker {
        what: String,
        target: String,
        why: String,
    },
    #[error("the connection to {target} was lost: {why}")]
    ConnectionLost { target: String, why: String },
    #[error("{why}")]
    MqLibrary { why: String },
    /// What a transport cannot do yet, found only once running (reconnecting a task whose
    /// replies a shared router reads): never tried again.
    #[error("{what} is not built yet on {target}: {fix}")]
    NotYet {
        what: String,
        target: String,
        fix: &'static str,
    },
    #[error("{what} on {target}: {failure}. {fix}")]
    MqRefused {
        target: String,
        what: String,
        failure: String,
        fix: &'static str,
    },
    #[error(
        "no responders on subject '{subject}' at {target}: nothing subscribes to it. Start the flow first, e.g. sample-flow --url {target} --input-queue {subject}"
    )]
    NoResponders { subject: String, target: String },
    #[error(
        "JetStream is not enabled on {target}, and --persistent stores requests in a JetStream stream: start nats-server with -js (or a jetstream block in its configuration), or leave --persistent out"
    )]
    JetStreamDisabled { target: String },
    #[error(
        "no JetStream stream captures subject '{subject}' on {target}: pass --declare to create one (in files), or create it yourself (nats stream add)"
    )]
    NoStream { subject: String, target: String },
    #[error(
        "nothing reads JetStream stream {stream} (subject '{subject}') on {target}: start the flow on the stream first, e.g. sample-flow --url {target} --input-queue {subject} --jetstream"
    )]
    NoStreamReader {
        stream: String,
        subject: String,
        target: String,
    },
    #[error(
        "{target} does not speak AMQP 1.0 (it answered with protocol header {found}): on RabbitMQ enable the plugin (rabbitmq-plugins enable rabbitmq_amqp1_0), or use amqp:// for AMQP 0-9-1"
    )]
    NotAmqp10 { target: String, found: String },
    #[error(
        "{target} refused a link to address '{address}' ({why}): check that the queue exists and that --qmgr's address-style={style} is the broker's (rabbitmq: /queue/NAME; plain: NAME for Artemis, Qpid, Service Bus; queue-prefix: queue://NAME for ActiveMQ Classic)"
    )]
    AddressRefused {
        target: String,
        address: String,
        style: &'static str,
        why: String,
    },
    #[error(
        "subject '{subject}' on {target} is captured by JetStream stream {stream}, whose acknowledgements would pass for replies: pass --persistent to drive it through JetStream, or use a subject no stream captures"
    )]
    CapturedByStream {
        subject: String,
        stream: String,
        target: String,
    },
    #[error(
        "{target}: user '{user}' needs a password ({why}): set OEMPUTX_MQ_PASSWORD, or run in a terminal to be asked"
    )]
    NeedsPassword {
        target: String,
        user: String,
        why: String,
    },
    /// One of the errors above with what the client library said beneath it, kept as a
    /// chain: `source()` walks it and `{:#}` prints it, so a TLS or socket failure's own
    /// reason is not lost in a flattened string.
    #[error("{error}")]
    Caused {
        error: Box<TransportError>,
        #[source]
        cause: Cause,
    },
}

/// The first of a node list's `nodes` that `open` connects to, in order, with its name
/// (`host:port`, from `address`). A node that does not answer (unreachable, or lost in the
/// handshake) is passed: its error's kind decides, since a silent node's error carries the
/// client's own as its cause. Any other error (a refused login) ends the search; `none` is
/// the error of an empty list.
#[cfg(any(feature = "mqtt", feature = "stomp"))]
pub(crate) fn first_answering<N, T>(
    nodes: Vec<N>,
    address: impl Fn(&N) -> (&str, u16),
    mut open: impl FnMut(&N) -> Result<T, TransportError>,
    none: impl FnOnce() -> TransportError,
) -> Result<(T, String), TransportError> {
    let mut last = None;
    for node in nodes {
        match open(&node) {
            Ok(t) => {
                let (host, port) = address(&node);
                return Ok((t, crate::url_parts::node_name(host, port)));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    TransportError::Unreachable { .. } | TransportError::ConnectionLost { .. }
                ) =>
            {
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(none))
}

/// One step of a broker's handshake: `fut`'s output; the error `elapsed` makes once `bound`
/// passes; or [`TransportError::Interrupted`] as soon as a signal arrives, so that Ctrl-C on
/// a silent port ends the run at once (exit 130) rather than after the bound.
pub async fn handshake<F: std::future::Future>(
    target: &str,
    bound: std::time::Duration,
    fut: F,
    elapsed: impl FnOnce() -> TransportError,
) -> Result<F::Output, TransportError> {
    match crate::signals::within(bound, fut).await {
        Ok(out) => Ok(out),
        Err(crate::signals::Stopped::Elapsed) => Err(elapsed()),
        Err(crate::signals::Stopped::Interrupted) => Err(TransportError::connecting(target)),
    }
}

/// `fut` (a connect bounded by its own timeouts), ended at once by a signal with
/// [`TransportError::Interrupted`].
pub async fn interruptible<T, F>(target: &str, fut: F) -> Result<T, TransportError>
where
    F: std::future::Future<Output = Result<T, TransportError>>,
{
    // The bound is fut's own; this one only has to outlast it.
    handshake(target, std::time::Duration::from_secs(86_400), fut, || {
        TransportError::connecting(target)
    })
    .await?
}

/// Reaching the broker is the command line's (a wrong host or port, a refused login, a
/// missing queue: exit 2); losing it mid-run is the run's (exit 1).
impl crate::exit_code::Classified for TransportError {
    fn exit(&self) -> crate::exit_code::Exit {
        if self.is_usage() {
            crate::exit_code::Exit::Usage
        } else {
            crate::exit_code::Exit::Failure
        }
    }
}

impl TransportError {
    /// A signal ended the wait for `target`'s answer while connecting.
    pub fn connecting(target: &str) -> TransportError {
        TransportError::Interrupted {
            what: format!("connecting to {target}"),
        }
    }

    /// `what` failed on `target` because of `why`: the catch-all for a client's error.
    pub fn broker(target: &str, what: &str, why: impl std::fmt::Display) -> TransportError {
        TransportError::Broker {
            what: what.to_string(),
            target: target.to_string(),
            why: why.to_string(),
        }
    }

    /// This error with the causes beneath `e` (whose own text this error already carries)
    /// kept as its source chain; itself when `e` has none.
    pub fn caused_by(self, e: &(dyn std::error::Error + 'static)) -> TransportError {
        match Cause::below(e) {
            Some(cause) => TransportError::Caused {
                error: Box::new(self),
                cause,
            },
            None => self,
        }
    }

    /// The error itself, whatever cause it carries.
    pub fn kind(&self) -> &TransportError {
        match self {
            TransportError::Caused { error, .. } => error.kind(),
            other => other,
        }
    }

    /// Whether the user's input or environment is at fault (exit 2) rather than the run (exit 1).
    pub(crate) fn is_usage(&self) -> bool {
        matches!(
            self.kind(),
            TransportError::Unreachable { .. }
                | TransportError::AuthRefused { .. }
                | TransportError::VhostRefused { .. }
                | TransportError::MissingQueue { .. }
                | TransportError::MissingExchange { .. }
                | TransportError::ExchangeClash { .. }
                | TransportError::TooLarge { .. }
                | TransportError::MqLibrary { .. }
                | TransportError::NotYet { .. }
                | TransportError::MqRefused { .. }
                | TransportError::NeedsPassword { .. }
                | TransportError::NoResponders { .. }
                | TransportError::JetStreamDisabled { .. }
                | TransportError::NoStream { .. }
                | TransportError::NoStreamReader { .. }
                | TransportError::CapturedByStream { .. }
                | TransportError::NotAmqp10 { .. }
                | TransportError::AddressRefused { .. }
        )
    }
}

/// A reply as the driver sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The correlation id the responder set, if any.
    pub correl_id: Option<String>,
    /// Body length in bytes.
    pub len: usize,
}

/// What preparing the queues found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Messages deleted from a named reply queue before the run.
    pub cleared: u64,
    /// Where persistent requests are stored, when the transport can say more than
    /// "persistent" (NATS: the JetStream stream, its retention and storage).
    pub store: Option<String>,
    /// What the broker said of itself, when the transport asks (Kafka: its cluster id and
    /// API versions).
    pub broker: Option<String>,
}

/// One queue manager, opened once per run.
pub trait Transport: Send + Sync {
    /// Check (or, with --declare, create) the queues and clear a named reply queue.
    fn prepare(&self) -> Result<Prepared, TransportError>;
    /// Open task `task`'s own connection, with its reply queue and consumer ready.
    fn session(&self, task: usize) -> Result<TaskSession, TransportError>;
    /// Largest message body the transport accepts, in bytes.
    fn max_message_size(&self) -> usize;
    /// Kernel thread ids of threads inside this process that belong to the queue manager or
    /// flow rather than the driver (the embedded transport's), so that the driver's own CPU
    /// can be told apart from theirs.
    fn own_threads(&self) -> Vec<i32> {
        Vec::new()
    }
}

/// How a reply is paired with its request.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    /// A reply answers the request whose correlation id it carries (AMQP `correlation_id`,
    /// MQ `CorrelId` = request `MsgId`).
    Correl,
    /// Any reply answers the oldest outstanding request.
    Any,
}

/// The kind of queue `--declare` creates for the requests (RabbitMQ's `x-queue-type`):
/// where a cluster keeps its copies of a stored request, and what each costs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    /// One copy, on the node that declared it (RabbitMQ's default).
    Classic,
    /// A Raft log replicated to the cluster's nodes (durable, never exclusive).
    Quorum,
    /// An append-only log, read from an offset; its consumers must set a prefetch.
    Stream,
}

impl QueueType {
    /// The name RabbitMQ's `x-queue-type` argument takes.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Classic => "classic",
            QueueType::Quorum => "quorum",
            QueueType::Stream => "stream",
        }
    }
}

impl std::fmt::Display for QueueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where replies come back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyQueue {
    /// A temporary, exclusive queue per task, created by the broker and gone with the connection.
    Temporary,
    /// A named queue shared by all tasks; replies are matched by correlation id.
    Named(String),
    /// RabbitMQ's direct reply-to (`amq.rabbitmq.reply-to`): no queue at all, each task's
    /// channel consumes the pseudo-queue without acknowledgements before it publishes.
    Direct,
    /// A temporary queue per request, declared and consumed before its put and dropped
    /// with its reply (JMSPerfHarness's pattern: the reply path's own cost per message).
    PerRequest,
}

/// RabbitMQ's direct reply-to pseudo-queue.
pub const DIRECT_REPLY_TO: &str = "amq.rabbitmq.reply-to";

impl ReplyQueue {
    /// The reply path as reports name it (settings, identity columns).
    pub fn path(&self) -> &'static str {
        match self {
            ReplyQueue::Temporary => "per-task",
            ReplyQueue::Named(_) => "named",
            ReplyQueue::Direct => "direct",
            ReplyQueue::PerRequest => "per-request",
        }
    }
}

/// What every transport needs to know about the run's queues and messages.
#[derive(Debug, Clone)]
pub struct QueueSetup {
    pub request_queue: String,
    pub reply_queue: ReplyQueue,
    pub clear_reply_queue: bool,
    pub declare: bool,
    pub persistent: bool,
    pub syncpoint: bool,
    pub tasks: usize,
    /// How replies are paired with requests (a transport that gets by correlation id asks
    /// for the request's own reply under `Correl`).
    pub match_mode: MatchMode,
    /// IBM MQ: MQPUT1 per request.
    pub put1: bool,
    /// IBM MQ: the model queue of temporary reply queues (None: SYSTEM.DEFAULT.MODEL.QUEUE).
    pub model_queue: Option<String>,
    /// Publisher confirms (AMQP 0-9-1 `--confirm-window N`): at most N requests published
    /// and not yet confirmed; a put waits for confirms beyond that. None: no confirms.
    pub confirm_window: Option<u32>,
    /// `--replicas N`: the copies a cluster keeps of each stored request (NATS JetStream: the
    /// stream's replicas, when --declare creates it). None: the store's own default.
    pub replicas: Option<usize>,
    /// `--queue-type`: the kind of request queue `--declare` creates (RabbitMQ). None: the
    /// broker's default, and a queue found is taken whatever its kind.
    pub queue_type: Option<QueueType>,
    /// The longest one wait for the broker's answer to a request may take (the run's
    /// `--wait`): a transport that waits inside `put` (STOMP's receipt of a persistent
    /// send) waits no longer than a get would.
    pub wait: std::time::Duration,
    /// Raised when the run is interrupted (Ctrl-C, SIGTERM): a wait inside `put` ends at
    /// once and leaves the request to the driver, which abandons it, so that the run ends
    /// with its report and exit 130 rather than a failure after the wait.
    pub interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl QueueSetup {
    /// The plainest setup for `queue`: for administration (counting consumers, deleting).
    pub fn for_queue(queue: &str) -> QueueSetup {
        QueueSetup {
            request_queue: queue.to_string(),
            reply_queue: ReplyQueue::Temporary,
            clear_reply_queue: false,
            declare: false,
            persistent: false,
            syncpoint: false,
            tasks: 1,
            match_mode: MatchMode::Correl,
            put1: false,
            model_queue: None,
            confirm_window: None,
            replicas: None,
            queue_type: None,
            wait: std::time::Duration::from_secs(60),
            interrupt: Default::default(),
        }
    }

    /// The setup with the run's interrupt flag, which waits inside `put` watch.
    pub fn interrupted_by(
        mut self,
        interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> QueueSetup {
        self.interrupt = interrupt;
        self
    }
}

/// A current-thread runtime for one connection's client, on the thread that uses it: a
/// put or get costs no thread hop. `client` names the library for the error.
pub fn client_runtime(
    target: &str,
    client: &str,
) -> Result<tokio::runtime::Runtime, TransportError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            TransportError::broker(target, &format!("starting the {client} client runtime"), e)
        })
}

/// Open the transport an endpoint names, once its rules allow the setup.
pub fn open(endpoint: &Endpoint, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
    endpoint.kind().open(setup)
}

#[cfg(test)]
mod cause_tests {
    use super::*;

    /// A client library's error with a cause beneath it, as rustls or a socket gives one.
    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Level {
        text: String,
        #[source]
        below: Option<Box<Level>>,
    }

    fn level(text: &str, below: Option<Level>) -> Level {
        Level {
            text: text.into(),
            below: below.map(Box::new),
        }
    }

    #[test]
    fn the_causes_beneath_a_client_error_are_kept_scrubbed_and_not_repeated() {
        let e = level(
            "connection failed: handshake refused",
            Some(level(
                "handshake refused",
                Some(level(
                    "invalid peer certificate for amqps://guest:hunter2@broker:5671",
                    None,
                )),
            )),
        );
        let err = TransportError::Unreachable {
            target: "amqps://guest:***@broker:5671".into(),
            why: e.to_string(),
        }
        .caused_by(&e);
        assert!(err.is_usage(), "a wrapped error keeps its kind's exit code");
        assert!(matches!(err.kind(), TransportError::Unreachable { .. }));
        let chain = format!("{:#}", anyhow::Error::new(err));
        // "handshake refused" is in the message above it: said once; the password never.
        assert_eq!(chain.matches("handshake refused").count(), 1, "{chain}");
        assert!(chain.contains("invalid peer certificate"), "{chain}");
        assert!(!chain.contains("hunter2"), "{chain}");
        // Nothing beneath: the error stays as it was.
        let plain = TransportError::broker("t", "x", "y").caused_by(&level("y", None));
        assert!(matches!(plain, TransportError::Broker { .. }));
    }
}
