//! The default command: one measured put/get run, its report on stdout and in the files the
//! options name, and an exit code from how the run ended.

use crate::config::Config;
use crate::driver::Status;
use crate::exit::Exit;
use crate::export::{self, delimited::Format};
use crate::measure::measure;
use crate::report::Report;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run the loop the config describes, export its report, and say how it ended.
pub fn put_get(cfg: &Config, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let report = measure(cfg, interrupt)?;
    write_reports(cfg, &report)?;
    Ok(exit_of(report.status))
}

/// The exit code a finished run's status calls for.
pub fn exit_of(status: Status) -> Exit {
    match status {
        Status::Completed => Exit::Ok,
        Status::Interrupted => Exit::Interrupted,
        Status::TimedOut | Status::StoppedAfterTimeouts | Status::Failed => Exit::Failure,
    }
}

/// Write the report to stdout (unless --quiet) and to every file the options name.
pub fn write_reports(cfg: &Config, report: &Report) -> anyhow::Result<()> {
    let e = &cfg.exports;
    let to_stdout =
        |p: &Option<std::path::PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let machine_on_stdout = to_stdout(&cfg.export_json)
        || to_stdout(&e.tsv)
        || to_stdout(&e.csv)
        || to_stdout(&e.markdown);
    let text = export::text::render(report);
    if !cfg.quiet {
        // Keep stdout clean for a machine format when one goes there.
        if machine_on_stdout {
            eprint!("{text}")
        } else {
            print!("{text}")
        }
    }
    let json = export::json::render(report).context("encoding the JSON report")?;
    let tsv_format = Format {
        delimiter: b'\t',
        decimal_comma: e.decimal_comma,
    };
    let tsv = export::delimited::render(report, tsv_format).context("encoding the TSV report")?;
    let write = |path: &std::path::Path, what: &str, body: &str| {
        export::write_output(path, &format!("the {what} report"), body)
    };
    if let Some(path) = &cfg.export_json {
        write(path, "JSON", &json)?;
    }
    if let Some(path) = &cfg.save_baseline {
        write(path, "baseline JSON", &json)?;
    }
    if let Some(path) = &e.tsv {
        write(path, "TSV", &tsv)?;
    }
    if let Some(path) = &e.csv {
        let csv = export::delimited::render(
            report,
            Format {
                delimiter: e.delimiter,
                decimal_comma: e.decimal_comma,
            },
        )
        .context("encoding the CSV report")?;
        write(path, "CSV", &csv)?;
    }
    if let Some(path) = &e.markdown {
        write(path, "Markdown", &export::markdown::render(report))?;
    }
    if let Some(dir) = &e.save_dir {
        let files = [
            ("txt", "the text report", text.as_str()),
            ("tsv", "the TSV report", tsv.as_str()),
            ("json", "the JSON report", json.as_str()),
        ];
        export::save_in_folder(dir, &report.start_utc, &report.label, &files)?;
        write(&dir.join("latest.json"), "JSON", &json)?;
    }
    Ok(())
}
