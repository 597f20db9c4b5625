//! The backlog of a paced run, round by round: requests due by the schedule and not yet
//! answered, sampled while each measured window is open.
//!
//! Under `--rate` the driver is open-loop in intent and closed-loop in fact: each task has
//! its requests in flight, and a task that falls behind sends its next request as soon as
//! the previous reply comes, its latency counted from the intended send time. Requests sent
//! and not answered can therefore never exceed the tasks' in-flight limit, however far the
//! flow falls behind; the requests *due* and not answered can. That is the backlog an
//! open-loop client would see queue up, and it is what this window samples: due(t) is
//! ⌊rate·t⌋ + 1 (the tasks' schedules interleave evenly, one request every 1/rate), answered
//! is the tasks' progress counters. Nothing is added to the tasks' loop: one thread for the
//! run reads the counters every [`TICK`] while a window is open (a ladder's steps only: a
//! plain paced run has no use for it), and its CPU is left out of the driver's.

use super::ProgressCounters;
use crate::window::Window;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the backlog is sampled.
const TICK: Duration = Duration::from_millis(25);
/// The first share of a round left out of the trend: the schedule's start, before any
/// reply can have come back.
const SKIP_SHARE: f64 = 0.2;

/// One round's backlog.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RoundBacklog {
    /// The least-squares slope of the backlog over the round (its first fifth left out):
    /// requests per second by which it grew; about 0 when the flow keeps up.
    pub growth_per_s: f64,
    /// The backlog at the round's last sample before its schedule ended.
    pub end: f64,
    /// The largest backlog sampled.
    pub max: f64,
    pub samples: usize,
}

/// What the sampling thread and the windows share.
#[derive(Default)]
struct Shared {
    /// The open window: when it opened and the answered count then.
    window: Mutex<Option<(Instant, u64)>>,
    samples: Mutex<Vec<(f64, u64)>>,
    quit: AtomicBool,
}

/// Samples the backlog of each measured window of a run paced at `rate` for `length`, on
/// one thread for the whole run: its id is known before the first window, so that the
/// driver's CPU leaves it out as it does the profile's.
pub struct Backlog {
    rate: f64,
    length: Duration,
    counters: ProgressCounters,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    tid: Option<i32>,
    /// Each round's backlog, in order.
    pub rounds: Vec<RoundBacklog>,
}

impl Backlog {
    /// A sampler of the rounds of a run paced at `rate` requests a second in all, each
    /// round's schedule `length` long, reading `counters`; its thread starts now.
    pub fn new(rate: f64, length: Duration, counters: ProgressCounters) -> Self {
        let shared = Arc::new(Shared::default());
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let thread = {
            let (shared, counters) = (shared.clone(), counters.clone());
            std::thread::Builder::new()
                .name("oemputx-backlog".into())
                .spawn(move || {
                    let _ = tid_tx.send(nix::unistd::gettid().as_raw());
                    sample(&shared, &counters, length)
                })
                .ok()
        };
        let tid = thread
            .as_ref()
            .and_then(|_| tid_rx.recv_timeout(Duration::from_secs(5)).ok());
        Backlog {
            rate,
            length,
            counters,
            shared,
            thread,
            tid,
            rounds: Vec::new(),
        }
    }

    /// The sampling thread's id: its CPU is not the driver's.
    pub(crate) fn own_threads(&self) -> Vec<i32> {
        self.tid.into_iter().collect()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Window for Backlog {
    fn start(&mut self) {
        lock(&self.shared.samples).clear();
        *lock(&self.shared.window) = Some((Instant::now(), self.counters.total()));
    }

    fn end(&mut self) {
        *lock(&self.shared.window) = None;
        let samples = std::mem::take(&mut *lock(&self.shared.samples));
        self.rounds
            .push(of_samples(&samples, self.rate, self.length.as_secs_f64()));
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Every tick while a window is open and its schedule runs: (seconds since the window
/// opened, answered since then).
fn sample(shared: &Shared, counters: &ProgressCounters, length: Duration) {
    while !shared.quit.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let Some((t0, base)) = *lock(&shared.window) else {
            continue;
        };
        let t = t0.elapsed();
        if t < length {
            let answered = counters.total().saturating_sub(base);
            lock(&shared.samples).push((t.as_secs_f64(), answered));
        }
    }
}

/// The backlog of one round from its samples: due(t) = ⌊rate·t⌋ + 1, less the answered.
pub(crate) fn of_samples(samples: &[(f64, u64)], rate: f64, length_s: f64) -> RoundBacklog {
    let points: Vec<(f64, f64)> = samples
        .iter()
        .map(|&(t, answered)| (t, (rate * t).floor() + 1.0 - answered as f64))
        .collect();
    let trend: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(t, _)| *t >= SKIP_SHARE * length_s)
        .collect();
    RoundBacklog {
        growth_per_s: slope(&trend).unwrap_or(0.0),
        end: points.last().map_or(0.0, |p| p.1),
        max: points.iter().map(|p| p.1).fold(0.0, f64::max),
        samples: points.len(),
    }
}

/// The least-squares slope of y on x; None with fewer than two distinct x.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_that_keeps_up_has_no_growth_and_one_that_does_not_grows_by_the_shortfall() {
        // 1,000 requests/s due over 2 s, sampled every 25 ms.
        let ticks = (1..80).map(|i| i as f64 * 0.025);
        // Keeping up: every request answered 3 ms after it was due.
        let kept: Vec<(f64, u64)> = ticks
            .clone()
            .map(|t| (t, ((t - 0.003).max(0.0) * 1000.0).floor() as u64))
            .collect();
        let b = of_samples(&kept, 1000.0, 2.0);
        assert!(b.growth_per_s.abs() < 1.0, "{b:?}");
        assert!(b.end <= 5.0 && b.max <= 5.0, "{b:?}");
        // Answering 800 a second: the backlog grows by 200 a second.
        let behind: Vec<(f64, u64)> = ticks.map(|t| (t, (t * 800.0) as u64)).collect();
        let b = of_samples(&behind, 1000.0, 2.0);
        assert!((b.growth_per_s - 200.0).abs() < 2.0, "{b:?}");
        assert!(b.end > 350.0, "{b:?}");
        assert_eq!(slope(&[(1.0, 2.0)]), None);
    }
}
