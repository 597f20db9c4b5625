//! The default command: one measured put/get run, its report on stdout and in the files the
//! options name, and an exit code from how the run ended.

use crate::config::RunConfig;
use crate::config::formats::Format;
use crate::driver::Status;
use crate::exit::Exit;
use crate::export;
use crate::export::outputs::{Artifact as _, Outputs, Style};
use crate::measure::measure;
use crate::report::Report;
use crate::report::history::{self, History};
use crate::report::saved::ReportFileError;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run the loop the config describes, export its report, and say how it ended.
pub fn put_get(cfg: &RunConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    // Known before the run, so that its report waits for no git after it (or a Ctrl-C).
    let _ = crate::report::history::this_commit();
    let report = measure(cfg, interrupt)?;
    // After the run, before its report: a run that could not start says only why.
    if let Some(note) = cfg.groups_note.as_ref().filter(|_| !cfg.quiet) {
        crate::say!("Note: {note}");
    }
    write_reports(cfg, &report)?;
    Ok(exit_of_report(&report))
}

/// A run's exit code: its status's, except that a completed run whose CPU could not all be
/// read (a host that failed at an edge, /proc unreadable) or whose flow answered some
/// requests twice is a runtime failure, exit 1: its report is written and says what is
/// wrong, but a CI job must not take it for a whole measurement.
pub fn exit_of_report(report: &Report) -> Exit {
    if report.status != Status::Completed {
        // Also on stderr: with --quiet, or stdout in a file, the report's INCOMPLETE line
        // is not where a CI log shows why the job failed. (An interrupt is its own reason.)
        if report.status != Status::Interrupted {
            crate::say!(
                "Error: the run did not complete ({}): {}",
                report.status.describe(),
                report.status_detail.as_deref().unwrap_or("see the report")
            );
        }
        return exit_of(report.status);
    }
    let mut failures = Vec::new();
    if let Some(e) = report.accounting.as_ref().and_then(|a| a.error.as_deref()) {
        failures.push(format!(
            "part of its CPU accounting failed: {e}; the report leaves those figures out (its warnings say which)"
        ));
    }
    // As in pub/sub: a reply given twice is work done twice, in every figure per message.
    let i = &report.integrity;
    if i.duplicates > 0 {
        failures.push(format!(
            "the flow replied more than once to some requests ({} duplicate replies for {} matched): its CPU per transaction includes the repeated work; check that it answers each request once",
            i.duplicates, i.matched
        ));
    }
    if failures.is_empty() {
        return Exit::Ok;
    }
    for f in failures {
        // A full or closed stderr must not turn this into a panic.
        let _ = writeln!(std::io::stderr(), "Error: the run completed but {f}");
    }
    Exit::Failure
}

/// The exit code a finished run's status calls for.
pub fn exit_of(status: Status) -> Exit {
    match status {
        Status::Completed => Exit::Ok,
        Status::Interrupted => Exit::Interrupted,
        Status::TimedOut | Status::StoppedAfterTimeouts | Status::Failed => Exit::Failure,
    }
}

/// Write the report to every file the options name, then to stdout (unless --quiet): a
/// stdout that is full or closed can no longer lose the files. A file that cannot be
/// written does not stop the others; the error names every one that failed.
pub fn write_reports(cfg: &RunConfig, report: &Report) -> anyhow::Result<()> {
    let e = &cfg.exports;
    let style = Style {
        delimiter: e.delimiter,
        decimal_comma: e.decimal_comma,
    };
    let json = report.render(Format::Json, &style)?;
    let mut out = Outputs::new();
    // The baseline: this run appended to main's history in that file.
    let mut baseline_error = None;
    if let Some(path) = &cfg.save_baseline {
        match append_to_history(path, report, &json) {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                out.failed(format!("{err:#}"));
                baseline_error = Some(err);
            }
            Err(err) => out.failed(format!("{err:#}")),
        }
    }
    out.artifact(report, &cfg.outputs(), &style);
    let text = export::text::render(report);
    if let Some(dir) = &e.save_dir {
        let tsv = report.render(Format::Tsv, &style)?;
        #[cfg(feature = "html")]
        let html = report.render(Format::Html, &style)?;
        let files = [
            ("txt", "the text report", text.as_str()),
            ("tsv", "the TSV report", tsv.as_str()),
            ("json", "the JSON report", json.as_str()),
            #[cfg(feature = "html")]
            ("html", "the HTML report", html.as_str()),
        ];
        for failure in save_in_reports_dir(dir, report, &files, &json) {
            out.failed(failure);
        }
    }
    // Stdout last: the text (to stderr when an output holds stdout), then that output.
    let failed = out.finish_failures((!cfg.quiet).then_some(text.as_str()));
    match (failed.is_empty(), baseline_error) {
        (true, _) => Ok(()),
        // The user's file (exit 2), once everything else is safe.
        (false, Some(err)) if failed.len() == 1 => {
            Err(anyhow::Error::new(err).context("every other output was written"))
        }
        _ => export::all_written(failed),
    }
}

/// The run's `files` (text, TSV, JSON, HTML) stamped in the reports folder, and its `json`
/// as latest.json: the failures, each named. latest.json is written even when a stamped file
/// failed: it is what tools read.
fn save_in_reports_dir(
    dir: &std::path::Path,
    report: &Report,
    files: &[(&str, &str, &str)],
    json: &str,
) -> Vec<String> {
    let mut failed = Vec::new();
    if let Err(err) = export::save_in_folder(dir, &report.start_utc, &report.label, files) {
        failed.push(format!("{err:#}"));
    }
    if dir.is_dir()
        && let Err(err) = export::write_output(&dir.join("latest.json"), "the JSON report", json)
    {
        failed.push(format!("{err:#}"));
    }
    failed
}

/// The history `path` holds with this run appended (a new one when there is no file); a
/// run that did not complete is no baseline.
/// Append this run to main's history in `path`, holding an exclusive lock on the file's
/// folder from the read to the rename: runs saving into one history at once (parallel CI
/// jobs sharing a cache or a network folder) all land, none overwriting another's. The
/// folder, not a lock file beside the history, so that nothing is left behind. The inner
/// error is the history file's own (exit 2); the outer one, the lock or the write.
fn append_to_history(
    path: &std::path::Path,
    report: &Report,
    json: &str,
) -> anyhow::Result<Result<(), ReportFileError>> {
    use anyhow::Context;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let lock = std::fs::File::open(dir)
        .and_then(|f| f.lock().map(|()| f))
        .with_context(|| {
            format!(
                "locking {} to append to the baseline history {}",
                dir.display(),
                path.display()
            )
        })?;
    let body = match baseline_history(path, report, json) {
        Ok(body) => body,
        Err(e) => return Ok(Err(e)),
    };
    export::write_output(path, "the baseline history", &body)?;
    drop(lock);
    Ok(Ok(()))
}

fn baseline_history(
    path: &std::path::Path,
    report: &Report,
    json: &str,
) -> Result<String, ReportFileError> {
    if report.status != Status::Completed {
        return Err(ReportFileError::Corrupt {
            path: path.to_path_buf(),
            why: format!(
                "this run did not complete ({}), so it was not appended to the baseline",
                report.status.describe()
            ),
        });
    }
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ReportFileError::Corrupt {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    let saved = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let value = history::stamp(value, history::this_commit(), &saved);
    if path.exists() {
        History::load(path)?.appended(value)
    } else {
        History::first(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_exit_code() {
        assert_eq!(exit_of(Status::Completed), Exit::Ok);
        assert_eq!(exit_of(Status::Interrupted), Exit::Interrupted);
        for s in [
            Status::TimedOut,
            Status::StoppedAfterTimeouts,
            Status::Failed,
        ] {
            assert_eq!(exit_of(s), Exit::Failure, "{s:?}");
        }
    }
}
