//! Synthetic histories for the change points' error rates: main's runs with lognormal noise
//! of a given coefficient of variation, flat or with one step. Deterministic for a seed
//! (the experiment engine's simulation draws). The unit tests run 200 series of each kind;
//! `cargo bench --bench change_points` prints the table docs/gate.md quotes.

use super::steps;
use crate::stats::Draws;

/// One configuration to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Series of each kind (flat, stepped).
    pub trials: usize,
    /// Runs in each series.
    pub runs: usize,
    /// The runs' coefficient of variation (0.03 = 3 %).
    pub cv: f64,
    /// The stepped series' first run after the step, and the step (0.10 = +10 %).
    pub at: usize,
    pub step: f64,
    pub seed: u64,
}

/// What the simulation found.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    pub scenario: Scenario,
    pub trials: usize,
    /// Flat series in which any step was reported.
    pub false_alarms: usize,
    /// Stepped series in which a step was reported within one run of where it is.
    pub found_within_one: usize,
    /// Stepped series in which a step was reported more than one run from where it is
    /// (the step placed wrong, or one more besides it).
    pub extra: usize,
}

impl std::fmt::Display for Rates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.scenario;
        let pct = |k: usize| 100.0 * k as f64 / self.trials.max(1) as f64;
        write!(
            f,
            "{} runs, CV {:.1}%: flat {} of {} with a false step ({:.1}%); {:+.0}% at run {} found within ±1 in {} of {} ({:.1}%), a step more than a run away in {} ({:.1}%)",
            s.runs,
            100.0 * s.cv,
            self.false_alarms,
            self.trials,
            pct(self.false_alarms),
            100.0 * s.step,
            s.at,
            self.found_within_one,
            self.trials,
            pct(self.found_within_one),
            self.extra,
            pct(self.extra)
        )
    }
}

/// `n` runs around 100, lognormal of coefficient of variation `cv` (median-unbiased on the
/// log scale), times 1 + step from run `at` on.
pub(crate) fn series(draws: &mut Draws, n: usize, cv: f64, (at, step): (usize, f64)) -> Vec<f64> {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    (0..n)
        .map(|i| {
            let level = if i >= at { 1.0 + step } else { 1.0 };
            100.0 * level * (sigma * draws.normal()).exp()
        })
        .collect()
}

/// [`series`] from a seed: the synthetic histories of the integration tests.
pub fn seeded_series(seed: u64, n: usize, cv: f64, (at, step): (usize, f64)) -> Vec<f64> {
    series(&mut Draws::seeded(seed), n, cv, (at, step))
}

/// Run a scenario: `trials` flat series and `trials` stepped ones.
pub fn rates(s: &Scenario) -> Rates {
    let mut draws = Draws::seeded(s.seed);
    let mut r = Rates {
        scenario: s.clone(),
        trials: s.trials,
        false_alarms: 0,
        found_within_one: 0,
        extra: 0,
    };
    for _ in 0..s.trials {
        let flat = series(&mut draws, s.runs, s.cv, (s.runs, 0.0));
        r.false_alarms += usize::from(steps(&flat).is_ok_and(|v| !v.is_empty()));
        let stepped = series(&mut draws, s.runs, s.cv, (s.at, s.step));
        let found = steps(&stepped).unwrap_or_default();
        let near = |i: usize| i.abs_diff(s.at) <= 1;
        r.found_within_one += usize::from(found.iter().any(|x| near(x.index)));
        r.extra += usize::from(found.iter().any(|x| !near(x.index)));
    }
    r
}
