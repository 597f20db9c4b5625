//! `oemputx history FILE`: where main's runs stepped. It reads the history `--save-baseline`
//! appends to, picks the metrics the stored gate gates (and those named), lets
//! [`crate::orchestrate::change_points`] find the steps, and writes them as text, JSON and
//! HTML.

use crate::cli::HistoryArgs;
use crate::exit::Exit;
use crate::export;
use crate::export::history::ChangePoints;
use crate::export::outputs::{Outputs, Style};
use crate::gate::stored;
use crate::orchestrate::change_points::search;
use crate::report::history::History;

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
