//! The stored-baseline gate's decision: the current run's rounds against a baseline
//! report's, metric by metric — the ratio of medians, its 95 % bootstrap interval and a
//! Mann-Whitney U p-value ([`super::statistics`] has the methods and references):
//! - **regression** when p < 0.05 and the whole interval lies above 1 + tolerance;
//! - **improvement** when p < 0.05 and the whole interval lies below 1 − tolerance;
//! - **pass** when the interval's top is within 1 + tolerance;
//! - **inconclusive** otherwise (too few rounds, or an interval too wide), with what would
//!   make it conclusive.
//!
//! This is the shape of criterion.rs's change detection applied to rounds of a real system.
//! Its interval assumes the rounds within a run show the spread between runs; on a machine
//! that drifts they do not, which [`reach`] says up front (docs/gate.md).

use super::statistics::{bootstrap_ratio_ci, mann_whitney_p, median, robust_log_sd, smallest_p};
use super::{Decision, GateError, Verdict, Worse};
use crate::report::saved::{Metric, Saved};

/// Resamples for the bootstrap interval.
const RESAMPLES: usize = 10_000;
/// Significance level of the Mann-Whitney test.
const ALPHA: f64 = 0.05;
/// Fewer rounds than this on either side cannot give a verdict.
const MIN_ROUNDS: usize = 3;

/// Decide one metric from its two samples (oriented: `worse` says which way is bad).
pub(crate) fn decide(
    metric: &str,
    base: &[f64],
    current: &[f64],
    tolerance: f64,
    worse: Worse,
) -> Decision {
    let unit = crate::report::saved::Metric::named(metric).unit();
    // For the rate, lower is worse: compare base/current so that above 1 is worse throughout.
    let (num, den) = match worse {
        Worse::Higher => (current, base),
        Worse::Lower => (base, current),
    };
    let ratio = median(num) / median(den);
    let ci = bootstrap_ratio_ci(den, num, RESAMPLES);
    let p = mann_whitney_p(base, current);
    let (lo, hi) = ci.unwrap_or((f64::NAN, f64::NAN));
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
        let floor_p = smallest_p(base.len(), current.len());
        let why = if floor_p >= ALPHA {
            format!(
                "{} baseline and {} current rounds cannot reach p < {ALPHA} (the smallest two-sided p they can give is {floor_p:.3}), so no change can be called: run both with --rounds 5 or more",
                base.len(),
                current.len()
            )
        } else if lo > 1.0 + tolerance {
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
    Decision::of(metric, unit, base, current, tolerance)
        .interval(ratio, (lo, hi), 0.95)
        .p(p)
        .judged(verdict, note)
}

/// The smallest regression (as a fraction) the stored-baseline rule could call from these
/// rounds: the tolerance plus about the half-width of the interval of the ratio of medians,
/// estimated from each side's spread (1.4826 × the median absolute deviation of the log
/// values, a robust standard deviation), √(π/2) for a median's standard error against a
/// mean's, and 1.96 for 95 %. None with fewer than 3 rounds on a side.
pub fn reach(base: &[f64], current: &[f64], tolerance: f64) -> Option<f64> {
    let robust_var = |v: &[f64]| -> Option<f64> {
        if v.len() < MIN_ROUNDS {
            return None;
        }
        let sd = robust_log_sd(v)?;
        Some(sd * sd * std::f64::consts::FRAC_PI_2 / v.len() as f64)
    };
    let half = 1.96 * (robust_var(base)? + robust_var(current)?).sqrt();
    Some(((1.0 + tolerance).ln() + half).exp() - 1.0)
}

/// The group shown but not gated unless named: oemputx's own cost.
pub const UNGATED: &str = "DRIVER";

/// The metrics to gate and their tolerances: every group main's runs (`runs`, the baseline's
/// history, newest last) and the current run all have but DRIVER, the CPU total, and the
/// metrics named (DRIVER among them if named).
pub(crate) fn plan<'a>(
    named: impl Iterator<Item = &'a String>,
    tolerance: impl Fn(&str) -> f64,
    runs: &[Saved],
    current: &Saved,
) -> Result<Vec<(String, f64)>, GateError> {
    let Some(base) = runs.last() else {
        return Ok(Vec::new());
    };
    let all = || runs.iter().chain(std::iter::once(current));
    // Each run's names once, as sets: asked of every group of every run, the lists made
    // planning quadratic in the groups.
    let names: Vec<std::collections::HashSet<String>> = all()
        .map(|s| s.group_names().into_iter().collect())
        .collect();
    if crate::signals::interrupted() {
        return Err(GateError::Interrupted);
    }
    let mut metrics: Vec<String> = base
        .group_names()
        .into_iter()
        .filter(|g| names.iter().all(|n| n.contains(g)) && g != UNGATED)
        .collect();
    // The corrected total when every round of every run has one (a round too short for
    // /proc/stat's ticks, or too busy a machine, has no capture ratio), else the captured
    // total. Checking the newest run only made a history whose older run lacked it in one
    // round an error.
    let total = if all().all(|s| s.require(&Metric::Corrected).is_ok()) {
        "corrected"
    } else {
        "captured"
    };
    if !base.samples(&Metric::named(total)).is_empty() {
        metrics.push(total.to_string());
    }
    let mut expanded = Vec::new();
    for m in named {
        expanded.extend(super::expand_metric(m, &base.group_names(), |metric| {
            // Missing in any run leaves the group's figure out; zero in all of them too
            // (expand_metric: none made, none to judge), but zero on main and some now is
            // judged.
            let per_run: Vec<Vec<f64>> = all().map(|s| s.samples(metric)).collect();
            if per_run.iter().any(Vec::is_empty) {
                Vec::new()
            } else {
                per_run.concat()
            }
        })?);
    }
    for m in &expanded {
        if !metrics.contains(m) {
            // A metric the user named must be in every report: a typo is not a pass.
            for saved in all() {
                saved.require(&Metric::named(m)).map_err(|e| {
                    GateError::input(
                        "--metric",
                        format!(
                            "'{m}': {e}; gate on a group of the runs ({}), captured, corrected, rate, p99 or a figure beyond CPU (disk_write_bytes, syncs, …: docs/gate.md)",
                            base.group_names().join(", ")
                        ),
                    )
                })?;
            }
            metrics.push(m.clone());
        }
    }
    // Every figure of every run: seconds for a history of thousands of groups, so a signal
    // ends it.
    for m in &metrics {
        if crate::signals::interrupted() {
            return Err(GateError::Interrupted);
        }
        for saved in all() {
            check_values(saved, m)?;
        }
    }
    Ok(metrics
        .into_iter()
        .map(|m| {
            let t = tolerance(&m);
            (m, t)
        })
        .collect())
}

/// A metric's figures must be positive numbers: a negative, infinite or missing-as-zero
/// figure in every round is a damaged (or hand-edited) report, not something to judge.
fn check_values(saved: &Saved, metric: &str) -> Result<(), GateError> {
    let v = saved.samples(&Metric::named(metric));
    let bad = v.iter().find(|x| !x.is_finite() || **x < 0.0);
    let why = if let Some(x) = bad {
        format!(
            "{metric} is {x} in {}: a report's figures are never negative or infinite; it is damaged, make it again",
            saved.path.display()
        )
    } else if !v.is_empty()
        && v.iter().all(|x| *x == 0.0)
        // A count beyond CPU may be none (no sync a message): going from none to some is
        // judged as such.
        && !matches!(Metric::named(metric), Metric::Cost { .. })
    {
        format!(
            "{metric} is 0 in every round of {}: nothing to compare a change with; leave the group out of the runs, or check its selector",
            saved.path.display()
        )
    } else {
        return Ok(());
    };
    Err(GateError::input("--baseline", why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A saved run of two rounds, with the corrected total each round has.
    fn run(corrected: [Option<f64>; 2]) -> Saved {
        let round = |c: Option<f64>| {
            json!({"rate_tps": 100.0, "round_trip_us": {"p99": 10.0},
                "captured_us_per_tran": 5.0, "corrected_us_per_tran": c,
                "groups": [{"name": "FLOW", "total_us_per_tran": 4.0}]})
        };
        let mut r = round(corrected[0]);
        r["schema"] = json!(crate::report::SCHEMA);
        r["settings"] = json!({"transport": "amqp", "message_source": "m", "msg_bytes_max": 630,
            "tasks": 1, "persistent": false, "syncpoint": false, "msgs_per_loop": 1});
        r["rounds"] = json!([round(corrected[0]), round(corrected[1])]);
        Saved::from_json("r.json".into(), r).expect("valid")
    }

    fn names(plan: Vec<(String, f64)>) -> Vec<String> {
        plan.into_iter().map(|(m, _)| m).collect()
    }

    #[test]
    fn the_corrected_total_is_gated_only_when_every_run_of_main_has_it_in_every_round() {
        let full = run([Some(6.0), Some(6.0)]);
        let gap = run([Some(6.0), None]);
        let none = std::iter::empty::<&String>;
        let p = plan(none(), |_| 0.05, &[full.clone(), full.clone()], &full).expect("plan");
        assert_eq!(names(p), ["FLOW", "corrected"]);
        // An older run of main with one round too short for a capture ratio: the captured
        // total, not an error (it was exit 2 when only the newest run was looked at).
        let p = plan(none(), |_| 0.05, &[gap, full.clone()], &full).expect("plan");
        assert_eq!(names(p), ["FLOW", "captured"]);
    }
}
