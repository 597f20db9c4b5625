//! An in-memory queue manager behind the MQI seam, for tests: queues, model queues, MsgIds,
//! syncpoint, waits, a responder that answers requests the MQ way (reply CorrelId =
//! request MsgId), failures on cue, and a log of every call with its options.

use super::MODEL_QUEUE;
use super::calls::{
    ConnectSpec, Got, Hobj, Id, MqFailure, MqiConnection, MqiLibrary, Reason, RequestMd,
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
}

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
        let mut state = State::default();
        for q in queues {
            state.queues.insert((*q).to_string(), VecDeque::new());
        }
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

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Messages on a queue now.
    pub fn depth(&self, queue: &str) -> usize {
        self.lock().queues.get(queue).map_or(0, VecDeque::len)
    }

    /// Put `n` messages straight onto a queue (leftovers of an earlier run).
    pub fn preload(&self, queue: &str, n: usize) {
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
                });
        }
    }

    /// The `nth` (1-based) next call of `verb` fails with `reason`.
    pub fn fail(&self, verb: &'static str, nth: usize, reason: Reason) {
        self.lock().failures.push((verb, nth, reason));
    }

    /// Opening `queue` fails with MQRC_NOT_AUTHORIZED.
    pub fn forbid(&self, queue: &str) {
        self.lock().forbidden.insert(queue.to_string());
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
        Ok(Box::new(FakeConnection {
            qm: self.clone(),
            objects: Vec::new(),
            uncommitted: Vec::new(),
        }))
    }
}

struct FakeConnection {
    qm: FakeQm,
    /// Open objects: queue names.
    objects: Vec<Option<String>>,
    /// Puts under syncpoint, not visible until MQCMIT: (queue, message, reply-to).
    uncommitted: Vec<(String, Msg, String)>,
}

impl FakeConnection {
    fn queue(&self, hobj: Hobj, verb: &'static str) -> Result<String, MqFailure> {
        self.objects.get(hobj).cloned().flatten().ok_or(MqFailure {
            verb,
            reason: Reason::HOBJ_ERROR,
        })
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
        let resolved = if queue == MODEL_QUEUE {
            s.next_dynamic += 1;
            let name = format!("AMQ.OEMPUTX.{:08}", s.next_dynamic);
            s.queues.insert(name.clone(), VecDeque::new());
            name
        } else if s.queues.contains_key(queue) {
            queue.to_string()
        } else {
            return Err(MqFailure {
                verb: "MQOPEN",
                reason: Reason::UNKNOWN_OBJECT_NAME,
            });
        };
        self.objects.push(Some(resolved.clone()));
        Ok((self.objects.len() - 1, resolved))
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
        cued(&mut s, "MQCMIT")?;
        for (queue, msg, reply_to) in std::mem::take(&mut self.uncommitted) {
            self.deliver(&mut s, &queue, msg, &reply_to);
        }
        Ok(())
    }

    fn close(&mut self, hobj: Hobj) -> Result<(), MqFailure> {
        let queue = self.queue(hobj, "MQCLOSE")?;
        self.objects[hobj] = None;
        let qm = self.qm.clone();
        let mut s = qm.lock();
        s.calls.push(Call::Close { queue });
        cued(&mut s, "MQCLOSE")
    }

    fn disconnect(self: Box<Self>) -> Result<(), MqFailure> {
        let mut s = self.qm.lock();
        s.calls.push(Call::Disconnect);
        cued(&mut s, "MQDISC")
    }
}
