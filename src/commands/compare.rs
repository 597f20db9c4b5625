//! `oemputx compare`: the broker paper's overhead table — each group's CPU µs per
//! transaction in each setting, and the Total Overhead % of each against the first (IBM's
//! WebSphere Message Broker for z/OS performance report measured the cost of accounting and
//! statistics this way). Live, the settings are flows measured in one window, in
//! interleaved rounds, and every change comes with its interval (the experiment engine
//! decides, [`crate::report::compare`] tabulates); saved reports are separate runs, shown
//! with each run's own spread.

use crate::config::compare::{CompareConfig, CompareOutputs};
use crate::exit::Exit;
use crate::export::compare::SavedComparison;
use crate::export::outputs::{Outputs, Style};
use crate::export::{self, cells};
use crate::interleave::End;
use crate::report::compare::Comparison;
use crate::report::saved::{ReportFileError, Saved, differences};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx compare`: saved reports, or settings measured now.
pub fn compare(cfg: &CompareConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    match cfg {
        CompareConfig::Saved {
            reports,
            force,
            outputs,
        } => saved(reports, *force, outputs),
        CompareConfig::Live(live) => match crate::orchestrate::compare::live(live, interrupt)? {
            None => Ok(Exit::Interrupted),
            Some((comparison, end)) => {
                write_live(&comparison, &live.outputs)?;
                Ok(match end {
                    End::Interrupted => Exit::Interrupted,
                    End::Failed => Exit::Failure,
                    End::Decided | End::Budget => Exit::Ok,
                })
            }
        },
    }
}

/// `oemputx compare BASE.json OTHER.json…`: separate runs, each with its own spread.
fn saved(reports: &[PathBuf], force: bool, args: &CompareOutputs) -> anyhow::Result<Exit> {
    let runs: Vec<Saved> = reports
        .iter()
        .map(|p| Saved::load(p))
        .collect::<Result<_, _>>()?;
    let Some((base, others)) = runs.split_first() else {
        return Ok(Exit::Usage);
    };
    let diffs: Vec<String> = others
        .iter()
        .flat_map(|o| differences(base, o, false))
        .collect();
    if !diffs.is_empty() && !force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let rows = crate::export::compare::rows(&runs);
    let mut text = String::from(
        "oemputx compare: CPU per transaction, each saved run against the first. These are separate runs: what differs between them includes the machine's drift between their windows; each shows its own rounds' spread [min-max]. To compare settings in one window, with intervals: oemputx compare --flow-cmd CMD --setting NAME=ARGS … -- RUN OPTIONS\n\n",
    );
    text.push_str(&cells::text(&rows));
    if !diffs.is_empty() {
        text.push_str("\nCompared with --force although the runs differ:\n");
        text.push_str(&diffs.join("\n"));
        text.push('\n');
    }
    let mut out = Outputs::new();
    let comparison = SavedComparison {
        runs: &runs,
        forced_differences: &diffs,
    };
    out.artifact(&comparison, args, &Style::default());
    out.finish(Some(&text))?;
    Ok(Exit::Ok)
}

/// The live comparison: the files asked for first, then stdout.
fn write_live(c: &Comparison, o: &CompareOutputs) -> anyhow::Result<()> {
    let mut out = Outputs::new();
    out.artifact(c, o, &Style::default());
    out.finish(Some(&export::compare::live_text(c)))
}
