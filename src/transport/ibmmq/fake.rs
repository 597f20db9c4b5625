//! An in-memory queue manager behind the MQI seam, for tests: queues, model and alias
//! queues, MsgIds, syncpoint, waits, a responder that answers requests the MQ way (reply
//! CorrelId = request MsgId, reply persistence = request persistence), failures on cue, and
//! a log of every call with its options.
//!
//! Where a real queue manager has a rule that decides whether oemputx works, the fake
//! keeps it, with the IBM MQ documentation page that states it:
//! - a temporary dynamic queue takes no persistent message (MQRC_PERSISTENT_NOT_ALLOWED;
//!   "Dynamic queues", and MQPUT's reason codes);
//! - MQDISC commits an open unit of work ("MQDISC - Disconnect queue manager": "any
//!   uncommitted changes are committed" on a normal disconnect); MQBACK discards it;
//! - MQCMIT that backs out instead completes with a warning, MQRC_BACKED_OUT ("MQCMIT");
//! - a client's message is limited by the channel's negotiated MaxMsgLength, the lower of
//!   the client MQCD's (4 MB unless raised) and the server-connection channel's MAXMSGL
//!   (4 MB by default), else MQRC_DATA_LENGTH_ERROR ("MaxMsgLength (MQLONG)" of the MQCD);
//! - an alias queue resolves to its base queue, which others can open too ("Alias queues");
//! - MQINQ needs MQOO_INQUIRE (MQRC_NOT_OPEN_FOR_INQUIRE; "MQINQ");
//! - on a host with the MQ server installed, standard binding connects to a local queue
//!   manager ("Connecting to a queue manager using the MQCONNX call": MQCNO_STANDARD_BINDING
//!   is a server binding where the server library is installed).

use super::MODEL_QUEUE;
use super::calls::{
    ConnectSpec, Got, Hobj, Id, MqFailure, MqiConnection, MqiLibrary, QueueKind, Reason, RequestMd,
};
use mqi::constants;
use mqi::types::{MQGMO, MQOO, MQPMO};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One MQI call as the queue manager saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Connect(ConnectSpec),
    Open {
        queue: String,
        options: MQOO,
    },
    Put {
        queue: String,
        md: RequestMd,
        options: MQPMO,
        len: usize,
    },
    Put1 {
        queue: String,
        md: RequestMd,
        options: MQPMO,
        len: usize,
    },
    Get {
        queue: String,
        options: MQGMO,
        wait_ms: i32,
        correl_id: Option<Id>,
    },
    Commit,
    Backout,
    Inquire {
        queue: String,
    },
    Close {
        queue: String,
    },
    Disconnect,
}

/// How the queue manager's responder answers a request put to the request queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responder {
    /// One reply, CorrelId = request MsgId.
    Echo,
    /// No reply.
    Silent,
    /// Two replies to each request.
    Twice,
}

#[derive(Debug, Clone)]
struct Msg {
    msg_id: Id,
    correl_id: Id,
    len: usize,
    persistent: bool,
}

/// MQ's default MaxMsgLength of a client channel definition and of a server-connection
/// channel: 4 MB.
pub const DEFAULT_CHANNEL_MAXMSGL: usize = 4_194_304;

#[derive(Default)]
struct State {
    queues: HashMap<String, VecDeque<Msg>>,
    calls: Vec<Call>,
    next_id: u64,
    next_dynamic: u64,
    /// (verb, n): the n-th call of the verb from now fails with the reason.
    failures: Vec<(&'static str, usize, Reason)>,
    /// Queues the connecting user may not open.
    forbidden: HashSet<String>,
    /// Model queues and the kind of dynamic queue each makes.
    models: HashMap<String, QueueKind>,
    /// Alias queues and their base queues.
    aliases: HashMap<String, String>,
    /// The kind of each queue that is not predefined (dynamic queues).
    kinds: HashMap<String, QueueKind>,
    /// Replies the responder could not put (a persistent reply to a temporary dynamic queue).
    refused_replies: usize,
    /// The server-connection channel's MAXMSGL.
    channel_maxmsgl: usize,
    /// The host has the MQ server installed: standard binding connects locally.
    local_install: bool,
    /// MQOPEN of a model queue returns a blank ResolvedQName.
    blank_resolved: bool,
    /// Handles open to get, by queue (IPPROCS); the responder holds one on the request queue.
    open_input: HashMap<String, i32>,
}

/// The queue manager; clone it to keep a handle for the test's assertions.
#[derive(Clone)]
pub struct FakeQm {
    state: Arc<(Mutex<State>, Condvar)>,
    request_queue: String,
    responder: Responder,
}

impl FakeQm {
    /// A queue manager with the given local queues and a responder on `request_queue`.
    pub fn new(queues: &[&str], request_queue: &str, responder: Responder) -> FakeQm {
        let mut state = State {
            channel_maxmsgl: DEFAULT_CHANNEL_MAXMSGL,
            ..State::default()
        };
        // MQ's own default model queue: DEFTYPE(TEMPDYN).
        state
            .models
            .insert(MODEL_QUEUE.to_string(), QueueKind::TemporaryDynamic);
        for q in queues {
            state.queues.insert((*q).to_string(), VecDeque::new());
        }
        state.open_input.insert(request_queue.to_string(), 1);
        FakeQm {
            state: Arc::new((Mutex::new(state), Condvar::new())),
            request_queue: request_queue.to_string(),
            responder,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// `n` more handles open to get from `queue` (other flows' or strays').
    pub(crate) fn open_for_input(&self, queue: &str, n: i32) {
        *self.lock().open_input.entry(queue.to_string()).or_default() += n;
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Messages on a queue now.
    pub fn depth(&self, queue: &str) -> usize {
        self.lock().queues.get(queue).map_or(0, VecDeque::len)
    }

    /// Put `n` messages straight onto a queue (leftovers of an earlier run).
    pub(crate) fn preload(&self, queue: &str, n: usize) {
        let mut s = self.lock();
        for _ in 0..n {
            let id = new_id(&mut s);
            s.queues
                .entry(queue.to_string())
                .or_default()
                .push_back(Msg {
                    msg_id: id,
                    correl_id: id,
                    len: 10,
                    persistent: false,
                });
        }
    }

    /// The `nth` (1-based) next call of `verb` fails with `reason`.
    pub fn fail(&self, verb: &'static str, nth: usize, reason: Reason) {
        self.lock().failures.push((verb, nth, reason));
    }

    /// Opening `queue` fails with MQRC_NOT_AUTHORIZED.
    pub(crate) fn forbid(&self, queue: &str) {
        self.lock().forbidden.insert(queue.to_string());
    }

    /// A model queue making dynamic queues of `kind` (DEFTYPE(TEMPDYN) or (PERMDYN)).
    pub fn model(&self, name: &str, kind: QueueKind) {
        self.lock().models.insert(name.to_string(), kind);
    }

    /// An alias queue over `base`.
    pub(crate) fn alias(&self, name: &str, base: &str) {
        self.lock()
            .aliases
            .insert(name.to_string(), base.to_string());
    }

    /// The server-connection channel's MAXMSGL.
    pub(crate) fn channel_maxmsgl(&self, bytes: usize) {
        self.lock().channel_maxmsgl = bytes;
    }

    /// The host has an MQ server install (and no queue manager of the name asked for).
    pub(crate) fn local_install(&self) {
        self.lock().local_install = true;
    }

    /// MQOPEN of a model queue gives a blank resolved name.
    pub(crate) fn blank_resolved_names(&self) {
        self.lock().blank_resolved = true;
    }

    /// Replies the responder could not put.
    pub(crate) fn refused_replies(&self) -> usize {
        self.lock().refused_replies
    }
}

fn new_id(s: &mut State) -> Id {
    s.next_id += 1;
    let mut id = [0u8; 24];
    id[..4].copy_from_slice(b"AMQ ");
    id[16..].copy_from_slice(&s.next_id.to_be_bytes());
    id
}

/// Count down the cued failures of `verb`; the one that reaches zero fires.
fn cued(s: &mut State, verb: &'static str) -> Result<(), MqFailure> {
    let mut fired = None;
    s.failures.retain_mut(|(v, n, reason)| {
        if *v != verb || fired.is_some() {
            return true;
        }
        *n -= 1;
        if *n == 0 {
            fired = Some(*reason);
            return false;
        }
        true
    });
    match fired {
        Some(reason) => Err(MqFailure { verb, reason }),
        None => Ok(()),
    }
}

impl MqiLibrary for FakeQm {
    fn connect(&self, spec: &ConnectSpec) -> Result<Box<dyn MqiConnection>, MqFailure> {
        let mut s = self.lock();
        s.calls.push(Call::Connect(spec.clone()));
        cued(&mut s, "MQCONNX")?;
        let client = spec.channel.is_some() || spec.client_binding.is_some();
        if s.local_install && !client {
            // Standard binding on a server install: the local queue manager of that name,
            // which is not there.
            return Err(MqFailure {
                verb: "MQCONNX",
                reason: Reason::Q_MGR_NAME_ERROR,
            });
        }
        // The negotiated MaxMsgLength of a client connection.
        let max_msg = client.then(|| {
            let ours = spec
                .max_msg_length
                .map_or(DEFAULT_CHANNEL_MAXMSGL, |m| m.max(0) as usize);
            ours.min(s.channel_maxmsgl)
        });
        Ok(Box::new(FakeConnection {
            qm: self.clone(),
            objects: Vec::new(),
            uncommitted: Vec::new(),
            max_msg,
        }))
    }
}

/// An open queue: its resolved name, what it is, and whether it was opened to inquire.
#[derive(Clone)]
struct Object {
    queue: String,
    kind: QueueKind,
    inquire: bool,
    input: bool,
}

struct FakeConnection {
    qm: FakeQm,
    /// Open objects.
    objects: Vec<Option<Object>>,
    /// Puts under syncpoint, not visible until MQCMIT: (queue, message, reply-to).
    uncommitted: Vec<(String, Msg, String)>,
    /// A client connection's negotiated MaxMsgLength; None for bindings.
    max_msg: Option<usize>,
}

impl FakeConnection {
    fn object(&self, hobj: Hobj, verb: &'static str) -> Result<Object, MqFailure> {
        self.objects.get(hobj).cloned().flatten().ok_or(MqFailure {
            verb,
            reason: Reason::HOBJ_ERROR,
        })
    }

    /// MQINQ: the call recorded, a cued failure, the handle opened to inquire; then `answer`.
    fn inquire<T>(
        &mut self,
        hobj: Hobj,
        answer: impl FnOnce(&State, &Object) -> T,
    ) -> Result<T, MqFailure> {
        let object = self.object(hobj, "MQINQ")?;
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Inquire {
            queue: object.queue.clone(),
        });
        cued(&mut s, "MQINQ")?;
        if !object.inquire {
            return Err(MqFailure {
                verb: "MQINQ",
                reason: Reason::NOT_OPEN_FOR_INQUIRE,
            });
        }
        Ok(answer(&s, &object))
    }

    fn queue(&self, hobj: Hobj, verb: &'static str) -> Result<String, MqFailure> {
        self.object(hobj, verb).map(|o| o.queue)
    }

    /// Make a put visible, and answer it if it went to the request queue.
    fn deliver(&self, s: &mut State, queue: &str, msg: Msg, reply_to: &str) {
        let replies = if queue == self.qm.request_queue {
            match self.qm.responder {
                Responder::Echo => 1,
                Responder::Silent => 0,
                Responder::Twice => 2,
            }
        } else {
            0
        };
        let request_id = msg.msg_id;
        let persistent = msg.persistent;
        if replies > 0 && persistent && s.kinds.get(reply_to) == Some(&QueueKind::TemporaryDynamic)
        {
            // The responder's MQPUT of a reply with the request's persistence fails with
            // MQRC_PERSISTENT_NOT_ALLOWED; the request is consumed and no reply comes.
            s.refused_replies += replies;
            return;
        }
        if replies == 0 {
            s.queues
                .entry(queue.to_string())
                .or_default()
                .push_back(msg);
        } else {
            // The responder takes the request at once and answers it.
            for _ in 0..replies {
                let id = new_id(s);
                s.queues
                    .entry(reply_to.to_string())
                    .or_default()
                    .push_back(Msg {
                        msg_id: id,
                        correl_id: request_id,
                        len: 630,
                        persistent,
                    });
            }
        }
        self.qm.state.1.notify_all();
    }

    fn put_any(
        &mut self,
        verb: &'static str,
        queue: String,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure> {
        let qm = self.qm.clone();
        let mut s = qm.lock();
        let call = if verb == "MQPUT1" {
            Call::Put1 {
                queue: queue.clone(),
                md: md.clone(),
                options,
                len: body.len(),
            }
        } else {
            Call::Put {
                queue: queue.clone(),
                md: md.clone(),
                options,
                len: body.len(),
            }
        };
        s.calls.push(call);
        cued(&mut s, verb)?;
        if self.max_msg.is_some_and(|max| body.len() > max) {
            return Err(MqFailure {
                verb,
                reason: Reason::DATA_LENGTH_ERROR,
            });
        }
        let queue = s.aliases.get(&queue).cloned().unwrap_or(queue);
        if !s.queues.contains_key(&queue) {
            return Err(MqFailure {
                verb,
                reason: Reason::UNKNOWN_OBJECT_NAME,
            });
        }
        let id = new_id(&mut s);
        let msg = Msg {
            msg_id: id,
            correl_id: [0; 24],
            len: body.len(),
            persistent: md.persistence == constants::MQPER_PERSISTENT,
        };
        if options.contains(constants::MQPMO_SYNCPOINT) {
            self.uncommitted.push((queue, msg, md.reply_to_q.clone()));
        } else {
            self.deliver(&mut s, &queue, msg, &md.reply_to_q);
        }
        Ok(id)
    }
}

impl MqiConnection for FakeConnection {
    fn open(&mut self, queue: &str, options: MQOO) -> Result<(Hobj, String), MqFailure> {
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Open {
            queue: queue.to_string(),
            options,
        });
        cued(&mut s, "MQOPEN")?;
        if s.forbidden.contains(queue) {
            return Err(MqFailure {
                verb: "MQOPEN",
                reason: Reason::NOT_AUTHORIZED,
            });
        }
        let (resolved, kind) = if let Some(&kind) = s.models.get(queue) {
            s.next_dynamic += 1;
            let name = format!("AMQ.OEMPUTX.{:08}", s.next_dynamic);
            s.queues.insert(name.clone(), VecDeque::new());
            s.kinds.insert(name.clone(), kind);
            (name, kind)
        } else if let Some(base) = s.aliases.get(queue) {
            (base.clone(), QueueKind::Alias)
        } else if s.queues.contains_key(queue) {
            let kind = s.kinds.get(queue).copied().unwrap_or(QueueKind::Predefined);
            (queue.to_string(), kind)
        } else {
            return Err(MqFailure {
                verb: "MQOPEN",
                reason: Reason::UNKNOWN_OBJECT_NAME,
            });
        };
        let input = options.contains(constants::MQOO_INPUT_SHARED)
            || options.contains(constants::MQOO_INPUT_EXCLUSIVE)
            || options.contains(constants::MQOO_INPUT_AS_Q_DEF);
        if input {
            *s.open_input.entry(resolved.clone()).or_default() += 1;
        }
        self.objects.push(Some(Object {
            queue: resolved.clone(),
            kind,
            inquire: options.contains(constants::MQOO_INQUIRE),
            input,
        }));
        let given = if s.blank_resolved && kind.is_own() {
            String::new()
        } else {
            resolved
        };
        Ok((self.objects.len() - 1, given))
    }

    fn inquire_kind(&mut self, hobj: Hobj) -> Result<QueueKind, MqFailure> {
        self.inquire(hobj, |_, object| object.kind)
    }

    fn inquire_open_input_count(&mut self, hobj: Hobj) -> Result<i32, MqFailure> {
        self.inquire(hobj, |s, object| {
            s.open_input.get(&object.queue).copied().unwrap_or(0)
        })
    }

    fn put(
        &mut self,
        hobj: Hobj,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure> {
        let queue = self.queue(hobj, "MQPUT")?;
        self.put_any("MQPUT", queue, md, options, body)
    }

    fn put1(
        &mut self,
        queue: &str,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure> {
        self.put_any("MQPUT1", queue.to_string(), md, options, body)
    }

    fn get(
        &mut self,
        hobj: Hobj,
        options: MQGMO,
        wait_ms: i32,
        correl_id: Option<Id>,
        buffer: &mut [u8],
    ) -> Result<Option<Got>, MqFailure> {
        let queue = self.queue(hobj, "MQGET")?;
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Get {
            queue: queue.clone(),
            options,
            wait_ms,
            correl_id,
        });
        cued(&mut s, "MQGET")?;
        let deadline = Instant::now()
            + if options.contains(constants::MQGMO_WAIT) {
                Duration::from_millis(wait_ms.max(0) as u64)
            } else {
                Duration::ZERO
            };
        loop {
            let q = s.queues.entry(queue.clone()).or_default();
            let pos = q
                .iter()
                .position(|m| correl_id.is_none_or(|c| m.correl_id == c));
            if let Some(msg) = pos.and_then(|p| q.remove(p)) {
                return Ok(Some(Got {
                    msg_id: msg.msg_id,
                    correl_id: msg.correl_id,
                    len: msg.len.min(buffer.len()),
                }));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            s = match qm.state.1.wait_timeout(s, deadline - now) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    fn commit(&mut self) -> Result<(), MqFailure> {
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Commit);
        if let Err(f) = cued(&mut s, "MQCMIT") {
            if f.reason == Reason::BACKED_OUT {
                // The queue manager backed the unit of work out instead.
                self.uncommitted.clear();
            }
            return Err(f);
        }
        for (queue, msg, reply_to) in std::mem::take(&mut self.uncommitted) {
            self.deliver(&mut s, &queue, msg, &reply_to);
        }
        Ok(())
    }

    fn backout(&mut self) -> Result<(), MqFailure> {
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Backout);
        cued(&mut s, "MQBACK")?;
        self.uncommitted.clear();
        Ok(())
    }

    fn close(&mut self, hobj: Hobj) -> Result<(), MqFailure> {
        let queue = self.queue(hobj, "MQCLOSE")?;
        let input = self.objects[hobj].take().is_some_and(|o| o.input);
        let qm = self.qm.clone();
        let mut s = qm.lock();
        if input && let Some(n) = s.open_input.get_mut(&queue) {
            *n -= 1;
        }
        s.calls.push(Call::Close { queue });
        cued(&mut s, "MQCLOSE")
    }

    fn disconnect(mut self: Box<Self>) -> Result<(), MqFailure> {
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Disconnect);
        // MQDISC closes what is still open.
        for o in self.objects.iter().flatten().filter(|o| o.input) {
            if let Some(n) = s.open_input.get_mut(&o.queue) {
                *n -= 1;
            }
        }
        cued(&mut s, "MQDISC")?;
        // A normal MQDISC commits what the unit of work holds.
        for (queue, msg, reply_to) in std::mem::take(&mut self.uncommitted) {
            self.deliver(&mut s, &queue, msg, &reply_to);
        }
        Ok(())
    }
}
