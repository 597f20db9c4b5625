//! A soak's trend: over five rounds or more, each group's CPU per message and resident set
//! against time, a least-squares slope with its 95 % interval (Student's t, n − 2 degrees of
//! freedom), and whether the system is steady.
//!
//! A group is not steady when its resident set grows (the interval of the slope above zero
//! and the growth over the run at least 1 % of the resident set) or its cost per message
//! moves (the interval of the slope excluding zero and the change over the run at least
//! 10 %): a run must show both a sure slope and one that matters, so that a busy host's
//! round-to-round noise is not read as a trend.
//!
//! The cost's verdict reads it against the driver's: each round's cost per message divided
//! by DRIVER's, whose work per message does not change. A host whose other load rises or
//! falls moves every process's cost alike (a 4-loop load ending mid-run made an unchanged C
//! responder's cost fall 17 % over 8 rounds here, and the driver's with it); what the
//! division leaves is the group's own drift. Without a driver row the raw series is judged.

use super::RoundRow;
use serde::{Deserialize, Serialize};

/// The fewest rounds a trend is computed from.
pub const MIN_ROUNDS: usize = 5;
/// The smallest growth of the resident set over the run, as a share of it, called a leak.
const RSS_SHARE: f64 = 0.01;
/// The smallest change of the cost per message over the run, as a share, called a drift.
const CPU_SHARE: f64 = 0.10;

/// A slope and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slope {
    pub per_hour: f64,
    pub low: f64,
    pub high: f64,
}

/// One group's trend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupTrend {
    pub name: String,
    /// The cost per message's slope, % of its mean per hour.
    pub us_per_tran_pct_per_hour: Option<Slope>,
    /// The same of the cost divided by DRIVER's, round by round: what the verdict judges
    /// (null without a driver row).
    #[serde(default)]
    pub adjusted_pct_per_hour: Option<Slope>,
    /// The resident set's slope, bytes per hour (null where it was not read).
    pub rss_bytes_per_hour: Option<Slope>,
    pub steady: bool,
    /// Why not, in words (empty when steady).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// The run's trend: each group's, and the verdict over all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    pub rounds: usize,
    /// Hours from the first round's start to the last round's end, as the rounds add up.
    pub hours: f64,
    pub groups: Vec<GroupTrend>,
    pub steady: bool,
    /// One line: "steady", or the first reason it is not.
    pub verdict: String,
    /// The series the slopes are fitted to, per group: (hours at the round's end, µs per
    /// message, resident bytes), for the HTML chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
}

/// One group's points, a round each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub hours: Vec<f64>,
    pub us_per_tran: Vec<f64>,
    pub rss_bytes: Vec<Option<f64>>,
}

/// Least squares of `y` on `x`: the slope and its 95 % interval; `None` with fewer than
/// three points or no spread in `x`.
pub fn fit(x: &[f64], y: &[f64]) -> Option<Slope> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = x.len();
    if n < 3 || y.len() != n {
        return None;
    }
    let (mx, my) = (mean(x), mean(y));
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let sse: f64 = x.iter().zip(y).map(|(u, v)| (v - a - b * u).powi(2)).sum();
    let se = (sse / (n - 2) as f64 / sxx).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 2) as f64)
        .ok()?
        .inverse_cdf(0.975);
    Some(Slope {
        per_hour: b,
        low: b - t * se,
        high: b + t * se,
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

impl Trend {
    /// The trend of a run's rounds (`None` below [`MIN_ROUNDS`]).
    pub fn of(rounds: &[RoundRow]) -> Option<Trend> {
        if rounds.len() < MIN_ROUNDS {
            return None;
        }
        let mut t = 0.0;
        let ends: Vec<f64> = rounds
            .iter()
            .map(|r| {
                t += r.elapsed_s / 3600.0;
                t
            })
            .collect();
        let hours = t;
        // Every group any round has (a round without a table has none), in first-seen order.
        let mut names: Vec<String> = Vec::new();
        for g in rounds.iter().flat_map(|r| &r.groups) {
            if g.name != "DRIVER" && !names.contains(&g.name) {
                names.push(g.name.clone());
            }
        }
        let driver: Vec<Option<f64>> = rounds
            .iter()
            .map(|r| {
                r.groups
                    .iter()
                    .find(|g| g.name == "DRIVER")
                    .map(|g| g.total_us_per_tran)
                    .filter(|v| *v > 0.0)
            })
            .collect();
        let mut groups = Vec::new();
        let mut series = Vec::new();
        for name in names {
            let pick = |f: &dyn Fn(&super::RoundGroup) -> Option<f64>| -> Vec<Option<f64>> {
                rounds
                    .iter()
                    .map(|r| r.groups.iter().find(|g| g.name == name).and_then(f))
                    .collect()
            };
            let us = pick(&|g| Some(g.total_us_per_tran));
            let rss = pick(&|g| g.cost.rss_bytes);
            let adjusted: Vec<Option<f64>> = us
                .iter()
                .zip(&driver)
                .map(|(u, d)| Some((*u)? / (*d)?))
                .collect();
            let control = driver
                .iter()
                .all(Option::is_some)
                .then_some(adjusted.as_slice());
            groups.push(group_trend(&name, &ends, (&us, control), &rss, hours));
            series.push(Series {
                name,
                hours: ends.clone(),
                us_per_tran: us.iter().map(|v| v.unwrap_or(f64::NAN)).collect(),
                rss_bytes: rss,
            });
        }
        let reasons: Vec<String> = groups.iter().flat_map(|g| g.reasons.clone()).collect();
        if groups.is_empty() {
            return None;
        }
        Some(Trend {
            rounds: rounds.len(),
            hours,
            steady: reasons.is_empty(),
            verdict: match reasons.first() {
                None => format!(
                    "steady: no group's resident set grows nor its cost per message moves over {} rounds",
                    rounds.len()
                ),
                Some(r) => format!("not steady: {r}"),
            },
            groups,
            series,
        })
    }
}

/// One group's slopes and verdict from its per-round figures.
fn group_trend(
    name: &str,
    ends: &[f64],
    (us, adjusted): (&[Option<f64>], Option<&[Option<f64>]>),
    rss: &[Option<f64>],
    hours: f64,
) -> GroupTrend {
    let points = |v: &[Option<f64>], at: &dyn Fn(usize) -> f64| -> (Vec<f64>, Vec<f64>) {
        v.iter()
            .enumerate()
            .filter_map(|(i, y)| y.filter(|y| y.is_finite()).map(|y| (at(i), y)))
            .unzip()
    };
    // The cost of a round is its mean over the round: placed at its middle.
    let mid = |i: usize| {
        let start = if i == 0 { 0.0 } else { ends[i - 1] };
        (start + ends[i]) / 2.0
    };
    // A slope as % of the series' mean per hour.
    let relative = |v: &[Option<f64>]| -> Option<Slope> {
        let (x, y) = points(v, &mid);
        let m = mean(&y);
        fit(&x, &y).filter(|_| m > 0.0).map(|s| Slope {
            per_hour: 100.0 * s.per_hour / m,
            low: 100.0 * s.low / m,
            high: 100.0 * s.high / m,
        })
    };
    let (rx, ry) = points(rss, &|i| ends[i]);
    let raw = relative(us);
    let adjusted = adjusted.and_then(relative);
    let judged = if adjusted.is_some() { adjusted } else { raw };
    let rss_slope = fit(&rx, &ry);
    let mut reasons = Vec::new();
    if let Some(s) = rss_slope {
        let grown = s.per_hour * hours;
        if s.low > 0.0 && grown >= RSS_SHARE * mean(&ry) {
            reasons.push(format!(
                "the resident set of {name} grows {} [{}, {}] ({:.1} % over the run)",
                per_hour_bytes(s.per_hour),
                per_hour_bytes(s.low),
                per_hour_bytes(s.high),
                100.0 * grown / mean(&ry)
            ));
        }
    }
    if let Some(s) = judged {
        let moved = s.per_hour * hours / 100.0;
        if (s.low > 0.0 || s.high < 0.0) && moved.abs() >= CPU_SHARE {
            reasons.push(format!(
                "the cost per message of {name}{} {} {:.1} %/h [{:.1}, {:.1}] ({:+.1} % over the run)",
                if adjusted.is_some() { ", against the driver's," } else { "" },
                if s.per_hour > 0.0 { "rises" } else { "falls" },
                s.per_hour.abs(),
                s.low,
                s.high,
                100.0 * moved
            ));
        }
    }
    // Fewer than three rounds with a figure: no slope, and no word of steadiness either.
    if raw.is_none() && rss_slope.is_none() {
        reasons.push(format!(
            "{name} has fewer than three rounds with figures: its trend cannot be judged"
        ));
    }
    GroupTrend {
        name: name.to_string(),
        us_per_tran_pct_per_hour: raw,
        adjusted_pct_per_hour: adjusted,
        rss_bytes_per_hour: rss_slope,
        steady: reasons.is_empty(),
        reasons,
    }
}

/// Bytes per hour in the unit that reads best (10^3 steps).
pub fn per_hour_bytes(b: f64) -> String {
    let a = b.abs();
    let (v, u) = if a >= 1e9 {
        (b / 1e9, "GB")
    } else if a >= 1e6 {
        (b / 1e6, "MB")
    } else if a >= 1e3 {
        (b / 1e3, "kB")
    } else {
        (b, "B")
    };
    format!("{v:.1} {u}/h")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_straight_line_is_fitted_exactly_and_noise_widens_the_interval() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let s = fit(&x, &[2.0, 4.0, 6.0, 8.0, 10.0]).expect("fit");
        assert!(
            (s.per_hour - 2.0).abs() < 1e-12 && (s.high - s.low).abs() < 1e-9,
            "{s:?}"
        );
        let s = fit(&x, &[2.0, 4.5, 5.5, 8.5, 9.5]).expect("fit");
        assert!(s.low < 2.0 && s.high > 2.0 && s.high - s.low > 0.5, "{s:?}");
        assert!(fit(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_none());
    }

    #[test]
    fn growth_is_named_only_when_sure_and_large_enough() {
        let ends = [0.1, 0.2, 0.3, 0.4, 0.5];
        let flat = [Some(100.0); 5];
        // 1 MB of 100 MB each tenth of an hour: 10 MB/h, 4 % over the run.
        let rss: Vec<Option<f64>> = (0..5).map(|i| Some(100e6 + 1e6 * i as f64)).collect();
        let g = group_trend("QMGR", &ends, (&flat, None), &rss, 0.5);
        assert!(!g.steady, "{g:?}");
        assert!(g.reasons[0].contains("grows 10.0 MB/h"), "{:?}", g.reasons);
        // The same growth, 0.1 % of the set: not a leak worth the name.
        let big: Vec<Option<f64>> = (0..5).map(|i| Some(4e9 + 1e6 * i as f64)).collect();
        assert!(group_trend("QMGR", &ends, (&flat, None), &big, 0.5).steady);
        // Noise in the cost: no trend called.
        let noisy = [
            Some(100.0),
            Some(104.0),
            Some(97.0),
            Some(103.0),
            Some(99.0),
        ];
        assert!(group_trend("FLOW", &ends, (&noisy, None), &[None; 5], 0.5).steady);
        // The host sped everything up by a fifth: the driver with it, no drift of the flow's.
        let falling: Vec<Option<f64>> = (0..5).map(|i| Some(100.0 - 5.0 * i as f64)).collect();
        let alone = group_trend("FLOW", &ends, (&falling, None), &[None; 5], 0.5);
        assert!(
            !alone.steady && alone.reasons[0].contains("falls"),
            "{alone:?}"
        );
        let level = [Some(2.0); 5];
        let g = group_trend("FLOW", &ends, (&falling, Some(&level)), &[None; 5], 0.5);
        assert!(g.steady, "{g:?}");
        assert!(g.us_per_tran_pct_per_hour.is_some_and(|s| s.per_hour < 0.0));
    }
}
