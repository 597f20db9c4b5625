//! What a profile warns about, and what changed between two sets of profiled rounds.
//!
//! A differential profile compares each function's self µs per message between the rounds
//! of A and those of B: the change is the difference of the means, its interval Welch's t
//! from the rounds' spread (not from one sample set's counting error: a round-to-round
//! spread is what a decision must stand on).

use super::{Profile, key};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Changes kept in a differential profile.
pub const TOP_CHANGES: usize = 20;

/// Folded stacks by group (stack → samples).
pub type Folded = BTreeMap<String, BTreeMap<String, u64>>;

/// What `--profile` adds to a comparison of two sides: each function's change, and each
/// side's stacks for the differential flame graphs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Differential {
    /// Largest absolute change first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile_diff: Vec<FunctionChange>,
    #[serde(skip)]
    pub folded: Option<Box<(Folded, Folded)>>,
}

impl Differential {
    /// From the rounds of each side; nothing when no round of a side has a profile.
    pub fn of<'a>(
        a: impl IntoIterator<Item = &'a Option<Profile>>,
        b: impl IntoIterator<Item = &'a Option<Profile>>,
        versus: Option<&str>,
    ) -> Differential {
        let a: Vec<&Profile> = a.into_iter().flatten().collect();
        let b: Vec<&Profile> = b.into_iter().flatten().collect();
        if a.is_empty() || b.is_empty() {
            return Differential::default();
        }
        let mut changes = differential(&a, &b);
        for c in &mut changes {
            c.versus = versus.map(String::from);
        }
        Differential {
            profile_diff: changes,
            folded: Some(Box::new((folded_by_group(&a), folded_by_group(&b)))),
        }
    }
}

/// One function's change between A and B.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionChange {
    /// compare: the setting set against the base (absent for the A/B gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versus: Option<String>,
    pub group: String,
    pub function: String,
    pub module: String,
    /// Mean over A's rounds of the function's self µs per message.
    pub a_us_per_tran: f64,
    pub b_us_per_tran: f64,
    /// B − A.
    pub change_us_per_tran: f64,
    /// 95 % interval of the change from the rounds (Welch); null with fewer than two
    /// rounds on a side.
    pub low_us_per_tran: Option<f64>,
    pub high_us_per_tran: Option<f64>,
    pub a_rounds: usize,
    pub b_rounds: usize,
}

impl FunctionChange {
    /// The change's interval, `[+3.10, +5.10]`, when the rounds gave one.
    pub fn interval(&self) -> Option<String> {
        match (self.low_us_per_tran, self.high_us_per_tran) {
            (Some(l), Some(h)) => Some(format!("[{l:+.2}, {h:+.2}]")),
            _ => None,
        }
    }

    /// `+4.1 µs/msg in xml_parse (FLOW)`, the verdict's and the annotation's words.
    pub fn line(&self) -> String {
        let interval = self.interval().map(|i| format!(" {i}")).unwrap_or_default();
        let side = self
            .versus
            .as_deref()
            .map(|v| format!(", {v}"))
            .unwrap_or_default();
        format!(
            "{:+.2} µs/msg{interval} in {} ({}{side})",
            self.change_us_per_tran, self.function, self.group
        )
    }
}

/// Each function's change from A's profiled rounds to B's, largest absolute change first.
pub fn differential(a: &[&Profile], b: &[&Profile]) -> Vec<FunctionChange> {
    let mut keys: BTreeSet<(String, (String, String))> = BTreeSet::new();
    for p in a.iter().chain(b) {
        for g in &p.groups {
            for f in &g.all {
                keys.insert((g.name.clone(), key(f)));
            }
        }
    }
    let values = |rounds: &[&Profile], group: &str, k: &(String, String)| -> Vec<f64> {
        rounds
            .iter()
            .map(|p| {
                p.group(group)
                    .and_then(|g| g.all.iter().find(|f| key(f) == *k))
                    .map_or(0.0, |f| f.self_us_per_tran)
            })
            .collect()
    };
    let mut out: Vec<FunctionChange> = keys
        .into_iter()
        .map(|(group, k)| {
            let va = values(a, &group, &k);
            let vb = values(b, &group, &k);
            let (ma, mb) = (mean(&va), mean(&vb));
            let interval = welch(&va, &vb);
            FunctionChange {
                versus: None,
                group,
                function: k.0,
                module: k.1,
                a_us_per_tran: ma,
                b_us_per_tran: mb,
                change_us_per_tran: mb - ma,
                low_us_per_tran: interval.map(|i| i.0),
                high_us_per_tran: interval.map(|i| i.1),
                a_rounds: va.len(),
                b_rounds: vb.len(),
            }
        })
        .collect();
    // The changes the rounds are sure of first (their interval leaves 0 out), each kind
    // largest first: under load one round's stall can put a large, unsure change on a
    // kernel function ahead of the function that did change.
    let sure = |c: &FunctionChange| match (c.low_us_per_tran, c.high_us_per_tran) {
        (Some(l), Some(h)) => l > 0.0 || h < 0.0,
        _ => false,
    };
    out.sort_by(|x, y| {
        sure(y)
            .cmp(&sure(x))
            .then(
                y.change_us_per_tran
                    .abs()
                    .total_cmp(&x.change_us_per_tran.abs()),
            )
            .then(x.function.cmp(&y.function))
    });
    out.truncate(TOP_CHANGES);
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn var(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len().max(2) - 1) as f64
}

/// The 95 % Welch interval of mean(b) − mean(a).
fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (qa, qb) = (var(a) / a.len() as f64, var(b) / b.len() as f64);
    let se = (qa + qb).sqrt();
    let d = mean(b) - mean(a);
    if se == 0.0 {
        return Some((d, d));
    }
    let df =
        (qa + qb).powi(2) / (qa.powi(2) / (a.len() - 1) as f64 + qb.powi(2) / (b.len() - 1) as f64);
    let t = StudentsT::new(0.0, 1.0, df.max(1.0))
        .ok()?
        .inverse_cdf(0.975);
    Some((d - t * se, d + t * se))
}

/// Folded stacks of several rounds, summed, by group.
pub(crate) fn folded_by_group(rounds: &[&Profile]) -> Folded {
    let mut out = Folded::new();
    for p in rounds {
        for g in &p.groups {
            let stacks = out.entry(g.name.clone()).or_default();
            for (s, n) in &g.folded {
                *stacks.entry(s.clone()).or_default() += n;
            }
        }
    }
    out
}

/// The profile's warnings: figures that lock-in may have biased, groups whose functions
/// perf could not name (and what would name them), groups it could not sample.
pub fn warn(p: &mut Profile, cgroup_groups: &[String]) {
    let mut w = Vec::new();
    for g in &p.groups {
        for f in g.functions.iter().filter(|f| f.lock_in.is_some()) {
            if let Some(l) = &f.lock_in {
                w.push(format!(
                    "{} {}: its samples came in step with the flow (a sample in it was followed by another in it {:.0} % of the time, against its {:.0} % share over {} pairs): the sampling may have locked in with a regular flow, so {:.2} µs/msg is not a fact; profile again, or add variation to the flow's work",
                    g.name,
                    f.name,
                    100.0 * l.next_same,
                    100.0 * l.share,
                    l.pairs,
                    f.total_us_per_tran
                ));
            }
        }
        if let Some(c) = g
            .coverage
            .filter(|c| g.samples >= 100 && !(0.85..=1.15).contains(c))
        {
            w.push(format!(
                "{}: perf's samples stand for {:.0} % of its measured CPU time (about 97 % when they spread evenly over its work): its split among functions is suspect",
                g.name,
                100.0 * c
            ));
        }
        if let Some(hint) = &g.unresolved_hint {
            w.push(format!(
                "{:.0} % of {} samples unresolved: {hint}",
                g.unresolved_pct, g.name
            ));
        }
        if g.samples == 0 && g.us_per_tran > 0.0 && !cgroup_groups.contains(&g.name) {
            w.push(format!(
                "{}: no samples in the window although it used {:.2} µs/msg (its processes came and went, or run on another host)",
                g.name, g.us_per_tran
            ));
        }
    }
    for c in cgroup_groups {
        w.push(format!(
            "{c} is measured as a cgroup, whose processes the profile does not know: name them with comm:, cmd: or pid: selectors to profile them"
        ));
    }
    p.warnings = w;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiling::{FunctionRow, GroupProfile};

    fn profile(parse: f64, render: f64) -> Profile {
        let f = |name: &str, us: f64| FunctionRow {
            name: name.into(),
            module: "flow".into(),
            self_us_per_tran: us,
            total_us_per_tran: us,
            ..FunctionRow::default()
        };
        Profile {
            groups: vec![GroupProfile {
                name: "FLOW".into(),
                all: vec![f("parse_request", parse), f("render_reply", render)],
                ..GroupProfile::default()
            }],
            ..Profile::default()
        }
    }

    #[test]
    fn the_function_made_costlier_comes_first_with_an_interval_from_the_rounds() {
        let a = [
            profile(60.0, 20.0),
            profile(61.0, 19.0),
            profile(59.0, 21.0),
        ];
        let b = [
            profile(60.5, 30.0),
            profile(59.5, 29.0),
            profile(60.0, 31.0),
        ];
        let d = differential(&a.iter().collect::<Vec<_>>(), &b.iter().collect::<Vec<_>>());
        assert_eq!(d[0].function, "render_reply");
        assert!((d[0].change_us_per_tran - 10.0).abs() < 1e-9, "{d:?}");
        let (l, h) = (
            d[0].low_us_per_tran.unwrap(),
            d[0].high_us_per_tran.unwrap(),
        );
        assert!(l > 7.0 && h < 13.0 && l < 10.0 && h > 10.0, "{l} {h}");
        // parse_request did not change: its interval holds 0.
        assert!(d[1].low_us_per_tran.unwrap() < 0.0 && d[1].high_us_per_tran.unwrap() > 0.0);
        assert!(
            d[0].line().starts_with("+10.00 µs/msg ["),
            "{}",
            d[0].line()
        );
        assert!(d[0].line().ends_with("in render_reply (FLOW)"));
    }

    #[test]
    fn one_round_a_side_gives_a_change_without_an_interval() {
        let (a, b) = (profile(60.0, 20.0), profile(60.0, 25.0));
        let d = differential(&[&a], &[&b]);
        assert_eq!(d[0].function, "render_reply");
        assert_eq!(d[0].low_us_per_tran, None);
        assert_eq!(d[0].a_rounds, 1);
    }
}
