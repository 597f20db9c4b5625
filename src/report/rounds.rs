//! Repeated identical runs: each round's figures, and best / median / worst across them.
//!
//! The method of the benchmarking frameworks that interleave rounds: a single run's figure
//! is one draw from a noisy machine, so the report gives the spread and says when the CPU
//! per transaction varies by more than 5% across rounds, which is when a difference between
//! two runs of that size is not to be trusted. Spread = (max − min) ÷ median.

use serde::Serialize;

/// Spread of CPU µs/tran across rounds above which the report calls the measurement noisy.
pub const NOISY_SPREAD_PCT: f64 = 5.0;

/// A group whose rounds differ by less than this (µs/tran, worst − best) is never called
/// noisy, whatever its spread as a share: a database group of an echo flow at 0.01 µs/tran
/// "spread 86.1 %" over rounds, a warning that taught people to ignore the warning.
pub const NOISY_FLOOR_US: f64 = 0.5;

/// Best, median and worst of one figure across rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct BestMedianWorst {
    pub best: f64,
    pub median: f64,
    pub worst: f64,
    /// (max − min) ÷ median, percent.
    pub spread_pct: f64,
}

pub use crate::stats::median;

/// Best/median/worst of `v`; `higher_is_better` for rates, lower for times and CPU.
pub fn best_median_worst(v: &[f64], higher_is_better: bool) -> Option<BestMedianWorst> {
    let med = median(v)?;
    let finite = v.iter().copied().filter(|x| x.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let spread_pct = if med != 0.0 {
        100.0 * (hi - lo) / med.abs()
    } else {
        0.0
    };
    Some(if higher_is_better {
        BestMedianWorst {
            best: hi,
            median: med,
            worst: lo,
            spread_pct,
        }
    } else {
        BestMedianWorst {
            best: lo,
            median: med,
            worst: hi,
            spread_pct,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN]), None);
    }

    #[test]
    fn best_is_the_high_rate_and_the_low_cost() {
        let rate = best_median_worst(&[100.0, 110.0, 90.0], true).unwrap();
        assert_eq!((rate.best, rate.median, rate.worst), (110.0, 100.0, 90.0));
        let cpu = best_median_worst(&[50.0, 52.0, 51.0], false).unwrap();
        assert_eq!((cpu.best, cpu.worst), (50.0, 52.0));
        assert!((cpu.spread_pct - 100.0 * 2.0 / 51.0).abs() < 1e-12);
    }

    #[test]
    fn one_round_has_no_spread() {
        assert_eq!(best_median_worst(&[7.0], false).unwrap().spread_pct, 0.0);
    }
}
