//! What a live `oemputx compare` reports: each setting's figures (the median of its rounds
//! with a distribution-free interval), each setting against the first with the engine's
//! paired interval and finding, and the paper's Total Overhead % (the captured total's
//! change) with its interval.

use crate::experiment::{self, ArmSummary, Experiment, Finding, Rule};
use serde::Serialize;

/// The JSON schema tag of a live comparison.
pub const SCHEMA: &str = "oemputx.compare/1";

/// The metric the Total Overhead % is read from.
pub const TOTAL: &str = "captured";

/// A live comparison, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub start_utc: String,
    /// Every setting, the first being the base.
    pub settings: Vec<SettingRow>,
    /// One round's settings (the first setting's first round: message, tasks, broker…).
    pub run: super::Settings,
    /// The metrics compared: each group's µs/tran, and the captured total.
    pub metrics: Vec<String>,
    /// Each setting's figures, by metric (in `metrics` order).
    pub arms: Vec<Arm>,
    /// Each setting (but the first) against the first, by metric.
    pub changes: Vec<Change>,
    /// How the run went.
    pub run_shape: RunShape,
    /// Set when a fault or an interrupt stopped the run before its plan: the figures are
    /// the blocks done; null for a run that ended as planned.
    pub partial: Option<super::partial::Partial>,
    pub host: super::Host,
    /// With --profile: each setting against the base, function by function (self µs/msg
    /// with its interval from the rounds), largest absolute change first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profile_diff: Vec<crate::profiling::diff::FunctionChange>,
    /// Each setting's folded stacks, for the differential flame graphs.
    #[serde(skip)]
    pub profile_folded: Vec<crate::profiling::diff::Folded>,
}

/// A setting of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct SettingRow {
    pub name: String,
    /// The flow's command, its passwords masked.
    pub command: String,
}

/// One setting's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Arm {
    pub setting: String,
    pub rounds: usize,
    /// Per metric: median and the 95 % interval of its rounds (None without figures).
    pub figures: Vec<Option<ArmSummary>>,
    /// Per metric, the figure of every round in the order measured (cycle by cycle; the
    /// order of each cycle is in `run_shape.orders`): the run can be judged again offline.
    pub round_figures: Vec<Vec<Option<f64>>>,
    /// The control's figure (`run_shape.control`) in every round, when there is one.
    pub round_controls: Vec<Option<f64>>,
}

/// One setting against the base on one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub setting: String,
    pub against: String,
    pub metric: String,
    /// (other ÷ base − 1) × 100, the paired Hodges–Lehmann estimate, and its interval: the
    /// centre of the blocks' mean ln(other ÷ base) over the cycles, each cycle's pair
    /// adjusted by the control's change in it (`adjusted_by`). Not the ratio of the
    /// medians (`medians_change_pct`), which it can differ from, even in sign.
    pub change_pct: Option<f64>,
    pub low_pct: Option<f64>,
    pub high_pct: Option<f64>,
    /// The interval's confidence level.
    pub level: f64,
    /// (other's median ÷ base's median − 1) × 100, of the medians shown beside the change:
    /// each setting's rounds taken apart, not in pairs, nor adjusted.
    pub medians_change_pct: Option<f64>,
    /// The paired estimate of the pairs as measured, before the control's adjustment.
    pub unadjusted_change_pct: Option<f64>,
    /// The group each pair was adjusted by; null when the pairs were judged as measured
    /// (no control, or the control itself differed between the settings).
    pub adjusted_by: Option<String>,
    /// The smallest change reported, as applied (the minimum effect, widened by the floor).
    pub min_effect_pct: f64,
    /// `worse` (costs more), `better` (costs less), `within` (no difference as large as the
    /// minimum effect: the whole interval within it); null: inconclusive (the interval
    /// straddles the minimum effect, or was never judged), `reading` says why.
    pub finding: Option<Finding>,
    /// The finding in words.
    pub reading: String,
    /// Blocks it was decided after, when it was.
    pub decided_after: Option<usize>,
}

/// How the interleaved run went.
#[derive(Debug, Clone, Serialize)]
pub struct RunShape {
    pub blocks: usize,
    pub cycles: usize,
    pub cycles_per_block: usize,
    pub elapsed_s: f64,
    /// `decided`, `budget`, `interrupted` or `failed` (a fault; `partial` says which).
    pub ended: &'static str,
    pub control: Option<String>,
    pub floor_us: f64,
    /// The order the settings were measured in, cycle by cycle (indices into `settings`).
    pub orders: Vec<Vec<usize>>,
}

/// Each metric's change of every setting against the base, from the engine's outcomes;
/// `control` names the group the pairs were adjusted by, when they were.
pub fn changes(engine: &Experiment, names: &[String], control: Option<&str>) -> Vec<Change> {
    let d = engine.design();
    let pct = |x: f64| x.is_finite().then_some(100.0 * (x - 1.0));
    engine
        .outcomes()
        .iter()
        .map(|o| {
            let (base, other) = d.contrasts[o.contrast];
            let median = |arm: usize| engine.arm_summary(arm, o.metric, 0.05).map(|s| s.median);
            let medians = median(base)
                .zip(median(other))
                .filter(|(b, _)| *b > 0.0)
                .and_then(|(b, x)| pct(x / b));
            Change {
                setting: names[other].clone(),
                against: names[base].clone(),
                metric: d.metrics[o.metric].name.clone(),
                change_pct: o.interval.and_then(|i| pct(i.ratio)),
                // 0 is "unbounded" (too few blocks), not -100 %.
                low_pct: o.interval.filter(|i| i.low > 0.0).and_then(|i| pct(i.low)),
                high_pct: o.interval.and_then(|i| pct(i.high)),
                level: o.level,
                medians_change_pct: medians,
                unadjusted_change_pct: o.unadjusted_ratio.and_then(pct),
                adjusted_by: o.slope.and(control).map(String::from),
                min_effect_pct: 100.0 * o.rule.threshold(),
                finding: o.finding,
                reading: experiment::reading::difference(o, "costs more", "costs less"),
                decided_after: o.decided_after,
            }
        })
        .collect()
}

impl Change {
    /// Whether the change and the medians' ratio point opposite ways, each by enough to
    /// show at the table's 0.1 %: the case the text flags.
    pub(crate) fn sign_differs_from_medians(&self) -> bool {
        match (self.change_pct, self.medians_change_pct) {
            (Some(c), Some(m)) => c * m < 0.0 && c.abs() >= 0.05 && m.abs() >= 0.05,
            _ => false,
        }
    }
}

/// Each setting's figures, metric by metric.
pub fn arms(engine: &Experiment, names: &[String]) -> Vec<Arm> {
    let metrics = engine.design().metrics.len();
    names
        .iter()
        .enumerate()
        .map(|(a, name)| Arm {
            setting: name.clone(),
            rounds: engine.cycles(),
            figures: (0..metrics)
                .map(|m| engine.arm_summary(a, m, 0.05))
                .collect(),
            round_figures: (0..metrics).map(|m| engine.round_values(a, m)).collect(),
            round_controls: engine.round_controls(a),
        })
        .collect()
}

/// The engine's design for a comparison of `arms` settings against the first: each metric
/// judged by the difference rule at `min_effect`, floored at `floor_us`.
pub(crate) fn design(
    metrics: &[String],
    arms: usize,
    (min_effect, floor_us): (f64, f64),
    control: Option<&str>,
    max_blocks: usize,
) -> experiment::Design {
    experiment::Design {
        arms,
        contrasts: (1..arms).map(|i| (0, i)).collect(),
        metrics: metrics
            .iter()
            .map(|m| experiment::MetricSpec {
                name: m.clone(),
                higher_is_worse: true,
                rule: Rule::Difference { min_effect },
                floor: floor_us,
                adjusted: control.is_some_and(|c| c != m),
            })
            .collect(),
        control: control.is_some(),
        cycles_per_block: cycles_per_block(arms),
        alpha: experiment::family_alpha(metrics.len()),
        max_blocks,
        precision: None,
        stop_on_worse: false,
    }
}

/// Cycles per block: a whole balanced design (every order of the Williams square), and at
/// least four, as the A/B gate's blocks of four pairs.
pub fn cycles_per_block(arms: usize) -> usize {
    experiment::order::williams(arms).len().max(4)
}
