//! TSV and CSV exporters: one header row with units in the column names, a row per process,
//! a row per group and a summary row, written through the `csv` crate.
//!
//! TSV is the format to paste into a spreadsheet: dot decimals and no thousands separators,
//! or decimal commas with `--decimal-comma` for locales whose spreadsheets expect them
//! (TSV's tab delimiter keeps a decimal comma unambiguous; for CSV pick `--delimiter ';'`).

use crate::report::Report;

/// Column names; the unit is in each name.
pub const COLUMNS: &[&str] = &[
    "row",
    "group",
    "name",
    "pid",
    "user_us_per_tran",
    "sys_us_per_tran",
    "total_us_per_tran",
    "pct",
    "transactions",
    "elapsed_s",
    "rate_tps",
    "round_trip_mean_us",
    "round_trip_p99_us",
    "app_cpu_us_per_tran",
    "captured_us_per_tran",
    "capture_ratio",
    "corrected_us_per_tran",
    "label",
    "start_utc",
];

/// How numbers are written.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    pub delimiter: u8,
    pub decimal_comma: bool,
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

/// The rows of a report, header first, as strings.
pub fn rows(r: &Report, f: Format) -> Vec<Vec<String>> {
    let mut out = vec![COLUMNS.iter().map(|c| c.to_string()).collect::<Vec<_>>()];
    let blank = || vec![String::new(); COLUMNS.len()];
    for p in &r.processes {
        let mut row = blank();
        row[0] = "process".into();
        row[1] = p.group.clone();
        row[2] = p.name.clone();
        row[3] = p.pid.map(|x| x.to_string()).unwrap_or_default();
        row[4] = num(Some(p.user_us_per_tran), f);
        row[5] = num(Some(p.sys_us_per_tran), f);
        row[6] = num(Some(p.total_us_per_tran), f);
        row[7] = num(Some(p.pct), f);
        out.push(row);
    }
    for g in &r.groups {
        let mut row = blank();
        row[0] = "group".into();
        row[1] = g.name.clone();
        row[2] = format!("{}*", g.name);
        row[4] = num(Some(g.user_us_per_tran), f);
        row[5] = num(Some(g.sys_us_per_tran), f);
        row[6] = num(Some(g.total_us_per_tran), f);
        row[7] = num(Some(g.pct), f);
        out.push(row);
    }
    if r.rounds.len() > 1 {
        for rd in &r.rounds {
            let mut row = blank();
            row[0] = "round".into();
            row[2] = format!("round {}", rd.round);
            row[8] = rd.transactions.to_string();
            row[9] = num_p(Some(rd.elapsed_s), f, 6);
            row[10] = num(Some(rd.rate_tps), f);
            row[11] = num(Some(rd.round_trip_us.mean), f);
            row[12] = num(Some(rd.round_trip_us.p99), f);
            row[13] = num(rd.app_cpu_us_per_tran, f);
            row[14] = num(rd.captured_us_per_tran, f);
            row[16] = num(rd.corrected_us_per_tran, f);
            out.push(row);
        }
    }
    let mut row = blank();
    row[0] = "summary".into();
    row[2] = r.settings.qmgr.clone();
    row[8] = r.transactions.to_string();
    row[9] = num_p(Some(r.elapsed_s), f, 6);
    row[10] = num(Some(r.rate_tps), f);
    row[11] = num(Some(r.round_trip_us.mean), f);
    row[12] = num(Some(r.round_trip_us.p99), f);
    row[13] = num(r.app_cpu.us_per_tran, f);
    row[14] = num(r.captured_us_per_tran, f);
    row[15] = num(r.capture_ratio.as_ref().map(|c| c.value), f);
    row[16] = num(r.corrected_us_per_tran, f);
    row[17] = r.label.clone();
    row[18] = r.start_utc.clone();
    out.push(row);
    out
}

/// Render as delimited text (RFC 4180 quoting where a field needs it).
pub fn render(r: &Report, f: Format) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .delimiter(f.delimiter)
        .from_writer(Vec::new());
    for row in rows(r, f) {
        w.write_record(&row)?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
