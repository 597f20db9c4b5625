//! Deciding B against A on paired rounds, looking again as rounds are added, without the
//! false-alarm rate growing with the number of looks.
//!
//! **Pairs.** The A/B gate runs rounds in ABBA order (A B, B A, A B, …); each adjacent A/B
//! couple is a pair, and its figure is d = ln(B ÷ A). Measuring both sides in the same
//! stretch of time cancels the machine's and the system's slow drift, which dominates
//! run-to-run differences here (docs/gate.md has the measurements); the ABBA order cancels a
//! linear drift and any first-round-of-a-pair effect.
//!
//! **Interval.** The Hodges–Lehmann estimate of the d's centre (the median of the Walsh
//! averages (dᵢ + dⱼ)/2, i ≤ j) with the distribution-free interval that inverts the
//! Wilcoxon signed-rank test, from its exact null distribution (Hollander & Wolfe,
//! *Nonparametric Statistical Methods*, 1999, §3.2), turned back into a ratio. Unlike a
//! mean and a t interval, one wild round (a burst of other work on the machine, seen here
//! in a few rounds out of a hundred) cannot drag it; under a normal spread it is about as
//! narrow (95 % efficiency). It assumes the d's are symmetric about their centre, which the
//! ABBA order makes exact under no change.
//!
//! **Repeated looks.** The gate looks at a planned schedule of pair counts, each about half
//! again the last (8, 12, 18, 27, 40, 60, 90, …, the maximum). Each look's interval is a
//! two-sided 1 − α/K interval, K being the number of looks planned: by Bonferroni's
//! inequality, all K intervals cover the true ratio together with probability at least
//! 1 − α, however the gate stops. This is the repeated-confidence-interval approach of
//! Jennison & Turnbull ("Interim analyses: the repeated confidence interval approach",
//! JRSS B 51:305–361, 1989; *Group Sequential Methods with Applications to Clinical
//! Trials*, 2000, ch. 9) with the simplest, conservative spending of α: evenly over the
//! looks. Re-testing at the full α at every look would not hold the stated rate.
//!
//! **Verdict** (tolerance t, oriented so that above 1 is worse): regression when the whole
//! interval lies above 1 + t; improvement when it lies below 1 − t; pass when its top is
//! within 1 + t; otherwise undecided, and the gate adds pairs.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The fewest pairs at which the gate looks: with fewer, the signed-rank interval at the
/// per-look level cannot be bounded at all (2⁻ⁿ must be below α/2K).
pub const FIRST_LOOK: usize = 8;
/// Each planned look has about this many times the pairs of the one before: fewer looks
/// spend α in fewer, wider slices; more would overshoot the pairs needed by less.
const LOOK_GROWTH: f64 = 1.5;

/// The planned looks, in pairs, up to `max_pairs` (always a look).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    looks: Vec<usize>,
}

impl Schedule {
    pub fn new(max_pairs: usize) -> Schedule {
        let max = max_pairs.max(FIRST_LOOK);
        let mut looks = vec![FIRST_LOOK];
        let mut n = FIRST_LOOK as f64;
        loop {
            n *= LOOK_GROWTH;
            let next = (n.round() as usize).max(looks[looks.len() - 1] + 1);
            if next >= max {
                break;
            }
            looks.push(next);
        }
        if looks.last() != Some(&max) {
            looks.push(max);
        }
        Schedule { looks }
    }

    /// Whether the gate looks after `pairs` pairs.
    pub fn is_look(&self, pairs: usize) -> bool {
        self.looks.contains(&pairs)
    }

    /// The planned looks.
    pub fn looks(&self) -> &[usize] {
        &self.looks
    }

    /// The two-sided error level of each look's interval, for an overall level `alpha`.
    pub fn alpha_per_look(&self, alpha: f64) -> f64 {
        alpha / self.looks.len() as f64
    }
}

/// The paired estimate of B ÷ A after some pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedInterval {
    /// exp(Hodges–Lehmann estimate of ln(B ÷ A)).
    pub ratio: f64,
    /// The interval's ends as ratios: 0 and infinity when too few pairs bound it.
    pub low: f64,
    pub high: f64,
    /// A robust spread of ln(B ÷ A): 1.4826 × the median absolute deviation, which
    /// estimates the standard deviation under a normal spread.
    pub sd_log: f64,
    pub pairs: usize,
    /// The normal quantile of the per-look level, for sizing estimates.
    pub z: f64,
}

/// P(T⁺ ≤ t) for t = 0..=n(n+1)/2 under no change, T⁺ being the sum of the ranks of the
/// positive differences: each rank joins with probability ½ (a subset-sum recursion).
fn signed_rank_cdf(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut p = vec![0.0; max + 1];
    p[0] = 1.0;
    for rank in 1..=n {
        for t in (rank..=max).rev() {
            p[t] = 0.5 * (p[t] + p[t - rank]);
        }
        for x in p.iter_mut().take(rank) {
            *x *= 0.5;
        }
    }
    let mut acc = 0.0;
    p.iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect()
}

/// The 1 − `alpha` interval of the centre of the log ratios, as ratios; None with fewer
/// than two pairs or a non-finite log ratio.
pub fn paired_interval(log_ratios: &[f64], alpha: f64) -> Option<PairedInterval> {
    let n = log_ratios.len();
    if n < 2 || log_ratios.iter().any(|d| !d.is_finite()) {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((log_ratios[i] + log_ratios[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let centre = median_sorted(&walsh);
    // c: the most Walsh averages that may be cut from each end, P(T⁺ ≤ c − 1) ≤ α/2.
    let cdf = signed_rank_cdf(n);
    let c = cdf.iter().take_while(|&&p| p <= alpha / 2.0).count();
    let (low, high) = if c == 0 {
        (0.0, f64::INFINITY)
    } else {
        (walsh[c - 1].exp(), walsh[m - c].exp())
    };
    let mut dev: Vec<f64> = log_ratios.iter().map(|d| (d - centre).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let z = StudentsT::new(0.0, 1.0, 1e6)
        .ok()?
        .inverse_cdf(1.0 - alpha / 2.0);
    Some(PairedInterval {
        ratio: centre.exp(),
        low,
        high,
        sd_log: 1.4826 * median_sorted(&dev),
        pairs: n,
        z,
    })
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The verdict an interval (oriented: above 1 is worse) allows at `tolerance`, or None when
/// it allows none yet.
pub fn judge(i: &PairedInterval, tolerance: f64) -> Option<super::Verdict> {
    use super::Verdict;
    if i.low > 1.0 + tolerance {
        Some(Verdict::Regression)
    } else if i.high < 1.0 - tolerance {
        Some(Verdict::Improvement)
    } else if i.high <= 1.0 + tolerance {
        Some(Verdict::Pass)
    } else {
        None
    }
}

/// About how many pairs in all would narrow the interval enough to decide, if the spread
/// stays as it is: the interval must come within the gap between the estimate and the
/// tolerance's edge. None when the estimate sits on the edge (no number of pairs decides).
pub fn pairs_to_decide(i: &PairedInterval, tolerance: f64) -> Option<usize> {
    let edge = (1.0 + tolerance).ln();
    let gap = (i.ratio.ln() - edge).abs();
    if gap < 1e-9 {
        return None;
    }
    // The Hodges–Lehmann interval is about as wide as a normal one at 95 % efficiency.
    let n = (i.z * i.sd_log / gap).powi(2).ceil() / 0.95;
    let n = n.ceil();
    (n.is_finite() && n < 1e9).then_some(n as usize)
}

/// The smallest change a run of `pairs` pairs with this spread could call a regression at
/// `tolerance`: the tolerance plus the half-width of the interval, as a fraction.
pub fn detectable_change(sd_log: f64, pairs: usize, z: f64, tolerance: f64) -> f64 {
    let half = z * sd_log / (0.95 * pairs.max(1) as f64).sqrt();
    ((1.0 + tolerance).ln() + half).exp() - 1.0
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;

    #[test]
    fn the_schedule_grows_by_a_third_and_ends_at_the_maximum() {
        let s = Schedule::new(100);
        assert_eq!(s.looks()[..4], [8, 12, 18, 27]);
        assert_eq!(s.looks().last(), Some(&100));
        assert!(s.looks().windows(2).all(|w| w[0] < w[1]));
        assert!((s.alpha_per_look(0.05) * s.looks().len() as f64 - 0.05).abs() < 1e-12);
        assert_eq!(Schedule::new(2).looks(), [8]);
    }

    #[test]
    fn the_signed_rank_distribution_is_exact() {
        // n = 3: T+ takes 0,1,2,3,3,4,5,6 over the 8 sign patterns.
        let cdf = signed_rank_cdf(3);
        let expect = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 8.0].map(|k| k / 8.0);
        assert_eq!(cdf.len(), 7);
        for (a, b) in cdf.iter().zip(expect) {
            assert!((a - b).abs() < 1e-15, "{cdf:?}");
        }
        // Symmetric and ending at 1 for a large n too.
        let big = signed_rank_cdf(60);
        assert!((big[big.len() - 1] - 1.0).abs() < 1e-12);
        let mid = big.len() / 2;
        assert!((big[mid - 1] + big[mid] - 1.0).abs() < 1e-9 || (big[mid] - 0.5).abs() < 0.02);
    }

    #[test]
    fn the_interval_is_the_textbook_one_and_ignores_a_wild_pair() {
        // Hollander & Wolfe's rule on n = 10 at α = 0.05: P(T+ ≤ 8) = 0.0244 ≤ 0.025 <
        // P(T+ ≤ 9), so c = 9 and the interval is [W(9), W(47)] of the 55 Walsh averages.
        let d: Vec<f64> = (0..10).map(|i| 0.01 * i as f64).collect();
        let i = paired_interval(&d, 0.05).expect("interval");
        let mut w = Vec::new();
        for a in 0..10 {
            for b in a..10 {
                w.push((d[a] + d[b]) / 2.0);
            }
        }
        w.sort_by(f64::total_cmp);
        assert!((i.low - w[8].exp()).abs() < 1e-12, "{i:?}");
        assert!((i.high - w[46].exp()).abs() < 1e-12, "{i:?}");
        assert!((i.ratio - 0.045f64.exp()).abs() < 1e-12);
        // Over 30 pairs, one pair forty times further out than the rest moves the estimate
        // and the interval only a little; a mean would move by 6 %.
        let d: Vec<f64> = (0..30).map(|i| 0.03 + 0.002 * (i as f64 - 14.5)).collect();
        let calm = paired_interval(&d, 0.05).expect("interval");
        let mut wild = d.clone();
        wild[29] = 1.8;
        let j = paired_interval(&wild, 0.05).expect("interval");
        assert!((j.ratio / calm.ratio - 1.0).abs() < 0.005, "{j:?} {calm:?}");
        assert!(j.high < calm.high * 1.01, "{j:?} {calm:?}");
    }

    #[test]
    fn too_few_pairs_leave_the_interval_unbounded() {
        let i = paired_interval(&[0.1, 0.2, 0.15], 0.01).expect("estimate");
        assert_eq!((i.low, i.high), (0.0, f64::INFINITY));
        assert!(paired_interval(&[0.1], 0.05).is_none());
        assert!(paired_interval(&[0.1, f64::NAN], 0.05).is_none());
    }

    #[test]
    fn verdicts_follow_the_interval_and_the_tolerance() {
        let at = |low: f64, high: f64| PairedInterval {
            ratio: (low * high).sqrt(),
            low,
            high,
            sd_log: 0.01,
            pairs: 10,
            z: 2.0,
        };
        assert_eq!(judge(&at(1.03, 1.07), 0.02), Some(Verdict::Regression));
        assert_eq!(judge(&at(0.95, 1.015), 0.02), Some(Verdict::Pass));
        assert_eq!(judge(&at(0.90, 0.97), 0.02), Some(Verdict::Improvement));
        assert_eq!(judge(&at(1.00, 1.04), 0.02), None);
        assert_eq!(judge(&at(1.01, 1.03), 0.02), None);
        assert_eq!(judge(&at(0.0, f64::INFINITY), 0.02), None);
    }

    #[test]
    fn the_pairs_needed_shrink_as_the_estimate_leaves_the_edge() {
        let i = |ratio: f64| PairedInterval {
            ratio,
            low: 0.0,
            high: 0.0,
            sd_log: 0.05,
            pairs: 10,
            z: 2.8,
        };
        let near = pairs_to_decide(&i(1.03), 0.02).expect("finite");
        let far = pairs_to_decide(&i(1.06), 0.02).expect("finite");
        assert!(near > far, "{near} {far}");
        assert!(pairs_to_decide(&i(1.02), 0.02).is_none());
        assert!(detectable_change(0.05, 25, 2.8, 0.02) > 0.02);
    }

    /// Deterministic standard normal draws (xorshift64* and Box–Muller).
    fn normals(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            let mut u = || {
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                ((state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5)
                    / (1u64 << 53) as f64
            };
            let (a, b) = (u(), u());
            (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
        }
    }

    /// Run the sequential rule on simulated pairs; the verdict and the pairs it took.
    fn simulate(shift: f64, sd: f64, tolerance: f64, seed: u64) -> (Option<Verdict>, usize) {
        let schedule = Schedule::new(100);
        let alpha = schedule.alpha_per_look(0.05);
        let mut normal = normals(seed);
        let mut d = Vec::new();
        for n in 1..=100 {
            d.push(shift + sd * normal());
            if schedule.is_look(n) {
                let i = paired_interval(&d, alpha).expect("interval");
                if let Some(v) = judge(&i, tolerance) {
                    return (Some(v), n);
                }
            }
        }
        (None, 100)
    }

    #[test]
    fn under_no_change_the_repeated_intervals_rarely_call_a_regression() {
        // At zero tolerance the rule is a plain two-sided test, the hardest case for false
        // alarms: over all looks at most α/2 = 2.5 % may end in a regression.
        let alarms = (0..400)
            .filter(|&s| simulate(0.0, 0.05, 0.0, 0x9e37_79b9 + s).0 == Some(Verdict::Regression))
            .count();
        assert!(alarms <= 12, "{alarms} of 400");
    }

    #[test]
    fn a_five_percent_change_is_caught_at_a_two_percent_tolerance() {
        // With the spread measured here (sd 4.5 % of ln(B ÷ A) per pair of 1.5 s rounds),
        // +5 % must be caught nearly always within the 100 pairs.
        let caught = (0..200)
            .filter(|&s| {
                simulate(0.05f64.ln_1p(), 0.045, 0.02, 7 + s).0 == Some(Verdict::Regression)
            })
            .count();
        assert!(caught >= 190, "{caught} of 200");
    }
}
