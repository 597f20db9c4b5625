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

/// The paper's overhead table of a live comparison: each group's median µs/tran per
/// setting [its 95 % interval], then each setting's change against the first with the
/// paired interval and what it allows; last, Total Overhead % (the captured total's).
pub fn live_rows(c: &Comparison) -> Vec<Vec<String>> {
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
                (_, Some(ch)) => format!(
                    "{fig} {} [{}, {}] {}",
                    pct(ch.change_pct),
                    pct(ch.low_pct),
                    pct(ch.high_pct),
                    short(ch.finding)
                ),
            };
            row.push(cell);
        }
        out.push(row);
    }
    let mut total = vec!["Total Overhead %".to_string()];
    for (ai, arm) in c.arms.iter().enumerate() {
        total.push(match (ai, change_of(c, &arm.setting, TOTAL)) {
            (0, _) | (_, None) => "-".into(),
            (_, Some(ch)) => format!(
                "{} [{}, {}] {}",
                pct(ch.change_pct),
                pct(ch.low_pct),
                pct(ch.high_pct),
                short(ch.finding)
            ),
        });
    }
    out.push(total);
    out
}

/// The live comparison as a spreadsheet takes it: one row per setting and metric, one value
/// per cell, units in the column names, and how the run ended on every row.
pub fn live_tsv_rows(c: &Comparison) -> Vec<Vec<String>> {
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
                // On every row: a pasted row of a run cut short by a fault or an interrupt
                // must not pass for a whole one.
                c.run_shape.ended.to_string(),
            ]);
        }
    }
    out
}

/// The live comparison as text: how it was measured, the table, what each change allows.
pub fn live_text(c: &Comparison) -> String {
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
        "Each change: the paired estimate against {} and its interval over the blocks{}; more/less when the whole interval lies beyond the minimum effect, same when it lies within it, inconclusive when it straddles it

",
        c.settings.first().map_or("", |x| x.name.as_str()),
        r.control
            .as_deref()
            .map(|g| format!(" (each pair adjusted by {g}'s change in it)"))
            .unwrap_or_default()
    ));
    s.push_str(&crate::export::cells::text(&live_rows(c)));
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

/// The saved runs' table as a spreadsheet takes it: one row per report and metric, one
/// value per cell (it was "29.22 [26.47-41.95] (-54.6%)" in one cell), units in the column
/// names; the Total Overhead % as metric `total_overhead`.
pub fn saved_tsv_rows(runs: &[Saved]) -> Vec<Vec<String>> {
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
