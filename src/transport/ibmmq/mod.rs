//! IBM MQ through the MQI, the way OEMPUTX drove it: MQPUT (or MQPUT1) of a request whose
//! MQMD names the reply queue, MQGET with MQGMO_WAIT of the reply whose CorrelId is the
//! request's MsgId, under syncpoint with MQCMIT when asked.
//!
//! The calls go through the seam in [`calls`], so that the exact calls and options are
//! tested without a queue manager (none can run here) and run for real through `mqi`.

pub mod calls;
/// A queue manager in memory for the driver's tests of this transport (src/driver/ibmmq_tests.rs:
/// they run the driver, a layer above).
#[cfg(test)]
pub(crate) mod fake;
pub mod library;
impl EndpointKind for IbmMqEndpoint {
    fn transport(&self) -> &'static str {
        "ibmmq"
    }
    fn redacted(&self) -> String {
        IbmMqEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(IbmMq::open(self, setup)?))
    }
    /// OEMPUTX's address spaces: the queue manager, the broker (ACE), the database.
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@ibmmq", "BROKER=@ace", "DB=@db2"]
    }
    /// A client channel's listener (conn=host(port)): the flows' connections to the queue
    /// manager are found by it. In bindings mode they are not sockets, and this is None.
    fn broker_address(&self) -> Option<(String, u16)> {
        let (_, conn) = self.channel.as_ref()?;
        url::conn_host_port(conn)
    }
    /// IPPROCS of the queue, asked again after the run on a connection of its own; never
    /// by a prompt for the password (None then: a run asks once).
    fn counted_consumers(&self, queue: &str) -> Option<u32> {
        if self.user.is_some()
            && self.password.is_none()
            && std::env::var_os(PASSWORD_ENV).is_none()
        {
            return None;
        }
        let mq = IbmMq::open(self, QueueSetup::for_queue(queue)).ok()?;
        mq.open_input_count(queue).ok()
    }
    /// MQPUT1 and model queues are IBM MQ's own; queues are its administrator's to define.
    fn refuse(&self, setup: &QueueSetup) -> Result<(), OptionRefused> {
        super::endpoint::refuse_rabbitmq_paths(setup, "ibmmq")?;
        if let Some(model) = &setup.model_queue {
            if matches!(setup.reply_queue, ReplyQueue::Named(_)) {
                return Err(OptionRefused::new(
                    "--model-queue",
                    "it makes the temporary reply queues; with --reply-queue there are none (name the model queue as --reply-queue for a dynamic queue per task)",
                ));
            }
            if !url::is_mq_name(model) {
                return Err(OptionRefused::new(
                    "--model-queue",
                    format!(
                        "'{model}' is no MQ queue name: 1 to 48 characters of A-Z a-z 0-9 . _ / %"
                    ),
                ));
            }
        }
        if setup.declare {
            return Err(OptionRefused::new(
                "--declare",
                "oemputx does not define IBM MQ queues: define them with runmqsc (DEFINE QLOCAL(MQSI.IN)) and leave --declare out",
            ));
        }
        Ok(())
    }
}

pub mod url;

use super::endpoint::{EndpointKind, OptionRefused};
use super::{MatchMode, ReplyQueue};
use super::{Prepared, QueueSetup, Reply, Session, TaskSession, Transport, TransportError};
use crate::secret::Secret;
use calls::{
    ConnectSpec, Hobj, Id, MqFailure, MqiConnection, MqiLibrary, QueueKind, Reason, RequestMd,
};
use mqi::constants;
use mqi::types::{MQGMO, MQOO, MQPMO};
use std::collections::{HashMap, VecDeque};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;
use url::IbmMqEndpoint;

/// The model queue a temporary reply queue is made from (one dynamic queue per task),
/// unless --model-queue names another.
pub const MODEL_QUEUE: &str = "SYSTEM.DEFAULT.MODEL.QUEUE";
/// The environment variables that name a client channel for a connection by queue
/// manager name, in the order the MQ client looks at them (IBM MQ documentation,
/// "Connecting IBM MQ MQI client applications to queue managers").
pub const CLIENT_CHANNEL_ENV: [&str; 3] = ["MQSERVER", "MQCCDTURL", "MQCHLLIB"];
/// The environment variable that gives the MQCSP password.
pub const PASSWORD_ENV: &str = "OEMPUTX_MQ_PASSWORD";
/// MQ's largest message (MAXMSGL can be at most 100 MB); a queue's own MAXMSGL may be
/// lower, and MQPUT then fails with MQRC_MSG_TOO_BIG_FOR_Q, reported as such.
const MQ_MAX_MESSAGE: usize = 104_857_600;
/// Reply bodies are not used, only counted: a reply longer than this is received truncated
/// (MQGMO_ACCEPT_TRUNCATED_MSG) rather than failing.
const REPLY_BUFFER: usize = 1 << 20;
/// Answered MsgIds remembered per task, so that a second reply to one request is counted
/// as a duplicate rather than as a stray.
const ANSWERED_MEMORY: usize = 65_536;

/// IBM MQ, one queue manager.
pub struct IbmMq {
    lib: Arc<dyn MqiLibrary>,
    spec: ConnectSpec,
    target: String,
    setup: QueueSetup,
    /// Why a bare --qmgr name was taken for a queue manager, added to connection errors
    /// (the name may have been a mistyped profile).
    note: Option<String>,
}

impl IbmMq {
    /// Load the MQ client library and settle the connection (asking for the password when
    /// a user is given and no environment variable has it).
    pub fn open(ep: &IbmMqEndpoint, setup: QueueSetup) -> Result<IbmMq, TransportError> {
        let lib = library::load().map_err(|e| TransportError::MqLibrary {
            why: match &ep.note {
                Some(note) => format!("{note}; {e}"),
                None => e.to_string(),
            },
        })?;
        let spec = connect_spec(ep)?;
        let mut mq = IbmMq::with_library(lib, spec, ep.redacted(), setup);
        mq.note = ep.note.clone();
        Ok(mq)
    }

    /// The transport over any MQI (the tests' in-memory queue manager).
    pub(crate) fn with_library(
        lib: Arc<dyn MqiLibrary>,
        spec: ConnectSpec,
        target: String,
        setup: QueueSetup,
    ) -> IbmMq {
        IbmMq {
            lib,
            spec,
            target,
            setup,
            note: None,
        }
    }

    /// The queue's IPPROCS: handles open to get from it, as the queue manager counts them
    /// (MQINQ of MQIA_OPEN_INPUT_COUNT on a handle opened only to inquire, so that asking
    /// does not count itself).
    pub(crate) fn open_input_count(&self, queue: &str) -> Result<u32, TransportError> {
        let mut conn = self.connect()?;
        let inquire = MQOO(constants::MQOO_INQUIRE.0 | constants::MQOO_FAIL_IF_QUIESCING.0);
        let asked = conn.open(queue, inquire).and_then(|(hobj, _)| {
            let n = conn.inquire_open_input_count(hobj);
            let _ = conn.close(hobj);
            n
        });
        let _ = conn.disconnect();
        asked
            .map(|n| u32::try_from(n).unwrap_or(0))
            .map_err(|f| TransportError::Broker {
                what: format!("asking the open input count of {queue} (MQINQ)"),
                target: self.target.clone(),
                why: f.to_string(),
            })
    }

    fn connect(&self) -> Result<Box<dyn MqiConnection>, TransportError> {
        self.lib.connect(&self.spec).map_err(|f| {
            let refused = |fix: &'static str| TransportError::MqRefused {
                target: self.target.clone(),
                what: "connecting (MQCONNX)".into(),
                failure: f.to_string(),
                fix,
            };
            match f.reason {
                Reason::NOT_AUTHORIZED => return refused(
                    "the queue manager refused the connection: check the user and its password \
                     (OEMPUTX_MQ_PASSWORD), the queue manager's CONNAUTH (the AUTHINFO object's \
                     CHCKCLNT) and the CHLAUTH rules of the channel (runmqsc: DISPLAY CHLAUTH(channel) \
                     MATCH(RUNCHECK) ...); its error log AMQERR01.LOG names the rule that refused it",
                ),
                Reason::KEY_REPOSITORY_ERROR => return refused(
                    "the TLS key repository could not be opened: keyrepo= names the key database \
                     without its .kdb ending, and its .sth stash file must be beside it and readable",
                ),
                Reason::SSL_INITIALIZATION_ERROR => return refused(
                    "TLS could not start: check that cipher= is a CipherSpec the channel's SSLCIPH \
                     accepts and that the key repository holds the queue manager's CA certificate",
                ),
                _ => {}
            }
            match (
                mq_error(&self.target, "connecting (MQCONNX)", "", f),
                &self.note,
            ) {
                (TransportError::Unreachable { target, why }, Some(note)) => {
                    TransportError::Unreachable {
                        target,
                        why: format!("{why} ({note})"),
                    }
                }
                (e, _) => e,
            }
        })
    }

    fn sync_put(&self) -> MQPMO {
        if self.setup.syncpoint {
            constants::MQPMO_SYNCPOINT
        } else {
            constants::MQPMO_NO_SYNCPOINT
        }
    }

    fn sync_get(&self) -> MQGMO {
        if self.setup.syncpoint {
            constants::MQGMO_SYNCPOINT
        } else {
            constants::MQGMO_NO_SYNCPOINT
        }
    }

    /// Empty a named reply queue with destructive gets, as OEMPUTX did before a run.
    fn clear(&self, conn: &mut dyn MqiConnection, queue: &str) -> Result<u64, TransportError> {
        let (hobj, _) = conn
            .open(queue, OPEN_SHARED_INPUT)
            .map_err(|f| mq_error(&self.target, "opening the reply queue", queue, f))?;
        let mut buffer = vec![0u8; REPLY_BUFFER];
        let mut cleared = 0;
        let options = constants::MQGMO_NO_WAIT
            | constants::MQGMO_NO_SYNCPOINT
            | constants::MQGMO_ACCEPT_TRUNCATED_MSG
            | constants::MQGMO_FAIL_IF_QUIESCING;
        while conn
            .get(hobj, options, 0, None, &mut buffer)
            .map_err(|f| mq_error(&self.target, "clearing the reply queue", queue, f))?
            .is_some()
        {
            cleared += 1;
        }
        conn.close(hobj)
            .map_err(|f| mq_error(&self.target, "closing the reply queue", queue, f))?;
        Ok(cleared)
    }
}

impl IbmMq {
    /// Open a reply queue (named, or the model a temporary one is made from) and find out
    /// what it is: MQINQ of its type tells a task's own dynamic queue from a queue several
    /// tasks share (a local or an alias queue, whose resolved name differs from the given
    /// one as a dynamic queue's does). Without authority to inquire, the queue is taken to
    /// be shared: getting by CorrelId is right on any queue.
    fn open_reply(
        &self,
        conn: &mut dyn MqiConnection,
        queue: &str,
        exclusive: bool,
    ) -> Result<(Hobj, String, Option<QueueKind>), TransportError> {
        let what = if exclusive {
            "creating a temporary reply queue from"
        } else {
            "opening the reply queue"
        };
        let (input, with_inquire) = if exclusive {
            (OPEN_EXCLUSIVE_INPUT, OPEN_EXCLUSIVE_INPUT_INQUIRE)
        } else {
            (OPEN_SHARED_INPUT, OPEN_SHARED_INPUT_INQUIRE)
        };
        let (hobj, resolved, kind) = match conn.open(queue, with_inquire) {
            Ok((hobj, resolved)) => {
                let kind = conn
                    .inquire_kind(hobj)
                    .map_err(|f| mq_error(&self.target, "inquiring about", queue, f))?;
                (hobj, resolved, Some(kind))
            }
            Err(f) if f.reason == Reason::NOT_AUTHORIZED => {
                let (hobj, resolved) = conn
                    .open(queue, input)
                    .map_err(|f| mq_error(&self.target, what, queue, f))?;
                (hobj, resolved, None)
            }
            Err(f) => return Err(mq_error(&self.target, what, queue, f)),
        };
        let dynamic = exclusive || kind.is_some_and(QueueKind::is_own);
        let resolved = match resolved.is_empty() {
            // A blank ResolvedQName would make ReplyToQ the model's name: replies would go
            // nowhere this task reads.
            true if dynamic => {
                return Err(TransportError::MqRefused {
                    target: self.target.clone(),
                    what: format!("{what} '{queue}'"),
                    failure: "MQOPEN gave no name for the dynamic queue it made".into(),
                    fix: "check that the model queue's DYNQNAME makes a valid name, or name a reply queue with --reply-queue",
                });
            }
            true => queue.to_string(),
            false => resolved,
        };
        Ok((hobj, resolved, kind))
    }

    /// MQ refuses persistent messages on a temporary dynamic queue (MQRC_PERSISTENT_NOT_ALLOWED,
    /// IBM MQ documentation "Dynamic queues"): a responder that replies with the request's
    /// persistence, as IBM recommends, could put no reply there.
    fn check_persistent_replies(
        &self,
        reply: &str,
        kind: Option<QueueKind>,
        temporary: bool,
    ) -> Result<(), TransportError> {
        let refused = match kind {
            Some(k) => k == QueueKind::TemporaryDynamic,
            // Not known: the default model queue makes temporary dynamic queues.
            None => temporary,
        };
        if self.setup.persistent && refused {
            return Err(TransportError::MqRefused {
                target: self.target.clone(),
                what: format!("--persistent with the temporary dynamic reply queue '{reply}'"),
                failure: format!(
                    "MQ refuses persistent messages on temporary dynamic queues ({}), so no persistent reply could reach it",
                    Reason::PERSISTENT_NOT_ALLOWED
                ),
                fix: "name a permanent reply queue with --reply-queue, or a model queue of DEFTYPE(PERMDYN) with --model-queue",
            });
        }
        Ok(())
    }
}

const OPEN_OUTPUT: MQOO = MQOO(constants::MQOO_OUTPUT.0 | constants::MQOO_FAIL_IF_QUIESCING.0);
const OPEN_SHARED_INPUT_INQUIRE: MQOO = MQOO(OPEN_SHARED_INPUT.0 | constants::MQOO_INQUIRE.0);
const OPEN_EXCLUSIVE_INPUT_INQUIRE: MQOO = MQOO(OPEN_EXCLUSIVE_INPUT.0 | constants::MQOO_INQUIRE.0);
const OPEN_SHARED_INPUT: MQOO =
    MQOO(constants::MQOO_INPUT_SHARED.0 | constants::MQOO_FAIL_IF_QUIESCING.0);
const OPEN_EXCLUSIVE_INPUT: MQOO =
    MQOO(constants::MQOO_INPUT_EXCLUSIVE.0 | constants::MQOO_FAIL_IF_QUIESCING.0);

impl Transport for IbmMq {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        let mut conn = self.connect()?;
        let request = &self.setup.request_queue;
        // Opening for output checks that the request queue exists and that we may put to it.
        let (hobj, _) = conn
            .open(request, OPEN_OUTPUT)
            .map_err(|f| mq_error(&self.target, "opening the request queue", request, f))?;
        conn.close(hobj)
            .map_err(|f| mq_error(&self.target, "closing the request queue", request, f))?;
        let cleared = match &self.setup.reply_queue {
            ReplyQueue::Named(q) if self.setup.clear_reply_queue => self.clear(conn.as_mut(), q)?,
            _ => 0,
        };
        conn.disconnect()
            .map_err(|f| mq_error(&self.target, "disconnecting (MQDISC)", "", f))?;
        Ok(Prepared {
            cleared,
            ..Prepared::default()
        })
    }

    fn session(&self, _task: usize) -> Result<TaskSession, TransportError> {
        let mut conn = self.connect()?;
        let request_queue = self.setup.request_queue.clone();
        let request = if self.setup.put1 {
            None
        } else {
            Some(conn.open(&request_queue, OPEN_OUTPUT).map_err(|f| {
                mq_error(&self.target, "opening the request queue", &request_queue, f)
            })?)
        };
        let model = self.setup.model_queue.as_deref().unwrap_or(MODEL_QUEUE);
        let opened = match &self.setup.reply_queue {
            ReplyQueue::Named(q) => self.open_reply(conn.as_mut(), q, false),
            // Direct and per-request were refused before the run (EndpointKind::refuse).
            ReplyQueue::Temporary | ReplyQueue::Direct | ReplyQueue::PerRequest => {
                self.open_reply(conn.as_mut(), model, true)
            }
        };
        let temporary = matches!(self.setup.reply_queue, ReplyQueue::Temporary);
        let (reply, reply_name, kind) = match opened.and_then(|(h, name, kind)| {
            self.check_persistent_replies(&name, kind, temporary)
                .map(|()| (h, name, kind))
        }) {
            Ok(opened) => opened,
            Err(e) => {
                let _ = conn.disconnect();
                return Err(e);
            }
        };
        // A queue several tasks read: each gets its own replies by CorrelId.
        let shared = match kind {
            Some(k) => !k.is_own(),
            None => !temporary,
        };
        Ok(TaskSession::Blocking(Box::new(MqSession {
            conn: Some(conn),
            target: self.target.clone(),
            request_queue,
            request: request.map(|(h, _)| h),
            reply,
            md: RequestMd {
                reply_to_q: reply_name,
                persistence: if self.setup.persistent {
                    constants::MQPER_PERSISTENT
                } else {
                    constants::MQPER_NOT_PERSISTENT
                },
                text: true,
            },
            put_options: constants::MQPMO_NEW_MSG_ID
                | constants::MQPMO_FAIL_IF_QUIESCING
                | self.sync_put(),
            get_options: constants::MQGMO_WAIT
                | constants::MQGMO_FAIL_IF_QUIESCING
                | constants::MQGMO_ACCEPT_TRUNCATED_MSG
                | self.sync_get(),
            by_correl: shared && self.setup.match_mode == MatchMode::Correl,
            syncpoint: self.setup.syncpoint,
            in_unit: false,
            outstanding: HashMap::new(),
            order: VecDeque::new(),
            answered: HashMap::new(),
            answered_order: VecDeque::new(),
            buffer: vec![0u8; REPLY_BUFFER],
        })))
    }

    fn max_message_size(&self) -> usize {
        MQ_MAX_MESSAGE
    }
}

/// The session's connection, or the error of a session already closed. A function over the
/// two fields rather than a method, so that the other fields stay free to borrow: the hot
/// path clones nothing.
fn live<'a>(
    conn: &'a mut Option<Box<dyn MqiConnection>>,
    target: &str,
) -> Result<&'a mut Box<dyn MqiConnection>, TransportError> {
    conn.as_mut().ok_or_else(|| TransportError::ConnectionLost {
        target: target.to_string(),
        why: "session already closed".into(),
    })
}

/// One task's connection, reply queue and the MsgIds of its requests.
struct MqSession {
    /// `None` only after close.
    conn: Option<Box<dyn MqiConnection>>,
    target: String,
    request_queue: String,
    /// The open request queue; `None` under --put1.
    request: Option<Hobj>,
    reply: Hobj,
    md: RequestMd,
    put_options: MQPMO,
    get_options: MQGMO,
    /// MQGET by CorrelId (a reply queue shared by several tasks) rather than next message.
    by_correl: bool,
    syncpoint: bool,
    /// A put or get under syncpoint since the last MQCMIT: a unit of work is open. MQDISC
    /// would commit it (IBM MQ documentation, "MQDISC - Disconnect queue manager": a normal
    /// disconnect commits), so closing after an error backs it out first.
    in_unit: bool,
    /// The driver's correlation id of each request not yet answered, by MsgId.
    outstanding: HashMap<Id, String>,
    /// MsgIds in put order, the ones the driver still waits for (for MQGET by CorrelId).
    order: VecDeque<Id>,
    /// Recently answered requests, to tell a duplicate reply from a stray one.
    answered: HashMap<Id, String>,
    answered_order: VecDeque<Id>,
    buffer: Vec<u8>,
}

impl MqSession {
    /// The driver's correlation id for a reply's CorrelId: ours when it names a request of
    /// this task, else the CorrelId in hex (the driver counts it as unmatched).
    fn correlate(&mut self, correl_id: &Id) -> String {
        if let Some(ours) = self.outstanding.remove(correl_id) {
            if let Some(pos) = self.order.iter().position(|id| id == correl_id) {
                self.order.remove(pos);
            }
            if self.answered_order.len() >= ANSWERED_MEMORY
                && let Some(old) = self.answered_order.pop_front()
            {
                self.answered.remove(&old);
            }
            self.answered.insert(*correl_id, ours.clone());
            self.answered_order.push_back(*correl_id);
            return ours;
        }
        if let Some(ours) = self.answered.get(correl_id) {
            return ours.clone();
        }
        correl_id.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl Session for MqSession {
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        let MqSession {
            conn,
            target,
            md,
            put_options,
            request,
            request_queue,
            syncpoint,
            in_unit,
            ..
        } = self;
        let conn = live(conn, target)?;
        // MQSTR only for text: a --msgfile of arbitrary bytes goes as MQFMT_NONE, so that
        // no receiver converts it as characters.
        md.text = std::str::from_utf8(body).is_ok();
        *in_unit |= *syncpoint;
        let result = match *request {
            Some(hobj) => conn.put(hobj, md, *put_options, body),
            None => conn.put1(request_queue, md, *put_options, body),
        };
        let msg_id = result.map_err(|f| {
            // A request too long for where it goes: the queue's (or queue manager's) MAXMSGL,
            // or a client channel's negotiated MaxMsgLength.
            let too_big = match f.reason {
                Reason::MSG_TOO_BIG_FOR_Q | Reason::MSG_TOO_BIG_FOR_Q_MGR => Some(
                    "raise MAXMSGL of the queue (and queue manager), or use a smaller --msgfile or --msg-size",
                ),
                Reason::DATA_LENGTH_ERROR | Reason::MSG_TOO_BIG_FOR_CHANNEL => Some(
                    "the client channel's MAXMSGL is lower: raise it on the server-connection channel (runmqsc: ALTER CHANNEL(name) CHLTYPE(SVRCONN) MAXMSGL(104857600)), the queue and the queue manager, or use a smaller --msgfile or --msg-size",
                ),
                _ => None,
            };
            if let Some(fix) = too_big {
                return TransportError::MqRefused {
                    target: target.clone(),
                    what: format!(
                        "putting a {} byte request to '{request_queue}'",
                        body.len()
                    ),
                    failure: f.to_string(),
                    fix,
                };
            }
            mq_error(target, "putting a request to", request_queue, f)
        })?;
        self.outstanding.insert(msg_id, correl_id.to_string());
        if self.by_correl {
            self.order.push_back(msg_id);
        }
        Ok(())
    }

    fn get(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        let correl = if self.by_correl {
            match self.order.front() {
                Some(id) => Some(*id),
                None => {
                    // Nothing of ours is awaited; a get would take another task's reply.
                    std::thread::sleep(wait);
                    return Ok(None);
                }
            }
        } else {
            None
        };
        let wait_ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        self.in_unit |= self.syncpoint;
        let MqSession {
            conn,
            target,
            md,
            reply,
            get_options,
            buffer,
            ..
        } = self;
        let got = live(conn, target)?
            .get(*reply, *get_options, wait_ms, correl, buffer)
            .map_err(|f| mq_error(target, "getting a reply from", &md.reply_to_q, f));
        Ok(got?.map(|m| Reply {
            correl_id: Some(self.correlate(&m.correl_id)),
            len: m.len,
        }))
    }

    fn commit(&mut self) -> Result<(), TransportError> {
        if !self.syncpoint {
            return Ok(());
        }
        let committed = live(&mut self.conn, &self.target)?.commit();
        // Committed or backed out, the unit of work is over.
        self.in_unit = false;
        committed.map_err(|f| {
            if f.reason == Reason::BACKED_OUT {
                return TransportError::Broker {
                    what: "committing (MQCMIT)".into(),
                    target: self.target.clone(),
                    why: format!(
                        "{f}: the queue manager backed the unit of work out instead, so its requests never reached the flow and its replies are back on the reply queue; its error log (AMQERR01.LOG) says why (a full log, MAXUMSGS, a broken connection)"
                    ),
                };
            }
            mq_error(&self.target, "committing (MQCMIT)", "", f)
        })
    }

    fn forget_pending(&mut self) {
        // The driver gave up on these requests; their MsgIds stay known so that a late
        // reply still reads as late, but MQGET by CorrelId moves on to newer requests.
        self.order.clear();
    }

    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let target = self.target.clone();
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        if std::mem::take(&mut self.in_unit) {
            // Puts the driver did not commit (an error or a stop inside a batch) must not
            // reach the flow after the run counted them as abandoned.
            conn.backout()
                .map_err(|f| mq_error(&target, "backing out (MQBACK)", "", f))?;
        }
        for hobj in self.request.into_iter().chain([self.reply]) {
            conn.close(hobj)
                .map_err(|f| mq_error(&target, "closing a queue (MQCLOSE)", "", f))?;
        }
        conn.disconnect()
            .map_err(|f| mq_error(&target, "disconnecting (MQDISC)", "", f))
    }
}

impl Drop for MqSession {
    fn drop(&mut self) {
        // A session dropped without close: back out any open unit of work (MQDISC alone
        // would commit it), then disconnect, which removes a temporary dynamic queue.
        if let Some(mut conn) = self.conn.take() {
            if self.in_unit {
                let _ = conn.backout();
            }
            let _ = conn.disconnect();
        }
    }
}

/// A failed MQI call as a transport error: the reason by name, with what to do about it.
fn mq_error(target: &str, what: &str, object: &str, f: MqFailure) -> TransportError {
    let what = if object.is_empty() {
        what.to_string()
    } else {
        format!("{what} '{object}'")
    };
    let refused = |fix: &'static str| TransportError::MqRefused {
        target: target.to_string(),
        what: what.clone(),
        failure: f.to_string(),
        fix,
    };
    match f.reason {
        // The connection is gone: the run fails with its partial report.
        Reason::CONNECTION_BROKEN
        | Reason::HCONN_ERROR
        | Reason::Q_MGR_QUIESCING
        | Reason::Q_MGR_STOPPING
        | Reason::CONNECTION_QUIESCING
        | Reason::CONNECTION_STOPPING => TransportError::ConnectionLost {
            target: target.to_string(),
            why: format!("{what}: {f}"),
        },
        Reason::NOT_AUTHORIZED => refused(
            "grant the user access (setmqaut, or SET AUTHREC in runmqsc) or connect as a user who has it",
        ),
        Reason::UNKNOWN_OBJECT_NAME => refused(
            "define the queue (runmqsc: DEFINE QLOCAL(name)) or name an existing one with --request-queue / --reply-queue",
        ),
        // The queue manager cannot be reached as named.
        Reason::Q_MGR_NAME_ERROR
        | Reason::Q_MGR_NOT_AVAILABLE
        | Reason::HOST_NOT_AVAILABLE
        | Reason::CHANNEL_CONFIG_ERROR
        | Reason::UNKNOWN_CHANNEL_NAME => TransportError::Unreachable {
            target: target.to_string(),
            why: format!(
                "{what}: {f}; check the queue manager name, MQSERVER or the CCDT, and that the listener runs"
            ),
        },
        Reason::OBJECT_NAME_ERROR => {
            refused("MQ object names are at most 48 characters of A-Z a-z 0-9 . _ / %")
        }
        Reason::SYNCPOINT_LIMIT_REACHED => refused(
            "the unit of work holds more messages than the queue manager's MAXUMSGS: lower --msgs-per-loop, or raise MAXUMSGS (runmqsc: ALTER QMGR MAXUMSGS(n))",
        ),
        _ => TransportError::Broker {
            what,
            target: target.to_string(),
            why: f.to_string(),
        },
    }
}

/// The connection a config names, with the password settled.
fn connect_spec(ep: &IbmMqEndpoint) -> Result<ConnectSpec, TransportError> {
    let credentials = match &ep.user {
        None => None,
        Some(user) => Some((user.clone(), password_for(ep, user)?)),
    };
    Ok(spec_for(ep, credentials, |k| std::env::var_os(k).is_some()))
}

/// The connection for an endpoint, given which environment variables are set.
pub(crate) fn spec_for(
    ep: &IbmMqEndpoint,
    credentials: Option<(String, Secret)>,
    env_set: impl Fn(&str) -> bool,
) -> ConnectSpec {
    let (max_msg_length, client_binding) = match &ep.channel {
        // MQ's largest message; the server-connection channel's own MAXMSGL still caps it.
        Some(_) => (Some(MQ_MAX_MESSAGE as i32), None),
        None => (None, client_channel_env(env_set)),
    };
    ConnectSpec {
        qmgr: ep.qmgr.clone(),
        channel: ep.channel.clone(),
        credentials,
        tls: ep.tls.clone(),
        max_msg_length,
        client_binding,
    }
}

/// The first of MQSERVER, MQCCDTURL and MQCHLLIB that is set: a connection by queue
/// manager name then goes by client binding.
pub(crate) fn client_channel_env(env_set: impl Fn(&str) -> bool) -> Option<&'static str> {
    CLIENT_CHANNEL_ENV.into_iter().find(|k| env_set(k))
}

/// The MQCSP password: from the URL (discouraged), $OEMPUTX_MQ_PASSWORD, or a prompt that
/// does not echo when a terminal is there to ask.
fn password_for(ep: &IbmMqEndpoint, user: &str) -> Result<Secret, TransportError> {
    if let Some(p) = &ep.password {
        return Ok(p.clone());
    }
    if let Ok(p) = std::env::var(PASSWORD_ENV) {
        return Ok(Secret::new(p));
    }
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password(format!("IBM MQ password for {user}: "))
            .map(Secret::new)
            .map_err(|e| TransportError::NeedsPassword {
                target: ep.redacted(),
                user: user.to_string(),
                why: format!("the prompt failed: {e}"),
            });
    }
    Err(TransportError::NeedsPassword {
        target: ep.redacted(),
        user: user.to_string(),
        why: "no terminal to ask on".into(),
    })
}
