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
//! is the tasks' progress counters. Nothing is added to the tasks' loop: a thread reads the
//! counters every [`TICK`].

use super::ProgressCounters;
use crate::window::Window;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Samples the backlog of each measured window of a run paced at `rate` for `length`.
pub struct Backlog {
    rate: f64,
    length: Duration,
    counters: ProgressCounters,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<(f64, u64)>>>,
    /// Each round's backlog, in order.
    pub rounds: Vec<RoundBacklog>,
}

impl Backlog {
    /// A sampler of the rounds of a run paced at `rate` requests a second in all, each
    /// round's schedule `length` long, reading `counters`.
    pub fn new(rate: f64, length: Duration, counters: ProgressCounters) -> Self {
        Backlog {
            rate,
            length,
            counters,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            rounds: Vec::new(),
        }
    }
}

impl Window for Backlog {
    fn start(&mut self) {
        self.stop.store(false, Ordering::Relaxed);
        let (counters, stop, length) = (self.counters.clone(), self.stop.clone(), self.length);
        self.thread = std::thread::Builder::new()
            .name("oemputx-backlog".into())
            .spawn(move || sample(&counters, &stop, length))
            .ok();
    }

    fn end(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take()
            && let Ok(samples) = t.join()
        {
            self.rounds
                .push(of_samples(&samples, self.rate, self.length.as_secs_f64()));
        }
    }
}

/// (seconds since the window opened, answered since then) every tick until the schedule's
/// end or the stop.
fn sample(counters: &ProgressCounters, stop: &AtomicBool, length: Duration) -> Vec<(f64, u64)> {
    let t0 = Instant::now();
    let base = counters.total();
    let mut out =
        Vec::with_capacity((length.as_millis() / TICK.as_millis()).min(100_000) as usize + 1);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let t = t0.elapsed();
        if t >= length {
            break;
        }
        out.push((t.as_secs_f64(), counters.total().saturating_sub(base)));
    }
    out
}

/// The backlog of one round from its samples: due(t) = ⌊rate·t⌋ + 1, less the answered.
pub fn of_samples(samples: &[(f64, u64)], rate: f64, length_s: f64) -> RoundBacklog {
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
