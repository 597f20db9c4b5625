//! `oemputx pubsub`: one window, rounds of it or a capacity search measured
//! ([`crate::orchestrate::pubsub_rounds::run`]), then written.

use crate::config::formats::Format;
use crate::config::pubsub::PubsubConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Saving, Style};
use crate::orchestrate::pubsub_rounds::{PubSubRun, run};
use crate::pubsub::report::{PubSubCapacity, PubSubReport, PubSubRounds};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx pubsub`.
pub fn pubsub(args: &PubsubConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    match run(args, interrupt)? {
        PubSubRun::One(report) => one(args, &report),
        PubSubRun::Rounds(rounds) => write_rounds(args, &rounds),
        PubSubRun::Capacity(capacity) => write_capacity(args, &capacity),
    }
}

/// One window written; a subscriber that did not get exactly its messages fails the run.
fn one(args: &PubsubConfig, report: &PubSubReport) -> anyhow::Result<Exit> {
    write(args, report)?;
    if report.interrupted {
        return Ok(Exit::Interrupted);
    }
    if report.complete() {
        return Ok(Exit::Ok);
    }
    crate::say!(
        "oemputx pubsub: not every subscriber got exactly its messages ({} lost, {} duplicated){}",
        report.lost,
        report.duplicates,
        report
            .error
            .as_deref()
            .map(|e| format!("; {e}"))
            .unwrap_or_default()
    );
    Ok(Exit::Failure)
}

/// The files asked for, the run saved under the reports folder (unless --no-save), then
/// the text and the output on stdout, if one is.
fn write(args: &PubsubConfig, report: &PubSubReport) -> anyhow::Result<()> {
    let text = crate::export::pubsub::text(report);
    let style = Style::default();
    let mut out = Outputs::new();
    out.artifact(report, &args.exports, &style);
    if let Some(dir) = &args.save_dir {
        let formats = [
            ("tsv", Format::Tsv),
            ("json", Format::Json),
            ("md", Format::Markdown),
            #[cfg(feature = "html")]
            ("html", Format::Html),
        ];
        let stamp = now_stamp();
        let to = Saving {
            dir,
            start_utc: &stamp,
            label: "pubsub",
            latest_json: false,
            announce: None,
        };
        out.save(
            &to,
            Some(("the pub/sub text report", &text)),
            report,
            &formats,
            &style,
        );
    }
    out.finish(Some(&text))
}

/// `--rounds N`'s JSON, in the reports folder (unless --no-save) and where asked.
fn write_rounds(args: &PubsubConfig, rounds: &PubSubRounds) -> anyhow::Result<Exit> {
    let mut out = Outputs::new();
    if let Some(dir) = &args.save_dir {
        let stamp = now_stamp();
        let to = Saving {
            dir,
            start_utc: &stamp,
            label: "pubsub-rounds",
            latest_json: false,
            announce: None,
        };
        out.save(
            &to,
            None,
            rounds,
            &[("json", Format::Json)],
            &Style::default(),
        );
    }
    out.artifact(rounds, &args.exports, &Style::default());
    out.finish(None)?;
    let all = &rounds.rounds;
    Ok(if all.iter().any(|r| r.interrupted) {
        Exit::Interrupted
    } else if all.iter().all(PubSubReport::complete) {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

/// `--find-capacity`'s JSON where asked; no capacity found fails the run.
fn write_capacity(args: &PubsubConfig, capacity: &PubSubCapacity) -> anyhow::Result<Exit> {
    let mut out = Outputs::new();
    out.artifact(capacity, &args.exports, &Style::default());
    out.finish(None)?;
    Ok(if capacity.steps.iter().any(|s| s.report.interrupted) {
        Exit::Interrupted
    } else if capacity.capacity_mps.is_some() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

/// The current UTC time as the reports folder's file names start with it.
fn now_stamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}
