//! Interleaved rounds: the glue between the experiment engine ([`crate::experiment`]) and
//! what measures. Each arm measures one round when asked (a put/get run against its own
//! flow on its own request queue, a pub/sub cell, …) and starts fresh processes when a
//! block begins; [`Interleave::drive`] runs cycles in the engine's order, plans the blocks
//! that fit in the time allowed (from how long blocks took, never from what they
//! measured), looks after every block from the first look on, and stops when the engine
//! is done, the budget is spent or the user interrupts. The A/B gate, `compare` and `sweep`
//! run on it.

pub mod flow_arm;

use crate::experiment::{Experiment, FIRST_LOOK, Figures, Look};
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

/// Why an experiment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The engine decided everything it could.
    Decided,
    /// The time or the blocks ran out first.
    Budget,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// The rounds of an experiment under way.
pub struct Interleave<'a, A: Arm> {
    arms: &'a mut [A],
    budget: Budget,
    started: Instant,
    /// Every round each arm measured, in order.
    pub rounds: Vec<Vec<A::Round>>,
    /// The order of every cycle measured.
    pub orders: Vec<Vec<usize>>,
}

impl<'a, A: Arm> Interleave<'a, A> {
    pub fn new(arms: &'a mut [A], budget: Budget) -> Interleave<'a, A> {
        let n = arms.len();
        Interleave {
            arms,
            budget,
            started: Instant::now(),
            rounds: (0..n).map(|_| Vec::new()).collect(),
            orders: Vec::new(),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Measure one cycle in `order`; false when interrupted (the cycle is then dropped).
    pub fn cycle(&mut self, order: &[usize], interrupt: &Arc<AtomicBool>) -> anyhow::Result<bool> {
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
    pub fn record_last(
        &self,
        engine: &mut Experiment,
        figures: &impl Fn(&A::Round) -> Figures,
    ) -> anyhow::Result<bool> {
        Ok(engine.record(self.last_figures(figures))?)
    }

    /// Cycles until the engine is done, the budget is spent or the user interrupts;
    /// `on_look` sees every look. A block is begun only when it is expected to end within
    /// the time; the arms restart between blocks.
    pub fn drive(
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

    /// The plan at the first look, the look, and whether to stop.
    fn after_block(
        &mut self,
        engine: &mut Experiment,
        on_look: &mut impl FnMut(&Look, Duration),
    ) -> Option<End> {
        let blocks = engine.blocks();
        let elapsed = self.started.elapsed();
        let per_block = elapsed / blocks.max(1) as u32;
        let spent = blocks >= self.budget.max_blocks || elapsed + per_block > self.budget.max_time;
        if blocks == FIRST_LOOK {
            let fit =
                (self.budget.max_time.as_secs_f64() / per_block.as_secs_f64().max(1e-3)) as usize;
            engine.plan(fit.min(self.budget.max_blocks));
        }
        if engine.look_due() {
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
