//! The regression gate's decisions, as pure code: from figures to verdicts, never a
//! process or a file. Three modes, one [`Decision`] shape:
//! - [`history`]: the current run against the spread of main's stored runs (a prediction
//!   interval), and, while a history holds fewer than three runs, [`stored`]: the current
//!   run's rounds against the newest run's (bootstrap interval of the ratio of medians and
//!   a Mann-Whitney test, criterion.rs's shape), whose regression stands only beyond the
//!   drift between runs ([`first`]);
//! - [`ab`]: two flows in interleaved rounds, judged by the experiment engine
//!   ([`crate::experiment`]) on paired log-ratios with repeated confidence intervals;
//! - [`instructions`]: instruction counts under callgrind, the least-disturbed of runs.
//!
//! [`crate::commands`] starts the processes and prints; [`crate::export::gate`] writes the
//! formats.

pub mod ab;
pub mod change_points;
pub mod first;
pub mod history;
pub mod instructions;
pub mod statistics;
pub mod stored;

use serde::Serialize;

/// A metric beyond CPU named bare (`--metric syncs`) is that figure of every group whose
/// rounds have it above zero: `GROUP:syncs` for each, in `groups`' order. Any other name is
/// itself. `values` gives a metric's values in the runs the gate reads.
pub(crate) fn expand_metric(
    name: &str,
    groups: &[String],
    values: impl Fn(&crate::report::saved::Metric) -> Vec<f64>,
) -> Result<Vec<String>, GateError> {
    // A growth changes sign (a set that shrank is not damage): no ratio to gate.
    if name.rsplit(':').next() == Some("rss_growth_bytes") {
        return Err(GateError::input(
            "--metric",
            format!(
                "'{name}': the resident set's growth per message changes sign, so no ratio of it can be gated; gate rss_bytes, or read a run's trend (--rounds 5 or more)"
            ),
        ));
    }
    if crate::report::saved::cost_metric(name).is_none() {
        return Ok(vec![name.to_string()]);
    }
    let each: Vec<String> = groups
        .iter()
        .filter(|g| g.as_str() != stored::UNGATED)
        .map(|g| format!("{g}:{name}"))
        .filter(|m| {
            let v = values(&crate::report::saved::Metric::named(m));
            !v.is_empty() && v.iter().any(|x| *x != 0.0)
        })
        .collect();
    if each.is_empty() {
        return Err(GateError::input(
            "--metric",
            format!(
                "'{name}': no group of the runs ({}) has this figure above zero in every run (a source that could not be read is null: see the report's accounting.beyond_cpu; reports made before oemputx measured it have none); name one group's as GROUP:{name}",
                groups.join(", ")
            ),
        ));
    }
    Ok(each)
}

/// The JSON schema tag of the gate's verdict.
pub const SCHEMA: &str = "oemputx.gate/1";

/// A gate that cannot judge what it was given: the user's input, exit 2.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("{flag}: {why}")]
    Input { flag: &'static str, why: String },
    /// A signal ended the planning (the exit is then 130: `exit_for_now`).
    #[error("interrupted by a signal while checking the runs' figures; nothing was judged")]
    Interrupted,
}

// The user's input (exit 2).
crate::usage_error!(GateError);

impl GateError {
    pub fn input(flag: &'static str, why: impl Into<String>) -> GateError {
        GateError::Input {
            flag,
            why: why.into(),
        }
    }
}

/// A metric's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Improvement,
    Regression,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Improvement => "improvement",
            Verdict::Regression => "REGRESSION",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// Which way is worse for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    Higher,
    Lower,
}

/// One metric's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub metric: String,
    pub unit: &'static str,
    pub base_median: f64,
    pub current_median: f64,
    /// median(current) / median(base), oriented so that above 1 is worse.
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The interval's confidence level (0.95 against a stored baseline; the deciding look's
    /// level in A/B; NaN where there is no interval, as for instruction counts).
    pub ci_level: f64,
    pub p_value: f64,
    pub tolerance: f64,
    pub base_rounds: usize,
    pub current_rounds: usize,
    pub current_min: f64,
    pub current_max: f64,
    pub verdict: Verdict,
    /// Why it is inconclusive and what would settle it.
    pub note: Option<String>,
    /// A/B only: the control group the pairs were adjusted by, and the slope used
    /// ([`control`]); absent when the look was judged unadjusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjusted_for: Option<Adjustment>,
}

/// The control variate of an A/B decision: each pair's ln(B ÷ A) less `slope` times the
/// same pair's ln(B ÷ A) of `group`.
#[derive(Debug, Clone, Serialize)]
pub struct Adjustment {
    pub group: String,
    pub slope: f64,
}

impl Decision {
    /// The figures every decision shows of the two sides (medians, rounds, the current
    /// side's range), not yet judged: inconclusive, with no interval.
    pub fn of(
        metric: &str,
        unit: &'static str,
        base: &[f64],
        current: &[f64],
        tolerance: f64,
    ) -> Decision {
        let (cmin, cmax) = current
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            });
        Decision {
            metric: metric.to_string(),
            unit,
            base_median: statistics::median(base),
            current_median: statistics::median(current),
            ratio: f64::NAN,
            ci_low: f64::NAN,
            ci_high: f64::NAN,
            ci_level: f64::NAN,
            p_value: f64::NAN,
            tolerance,
            base_rounds: base.len(),
            current_rounds: current.len(),
            current_min: cmin,
            current_max: cmax,
            verdict: Verdict::Inconclusive,
            note: None,
            adjusted_for: None,
        }
    }

    /// The estimate and its interval (oriented: above 1 is worse) at `level`.
    pub fn interval(mut self, ratio: f64, (low, high): (f64, f64), level: f64) -> Decision {
        self.ratio = ratio;
        self.ci_low = low;
        self.ci_high = high;
        self.ci_level = level;
        self
    }

    pub fn p(mut self, p_value: f64) -> Decision {
        self.p_value = p_value;
        self
    }

    /// The verdict and why.
    pub fn judged(mut self, verdict: Verdict, note: Option<String>) -> Decision {
        self.verdict = verdict;
        self.note = note;
        self
    }
}

/// What the gate found.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// [`SCHEMA`]: the JSON export's version.
    pub schema: &'static str,
    /// Which gate: `stored`, `ab` or `instructions`.
    pub mode: &'static str,
    pub baseline: String,
    pub current: String,
    pub decisions: Vec<Decision>,
    pub verdict: Verdict,
    /// A/B only: every measured round's figures, side by side, in the order run (the raw
    /// data behind the verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab_rounds: Option<AbRounds>,
    /// A/B only: the sequential run's plan, looks and why it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// Stored gate only: how many of main's runs the baseline holds (each metric's
    /// `base_median` is then the median of their medians, `base_rounds` the runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_runs: Option<usize>,
    /// Instruction gate only: the counts behind the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_counts: Option<InstructionCounts>,
    /// A/B with --profile: where the CPU per message changed, function by function.
    #[serde(flatten)]
    pub profile: crate::profiling::diff::Differential,
}

/// The counts of an instruction gate: per side and run, the instructions the flow executed
/// over `messages[0]`, `messages[1]` and `messages[2]` messages, each on a fresh process.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct InstructionCounts {
    pub messages: [u64; 3],
    pub a: Vec<[u64; 3]>,
    pub b: Vec<[u64; 3]>,
}

impl Outcome {
    /// A verdict of `mode` from its decisions, with nothing beside them.
    pub fn of(
        mode: &'static str,
        (baseline, current): (String, String),
        decisions: Vec<Decision>,
    ) -> Outcome {
        Outcome {
            schema: SCHEMA,
            mode,
            baseline,
            current,
            verdict: overall(&decisions),
            decisions,
            ab_rounds: None,
            sequential: None,
            baseline_runs: None,
            instruction_counts: None,
            profile: Default::default(),
        }
    }
}

/// The rounds of an A/B gate: pair i is `a[i]` and `b[i]`, run A first when `a_first[i]`.
#[derive(Debug, Clone, Serialize)]
pub struct AbRounds {
    pub a_first: Vec<bool>,
    pub a: Vec<crate::report::saved::SavedFigures>,
    pub b: Vec<crate::report::saved::SavedFigures>,
}

/// How an A/B gate's sequential run went: its plan, every look, and why it stopped. The
/// plan is made again before every look from how long blocks took, so that a run whose
/// blocks speed up goes on to use the time it was given.
#[derive(Debug, Clone, Serialize)]
pub struct Sequential {
    /// How the intervals hold their level over the looks, with references.
    pub method: &'static str,
    /// The two-sided error level of all the run's intervals together.
    pub alpha: f64,
    pub max_time_s: f64,
    /// `--max-rounds` when given (else the time alone bounds the run).
    pub max_rounds: Option<usize>,
    pub pairs_per_block: usize,
    pub blocks: usize,
    pub elapsed_s: f64,
    /// How long a block took at the end (the latest blocks' mean).
    pub seconds_per_block: f64,
    /// `decided` (every gated metric decided, or a regression found), `time` (the next
    /// block would not have fitted in --max-time), `rounds` (--max-rounds reached), `cap`
    /// (the most rounds the gate takes without --max-rounds, 2,000), `interrupted`.
    pub stopped: &'static str,
    pub looks: Vec<LookRecord>,
}

/// One look of a sequential run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LookRecord {
    pub look: usize,
    pub blocks: usize,
    /// The blocks planned in all at this look (those done and what the time left holds).
    pub planned: usize,
    pub elapsed_s: f64,
    /// The information fraction the look spent its error level up to.
    pub fraction: f64,
    /// The look's intervals' confidence level.
    pub level: f64,
}

impl LookRecord {
    /// What a look saw of the plan, `elapsed` into the run.
    pub fn of(look: &crate::experiment::Look, elapsed: std::time::Duration) -> LookRecord {
        LookRecord {
            look: look.boundary.look,
            blocks: look.blocks,
            planned: look.planned,
            elapsed_s: elapsed.as_secs_f64(),
            fraction: look.boundary.fraction,
            level: 1.0 - look.boundary.level,
        }
    }
}

/// The whole gate's verdict: any regression, else any inconclusive metric, else any
/// improvement, else pass.
pub(crate) fn overall(decisions: &[Decision]) -> Verdict {
    let any = |v| decisions.iter().any(|d| d.verdict == v);
    if any(Verdict::Regression) {
        Verdict::Regression
    } else if any(Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else if any(Verdict::Improvement) {
        Verdict::Improvement
    } else {
        Verdict::Pass
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::stored::{decide, reach};
    use super::*;

    /// Ten rounds around 100 with a realistic ±1.5% spread.
    pub(crate) fn rounds(scale: f64) -> Vec<f64> {
        [
            100.0, 101.2, 98.9, 100.4, 99.6, 101.5, 98.5, 100.1, 99.8, 100.9,
        ]
        .iter()
        .map(|x| x * scale)
        .collect()
    }

    fn verdict(base: &[f64], cur: &[f64]) -> Verdict {
        decide("FLOW", base, cur, 0.05, Worse::Higher).verdict
    }

    #[test]
    fn identical_samples_pass() {
        assert_eq!(verdict(&rounds(1.0), &rounds(1.0)), Verdict::Pass);
    }

    #[test]
    fn a_three_percent_shift_is_within_a_five_percent_tolerance() {
        let d = decide("FLOW", &rounds(1.0), &rounds(1.03), 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Pass, "{d:?}");
        assert!(d.p_value < 0.05, "the shift is real, only small: {d:?}");
    }

    #[test]
    fn a_ten_percent_shift_is_a_regression_and_its_mirror_an_improvement() {
        let d = decide("FLOW", &rounds(1.0), &rounds(1.10), 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        assert!(d.ci_low > 1.05);
        assert_eq!(verdict(&rounds(1.0), &rounds(0.88)), Verdict::Improvement);
        // For the rate, lower is worse.
        let r = decide("rate", &rounds(1.0), &rounds(0.88), 0.05, Worse::Lower);
        assert_eq!(r.verdict, Verdict::Regression, "{r:?}");
    }

    #[test]
    fn one_wild_outlier_does_not_make_a_regression() {
        let mut cur = rounds(1.0);
        cur[3] = 250.0;
        assert_eq!(verdict(&rounds(1.0), &cur), Verdict::Pass);
    }

    #[test]
    fn too_few_rounds_are_inconclusive_and_say_what_to_do() {
        let d = decide("FLOW", &[100.0], &[120.0], 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(d.note.as_deref().unwrap_or("").contains("--rounds 5"));
    }

    #[test]
    fn a_spread_too_wide_is_inconclusive() {
        let base = [100.0, 60.0, 140.0, 80.0, 120.0];
        let cur = [104.0, 64.0, 150.0, 84.0, 125.0];
        let d = decide("FLOW", &base, &cur, 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        assert!(d.note.as_deref().unwrap_or("").contains("more rounds"));
    }

    #[test]
    fn the_reach_grows_with_the_spread_and_shrinks_with_more_rounds() {
        let quiet = reach(&rounds(1.0), &rounds(1.0), 0.05).expect("reach");
        assert!(quiet > 0.05 && quiet < 0.07, "{quiet}");
        let wide: Vec<f64> = rounds(1.0)
            .iter()
            .map(|x| 100.0 + 5.0 * (x - 100.0))
            .collect();
        let noisy = reach(&wide, &wide, 0.05).expect("reach");
        assert!(noisy > quiet, "{noisy} {quiet}");
        let mut more = rounds(1.0);
        more.extend(rounds(1.0));
        assert!(reach(&more, &more, 0.05).expect("reach") < quiet);
        assert!(reach(&[1.0, 2.0], &rounds(1.0), 0.05).is_none());
    }
}
