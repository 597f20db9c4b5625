//! A run's report written where its outputs say: each file asked for, the reports folder
//! (stamped files and latest.json), main's baseline history appended under a lock, then the
//! text on stdout. The default command, the stored gate's run and `merge` all write here.

use super::outputs::{Artifact as _, Outputs, Saving, Style};
use crate::config::RunOutputs;
use crate::config::formats::Format;
use crate::driver::Status;
use crate::report::Report;
use crate::report::history::{self, History};
use crate::report::saved::ReportFileError;
use std::path::Path;

/// Write the report to every file `to` names, then to stdout (unless `quiet`): a stdout
/// that is full or closed can no longer lose the files. A file that cannot be written does
/// not stop the others; the error names every one that failed.
pub(crate) fn write_reports(report: &Report, to: &RunOutputs, quiet: bool) -> anyhow::Result<()> {
    let style = Style {
        delimiter: to.delimiter,
        decimal_comma: to.decimal_comma,
    };
    let mut out = Outputs::new();
    // The baseline: this run appended to main's history in that file.
    let mut baseline_error = None;
    if let Some(path) = &to.save_baseline {
        let json = report.render(Format::Json, &style)?;
        match append_to_history(path, report, &json) {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                out.failed(format!("{err:#}"));
                baseline_error = Some(err);
            }
            Err(err) => out.failed(format!("{err:#}")),
        }
    }
    out.artifact(report, &to.files, &style);
    let text = super::text::render(report);
    if let Some(dir) = &to.save_dir {
        let saving = Saving {
            dir,
            start_utc: &report.start_utc,
            label: &report.label,
            latest_json: true,
            announce: None,
        };
        let formats = [
            ("tsv", Format::Tsv),
            ("json", Format::Json),
            #[cfg(feature = "html")]
            ("html", Format::Html),
        ];
        out.save(
            &saving,
            Some(("the text report", &text)),
            report,
            &formats,
            &style,
        );
    }
    // Stdout last: the text (to stderr when an output holds stdout), then that output.
    let failed = out.finish_failures((!quiet).then_some(text.as_str()));
    match (failed.is_empty(), baseline_error) {
        (true, _) => Ok(()),
        // The user's file (exit 2), once everything else is safe.
        (false, Some(err)) if failed.len() == 1 => {
            Err(anyhow::Error::new(err).context("every other output was written"))
        }
        _ => super::all_written(failed),
    }
}

/// Append this run to main's history in `path`, holding an exclusive lock on the file's
/// folder from the read to the rename: runs saving into one history at once (parallel CI
/// jobs sharing a cache or a network folder) all land, none overwriting another's. The
/// folder, not a lock file beside the history, so that nothing is left behind. The inner
/// error is the history file's own (exit 2); the outer one, the lock or the write.
fn append_to_history(
    path: &Path,
    report: &Report,
    json: &str,
) -> anyhow::Result<Result<(), ReportFileError>> {
    use anyhow::Context;
    // The history a link points to is the one read, locked and replaced.
    let target = crate::files::output_target(path)?;
    let path = target.as_path();
    let dir = crate::files::folder_of(path);
    // Any signal, also while the run tidies up (when `signals::interrupted` looks away): a
    // run that was stopped is no baseline, and one stopped in this wait must end now.
    let stop = || {
        (crate::signals::LAST_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) != 0)
            .then(|| format!("interrupted ({})", crate::signals::interrupted_by()))
    };
    let lock = crate::files::lock_folder(dir, stop).with_context(|| {
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
    super::write_output(path, "the baseline history", &body)?;
    drop(lock);
    Ok(Ok(()))
}

/// The history `path` holds with this run appended (a new one when there is no file); a
/// run that did not complete is no baseline.
fn baseline_history(path: &Path, report: &Report, json: &str) -> Result<String, ReportFileError> {
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
