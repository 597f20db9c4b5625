//! The regression gate's decision: pure functions from two samples per metric to a verdict.
//! `oemputx gate` (in [`crate::commands::gate`]) reads the reports and renders the result.
//!
//! For each metric (each group's total µs/tran, the corrected total, and optionally the rate
//! and the p99 round trip) it compares the rounds of a baseline report with the rounds of the
//! current one: the ratio of medians, its 95% bootstrap confidence interval, and a
//! Mann-Whitney U p-value (methods and references in [`crate::gate::statistics`]). The verdict:
//! - **regression** when p < 0.05 and the whole interval lies above 1 + tolerance;
//! - **improvement** when p < 0.05 and the whole interval lies below 1 − tolerance;
//! - **pass** when the interval's top is within 1 + tolerance;
//! - **inconclusive** otherwise (too few rounds, or an interval too wide), with what would
//!   make it conclusive.
//!
//! This is the shape of criterion.rs's change detection (a bootstrap interval checked against
//! a noise threshold, plus a significance test), applied to rounds of a real system rather
//! than to iterations of a function; gungraun's instruction counts would need no statistics
//! but cannot see the broker's or the database's CPU.

pub mod control;
pub mod render;
pub mod sequential;
pub mod statistics;

use crate::exit::Exit;
use serde::Serialize;
use statistics::{bootstrap_ratio_ci, mann_whitney_p, median};

/// Resamples for the bootstrap interval.
const RESAMPLES: usize = 10_000;
/// Significance level of the Mann-Whitney test.
const ALPHA: f64 = 0.05;
/// Fewer rounds than this on either side cannot give a verdict.
const MIN_ROUNDS: usize = 3;

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

/// Decide one metric from its two samples (oriented: `worse` says which way is bad).
pub fn decide(
    metric: &str,
    base: &[f64],
    current: &[f64],
    tolerance: f64,
    worse: Worse,
) -> Decision {
    let unit = match metric {
        "rate" => "tps",
        _ => "us/tran",
    };
    // For the rate, lower is worse: compare base/current so that above 1 is worse throughout.
    let (num, den) = match worse {
        Worse::Higher => (current, base),
        Worse::Lower => (base, current),
    };
    let (bm, cm) = (median(base), median(current));
    let ratio = median(num) / median(den);
    let ci = bootstrap_ratio_ci(den, num, RESAMPLES);
    let p = mann_whitney_p(base, current);
    let (lo, hi) = ci.unwrap_or((f64::NAN, f64::NAN));
    let (cmin, cmax) = current
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let few = base.len().min(current.len());
    let (verdict, note) = if few < MIN_ROUNDS || ci.is_none() {
        (
            Verdict::Inconclusive,
            Some(format!(
                "too few rounds ({} baseline, {} current): run both with --rounds 5 or more",
                base.len(),
                current.len()
            )),
        )
    } else if p < ALPHA && lo > 1.0 + tolerance {
        (Verdict::Regression, None)
    } else if p < ALPHA && hi < 1.0 - tolerance {
        (Verdict::Improvement, None)
    } else if hi <= 1.0 + tolerance {
        (Verdict::Pass, None)
    } else {
        let why = if lo > 1.0 + tolerance {
            format!(
                "the interval lies above +{:.1}% but the rounds differ too little to be sure (p = {p:.3})",
                100.0 * tolerance
            )
        } else {
            format!(
                "the 95% interval [{:+.1}%, {:+.1}%] straddles the +{:.1}% tolerance",
                100.0 * (lo - 1.0),
                100.0 * (hi - 1.0),
                100.0 * tolerance
            )
        };
        (
            Verdict::Inconclusive,
            Some(format!(
                "{why}: more rounds (--rounds) or longer rounds (--count, --probe) narrow it"
            )),
        )
    };
    Decision {
        metric: metric.to_string(),
        unit,
        base_median: bm,
        current_median: cm,
        ratio,
        ci_low: lo,
        ci_level: 0.95,
        ci_high: hi,
        p_value: p,
        tolerance,
        base_rounds: base.len(),
        current_rounds: current.len(),
        current_min: cmin,
        current_max: cmax,
        verdict,
        note,
        adjusted_for: None,
    }
}

/// What the gate found.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub baseline: String,
    pub current: String,
    pub decisions: Vec<Decision>,
    pub verdict: Verdict,
    /// A/B only: every measured round's figures, side by side, in the order run (the raw
    /// data behind the verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab_rounds: Option<AbRounds>,
    /// Instruction gate only: the counts behind the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_counts: Option<InstructionCounts>,
}

/// The counts of an instruction gate: per side and run, the instructions the flow executed
/// over `messages[0]`, `messages[1]` and `messages[2]` messages, each on a fresh process.
#[derive(Debug, Clone, Serialize)]
pub struct InstructionCounts {
    pub messages: [u64; 3],
    pub a: Vec<[u64; 3]>,
    pub b: Vec<[u64; 3]>,
}

/// The rounds of an A/B gate: pair i is `a[i]` and `b[i]`, run A first when `a_first[i]`.
#[derive(Debug, Clone, Serialize)]
pub struct AbRounds {
    pub a_first: Vec<bool>,
    pub a: Vec<crate::report::saved::SavedFigures>,
    pub b: Vec<crate::report::saved::SavedFigures>,
}

/// The whole gate's verdict: any regression, else any inconclusive metric, else any
/// improvement, else pass.
pub fn overall(decisions: &[Decision]) -> Verdict {
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

/// The smallest regression (as a fraction) the stored-baseline rule could call from these
/// rounds: the tolerance plus about the half-width of the interval of the ratio of medians,
/// estimated from each side's spread (1.4826 × the median absolute deviation of the log
/// values, a robust standard deviation), √(π/2) for a median's standard error against a
/// mean's, and 1.96 for 95 %. None with fewer than 3 rounds on a side.
pub fn reach(base: &[f64], current: &[f64], tolerance: f64) -> Option<f64> {
    let robust_var = |v: &[f64]| -> Option<f64> {
        if v.len() < MIN_ROUNDS || v.iter().any(|x| *x <= 0.0) {
            return None;
        }
        let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        let m = median(&logs);
        let dev: Vec<f64> = logs.iter().map(|x| (x - m).abs()).collect();
        let sd = 1.4826 * median(&dev);
        Some(sd * sd * std::f64::consts::FRAC_PI_2 / v.len() as f64)
    };
    let half = 1.96 * (robust_var(base)? + robust_var(current)?).sqrt();
    Some(((1.0 + tolerance).ln() + half).exp() - 1.0)
}

/// The exit code of a verdict.
pub fn exit_of(v: Verdict, strict: bool) -> Exit {
    match v {
        Verdict::Pass | Verdict::Improvement => Exit::Ok,
        Verdict::Regression => Exit::Regression,
        Verdict::Inconclusive if strict => Exit::Inconclusive,
        Verdict::Inconclusive => Exit::Ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten rounds around 100 with a realistic ±1.5% spread.
    pub(super) fn rounds(scale: f64) -> Vec<f64> {
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
