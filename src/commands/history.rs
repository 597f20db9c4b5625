//! `oemputx history FILE`: where main's runs stepped. It reads the history `--save-baseline`
//! appends to, picks the metrics the stored gate gates (and those named), lets
//! [`crate::gate::change_points`] find the steps, and writes them as text, JSON and HTML.
//! The stored gate calls [`recent_steps`] to say when its baseline spans a step.

use crate::cli::HistoryArgs;
use crate::exit::Exit;
use crate::export;
use crate::export::history::ChangePoints;
use crate::export::outputs::{Outputs, Style};
use crate::gate::change_points::RECENT_RUNS;
use crate::gate::change_points::outcome::{Outcome, Runs};
use crate::gate::stored;
use crate::report::history::History;
use crate::report::saved::{Metric, ReportFileError};
use std::path::Path;

/// `oemputx history FILE`.
pub fn history(args: &HistoryArgs) -> anyhow::Result<Exit> {
    // Every output checked before the history is read: none may replace it (a change-points
    // JSON written over main's history lost the history), none lands on another's file.
    crate::config::outputs::check(&args.outputs.exports().by_flag(), None, &[&args.file])?;
    let h = History::load(&args.file)?;
    // The gate's own choice, checked as the gate checks it; the newest run stands in for the
    // gate's current one.
    let metrics = stored::plan(args.metric.iter(), |_| 0.0, &h.runs, h.latest())?;
    let outcome = search(&h, metrics.iter().map(|(m, _)| m.as_str()))?;
    let name = h.name();
    let text = export::history::render_text(&outcome, &name);
    // Files first, each failure named without stopping the others; the text, then an
    // output on stdout, last (with `--export-json -` the text goes to stderr).
    let mut out = Outputs::new();
    let points = ChangePoints {
        outcome: &outcome,
        name: &name,
    };
    out.artifact(&points, &args.outputs.exports(), &Style::default());
    out.finish(Some(&text))?;
    Ok(Exit::Ok)
}

/// The change points of each metric's series in `h`.
fn search<'a>(
    h: &History,
    metrics: impl Iterator<Item = &'a str>,
) -> Result<Outcome, ReportFileError> {
    let series = metrics
        .map(|m| {
            let metric = Metric::named(m);
            Ok((m.to_string(), metric.unit(), h.figures(&metric)?))
        })
        .collect::<Result<Vec<_>, ReportFileError>>()?;
    let runs = Runs {
        commits: &h.commits,
        started: &h.started,
    };
    Outcome::of(&h.path.display().to_string(), runs, series).map_err(|e| ReportFileError::Corrupt {
        path: h.path.clone(),
        why: e.to_string(),
    })
}

/// The stored gate's lines for each step among the newest [`RECENT_RUNS`] of main's runs,
/// in the gated metrics: the baseline spans it. Nothing when the history is too short to
/// tell a step.
pub fn recent_steps(
    h: &History,
    metrics: &[(String, f64)],
    file: &Path,
) -> Result<String, ReportFileError> {
    let outcome = search(h, metrics.iter().map(|(m, _)| m.as_str()))?;
    let recent = h.runs.len().saturating_sub(RECENT_RUNS);
    Ok(outcome
        .change_points
        .iter()
        .filter(|c| c.index >= recent)
        .map(|c| export::history::recent_step_line(c, h.runs.len(), &file.display().to_string()))
        .collect())
}
