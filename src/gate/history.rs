//! The stored gate against a *history* of main's runs, as pure code: the branch's run is
//! judged against the spread of main's runs — their drift included — not against the
//! rounds of one run, which share one window's weather and so understate how far an
//! unchanged build moves from run to run (docs/gate.md has the measurements).
//!
//! **The rule.** Each of main's n runs gives one figure per metric, the median of its
//! rounds; on the log scale their centre is c = the median of the n, and their spread s the
//! larger of their standard deviation and 1.4826 × their median absolute deviation (the
//! second is robust to one odd run, the first does not collapse when three runs happen to
//! agree, and the larger errs towards "cannot tell"). The branch's run is one more draw:
//! if nothing changed, its log figure x lies within c ± k with 95 % probability, k = t ·
//! s · √(1 + 1/n) (a prediction interval; t the Student quantile with n − 1 degrees of
//! freedom). With d = x − c (oriented: above 0 is worse) and τ = ln(1 + tolerance):
//! - **inconclusive** when k > τ: main's own drift is wider than the tolerance, so a change
//!   of the tolerance cannot be told from drift — never a regression, whatever d;
//! - **regression** when d − k > τ (and the change exceeds the floor in µs/tran): worse than
//!   the tolerance beyond any drift main has shown;
//! - **improvement** when d + k < −τ;
//! - **pass** when d + k ≤ τ;
//! - **inconclusive** otherwise.
//!
//! A false alarm needs an unchanged run beyond the one-sided 2.5 % tail of main's drift
//! *and* the tolerance beyond it. With fewer than [`MIN_RUNS`] runs there is no spread of
//! runs to judge by: the rounds rule of [`super::stored`] decides, and [`super::first`]
//! lets its regression stand only beyond a measured bound on the drift between runs.

use super::statistics::{median, robust_log_sd};
use super::{Decision, Verdict, Worse};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Fewer runs than this in a history give no spread between runs.
pub const MIN_RUNS: usize = 3;

/// Where main's runs put an unchanged run's figure, on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// The centre: the median of the runs' log figures.
    pub centre: f64,
    /// The runs' spread (log scale).
    pub spread: f64,
    /// The prediction interval's half-width k.
    pub half: f64,
    pub runs: usize,
}

impl Prediction {
    /// From each of main's runs' figure (the median of its rounds); None with fewer than
    /// [`MIN_RUNS`] runs or a figure that is not positive.
    pub fn of(run_figures: &[f64]) -> Option<Prediction> {
        let n = run_figures.len();
        if n < MIN_RUNS || run_figures.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
            return None;
        }
        let logs: Vec<f64> = run_figures.iter().map(|x| x.ln()).collect();
        let centre = median(&logs);
        let mad = robust_log_sd(run_figures)?;
        let mean = logs.iter().sum::<f64>() / n as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let spread = sd.max(mad);
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|d| d.inverse_cdf(0.975))
            .unwrap_or(f64::INFINITY);
        Some(Prediction {
            centre,
            spread,
            half: t * spread * (1.0 + 1.0 / n as f64).sqrt(),
            runs: n,
        })
    }

    /// The drift band as a fraction: an unchanged run lands within ± this of the centre.
    pub(crate) fn band(&self) -> f64 {
        self.half.exp() - 1.0
    }

    /// The smallest regression the rule calls, as a fraction; None when the drift band is
    /// wider than the tolerance (every verdict short of pass is then inconclusive).
    pub fn reach(&self, tolerance: f64) -> Option<f64> {
        let tau = (1.0 + tolerance).ln();
        (self.half <= tau).then(|| (tau + self.half).exp() - 1.0)
    }
}

/// Judge one metric: `run_figures` are main's runs' figures (each the median of its
/// rounds), `current` this run's rounds. `floor` is the smallest change in the metric's own
/// unit that is reported as a regression at all (µs/tran metrics only).
pub(crate) fn decide(
    metric: &str,
    unit: &'static str,
    run_figures: &[f64],
    current: &[f64],
    tolerance: f64,
    (worse, floor): (Worse, Option<f64>),
) -> Option<Decision> {
    let p = Prediction::of(run_figures)?;
    let cur = median(current);
    let base = p.centre.exp();
    let shown = Decision::of(metric, unit, run_figures, current, tolerance);
    if !(cur > 0.0 && cur.is_finite()) {
        return Some(shown.judged(
            Verdict::Inconclusive,
            Some(format!("{metric} is {cur} in this run: nothing to judge")),
        ));
    }
    let sign = match worse {
        Worse::Higher => 1.0,
        Worse::Lower => -1.0,
    };
    let d = sign * (cur.ln() - p.centre);
    let tau = (1.0 + tolerance).ln();
    let k = p.half;
    let pct = |x: f64| 100.0 * (x.exp() - 1.0);
    let drift = format!(
        "main's {} runs put an unchanged run within ±{:.1}% of their median",
        p.runs,
        100.0 * p.band()
    );
    let beyond_floor = floor.is_none_or(|f| sign * (cur - base) > f);
    let (verdict, note) = if k > tau {
        (
            Verdict::Inconclusive,
            Some(format!(
                "{drift}, wider than the ±{:.1}% tolerance, so a change of the tolerance cannot be told from drift (this run {:+.1}%): gate with --tolerance {:.0}% or more, or quiet the machine (docs/gate.md)",
                100.0 * tolerance,
                pct(d),
                (100.0 * p.band()).ceil()
            )),
        )
    } else if d - k > tau && beyond_floor {
        (Verdict::Regression, Some(drift))
    } else if d + k < -tau {
        (Verdict::Improvement, Some(drift))
    } else if d + k <= tau || !beyond_floor {
        (Verdict::Pass, None)
    } else {
        (
            Verdict::Inconclusive,
            Some(format!(
                "{drift}; this run's {:+.1}% could be the tolerance's +{:.1}% or drift: more runs of main in the history narrow the band",
                pct(d),
                100.0 * tolerance
            )),
        )
    };
    // The interval is where the true change lies, given main's drift: d ± k.
    let ratio = d.exp();
    Some(
        shown
            .interval(ratio, ((d - k).exp(), (d + k).exp()), 0.95)
            .judged(verdict, note),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten of main's runs drifting ±3 % around 100.
    fn history(scale: f64) -> Vec<f64> {
        [
            100.0, 103.0, 97.5, 101.2, 98.8, 102.1, 99.4, 100.6, 96.9, 101.8,
        ]
        .iter()
        .map(|x| x * scale)
        .collect()
    }

    fn verdict(hist: &[f64], current: f64, tolerance: f64) -> Verdict {
        decide(
            "FLOW",
            "us/tran",
            hist,
            &[current * 0.99, current, current * 1.01],
            tolerance,
            (Worse::Higher, Some(0.5)),
        )
        .expect("enough runs")
        .verdict
    }

    #[test]
    fn a_run_within_mains_drift_passes_and_one_beyond_drift_and_tolerance_is_a_regression() {
        let h = history(1.0);
        let p = Prediction::of(&h).expect("runs");
        assert!(p.band() > 0.03 && p.band() < 0.07, "{p:?}");
        assert_eq!(verdict(&h, 100.0, 0.10), Verdict::Pass);
        assert_eq!(verdict(&h, 103.5, 0.10), Verdict::Pass);
        // Between: could be the tolerance or drift.
        assert_eq!(verdict(&h, 110.0, 0.10), Verdict::Inconclusive);
        assert_eq!(verdict(&h, 125.0, 0.10), Verdict::Regression);
        assert_eq!(verdict(&h, 80.0, 0.10), Verdict::Improvement);
        let reach = p.reach(0.10).expect("narrower than the tolerance");
        assert!(reach > 0.13 && reach < 0.18, "{reach}");
    }

    #[test]
    fn drift_wider_than_the_tolerance_is_inconclusive_never_a_regression() {
        let h = history(1.0);
        // Even +50 %: the drift band (about ±6 %) is wider than 2 %.
        let d = decide("FLOW", "us/tran", &h, &[150.0], 0.02, (Worse::Higher, None)).expect("runs");
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        assert!(
            d.note.as_deref().unwrap_or("").contains("--tolerance 6%"),
            "{d:?}"
        );
        assert!(Prediction::of(&h).expect("runs").reach(0.02).is_none());
    }

    #[test]
    fn one_odd_run_of_main_widens_the_band_rather_than_narrowing_it() {
        let mut h = history(1.0);
        let quiet = Prediction::of(&h).expect("runs").half;
        h[3] = 140.0;
        assert!(Prediction::of(&h).expect("runs").half > quiet);
        // Three runs that happen to agree still have a band: the sd is not zero.
        let agree = Prediction::of(&[100.0, 100.0, 101.0]).expect("runs");
        assert!(agree.half > 0.0, "{agree:?}");
    }

    #[test]
    fn lower_is_worse_for_the_rate_and_the_floor_keeps_tiny_groups_quiet() {
        let h = history(1.0);
        let rate = decide("rate", "tps", &h, &[75.0], 0.10, (Worse::Lower, None)).expect("runs");
        assert_eq!(rate.verdict, Verdict::Regression, "{rate:?}");
        // A group of 0.1 µs/tran doubling is 0.1 µs: below the 0.5 µs floor.
        let tiny = history(0.001);
        let d = decide(
            "DB",
            "us/tran",
            &tiny,
            &[0.2],
            0.10,
            (Worse::Higher, Some(0.5)),
        )
        .expect("runs");
        assert_eq!(d.verdict, Verdict::Pass, "{d:?}");
    }

    #[test]
    fn fewer_than_three_runs_give_no_prediction() {
        assert!(Prediction::of(&[100.0, 101.0]).is_none());
    }

    /// Main's runs and the branch's unchanged run drawn from one drifting machine: the rule
    /// calls a regression in at most 2.5 % of them, whatever the history's length; and a
    /// change well beyond the tolerance and the drift is caught.
    #[test]
    fn an_unchanged_run_is_rarely_called_a_regression_over_simulated_histories() {
        let mut draws = crate::stats::Draws::seeded(0x9e37_79b9_7f4a_7c15);
        for (runs, spread, tolerance) in [
            (3, 0.02, 0.10),
            (5, 0.02, 0.10),
            (10, 0.015, 0.05),
            (30, 0.02, 0.05),
        ] {
            let trials = 2000;
            let (mut alarms, mut caught) = (0, 0);
            for _ in 0..trials {
                let mut draw = |change: f64| 100.0 * (change + spread * draws.normal()).exp();
                let hist: Vec<f64> = (0..runs).map(|_| draw(0.0)).collect();
                let same = draw(0.0);
                let worse = draw((1.0f64 + 3.0 * tolerance).ln());
                let v = |x: f64| {
                    decide(
                        "FLOW",
                        "us/tran",
                        &hist,
                        &[x],
                        tolerance,
                        (Worse::Higher, None),
                    )
                    .expect("runs")
                    .verdict
                };
                alarms += usize::from(v(same) == Verdict::Regression);
                caught += usize::from(v(worse) == Verdict::Regression);
            }
            assert!(
                alarms * 40 <= trials,
                "{runs} runs, spread {spread}: {alarms} false alarms in {trials}"
            );
            // Thrice the tolerance is caught most of the time once the band is narrow.
            if runs >= 5 {
                assert!(
                    caught * 2 > trials,
                    "{runs} runs: {caught} of {trials} caught"
                );
            }
        }
    }
}
