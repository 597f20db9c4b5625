//! Interleaved rounds: the glue between the experiment engine ([`crate::experiment`]) and
//! what measures. Each arm measures one round when asked (a put/get run against its own
//! flow on its own request queue, a pub/sub cell, …) and starts fresh processes when a
//! block begins; [`Interleave::drive`] runs cycles in the engine's order, plans the blocks
//! that fit in the time allowed before every look (from how long blocks took, never from
//! what they measured: the plan follows the budget), looks after every block from the first
//! look on, and stops when the engine is done, the budget is spent or the user interrupts.
//! The A/B gate, `compare` and `sweep` run on it.
//!
//! **A fault keeps what was measured.** An error while measuring (a flow that will not
//! start, a round that does not complete, a broker that times out) ends the run as
//! [`End::Failed`] with the error kept in [`Interleave::fault`], not as an `Err` that would
//! take every block already measured with it: a compare lost 164 s of blocks to a 2 s
//! broker timeout that way. The caller reports the blocks done, marked partial, and exits 1.

pub mod flow_arm;

use crate::experiment::{Experiment, FIRST_LOOK, Figures, Look};
use crate::report::partial::{self, Partial};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One arm of an experiment.
pub trait Arm {
    /// What one measured round gives.
    type Round;
    /// Fresh processes for a new block: a process's lasting bias becomes noise that
    /// averages out over blocks, instead of a difference between arms.
    fn restart(&mut self) -> anyhow::Result<()>;
    /// One measured round; `None` when the user interrupted it.
    fn measure(&mut self, interrupt: &Arc<AtomicBool>) -> anyhow::Result<Option<Self::Round>>;
}

/// How long an experiment may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_time: Duration,
    pub max_blocks: usize,
}

/// The blocks whose pace plans the rest: the latest few, so that a machine whose load
/// comes or goes is planned at the pace it has now, not at its average since the start.
const PACE_BLOCKS: usize = 8;

/// What a run's clock reads: the time since it began.
type Clock = Box<dyn Fn() -> Duration>;

/// Why an experiment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The engine decided everything it could.
    Decided,
    /// The time or the blocks ran out first.
    Budget,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// An error while measuring: [`Interleave::fault`] holds it.
    Failed,
}

impl End {
    /// The word reports give it (`run_shape.ended`).
    pub fn as_str(self) -> &'static str {
        match self {
            End::Decided => "decided",
            End::Budget => "budget",
            End::Interrupted => "interrupted",
            End::Failed => "failed",
        }
    }
}

/// The rounds of an experiment under way.
pub struct Interleave<'a, A: Arm> {
    arms: &'a mut [A],
    budget: Budget,
    clock: Clock,
    /// When each block ended, on the run's clock.
    block_ends: Vec<Duration>,
    /// Every round each arm measured, in order.
    pub rounds: Vec<Vec<A::Round>>,
    /// The order of every cycle measured.
    pub orders: Vec<Vec<usize>>,
    /// What ended a run as [`End::Failed`], with its context.
    pub fault: Option<anyhow::Error>,
}

impl<'a, A: Arm> Interleave<'a, A> {
    pub fn new(arms: &'a mut [A], budget: Budget) -> Interleave<'a, A> {
        let started = Instant::now();
        Self::with_clock(arms, budget, Box::new(move || started.elapsed()))
    }

    /// A run on a clock of its own (tests drive time by hand).
    fn with_clock(arms: &'a mut [A], budget: Budget, clock: Clock) -> Interleave<'a, A> {
        let n = arms.len();
        Interleave {
            arms,
            budget,
            clock,
            block_ends: Vec::new(),
            rounds: (0..n).map(|_| Vec::new()).collect(),
            orders: Vec::new(),
            fault: None,
        }
    }

    pub fn elapsed(&self) -> Duration {
        (self.clock)()
    }

    /// Measure one cycle in `order`; false when interrupted (the cycle is then dropped).
    pub(crate) fn cycle(
        &mut self,
        order: &[usize],
        interrupt: &Arc<AtomicBool>,
    ) -> anyhow::Result<bool> {
        let mut got: Vec<Option<A::Round>> = (0..self.arms.len()).map(|_| None).collect();
        for &a in order {
            if interrupt.load(Ordering::Relaxed) {
                return Ok(false);
            }
            match self.arms[a].measure(interrupt)? {
                Some(r) => got[a] = Some(r),
                None => return Ok(false),
            }
        }
        for (a, r) in got.into_iter().enumerate() {
            if let Some(r) = r {
                self.rounds[a].push(r);
            }
        }
        self.orders.push(order.to_vec());
        Ok(true)
    }

    /// The figures of the last cycle measured, by arm.
    fn last_figures(&self, figures: &impl Fn(&A::Round) -> Figures) -> Vec<Figures> {
        self.rounds
            .iter()
            .map(|r| {
                r.last().map_or_else(
                    || Figures {
                        values: Vec::new(),
                        control: None,
                    },
                    figures,
                )
            })
            .collect()
    }

    /// Record the last cycle measured (one measured before the engine existed, say).
    pub(crate) fn record_last(
        &self,
        engine: &mut Experiment,
        figures: &impl Fn(&A::Round) -> Figures,
    ) -> anyhow::Result<bool> {
        Ok(engine.record(self.last_figures(figures))?)
    }

    /// Cycles until the engine is done, the budget is spent, the user interrupts or a
    /// measurement fails (then [`End::Failed`], the error in [`Interleave::fault`] and the
    /// blocks measured before it kept in the engine); `on_look` sees every look. A block is
    /// begun only when it is expected to end within the time; the arms restart between
    /// blocks.
    pub fn drive(
        &mut self,
        engine: &mut Experiment,
        figures: impl Fn(&A::Round) -> Figures,
        interrupt: &Arc<AtomicBool>,
        on_look: impl FnMut(&Look, Duration),
    ) -> End {
        match self.drive_until_error(engine, figures, interrupt, on_look) {
            Ok(end) => end,
            // What the signal cut short (a flow's start, a connect) is no fault: the run
            // was interrupted, and says so in every output.
            Err(_) if interrupt.load(std::sync::atomic::Ordering::Relaxed) => End::Interrupted,
            Err(e) => {
                self.fault = Some(e);
                End::Failed
            }
        }
    }

    /// [`Interleave::drive`] with a fault as the error it was, the blocks before it
    /// dropped: for the A/B gate, whose verdict (and exit code, which CI acts on) is not
    /// given on part of a run. `compare` and `sweep` report the blocks done instead.
    pub(crate) fn drive_or_err(
        &mut self,
        engine: &mut Experiment,
        figures: impl Fn(&A::Round) -> Figures,
        interrupt: &Arc<AtomicBool>,
        on_look: impl FnMut(&Look, Duration),
    ) -> anyhow::Result<End> {
        let end = self.drive(engine, figures, interrupt, on_look);
        match self.fault.take() {
            Some(e) => Err(e),
            None => Ok(end),
        }
    }

    fn drive_until_error(
        &mut self,
        engine: &mut Experiment,
        figures: impl Fn(&A::Round) -> Figures,
        interrupt: &Arc<AtomicBool>,
        mut on_look: impl FnMut(&Look, Duration),
    ) -> anyhow::Result<End> {
        loop {
            // A cycle measured but not yet recorded (the first, measured before the engine
            // was made, or the last one of this loop).
            if self.orders.len() > engine.cycles() && self.record_last(engine, &figures)? {
                if let Some(end) = self.after_block(engine, &mut on_look) {
                    return Ok(end);
                }
                // In the order the new block measures them, so that the arm measured
                // first is also the one restarted first, whichever arm that is.
                for &a in engine.order() {
                    self.arms[a].restart()?;
                }
            }
            let order = engine.order().to_vec();
            if !self.cycle(&order, interrupt)? {
                return Ok(End::Interrupted);
            }
        }
    }

    /// How long a block takes now: the mean of the latest [`PACE_BLOCKS`] blocks (zero
    /// before any).
    pub(crate) fn pace(&self) -> Duration {
        let n = self.block_ends.len().min(PACE_BLOCKS);
        let Some(&end) = self.block_ends.last() else {
            return Duration::ZERO;
        };
        let from = self
            .block_ends
            .len()
            .checked_sub(n + 1)
            .map_or(Duration::ZERO, |i| self.block_ends[i]);
        end.saturating_sub(from) / n.max(1) as u32
    }

    /// The blocks in all that fit in the time: those done and as many more as the time left
    /// holds at the present pace; at most the budget's (all of the budget's before any block
    /// is done).
    fn fit(&self, blocks: usize) -> usize {
        if blocks == 0 {
            return self.budget.max_blocks;
        }
        let left = self.budget.max_time.saturating_sub(self.elapsed());
        let more = (left.as_secs_f64() / self.pace().as_secs_f64().max(1e-3)) as usize;
        blocks.saturating_add(more).min(self.budget.max_blocks)
    }

    /// What marks a run that stopped before its plan (a fault, with its context, or an
    /// interrupt); None for one that ended as planned. Takes the fault.
    pub fn partial(&mut self, engine: &Experiment, end: End) -> Option<Partial> {
        let reason = match end {
            End::Failed => self
                .fault
                .take()
                .map_or_else(|| "a fault".to_string(), |e| format!("{e:#}")),
            End::Interrupted => partial::INTERRUPTED.to_string(),
            End::Decided | End::Budget => return None,
        };
        // An error may quote a URL or a flow's last lines: no password goes into a report.
        let reason = crate::secret::scrub(&reason);
        Some(Partial::new(
            engine.blocks(),
            self.planned_blocks(engine),
            reason,
        ))
    }

    /// The blocks the run was to take: the engine's plan once made (at the first look),
    /// before it what fits in the time at the pace so far — what a partial report counts
    /// the blocks done against.
    pub(crate) fn planned_blocks(&self, engine: &Experiment) -> usize {
        if engine.blocks() >= FIRST_LOOK {
            engine.planned()
        } else {
            self.fit(engine.blocks()).max(FIRST_LOOK)
        }
    }

    /// The plan (made again before every look), the look, and whether to stop.
    fn after_block(
        &mut self,
        engine: &mut Experiment,
        on_look: &mut impl FnMut(&Look, Duration),
    ) -> Option<End> {
        let blocks = engine.blocks();
        let elapsed = self.elapsed();
        self.block_ends.push(elapsed);
        let spent =
            blocks >= self.budget.max_blocks || elapsed + self.pace() > self.budget.max_time;
        if engine.look_due() {
            engine.plan(self.fit(blocks));
            let last = spent || blocks >= engine.planned();
            let look = engine.look(last);
            on_look(&look, elapsed);
            if engine.done() {
                return Some(End::Decided);
            }
            if last {
                return Some(End::Budget);
            }
        } else if spent {
            return Some(End::Budget);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Design, MetricSpec, Rule};

    /// An arm whose n-th restart or n-th round fails (counted from 1; the restart that
    /// starts block b is restart b − 1, the first block's flows being started before).
    struct Failing {
        restarts: usize,
        rounds: usize,
        fail_restart: Option<usize>,
        fail_round: Option<usize>,
    }

    impl Arm for Failing {
        type Round = f64;
        fn restart(&mut self) -> anyhow::Result<()> {
            self.restarts += 1;
            if Some(self.restarts) == self.fail_restart {
                anyhow::bail!("the flow exited (exit status: 3)");
            }
            Ok(())
        }
        fn measure(&mut self, _: &Arc<AtomicBool>) -> anyhow::Result<Option<f64>> {
            self.rounds += 1;
            if Some(self.rounds) == self.fail_round {
                anyhow::bail!("a round did not complete (timed out)");
            }
            Ok(Some(100.0 + (self.rounds % 3) as f64))
        }
    }

    fn arm(fail_restart: Option<usize>, fail_round: Option<usize>) -> Failing {
        Failing {
            restarts: 0,
            rounds: 0,
            fail_restart,
            fail_round,
        }
    }

    fn engine() -> Experiment {
        Experiment::new(Design {
            arms: 2,
            contrasts: vec![(0, 1)],
            metrics: vec![MetricSpec {
                name: "FLOW".into(),
                higher_is_worse: true,
                rule: Rule::Difference { min_effect: 0.01 },
                floor: 0.0,
                adjusted: false,
            }],
            control: false,
            cycles_per_block: 2,
            alpha: 0.1,
            max_blocks: 40,
            precision: None,
            stop_on_worse: false,
        })
        .expect("design")
    }

    fn drive(arms: &mut [Failing]) -> (End, Experiment, Option<crate::report::partial::Partial>) {
        let mut e = engine();
        let mut run = Interleave::new(
            arms,
            Budget {
                max_time: Duration::from_secs(3600),
                max_blocks: 40,
            },
        );
        let figures = |r: &f64| Figures {
            values: vec![Some(*r)],
            control: None,
        };
        let end = run.drive(
            &mut e,
            figures,
            &Arc::new(AtomicBool::new(false)),
            |_, _| {},
        );
        let partial = run.partial(&e, end);
        (end, e, partial)
    }

    #[test]
    fn a_flow_that_will_not_start_after_two_blocks_ends_the_run_with_the_two_blocks() {
        let mut arms = [arm(None, None), arm(Some(2), None)];
        let (end, e, partial) = drive(&mut arms);
        assert_eq!(end, End::Failed);
        assert_eq!((e.blocks(), e.cycles()), (2, 4));
        let p = partial.expect("partial");
        assert_eq!(p.blocks_done, 2);
        assert_eq!(p.blocks_planned, 40);
        assert_eq!(p.reason, "the flow exited (exit status: 3)");
        // The blocks done still give each arm's figures and the change's blocks.
        let o = &e.outcomes()[0];
        assert_eq!(o.blocks, 2);
        assert!(!o.looked);
    }

    #[test]
    fn a_round_that_fails_mid_block_keeps_the_blocks_before_it() {
        // Arm 1's fifth round is the first of block 3 (two cycles a block).
        let mut arms = [arm(None, None), arm(None, Some(5))];
        let (end, e, partial) = drive(&mut arms);
        assert_eq!(end, End::Failed);
        assert_eq!(e.blocks(), 2);
        let p = partial.expect("partial");
        assert_eq!(
            (p.blocks_done, p.reason.as_str()),
            (2, "a round did not complete (timed out)")
        );
        // The failed cycle is not recorded: every arm has the same rounds.
        assert_eq!(e.values(0, 0).len(), e.values(1, 0).len());
    }

    #[test]
    fn a_run_that_ends_as_planned_is_not_partial() {
        let mut arms = [arm(None, None), arm(None, None)];
        let (end, _, partial) = drive(&mut arms);
        assert!(matches!(end, End::Decided | End::Budget), "{end:?}");
        assert_eq!(partial, None);
    }

    /// An arm on a hand-driven clock: each round costs `seconds(round)` of the run's time,
    /// and measures 100 × (1 + `change`) with a seeded spread of `sd` (ln).
    struct Timed {
        now: std::rc::Rc<std::cell::Cell<Duration>>,
        seconds: fn(usize) -> f64,
        change: f64,
        sd: f64,
        draws: crate::stats::Draws,
        rounds: usize,
    }

    impl Arm for Timed {
        type Round = f64;
        fn restart(&mut self) -> anyhow::Result<()> {
            Ok(())
        }
        fn measure(&mut self, _: &Arc<AtomicBool>) -> anyhow::Result<Option<f64>> {
            let spent = Duration::from_secs_f64((self.seconds)(self.rounds));
            self.now.set(self.now.get() + spent);
            self.rounds += 1;
            let ln = self.change.ln_1p() + self.sd * self.draws.normal();
            Ok(Some(100.0 * ln.exp()))
        }
    }

    #[test]
    fn a_gate_whose_first_plan_ends_undecided_with_time_left_goes_on_and_decides() {
        // Blocks of 4 pairs (8 rounds) that take 8 s while the machine is busy (the first 8
        // blocks), then 0.8 s: at the first look 64 s of the 120 s are gone and the plan is
        // 8 + 56 / 8 = 15 blocks. A plan fixed there ended the run undecided at block 15
        // with over a minute left; made again before every look, it grows with the pace and
        // the run goes on to decide B's +6 %.
        let now = std::rc::Rc::new(std::cell::Cell::new(Duration::ZERO));
        let busy_then_quiet: fn(usize) -> f64 = |round| if round < 32 { 1.0 } else { 0.1 };
        let arm = |change: f64, seed: u64| Timed {
            now: now.clone(),
            seconds: busy_then_quiet,
            change,
            sd: 0.06,
            draws: crate::stats::Draws::seeded(seed),
            rounds: 0,
        };
        let mut arms = [arm(0.0, 11), arm(0.06, 12)];
        let spec = MetricSpec {
            name: "FLOW".into(),
            higher_is_worse: true,
            rule: Rule::Gate { tolerance: 0.025 },
            floor: 0.0,
            adjusted: false,
        };
        let max_blocks = 250;
        let mut e = Experiment::new(crate::gate::ab::design(vec![spec], false, max_blocks))
            .expect("design");
        let budget = Budget {
            max_time: Duration::from_secs(120),
            max_blocks,
        };
        let clock = now.clone();
        let mut run = Interleave::with_clock(&mut arms, budget, Box::new(move || clock.get()));
        let mut looks: Vec<(usize, usize, Option<Option<crate::experiment::Finding>>)> = Vec::new();
        let end = run.drive(
            &mut e,
            |r: &f64| Figures {
                values: vec![Some(*r)],
                control: None,
            },
            &Arc::new(AtomicBool::new(false)),
            |look, _| looks.push((look.blocks, look.planned, look.items[0].decided)),
        );
        let (_, first_plan, _) = looks[0];
        assert_eq!(first_plan, 15, "{looks:?}");
        let at_first_plan = looks.iter().find(|l| l.0 == first_plan).expect("that look");
        assert_eq!(
            at_first_plan.2, None,
            "undecided where the first plan ended: {looks:?}"
        );
        assert!(looks.iter().any(|l| l.1 > 30), "the plan grew: {looks:?}");
        assert_eq!(end, End::Decided, "{looks:?}");
        assert!(e.blocks() > first_plan, "{looks:?}");
        assert_eq!(
            e.outcomes()[0].finding,
            Some(crate::experiment::Finding::Worse)
        );
        // Within the time given: no block was begun that would not fit.
        assert!(
            run.elapsed() <= Duration::from_secs(120),
            "{:?}",
            run.elapsed()
        );
    }
}
