//! The seam between the driver and a queue manager: one trait, one file per transport.
//!
//! A [`Transport`] is opened once per run; it checks or creates the queues and clears the
//! reply queue ([`Transport::prepare`]), then opens one session (its own connection) per
//! driver task: a blocking [`Session`], or an async one for a client that runs on a runtime
//! ([`TaskSession`]). A session puts requests carrying a correlation id and gets replies
//! with a wait; pairing replies with requests is the driver's job, written once for all
//! transports.

pub mod amqp;
pub mod correl;
pub mod embedded;
pub mod ibmmq;

use crate::config::{Config, Endpoint, ReplyQueue};
use std::sync::Arc;
use std::time::Duration;

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
    #[error("{what} on {target}: {failure}. {fix}")]
    MqRefused {
        target: String,
        what: String,
        failure: String,
        fix: &'static str,
    },
    #[error(
        "{target}: user '{user}' needs a password ({why}): set OEMPUTX_MQ_PASSWORD, or run in a terminal to be asked"
    )]
    NeedsPassword {
        target: String,
        user: String,
        why: String,
    },
}

impl TransportError {
    /// Whether the user's input or environment is at fault (exit 2) rather than the run (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            TransportError::Unreachable { .. }
                | TransportError::AuthRefused { .. }
                | TransportError::VhostRefused { .. }
                | TransportError::MissingQueue { .. }
                | TransportError::TooLarge { .. }
                | TransportError::MqLibrary { .. }
                | TransportError::MqRefused { .. }
                | TransportError::NeedsPassword { .. }
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Messages deleted from a named reply queue before the run.
    pub cleared: u64,
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

/// One task's connection.
pub trait Session: Send {
    /// Put one request carrying `correl_id` (as correlation id and message id) and this
    /// session's reply queue.
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError>;
    /// Wait up to `wait` for the next reply; `None` when none came.
    fn get(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError>;
    /// Commit the unit of work under syncpoint (puts become visible, gets are acknowledged).
    fn commit(&mut self) -> Result<(), TransportError>;
    /// The driver stopped waiting for every request in flight (timed out or abandoned); a
    /// transport that gets replies by correlation id stops asking for theirs.
    fn forget_pending(&mut self) {}
    /// Close the connection cleanly.
    fn close(self: Box<Self>) -> Result<(), TransportError>;
}

/// A task's session, as the driver drives it.
pub enum TaskSession {
    /// Calls that block until done (embedded, IBM MQ): the driver makes them one by one.
    Blocking(Box<dyn Session>),
    /// An async client (AMQP): each phase of the driver's loop runs in one entry into the
    /// session's runtime, as a hand-written async loop would, rather than one entry per put
    /// and get (which measurably cost CPU per message).
    Async(Box<amqp::AmqpSession>),
}

/// What every transport needs from the config, in one place.
#[derive(Debug, Clone)]
pub struct QueueSetup {
    pub request_queue: String,
    pub reply_queue: ReplyQueue,
    pub clear_reply_queue: bool,
    pub declare: bool,
    pub persistent: bool,
    pub syncpoint: bool,
    pub tasks: usize,
}

impl QueueSetup {
    /// Take the queue settings of a validated config.
    pub fn from_config(cfg: &Config) -> Self {
        QueueSetup {
            request_queue: cfg.request_queue.clone(),
            reply_queue: cfg.reply_queue.clone(),
            clear_reply_queue: cfg.clear_reply_queue,
            declare: cfg.declare,
            persistent: cfg.persistent,
            syncpoint: cfg.syncpoint,
            tasks: cfg.tasks,
        }
    }
}

/// Open the transport a config names.
pub fn open(cfg: &Config) -> Result<Arc<dyn Transport>, TransportError> {
    let setup = QueueSetup::from_config(cfg);
    Ok(match &cfg.endpoint {
        Endpoint::Embedded => Arc::new(embedded::Embedded::start(setup)),
        Endpoint::Amqp(ep) => Arc::new(amqp::Amqp::new(ep.clone(), setup)),
        Endpoint::IbmMq(ep) => Arc::new(ibmmq::IbmMq::open(
            ep,
            ibmmq::MqOptions {
                setup,
                match_mode: cfg.match_mode,
                put1: cfg.put1,
            },
        )?),
    })
}
