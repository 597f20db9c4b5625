//! An arm that is a flow oemputx starts itself: its processes on a request queue of their
//! own, both new each block, and a put/get round measured against them with their processes
//! (and their descendants) as the FLOW group. The A/B gate's sides, `compare`'s settings
//! and `sweep`'s points are flow arms.
//!
//! **Why a new queue each block.** A queue kept for the whole experiment carries lasting
//! state of its own into every round of its arm (the broker's process for it, where its
//! messages sit, how it batches deliveries), and the flow's and the broker's cost per
//! message follow it: an A/A compare whose two identical settings kept their queues for
//! five minutes called one of them 2.4 % cheaper [−3.6 %, −1.0 %], a difference already
//! there at the first look (lab/calibration/compare-20261203-0354). Made anew with the
//! processes, a queue's lasting state is one block's noise, as a process's is. So is where
//! a flow's stack lies: each block's flows get an environment padded to a random size
//! ([`LAYOUT_PAD`]), so that settings whose command lines differ in length do not keep an
//! alignment of their own for the whole run.

use super::Arm;
use crate::accounting::selector::{GroupSpec, Selector};
use crate::config::RunConfig;
use crate::config::flow_command::FlowCommand;
use crate::driver::Status;
use crate::flows::Flows;
use crate::report::Report;
use crate::transport::Endpoint;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The environment variable whose random length moves a flow's stack each block.
pub const LAYOUT_PAD: &str = "OEMPUTX_LAYOUT_PAD";

/// A random padding of 0 to 4095 bytes for a flow's environment. The environment's size
/// decides where a process's stack begins, and with it cache-line and page alignments that
/// can move a program's speed by a few per cent (Mytkowicz et al., "Producing wrong data
/// without doing anything obviously wrong!", ASPLOS 2009). Two settings whose command lines
/// differ by a few bytes would keep such a difference for the whole run as if it were
/// theirs; a new random size each block makes it noise that averages out, as a new process
/// does for its own lasting bias (Curtsinger and Berger's STABILIZER randomizes layout for
/// the same reason).
fn layout_pad() -> String {
    use std::hash::BuildHasher;
    // RandomState's keys are random per instance: a random number from std alone.
    let n = std::collections::hash_map::RandomState::new().hash_one(std::process::id()) % 4096;
    "x".repeat(n as usize)
}

/// How the FLOW group of an arm's rounds is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowGroup {
    /// The flow's processes and every descendant (a flow command that is a script).
    Tree,
    /// The flow's processes themselves.
    Pids,
    /// None added: the run's own groups say (the user named a FLOW group).
    Given,
}

/// One flow arm.
pub struct FlowArm {
    pub name: String,
    /// None: an arm of run options alone, served by the run's own responder on its own
    /// queue (compare's settings without a flow command): nothing to start or delete.
    cmd: Option<FlowCommand>,
    /// Arguments added to the flow's command (`--threads N`, a setting's own).
    extra: Vec<String>,
    processes: usize,
    /// Consumers to wait for before a block (processes × threads).
    ready: usize,
    group: FlowGroup,
    /// The run's settings, on the arm's queue of this block.
    pub cfg: RunConfig,
    /// The arm's queue name; each block's queue is this with `.bN`.
    queue_base: String,
    /// Blocks begun (the queue of block N is `queue_base.bN`).
    block: u64,
    base_groups: Vec<GroupSpec>,
    flows: Option<Flows>,
}

impl FlowArm {
    /// Start the arm's flow: `processes` copies of `cmd` with `extra`, on a request queue
    /// named after `cfg`'s (`.b1`, `.b2`, … a block), waiting for `ready` consumers.
    pub fn start(
        name: impl Into<String>,
        cmd: &FlowCommand,
        extra: Vec<String>,
        (processes, ready): (usize, usize),
        group: FlowGroup,
        cfg: RunConfig,
    ) -> anyhow::Result<FlowArm> {
        // The longest block queue name must be one the broker takes.
        cfg.on_own_queue(&format!("{}.b{}", cfg.request_queue, u32::MAX))?;
        let mut arm = FlowArm {
            name: name.into(),
            cmd: Some(cmd.clone()),
            extra,
            processes,
            ready,
            group,
            base_groups: cfg.groups.clone(),
            queue_base: cfg.request_queue.clone(),
            block: 0,
            cfg,
            flows: None,
        };
        arm.restart()?;
        Ok(arm)
    }

    /// An arm of run options alone: its rounds go to the queue `cfg` names, served by a
    /// responder oemputx did not start (the groups of `cfg` name it).
    pub fn run_only(name: impl Into<String>, cfg: RunConfig) -> FlowArm {
        FlowArm {
            name: name.into(),
            cmd: None,
            extra: Vec::new(),
            processes: 0,
            ready: 0,
            group: FlowGroup::Given,
            base_groups: cfg.groups.clone(),
            queue_base: cfg.request_queue.clone(),
            block: 0,
            cfg,
            flows: None,
        }
    }

    /// The running flow's process ids.
    pub fn pids(&self) -> Vec<i32> {
        self.flows.as_ref().map(Flows::pids).unwrap_or_default()
    }

    /// Stop the flow and delete its queue (the block's, made for it).
    pub fn stop(&mut self) {
        drop(self.flows.take());
        if self.cmd.is_some()
            && self.block > 0
            && let Err(e) = self
                .cfg
                .endpoint
                .kind()
                .delete_queue(&self.cfg.request_queue)
        {
            crate::say!(
                "Warning: could not delete the queue {} oemputx made: {e}",
                self.cfg.request_queue
            );
        }
    }
}

/// A command's arms, stopped together: every flow gets its SIGTERM at once, then each is
/// waited for and its queue deleted. Dropped one by one, each arm's flow had to end before
/// the next one's was even told to.
pub struct Arms(Vec<FlowArm>);

impl Arms {
    /// The arms as the interleaving drives them.
    pub fn as_mut_slice(&mut self) -> &mut [FlowArm] {
        &mut self.0
    }

    /// The arms, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, FlowArm> {
        self.0.iter()
    }
}

impl FromIterator<FlowArm> for Arms {
    fn from_iter<I: IntoIterator<Item = FlowArm>>(iter: I) -> Arms {
        Arms(iter.into_iter().collect())
    }
}

impl Drop for Arms {
    fn drop(&mut self) {
        for arm in &mut self.0 {
            if let Some(flows) = arm.flows.as_mut() {
                flows.signal();
            }
        }
    }
}

impl Drop for FlowArm {
    /// The flows first, then their queue: also after an error or Ctrl-C.
    fn drop(&mut self) {
        self.stop();
    }
}

impl Arm for FlowArm {
    type Round = Report;

    fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        self.block += 1;
        let Some(cmd) = &self.cmd else {
            return Ok(());
        };
        self.cfg.request_queue = format!("{}.b{}", self.queue_base, self.block);
        // Which arm and which block: what a partial report's reason must name.
        let context = || {
            format!(
                "starting the flow of {} for block {}",
                self.name, self.block
            )
        };
        let mut flows = Flows::start_with_env(
            cmd,
            &self.cfg.endpoint,
            &self.cfg.request_queue,
            self.processes,
            &self.extra,
            &[(LAYOUT_PAD, layout_pad())],
        )
        .with_context(context)?;
        flows.wait_ready(self.ready).with_context(context)?;
        self.cfg.groups = self.base_groups.clone();
        let selectors: Vec<Selector> = match self.group {
            FlowGroup::Tree => flows.pids().into_iter().map(Selector::Tree).collect(),
            FlowGroup::Pids => flows.pids().into_iter().map(Selector::Pid).collect(),
            FlowGroup::Given => Vec::new(),
        };
        if !selectors.is_empty() {
            self.cfg.groups.retain(|g| g.name != "FLOW");
            self.cfg.groups.insert(
                0,
                GroupSpec {
                    name: "FLOW".into(),
                    selectors,
                    host: None,
                },
            );
        }
        self.flows = Some(flows);
        Ok(())
    }

    fn measure(&mut self, interrupt: &Arc<AtomicBool>) -> anyhow::Result<Option<Report>> {
        let report = crate::measure::measure(&self.cfg, interrupt.clone())?;
        match report.status {
            Status::Completed => Ok(Some(report)),
            Status::Interrupted => Ok(None),
            other => anyhow::bail!(
                "a round of {} did not complete ({}: {}); the experiment stops",
                self.name,
                other.describe(),
                report.status_detail.as_deref().unwrap_or("")
            ),
        }
    }
}

/// The request queues a command made; deleted when dropped (after the flows have stopped).
pub struct MadeQueues {
    pub endpoint: Endpoint,
    pub queues: Vec<String>,
}

impl Drop for MadeQueues {
    fn drop(&mut self) {
        for q in &self.queues {
            if let Err(e) = self.endpoint.kind().delete_queue(q) {
                crate::say!("Warning: could not delete the queue {q} oemputx made: {e}");
            }
        }
    }
}
