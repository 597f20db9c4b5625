//! The embedded queue manager: in-process queues and a built-in responder flow.
//!
//! It makes `oemputx --count 1000` work on any machine with nothing installed, and it is
//! the deterministic double for driver tests. Its responder copies each request's body to a
//! reply on the request's reply queue with the same correlation id, like the echo flow.
//! Everything is in memory: `--persistent` only marks messages.
//!
//! Named reply queues shared by several tasks are read by correlation id, the way MQGET
//! with a CorrelId selects; temporary ones are read first in, first out.
//!
//! The responder and every task's thread run on one CPU (the one the run started on).
//! A request's hand-off is a condition variable: on one CPU it is a context switch; across
//! two it is a wake-up of the other CPU, which costs anything from 1 to 50 µs depending on
//! whether that CPU was idle and how deep it slept. Unpinned, ten quick starts in a row
//! ranged from 21,000 to 510,000 round trips a second with the scheduler deciding;
//! pinned, they spread by 9 % (README, `lab/quickstart-spread.sh`).

use super::correl;
use super::endpoint::{Endpoint, EndpointKind, Registered};
use super::{
    Prepared, QueueSetup, Reply, ReplyQueue, Session, TaskSession, Transport, TransportError,
};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// IBM MQ's largest message; the embedded queue manager accepts the same.
pub const MAX_MESSAGE: usize = 100 * 1024 * 1024;
/// How often the responder looks at the stop flag while its queue is empty.
const RESPONDER_POLL: Duration = Duration::from_millis(50);

#[derive(Clone)]
struct Msg {
    body: Arc<[u8]>,
    correl_id: String,
    /// The reply queue itself rather than its name: the responder puts the reply without a
    /// lookup by name (which hashed and allocated the name once per message).
    reply_to: Option<Arc<Queue>>,
}

/// One queue: a FIFO with a condition variable for waiting getters.
#[derive(Default)]
struct Queue {
    items: Mutex<VecDeque<Msg>>,
    ready: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a queue lock leaves plain data behind; keep going with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Queue {
    fn put(&self, msg: Msg) {
        lock(&self.items).push_back(msg);
        self.ready.notify_all();
    }

    /// Wait up to `wait` for the first message that `select` accepts.
    fn get(&self, wait: Duration, select: impl Fn(&Msg) -> bool) -> Option<Msg> {
        let mut items = lock(&self.items);
        // A message already there needs no clock: read it only when about to wait.
        if let Some(i) = items.iter().position(&select) {
            return items.remove(i);
        }
        let deadline = Instant::now() + wait;
        loop {
            if let Some(i) = items.iter().position(&select) {
                return items.remove(i);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            items = self
                .ready
                .wait_timeout(items, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    fn clear(&self) -> u64 {
        let mut items = lock(&self.items);
        let n = items.len() as u64;
        items.clear();
        n
    }
}

/// The queue manager: named queues, shared by every session of the run.
#[derive(Default)]
struct QueueManager {
    queues: Mutex<HashMap<String, Arc<Queue>>>,
}

impl QueueManager {
    fn queue(&self, name: &str) -> Arc<Queue> {
        lock(&self.queues)
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    fn delete(&self, name: &str) {
        lock(&self.queues).remove(name);
    }
}

/// The embedded transport: a queue manager plus its responder thread.
pub struct Embedded {
    qmgr: Arc<QueueManager>,
    setup: QueueSetup,
    stop: Arc<AtomicBool>,
    responder: Mutex<Option<JoinHandle<()>>>,
    responder_tid: Arc<Mutex<Option<i32>>>,
    next_temp: AtomicU64,
    /// The CPU the responder and the tasks share, when pinning them was allowed.
    cpu: Option<usize>,
}

/// The CPU this thread runs on, if the process may pin threads to it.
fn current_cpu() -> Option<usize> {
    let cpu = nix::sched::sched_getcpu().ok()?;
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    allowed.is_set(cpu).ok()?.then_some(cpu)
}

/// Pin the calling thread to `cpu`. A refusal (a cgroup's cpuset changed meanwhile, a
/// seccomp profile) leaves the thread where the scheduler puts it: slower hand-offs, never
/// a failed run.
fn pin_to(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    let mut set = nix::sched::CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}

impl Embedded {
    /// Create the queue manager and start its responder on the request queue.
    pub fn start(setup: QueueSetup) -> Self {
        let qmgr = Arc::new(QueueManager::default());
        let stop = Arc::new(AtomicBool::new(false));
        let responder_tid = Arc::new(Mutex::new(None));
        let input = qmgr.queue(&setup.request_queue);
        let cpu = current_cpu();
        let handle = {
            let (stop, tid) = (stop.clone(), responder_tid.clone());
            std::thread::Builder::new()
                .name("oemputx-flow".into())
                .spawn(move || {
                    pin_to(cpu);
                    *lock(&tid) = Some(crate::accounting::clock::current_tid());
                    respond(&input, &stop);
                })
                .ok()
        };
        // Wait until the responder has said who it is, so own_threads() is complete.
        if handle.is_some() {
            while lock(&responder_tid).is_none() {
                std::thread::yield_now();
            }
        }
        Embedded {
            qmgr,
            setup,
            stop,
            responder: Mutex::new(handle),
            responder_tid,
            next_temp: AtomicU64::new(0),
            cpu,
        }
    }
}

/// The built-in flow: copy each request to a reply with the same correlation id. Only the
/// driver puts here, and it always names a reply queue.
fn respond(input: &Queue, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Some(req) = input.get(RESPONDER_POLL, |_| true) else {
            continue;
        };
        if let Some(q) = &req.reply_to {
            q.put(Msg {
                body: req.body,
                correl_id: req.correl_id,
                reply_to: None,
            });
        }
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = lock(&self.responder).take() {
            let _ = h.join();
        }
    }
}

/// The transport's name, as reports record it.
pub const NAME: &str = "embedded";

/// The CPUs the embedded flow can use: its responder is one thread, pinned with the tasks
/// to one CPU, so more CPUs on the host would not serve it faster (capacity counts this).
pub const FLOW_CPUS: usize = 1;

/// `embedded:`: the in-process queue manager with its built-in responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedEndpoint;

/// How the registry knows this transport.
pub const REGISTERED: Registered = Registered {
    schemes: &["embedded"],
    example: "embedded:",
    parse: |_| Ok(endpoint()),
    node_lists: false,
    bare_name: None,
};

/// The embedded queue manager's endpoint (it takes no settings).
pub fn endpoint() -> Endpoint {
    Endpoint::new(EmbeddedEndpoint)
}

impl EndpointKind for EmbeddedEndpoint {
    fn transport(&self) -> &'static str {
        NAME
    }
    fn redacted(&self) -> String {
        "embedded: (in-process queue manager)".into()
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(Embedded::start(setup)))
    }
    /// The embedded queue manager's flow runs as a thread of oemputx itself.
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["EMBEDDED=thread:^oemputx-flow$"]
    }
}

impl Transport for Embedded {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        let cleared = match &self.setup.reply_queue {
            ReplyQueue::Named(q) if self.setup.clear_reply_queue => self.qmgr.queue(q).clear(),
            _ => 0,
        };
        Ok(Prepared {
            cleared,
            ..Prepared::default()
        })
    }

    /// Called on the task's own thread: pins it beside the responder.
    fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
        pin_to(self.cpu);
        let (reply_name, temporary) = match &self.setup.reply_queue {
            ReplyQueue::Named(q) => (q.clone(), false),
            // Direct and per-request were refused before the run (EndpointKind::refuse).
            ReplyQueue::Temporary | ReplyQueue::Direct | ReplyQueue::PerRequest => {
                let n = self.next_temp.fetch_add(1, Ordering::Relaxed);
                (format!("AMQ.OEMPUTX.TEMP.{task}.{n}"), true)
            }
        };
        Ok(TaskSession::Blocking(Box::new(EmbeddedSession {
            qmgr: self.qmgr.clone(),
            request: self.qmgr.queue(&self.setup.request_queue),
            reply: self.qmgr.queue(&reply_name),
            reply_name,
            temporary,
            // A shared queue is read selectively by task; a temporary one holds only ours.
            select_task: (!temporary && self.setup.tasks > 1).then_some(task),
            syncpoint: self.setup.syncpoint,
            uncommitted: Vec::new(),
        })))
    }

    fn max_message_size(&self) -> usize {
        MAX_MESSAGE
    }

    fn own_threads(&self) -> Vec<i32> {
        lock(&self.responder_tid).iter().copied().collect()
    }
}

struct EmbeddedSession {
    qmgr: Arc<QueueManager>,
    request: Arc<Queue>,
    reply: Arc<Queue>,
    reply_name: String,
    temporary: bool,
    select_task: Option<usize>,
    syncpoint: bool,
    uncommitted: Vec<Msg>,
}

impl Session for EmbeddedSession {
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        let msg = Msg {
            body: Arc::from(body),
            correl_id: correl_id.to_string(),
            reply_to: Some(self.reply.clone()),
        };
        if self.syncpoint {
            self.uncommitted.push(msg);
        } else {
            self.request.put(msg);
        }
        Ok(())
    }

    fn get(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        let msg = match self.select_task {
            // Replies that are not ours (or not parseable) stay for the task they belong to,
            // except unparseable ones, which task 0 takes so that they are counted once.
            Some(task) => self.reply.get(wait, |m| match correl::parse(&m.correl_id) {
                Some(c) => c.task == task,
                None => task == 0,
            }),
            None => self.reply.get(wait, |_| true),
        };
        Ok(msg.map(|m| Reply {
            correl_id: Some(m.correl_id),
            len: m.body.len(),
        }))
    }

    fn commit(&mut self) -> Result<(), TransportError> {
        for msg in self.uncommitted.drain(..) {
            self.request.put(msg);
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<(), TransportError> {
        if self.temporary {
            self.qmgr.delete(&self.reply_name);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sched::sched_getaffinity;
    use nix::unistd::Pid;

    fn cpus_of(tid: i32) -> Vec<usize> {
        let set = sched_getaffinity(Pid::from_raw(tid)).expect("affinity of a live thread");
        (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect()
    }

    #[test]
    fn the_responder_and_each_task_share_one_cpu() {
        let t = Embedded::start(QueueSetup::for_queue("Q"));
        let Some(cpu) = t.cpu else {
            // Pinning is refused here (a cpuset that changes under us): nothing to check.
            return;
        };
        let responder = t.own_threads()[0];
        assert_eq!(cpus_of(responder), vec![cpu]);
        let task_cpus = std::thread::scope(|s| {
            s.spawn(|| {
                let _session = t.session(0).expect("a session");
                cpus_of(crate::accounting::clock::current_tid())
            })
            .join()
            .expect("the task thread")
        });
        assert_eq!(task_cpus, vec![cpu]);
    }
}
