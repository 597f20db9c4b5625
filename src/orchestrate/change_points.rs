//! Main's history searched for steps ([`crate::gate::change_points`]) in the metrics named:
//! the whole result of `oemputx history`, and the stored gate's lines when its baseline
//! spans a step. Below the commands, so that the stored gate reaches it without importing
//! the history command.

use crate::export;
use crate::gate::change_points::RECENT_RUNS;
use crate::gate::change_points::outcome::{Outcome, Runs};
use crate::report::history::History;
use crate::report::saved::{Metric, ReportFileError};
use std::path::Path;

/// The change points of each metric's series in `h`.
pub fn search<'a>(
    h: &History,
    metrics: impl Iterator<Item = &'a str>,
) -> Result<Outcome, ReportFileError> {
    let interrupted = || ReportFileError::Interrupted {
        path: h.path.clone(),
    };
    // Each metric's figures walk every run's rounds: a history of thousands of groups takes
    // seconds before the search begins, and the first signal must end it.
    let series = metrics
        .map(|m| {
            if crate::signals::interrupted() {
                return Err(interrupted());
            }
            let metric = Metric::named(m);
            Ok((m.to_string(), metric.unit(), h.figures(&metric)?))
        })
        .collect::<Result<Vec<_>, ReportFileError>>()?;
    let runs = Runs {
        commits: &h.commits,
        started: &h.started,
    };
    Outcome::of(&h.path.display().to_string(), runs, series).map_err(|e| match e {
        crate::gate::change_points::Unsearchable::Interrupted => interrupted(),
        e => ReportFileError::Corrupt {
            path: h.path.clone(),
            why: e.to_string(),
        },
    })
}

/// The stored gate's lines for each step among the newest [`RECENT_RUNS`] of main's runs,
/// in the gated metrics: the baseline spans it. Nothing when the history is too short to
/// tell a step.
pub(crate) fn recent_steps(
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
