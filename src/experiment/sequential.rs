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
//! **Repeated looks.** The gate looks after every finished block from the eighth on. Each
//! look's interval is a *repeated confidence interval* (Jennison & Turnbull, "Interim
//! analyses: the repeated confidence interval approach", JRSS B 51:305–361, 1989; *Group
//! Sequential Methods with Applications to Clinical Trials*, 2000, ch. 9): its width comes
//! from a group-sequential boundary, so that all the intervals of a run cover the true ratio
//! together with probability at least 1 − α, however the gate stops. Re-testing at the full
//! α at every look would not hold the stated rate.
//!
//! The boundaries spend α over the looks by the Lan–DeMets spending function of
//! O'Brien–Fleming type, α/2 per side by α(t) = 2 − 2Φ(z₁₋α/₄ ÷ √t), t being the share of the planned
//! blocks done (Lan & DeMets, "Discrete sequential boundaries for clinical trials",
//! Biometrika 70:659–663, 1983): early looks spend almost nothing (they can only stop a run
//! whose answer is already plain), the last look nearly the whole α. Each look's boundary
//! is exact for the normal approximation of the blocks' sum: the probability of having
//! crossed by then is computed by numerical integration over the looks before it
//! (Armitage, McPherson & Rowe, JRSS A 132:235–244, 1969; Jennison & Turnbull ch. 19),
//! instead of the conservative Bonferroni split that left the last look at α ÷ K.
//!
//! **The plan follows the budget.** The information fraction t is the blocks done over the
//! blocks planned, and the plan (how many blocks fit in --max-time and --max-rounds) is made
//! again at every look from how long blocks have taken — never from what they measured. When
//! blocks speed up (a busy machine going quiet), the plan grows and the run goes on to use
//! the time it was given instead of stopping undecided at a plan made early; when they slow
//! down, the plan shrinks. This is the Lan–DeMets method with the maximum information
//! re-estimated along the way (Lan & DeMets, "Changing frequency of interim analysis in
//! sequential monitoring", Biometrics 45:1017–1020, 1989; Jennison & Turnbull 2000, §7.2.2):
//! t never goes back (a larger plan leaves t where it was until the blocks catch up), each
//! look's boundary is solved exactly for the information actually reached, and a look that
//! turns out to be the last (the next block would not fit) spends all that is left — so the
//! intervals cover the true ratio together with probability 1 − α at any number of looks,
//! as long as the plan does not depend on the differences measured. It depends on how long
//! blocks took: with rounds of a count, on the sum of both sides' cost, which under no
//! change and a symmetric spread is uncorrelated with their difference (for a normal
//! spread, independent of it); the A/A calibrations (docs/gate.md) check what is left.
//!
//! α = 10 % two-sided: each one-sided error — calling a regression when the change is
//! within the tolerance, or a pass when it is beyond it — is at most 5 %.
//!
//! **Verdict** (tolerance t, oriented so that above 1 is worse): regression when the whole
//! interval lies above 1 + t; improvement when it lies below 1 − t; pass when its top is
//! within 1 + t; otherwise undecided, and the gate adds pairs.

use super::{Finding, Rule};
use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};

/// The fewest blocks at which the gate looks: with fewer, the signed-rank interval at an
/// early look's level cannot be bounded at all (2⁻ⁿ must be below its α/2).
pub const FIRST_LOOK: usize = 8;
/// Grid points over the continuation region in the numerical integration (odd, for
/// Simpson's rule): boundaries come out within 0.001 of published tables.
const GRID: usize = 401;
/// The grid never reaches beyond this many standard deviations of the sum: the density
/// there is below 1e-14.
const GRID_SDS: f64 = 8.0;

/// The error spending of a sequential run: the boundary of each look as it comes.
#[derive(Debug, Clone)]
pub struct Spending {
    /// The two-sided overall error level of the repeated intervals.
    alpha: f64,
    /// The blocks planned: the information at which t = 1.
    planned: usize,
    /// α spent by the looks so far.
    spent: f64,
    /// The information (blocks) of the last look, and the density of the sum Sₖ = Zₖ √Iₖ
    /// over the continuation region there, as (s, f(s) × Simpson weight) points.
    last_info: f64,
    density: Vec<(f64, f64)>,
    looks: usize,
    /// The information fraction of the last look (t never goes back).
    last_t: f64,
    /// The looks so far, as (blocks, plan, last): with α they fix the state.
    history: Vec<(usize, usize, bool)>,
}

/// The state after a given sequence of looks, by (α, looks with their plans): every run that
/// looks at the same blocks under the same plans shares its boundaries (a calibration
/// simulates thousands), so each is computed once per process.
type SpendKey = (u64, Vec<(usize, usize, bool)>);

fn spent_before()
-> &'static std::sync::Mutex<std::collections::HashMap<SpendKey, (Spending, Boundary)>> {
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<SpendKey, (Spending, Boundary)>>,
    > = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Entries kept at most (each a few kilobytes).
const CACHE_MAX: usize = 4096;

/// One look's boundary: |Z| at or beyond `z` stops; `level` is the two-sided nominal error
/// level of the look's interval, 2(1 − Φ(z)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boundary {
    pub z: f64,
    pub level: f64,
    /// Which look this was, from 1.
    pub look: usize,
    /// The information fraction the look spent up to (its blocks over the plan then, never
    /// below the look before; 1 at the last).
    pub fraction: f64,
}

fn std_normal() -> Normal {
    // Normal::new(0, 1) cannot fail; the fallback keeps this function total.
    Normal::new(0.0, 1.0).unwrap_or_else(|_| Normal::standard())
}

impl Spending {
    /// `alpha` two-sided over the whole run, spread over `planned` blocks.
    pub fn new(alpha: f64, planned: usize) -> Spending {
        Spending {
            alpha,
            planned: planned.max(1),
            spent: 0.0,
            last_t: 0.0,
            last_info: 0.0,
            density: Vec::new(),
            looks: 0,
            history: Vec::new(),
        }
    }

    /// The blocks planned.
    pub(crate) fn planned(&self) -> usize {
        self.planned
    }

    /// Re-plan (from how long blocks take, never from what they measured): the next look's
    /// information fraction is its blocks over this plan, but never below the last look's.
    pub(crate) fn plan(&mut self, planned: usize) {
        self.planned = planned.max(1);
    }

    /// The O'Brien–Fleming-type spending function, spent on each side alike: α spent by
    /// information fraction t is 2 × (2 − 2Φ(z₁₋α/₄ ÷ √t)), reaching α at t = 1 (the
    /// one-sided form of Lan & DeMets applied to each tail, as in DeMets & Lan, Stat. Med.
    /// 13:1341–1352, 1994, and R's gsDesign).
    fn spend(&self, t: f64) -> f64 {
        if t >= 1.0 {
            return self.alpha;
        }
        if t <= 0.0 {
            return 0.0;
        }
        let n = std_normal();
        let z = n.inverse_cdf(1.0 - self.alpha / 4.0);
        2.0 * (2.0 - 2.0 * n.cdf(z / t.sqrt()))
    }

    /// The boundary of a look after `blocks` blocks; `last` spends all α that is left.
    /// Looks must come with growing `blocks`.
    pub fn look(&mut self, blocks: usize, last: bool) -> Boundary {
        let mut history = self.history.clone();
        history.push((blocks, self.planned, last));
        let key = (self.alpha.to_bits(), history);
        if let Some((state, b)) = spent_before()
            .lock()
            .ok()
            .and_then(|c| c.get(&key).cloned())
        {
            *self = state;
            return b;
        }
        let b = self.compute_look(blocks, last);
        self.history = key.1.clone();
        if let Ok(mut c) = spent_before().lock() {
            if c.len() >= CACHE_MAX {
                c.clear();
            }
            c.insert(key, (self.clone(), b));
        }
        b
    }

    fn compute_look(&mut self, blocks: usize, last: bool) -> Boundary {
        let info = (blocks as f64).max(self.last_info + 1e-9);
        let t = (info / self.planned as f64).max(self.last_t);
        self.last_t = if last { t.max(1.0) } else { t };
        let target = if last {
            self.alpha
        } else {
            self.spend(t).min(self.alpha)
        };
        let step = (target - self.spent).max(0.0);
        let n = std_normal();
        let z = if self.looks == 0 {
            if step <= 0.0 {
                f64::INFINITY
            } else {
                n.inverse_cdf(1.0 - step / 2.0)
            }
        } else {
            self.solve(info, step)
        };
        let exit = if self.looks == 0 {
            step
        } else {
            self.exit_probability(info, z)
        };
        self.spent += exit;
        self.advance(info, z);
        self.looks += 1;
        Boundary {
            z,
            level: if z.is_finite() {
                2.0 * (1.0 - n.cdf(z))
            } else {
                0.0
            },
            look: self.looks,
            fraction: self.last_t,
        }
    }

    /// The boundary z at which the probability of first crossing at this look is `step`.
    fn solve(&self, info: f64, step: f64) -> f64 {
        if step <= 1e-15 || self.exit_probability(info, 40.0) >= step {
            return f64::INFINITY;
        }
        let (mut lo, mut hi) = (0.0, 40.0);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if self.exit_probability(info, mid) > step {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    /// P(not crossed before, |Z| ≥ z at information `info`), from the density carried over.
    fn exit_probability(&self, info: f64, z: f64) -> f64 {
        let n = std_normal();
        let sd = (info - self.last_info).sqrt();
        let b = z * info.sqrt();
        self.density
            .iter()
            .map(|&(s, fw)| fw * ((1.0 - n.cdf((b - s) / sd)) + n.cdf((-b - s) / sd)))
            .sum()
    }

    /// Carry the density of the sum over to this look's continuation region |S| < z √I.
    fn advance(&mut self, info: f64, z: f64) {
        let n = std_normal();
        let width = (z * info.sqrt()).min(GRID_SDS * info.sqrt());
        let h = 2.0 * width / (GRID - 1) as f64;
        let sd = (info - self.last_info).sqrt();
        let density = (0..GRID)
            .map(|i| {
                let s = -width + h * i as f64;
                let f = if self.looks == 0 {
                    n.pdf(s / sd) / sd
                } else {
                    self.density
                        .iter()
                        .map(|&(u, fw)| fw * n.pdf((s - u) / sd) / sd)
                        .sum()
                };
                // Simpson's weights: h/3 × 1, 4, 2, 4, …, 4, 1.
                let w = if i == 0 || i == GRID - 1 {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                (s, f * w * h / 3.0)
            })
            .collect();
        self.density = density;
        self.last_info = info;
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
pub(crate) fn paired_interval(log_ratios: &[f64], alpha: f64) -> Option<PairedInterval> {
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

/// What an interval (oriented: above 1 is worse) allows under `rule`, or None when it
/// allows nothing yet.
pub fn judge(i: &PairedInterval, rule: Rule) -> Option<Finding> {
    match rule {
        Rule::Gate { tolerance } => {
            if i.low > 1.0 + tolerance {
                Some(Finding::Worse)
            } else if i.high < 1.0 - tolerance {
                Some(Finding::Better)
            } else if i.high <= 1.0 + tolerance {
                Some(Finding::Within)
            } else {
                None
            }
        }
        Rule::Difference { min_effect } => {
            if i.low > 1.0 + min_effect {
                Some(Finding::Worse)
            } else if i.high < 1.0 - min_effect {
                Some(Finding::Better)
            } else if i.low >= 1.0 - min_effect && i.high <= 1.0 + min_effect {
                Some(Finding::Within)
            } else {
                None
            }
        }
    }
}

/// About how many pairs in all would narrow the interval enough to decide, if the spread
/// stays as it is: the interval must come within the gap between the estimate and the
/// tolerance's edge. None when the estimate sits on the edge (no number of pairs decides).
pub(crate) fn pairs_to_decide(i: &PairedInterval, tolerance: f64) -> Option<usize> {
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
pub(crate) fn detectable_change(sd_log: f64, pairs: usize, z: f64, tolerance: f64) -> f64 {
    let half = z * sd_log / (0.95 * pairs.max(1) as f64).sqrt();
    ((1.0 + tolerance).ln() + half).exp() - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundaries_match_published_tables() {
        // One look: the plain two-sided 95 % quantile.
        let mut one = Spending::new(0.05, 1);
        assert!((one.look(1, true).z - 1.959_964).abs() < 1e-4);
        // Four equally spaced looks, Lan–DeMets O'Brien–Fleming-type spending, 2.5 % on each
        // side: 4.3326, 2.9631, 2.3590, 2.0141 (R gsDesign, gsDesign(k = 4, test.type = 2,
        // sfu = sfLDOF)$upper$bound).
        let mut s = Spending::new(0.05, 4);
        let z: Vec<f64> = (1..=4).map(|k| s.look(k, k == 4).z).collect();
        for (got, want) in z.iter().zip([4.3326, 2.9631, 2.3590, 2.0141]) {
            assert!((got - want).abs() < 2e-3, "{z:?}");
        }
        // The whole α is spent by the last look, and levels fall as z rises.
        assert!((s.spent - 0.05).abs() < 1e-4, "{}", s.spent);
        // A last look that comes early spends all that is left.
        let mut short = Spending::new(0.10, 20);
        let early: Vec<Boundary> = (8..=12).map(|k| short.look(k, k == 12)).collect();
        assert!(early[0].level < 0.01 && early[4].level > 0.05, "{early:?}");
        assert!((short.spent - 0.10).abs() < 1e-3, "{}", short.spent);
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
        let gate = Rule::Gate { tolerance: 0.02 };
        assert_eq!(judge(&at(1.03, 1.07), gate), Some(Finding::Worse));
        assert_eq!(judge(&at(0.95, 1.015), gate), Some(Finding::Within));
        assert_eq!(judge(&at(0.90, 0.97), gate), Some(Finding::Better));
        assert_eq!(judge(&at(1.00, 1.04), gate), None);
        assert_eq!(judge(&at(1.01, 1.03), gate), None);
        assert_eq!(judge(&at(0.0, f64::INFINITY), gate), None);
        // A difference is reported beyond the minimum effect only, and "no difference"
        // only when the whole interval lies within it.
        let diff = Rule::Difference { min_effect: 0.01 };
        assert_eq!(judge(&at(1.02, 1.04), diff), Some(Finding::Worse));
        assert_eq!(judge(&at(0.995, 1.008), diff), Some(Finding::Within));
        assert_eq!(judge(&at(0.95, 1.015), diff), None);
        assert_eq!(judge(&at(1.005, 1.03), diff), None);
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

    /// Deterministic standard normal draws.
    fn normals(seed: u64) -> impl FnMut() -> f64 {
        let mut d = crate::stats::Draws::seeded(seed);
        move || d.normal()
    }

    const MAX: usize = 24;

    /// The boundaries of looks after every block from the eighth to the 24th: the same for
    /// every simulated run, as the plan does not depend on what the blocks measure.
    fn boundaries() -> Vec<Boundary> {
        let mut spending = Spending::new(0.10, MAX);
        (FIRST_LOOK..=MAX)
            .map(|n| spending.look(n, n == MAX))
            .collect()
    }

    /// Run the sequential rule on simulated blocks, looking after every block from the
    /// eighth; the verdict and the blocks it took.
    fn simulate(
        looks: &[Boundary],
        (shift, sd, tolerance): (f64, f64, f64),
        seed: u64,
    ) -> (Option<Finding>, usize) {
        let mut normal = normals(seed);
        let mut d = Vec::new();
        for n in 1..=MAX {
            d.push(shift + sd * normal());
            if n >= FIRST_LOOK {
                let i = paired_interval(&d, looks[n - FIRST_LOOK].level).expect("interval");
                if let Some(v) = judge(&i, Rule::Gate { tolerance }) {
                    return (Some(v), n);
                }
            }
        }
        (None, MAX)
    }

    /// How many of `runs` simulated runs end in each verdict: regression, pass, undecided.
    fn tally(case: (f64, f64, f64), runs: u64) -> [usize; 3] {
        let looks = boundaries();
        let mut t = [0; 3];
        for s in 0..runs {
            match simulate(&looks, case, 0x9e37_79b9 + 7919 * s).0 {
                Some(Finding::Worse) => t[0] += 1,
                Some(Finding::Within) => t[1] += 1,
                _ => t[2] += 1,
            }
        }
        t
    }

    #[test]
    fn under_no_change_the_repeated_intervals_rarely_call_a_regression() {
        // At zero tolerance the rule is a plain test, the hardest case for false alarms: over
        // all looks at most α/2 = 5 % may end in a regression (20 of 400 expected at most;
        // 30 allows for the draw).
        let [alarms, ..] = tally((0.0, 0.05, 0.0), 400);
        assert!(alarms <= 30, "{alarms} of 400");
    }

    #[test]
    fn rates_at_the_measured_spread() {
        // Blocks of four pairs spread with sd 3.5 % of ln(B ÷ A) on a calm machine and 5 %
        // on a busy one (lab/calibration). Printed for the docs; asserted loosely.
        for sd in [0.035, 0.05] {
            let aa = tally((0.0, sd, 0.02), 200);
            let plus5 = tally((0.05f64.ln_1p(), sd, 0.02), 200);
            println!("sd {sd}: A/A {aa:?}, +5% {plus5:?} (regression, pass, undecided of 200)");
            assert!(aa[0] <= 10, "{aa:?}");
        }
        let [caught, ..] = tally((0.05f64.ln_1p(), 0.035, 0.02), 200);
        assert!(caught >= 150, "{caught} of 200");
    }
}
