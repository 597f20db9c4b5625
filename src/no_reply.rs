//! The hint of a run that waits on nobody. A run whose requests go where no flow listens
//! (an MQTT flow on `MQSI.IN` and a profile on `MQSI/IN`) waited --wait for each request, 60 s
//! by default, and stopped after five timeouts in a row: 181 s for 0 transactions, with
//! nothing said until the end. Once the first request has gone unanswered for
//! [`HINT_AFTER`], with no reply of any kind since, stderr gets one line naming the queue
//! (topic, subject), the broker (its password masked), the queue's consumers where the
//! broker counts them, and the local processes connected to the broker.

use crate::config::RunConfig;
use crate::driver::Controls;
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the first request may go unanswered before the hint.
pub const HINT_AFTER: Duration = Duration::from_secs(5);
/// How often the watcher looks: the hint comes this much after [`HINT_AFTER`] at most.
const TICK: Duration = Duration::from_millis(100);
/// Connected processes named in the hint; the rest are counted.
const NAMED: usize = 6;

/// Run `run` (the driver) with a watcher beside it that prints the hint once, if it is
/// due; the watcher ends with `run`.
pub(crate) fn watching<T>(cfg: &RunConfig, controls: &Controls, run: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = std::thread::Builder::new()
            .name("oemputx-no-reply".into())
            .spawn_scoped(s, || watch(cfg, controls, &done));
        let out = run();
        done.store(true, Ordering::Relaxed);
        // A watcher that could not start costs the hint, nothing else.
        if let Ok(w) = watcher {
            let _ = w.join();
        }
        out
    })
}

fn watch(cfg: &RunConfig, controls: &Controls, done: &AtomicBool) {
    let mut first_put: Option<Instant> = None;
    loop {
        if done.load(Ordering::Relaxed) || controls.replied_any() {
            return;
        }
        if first_put.is_none() && controls.put_any() {
            first_put = Some(Instant::now());
        }
        if first_put.is_some_and(|t| t.elapsed() >= HINT_AFTER) {
            break;
        }
        std::thread::sleep(TICK);
    }
    let line = hint(cfg);
    // Asking the broker took a moment: a reply that came meanwhile makes the hint wrong.
    if !done.load(Ordering::Relaxed) && !controls.replied_any() {
        crate::say!("{line}");
    }
}

/// The hint's line, from what the broker and this host tell now.
fn hint(cfg: &RunConfig) -> String {
    let kind = cfg.endpoint.kind();
    let q = &cfg.request_queue;
    // A queue oemputx made for flows it started (compare, sweep, the gate) is not asked
    // about: those flows were counted consuming before the run began.
    let consumers = if !cfg.check_serving {
        "the flows this command started".to_string()
    } else {
        match kind.counted_consumers(q) {
            Some(n) => format!("{n} by the broker's count"),
            None => format!("not counted by the broker ({})", kind.transport()),
        }
    };
    let connected = match kind.broker_address() {
        Some((host, port)) => format!(
            "; connected to {host}:{port} from this host: {}",
            connected(&host, port)
        ),
        None => String::new(),
    };
    format!(
        "Warning: no reply yet after {} s: waiting on replies to requests put to {q} on {}; consumers of {q}: {consumers}{connected}. Is a flow consuming {q} on this broker (sample-flow's --input-queue, the profile's request_queue)? Each request waits up to --wait {} s",
        HINT_AFTER.as_secs(),
        kind.redacted(),
        cfg.wait.as_secs_f64()
    )
}

/// The local processes other than oemputx holding a connection to the broker.
fn connected(host: &str, port: u16) -> String {
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    let conns = crate::accounting::sockets::to_broker(&addrs);
    let me = std::process::id() as i32;
    let pids: Vec<i32> = conns.by_pid.keys().copied().filter(|p| *p != me).collect();
    let unreadable: usize = conns.unreadable.values().sum();
    let mut named: Vec<String> = pids
        .iter()
        .take(NAMED)
        .map(|&p| format!("{p} {}", crate::serving::describe(p).0))
        .collect();
    if pids.len() > NAMED {
        named.push(format!("{} more", pids.len() - NAMED));
    }
    if unreadable > 0 {
        named.push(format!(
            "{unreadable} connection(s) of other users' processes"
        ));
    }
    if named.is_empty() {
        "no process".into()
    } else {
        named.join(", ")
    }
}
