//! One task's life on its own thread: connect, warm up, wait at each latch, run each phase
//! of the loop (put, then get until every request is answered, timed out or abandoned), and
//! classify every reply. Written once for every transport, over [`LoopSession`].

use super::failover::{Break, Orphan, Reconnected, reconnect};
use super::outcome::TaskStats;
use super::{Controls, GET_SLICE, Latches, PROBE_TIME};
use crate::config::{RunConfig, RunLength};
use crate::transport::MatchMode;
use crate::transport::{
    LoopSession, PhaseRunner, Reply, TaskSession, Transport, TransportError, correl,
};
use std::collections::{HashMap, HashSet, VecDeque};
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
    /// Where a broken session's replacement comes from.
    transport: &'a dyn Transport,
    session: S,
    task: usize,
    next_seq: u64,
    timed_out: HashSet<u64>,
    inflight: VecDeque<(u64, Instant)>,
    /// The last matched reply: where the outage of a break starts.
    last_reply: Option<Instant>,
    /// Requests in flight when their connection broke, waiting for a reply on the new one.
    orphans: Vec<Orphan>,
    /// This phase's breaks, in order.
    breaks: Vec<Break>,
    /// Every request in flight at one of this phase's breaks, by the index of its break:
    /// a second reply to one of them is the break's (a broker delivering it again), any
    /// other second reply the flow's.
    orphaned: HashMap<u64, usize>,
    /// The end of the time to connect again, set at a break and kept until a reply comes:
    /// breaks one after another with no reply between them share one --reconnect-for.
    reconnect_until: Option<Instant>,
}

/// Where a phase is: kept across a reconnect, so that the phase goes on where it broke
/// (the pacing's schedule, and how many requests it has sent).
struct PhaseState {
    start: Instant,
    done: u64,
}

/// What a phase is asked to do.
#[derive(Clone, Copy)]
struct PhaseAsk {
    limit: Limit,
    paced: bool,
    count_progress: bool,
}

impl<S: LoopSession> TaskLoop<'_, S> {
    /// Run a phase to its end, reconnecting when the connection breaks (within
    /// --reconnect-for; `--reconnect-for 0` ends the run at the first break, as before).
    fn phase(&mut self, ask: PhaseAsk, stats: &mut TaskStats) -> Result<(), TransportError> {
        let mut state = PhaseState {
            start: Instant::now(),
            done: 0,
        };
        // An outage starts at the last reply of this phase (or at the break).
        self.last_reply = None;
        let result = loop {
            let exec = self.session.runner();
            match exec.run(self.run_phase(ask, &mut state, stats)) {
                Err(e) if self.recoverable(&e) => {
                    drop(exec);
                    match self.recover(e) {
                        Ok(true) => continue,
                        Ok(false) => break Ok(()),
                        Err(e) => break Err(e),
                    }
                }
                other => break other,
            }
        };
        self.end_phase(stats);
        result
    }

    fn recoverable(&self, e: &TransportError) -> bool {
        !self.settings.cfg.reconnect_for.is_zero()
            && matches!(e.kind(), TransportError::ConnectionLost { .. })
    }

    /// The session broke with `why`: keep its requests in flight as orphans and open a new
    /// one. True when the phase goes on, false when a stop came first.
    fn recover(&mut self, why: TransportError) -> Result<bool, TransportError> {
        let cfg = self.settings.cfg;
        let mut brk = Break::new(self.task, &why, self.session.node(), self.last_reply);
        let index = self.breaks.len();
        let give_up = *self
            .reconnect_until
            .get_or_insert_with(|| Instant::now() + cfg.reconnect_for);
        let found = reconnect::<S>(self.transport, self.task, self.settings.controls, give_up);
        let until = Instant::now() + cfg.wait;
        for (seq, sent) in self.inflight.drain(..) {
            self.orphaned.insert(seq, index);
            self.orphans.push(Orphan {
                seq,
                sent,
                until,
                brk: index,
            });
        }
        let outcome = match found {
            Ok(Reconnected::Session(session)) => {
                brk.rec.reconnected = true;
                brk.rec.to = session.node();
                // The broken session goes without a goodbye: its server is gone.
                drop(std::mem::replace(&mut self.session, session));
                Ok(true)
            }
            Ok(Reconnected::Stopped) => Ok(false),
            Err(e) => Err(e),
        };
        self.breaks.push(brk);
        outcome
    }

    /// The phase is over: orphans still without a reply are lost (abandoned after a stop),
    /// and its breaks go into the phase's figures.
    fn end_phase(&mut self, stats: &mut TaskStats) {
        let stopping = self.settings.controls.stopping();
        self.expire_orphans(None, stopping, stats);
        let end = Instant::now();
        self.orphaned.clear();
        stats
            .interruptions
            .extend(self.breaks.drain(..).map(|b| b.finish(end)));
    }

    /// Orphans whose wait is over at `now` (all of them when `now` is None) time out as
    /// lost, or are abandoned when the run is stopping; either way counted once.
    fn expire_orphans(&mut self, now: Option<Instant>, stopping: bool, stats: &mut TaskStats) {
        if self.orphans.is_empty() {
            return;
        }
        let (gone, kept): (Vec<Orphan>, Vec<Orphan>) = std::mem::take(&mut self.orphans)
            .into_iter()
            .partition(|o| now.is_none_or(|t| o.until <= t));
        self.orphans = kept;
        for o in gone {
            if stopping || !self.count_timeouts(1) {
                stats.integrity.abandoned += 1;
                continue;
            }
            stats.integrity.timed_out += 1;
            self.timed_out.insert(o.seq);
            if let Some(b) = self.breaks.get_mut(o.brk) {
                b.rec.lost += 1;
            }
        }
    }

    async fn run_phase(
        &mut self,
        ask: PhaseAsk,
        state: &mut PhaseState,
        stats: &mut TaskStats,
    ) -> Result<(), TransportError> {
        let PhaseAsk {
            limit,
            paced,
            count_progress,
        } = ask;
        let cfg = self.settings.cfg;
        let bodies = &cfg.messages.bodies;
        let k = cfg.msgs_per_loop as u64;
        let start = state.start;
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
        loop {
            if self.settings.controls.stopping() {
                break;
            }
            if !self.orphans.is_empty() {
                self.expire_orphans(Some(Instant::now()), false, stats);
            }
            let done = state.done;
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
            for _ in 0..batch {
                let sent_at = match interval {
                    Some(iv) => {
                        let due = start + offset + iv.mul_f64(state.done as f64);
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
                state.done += 1;
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
            if ends {
                break;
            }
        }
        self.await_orphans(stats).await
    }

    /// The phase's requests are all answered or timed out: its orphans still get their
    /// --wait after the reconnect (a count's last batch broke: their replies may come on
    /// the new connection, as on a named reply queue), unless the run is stopping.
    async fn await_orphans(&mut self, stats: &mut TaskStats) -> Result<(), TransportError> {
        while let Some(until) = self.orphans.iter().map(|o| o.until).max() {
            let now = Instant::now();
            if self.settings.controls.stopping() || now >= until {
                break;
            }
            self.expire_orphans(Some(now), false, stats);
            if let Some(reply) = self.session.receive((until - now).min(GET_SLICE)).await? {
                self.classify(reply, Instant::now(), stats);
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

    /// Count `n` timeouts towards --max-timeouts; false when the limit was already reached
    /// (the run is stopping, and these requests are abandoned rather than timed out).
    fn count_timeouts(&self, n: u64) -> bool {
        let controls = self.settings.controls;
        let Some(max) = self.settings.cfg.max_timeouts else {
            return true;
        };
        // Counted only while the total is below --max-timeouts, in one atomic step, so
        // that tasks timing out together do not overshoot it: once another task has
        // reached it, the run is stopping. (A batch of --msgs-per-loop requests times out
        // together and is counted whole.)
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
                true
            }
            Err(_) => false,
        }
    }

    fn time_out(&mut self, stats: &mut TaskStats) {
        let n = self.inflight.len() as u64;
        let controls = self.settings.controls;
        if !self.count_timeouts(n) {
            self.abandon(stats);
            return;
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
            self.replied(now);
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
        let pending = self.inflight.iter().position(|&(q, _)| q == seq);
        let sent = match pending {
            Some(pos) => self.inflight.remove(pos).map(|(_, sent)| sent),
            None => self.orphan_answered(seq),
        };
        if let Some(sent) = sent {
            s.matched += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
            stats.record(now - sent);
            self.replied(now);
            return true;
        }
        // A late or repeated reply to one of this run's requests still shows the responder
        // alive: like a matched one, it resets the timeouts in a row (docs/run.md).
        if self.timed_out.remove(&seq) {
            s.late += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
            // A request lost to a break whose reply came after all is late, not lost (an
            // orphan that timed out was lost: expire_orphans).
            if let Some(b) = self
                .orphaned
                .get(&seq)
                .and_then(|&i| self.breaks.get_mut(i))
            {
                b.rec.lost = b.rec.lost.saturating_sub(1);
                b.rec.late += 1;
            }
        } else if seq < self.next_seq {
            s.duplicates += 1;
            self.settings.controls.in_a_row.store(0, Ordering::Relaxed);
            if let Some(b) = self
                .orphaned
                .get(&seq)
                .and_then(|&i| self.breaks.get_mut(i))
            {
                b.rec.duplicated += 1;
            }
        } else {
            s.unmatched += 1;
        }
        false
    }

    /// The send time of orphan `seq`, taken out of the orphans, if it is one.
    fn orphan_answered(&mut self, seq: u64) -> Option<Instant> {
        let pos = self.orphans.iter().position(|o| o.seq == seq)?;
        Some(self.orphans.swap_remove(pos).sent)
    }

    /// A matched reply at `now`: the last one so far, and the end of any break's outage.
    fn replied(&mut self, now: Instant) {
        self.last_reply = Some(now);
        self.reconnect_until = None;
        // Every break still without a reply after it ends here (two breaks in a row).
        for b in &mut self.breaks {
            b.replied(now);
        }
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
        Ok(TaskSession::Blocking(s)) => task_phases(settings, transport, s, task, latches, tx),
        Ok(TaskSession::Async(s)) => task_phases(settings, transport, s, task, latches, tx),
        Err(e) => {
            let _ = tx.send(Event::Ready(Err(e)));
        }
    }
}

/// An unmeasured phase of `limit`.
fn unmeasured(limit: Limit, paced: bool) -> PhaseAsk {
    PhaseAsk {
        limit,
        paced,
        count_progress: false,
    }
}

/// A task's life: warmup, the probe, each measured round, then close once all are done.
fn task_phases<S: LoopSession>(
    settings: &LoopSettings,
    transport: &dyn Transport,
    session: S,
    task: usize,
    latches: &Latches,
    tx: &mpsc::Sender<Event>,
) {
    let cfg = settings.cfg;
    let mut task_loop = TaskLoop {
        settings,
        transport,
        session,
        task,
        next_seq: 0,
        timed_out: HashSet::new(),
        inflight: VecDeque::new(),
        last_reply: None,
        orphaned: HashMap::new(),
        reconnect_until: None,
        orphans: Vec::new(),
        breaks: Vec::new(),
    };
    let warm = share(cfg.warmup, cfg.tasks, task);
    let warmed = if warm > 0 {
        task_loop.phase(unmeasured(Limit::Count(warm), false), &mut TaskStats::new())
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
        let until = Limit::Until(Instant::now() + PROBE_TIME);
        let probed = task_loop.phase(unmeasured(until, false), &mut probe);
        let failed = probed.is_err();
        let _ = tx.send(Event::Probed(probed.map(|()| probe.integrity.matched)));
        if failed {
            let _ = task_loop.session.finish();
            return;
        }
    }
    if latches.settle.wait() {
        let until = Limit::Until(Instant::now() + cfg.settle.unwrap_or_default());
        let settled = task_loop.phase(unmeasured(until, true), &mut TaskStats::new());
        let failed = settled.is_err();
        let _ = tx.send(Event::Settled(settled));
        if failed {
            let _ = task_loop.session.finish();
            return;
        }
    }
    measured_rounds(&mut task_loop, latches, tx);
    latches.closing.wait();
    let _ = task_loop.session.finish();
}

/// Each measured round of the task, as its latch opens; a failed round ends them.
fn measured_rounds<S: LoopSession>(
    task_loop: &mut TaskLoop<'_, S>,
    latches: &Latches,
    tx: &mpsc::Sender<Event>,
) {
    let (settings, task) = (task_loop.settings, task_loop.task);
    let cfg = settings.cfg;
    for latch in &latches.rounds {
        // Allocated before the window opens, so that the window holds only the loop.
        let mut stats = TaskStats::new();
        if !latch.wait() {
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
        let ask = PhaseAsk {
            limit,
            paced: true,
            count_progress: true,
        };
        let err = task_loop.phase(ask, &mut stats).err();
        // Requests still in flight after a failure are neither answered nor timed out.
        stats.integrity.abandoned += task_loop.inflight.len() as u64;
        task_loop.inflight.clear();
        let failed = err.is_some();
        let _ = tx.send(Event::Done(task, stats, err));
        if failed {
            return;
        }
    }
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
