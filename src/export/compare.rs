//! compare's overhead table of saved reports, as rows of cells.

use crate::gate::statistics::median;
use crate::report::saved::{Metric, Saved};

/// The overhead table as rows of cells.
pub fn rows(runs: &[Saved]) -> Vec<Vec<String>> {
    let mut metrics: Vec<String> = Vec::new();
    for r in runs {
        for g in r.group_names() {
            if !metrics.contains(&g) {
                metrics.push(g);
            }
        }
    }
    let mut header = vec!["us/tran (median [min-max] of rounds)".to_string()];
    header.extend(runs.iter().map(Saved::name));
    let mut out = vec![header];
    let cell = |v: &[f64], base: Option<f64>| -> String {
        if v.is_empty() {
            return "-".into();
        }
        let m = median(v);
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            });
        let spread = if v.len() > 1 {
            format!(" [{lo:.2}-{hi:.2}]")
        } else {
            String::new()
        };
        let delta = match base {
            Some(b) if b > 0.0 => format!(" ({:+.1}%)", 100.0 * (m - b) / b),
            _ => String::new(),
        };
        format!("{m:.2}{spread}{delta}")
    };
    let labelled: Vec<(String, String)> = metrics
        .iter()
        .map(|g| (g.clone(), g.clone()))
        .chain([
            ("captured".to_string(), "Captured total".to_string()),
            ("corrected".to_string(), "Corrected total".to_string()),
        ])
        .collect();
    for (metric, label) in &labelled {
        let metric = Metric::named(metric);
        let base = runs.first().map(|b| median(&b.samples(&metric)));
        let mut row = vec![label.clone()];
        for (i, r) in runs.iter().enumerate() {
            row.push(cell(&r.samples(&metric), base.filter(|_| i > 0)));
        }
        out.push(row);
    }
    // The paper's last line: how much more each run costs in all than the first.
    let total = |r: &Saved| -> Option<f64> {
        [Metric::Corrected, Metric::Captured]
            .iter()
            .map(|m| median(&r.samples(m)))
            .find(|v| v.is_finite())
    };
    let base_total = runs.first().and_then(total);
    let mut row = vec!["Total Overhead %".to_string()];
    for (i, r) in runs.iter().enumerate() {
        row.push(match (i, base_total, total(r)) {
            (0, _, _) => "-".into(),
            (_, Some(b), Some(t)) if b > 0.0 => format!("{:+.1}%", 100.0 * (t - b) / b),
            _ => "n/a".into(),
        });
    }
    out.push(row);
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
