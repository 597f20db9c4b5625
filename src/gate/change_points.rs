//! Change points in main's history, as pure code: the runs where a metric's series of runs
//! stepped to another level and stayed there.
//!
//! **The method: e-divisive means** (D. S. Matteson & N. A. James, "A Nonparametric
//! Approach for Multiple Change Point Analysis of Multivariate Data", *Journal of the
//! American Statistical Association* 109(505):334–345, 2014; R package ecp, `e.divisive`) —
//! the method MongoDB's performance CI and Apache Otava (formerly Hunter: Fleming et al.,
//! "Hunter: Using Change Point Detection to Hunt for Performance Regressions", ICPE 2023)
//! build on. For a stretch of runs split at τ into X = runs s..τ and Y = runs τ..κ (n and m
//! runs), the divergence of their distributions is the energy distance
//!
//! Ê = 2/(nm) Σ|Xᵢ − Yⱼ| − C(n,2)⁻¹ Σ|Xᵢ − Xₖ| − C(m,2)⁻¹ Σ|Yⱼ − Yₖ|,
//!
//! (distance exponent α = 1), and the split's statistic is Q̂ = nm/(n + m) · Ê. The
//! candidate is the (τ, κ) of the largest Q̂ over every segment found so far (κ < the
//! segment's end lets a step be found beside another one); each side of a split holds at
//! least [`MIN_SEGMENT`] runs, so one odd run is not a step and a history needs
//! [`MIN_RUNS`] runs before any step can be told.
//!
//! **The significance test** is the paper's permutation test (§3.2): the runs are shuffled
//! within each current segment, the largest Q̂ found again, [`PERMUTATIONS`] times; the
//! p-value is (#{permuted Q̂ ≥ observed} + 1) / (permutations + 1), and the candidate is a
//! change point when p ≤ [`ALPHA`]. Then the search repeats on the segments either side,
//! until a candidate is not significant. The shuffles come from the gate's one seeded
//! generator ([`crate::stats::Draws`]) with a fixed seed, so the same history
//! always gives the same change points. A test stops shuffling as soon as its p-value can
//! no longer reach [`ALPHA`] (a sequential Monte Carlo test, Besag & Clifford 1991): the
//! decision is the one the full test would make, in a fraction of the shuffles.
//!
//! Why α = 0.01 rather than ecp's 0.05: a step reported in main's history is read as a
//! change somebody merged, and the test is run on every gated metric. [`sim`] measures the
//! rates at that level (docs/gate.md has them): over flat series, how often a step is
//! reported that is not there; over series with a step, how often it is found within a run
//! of where it is.

pub mod outcome;
pub mod sim;

use super::statistics::median;
use crate::stats::Draws;
use serde::Serialize;

/// The fewest runs either side of a step.
pub const MIN_SEGMENT: usize = 3;
/// The fewest runs a history needs before any step can be told.
pub const MIN_RUNS: usize = 2 * MIN_SEGMENT;
/// The significance level of each split's permutation test.
pub const ALPHA: f64 = 0.01;
/// Shuffles per permutation test: the smallest p-value is 1/500 = 0.002, and a split is
/// significant when at most 4 shuffles match or beat it.
pub const PERMUTATIONS: usize = 499;
/// The stored gate says so when a step is among main's newest this many runs: its
/// baseline then spans two levels.
pub const RECENT_RUNS: usize = 5;
/// The shuffles' seed ("changes").
const SEED: u64 = 0x0063_6861_6e67_6573;

/// One step in a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The first run after the step (0-based, oldest first).
    pub index: usize,
    /// The median of the runs from the step before (or the first run) to this one.
    pub before: f64,
    /// The median of the runs from this one to the next step (or the last run).
    pub after: f64,
    /// after ÷ before − 1, in %; None when `before` is 0.
    pub change_pct: Option<f64>,
    /// The permutation test's p-value.
    pub p_value: f64,
}

/// Why a series cannot be searched for steps.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unsearchable {
    #[error(
        "{runs} run{} in the history: a step needs {MIN_SEGMENT} runs either side of it to be told from an odd run, so {MIN_RUNS} or more",
        if *runs == 1 { "" } else { "s" }
    )]
    TooShort { runs: usize },
    #[error("run {index} has no finite figure ({value})")]
    NotFinite { index: usize, value: f64 },
    /// A signal ended the search (the exit is then 130: `exit_for_now`).
    #[error("the search for steps was interrupted by a signal")]
    Interrupted,
}

// A failure of the run (exit 1).
crate::runtime_error!(Unsearchable);

/// The steps of `series` (one figure a run, oldest first), by e-divisive means; none found
/// is an empty list, too short a series an error that says why.
pub fn steps(series: &[f64]) -> Result<Vec<Step>, Unsearchable> {
    if series.len() < MIN_RUNS {
        return Err(Unsearchable::TooShort { runs: series.len() });
    }
    if let Some((index, &value)) = series.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Unsearchable::NotFinite { index, value });
    }
    let mut rng = Draws::seeded(SEED);
    // The segments' bounds: 0, each change point, the end.
    let mut bounds = vec![0, series.len()];
    let mut found: Vec<(usize, f64)> = Vec::new();
    while let Some((q, at)) = best(&Sums::of(series), &bounds) {
        let Some(p) = permutation_p(series, &bounds, q, &mut rng)? else {
            break;
        };
        found.push((at, p));
        bounds.push(at);
        bounds.sort_unstable();
    }
    let mut out: Vec<Step> = found
        .iter()
        .map(|&(index, p_value)| {
            // `bounds` holds `index`: the segments either side end at its neighbours.
            let i = bounds.partition_point(|&b| b < index);
            let (before, after) = (
                median(&series[bounds[i - 1]..index]),
                median(&series[index..bounds[i + 1]]),
            );
            Step {
                index,
                before,
                after,
                change_pct: (before != 0.0).then(|| 100.0 * (after / before - 1.0)),
                p_value,
            }
        })
        .collect();
    out.sort_by_key(|s| s.index);
    Ok(out)
}

/// The permutation test of a candidate of statistic `q`: its p-value when p ≤ [`ALPHA`],
/// None as soon as it cannot be. A signal ends it: a history of many metrics keeps the search
/// busy for seconds, and the first SIGTERM must end it.
fn permutation_p(
    series: &[f64],
    bounds: &[usize],
    q: f64,
    rng: &mut Draws,
) -> Result<Option<f64>, Unsearchable> {
    // A shuffle that ties the observed statistic counts against it (rounding included).
    let tie = q - 1e-12 * q.abs();
    let mut work = series.to_vec();
    let mut sums = Sums::new(work.len());
    let mut beaten = 0usize;
    for k in 0..PERMUTATIONS {
        if k % 32 == 0 && crate::signals::interrupted() {
            return Err(Unsearchable::Interrupted);
        }
        for w in bounds.windows(2) {
            rng.shuffle(&mut work[w[0]..w[1]]);
        }
        sums.fill(&work);
        if best(&sums, bounds).is_some_and(|(qp, _)| qp >= tie) {
            beaten += 1;
            if (beaten + 1) as f64 / (PERMUTATIONS + 1) as f64 > ALPHA {
                return Ok(None);
            }
        }
    }
    Ok(Some((beaten + 1) as f64 / (PERMUTATIONS + 1) as f64))
}

/// The largest Q̂ over the segments between `bounds` (sorted), and where it splits.
fn best(sums: &Sums, bounds: &[usize]) -> Option<(f64, usize)> {
    // Written out rather than through `Sums::rect`: this loop is most of the permutation
    // tests' time, and the tests' simulations run it unoptimized.
    let (w, p) = (sums.w, sums.prefix.as_slice());
    let (mut top, mut at) = (f64::NEG_INFINITY, None);
    for b in bounds.windows(2) {
        let (s, e) = (b[0], b[1]);
        if e - s < MIN_RUNS {
            continue;
        }
        for tau in s + MIN_SEGMENT..=e - MIN_SEGMENT {
            // X's side does not change with κ.
            let n = (tau - s) as f64;
            let within_x = sums.within(s, tau);
            let (rs, rt) = (s * w, tau * w);
            for kappa in tau + MIN_SEGMENT..=e {
                let m = (kappa - tau) as f64;
                let rk = kappa * w;
                let between = p[rt + kappa] - p[rs + kappa] - p[rt + tau] + p[rs + tau];
                let square_y = p[rk + kappa] - p[rt + kappa] - p[rk + tau] + p[rt + tau];
                let within_y = square_y / (m * (m - 1.0));
                let q = n * m / (n + m) * (2.0 * between / (n * m) - within_x - within_y);
                if q > top {
                    (top, at) = (q, Some(tau));
                }
            }
        }
    }
    at.map(|tau| (top, tau))
}

/// Sums of |xᵢ − xⱼ| over any rectangle of (i, j) in O(1): the 2-D prefix sums of the
/// distance matrix, so that every (τ, κ) of a segment costs the same few additions.
struct Sums {
    w: usize,
    prefix: Vec<f64>,
}

impl Sums {
    fn new(n: usize) -> Sums {
        Sums {
            w: n + 1,
            prefix: vec![0.0; (n + 1) * (n + 1)],
        }
    }

    fn of(x: &[f64]) -> Sums {
        let mut s = Sums::new(x.len());
        s.fill(x);
        s
    }

    /// The prefix sums of `x` (of the length the sums were made for).
    fn fill(&mut self, x: &[f64]) {
        let w = self.w;
        for (i, a) in x.iter().enumerate() {
            let mut row = 0.0;
            let (done, rest) = self.prefix.split_at_mut((i + 1) * w);
            let above = &done[i * w..];
            let here = &mut rest[..w];
            for (j, b) in x.iter().enumerate() {
                row += (a - b).abs();
                here[j + 1] = above[j + 1] + row;
            }
        }
    }

    /// Σ |xᵢ − xⱼ| for i in r0..r1, j in c0..c1.
    fn rect(&self, (r0, r1): (usize, usize), (c0, c1): (usize, usize)) -> f64 {
        let (w, p) = (self.w, &self.prefix);
        p[r1 * w + c1] - p[r0 * w + c1] - p[r1 * w + c0] + p[r0 * w + c0]
    }

    /// The mean distance between distinct runs of a..b (0 for fewer than two).
    fn within(&self, a: usize, b: usize) -> f64 {
        let len = b - a;
        if len < 2 {
            return 0.0;
        }
        // The square counts each pair twice; the diagonal is 0.
        self.rect((a, b), (a, b)) / (len * (len - 1)) as f64
    }

    /// Q̂ of X = s..tau against Y = tau..kappa.
    #[cfg(test)]
    fn q(&self, s: usize, tau: usize, kappa: usize) -> f64 {
        let (n, m) = ((tau - s) as f64, (kappa - tau) as f64);
        let between = 2.0 * self.rect((s, tau), (tau, kappa)) / (n * m);
        let e = between - self.within(s, tau) - self.within(tau, kappa);
        n * m / (n + m) * e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q̂ by its definition, pair by pair, for checking the prefix sums.
    fn q_direct(x: &[f64], s: usize, tau: usize, kappa: usize) -> f64 {
        let (a, b) = (&x[s..tau], &x[tau..kappa]);
        let (n, m) = (a.len() as f64, b.len() as f64);
        let mut between = 0.0;
        for p in a {
            for r in b {
                between += (p - r).abs();
            }
        }
        let within = |v: &[f64]| {
            let mut t = 0.0;
            for i in 0..v.len() {
                for j in i + 1..v.len() {
                    t += (v[i] - v[j]).abs();
                }
            }
            let pairs = (v.len() * (v.len().saturating_sub(1)) / 2) as f64;
            if pairs > 0.0 { t / pairs } else { 0.0 }
        };
        n * m / (n + m) * (2.0 * between / (n * m) - within(a) - within(b))
    }

    #[test]
    fn the_statistic_is_the_papers_energy_divergence() {
        let x = [3.0, 1.5, 4.0, 1.0, 5.5, 9.0, 2.0, 6.0, 5.0, 3.5];
        let sums = Sums::of(&x);
        for (s, tau, kappa) in [(0, 3, 10), (0, 5, 8), (2, 6, 10), (1, 4, 7)] {
            let (fast, slow) = (sums.q(s, tau, kappa), q_direct(&x, s, tau, kappa));
            assert!(
                (fast - slow).abs() < 1e-9,
                "{s} {tau} {kappa}: {fast} {slow}"
            );
        }
        // Two clearly apart halves beat a split inside one of them.
        let step = [1.0, 1.1, 0.9, 1.0, 2.0, 2.1, 1.9, 2.0];
        let sums = Sums::of(&step);
        assert!(sums.q(0, 4, 8) > sums.q(0, 3, 8));
        assert!(sums.q(0, 4, 8) > sums.q(0, 5, 8));
    }

    #[test]
    fn a_series_too_short_or_not_finite_says_why() {
        let err = steps(&[1.0, 2.0, 3.0, 4.0, 5.0]).expect_err("5 runs");
        assert_eq!(err, Unsearchable::TooShort { runs: 5 });
        let text = err.to_string();
        assert!(
            text.contains("5 runs") && text.contains("6 or more"),
            "{text}"
        );
        // Six runs that plainly step: 3 either side is enough.
        let six = steps(&[10.0, 10.1, 9.9, 20.0, 20.2, 19.8]).expect("6 runs");
        assert!(six.iter().all(|s| s.index == 3), "{six:?}");
        let err = steps(&[1.0, 1.0, f64::NAN, 1.0, 1.0, 1.0, 1.0]).expect_err("NaN");
        assert!(
            matches!(err, Unsearchable::NotFinite { index: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_constant_series_has_no_step() {
        assert_eq!(steps(&[5.0; 30]), Ok(Vec::new()));
    }

    /// A series of `n` runs around 100 with lognormal noise of coefficient of variation
    /// `cv`, multiplied by 1 + `step` from run `at` on.
    pub(crate) fn series(seed: u64, n: usize, cv: f64, at: usize, step: f64) -> Vec<f64> {
        sim::seeded_series(seed, n, cv, (at, step))
    }

    #[test]
    fn a_ten_percent_step_at_run_15_of_30_is_found_there_and_a_flat_history_has_none() {
        // Noise of 2.5 % CV, as main's quiet runs spread: the step is 4 of them.
        let s = series(0x5eed_0001, 30, 0.025, 15, 0.10);
        let found = steps(&s).expect("30 runs");
        assert_eq!(found.len(), 1, "{found:?}");
        let step = &found[0];
        assert!(step.index.abs_diff(15) <= 1, "{step:?}");
        let pct = step.change_pct.expect("before is not 0");
        assert!((6.0..14.0).contains(&pct), "{step:?}");
        assert!(step.p_value <= ALPHA, "{step:?}");
        assert!(step.before < step.after, "{step:?}");
        let flat = series(0x5eed_0011, 30, 0.025, 30, 0.0);
        assert_eq!(steps(&flat), Ok(Vec::new()));
    }

    #[test]
    fn two_steps_are_both_found_each_with_the_medians_either_side() {
        let mut s = series(0x5eed_0021, 30, 0.02, 10, 0.15);
        for x in &mut s[20..] {
            *x *= 0.8;
        }
        let found = steps(&s).expect("30 runs");
        let at: Vec<usize> = found.iter().map(|s| s.index).collect();
        assert_eq!(at.len(), 2, "{found:?}");
        assert!(
            at[0].abs_diff(10) <= 1 && at[1].abs_diff(20) <= 1,
            "{found:?}"
        );
        // The medians are those of the segments between the steps, not of all before/after.
        assert!((found[0].after - found[1].before).abs() < 1e-9, "{found:?}");
        assert!(found[1].change_pct.expect("pct") < -15.0, "{found:?}");
    }

    #[test]
    fn the_same_series_always_gives_the_same_steps() {
        let s = series(0x5eed_0031, 30, 0.03, 12, 0.08);
        assert_eq!(steps(&s), steps(&s));
    }

    /// The rates docs/gate.md states, on 200 flat and 200 stepped series (the bench
    /// `cargo bench --bench change_points` runs more, and other noise levels).
    #[test]
    fn over_simulated_histories_false_steps_are_rare_and_a_ten_percent_step_is_found() {
        let t0 = std::time::Instant::now();
        let rates = sim::rates(&sim::Scenario {
            trials: 200,
            runs: 30,
            cv: 0.03,
            at: 15,
            step: 0.10,
            seed: 0x0063_7074_7331,
        });
        eprintln!("{rates} in {:?}", t0.elapsed());
        assert!(
            rates.false_alarms * 20 <= rates.trials,
            "false steps in {} of {} flat series",
            rates.false_alarms,
            rates.trials
        );
        assert!(
            rates.found_within_one * 10 >= rates.trials * 9,
            "+10 % found within ±1 run in {} of {}",
            rates.found_within_one,
            rates.trials
        );
    }
}
