//! Taking out of each A/B pair what the whole machine did in that pair: a control variate.
//!
//! **Why.** In the A/B calibrations here, a pair's ln(B ÷ A) for the flow moved with the
//! same pair's ln(B ÷ A) for every other process: r = 0.5–0.8 with the driver, 0.9 with the
//! database, and 0.9 with the pair's inverse rate (lab/calibration, docs/history.md). A round
//! in which the machine is slower (other tenants, cache and scheduler weather) costs every
//! process more per message, and that common factor was most of the pairs' spread. The
//! driver runs the same code for A and B, so what its CPU per message does between the
//! two rounds of a pair is that weather, not the change under test.
//!
//! **How.** A control variate (Lavenberg & Welch, "A perspective on the use of control
//! variables to increase the efficiency of Monte Carlo simulations", Management Science
//! 27:322–335, 1981); in experimental design, the analysis of covariance on a concomitant
//! observation the treatment cannot affect (Cox, *Planning of Experiments*, 1958, ch. 4);
//! in online experiments, CUPED (Deng, Xu, Kohavi & Walker, WSDM 2013). Each pair's
//! d = ln(B ÷ A) of a metric becomes d − β·c, c being the same pair's ln(B ÷ A) of the
//! control, and β the slope of d on c over all pairs so far. If the control's expected c is
//! 0 the adjusted d keeps the metric's centre and loses the part of its spread that moves
//! with the control: (1 − r²) of its variance. β is the Theil–Sen slope, the median of the
//! slopes between all pairs of points (Theil 1950; Sen, JASA 63:1379–1389, 1968): like the
//! Hodges–Lehmann interval the gate uses, a burst in one round cannot drag it.
//!
//! **When not.** The control must not differ between the sides. The gate checks that at
//! every look: when the control's own interval excludes no change (a flow that answers so
//! differently that the driver's cost per message moves), the look is judged unadjusted
//! and says so.

/// The Theil–Sen slope of y on x: the median of (yⱼ − yᵢ) ÷ (xⱼ − xᵢ) over i < j with
/// xᵢ ≠ xⱼ. None with fewer than two distinct x or any value not finite.
pub(crate) fn theil_sen(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mut slopes = Vec::with_capacity(x.len() * x.len().saturating_sub(1) / 2);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let dx = x[j] - x[i];
            if dx != 0.0 {
                slopes.push((y[j] - y[i]) / dx);
            }
        }
    }
    crate::stats::median(&slopes)
}

/// One A/B pair of a metric: its ln(B ÷ A) and the control's in the same pair (NaN when a
/// side had no control figure).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub d: f64,
    pub control: f64,
}

/// The observation of each block: the mean over its pairs of d − β·control. With `beta`
/// 0 (or a block with a pair lacking the control), the block's plain mean of d.
pub(crate) fn block_means(blocks: &[Vec<Pair>], beta: f64) -> Vec<f64> {
    blocks
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| {
            let adjust = beta != 0.0 && b.iter().all(|p| p.control.is_finite());
            let sum: f64 = b
                .iter()
                .map(|p| if adjust { p.d - beta * p.control } else { p.d })
                .sum();
            sum / b.len() as f64
        })
        .collect()
}

/// The slope of a metric's pairs on the control's, over every pair of every block that has
/// both; None when there are too few to fit one.
pub fn slope(blocks: &[Vec<Pair>]) -> Option<f64> {
    let (x, y): (Vec<f64>, Vec<f64>) = blocks
        .iter()
        .flatten()
        .filter(|p| p.d.is_finite() && p.control.is_finite())
        .map(|p| (p.control, p.d))
        .unzip();
    if x.len() < 4 {
        return None;
    }
    theil_sen(&x, &y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_of_a_line_is_exact_and_ignores_a_wild_point() {
        let x: Vec<f64> = (0..20).map(|i| i as f64 * 0.01).collect();
        let y: Vec<f64> = x.iter().map(|v| 0.03 + 0.7 * v).collect();
        assert!((theil_sen(&x, &y).expect("slope") - 0.7).abs() < 1e-12);
        let mut wild = y.clone();
        wild[7] = 5.0;
        assert!((theil_sen(&x, &wild).expect("slope") - 0.7).abs() < 0.05);
        assert_eq!(theil_sen(&[1.0, 1.0], &[0.0, 2.0]), None);
        assert_eq!(theil_sen(&[0.0, f64::NAN], &[0.0, 1.0]), None);
    }

    /// Deterministic draws in [-0.5, 0.5).
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut d = crate::stats::Draws::seeded(seed);
        move || d.uniform() - 0.5
    }

    #[test]
    fn a_common_factor_is_taken_out_and_the_shift_is_kept() {
        // Each pair: the machine's weather w moves both the metric (by 0.8 w) and the
        // control (by w); the metric also has its own noise and a +5 % shift.
        let mut u = uniform(0x1234_5678);
        let blocks: Vec<Vec<Pair>> = (0..20)
            .map(|_| {
                (0..4)
                    .map(|_| {
                        let w = 0.3 * u();
                        Pair {
                            d: 0.05 + 0.8 * w + 0.05 * u(),
                            control: w + 0.02 * u(),
                        }
                    })
                    .collect()
            })
            .collect();
        let beta = slope(&blocks).expect("slope");
        assert!((beta - 0.8).abs() < 0.15, "{beta}");
        let sd = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let plain = block_means(&blocks, 0.0);
        let adjusted = block_means(&blocks, beta);
        assert!(
            sd(&adjusted) < 0.6 * sd(&plain),
            "{} {}",
            sd(&adjusted),
            sd(&plain)
        );
        assert!((mean(&adjusted) - 0.05).abs() < 0.01, "{}", mean(&adjusted));
    }

    #[test]
    fn without_the_control_a_block_keeps_its_plain_mean() {
        let blocks = vec![vec![
            Pair {
                d: 0.1,
                control: f64::NAN,
            },
            Pair {
                d: 0.3,
                control: 0.1,
            },
        ]];
        assert_eq!(block_means(&blocks, 0.5), vec![0.2]);
        assert_eq!(slope(&blocks), None);
    }
}
