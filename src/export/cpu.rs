//! `oemputx cpu`'s table on stdout, for a person (aligned columns) or a script (`--tsv`),
//! and how it is printed after the files of the same result ([`finish`]).

use super::outputs::Outputs;
use crate::report::cpu::CpuRow;
use crate::report::merge::CpuWindow;
use std::fmt::Write as _;

/// What `oemputx cpu` prints on stdout: its table for a person, or TSV.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    Text(String),
    Tsv(String),
}

/// The table of `rows`: its header when `header` (always under a `stamp` in text), each
/// block of text under its stamp, the stamp a first column in TSV.
pub fn table(
    rows: &[CpuRow],
    tsv: bool,
    header: bool,
    stamp: Option<&str>,
) -> anyhow::Result<Shown> {
    if tsv {
        return Ok(Shown::Tsv(tsv_rows(rows, header, stamp)?));
    }
    let mut o = String::new();
    if let Some(t) = stamp {
        let _ = writeln!(o, "{t}");
    }
    if header || stamp.is_some() {
        let _ = writeln!(
            o,
            " {:<14} {:<28} {:>12} {:>12} {:>12}",
            "Group", "Process", "USR(s)", "SYS(s)", "Tot(s)"
        );
    }
    for r in rows {
        let _ = writeln!(
            o,
            " {:<14} {:<28} {:>12.6} {:>12.6} {:>12.6}",
            r.group, r.name, r.user_s, r.sys_s, r.total_s
        );
    }
    Ok(Shown::Text(o))
}

fn tsv_rows(rows: &[CpuRow], header: bool, stamp: Option<&str>) -> anyhow::Result<String> {
    let mut w = csv::WriterBuilder::new()
        .delimiter(b'\t')
        .has_headers(false)
        .from_writer(Vec::new());
    if header {
        let mut h = vec!["group", "process", "pid", "user_s", "sys_s", "total_s"];
        if stamp.is_some() {
            h.insert(0, "time_utc");
        }
        w.write_record(&h)?;
    }
    for r in rows {
        let mut rec = vec![
            r.group.clone(),
            r.name.clone(),
            r.pid.map(|p| p.to_string()).unwrap_or_default(),
        ];
        rec.extend([r.user_s, r.sys_s, r.total_s].map(|v| format!("{v:.6}")));
        if let Some(t) = stamp {
            rec.insert(0, t.to_string());
        }
        w.write_record(&rec)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("{}", e.error()))?;
    Ok(String::from_utf8(bytes)?)
}

/// A window's groups as the table's rows (`GROUP*`), under its edges.
pub(crate) fn window_table(w: &CpuWindow, tsv: bool) -> anyhow::Result<Shown> {
    let rows: Vec<CpuRow> = w
        .groups
        .iter()
        .map(|g| CpuRow {
            group: g.name.clone(),
            name: format!("{}*", g.name),
            pid: None,
            user_s: g.user_s,
            sys_s: g.sys_s,
            total_s: g.user_s + g.sys_s,
        })
        .collect();
    table(
        &rows,
        tsv,
        true,
        Some(&format!("{} .. {}", w.from_utc, w.until_utc)),
    )
}

/// The files of `out` first, then the table (`None` when an output holds stdout): text as
/// every text for a person is printed; TSV byte for byte as a script reads it, a failure to
/// write it (a reader gone, as `| head` leaves a watch) an error, which ends a watch.
pub fn finish(out: Outputs, shown: Option<&Shown>) -> anyhow::Result<()> {
    let tsv = match shown {
        Some(Shown::Tsv(t)) => t,
        Some(Shown::Text(t)) => return out.finish(Some(t)),
        None => return out.finish(None),
    };
    let mut failed = out.finish_failures(None);
    if let Err(e) = print_raw(tsv) {
        if failed.is_empty() {
            return Err(e.into());
        }
        failed.push(e.to_string());
    }
    super::all_written(failed)
}

fn print_raw(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}
