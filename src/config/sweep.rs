//! The options of `oemputx sweep`, checked into a [`SweepConfig`]: the flow to start, the
//! ways of running N instances, the task counts, one round's settings (each task count's
//! checked before any flow starts), and how long the interleaved rounds may go on.

use super::flow_command::FlowCommand;
use super::formats::{Format, ResultKind};
use super::gate::parse_tolerance;
use super::options::RunOptions;
use super::{ConfigError, RunConfig, bad};
use std::path::PathBuf;
use std::time::Duration;

/// The precision a sweep stops at when not given: each N's processes ÷ threads interval
/// within ±3 %.
pub const PRECISION: f64 = 0.03;
/// The smallest difference between the modes a sweep reports when not given.
pub const MIN_EFFECT: f64 = 0.02;

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
    pub max_time: Duration,
    /// Stop once every N's ratio is known to ± this, e.g. `3%`.
    pub precision: Option<String>,
    /// The smallest difference reported, e.g. `2%`.
    pub min_effect: Option<String>,
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
    pub max_time: Duration,
    pub precision: f64,
    pub min_effect: f64,
}

impl SweepOptions {
    /// The sweep's outputs, checked against its formats and where they go.
    fn check_outputs(&self) -> Result<(), ConfigError> {
        let out = &self.run.outputs;
        // The one table of formats (a sweep is a table of points: no OpenMetrics).
        let exports = out.exports.clone();
        let mut given: Vec<(Format, &std::path::Path)> = exports.given().collect();
        given.extend(self.chart.as_deref().map(|p| (Format::Svg, p)));
        ResultKind::Sweep.check(&given)?;
        if out.decimal_comma {
            return Err(bad(
                "--decimal-comma",
                "a sweep's tables are written with decimal points (each cell a median with its interval): leave it out, or convert the TSV in the spreadsheet",
            ));
        }
        if out.save_baseline.is_some() {
            return Err(bad(
                "--save-baseline",
                "a sweep is not a run the gate can judge against: save a baseline from a run (oemputx ... --save-baseline FILE)",
            ));
        }
        let mut outputs = exports.by_flag();
        outputs.push(("--chart", self.chart.as_deref()));
        super::outputs::check(&outputs, None, &[])?;
        Ok(())
    }

    /// Check every point's settings (so that a bad one, more tasks than messages say, is
    /// reported before any flow starts) and the flow's command.
    pub fn build(&self) -> Result<SweepConfig, ConfigError> {
        let Some(&first) = self.tasks.first() else {
            return Err(bad("--tasks", "give the task counts, e.g. --tasks 1,2,4"));
        };
        if self.run.sample_stacks {
            // Not faked: a sweep's report has no place for each point's functions yet.
            return Err(bad(
                "--profile",
                "not yet for sweep: profile the point that matters with a run (oemputx --tasks N --profile …), or set two points against each other with oemputx compare --profile",
            ));
        }
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
        if self.modes.len() != 2 {
            return Err(bad(
                "--modes",
                "a sweep measures processes against threads at each N: give both modes (the default, threads,processes)",
            ));
        }
        if run.rounds != 1 {
            return Err(bad(
                "--rounds",
                "sweep runs its points in interleaved rounds itself (--max-time, --precision): leave --rounds out",
            ));
        }
        let precision = match &self.precision {
            Some(p) => parse_tolerance("--precision", p)?,
            None => PRECISION,
        };
        let min_effect = match &self.min_effect {
            Some(p) => parse_tolerance("--min-effect", p)?,
            None => MIN_EFFECT,
        };
        self.check_outputs()?;
        Ok(SweepConfig {
            max_time: self.max_time,
            precision,
            min_effect,
            flow,
            shown_cmd: crate::secret::scrub(&self.flow_cmd),
            modes: self.modes.clone(),
            chart: self.chart.clone(),
            task_counts: self.tasks.clone(),
            run,
        })
    }
}
