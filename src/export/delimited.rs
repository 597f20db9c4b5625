//! TSV and CSV exporters: one header row with units in the column names, a row per process,
//! a row per group, with rounds a row per round and per group in each round, and a summary
//! row, written through the `csv` crate. Every row carries the run's label, start and the
//! settings that make two runs comparable (transport, tasks, message size, persistence), so
//! that rows of two runs pasted into one sheet can be told apart.
//!
//! TSV is the format to paste into a spreadsheet: dot decimals and no thousands separators,
//! or decimal commas with `--decimal-comma` for locales whose spreadsheets expect them
//! (TSV's tab delimiter keeps a decimal comma unambiguous; for CSV pick `--delimiter ';'`).

use super::cells::safe_cell;
use crate::report::Report;
use serde::Serialize;

/// How numbers are written: the CSV delimiter (TSV's is always a tab) and decimal commas.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    pub delimiter: u8,
    pub decimal_comma: bool,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            delimiter: b',',
            decimal_comma: false,
        }
    }
}

/// Seconds get 6 decimals (µs), everything else 3 (ns when in µs).
fn num(v: Option<f64>, f: Format) -> String {
    num_p(v, f, 3)
}

fn num_p(v: Option<f64>, f: Format, prec: usize) -> String {
    match v {
        Some(x) if x.is_finite() => {
            let s = format!("{x:.prec$}");
            if f.decimal_comma {
                s.replace('.', ",")
            } else {
                s
            }
        }
        _ => String::new(),
    }
}

/// One row of the file. The header is these field names, so the unit is in each column's
/// name; numbers are written by [`num`] before they get here, so that the decimal mark is
/// the user's choice.
#[derive(Debug, Default, Serialize)]
struct Line {
    row: &'static str,
    group: String,
    name: String,
    pid: String,
    user_us_per_tran: String,
    sys_us_per_tran: String,
    total_us_per_tran: String,
    pct: String,
    transactions: String,
    elapsed_s: String,
    rate_tps: String,
    round_trip_mean_us: String,
    round_trip_p99_us: String,
    app_cpu_us_per_tran: String,
    captured_us_per_tran: String,
    capture_ratio: String,
    corrected_us_per_tran: String,
    /// `measured`, `fixed`, or `not applied` (measured but too uncertain; the ratio shows 1).
    capture_ratio_source: String,
    label: String,
    start_utc: String,
    transport: String,
    tasks: String,
    msg_bytes: String,
    persistent: String,
    /// `quiet`, `busy` or `contended`: other work on the host during the window.
    host_state: String,
    /// CPU outside the groups, µs/tran (summary row).
    other_cpu_us_per_tran: String,
    // What else two pasted rows need to be compared (issue 47), on every row, after the
    // columns above so that their order stays as it was.
    rounds: String,
    count: String,
    duration_s: String,
    warmup: String,
    syncpoint: String,
    rate_limit_tps: String,
    /// The captured total's spread across rounds, (worst − best) ÷ median, % (summary row).
    captured_spread_pct: String,
    oemputx_version: String,
    /// The commit the run measured, when known.
    commit: String,
    /// A group's cost per million messages at `--price-per-vcpu-hour` (group rows).
    cost_per_million: String,
    // Cost beyond CPU (issue 60), group rows, after the columns above.
    disk_write_bytes_per_tran: String,
    disk_read_bytes_per_tran: String,
    write_calls_per_tran: String,
    read_calls_per_tran: String,
    syncs_per_tran: String,
    net_sent_bytes_per_tran: String,
    net_received_bytes_per_tran: String,
    voluntary_switches_per_tran: String,
    involuntary_switches_per_tran: String,
    rss_bytes: String,
    peak_rss_bytes: String,
    rss_growth_bytes_per_tran: String,
    // The store's replication (issue 63), on every row, last so that the order above stays.
    /// `--queue-type` (RabbitMQ), empty when not asked.
    queue_type: String,
    /// `--replicas` (NATS JetStream), empty when not asked.
    replicas: String,
    // Broken connections in total (summary row; empty when none).
    interruptions: String,
    longest_outage_ms: String,
    lost_at_breaks: String,
}

/// A group row's columns beyond CPU (empty where a figure is null).
fn beyond_cpu(c: &crate::accounting::resources::GroupCost, f: Format) -> Line {
    let n = |v: Option<f64>| num_p(v, f, 4);
    Line {
        disk_write_bytes_per_tran: n(c.disk_write_bytes_per_tran),
        disk_read_bytes_per_tran: n(c.disk_read_bytes_per_tran),
        write_calls_per_tran: n(c.write_calls_per_tran),
        read_calls_per_tran: n(c.read_calls_per_tran),
        syncs_per_tran: n(c.syncs_per_tran),
        net_sent_bytes_per_tran: n(c.net_sent_bytes_per_tran),
        net_received_bytes_per_tran: n(c.net_received_bytes_per_tran),
        voluntary_switches_per_tran: n(c.voluntary_switches_per_tran),
        involuntary_switches_per_tran: n(c.involuntary_switches_per_tran),
        rss_bytes: num_p(c.rss_bytes, f, 0),
        peak_rss_bytes: num_p(c.peak_rss_bytes, f, 0),
        rss_growth_bytes_per_tran: n(c.rss_growth_bytes_per_tran),
        ..Line::default()
    }
}

/// The lines of a report: processes, groups, rounds (with two or more), the summary.
fn lines(r: &Report, f: Format) -> Vec<Line> {
    let mut out = Vec::new();
    for p in &r.processes {
        out.push(Line {
            row: "process",
            group: safe_cell(&p.group).into_owned(),
            name: safe_cell(&p.name).into_owned(),
            pid: p.pid.map(|x| x.to_string()).unwrap_or_default(),
            user_us_per_tran: num(Some(p.user_us_per_tran), f),
            sys_us_per_tran: num(Some(p.sys_us_per_tran), f),
            total_us_per_tran: num(Some(p.total_us_per_tran), f),
            pct: num(Some(p.pct), f),
            ..Line::default()
        });
    }
    for g in &r.groups {
        out.push(Line {
            row: "group",
            group: safe_cell(&g.name).into_owned(),
            name: safe_cell(&format!("{}*", g.name)).into_owned(),
            user_us_per_tran: num(Some(g.user_us_per_tran), f),
            sys_us_per_tran: num(Some(g.sys_us_per_tran), f),
            total_us_per_tran: num(Some(g.total_us_per_tran), f),
            pct: num(Some(g.pct), f),
            cost_per_million: num_p(
                r.capacity.as_ref().and_then(|c| {
                    c.groups
                        .iter()
                        .find(|cg| cg.name == g.name && cg.host == g.host)
                        .and_then(|cg| cg.cost_per_million)
                }),
                f,
                9,
            ),
            ..beyond_cpu(&g.cost, f)
        });
    }
    if r.rounds.len() > 1 {
        for rd in &r.rounds {
            out.push(Line {
                row: "round",
                name: format!("round {}", rd.round),
                transactions: rd.transactions.to_string(),
                elapsed_s: num_p(Some(rd.elapsed_s), f, 6),
                rate_tps: num(Some(rd.rate_tps), f),
                round_trip_mean_us: num(Some(rd.round_trip_us.mean), f),
                round_trip_p99_us: num(Some(rd.round_trip_us.p99), f),
                app_cpu_us_per_tran: num(rd.app_cpu_us_per_tran, f),
                captured_us_per_tran: num(rd.captured_us_per_tran, f),
                corrected_us_per_tran: num(rd.corrected_us_per_tran, f),
                ..Line::default()
            });
            // Each group's CPU in the round: one row each, so a pivot table takes them.
            for g in &rd.groups {
                out.push(Line {
                    row: "round",
                    group: safe_cell(&g.name).into_owned(),
                    name: format!("round {}", rd.round),
                    total_us_per_tran: num(Some(g.total_us_per_tran), f),
                    ..Line::default()
                });
            }
        }
    }
    out.push(Line {
        row: "summary",
        name: safe_cell(&r.settings.qmgr).into_owned(),
        transactions: r.transactions.to_string(),
        elapsed_s: num_p(Some(r.elapsed_s), f, 6),
        rate_tps: num(Some(r.rate_tps), f),
        round_trip_mean_us: num(Some(r.round_trip_us.mean), f),
        round_trip_p99_us: num(Some(r.round_trip_us.p99), f),
        app_cpu_us_per_tran: num(r.app_cpu.us_per_tran, f),
        captured_us_per_tran: num(r.captured_us_per_tran, f),
        capture_ratio: num(r.capture_ratio.as_ref().map(|c| c.value), f),
        capture_ratio_source: r
            .capture_ratio
            .as_ref()
            .map(|c| c.source.to_string())
            .unwrap_or_default(),
        corrected_us_per_tran: num(r.corrected_us_per_tran, f),
        other_cpu_us_per_tran: num(r.other_cpu.as_ref().map(|o| o.us_per_tran), f),
        captured_spread_pct: num(
            r.rounds_summary
                .as_ref()
                .and_then(|s| s.captured_us_per_tran.as_ref())
                .map(|b| b.spread_pct),
            f,
        ),
        ..interruption_cells(r, f)
    });
    identify(&mut out, r, f);
    out
}

/// The summary row's broken connections in total (empty cells when none).
fn interruption_cells(r: &Report, f: Format) -> Line {
    let Some(t) = &r.interruptions_total else {
        return Line::default();
    };
    Line {
        interruptions: t.interruptions.to_string(),
        longest_outage_ms: num(Some(t.longest_outage_ms), f),
        lost_at_breaks: t.lost.to_string(),
        ..Line::default()
    }
}

/// The run's identity and settings on every row, so that rows of runs pasted into one
/// sheet can be told apart and judged.
fn identify(out: &mut [Line], r: &Report, f: Format) {
    let host_state = r
        .accounting
        .as_ref()
        .and_then(|a| a.host_load.as_ref())
        .map(|h| h.state.word().to_string())
        .unwrap_or_default();
    // The run's identity and settings on every row.
    let s = &r.settings;
    for line in out.iter_mut() {
        line.label = safe_cell(&r.label).into_owned();
        line.start_utc = r.start_utc.clone();
        line.transport = s.transport.to_string();
        line.tasks = s.tasks.to_string();
        line.msg_bytes = super::identity::msg_bytes(s);
        line.persistent = s.persistent.to_string();
        line.host_state.clone_from(&host_state);
        line.rounds = r.rounds.len().max(1).to_string();
        line.count = s.count.map(|c| c.to_string()).unwrap_or_default();
        line.duration_s = num(s.duration_s, f);
        line.warmup = s.warmup.to_string();
        line.syncpoint = s.syncpoint.to_string();
        line.rate_limit_tps = num(s.rate_limit_tps, f);
        line.queue_type = s.queue_type.map(|q| q.to_string()).unwrap_or_default();
        line.replicas = s.replicas.map(|n| n.to_string()).unwrap_or_default();
        line.oemputx_version = r.tool.version.to_string();
        line.commit = safe_cell(r.commit.as_deref().unwrap_or_default()).into_owned();
    }
}

/// Render as delimited text (RFC 4180 quoting where a field needs it), header first. Text
/// cells (names, labels) are made safe for spreadsheets ([`safe_cell`]).
pub fn render(r: &Report, f: Format) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .delimiter(f.delimiter)
        .from_writer(Vec::new());
    for line in lines(r, f) {
        w.serialize(line)?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
