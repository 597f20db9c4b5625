//! compare's overhead tables as rows of cells: of saved reports (separate runs), and of a
//! live comparison (settings measured in one window), with a TSV of one value per cell.

use crate::experiment::Finding;
use crate::gate::statistics::median;
use crate::report::compare::{Change, Comparison, TOTAL};
use crate::report::saved::{Metric, Saved};

fn label(metric: &str) -> String {
    if metric == TOTAL {
        "Captured total".into()
    } else {
        metric.to_string()
    }
}

fn change_of<'a>(c: &'a Comparison, setting: &str, metric: &str) -> Option<&'a Change> {
    c.changes
        .iter()
        .find(|x| x.setting == setting && x.metric == metric)
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:+.1}%"))
}

/// A finding in one word: more, less, same, inconclusive (the words sweep and the gate use
/// for the same cases, from [`crate::experiment::reading`]).
pub fn short(f: Option<Finding>) -> &'static str {
    crate::experiment::reading::word(f)
}

/// A change as a cell: the paired estimate, its interval, its word; and, right there, the
/// medians' ratio when it points the other way (an A/A compare read +2.6 % [+0.5, +5.1]
/// while the medians beside it showed the other setting cheaper, without a word).
fn change_cell(ch: &Change) -> String {
    let flag = if ch.sign_differs_from_medians() {
        format!(" (medians {}: other sign)", pct(ch.medians_change_pct))
    } else {
        String::new()
    };
    format!(
        "{} [{}, {}] {}{flag}",
        pct(ch.change_pct),
        pct(ch.low_pct),
        pct(ch.high_pct),
        short(ch.finding)
    )
}

/// Why a change and the medians beside it point opposite ways, for every change that does
/// (none: an empty string): which estimate the change is, and which of its two differences
/// from the medians turned the sign — the control's adjustment, or the pairing.
fn sign_notes(changes: &[Change]) -> String {
    let mut o = String::new();
    for ch in changes.iter().filter(|ch| ch.sign_differs_from_medians()) {
        let why = match (&ch.adjusted_by, ch.unadjusted_change_pct) {
            (Some(g), Some(u)) if u * ch.change_pct.unwrap_or(0.0) < 0.0 => {
                let control = changes
                    .iter()
                    .find(|c| c.setting == ch.setting && &c.metric == g)
                    .map(|c| {
                        format!(
                            " ({g} itself moved {} [{}, {}])",
                            pct(c.change_pct),
                            pct(c.low_pct),
                            pct(c.high_pct)
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "before the adjustment by {g}'s change in each cycle the pairs give {}, as the medians do: the adjustment turned the sign{control}",
                    pct(Some(u))
                )
            }
            _ => "the pairs cancel the machine's drift between cycles, which the medians, each setting's rounds taken apart, keep".to_string(),
        };
        o.push_str(&format!(
            "Note: {} {} against {}: the change {} [{}, {}] and the medians' ratio {} differ in sign. The change is the paired estimate, the one its interval and word are for; {why}.\n",
            ch.setting,
            label(&ch.metric),
            ch.against,
            pct(ch.change_pct),
            pct(ch.low_pct),
            pct(ch.high_pct),
            pct(ch.medians_change_pct),
        ));
    }
    o
}

/// A comparison of saved runs (separate runs, each with its own spread), as its outputs
/// see it: the runs, and the differences between them compared under --force.
pub struct SavedComparison<'a> {
    pub runs: &'a [Saved],
    pub forced_differences: &'a [String],
}

/// The paper's overhead table of a live comparison: each group's median µs/tran per
/// setting [its 95 % interval], then each setting's change against the first with the
/// paired interval and what it allows; last, Total Overhead % (the captured total's).
pub(crate) fn live_rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut header = vec!["us/tran: median [95% CI] of rounds; change vs first [CI]".to_string()];
    header.extend(c.settings.iter().map(|s| s.name.clone()));
    let mut out = vec![header];
    for (mi, metric) in c.metrics.iter().enumerate() {
        let mut row = vec![label(metric)];
        for (ai, arm) in c.arms.iter().enumerate() {
            let fig = arm
                .figures
                .get(mi)
                .copied()
                .flatten()
                .map_or("-".into(), |f| {
                    format!("{:.2} [{:.2}-{:.2}]", f.median, f.low, f.high)
                });
            let cell = match (ai, change_of(c, &arm.setting, metric)) {
                (0, _) | (_, None) => fig,
                (_, Some(ch)) => format!("{fig} {}", change_cell(ch)),
            };
            row.push(cell);
        }
        out.push(row);
    }
    let mut total = vec!["Total Overhead %".to_string()];
    for (ai, arm) in c.arms.iter().enumerate() {
        total.push(match (ai, change_of(c, &arm.setting, TOTAL)) {
            (0, _) | (_, None) => "-".into(),
            (_, Some(ch)) => change_cell(ch),
        });
    }
    out.push(total);
    out
}

/// The live comparison as a spreadsheet takes it: one row per setting and metric, one value
/// per cell, units in the column names, and how the run ended on every row.
pub(crate) fn live_tsv_rows(c: &Comparison) -> Vec<Vec<String>> {
    let opt = |v: Option<f64>, d: usize| v.map_or(String::new(), |v| format!("{v:.d$}"));
    let mut out = vec![
        [
            "setting",
            "metric",
            "rounds",
            "median_us_per_tran",
            "ci_low_us_per_tran",
            "ci_high_us_per_tran",
            "change_pct",
            "change_low_pct",
            "change_high_pct",
            "change_ci_level",
            "min_effect_pct",
            "finding",
            "medians_change_pct",
            "unadjusted_change_pct",
            "ended",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (mi, metric) in c.metrics.iter().enumerate() {
        for arm in &c.arms {
            let f = arm.figures.get(mi).copied().flatten();
            let ch = change_of(c, &arm.setting, metric);
            out.push(vec![
                arm.setting.clone(),
                metric.clone(),
                arm.rounds.to_string(),
                opt(f.map(|f| f.median), 3),
                opt(f.map(|f| f.low), 3),
                opt(f.map(|f| f.high), 3),
                opt(ch.and_then(|c| c.change_pct), 2),
                opt(ch.and_then(|c| c.low_pct), 2),
                opt(ch.and_then(|c| c.high_pct), 2),
                opt(ch.map(|c| 100.0 * c.level), 1),
                opt(ch.map(|c| c.min_effect_pct), 2),
                ch.map_or(String::new(), |c| short(c.finding).to_string()),
                opt(ch.and_then(|c| c.medians_change_pct), 2),
                opt(ch.and_then(|c| c.unadjusted_change_pct), 2),
                // On every row: a pasted row of a run cut short by a fault or an interrupt
                // must not pass for a whole one.
                c.run_shape.ended.to_string(),
            ]);
        }
    }
    out
}

/// The live comparison as text: how it was measured, the table, what each change allows.
pub(crate) fn live_text(c: &Comparison) -> String {
    let r = &c.run_shape;
    let mut s = format!(
        "oemputx compare: {} settings of one flow measured in one window: {} blocks of {} cycles (every setting once a cycle, in a balanced order), {:.0} s, {}
",
        c.settings.len(),
        r.blocks,
        r.cycles_per_block,
        r.elapsed_s,
        match r.ended {
            "decided" => "every change decided",
            "interrupted" => "interrupted",
            "failed" => "stopped by a fault",
            _ => "stopped at --max-time/--max-rounds",
        }
    );
    if let Some(p) = &c.partial {
        s.push_str(&p.line());
        s.push('\n');
    }
    for set in &c.settings {
        s.push_str(&format!(
            "  {}: {}
",
            set.name, set.command
        ));
    }
    s.push_str(&format!(
        "Each change: the paired estimate against {} and its interval over the blocks (the centre of the blocks' mean ratio of the cycles{}), not the ratio of the medians beside it; more/less when the whole interval lies beyond the minimum effect, same when it lies within it, inconclusive when it straddles it

",
        c.settings.first().map_or("", |x| x.name.as_str()),
        match (r.control.as_deref(), c.changes.iter().any(|ch| ch.adjusted_by.is_some())) {
            (Some(g), true) => format!(", each cycle adjusted by {g}'s change in it"),
            // No slope before the first look, none when the control itself differed.
            (Some(g), false) => format!(
                ", the pairs as measured: not adjusted by {g} (no look yet, or {g} itself differed between the settings)"
            ),
            (None, _) => String::new(),
        }
    ));
    s.push_str(&crate::export::cells::text(&live_rows(c)));
    s.push_str(&sign_notes(&c.changes));
    if !c.profile_diff.is_empty() {
        s.push_str(&format!(
            "\nMost changed: {}\n",
            super::profile::top_changes(&c.profile_diff, 3).join("; ")
        ));
        let base = c.settings.first().map_or("base", |x| x.name.as_str());
        for set in c.settings.iter().skip(1) {
            let of: Vec<_> = c
                .profile_diff
                .iter()
                .filter(|d| d.versus.as_deref() == Some(set.name.as_str()))
                .cloned()
                .collect();
            super::profile::diff_text(&mut s, &of, base, &set.name);
        }
    }
    s
}

/// One metric of one saved run: the median of its rounds, their range, and the change of
/// the median against the first run's.
#[derive(Debug, Clone, Copy)]
struct SavedCell {
    median: f64,
    low: f64,
    high: f64,
    rounds: usize,
    change_pct: Option<f64>,
}

/// Each metric of the saved runs (name, label, a cell per run), then each run's Total
/// Overhead % against the first (the corrected total's, else the captured total's).
#[allow(clippy::type_complexity)]
fn saved_table(
    runs: &[Saved],
) -> (
    Vec<(String, String, Vec<Option<SavedCell>>)>,
    Vec<Option<f64>>,
) {
    let mut metrics: Vec<String> = Vec::new();
    for r in runs {
        for g in r.group_names() {
            if !metrics.contains(&g) {
                metrics.push(g);
            }
        }
    }
    let labelled: Vec<(String, String)> = metrics
        .iter()
        .map(|g| (g.clone(), g.clone()))
        .chain([
            ("captured".to_string(), "Captured total".to_string()),
            ("corrected".to_string(), "Corrected total".to_string()),
        ])
        .collect();
    let mut table = Vec::new();
    for (name, label) in labelled {
        let metric = Metric::named(&name);
        let base = runs.first().map(|b| median(&b.samples(&metric)));
        let cells = runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let v = r.samples(&metric);
                if v.is_empty() {
                    return None;
                }
                let m = median(&v);
                let (low, high) = v
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                        (l.min(x), h.max(x))
                    });
                let change_pct = base
                    .filter(|b| i > 0 && *b > 0.0)
                    .map(|b| 100.0 * (m - b) / b);
                Some(SavedCell {
                    median: m,
                    low,
                    high,
                    rounds: v.len(),
                    change_pct,
                })
            })
            .collect();
        table.push((name, label, cells));
    }
    // The paper's last line: how much more each run costs in all than the first.
    let total = |r: &Saved| -> Option<f64> {
        [Metric::Corrected, Metric::Captured]
            .iter()
            .map(|m| median(&r.samples(m)))
            .find(|v| v.is_finite())
    };
    let base_total = runs.first().and_then(total);
    let overhead = runs
        .iter()
        .enumerate()
        .map(|(i, r)| match (i, base_total, total(r)) {
            (0, _, _) => None,
            (_, Some(b), Some(t)) if b > 0.0 => Some(100.0 * (t - b) / b),
            _ => None,
        })
        .collect();
    (table, overhead)
}

/// The overhead table as rows of cells, for a person: `median [min-max] (change)`.
pub fn rows(runs: &[Saved]) -> Vec<Vec<String>> {
    let mut header = vec!["us/tran (median [min-max] of rounds)".to_string()];
    header.extend(runs.iter().map(Saved::name));
    let mut out = vec![header];
    let (table, overhead) = saved_table(runs);
    for (_, label, cells) in table {
        let mut row = vec![label];
        row.extend(cells.iter().map(|c| match c {
            None => "-".into(),
            Some(c) => {
                let spread = if c.rounds > 1 {
                    format!(" [{:.2}-{:.2}]", c.low, c.high)
                } else {
                    String::new()
                };
                let delta = c
                    .change_pct
                    .map(|d| format!(" ({d:+.1}%)"))
                    .unwrap_or_default();
                format!("{:.2}{spread}{delta}", c.median)
            }
        }));
        out.push(row);
    }
    let mut row = vec!["Total Overhead %".to_string()];
    row.extend(overhead.iter().enumerate().map(|(i, o)| match (i, o) {
        (0, _) => "-".into(),
        (_, Some(o)) => format!("{o:+.1}%"),
        (_, None) => "n/a".into(),
    }));
    out.push(row);
    out
}

/// [`saved_tsv_rows`] with each row's report identified (its settings, label, host state,
/// commit): row `i` is report `i % runs.len()`'s.
pub(crate) fn saved_tsv_rows_identified(runs: &[Saved]) -> Vec<Vec<String>> {
    let mut rows = saved_tsv_rows(runs);
    let ids: Vec<super::identity::Identity> = runs.iter().map(saved_identity).collect();
    super::identity::append(&mut rows, |i| {
        ids.get(i % ids.len().max(1)).cloned().unwrap_or_default()
    });
    rows
}

fn saved_identity(s: &Saved) -> super::identity::Identity {
    let r = &s.report;
    let set = &r.settings;
    let opt = |v: Option<String>| v.unwrap_or_default();
    super::identity::Identity {
        label: r.label.clone(),
        transport: set.transport.clone(),
        tasks: set.tasks.to_string(),
        msg_bytes: set.msg_bytes_max.to_string(),
        persistent: set.persistent.to_string(),
        syncpoint: set.syncpoint.to_string(),
        rounds: r.rounds.len().max(1).to_string(),
        count: opt(set.count.map(|c| c.to_string())),
        duration_s: opt(set.duration_s.map(|d| d.to_string())),
        warmup: set.warmup.to_string(),
        rate_limit_tps: opt(set.rate_limit_tps.map(|r| r.to_string())),
        host_state: r
            .accounting
            .as_ref()
            .and_then(|a| a.host_load.as_ref())
            .map(|h| h.state.word().to_string())
            .unwrap_or_default(),
        commit: r.commit.clone().unwrap_or_default(),
        queue_type: opt(set.queue_type.map(|q| q.to_string())),
        replicas: opt(set.replicas.map(|n| n.to_string())),
        ..super::identity::Identity::default()
    }
}

/// The saved runs' table as a spreadsheet takes it: one row per report and metric, one
/// value per cell (it was "29.22 [26.47-41.95] (-54.6%)" in one cell), units in the column
/// names; the Total Overhead % as metric `total_overhead`.
pub(crate) fn saved_tsv_rows(runs: &[Saved]) -> Vec<Vec<String>> {
    let opt = |v: Option<f64>, d: usize| v.map_or(String::new(), |v| format!("{v:.d$}"));
    let mut out = vec![
        [
            "report",
            "metric",
            "rounds",
            "median_us_per_tran",
            "min_us_per_tran",
            "max_us_per_tran",
            "change_pct",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let (table, overhead) = saved_table(runs);
    for (name, _, cells) in &table {
        for (r, c) in runs.iter().zip(cells) {
            out.push(vec![
                r.name(),
                name.clone(),
                c.map_or(String::new(), |c| c.rounds.to_string()),
                opt(c.map(|c| c.median), 3),
                opt(c.map(|c| c.low), 3),
                opt(c.map(|c| c.high), 3),
                opt(c.and_then(|c| c.change_pct), 2),
            ]);
        }
    }
    for (r, o) in runs.iter().zip(&overhead) {
        out.push(vec![
            r.name(),
            "total_overhead".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            opt(*o, 2),
        ]);
    }
    out
}

/// The tag of a comparison of saved runs in JSON.
pub const SAVED_SCHEMA: &str = "oemputx.compare-saved/1";

/// A comparison of saved runs as JSON (`oemputx.compare-saved/1`): the same figures as
/// the table and the TSV, typed, and the differences a `--force` overrode.
pub(crate) fn saved_json(runs: &[Saved], forced_differences: &[String]) -> serde_json::Value {
    use serde_json::json;
    let (table, overhead) = saved_table(runs);
    let finite = |v: f64| v.is_finite().then_some(v);
    let metrics: Vec<serde_json::Value> = table
        .iter()
        .map(|(name, label, cells)| {
            let cells: Vec<serde_json::Value> = runs
                .iter()
                .zip(cells)
                .map(|(r, c)| match c {
                    None => serde_json::Value::Null,
                    Some(c) => json!({
                        "report": r.name(),
                        "rounds": c.rounds,
                        "median_us_per_tran": finite(c.median),
                        "min_us_per_tran": finite(c.low),
                        "max_us_per_tran": finite(c.high),
                        "change_pct": c.change_pct.and_then(finite),
                    }),
                })
                .collect();
            json!({"metric": name, "label": label, "cells": cells})
        })
        .collect();
    json!({
        "schema": SAVED_SCHEMA,
        "reports": runs.iter().map(Saved::name).collect::<Vec<_>>(),
        "separate_runs": true,
        "metrics": metrics,
        "total_overhead_pct": overhead.iter().map(|o| o.and_then(finite)).collect::<Vec<_>>(),
        "forced_differences": forced_differences,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(name: &str, tasks: u64, flow: &[f64], corrected: &[f64]) -> Saved {
        let rounds: Vec<serde_json::Value> = flow
            .iter()
            .zip(corrected)
            .map(|(f, c)| {
                serde_json::json!({
                    "corrected_us_per_tran": c, "captured_us_per_tran": c,
                    "rate_tps": 100.0, "round_trip_us": {"p99": 10.0},
                    "groups": [{"name": "FLOW", "total_us_per_tran": f}]
                })
            })
            .collect();
        Saved::from_json(
            name.into(),
            serde_json::json!({
                "schema": crate::report::SCHEMA,
                "settings": {"transport": "amqp", "message_source": "m", "msg_bytes_max": 630,
                             "tasks": tasks, "persistent": false, "syncpoint": false, "msgs_per_loop": 1},
                "groups": [{"name": "FLOW", "total_us_per_tran": flow[0]}],
                "rate_tps": 100.0, "round_trip_us": {"p99": 10.0},
                "captured_us_per_tran": corrected[0], "corrected_us_per_tran": corrected[0],
                "rounds": rounds,
            }),
        )
        .expect("a valid report")
    }

    /// An A/A-like compare built from constructed rounds: in every cycle the other
    /// setting's FLOW moves with its DRIVER (slope 1) and 2 % above it; the DRIVER of the
    /// other setting happens to run 4 % cheaper on the whole (its own interval still holds
    /// no change, so the pairs are adjusted by it). As measured, FLOW is about 2 % cheaper
    /// in the other setting — the medians say so — while the adjusted pairs say +2 %.
    fn medians_against_pairs() -> Vec<Change> {
        use crate::experiment::{Experiment, Figures};
        let metrics = vec!["FLOW".to_string(), "DRIVER".to_string()];
        let design = crate::report::compare::design(&metrics, 2, (0.01, 0.0), Some("DRIVER"), 16);
        let mut e = Experiment::new(design).expect("design");
        e.plan(16);
        for k in 0..16usize {
            // Blocks whose DRIVER ratio swings widely around -4 %: its interval holds 0.
            let offset = if k % 2 == 0 { 0.08 } else { -0.16 };
            for (j, within) in [0.03, -0.03, 0.02, -0.02].into_iter().enumerate() {
                let n = k * 4 + j;
                let weather = 1.0 + 0.002 * (n % 9) as f64;
                let c: f64 = offset + within;
                let noise = 0.002 * ((n * 7 % 5) as f64 - 2.0);
                let d = c + 0.02 + noise;
                let round = |flow: f64, driver: f64| Figures {
                    values: vec![Some(flow), Some(driver)],
                    control: Some(driver),
                };
                let base = round(100.0 * weather, 40.0 * weather);
                let other = round(100.0 * weather * d.exp(), 40.0 * weather * c.exp());
                if e.record(vec![base, other]).expect("cycle") && e.look_due() {
                    e.look(e.blocks() >= 16);
                }
            }
        }
        crate::report::compare::changes(&e, &["one".into(), "two".into()], Some("DRIVER"))
    }

    #[test]
    fn a_change_whose_sign_differs_from_the_medians_is_flagged_right_there() {
        let changes = medians_against_pairs();
        let flow = changes
            .iter()
            .find(|c| c.metric == "FLOW")
            .expect("a FLOW change");
        let (change, medians) = (
            flow.change_pct.unwrap_or(f64::NAN),
            flow.medians_change_pct.unwrap_or(f64::NAN),
        );
        assert!(change > 1.0 && medians < -1.0, "{flow:?}");
        assert!(flow.sign_differs_from_medians(), "{flow:?}");
        assert_eq!(flow.adjusted_by.as_deref(), Some("DRIVER"), "{flow:?}");
        // Before the adjustment the pairs agree with the medians: the adjustment is what
        // turned the sign.
        assert!(
            flow.unadjusted_change_pct.is_some_and(|u| u < -1.0),
            "{flow:?}"
        );
        let cell = change_cell(flow);
        assert!(
            cell.contains(&format!("(medians {medians:+.1}%: other sign)")),
            "{cell}"
        );
        let notes = sign_notes(&changes);
        assert!(
            notes.contains("Note: two FLOW against one")
                && notes.contains("differ in sign")
                && notes.contains("the adjustment turned the sign (DRIVER itself moved"),
            "{notes}"
        );
        // DRIVER is the control: judged as measured, it agrees with its medians.
        let driver = changes
            .iter()
            .find(|c| c.metric == "DRIVER")
            .expect("a DRIVER change");
        assert!(!driver.sign_differs_from_medians(), "{driver:?}");
        assert!(!change_cell(driver).contains("other sign"));
    }

    #[test]
    fn a_sign_the_pairing_turns_is_flagged_with_the_pairing_as_the_reason() {
        use crate::experiment::{Experiment, Figures};
        // No control. The machine slows down from cycle 17 on (100 to 200 µs/tran); the
        // other setting costs 1 % less before and 20 % more after. Taken apart, both
        // settings' medians fall in the slow half's lower edge (100 and 99: -1 %); paired,
        // most blocks say +20 %.
        let metrics = vec!["FLOW".to_string()];
        let design = crate::report::compare::design(&metrics, 2, (0.01, 0.0), None, 8);
        let mut e = Experiment::new(design).expect("design");
        e.plan(8);
        for t in 0..32 {
            let (base, ratio) = if t <= 16 { (100.0, 0.99) } else { (200.0, 1.2) };
            let round = |v: f64| Figures {
                values: vec![Some(v)],
                control: None,
            };
            if e.record(vec![round(base), round(base * ratio)])
                .expect("cycle")
                && e.look_due()
            {
                e.look(e.blocks() >= 8);
            }
        }
        let changes = crate::report::compare::changes(&e, &["one".into(), "two".into()], None);
        let flow = &changes[0];
        assert!(
            flow.change_pct.is_some_and(|c| c > 5.0)
                && flow
                    .medians_change_pct
                    .is_some_and(|m| (m + 1.0).abs() < 1e-9),
            "{flow:?}"
        );
        assert_eq!(flow.adjusted_by, None);
        assert!(change_cell(flow).contains("(medians -1.0%: other sign)"));
        let notes = sign_notes(&changes);
        assert!(
            notes.contains("the pairs cancel the machine's drift between cycles"),
            "{notes}"
        );
    }

    #[test]
    fn the_overhead_table_gives_medians_spreads_and_the_total_overhead() {
        let a = saved("off.json", 1, &[100.0, 102.0, 98.0], &[200.0, 200.0, 200.0]);
        let b = saved(
            "node.json",
            1,
            &[110.0, 111.0, 109.0],
            &[220.0, 221.0, 219.0],
        );
        let rows = rows(&[a, b]);
        assert_eq!(
            rows[0],
            [
                "us/tran (median [min-max] of rounds)",
                "off.json",
                "node.json"
            ]
        );
        assert_eq!(
            rows[1],
            [
                "FLOW",
                "100.00 [98.00-102.00]",
                "110.00 [109.00-111.00] (+10.0%)"
            ]
        );
        let last = rows.last().expect("rows");
        assert_eq!(last, &["Total Overhead %", "-", "+10.0%"]);
    }
}
