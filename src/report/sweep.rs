//! What `oemputx sweep` reports: every (N, mode) point measured as an arm of the experiment
//! engine in interleaved rounds — each point's medians with their intervals — and per N the
//! ratio processes ÷ threads with its paired interval and what it allows.

use crate::config::sweep::SweepMode;
use crate::experiment::{ArmSummary, Finding};
use serde::Serialize;

/// The JSON schema tag of a sweep.
pub const SCHEMA: &str = "oemputx.sweep/2";

/// A whole sweep, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub schema: &'static str,
    pub label: String,
    pub start_utc: String,
    /// The flow's command, its passwords masked.
    pub flow_cmd: String,
    /// One round's settings (the first point's first round).
    pub settings: super::Settings,
    pub points: Vec<Point>,
    /// Per N and metric: processes ÷ threads.
    pub ratios: Vec<ModeRatio>,
    pub run_shape: RunShape,
    /// Set when a fault or an interrupt stopped the sweep before its plan: the figures are
    /// the blocks done; null for a sweep that ended as planned.
    pub partial: Option<super::partial::Partial>,
    pub host: super::Host,
}

/// One (N, mode) point: the medians of its rounds with their 95 % intervals.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub tasks: usize,
    pub mode: SweepMode,
    pub flow_processes: usize,
    pub flow_threads_each: usize,
    pub rounds: usize,
    pub rate_tps: Option<ArmSummary>,
    pub round_trip_mean_us: Option<ArmSummary>,
    /// Each group's total µs per transaction (the driver as DRIVER).
    pub groups: Vec<GroupFigure>,
    pub captured_us_per_tran: Option<ArmSummary>,
    pub corrected_us_per_tran: Option<ArmSummary>,
    /// Per metric of `run_shape.metrics`, the figure of every round in the order measured:
    /// the sweep can be judged again offline.
    pub round_figures: Vec<Vec<Option<f64>>>,
    /// The control's figure (`run_shape.control`) in every round.
    pub round_controls: Vec<Option<f64>>,
}

/// A group's µs/tran at a point.
#[derive(Debug, Clone, Serialize)]
pub struct GroupFigure {
    pub name: String,
    pub us_per_tran: Option<ArmSummary>,
}

/// At one N, processes ÷ threads for one metric.
#[derive(Debug, Clone, Serialize)]
pub struct ModeRatio {
    pub tasks: usize,
    pub metric: String,
    /// The paired Hodges–Lehmann estimate of processes ÷ threads, and its interval.
    pub ratio: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub level: f64,
    /// For a cost, `worse`: processes cost more; for the rate, `worse`: processes are
    /// slower. `within`: no difference as large as `min_effect_pct` (the whole interval
    /// within it); null: inconclusive (the interval straddles it, or was never judged),
    /// `reading` says why.
    pub finding: Option<Finding>,
    pub min_effect_pct: f64,
    pub reading: String,
    /// The control each pair was adjusted by (`DRIVER`); null when the interval is the
    /// plain pairs': the control itself differed between the two points (a flow that
    /// answers differently moves the driver's cost too), so it could not be used.
    pub adjusted_by: Option<String>,
}

/// How the interleaved run went.
#[derive(Debug, Clone, Serialize)]
pub struct RunShape {
    pub blocks: usize,
    pub cycles: usize,
    pub cycles_per_block: usize,
    pub elapsed_s: f64,
    /// `decided` (every ratio decided or as precise as asked), `budget`, `interrupted`,
    /// `failed` (a fault; `partial` says which).
    pub ended: &'static str,
    pub precision_pct: f64,
    /// The engine's metrics, in the order of each point's `round_figures`.
    pub metrics: Vec<String>,
    /// The control variate's name (each pair's ratio adjusted by its change).
    pub control: String,
}

/// How a ratio's difference beyond the minimum effect is said, for a cost (`rate` false)
/// or the rate: (worse, better), for [`crate::experiment::reading::difference`], which
/// compare's changes are read by too.
pub fn words(rate: bool) -> (&'static str, &'static str) {
    if rate {
        ("processes are slower", "processes are faster")
    } else {
        (
            "processes cost more per message",
            "processes cost less per message",
        )
    }
}
