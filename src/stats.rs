//! Plain statistics the measurement engine, the gate and the reports all use: one
//! definition of a median and of a latency summary, and the one seeded random generator
//! (bootstrap resamples, permutation tests, simulations, pub/sub blocks), below every
//! module that summarises figures.

/// The median of a sample's finite values (mean of the middle two for an even count), `None`
/// when it has none.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// A percentile as its name is written: 99 → "99", 99.9 → "99.9", 99.99 → "99.99".
pub(crate) fn percentile_name(pct: f64) -> String {
    let s = format!("{pct:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The mean of `v` and the half-width of its 95 % Student-t interval; None with fewer than
/// two values or any that is not finite.
pub(crate) fn mean_interval(v: &[f64]) -> Option<(f64, f64)> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = v.len();
    if n < 2 || v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.975);
    Some((mean, t * sd / (n as f64).sqrt()))
}

/// Round-trip latency, microseconds.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// The summary of a histogram of round trips in nanoseconds.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            mean: h.mean() / 1000.0,
            min: ns_to_us(h.min()),
            p50: ns_to_us(h.value_at_quantile(0.50)),
            p90: ns_to_us(h.value_at_quantile(0.90)),
            p99: ns_to_us(h.value_at_quantile(0.99)),
            p999: ns_to_us(h.value_at_quantile(0.999)),
            max: ns_to_us(h.max()),
        }
    }
}

fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn percentiles_are_named_without_trailing_zeros() {
        assert_eq!(super::percentile_name(99.0), "99");
        assert_eq!(super::percentile_name(99.9), "99.9");
        assert_eq!(super::percentile_name(50.0), "50");
    }

    #[test]
    fn the_t_interval_of_five_values_by_hand() {
        // Mean 3, sd √2.5 = 1.5811; t(0.975, 4) = 2.7764: half 2.7764 × 1.5811 / √5 = 1.9632.
        let (m, h) = super::mean_interval(&[1.0, 2.0, 3.0, 4.0, 5.0]).expect("interval");
        assert!(
            (m - 3.0).abs() < 1e-12 && (h - 1.9632).abs() < 1e-3,
            "{m} {h}"
        );
        assert_eq!(super::mean_interval(&[1.0]), None);
        assert_eq!(super::mean_interval(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn the_middle_value_or_the_mean_of_the_middle_two_of_the_finite_ones() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0, f64::INFINITY]), Some(5.0));
        assert_eq!(median(&[]), None);
    }
}

/// The one seeded generator: fastrand's wyrand, so that the same seed gives the same
/// bootstrap interval, permutation test, simulation and `--seed` blocks run after run.
#[derive(Debug, Clone)]
pub struct Draws(fastrand::Rng);

impl Draws {
    pub(crate) fn seeded(seed: u64) -> Draws {
        Draws(fastrand::Rng::with_seed(seed))
    }

    /// A uniform index below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.0.usize(..n) }
    }

    /// A uniform number in (0, 1]: never 0, so that its logarithm is finite.
    pub(crate) fn uniform(&mut self) -> f64 {
        1.0 - self.0.f64()
    }

    /// A standard normal number (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (a, b) = (self.uniform(), self.uniform());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }

    /// Fisher–Yates.
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        self.0.shuffle(v);
    }
}
