//! Where an interleaved comparison (`compare`, `sweep`) stopped short of its plan, and why:
//! a fault or an interrupt after some blocks still gives a report of the blocks measured,
//! and this is what marks it partial in every output that carries it, so that a table of
//! two blocks cannot pass for a whole run.

use serde::Serialize;

/// A run that stopped before its plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Partial {
    /// Blocks measured to their end: every interval is over these.
    pub blocks_done: usize,
    /// The blocks the run was to take: the plan made at the first look, before it what
    /// fitted in the time at the pace of the blocks done.
    pub blocks_planned: usize,
    /// What stopped it: the error with its context, or the interrupt.
    pub reason: String,
}

impl Partial {
    /// A partial run of `blocks_done` of `blocks_planned` blocks, stopped by `reason`.
    pub fn new(blocks_done: usize, blocks_planned: usize, reason: impl Into<String>) -> Partial {
        Partial {
            blocks_done,
            blocks_planned: blocks_planned.max(blocks_done),
            reason: reason.into(),
        }
    }

    /// The line every text output carries: `partial: stopped after N of M blocks: REASON`.
    pub fn line(&self) -> String {
        format!(
            "partial: stopped after {} of {} blocks: {}",
            self.blocks_done, self.blocks_planned, self.reason
        )
    }
}

/// What an interrupt is called in a partial report.
pub const INTERRUPTED: &str = "interrupted (Ctrl-C or SIGTERM)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_blocks_done_of_the_plan_and_the_reason() {
        let p = Partial::new(2, 50, "starting the flow of b for block 3: the flow exited");
        assert_eq!(
            p.line(),
            "partial: stopped after 2 of 50 blocks: starting the flow of b for block 3: the flow exited"
        );
        // A plan below what was done (a plan made before a faster pace) is never shown.
        assert_eq!(Partial::new(9, 8, "x").blocks_planned, 9);
    }
}
