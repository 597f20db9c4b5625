//! The MQI seam: the calls oemputx makes to a queue manager, with their options, and
//! nothing else.
//!
//! The transport is written against [`MqiLibrary`] and [`MqiConnection`]; the real
//! implementation (`library.rs`) passes each call to the `mqi` crate, and the tests pass it
//! to an in-memory queue manager that records every call. Options are the MQI's own types
//! (`MQOO`, `MQPMO`, `MQGMO`) so that a test states exactly what would reach MQ.

use mqi::constants;
use mqi::types::{MQGMO, MQOO, MQPER, MQPMO, MQRC};

/// A message or correlation id: 24 bytes, as MQ has them.
pub type Id = [u8; 24];

/// An MQ reason code, named the way MQ names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reason(pub i32);

/// The reason codes oemputx treats apart, taken from MQ's own constants.
impl Reason {
    pub const NO_MSG_AVAILABLE: Reason = Reason(constants::MQRC_NO_MSG_AVAILABLE.0);
    pub const CONNECTION_BROKEN: Reason = Reason(constants::MQRC_CONNECTION_BROKEN.0);
    pub const HCONN_ERROR: Reason = Reason(constants::MQRC_HCONN_ERROR.0);
    pub const HOBJ_ERROR: Reason = Reason(constants::MQRC_HOBJ_ERROR.0);
    pub const NOT_AUTHORIZED: Reason = Reason(constants::MQRC_NOT_AUTHORIZED.0);
    pub const UNKNOWN_OBJECT_NAME: Reason = Reason(constants::MQRC_UNKNOWN_OBJECT_NAME.0);
    pub const OBJECT_NAME_ERROR: Reason = Reason(constants::MQRC_OBJECT_NAME_ERROR.0);
    pub const Q_MGR_NAME_ERROR: Reason = Reason(constants::MQRC_Q_MGR_NAME_ERROR.0);
    pub const Q_MGR_NOT_AVAILABLE: Reason = Reason(constants::MQRC_Q_MGR_NOT_AVAILABLE.0);
    pub const Q_MGR_QUIESCING: Reason = Reason(constants::MQRC_Q_MGR_QUIESCING.0);
    pub const Q_MGR_STOPPING: Reason = Reason(constants::MQRC_Q_MGR_STOPPING.0);
    pub const CONNECTION_QUIESCING: Reason = Reason(constants::MQRC_CONNECTION_QUIESCING.0);
    pub const CONNECTION_STOPPING: Reason = Reason(constants::MQRC_CONNECTION_STOPPING.0);
    pub const HOST_NOT_AVAILABLE: Reason = Reason(constants::MQRC_HOST_NOT_AVAILABLE.0);
    pub const CHANNEL_CONFIG_ERROR: Reason = Reason(constants::MQRC_CHANNEL_CONFIG_ERROR.0);
    pub const UNKNOWN_CHANNEL_NAME: Reason = Reason(constants::MQRC_UNKNOWN_CHANNEL_NAME.0);
    pub const MSG_TOO_BIG_FOR_Q: Reason = Reason(constants::MQRC_MSG_TOO_BIG_FOR_Q.0);
    pub const MSG_TOO_BIG_FOR_Q_MGR: Reason = Reason(constants::MQRC_MSG_TOO_BIG_FOR_Q_MGR.0);
    /// A client's message longer than the channel's negotiated MaxMsgLength (MQPUT, MQGET).
    pub const DATA_LENGTH_ERROR: Reason = Reason(constants::MQRC_DATA_LENGTH_ERROR.0);
    pub const MSG_TOO_BIG_FOR_CHANNEL: Reason = Reason(constants::MQRC_MSG_TOO_BIG_FOR_CHANNEL.0);
    /// MQCMIT could not commit: the unit of work was backed out (an MQCC_WARNING).
    pub const BACKED_OUT: Reason = Reason(constants::MQRC_BACKED_OUT.0);
    /// A persistent message to a temporary dynamic queue.
    pub const PERSISTENT_NOT_ALLOWED: Reason = Reason(constants::MQRC_PERSISTENT_NOT_ALLOWED.0);
    /// More uncommitted messages in the unit of work than the queue manager's MAXUMSGS.
    pub const SYNCPOINT_LIMIT_REACHED: Reason = Reason(constants::MQRC_SYNCPOINT_LIMIT_REACHED.0);
    pub const KEY_REPOSITORY_ERROR: Reason = Reason(constants::MQRC_KEY_REPOSITORY_ERROR.0);
    pub const SSL_INITIALIZATION_ERROR: Reason = Reason(constants::MQRC_SSL_INITIALIZATION_ERROR.0);
    /// MQINQ on a handle not opened with MQOO_INQUIRE.
    pub const NOT_OPEN_FOR_INQUIRE: Reason = Reason(constants::MQRC_NOT_OPEN_FOR_INQUIRE.0);
    /// MQINQ answered without the attribute asked for.
    pub const SELECTOR_ERROR: Reason = Reason(constants::MQRC_SELECTOR_ERROR.0);
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The name comes from MQ's own constant table (libmqm-constants), not from a list
        // of ours, so that every reason code prints by name.
        let named = MQRC(self.0).to_string();
        if named.starts_with("MQRC_") {
            write!(f, "{named} ({})", self.0)
        } else {
            write!(f, "MQRC {}", self.0)
        }
    }
}

/// A failed MQI call: the verb and its reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MqFailure {
    pub verb: &'static str,
    pub reason: Reason,
}

impl std::fmt::Display for MqFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed with {}", self.verb, self.reason)
    }
}

/// The MQMD fields a request sets; the rest are MQMD_DEFAULT (MsgType request, MsgId
/// from the queue manager through MQPMO_NEW_MSG_ID).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestMd {
    /// ReplyToQ: the queue the responder puts the reply to.
    pub reply_to_q: String,
    pub persistence: MQPER,
    /// Format MQSTR for text bodies, MQFMT_NONE for bytes.
    pub text: bool,
}

/// What an MQGET returned about the message it got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Got {
    pub msg_id: Id,
    pub correl_id: Id,
    /// Body bytes received (at most the buffer; MQGMO_ACCEPT_TRUNCATED_MSG drops the rest).
    pub len: usize,
}

/// What MQINQ (MQIA_Q_TYPE, MQIA_DEFINITION_TYPE) says of an opened queue: whether its
/// messages are this connection's alone, and whether it takes persistent messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// A local queue defined by the administrator: shared by whoever opens it.
    Predefined,
    /// An alias: it resolves to a base queue that others may open as well.
    Alias,
    /// Created from a model queue by this open, kept after close (DEFTYPE(PERMDYN)).
    PermanentDynamic,
    /// Created from a model queue by this open, deleted at close (DEFTYPE(TEMPDYN)): MQ
    /// refuses persistent messages on it.
    TemporaryDynamic,
    /// Any other answer (a cluster or remote queue, a shared dynamic queue on z/OS).
    Other,
}

impl QueueKind {
    /// From the MQINQ values: Q_TYPE first (an alias has no definition type; MQ answers
    /// MQIAV_NOT_APPLICABLE for it), then DEFINITION_TYPE for a local queue.
    pub(crate) fn from_inquiry(q_type: i32, definition_type: i32) -> QueueKind {
        if q_type == constants::MQQT_ALIAS.0 {
            return QueueKind::Alias;
        }
        if q_type != constants::MQQT_LOCAL.0 {
            return QueueKind::Other;
        }
        match definition_type {
            d if d == constants::MQQDT_PREDEFINED.0 => QueueKind::Predefined,
            d if d == constants::MQQDT_PERMANENT_DYNAMIC.0 => QueueKind::PermanentDynamic,
            d if d == constants::MQQDT_TEMPORARY_DYNAMIC.0 => QueueKind::TemporaryDynamic,
            _ => QueueKind::Other,
        }
    }

    /// Whether this open created the queue for this connection alone.
    pub(crate) fn is_own(self) -> bool {
        matches!(
            self,
            QueueKind::PermanentDynamic | QueueKind::TemporaryDynamic
        )
    }
}

/// How to reach a queue manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectSpec {
    /// Queue manager name; empty for the default queue manager.
    pub qmgr: String,
    /// A client channel given in the URL: (channel, connection name). `None` leaves the
    /// choice to MQ: MQSERVER, then a CCDT (MQCCDTURL), else bindings to a local queue
    /// manager.
    pub channel: Option<(String, String)>,
    /// User and password for MQCSP authentication.
    pub credentials: Option<(String, crate::secret::Secret)>,
    /// TLS on the client channel: (cipher spec, key repository).
    pub tls: Option<(String, String)>,
    /// The MaxMsgLength of the client channel definition oemputx builds from the URL
    /// (`channel` given): MQ's default client MQCD has 4 MB, and the channel negotiates
    /// the lower of the client's and the server's.
    pub max_msg_length: Option<i32>,
    /// Why a connection by queue manager name asks for client binding (MQCNO_CLIENT_BINDING):
    /// the environment variable that names the channel (MQSERVER, MQCCDTURL, MQCHLLIB).
    /// Without it the MQI's standard binding tries a local queue manager first on a host
    /// that has the MQ server installed.
    pub client_binding: Option<&'static str>,
}

/// Opens connections: MQCONNX.
pub trait MqiLibrary: Send + Sync {
    fn connect(&self, spec: &ConnectSpec) -> Result<Box<dyn MqiConnection>, MqFailure>;
}

/// An object handle of a connection.
pub type Hobj = usize;

/// One connection's MQI calls.
pub trait MqiConnection: Send {
    /// MQOPEN; returns the handle and the resolved queue name (a model queue resolves to
    /// the dynamic queue it created; an alias to its base queue), empty when MQ gave none.
    fn open(&mut self, queue: &str, options: MQOO) -> Result<(Hobj, String), MqFailure>;
    /// MQINQ of MQIA_Q_TYPE and MQIA_DEFINITION_TYPE on a queue opened with MQOO_INQUIRE.
    fn inquire_kind(&mut self, hobj: Hobj) -> Result<QueueKind, MqFailure>;
    /// MQINQ of MQIA_OPEN_INPUT_COUNT (IPPROCS: the handles that have the queue open to
    /// get) on a queue opened with MQOO_INQUIRE.
    fn inquire_open_input_count(&mut self, hobj: Hobj) -> Result<i32, MqFailure>;
    /// MQPUT; returns the MsgId the queue manager gave the message.
    fn put(
        &mut self,
        hobj: Hobj,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure>;
    /// MQPUT1 to `queue`; returns the MsgId.
    fn put1(
        &mut self,
        queue: &str,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure>;
    /// MQGET with `options` and WaitInterval `wait_ms`, matching CorrelId when `correl_id`
    /// is given (MQMO_MATCH_CORREL_ID). `Ok(None)` is MQRC_NO_MSG_AVAILABLE.
    fn get(
        &mut self,
        hobj: Hobj,
        options: MQGMO,
        wait_ms: i32,
        correl_id: Option<Id>,
        buffer: &mut [u8],
    ) -> Result<Option<Got>, MqFailure>;
    /// MQCMIT. MQ reports a unit of work it backed out instead as a warning
    /// (MQRC_BACKED_OUT); it comes back here as the failure it is.
    fn commit(&mut self) -> Result<(), MqFailure>;
    /// MQBACK: undo the puts and gets of the open unit of work.
    fn backout(&mut self) -> Result<(), MqFailure>;
    /// MQCLOSE.
    fn close(&mut self, hobj: Hobj) -> Result<(), MqFailure>;
    /// MQDISC.
    fn disconnect(self: Box<Self>) -> Result<(), MqFailure>;
}
