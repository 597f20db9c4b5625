//! The put/get loop: OEMPUTX's job, written once for every transport.
//!
//! Each task runs on its own thread with its own [`Session`]. Tasks connect and warm up,
//! then wait at a gate; the measured window opens for all of them at once and closes when
//! the last task has its last reply, so the window holds nothing but the measured traffic.
//! The driver knows nothing of CPU: it calls a [`Window`] at the two instants, and whoever
//! measures (the driver's own CPU, the process groups) does it there.
//!
//! The loop is written once, as async code over [`LoopSession`]: a blocking session's calls
//! complete at once inside it, and an async session (AMQP) runs each phase of the loop in
//! one entry into its runtime, as a hand-written async client loop would. The driver names
//! no concrete transport.
//!
//! Every request is accounted for: `sent = matched + timed_out + abandoned`, where abandoned
//! requests are those still in flight when Ctrl-C stopped the run. Replies that match no
//! outstanding request are counted as unmatched (not ours), late (their request had
//! already timed out) or duplicates (their request was already answered).

use crate::config::{Config, RunLength};
use crate::transport::MatchMode;
use crate::transport::{
    LoopSession, PhaseRunner, Reply, TaskSession, Transport, TransportError, correl,
};
use crate::window::Window;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Longest single wait inside a get, so that Ctrl-C and a stop are seen promptly.
const GET_SLICE: Duration = Duration::from_millis(200);
/// How long --probe runs to find the rate.
const PROBE_TIME: Duration = Duration::from_secs(1);
/// Round trips are recorded in nanoseconds, from 1 ns to an hour, to 3 significant digits.
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// The request and reply counts of a run: nothing lost, nothing hidden.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
    fn add(&mut self, o: &Integrity) {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every request was sent and answered.
    Completed,
    /// Some replies did not come within --wait.
    TimedOut,
    /// Stopped early after --max-timeouts timeouts.
    StoppedAfterTimeouts,
    /// Stopped by Ctrl-C.
    Interrupted,
    /// A task lost its connection; the figures cover what happened before.
    Failed,
}

/// One task's figures.
#[derive(Debug, Clone)]
pub struct TaskStats {
    pub integrity: Integrity,
    /// Round trips in nanoseconds.
    pub round_trip_ns: Histogram<u64>,
}

impl TaskStats {
    fn new() -> Self {
        // 3 significant digits over 1 ns..1 h is a fixed ~30 KiB whatever the run length.
        let round_trip_ns = Histogram::new_with_bounds(1, HIST_MAX_NS, 3)
            .expect("constant histogram bounds are valid");
        TaskStats {
            integrity: Integrity::default(),
            round_trip_ns,
        }
    }

    fn record(&mut self, rt: Duration) {
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
    pub integrity: Integrity,
    /// Round trips of all tasks, merged, in nanoseconds.
    pub round_trip_ns: Histogram<u64>,
    /// Matched replies per task.
    pub per_task_matched: Vec<u64>,
    /// The first transport error, when a task failed mid-run.
    pub error: Option<String>,
    /// Each measured window (one unless --rounds), in order.
    pub rounds: Vec<Round>,
    /// What --probe found and decided.
    pub probed: Option<Probe>,
}

/// The result of --probe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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

/// Shared run controls: Ctrl-C, and the stop that --max-timeouts or a failed task raises.
#[derive(Debug, Default)]
pub struct Controls {
    /// Set by the SIGINT handler.
    pub interrupt: Arc<AtomicBool>,
    stop: AtomicBool,
    timeouts: AtomicU64,
    /// Matched replies so far in the window, one counter per task on its own cache line so
    /// that tasks never contend for it.
    progress: ProgressCounters,
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct PerTask(AtomicU64);

/// Matched replies so far, per task; cheap to clone and read from a display thread.
#[derive(Debug, Default, Clone)]
pub struct ProgressCounters(Arc<[PerTask]>);

impl ProgressCounters {
    /// Matched replies so far, all tasks.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|p| p.0.load(Ordering::Relaxed)).sum()
    }
}

impl Controls {
    /// Controls watching `interrupt`, with progress counters for `tasks` tasks.
    pub fn new(interrupt: Arc<AtomicBool>, tasks: usize) -> Self {
        Controls {
            interrupt,
            progress: ProgressCounters((0..tasks).map(|_| PerTask::default()).collect()),
            ..Default::default()
        }
    }

    /// Matched replies so far in the measured window, all tasks.
    pub fn progress(&self) -> u64 {
        self.progress.total()
    }

    /// A handle on the progress counters that another thread can keep.
    pub fn progress_counters(&self) -> ProgressCounters {
        self.progress.clone()
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.interrupt.load(Ordering::Relaxed)
    }
}

/// A one-shot gate: tasks wait until it opens (true) or is abandoned (false).
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.cv.notify_all();
    }

    fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *s {
                return go;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// How much one task does in a phase.
#[derive(Debug, Clone, Copy)]
enum Limit {
    Count(u64),
    Until(Instant),
}

/// Split `total` over `tasks`: the first `total % tasks` tasks take one more.
fn share(total: u64, tasks: usize, task: usize) -> u64 {
    let t = tasks as u64;
    total / t + u64::from((task as u64) < total % t)
}

/// The loop settings every task shares.
struct Plan<'a> {
    cfg: &'a Config,
    run_id: String,
    controls: &'a Controls,
    /// Messages per round in all tasks: --count, or what --probe sized.
    count: AtomicU64,
}

/// One task's loop state: carries over from warmup to the measured phase so that a late
/// reply to a warmup request is still recognised.
struct TaskLoop<'a, S> {
    plan: &'a Plan<'a>,
    session: S,
    task: usize,
    next_seq: u64,
    timed_out: HashSet<u64>,
    inflight: VecDeque<(u64, Instant)>,
}

impl<S: LoopSession> TaskLoop<'_, S> {
    async fn run(
        &mut self,
        limit: Limit,
        stats: &mut TaskStats,
        paced: bool,
        count_progress: bool,
    ) -> Result<(), TransportError> {
        let cfg = self.plan.cfg;
        let bodies = &cfg.messages.bodies;
        let k = cfg.msgs_per_loop as u64;
        let start = Instant::now();
        // Under --rate, task `task`'s i-th request is due at start + (i·tasks + task)/rate:
        // the tasks interleave evenly and the total rate is the one asked for.
        let interval = cfg
            .rate
            .filter(|_| paced)
            .map(|r| Duration::from_secs_f64(cfg.tasks as f64 / r));
        let offset = cfg
            .rate
            .filter(|_| paced)
            .map(|r| Duration::from_secs_f64(self.task as f64 / r))
            .unwrap_or_default();
        let mut done = 0u64;
        loop {
            if self.plan.controls.stopping() {
                break;
            }
            let batch = match limit {
                Limit::Count(n) if done >= n => break,
                Limit::Count(n) => k.min(n - done),
                Limit::Until(t) if Instant::now() >= t => break,
                Limit::Until(_) => k,
            };
            for i in 0..batch {
                let sent_at = match interval {
                    Some(iv) => {
                        let due = start + offset + iv.mul_f64((done + i) as f64);
                        let now = Instant::now();
                        if due > now {
                            // A thread sleep, also inside an async session's runtime: tokio's
                            // timers round up to the millisecond, too coarse for pacing, and
                            // the runtime is this task's alone, with nothing due before the
                            // put.
                            std::thread::sleep(due - now);
                        }
                        due
                    }
                    None => Instant::now(),
                };
                let seq = self.next_seq;
                self.next_seq += 1;
                let body = &bodies[(seq % bodies.len() as u64) as usize];
                self.session
                    .send(body, &correl::make(&self.plan.run_id, self.task, seq))?;
                stats.integrity.sent += 1;
                self.inflight.push_back((seq, sent_at));
            }
            if cfg.syncpoint {
                self.session.commit_unit().await?;
            }
            let matched_before = stats.integrity.matched;
            self.collect(stats).await?;
            if cfg.syncpoint {
                self.session.commit_unit().await?;
            }
            if count_progress && let Some(slot) = self.plan.controls.progress.0.get(self.task) {
                slot.0
                    .fetch_add(stats.integrity.matched - matched_before, Ordering::Relaxed);
            }
            done += batch;
        }
        Ok(())
    }

    /// Get replies until every outstanding request is answered, timed out or abandoned.
    async fn collect(&mut self, stats: &mut TaskStats) -> Result<(), TransportError> {
        let cfg = self.plan.cfg;
        // Like a series of MQGETs with a wait: each reply gets the full --wait from the
        // moment the previous one arrived (or the puts were done).
        let mut now = Instant::now();
        let mut deadline = now + cfg.wait;
        while !self.inflight.is_empty() {
            if self.plan.controls.interrupt.load(Ordering::Relaxed) {
                stats.integrity.abandoned += self.inflight.len() as u64;
                self.inflight.clear();
                self.session.forget_pending();
                return Ok(());
            }
            if now >= deadline {
                self.time_out(stats);
                return Ok(());
            }
            let reply = self
                .session
                .receive((deadline - now).min(GET_SLICE))
                .await?;
            now = Instant::now();
            if let Some(reply) = reply
                && self.classify(reply, now, stats)
            {
                deadline = now + cfg.wait;
            }
        }
        Ok(())
    }

    fn time_out(&mut self, stats: &mut TaskStats) {
        let n = self.inflight.len() as u64;
        for (seq, _) in self.inflight.drain(..) {
            self.timed_out.insert(seq);
        }
        self.session.forget_pending();
        stats.integrity.timed_out += n;
        let total = self.plan.controls.timeouts.fetch_add(n, Ordering::Relaxed) + n;
        if self.plan.cfg.max_timeouts.is_some_and(|max| total >= max) {
            self.plan.controls.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Count a reply received at `now`; true when it answered an outstanding request.
    fn classify(&mut self, reply: Reply, now: Instant, stats: &mut TaskStats) -> bool {
        let s = &mut stats.integrity;
        s.received += 1;
        if self.plan.cfg.match_mode == MatchMode::Any {
            let Some((_, sent)) = self.inflight.pop_front() else {
                s.unmatched += 1;
                return false;
            };
            s.matched += 1;
            stats.record(now - sent);
            return true;
        }
        let ours = reply
            .correl_id
            .as_deref()
            .and_then(correl::parse)
            .filter(|c| c.run == self.plan.run_id && c.task == self.task)
            .map(|c| c.seq);
        let Some(seq) = ours else {
            s.unmatched += 1;
            return false;
        };
        if let Some(pos) = self.inflight.iter().position(|&(q, _)| q == seq) {
            let (_, sent) = self.inflight.remove(pos).unwrap_or((seq, now));
            s.matched += 1;
            stats.record(now - sent);
            return true;
        }
        if self.timed_out.remove(&seq) {
            s.late += 1;
        } else if seq < self.next_seq {
            s.duplicates += 1;
        } else {
            s.unmatched += 1;
        }
        false
    }
}

enum Event {
    Ready(Result<(), TransportError>),
    Done(usize, TaskStats, Option<TransportError>),
    /// A task's matched replies during the probe, or its failure.
    Probed(Result<u64, TransportError>),
}

/// Run the configured loop over `transport`, calling `window` at the window's two instants.
pub fn run(
    cfg: &Config,
    transport: &dyn Transport,
    controls: &Controls,
    window: &mut dyn Window,
) -> Result<Outcome, TransportError> {
    let max = transport.max_message_size();
    if cfg.messages.max_len() > max {
        return Err(TransportError::TooLarge {
            size: cfg.messages.max_len(),
            max,
            transport: cfg.endpoint.transport().into(),
        });
    }
    let prepared = transport.prepare()?;
    let plan = Plan {
        cfg,
        run_id: correl::new_run_id(),
        controls,
        count: AtomicU64::new(match cfg.length {
            RunLength::Count(n) => n,
            RunLength::Duration(_) => 0,
        }),
    };
    let probe_gate = Gate::default();
    // One gate per round opens its window for all tasks at once.
    let go: Vec<Gate> = (0..cfg.rounds).map(|_| Gate::default()).collect();
    let closing = Gate::default();
    let (tx, rx) = mpsc::channel::<Event>();

    std::thread::scope(|scope| {
        for task in 0..cfg.tasks {
            let (plan, go, closing, task_tx, probe_gate) =
                (&plan, &go, &closing, tx.clone(), &probe_gate);
            let spawned = std::thread::Builder::new()
                .name(format!("oemputx-task-{task}"))
                .spawn_scoped(scope, move || {
                    task_main(plan, transport, task, probe_gate, go, closing, &task_tx)
                });
            if let Err(e) = spawned {
                let _ = tx.send(Event::Ready(Err(TransportError::Broker {
                    what: "starting a task thread".into(),
                    target: "this machine".into(),
                    why: e.to_string(),
                })));
            }
        }
        drop(tx);

        // Every task connected and warmed up, or the first failure.
        let mut first_err = None;
        for _ in 0..cfg.tasks {
            match rx.recv() {
                Ok(Event::Ready(Ok(()))) => {}
                Ok(Event::Ready(Err(e))) => {
                    first_err.get_or_insert(e);
                }
                Ok(Event::Done(..) | Event::Probed(_)) | Err(_) => break,
            }
        }
        // --probe: a short unmeasured run gives the rate; each round is then sized to last.
        let mut probed = None;
        if let (Some(target), RunLength::Count(n)) = (cfg.probe, cfg.length)
            && first_err.is_none()
        {
            let t0 = Instant::now();
            probe_gate.open(true);
            let mut matched = 0u64;
            for _ in 0..cfg.tasks {
                match rx.recv() {
                    Ok(Event::Probed(Ok(m))) => matched += m,
                    Ok(Event::Probed(Err(e))) => {
                        first_err.get_or_insert(e);
                    }
                    _ => break,
                }
            }
            let rate = matched as f64 / t0.elapsed().as_secs_f64().max(1e-9);
            let sized = ((rate * target.as_secs_f64()).ceil() as u64)
                .max(n)
                .max(cfg.tasks as u64);
            plan.count.store(sized, Ordering::Relaxed);
            probed = Some(Probe {
                rate_tps: rate,
                count_per_round: sized,
                target_s: target.as_secs_f64(),
            });
        } else {
            probe_gate.open(false);
        }
        if let Some(e) = first_err {
            for gate in &go {
                gate.open(false);
            }
            closing.open(true);
            return Err(e);
        }

        let start = chrono::Utc::now();
        let mut rounds: Vec<Round> = Vec::with_capacity(cfg.rounds);
        let mut total = TaskStats::new();
        let mut per_task_matched = vec![0; cfg.tasks];
        let mut error = None;
        for (r, gate) in go.iter().enumerate() {
            if r > 0 && (error.is_some() || controls.stopping()) {
                break;
            }
            window.start();
            let t0 = Instant::now();
            gate.open(true);
            let mut finished = Vec::with_capacity(cfg.tasks);
            for _ in 0..cfg.tasks {
                let Ok(Event::Done(task, stats, err)) = rx.recv() else {
                    break;
                };
                if let Some(e) = err {
                    // Stop the other tasks rather than let them run on alone.
                    controls.stop.store(true, Ordering::Relaxed);
                    error.get_or_insert(e.to_string());
                }
                finished.push((task, stats));
            }
            let elapsed = t0.elapsed();
            window.end();
            // Merging happens after the window: it is the report's work, not the run's.
            let mut round = TaskStats::new();
            for (task, stats) in finished {
                per_task_matched[task] += stats.integrity.matched;
                round.integrity.add(&stats.integrity);
                // All histograms share bounds, so adding cannot fail.
                let _ = round.round_trip_ns.add(&stats.round_trip_ns);
            }
            total.integrity.add(&round.integrity);
            let _ = total.round_trip_ns.add(&round.round_trip_ns);
            rounds.push(Round {
                elapsed,
                integrity: round.integrity,
                round_trip_ns: round.round_trip_ns,
            });
        }
        // Rounds not run (after a stop) release their tasks.
        for gate in go.iter().skip(rounds.len()) {
            gate.open(false);
        }
        let elapsed = rounds.iter().map(|r| r.elapsed).sum();
        let end = chrono::Utc::now();
        closing.open(true);

        let i = &total.integrity;
        let status = if error.is_some() {
            Status::Failed
        } else if controls.interrupt.load(Ordering::Relaxed) {
            Status::Interrupted
        } else if controls.stop.load(Ordering::Relaxed) {
            Status::StoppedAfterTimeouts
        } else if i.timed_out > 0 {
            Status::TimedOut
        } else {
            Status::Completed
        };
        Ok(Outcome {
            status,
            start,
            end,
            elapsed,
            cleared: prepared.cleared,
            integrity: total.integrity,
            round_trip_ns: total.round_trip_ns,
            per_task_matched,
            error,
            rounds,
            probed,
        })
    })
}

fn task_main(
    plan: &Plan,
    transport: &dyn Transport,
    task: usize,
    probe_gate: &Gate,
    go: &[Gate],
    closing: &Gate,
    tx: &mpsc::Sender<Event>,
) {
    let gates = (probe_gate, go, closing);
    match transport.session(task) {
        Ok(TaskSession::Blocking(s)) => task_phases(plan, s, task, gates, tx),
        Ok(TaskSession::Async(s)) => task_phases(plan, s, task, gates, tx),
        Err(e) => {
            let _ = tx.send(Event::Ready(Err(e)));
        }
    }
}

/// A task's life: warmup, the probe, each measured round, then close once all are done.
fn task_phases<S: LoopSession>(
    plan: &Plan,
    session: S,
    task: usize,
    (probe_gate, go, closing): (&Gate, &[Gate], &Gate),
    tx: &mpsc::Sender<Event>,
) {
    let cfg = plan.cfg;
    let exec = session.runner();
    let mut lp = TaskLoop {
        plan,
        session,
        task,
        next_seq: 0,
        timed_out: HashSet::new(),
        inflight: VecDeque::new(),
    };
    let warm = share(cfg.warmup, cfg.tasks, task);
    let warmed = if warm > 0 {
        exec.run(lp.run(Limit::Count(warm), &mut TaskStats::new(), false, false))
    } else {
        Ok(())
    };
    let failed = warmed.is_err();
    let _ = tx.send(Event::Ready(warmed));
    if failed {
        let _ = lp.session.finish();
        return;
    }
    if probe_gate.wait() {
        let mut probe = TaskStats::new();
        let probed = exec.run(lp.run(
            Limit::Until(Instant::now() + PROBE_TIME),
            &mut probe,
            false,
            false,
        ));
        let failed = probed.is_err();
        let _ = tx.send(Event::Probed(probed.map(|()| probe.integrity.matched)));
        if failed {
            let _ = lp.session.finish();
            return;
        }
    }
    for gate in go {
        // Allocated before the window opens, so that the window holds only the loop.
        let mut stats = TaskStats::new();
        if !gate.wait() {
            let _ = lp.session.finish();
            return;
        }
        let limit = match cfg.length {
            RunLength::Count(_) => {
                Limit::Count(share(plan.count.load(Ordering::Relaxed), cfg.tasks, task))
            }
            RunLength::Duration(d) => Limit::Until(Instant::now() + d),
        };
        let err = exec.run(lp.run(limit, &mut stats, true, true)).err();
        // Requests still in flight after a failure are neither answered nor timed out.
        stats.integrity.abandoned += lp.inflight.len() as u64;
        lp.inflight.clear();
        let failed = err.is_some();
        let _ = tx.send(Event::Done(task, stats, err));
        if failed {
            break;
        }
    }
    closing.wait();
    let _ = lp.session.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_spreads_the_remainder_over_the_first_tasks() {
        let shares: Vec<u64> = (0..4).map(|t| share(10, 4, t)).collect();
        assert_eq!(shares, vec![3, 3, 2, 2]);
        assert_eq!(shares.iter().sum::<u64>(), 10);
    }

    #[test]
    fn integrity_balances_only_when_every_request_is_accounted_for() {
        let ok = Integrity {
            sent: 5,
            received: 6,
            matched: 4,
            timed_out: 1,
            duplicates: 1,
            late: 1,
            ..Default::default()
        };
        assert!(ok.balanced());
        let lost_request = Integrity { sent: 6, ..ok };
        assert!(!lost_request.balanced());
        let hidden_reply = Integrity { received: 7, ..ok };
        assert!(!hidden_reply.balanced());
    }
}

/// Driver tests on the embedded transport, with a wrapper that loses, repeats or invents
/// replies so that every integrity counter is exercised deterministically.
#[cfg(test)]
mod loop_tests {
    use super::*;
    use crate::cli::Cli;
    use crate::transport::embedded::Embedded;
    use crate::transport::{Prepared, Session};
    use crate::window::NoWindow;
    use clap::Parser;

    fn config(args: &[&str]) -> Config {
        let mut argv = vec!["oemputx"];
        argv.extend_from_slice(args);
        Config::from_args(&Cli::try_parse_from(argv).expect("test arguments parse").run)
            .expect("test config is valid")
    }

    fn run_embedded(cfg: &Config) -> Outcome {
        let t = Embedded::start(cfg.queue_setup());
        run(cfg, &t, &Controls::default(), &mut NoWindow).expect("embedded run")
    }

    #[test]
    fn every_request_is_matched_on_the_embedded_queue_manager() {
        let out = run_embedded(&config(&["--count", "500"]));
        assert_eq!(out.status, Status::Completed);
        assert_eq!(
            out.integrity,
            Integrity {
                sent: 500,
                received: 500,
                matched: 500,
                ..Default::default()
            }
        );
        assert_eq!(out.round_trip_ns.len(), 500);
    }

    #[test]
    fn tasks_share_the_count_and_msgs_per_loop_batches_do_not_overshoot() {
        let out = run_embedded(&config(&[
            "--count",
            "103",
            "--tasks",
            "4",
            "--msgs-per-loop",
            "5",
            "--warmup",
            "7",
        ]));
        assert_eq!(out.per_task_matched, vec![26, 26, 26, 25]);
        assert_eq!(out.integrity.sent, 103);
        assert!(out.integrity.balanced());
    }

    #[test]
    fn a_shared_named_reply_queue_is_read_by_correlation_id() {
        let out = run_embedded(&config(&[
            "--count",
            "400",
            "--tasks",
            "4",
            "--reply-queue",
            "MQSI.OUT",
            "--msgs-per-loop",
            "3",
        ]));
        assert_eq!(out.integrity.matched, 400);
        assert_eq!(out.integrity.unmatched, 0);
    }

    #[test]
    fn rounds_reuse_the_connections_and_each_get_the_full_count() {
        struct Count(usize);
        impl Window for Count {
            fn start(&mut self) {
                self.0 += 1;
            }
            fn end(&mut self) {}
        }
        let cfg = config(&["--count", "90", "--rounds", "3", "--tasks", "2"]);
        let t = Embedded::start(cfg.queue_setup());
        let mut windows = Count(0);
        let out = run(&cfg, &t, &Controls::default(), &mut windows).expect("run");
        assert_eq!(windows.0, 3, "one window per round");
        assert_eq!(out.rounds.len(), 3);
        assert!(
            out.rounds
                .iter()
                .all(|r| r.integrity.matched == 90 && r.round_trip_ns.len() == 90)
        );
        assert_eq!(out.integrity.matched, 270);
        assert_eq!(out.per_task_matched, vec![135, 135]);
        assert_eq!(
            out.elapsed,
            out.rounds.iter().map(|r| r.elapsed).sum::<Duration>()
        );
    }

    #[test]
    fn syncpoint_and_any_matching_complete() {
        let out = run_embedded(&config(&[
            "--count",
            "50",
            "--syncpoint",
            "--msgs-per-loop",
            "5",
            "--match",
            "any",
        ]));
        assert_eq!(out.integrity.matched, 50);
    }

    #[test]
    fn duration_runs_stop_on_time() {
        let started = Instant::now();
        let out = run_embedded(&config(&["--duration", "300ms", "--tasks", "2"]));
        assert!(out.integrity.matched > 0);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(out.elapsed >= Duration::from_millis(300));
    }

    #[test]
    fn pacing_holds_the_asked_rate() {
        let out = run_embedded(&config(&["--count", "40", "--rate", "200", "--tasks", "2"]));
        // 40 requests at 200/s are due over 0.195 s: the run cannot be faster than that.
        assert!(
            out.elapsed >= Duration::from_millis(190),
            "{:?}",
            out.elapsed
        );
    }

    /// What the faulty session does to the n-th reply it sees (counting from 1).
    #[derive(Clone, Copy)]
    struct Faults {
        drop_every: u64,
        repeat_every: u64,
        stray_every: u64,
    }

    struct Faulty {
        inner: Embedded,
        faults: Faults,
    }

    struct FaultySession {
        inner: Box<dyn Session>,
        faults: Faults,
        seen: u64,
        pending: VecDeque<Reply>,
    }

    impl Transport for Faulty {
        fn prepare(&self) -> Result<Prepared, TransportError> {
            self.inner.prepare()
        }
        fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
            let TaskSession::Blocking(inner) = self.inner.session(task)? else {
                panic!("the embedded queue manager's sessions block");
            };
            Ok(TaskSession::Blocking(Box::new(FaultySession {
                inner,
                faults: self.faults,
                seen: 0,
                pending: VecDeque::new(),
            })))
        }
        fn max_message_size(&self) -> usize {
            self.inner.max_message_size()
        }
    }

    impl Session for FaultySession {
        fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
            self.inner.put(body, correl_id)
        }
        fn get(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
            if let Some(r) = self.pending.pop_front() {
                return Ok(Some(r));
            }
            let Some(reply) = self.inner.get(wait)? else {
                return Ok(None);
            };
            self.seen += 1;
            let n = self.seen;
            if n.is_multiple_of(self.faults.drop_every) {
                return Ok(None);
            }
            if n.is_multiple_of(self.faults.repeat_every) {
                self.pending.push_back(reply.clone());
            }
            if n.is_multiple_of(self.faults.stray_every) {
                self.pending.push_back(Reply {
                    correl_id: Some("somebody-else".into()),
                    len: 1,
                });
            }
            Ok(Some(reply))
        }
        fn commit(&mut self) -> Result<(), TransportError> {
            self.inner.commit()
        }
        fn close(self: Box<Self>) -> Result<(), TransportError> {
            self.inner.close()
        }
    }

    #[test]
    fn lost_repeated_and_stray_replies_are_all_counted() {
        let cfg = config(&["--count", "100", "--wait", "20ms"]);
        let faults = Faults {
            drop_every: 10,
            repeat_every: 7,
            stray_every: 9,
        };
        let t = Faulty {
            inner: Embedded::start(cfg.queue_setup()),
            faults,
        };
        let out = run(&cfg, &t, &Controls::default(), &mut NoWindow).expect("run");
        let i = out.integrity;
        assert_eq!(out.status, Status::TimedOut);
        assert_eq!(i.sent, 100);
        assert_eq!(i.timed_out, 10, "{i:?}");
        assert_eq!(i.matched, 90, "{i:?}");
        assert!(i.duplicates > 0 && i.unmatched > 0, "{i:?}");
        assert!(i.balanced(), "{i:?}");
    }

    #[test]
    fn max_timeouts_stops_the_run_early() {
        let cfg = config(&["--count", "1000", "--wait", "10ms", "--max-timeouts", "3"]);
        let faults = Faults {
            drop_every: 1,
            repeat_every: u64::MAX,
            stray_every: u64::MAX,
        };
        let t = Faulty {
            inner: Embedded::start(cfg.queue_setup()),
            faults,
        };
        let out = run(&cfg, &t, &Controls::default(), &mut NoWindow).expect("run");
        assert_eq!(out.status, Status::StoppedAfterTimeouts);
        assert_eq!(out.integrity.timed_out, 3);
        assert_eq!(out.integrity.sent, 3);
    }

    #[test]
    fn an_interrupt_abandons_requests_in_flight_and_keeps_the_books_balanced() {
        let cfg = config(&["--duration", "10s", "--wait", "5s"]);
        let faults = Faults {
            drop_every: 50,
            repeat_every: u64::MAX,
            stray_every: u64::MAX,
        };
        let t = Faulty {
            inner: Embedded::start(cfg.queue_setup()),
            faults,
        };
        let controls = Controls::default();
        let flag = controls.interrupt.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::Relaxed);
        });
        let out = run(&cfg, &t, &controls, &mut NoWindow).expect("run");
        stopper.join().expect("stopper thread");
        assert_eq!(out.status, Status::Interrupted);
        assert!(out.elapsed < Duration::from_secs(2));
        assert_eq!(out.integrity.abandoned, 1);
        assert!(out.integrity.balanced(), "{:?}", out.integrity);
    }

    #[test]
    fn messages_larger_than_the_transport_allows_are_refused_before_the_run() {
        let cfg = config(&["--msg-size", "104857601"]);
        let t = Embedded::start(cfg.queue_setup());
        let err = run(&cfg, &t, &Controls::default(), &mut NoWindow).expect_err("too large");
        assert!(matches!(err, TransportError::TooLarge { .. }));
        assert!(err.is_usage());
    }
}
