//! One task's life on its own thread: connect, warm up, wait at each latch, run each phase
//! of the loop (put, then get until every request is answered, timed out or abandoned), and
//! classify every reply. Written once for every transport, over [`LoopSession`].

use super::outcome::TaskStats;
use super::{Controls, GET_SLICE, Latches, PROBE_TIME};
use crate::config::{RunConfig, RunLength};
use crate::transport::MatchMode;
use crate::transport::{
    LoopSession, PhaseRunner, Reply, TaskSession, Transport, TransportError, correl,
};
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How much one task does in a phase.
#[derive(Debug, Clone, Copy)]
pub(super) enum Limit {
    Count(u64),
    Until(Instant),
}

/// Split `total` over `tasks`: the first `total % tasks` tasks take one more.
pub(super) fn share(total: u64, tasks: usize, task: usize) -> u64 {
    let t = tasks as u64;
    total / t + u64::from((task as u64) < total % t)
}

/// The loop settings every task shares.
pub(super) struct LoopSettings<'a> {
    pub(super) cfg: &'a RunConfig,
    /// Tells this run's correlation ids from a previous run's.
    pub(super) run_id: String,
    pub(super) controls: &'a Controls,
    /// Messages per round in all tasks: --count, or what --probe sized.
    pub(super) count: AtomicU64,
}

/// One task's loop state: carries over from warmup to the measured phase so that a late
/// reply to a warmup request is still recognised.
struct TaskLoop<'a, S> {
    settings: &'a LoopSettings<'a>,
    session: S,
    task: usize,
    next_seq: u64,
    timed_out: HashSet<u64>,
    inflight: VecDeque<(u64, Instant)>,
}

impl<S: LoopSession> TaskLoop<'_, S> {
    async fn run_phase(
        &mut self,
        limit: Limit,
        stats: &mut TaskStats,
        paced: bool,
        count_progress: bool,
    ) -> Result<(), TransportError> {
        let cfg = self.settings.cfg;
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
            if self.settings.controls.stopping() {
                break;
            }
            let batch = match limit {
                Limit::Count(n) if done >= n => break,
                Limit::Count(n) => k.min(n - done),
                Limit::Until(t) if Instant::now() >= t => break,
                Limit::Until(_) => k,
            };
            // A paced phase of a duration sends nothing due at or after its end: a task's
            // next request could otherwise be due a whole interval later (tasks ÷ rate), and
            // the phase would run on past its end to send it.
            let mut sent = 0u64;
            let mut ends = false;
            for i in 0..batch {
                let sent_at = match interval {
                    Some(iv) => {
                        let due = start + offset + iv.mul_f64((done + i) as f64);
                        if matches!(limit, Limit::Until(t) if due >= t) {
                            ends = true;
                            break;
                        }
                        if !pace_until(due, self.settings.controls) {
                            // Stopped while waiting: no request after the signal.
                            return Ok(());
                        }
                        due
                    }
                    None => Instant::now(),
                };
                let seq = self.next_seq;
                self.next_seq += 1;
                let body = &bodies[(seq % bodies.len() as u64) as usize];
                self.session
                    .send(body, &correl::make(&self.settings.run_id, self.task, seq))?;
                stats.integrity.sent += 1;
                if stats.integrity.sent == 1 {
                    self.settings
                        .controls
                        .put_any
                        .store(true, Ordering::Relaxed);
                }
                self.inflight.push_back((seq, sent_at));
                sent += 1;
            }
            if sent == 0 {
                break;
            }
            if cfg.syncpoint {
                self.session.commit_unit().await?;
            }
            let matched_before = stats.integrity.matched;
            self.collect(stats).await?;
            if cfg.syncpoint {
                self.session.commit_unit().await?;
            }
            if count_progress && let Some(slot) = self.settings.controls.progress.0.get(self.task) {
                slot.0
                    .fetch_add(stats.integrity.matched - matched_before, Ordering::Relaxed);
            }
            done += sent;
            if ends {
                break;
            }
        }
        Ok(())
    }

    /// Get replies until every outstanding request is answered, timed out or abandoned.
    async fn collect(&mut self, stats: &mut TaskStats) -> Result<(), TransportError> {
        let cfg = self.settings.cfg;
        // Like a series of MQGETs with a wait: each reply gets the full --wait from the
        // moment the previous one arrived (or the puts were done).
        let mut now = Instant::now();
        let mut deadline = now + cfg.wait;
        while !self.inflight.is_empty() {
            // Ctrl-C, or another task's failure or last allowed timeout: stop waiting.
            if self.settings.controls.stopping() {
                self.abandon(stats);
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

    fn abandon(&mut self, stats: &mut TaskStats) {
        stats.integrity.abandoned += self.inflight.len() as u64;
        self.inflight.clear();
        self.session.forget_pending();
    }

    fn time_out(&mut self, stats: &mut TaskStats) {
        let n = self.inflight.len() as u64;
        let controls = self.settings.controls;
        if let Some(max) = self.settings.cfg.max_timeouts {
            // Counted only while the total is below --max-timeouts, in one atomic step, so
            // that tasks timing out together do not overshoot it: once another task has
            // reached it, the run is stopping and these requests are abandoned. (A batch of
            // --msgs-per-loop requests times out together and is counted whole.)
            let below = controls
                .timeouts
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    (t < max).then_some(t + n)
                });
            match below {
                Ok(before) => {
                    if before + n >= max {
                        controls.stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(_) => {
                    self.abandon(stats);
                    return;
                }
            }
        }
        for (seq, _) in self.inflight.drain(..) {
            self.timed_out.insert(seq);
        }
        self.session.forget_pending();
        stats.integrity.timed_out += n;
        let in_a_row = controls.in_a_row.fetch_add(n, Ordering::Relaxed) + n;
        if self.settings.cfg.max_timeouts.is_none() && in_a_row >= TIMEOUTS_IN_A_ROW {
            controls.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Count a reply received at `now`; true when it answered an outstanding request.
    fn classify(&mut self, reply: Reply, now: Instant, stats: &mut TaskStats) -> bool {
        let s = &mut stats.integrity;
        s.received += 1;
        if s.received == 1 {
            self.settings
                .controls
                .replied_any
                .store(true, Ordering::Relaxed);
        }
        if self.settings.cfg.match_mode == MatchMode::Any {
            let Some((_, sent)) = self.inflight.pop_front() else {
                s.unmatched += 1;
                return false;
            };
            s.matched += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
            stats.record(now - sent);
            return true;
        }
        let ours = reply
            .correl_id
            .as_deref()
            .and_then(correl::parse)
            .filter(|c| c.run == self.settings.run_id && c.task == self.task)
            .map(|c| c.seq);
        let Some(seq) = ours else {
            s.unmatched += 1;
            return false;
        };
        if let Some(pos) = self.inflight.iter().position(|&(q, _)| q == seq) {
            let (_, sent) = self.inflight.remove(pos).unwrap_or((seq, now));
            s.matched += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
            stats.record(now - sent);
            return true;
        }
        // A late or repeated reply to one of this run's requests still shows the responder
        // alive: like a matched one, it resets the timeouts in a row (docs/run.md).
        if self.timed_out.remove(&seq) {
            s.late += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
        } else if seq < self.next_seq {
            s.duplicates += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
        } else {
            s.unmatched += 1;
        }
        false
    }
}

pub(super) enum Event {
    Ready(Result<(), TransportError>),
    Done(usize, TaskStats, Option<TransportError>),
    /// A task's matched replies during the probe, or its failure.
    Probed(Result<u64, TransportError>),
    /// A task's settling phase is over, or failed.
    Settled(Result<(), TransportError>),
}

pub(super) fn task_main(
    settings: &LoopSettings,
    transport: &dyn Transport,
    task: usize,
    latches: &Latches,
    tx: &mpsc::Sender<Event>,
) {
    match transport.session(task) {
        Ok(TaskSession::Blocking(s)) => task_phases(settings, s, task, latches, tx),
        Ok(TaskSession::Async(s)) => task_phases(settings, s, task, latches, tx),
        Err(e) => {
            let _ = tx.send(Event::Ready(Err(e)));
        }
    }
}

/// A task's life: warmup, the probe, each measured round, then close once all are done.
fn task_phases<S: LoopSession>(
    settings: &LoopSettings,
    session: S,
    task: usize,
    latches: &Latches,
    tx: &mpsc::Sender<Event>,
) {
    let cfg = settings.cfg;
    let exec = session.runner();
    let mut task_loop = TaskLoop {
        settings,
        session,
        task,
        next_seq: 0,
        timed_out: HashSet::new(),
        inflight: VecDeque::new(),
    };
    let warm = share(cfg.warmup, cfg.tasks, task);
    let warmed = if warm > 0 {
        exec.run(task_loop.run_phase(Limit::Count(warm), &mut TaskStats::new(), false, false))
    } else {
        Ok(())
    };
    let failed = warmed.is_err();
    let _ = tx.send(Event::Ready(warmed));
    if failed {
        let _ = task_loop.session.finish();
        return;
    }
    if latches.probe.wait() {
        let mut probe = TaskStats::new();
        let probed = exec.run(task_loop.run_phase(
            Limit::Until(Instant::now() + PROBE_TIME),
            &mut probe,
            false,
            false,
        ));
        let failed = probed.is_err();
        let _ = tx.send(Event::Probed(probed.map(|()| probe.integrity.matched)));
        if failed {
            let _ = task_loop.session.finish();
            return;
        }
    }
    if latches.settle.wait() {
        let until = Instant::now() + cfg.settle.unwrap_or_default();
        let settled =
            exec.run(task_loop.run_phase(Limit::Until(until), &mut TaskStats::new(), true, false));
        let failed = settled.is_err();
        let _ = tx.send(Event::Settled(settled));
        if failed {
            let _ = task_loop.session.finish();
            return;
        }
    }
    for latch in &latches.rounds {
        // Allocated before the window opens, so that the window holds only the loop.
        let mut stats = TaskStats::new();
        if !latch.wait() {
            let _ = task_loop.session.finish();
            return;
        }
        let limit = match cfg.length {
            RunLength::Count(_) => Limit::Count(share(
                settings.count.load(Ordering::Relaxed),
                cfg.tasks,
                task,
            )),
            RunLength::Duration(d) => Limit::Until(Instant::now() + d),
        };
        let err = exec
            .run(task_loop.run_phase(limit, &mut stats, true, true))
            .err();
        // Requests still in flight after a failure are neither answered nor timed out.
        stats.integrity.abandoned += task_loop.inflight.len() as u64;
        task_loop.inflight.clear();
        let failed = err.is_some();
        let _ = tx.send(Event::Done(task, stats, err));
        if failed {
            break;
        }
    }
    latches.closing.wait();
    let _ = task_loop.session.finish();
}

/// Without --max-timeouts, a run stops after this many timed-out replies with no reply
/// between them: the flow is most likely gone, and each further request would wait the
/// full --wait.
pub const TIMEOUTS_IN_A_ROW: u64 = 5;

/// The longest single sleep while pacing: a signal is noticed within this.
const PACING_SLICE: Duration = Duration::from_millis(50);

/// Sleep until `due`, waking every [`PACING_SLICE`] to see whether the run is stopping;
/// false when it is. A thread sleep, also inside an async session's runtime: tokio's timers
/// round up to the millisecond, too coarse for pacing, and the runtime is this task's
/// alone, with nothing due before the put.
fn pace_until(due: Instant, controls: &super::Controls) -> bool {
    loop {
        if controls.stopping() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(PACING_SLICE));
    }
}
