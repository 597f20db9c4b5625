//! OpenMetrics text (the Prometheus exposition format's standard, RFC draft
//! "OpenMetrics"): a run's summary, and `cpu --interval`'s groups, for a metrics system.
//! node_exporter's textfile collector reads such a file from a folder; the file is written
//! atomically (temp file + rename) each time, so it never sees half of one.
//!
//! Per group: CPU seconds as counters (`…_seconds_total`, user and system apart, labelled
//! by group and host), and for a run µs per transaction as gauges. Every family has its
//! TYPE and HELP, counters end in `_total`, the text ends with `# EOF`.

use crate::report::Report;
use std::fmt::Write as _;

/// A label value as OpenMetrics quotes it: backslash, double quote and newline escaped,
/// and every other control character (a carriage return, an escape sequence) replaced by
/// U+FFFD: the grammar has no escape for them, and a `\r` made whole expositions
/// unparseable to scrapers.
fn label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A sample value: finite numbers only (a NaN or infinity is left out by the callers).
fn value(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// One metric family being written.
struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
    suffix: &'static str,
}

impl<'a> Family<'a> {
    fn new(
        out: &'a mut String,
        name: &'static str,
        kind: &str,
        unit: Option<&str>,
        help: &str,
    ) -> Family<'a> {
        let _ = writeln!(out, "# TYPE {name} {kind}");
        if let Some(u) = unit {
            let _ = writeln!(out, "# UNIT {name} {u}");
        }
        let _ = writeln!(out, "# HELP {name} {help}");
        let suffix = if kind == "counter" { "_total" } else { "" };
        Family { out, name, suffix }
    }

    fn sample(&mut self, labels: &[(&str, &str)], x: f64) {
        if !x.is_finite() {
            return;
        }
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", label(v)))
            .collect();
        let _ = writeln!(
            self.out,
            "{}{}{{{}}} {}",
            self.name,
            self.suffix,
            labels.join(","),
            value(x)
        );
    }
}

/// A group's CPU as OpenMetrics counts it (the model's, which `cpu --interval` keeps).
pub use crate::report::cpu::GroupCpu;

fn cpu_counter(out: &mut String, groups: &[GroupCpu], help: &str, extra: &[(&str, &str)]) {
    let mut f = Family::new(
        out,
        "oemputx_group_cpu_seconds",
        "counter",
        Some("seconds"),
        help,
    );
    for g in groups {
        for (mode, x) in [("user", g.user_s), ("system", g.sys_s)] {
            let mut l = vec![
                ("group", g.group.as_str()),
                ("host", g.host.as_str()),
                ("mode", mode),
            ];
            l.extend_from_slice(extra);
            f.sample(&l, x);
        }
    }
}

/// A run's summary: its transactions, rate, round trip, and each group's CPU seconds over
/// the window (counters) and µs per transaction (gauges).
pub fn run(r: &Report) -> String {
    let mut o = String::new();
    let run_labels: [(&str, &str); 2] = [("label", &r.label), ("transport", &r.settings.transport)];
    let n = r.transactions as f64;
    Family::new(
        &mut o,
        "oemputx_transactions",
        "counter",
        None,
        "Round trips of the run whose reply was matched.",
    )
    .sample(&run_labels, n);
    Family::new(
        &mut o,
        "oemputx_rate_transactions_per_second",
        "gauge",
        None,
        "Matched round trips per second over the measured window.",
    )
    .sample(&run_labels, r.rate_tps);
    let mut rt = Family::new(
        &mut o,
        "oemputx_round_trip_microseconds",
        "gauge",
        None,
        "Round trip per message: mean and 99th percentile.",
    );
    rt.sample(
        &[run_labels[0], run_labels[1], ("stat", "mean")],
        r.round_trip_us.mean,
    );
    rt.sample(
        &[run_labels[0], run_labels[1], ("stat", "p99")],
        r.round_trip_us.p99,
    );
    let groups: Vec<GroupCpu> = r
        .groups
        .iter()
        .map(|g| GroupCpu {
            group: g.name.clone(),
            host: g.host.clone(),
            user_s: g.user_us_per_tran * n / 1e6,
            sys_s: g.sys_us_per_tran * n / 1e6,
        })
        .collect();
    cpu_counter(
        &mut o,
        &groups,
        "CPU the group's processes used in the run's measured window.",
        &run_labels,
    );
    let mut per = Family::new(
        &mut o,
        "oemputx_group_cpu_microseconds_per_transaction",
        "gauge",
        None,
        "The group's CPU per matched round trip.",
    );
    for g in &r.groups {
        per.sample(
            &[
                ("group", &g.name),
                ("host", &g.host),
                run_labels[0],
                run_labels[1],
            ],
            g.total_us_per_tran,
        );
    }
    beyond_cpu(&mut o, r, &run_labels);
    let mut totals = Family::new(
        &mut o,
        "oemputx_total_cpu_microseconds_per_transaction",
        "gauge",
        None,
        "The groups' captured total per round trip, and corrected by the capture ratio.",
    );
    if let Some(c) = r.captured_us_per_tran {
        totals.sample(&[("total", "captured"), run_labels[0], run_labels[1]], c);
    }
    if let Some(c) = r.corrected_us_per_tran {
        totals.sample(&[("total", "corrected"), run_labels[0], run_labels[1]], c);
    }
    o.push_str("# EOF\n");
    o
}

/// Each group's figures beyond CPU, a gauge family per metric that any group has.
fn beyond_cpu(o: &mut String, r: &Report, run_labels: &[(&str, &str); 2]) {
    for m in &crate::accounting::resources::METRICS {
        let measured: Vec<_> = r
            .groups
            .iter()
            .filter_map(|g| Some((g, (m.get)(&g.cost)?)))
            .collect();
        if measured.is_empty() {
            continue;
        }
        let (unit, help) = match m.unit {
            crate::accounting::resources::Unit::Bytes => (
                Some("bytes"),
                format!(
                    "{} (bytes), the group's members summed.",
                    m.label.replace(", MB", "")
                ),
            ),
            _ => (None, format!("{} per matched round trip.", m.label)),
        };
        let mut f = Family::new(o, m.family, "gauge", unit, &help);
        for (g, v) in measured {
            f.sample(
                &[
                    ("group", &g.name),
                    ("host", &g.host),
                    run_labels[0],
                    run_labels[1],
                ],
                v,
            );
        }
    }
}

/// `cpu --interval`: each group's CPU seconds since the watch began (counters) and its CPUs
/// busy in the last interval (a gauge).
pub fn watch(total: &[GroupCpu], last: &[GroupCpu], interval_s: f64) -> String {
    let mut o = String::new();
    cpu_counter(
        &mut o,
        total,
        "CPU the group's processes used since oemputx cpu began watching.",
        &[],
    );
    let mut busy = Family::new(
        &mut o,
        "oemputx_group_cpus_busy",
        "gauge",
        None,
        "CPUs' worth the group kept busy in the last interval (CPU seconds per second).",
    );
    for g in last {
        if interval_s > 0.0 {
            busy.sample(
                &[("group", &g.group), ("host", &g.host)],
                (g.user_s + g.sys_s) / interval_s,
            );
        }
    }
    o.push_str("# EOF\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_counters_end_in_total_and_the_text_ends_with_eof() {
        let g = [GroupCpu {
            group: "Q\"M\\G\nR".into(),
            host: "local".into(),
            user_s: 1.5,
            sys_s: 0.25,
        }];
        let t = watch(&g, &g, 2.0);
        assert!(t.contains(r#"oemputx_group_cpu_seconds_total{group="Q\"M\\G\nR",host="local",mode="user"} 1.5"#), "{t}");
        assert!(
            t.contains(r#"oemputx_group_cpus_busy{group="Q\"M\\G\nR",host="local"} 0.875"#),
            "{t}"
        );
        assert!(t.contains(
            "# TYPE oemputx_group_cpu_seconds counter\n# UNIT oemputx_group_cpu_seconds seconds\n"
        ));
        assert!(t.ends_with("# EOF\n"));
        // A carriage return or an escape sequence in a name cannot break the exposition.
        assert_eq!(
            label("a\rb\u{1b}[31mc\td"),
            "a\u{fffd}b\u{fffd}[31mc\u{fffd}d"
        );
        assert_eq!(value(2.0), "2.0");
        assert_eq!(value(0.875), "0.875");
    }
}
