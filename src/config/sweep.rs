//! The options of `oemputx sweep`, checked into a [`SweepConfig`]: the flow to start, the
//! ways of running N instances, the task counts, and one run's settings, each task count's
//! checked before any flow starts.

use super::flow_command::FlowCommand;
use super::options::RunOptions;
use super::{ConfigError, RunConfig, bad};
use std::path::PathBuf;

/// How a sweep point runs its N flow instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepMode {
    /// One flow process with N threads (additional instances).
    Threads,
    /// N flow processes of one thread each (execution groups).
    Processes,
}

impl SweepMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SweepMode::Threads => "threads",
            SweepMode::Processes => "processes",
        }
    }

    /// The legend of the chart.
    pub fn describe(self) -> &'static str {
        match self {
            SweepMode::Threads => "1 process x N threads",
            SweepMode::Processes => "N processes x 1 thread",
        }
    }
}

/// What a sweep asks for, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOptions {
    /// The flow's command, without --threads.
    pub flow_cmd: String,
    pub modes: Vec<SweepMode>,
    /// Also write the SVG chart here.
    pub chart: Option<PathBuf>,
    /// The task counts N.
    pub tasks: Vec<usize>,
    /// One run's options (its `tasks` is ignored: `tasks` above says).
    pub run: RunOptions,
}

/// A sweep, checked.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub flow: FlowCommand,
    /// The flow's command as recorded: its passwords masked.
    pub shown_cmd: String,
    pub modes: Vec<SweepMode>,
    pub chart: Option<PathBuf>,
    pub task_counts: Vec<usize>,
    /// The run's settings at the first task count; [`RunConfig::with_tasks`] gives the others.
    pub run: RunConfig,
}

impl SweepOptions {
    /// Check every point's settings (so that a bad one, more tasks than messages say, is
    /// reported before any flow starts) and the flow's command.
    pub fn build(&self) -> Result<SweepConfig, ConfigError> {
        let Some(&first) = self.tasks.first() else {
            return Err(bad("--tasks", "give the task counts, e.g. --tasks 1,2,4"));
        };
        if self.tasks.contains(&0) {
            return Err(bad(
                "--tasks",
                "give task counts of 1 or more, e.g. --tasks 1,2,3,4",
            ));
        }
        let run = RunOptions {
            tasks: first,
            ..self.run.clone()
        }
        .build()?;
        for &n in &self.tasks {
            run.with_tasks(n)?;
        }
        if run.endpoint.kind().url_for_flow().is_none() {
            return Err(bad(
                "--qmgr",
                "sweep starts flows on a broker: give an amqp:// URL or a profile such as RABBIT",
            ));
        }
        let flow = FlowCommand::parse("--flow-cmd", &self.flow_cmd)?;
        if flow.sets("--threads") {
            return Err(bad(
                "--flow-cmd",
                "must not set --threads: sweep sets it for each point",
            ));
        }
        Ok(SweepConfig {
            flow,
            shown_cmd: crate::secret::scrub(&self.flow_cmd),
            modes: self.modes.clone(),
            chart: self.chart.clone(),
            task_counts: self.tasks.clone(),
            run,
        })
    }
}
