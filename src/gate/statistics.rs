//! The statistics behind the regression gate: the ratio of medians of two samples, its
//! bootstrap confidence interval, and the Mann-Whitney U test.
//!
//! Methods and references:
//! - Percentile bootstrap of the ratio of medians (Efron & Tibshirani, *An Introduction to the
//!   Bootstrap*, 1993, ch. 13): each sample is resampled with replacement, independently,
//!   `B` times; the interval is the 2.5th and 97.5th percentiles of the resampled ratios.
//!   criterion.rs reports its change estimates the same way. The resampling uses a fixed
//!   seed, so the same reports always give the same verdict.
//! - Mann-Whitney U (Mann & Whitney, 1947), two-sided: exact distribution of U when there are
//!   no ties and the samples are small (as with 5–30 rounds), otherwise the normal
//!   approximation with tie correction and continuity correction (Hollander & Wolfe,
//!   *Nonparametric Statistical Methods*, 1999, §4.1).

/// The median, NaN for an empty sample (the report's median, which says None instead).
pub fn median(v: &[f64]) -> f64 {
    crate::stats::median(v).unwrap_or(f64::NAN)
}

/// A robust standard deviation of a sample's logarithms: 1.4826 × their median absolute
/// deviation (equal to the standard deviation for normal data, and unmoved by one odd
/// round). None for an empty sample or a value that is not positive.
pub(crate) fn robust_log_sd(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
    let m = median(&logs);
    let dev: Vec<f64> = logs.iter().map(|x| (x - m).abs()).collect();
    Some(1.4826 * median(&dev))
}

/// A 95% percentile-bootstrap interval for median(current) / median(base).
pub(crate) fn bootstrap_ratio_ci(
    base: &[f64],
    current: &[f64],
    resamples: usize,
) -> Option<(f64, f64)> {
    if base.is_empty() || current.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = crate::stats::Draws::seeded(0x006f_656d_7075_7478); // "oemputx"
    let mut ratios = Vec::with_capacity(resamples);
    let (mut b, mut c) = (vec![0.0; base.len()], vec![0.0; current.len()]);
    for k in 0..resamples {
        // Seconds of work for a report of many rounds: a signal ends it at once (the gate
        // then writes no verdict, crate::orchestrate::verdict::certain).
        if k % 256 == 0 && crate::signals::interrupted() {
            return None;
        }
        for x in b.iter_mut() {
            *x = base[rng.below(base.len())];
        }
        for x in c.iter_mut() {
            *x = current[rng.below(current.len())];
        }
        let mb = median(&b);
        if mb > 0.0 {
            ratios.push(median(&c) / mb);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let at =
        |q: f64| ratios[((q * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    Some((at(0.025), at(0.975)))
}

/// Two-sided Mann-Whitney U test p-value (1.0 when either sample is empty).
pub(crate) fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // Ranks of the pooled sample, ties given their average rank.
    let mut pooled: Vec<(f64, usize)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for r in ranks.iter_mut().take(j + 1).skip(i) {
            *r = avg;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = pooled
        .iter()
        .zip(&ranks)
        .filter(|(p, _)| p.1 == 0)
        .map(|(_, r)| r)
        .sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = u1.min(f1 * f2 - u1);
    if tie_term == 0.0 && n1 * n2 <= 2500 {
        return exact_p(n1, n2, u.round() as usize);
    }
    let mean = f1 * f2 / 2.0;
    let nf = f1 + f2;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 1.0; // every value equal: no evidence of a difference
    }
    let z = ((mean - u).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The smallest two-sided p the Mann-Whitney test can give for these sample sizes (every
/// value of one sample beyond every value of the other, no ties): 2 / C(n1 + n2, n1). At
/// or above the significance level, the test can never call a difference: 3 rounds a side
/// give 0.1, 4 a side 0.029, 5 a side 0.008.
pub(crate) fn smallest_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    if n1 * n2 > 2500 {
        return 0.0;
    }
    exact_p(n1, n2, 0)
}

/// Exact two-sided p of U ≤ `u` (the smaller U) for sample sizes `n1`, `n2`, without ties:
/// the number of arrangements with each U, counted by the usual recurrence.
fn exact_p(n1: usize, n2: usize, u: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[i][j] as a vector over U, built row by row: f(i,j,u) = f(i-1,j,u-j) + f(i,j-1,u).
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect(); // i = 0: only U = 0
    for i in 1..=n1 {
        let mut row: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        row.push(vec![1.0]); // j = 0: only U = 0
        for j in 1..=n2 {
            let mut f = vec![0.0; i * j + 1];
            for (k, v) in prev[j].iter().enumerate() {
                f[k + j] += v;
            }
            for (k, v) in row[j - 1].iter().enumerate() {
                f[k] += v;
            }
            row.push(f);
        }
        prev = row;
    }
    let dist = &prev[n2];
    let total: f64 = dist.iter().sum();
    let tail: f64 = dist.iter().take(u.min(max_u) + 1).sum();
    (2.0 * tail / total).min(1.0)
}

/// The standard normal's upper tail, 1 − Φ(z), through the complementary error function.
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // Numerical Recipes' erfcc (Chebyshev fit, fractional error below 1.2e-7 everywhere):
    // erfc(z) ≈ t·exp(−z² + P(t)), t = 1/(1 + z/2), P evaluated by Horner's rule from its
    // highest coefficient down.
    const P: [f64; 10] = [
        -1.265_512_23,
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ];
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = P.iter().rev().fold(0.0, |acc, c| acc * t + c);
    let r = t * (-z * z + poly).exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn mann_whitney_matches_published_values() {
        // Completely separated samples of 5 and 5: exact two-sided p = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!((mann_whitney_p(&a, &b) - 2.0 / 252.0).abs() < 1e-12);
        // Identical samples (all ties): no evidence.
        assert_eq!(mann_whitney_p(&[1.0; 5], &[1.0; 5]), 1.0);
        // Interleaved samples: far from significant.
        let c = [1.0, 3.0, 5.0, 7.0, 9.0];
        let d = [2.0, 4.0, 6.0, 8.0, 10.0];
        assert!(mann_whitney_p(&c, &d) > 0.5);
        // Large samples use the normal approximation: 30 vs 30 shifted clearly apart.
        let e: Vec<f64> = (0..30).map(f64::from).collect();
        let f: Vec<f64> = (0..30).map(|x| f64::from(x) + 100.0).collect();
        assert!(mann_whitney_p(&e, &f) < 1e-9);
    }

    #[test]
    fn the_normal_tail_is_accurate() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_sf(3.0) - 0.001_349_898).abs() < 1e-7);
    }

    #[test]
    fn the_bootstrap_interval_brackets_the_ratio_and_is_reproducible() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8];
        let cur: Vec<f64> = base.iter().map(|x| x * 1.10).collect();
        let (lo, hi) = bootstrap_ratio_ci(&base, &cur, 5000).expect("interval");
        assert!(
            lo < 1.10 && hi > 1.10 && lo > 1.07 && hi < 1.13,
            "{lo} {hi}"
        );
        assert_eq!(bootstrap_ratio_ci(&base, &cur, 5000), Some((lo, hi)));
        assert_eq!(bootstrap_ratio_ci(&[], &cur, 10), None);
    }
}
