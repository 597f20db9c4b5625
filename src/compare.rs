//! Reading saved JSON reports back, and `oemputx compare`: the broker paper's overhead
//! table — each group's CPU µs per transaction in each run, and the Total Overhead % of each
//! run against the first. The gate reads reports the same way.

use crate::cli::CompareArgs;
use crate::exit_codes::Exit;
use crate::report::{self, cells};
use crate::stats::median;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A report that cannot be used: the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReportFileError {
    #[error(
        "cannot read report {path}: {why}; give the JSON a run wrote (--export-json, or reports/latest.json)"
    )]
    Unreadable { path: PathBuf, why: String },
    #[error(
        "{path} is not a JSON report ({why}); give the JSON a run wrote (--export-json, or reports/latest.json)"
    )]
    Corrupt { path: PathBuf, why: String },
    #[error(
        "{path} has schema '{found}', not '{}': it was written by another tool or an incompatible oemputx",
        report::SCHEMA
    )]
    Schema { path: PathBuf, found: String },
    #[error("the runs differ in what matters, so their costs do not compare:\n{}\nRun them with the same settings, or pass --force to compare anyway", .0.join("\n"))]
    Differs(Vec<String>),
}

/// One saved report.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    pub json: Value,
}

impl Saved {
    /// Read and check a report file.
    pub fn load(path: &Path) -> Result<Saved, ReportFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ReportFileError::Unreadable {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let json: Value = serde_json::from_str(&text).map_err(|e| ReportFileError::Corrupt {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let schema = json["schema"].as_str().unwrap_or("none");
        if schema != report::SCHEMA {
            return Err(ReportFileError::Schema {
                path: path.to_path_buf(),
                found: schema.to_string(),
            });
        }
        Ok(Saved {
            path: path.to_path_buf(),
            json,
        })
    }

    /// The file name, as a column heading.
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// Group names in the report's order.
    pub fn group_names(&self) -> Vec<String> {
        self.json["groups"]
            .as_array()
            .map(|g| {
                g.iter()
                    .filter_map(|g| g["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A metric's value in each round (one value for a single-round report). Metrics: a group
    /// name (its total µs/tran), `captured`, `corrected`, `rate` or `p99`.
    pub fn samples(&self, metric: &str) -> Vec<f64> {
        let rounds = self.json["rounds"].as_array().cloned().unwrap_or_default();
        let of_round = |r: &Value| -> Option<f64> {
            match metric {
                "captured" => r["captured_us_per_tran"].as_f64(),
                "corrected" => r["corrected_us_per_tran"].as_f64(),
                "rate" => r["rate_tps"].as_f64(),
                "p99" => r["round_trip_us"]["p99"].as_f64(),
                g => r["groups"].as_array()?.iter().find(|x| x["name"] == g)?["total_us_per_tran"]
                    .as_f64(),
            }
        };
        let v: Vec<f64> = rounds.iter().filter_map(of_round).collect();
        if !v.is_empty() {
            return v;
        }
        // A report without rounds: its whole-run figure.
        let whole = match metric {
            "captured" => self.json["captured_us_per_tran"].as_f64(),
            "corrected" => self.json["corrected_us_per_tran"].as_f64(),
            "rate" => self.json["rate_tps"].as_f64(),
            "p99" => self.json["round_trip_us"]["p99"].as_f64(),
            g => self.json["groups"]
                .as_array()
                .and_then(|gs| gs.iter().find(|x| x["name"] == g)?["total_us_per_tran"].as_f64()),
        };
        whole.into_iter().collect()
    }
}

/// The settings whose difference makes two runs' costs incomparable.
const MATTERS: &[(&str, &str)] = &[
    ("transport", "transport"),
    ("message_source", "message"),
    ("msg_bytes_max", "message size"),
    ("tasks", "tasks"),
    ("persistent", "persistence"),
    ("syncpoint", "syncpoint"),
    ("msgs_per_loop", "messages per loop"),
];

/// What differs between `base` and `other` in what matters, one line each; `groups` adds the
/// set of group names (the gate's rule).
pub fn differences(base: &Saved, other: &Saved, groups: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (key, what) in MATTERS {
        let (a, b) = (&base.json["settings"][key], &other.json["settings"][key]);
        if a != b {
            out.push(format!(
                "  {what}: {a} in {} but {b} in {}",
                base.name(),
                other.name()
            ));
        }
    }
    if groups {
        let (mut a, mut b) = (base.group_names(), other.group_names());
        a.sort();
        b.sort();
        if a != b {
            out.push(format!(
                "  groups: {} in {} but {} in {}",
                a.join(","),
                base.name(),
                b.join(","),
                other.name()
            ));
        }
    }
    out
}

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
        let base = runs.first().map(|b| median(&b.samples(metric)));
        let mut row = vec![label.clone()];
        for (i, r) in runs.iter().enumerate() {
            row.push(cell(&r.samples(metric), base.filter(|_| i > 0)));
        }
        out.push(row);
    }
    // The paper's last line: how much more each run costs in all than the first.
    let total = |r: &Saved| -> Option<f64> {
        ["corrected", "captured"]
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

/// `oemputx compare BASE.json OTHER.json…`.
pub fn run(args: &CompareArgs) -> anyhow::Result<Exit> {
    let runs: Vec<Saved> = args
        .reports
        .iter()
        .map(|p| Saved::load(p))
        .collect::<Result<_, _>>()?;
    let Some((base, others)) = runs.split_first() else {
        return Ok(Exit::Usage);
    };
    let diffs: Vec<String> = others
        .iter()
        .flat_map(|o| differences(base, o, false))
        .collect();
    if !diffs.is_empty() && !args.force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let rows = rows(&runs);
    let mut text =
        String::from("oemputx compare: CPU per transaction, each run against the first\n\n");
    text.push_str(&cells::text(&rows));
    if !diffs.is_empty() {
        text.push_str("\nCompared with --force although the runs differ:\n");
        text.push_str(&diffs.join("\n"));
        text.push('\n');
    }
    let write = |path: &Path, what: &str, body: &str| {
        report::write_output(path, &format!("the comparison {what}"), body)
    };
    let machine_on_stdout = [&args.export_tsv, &args.export_markdown]
        .iter()
        .any(|p| p.as_deref().is_some_and(|p| p.as_os_str() == "-"));
    if machine_on_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(p) = &args.export_tsv {
        write(p, "TSV", &cells::delimited(&rows, b'\t')?)?;
    }
    if let Some(p) = &args.export_markdown {
        write(p, "Markdown", &cells::markdown(&rows))?;
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(name: &str, tasks: u64, flow: &[f64], corrected: &[f64]) -> Saved {
        let rounds: Vec<Value> = flow
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
        Saved {
            path: PathBuf::from(name),
            json: serde_json::json!({
                "schema": report::SCHEMA,
                "settings": {"transport": "amqp", "message_source": "m", "msg_bytes_max": 630,
                             "tasks": tasks, "persistent": false, "syncpoint": false, "msgs_per_loop": 1},
                "groups": [{"name": "FLOW", "total_us_per_tran": flow[0]}],
                "rounds": rounds,
            }),
        }
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

    #[test]
    fn runs_that_differ_in_what_matters_are_listed() {
        let a = saved("a.json", 1, &[1.0], &[1.0]);
        let b = saved("b.json", 4, &[1.0], &[1.0]);
        let d = differences(&a, &b, false);
        assert_eq!(d, ["  tasks: 1 in a.json but 4 in b.json"]);
        assert!(differences(&a, &a, true).is_empty());
    }
}
