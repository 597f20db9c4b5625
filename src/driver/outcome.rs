//! What the driver hands back: the request and reply counts that must balance, how the run
//! ended, and the round trips of each measured window.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// Round trips are recorded in nanoseconds, from 1 ns to an hour, to 3 significant digits.
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// The request and reply counts of a run: nothing lost, nothing hidden.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Integrity {
    /// Requests put in the measured window.
    pub sent: u64,
    /// Replies received in the window, of every kind below.
    pub received: u64,
    /// Replies paired with an outstanding request.
    pub matched: u64,
    /// Replies that belong to no request of this run (stray messages).
    pub unmatched: u64,
    /// Requests whose reply did not come within --wait.
    pub timed_out: u64,
    /// Replies to a request that had already been answered.
    pub duplicates: u64,
    /// Replies to a request that had already timed out.
    pub late: u64,
    /// Requests still in flight when the run was interrupted.
    pub abandoned: u64,
}

impl Integrity {
    pub(super) fn add(&mut self, o: &Integrity) {
        self.sent += o.sent;
        self.received += o.received;
        self.matched += o.matched;
        self.unmatched += o.unmatched;
        self.timed_out += o.timed_out;
        self.duplicates += o.duplicates;
        self.late += o.late;
        self.abandoned += o.abandoned;
    }

    /// Whether every request sent is accounted for.
    pub fn balanced(&self) -> bool {
        self.sent == self.matched + self.timed_out + self.abandoned
            && self.received == self.matched + self.unmatched + self.duplicates + self.late
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every request was sent and answered.
    Completed,
    /// Some replies did not come within --wait.
    TimedOut,
    /// Stopped early after --max-timeouts timeouts (without it, after TIMEOUTS_IN_A_ROW in a
    /// row with no reply between them).
    StoppedAfterTimeouts,
    /// Stopped by Ctrl-C.
    Interrupted,
    /// A task lost its connection; the figures cover what happened before.
    Failed,
}

impl Status {
    /// The status in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::TimedOut => "replies timed out",
            Status::StoppedAfterTimeouts => "stopped after timeouts in a row",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }
}

/// A task's connection broke in the measured window and the task reconnected (or tried to):
/// how long no reply came, and what became of the requests in flight at the break. Each of
/// those is counted once: `lost` (no reply within --wait after the reconnect, or by the end
/// of the window: also in the integrity's `timed_out`), `late` (its reply came after that:
/// also in `late`), or answered (in `matched`); `duplicated` counts second replies that came
/// after the break (also in `duplicates`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Interruption {
    pub task: usize,
    /// The last reply before the break (the break itself when the window had none yet).
    pub start_utc: String,
    /// The first reply after it; `None` when none came before the window closed.
    pub end_utc: Option<String>,
    /// From `start_utc` to `end_utc` (to the window's end when no reply came).
    pub outage_ms: f64,
    pub lost: u64,
    pub late: u64,
    pub duplicated: u64,
    /// The node the broken connection went to, and the one the task reconnected to, where
    /// the client names them (`host:port`).
    pub from: Option<String>,
    pub to: Option<String>,
    /// What broke, as the client said it.
    pub why: String,
    /// Whether the task connected again within --reconnect-for.
    pub reconnected: bool,
}

/// The run's broken connections in total: how many, the longest outage (the tasks' outages
/// overlap in time, so they are not summed), and the requests of all of them.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct InterruptionTotals {
    pub interruptions: usize,
    pub longest_outage_ms: f64,
    pub lost: u64,
    pub late: u64,
    pub duplicated: u64,
    /// Breaks after which the task found no node within --reconnect-for.
    pub not_reconnected: usize,
}

impl InterruptionTotals {
    /// The totals of `breaks`; None when there were none.
    pub fn of(breaks: &[Interruption]) -> Option<InterruptionTotals> {
        let sum = |f: fn(&Interruption) -> u64| -> u64 { breaks.iter().map(f).sum() };
        (!breaks.is_empty()).then(|| InterruptionTotals {
            interruptions: breaks.len(),
            longest_outage_ms: breaks.iter().map(|b| b.outage_ms).fold(0.0, f64::max),
            lost: sum(|b| b.lost),
            late: sum(|b| b.late),
            duplicated: sum(|b| b.duplicated),
            not_reconnected: breaks.iter().filter(|b| !b.reconnected).count(),
        })
    }
}

/// One task's figures.
#[derive(Debug, Clone)]
pub struct TaskStats {
    pub integrity: Integrity,
    /// Round trips in nanoseconds.
    pub round_trip_ns: Histogram<u64>,
    /// Each break of the task's connection in the window, in order.
    pub interruptions: Vec<Interruption>,
}

impl TaskStats {
    pub(super) fn new() -> Self {
        // 3 significant digits over 1 ns..1 h is a fixed ~30 KiB whatever the run length.
        let round_trip_ns = Histogram::new_with_bounds(1, HIST_MAX_NS, 3)
            .expect("constant histogram bounds are valid");
        TaskStats {
            integrity: Integrity::default(),
            round_trip_ns,
            interruptions: Vec::new(),
        }
    }

    pub(super) fn record(&mut self, rt: Duration) {
        let ns = (rt.as_nanos() as u64).clamp(1, HIST_MAX_NS);
        // Cannot fail within the bounds clamped to above.
        let _ = self.round_trip_ns.record(ns);
    }
}

/// The driver's result: timings, counts and latency of the measured window.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    /// Wall-clock time the window opened and closed.
    pub start: chrono::DateTime<chrono::Utc>,
    pub end: chrono::DateTime<chrono::Utc>,
    pub elapsed: Duration,
    /// Messages deleted from the reply queue before the run.
    pub cleared: u64,
    /// Where persistent requests were stored, when the transport said (NATS's stream).
    pub store: Option<String>,
    /// What the broker said of itself, when the transport asked (Kafka).
    pub broker: Option<String>,
    pub integrity: Integrity,
    /// Round trips of all tasks, merged, in nanoseconds.
    pub round_trip_ns: Histogram<u64>,
    /// Matched replies per task.
    pub per_task_matched: Vec<u64>,
    /// Every break of a task's connection in the measured windows, in order of time.
    pub interruptions: Vec<Interruption>,
    /// The first transport error, when a task failed mid-run.
    pub error: Option<String>,
    /// Each measured window (one unless --rounds), in order.
    pub rounds: Vec<Round>,
    /// What --probe found and decided.
    pub probed: Option<Probe>,
    /// With --start-at: how late the run was ready for the start (seconds; 0 when it
    /// waited for it).
    pub late_for_start_s: Option<f64>,
}

/// The result of --probe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Probe {
    /// The rate of the unmeasured probe, all tasks.
    pub rate_tps: f64,
    /// Messages per round it chose (never fewer than --count).
    pub count_per_round: u64,
    /// The round length it aimed at, seconds.
    pub target_s: f64,
}

/// One measured window of a run with --rounds.
#[derive(Debug, Clone)]
pub struct Round {
    pub elapsed: Duration,
    pub integrity: Integrity,
    /// Round trips in nanoseconds.
    pub round_trip_ns: Histogram<u64>,
}
