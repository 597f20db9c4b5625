//! The default command: one measured put/get run, its report on stdout and in the files the
//! options name, and an exit code from how the run ended.

use crate::config::RunConfig;
use crate::driver::Status;
use crate::exit::Exit;
use crate::export;
use crate::measure::measure;
use crate::report::Report;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run the loop the config describes, export its report, and say how it ended.
pub(crate) fn put_get(cfg: &RunConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    // Known before the run, so that its report waits for no git after it (or a Ctrl-C).
    let _ = crate::report::history::this_commit();
    // A history --save-baseline could not append to (past its bounds, damaged) is refused
    // before the run, not after minutes of measuring (issue 61's fresh pass). It is read
    // again, under its lock, when the run is appended.
    if let Some(path) = cfg.outputs.save_baseline.as_deref().filter(|p| p.exists()) {
        crate::report::history::History::load(path)?;
    }
    let report = measure(cfg, interrupt)?;
    // After the run, before its report: a run that could not start says only why.
    if let Some(note) = cfg.groups_note.as_ref().filter(|_| !cfg.quiet) {
        crate::say!("Note: {note}");
    }
    export::run_reports::write_reports(&report, &cfg.outputs, cfg.quiet)?;
    Ok(exit_of_report(&report))
}

/// A run's exit code: its status's, except that a completed run whose CPU could not all be
/// read (a host that failed at an edge, /proc unreadable) or whose flow answered some
/// requests twice is a runtime failure, exit 1: its report is written and says what is
/// wrong, but a CI job must not take it for a whole measurement.
pub(crate) fn exit_of_report(report: &Report) -> Exit {
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
    // Second replies after a broken connection are the broker's redelivery (a quorum queue
    // delivers again what the lost node had not settled): the interruption counts them.
    let i = &report.integrity;
    let redelivered: u64 = report.interruptions.iter().map(|b| b.duplicated).sum();
    if i.duplicates > redelivered {
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
pub(crate) fn exit_of(status: Status) -> Exit {
    match status {
        Status::Completed => Exit::Ok,
        Status::Interrupted => Exit::Interrupted,
        Status::TimedOut | Status::StoppedAfterTimeouts | Status::Failed => Exit::Failure,
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
