//! `oemputx gate`: the CI regression gate on cost per message. It reads the baseline (and
//! the current report, or measures one now), picks the metrics and tolerances, lets
//! [`crate::gate`] decide, and writes the verdict in the formats asked for.

use crate::config::gate::{Current, GateConfig};
use crate::config::{ConfigError, RunConfig};
use crate::exit::Exit;
use crate::export;
use crate::export::gate::{
    render_bmf, render_gha, render_github, render_junit, render_markdown, render_text,
};
use crate::gate::stored::{self, decide};
use crate::gate::{Decision, Outcome, Verdict, Worse, overall};
use crate::report::saved::{Metric, ReportFileError, Saved, differences};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The stored-baseline gate: this run's rounds against a saved report's.
pub fn stored(
    cfg: &GateConfig,
    baseline: &Path,
    current: &Current,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let args = cfg;
    let base = match Saved::load(baseline) {
        Ok(b) => b,
        Err(ReportFileError::Unreadable { why, .. }) if !baseline.exists() => {
            let msg = format!(
                "no baseline at {} ({why}); make one on main with --save-baseline {}",
                baseline.display(),
                baseline.display()
            );
            if args.strict {
                eprintln!("Error: {msg}");
                return Ok(Exit::Inconclusive);
            }
            eprintln!("Warning: {msg}; the gate passes without one (use --strict to fail)");
            if args.outputs.github {
                println!("::warning title=oemputx gate::{}", msg.replace('%', "%25"));
            }
            return Ok(Exit::Ok);
        }
        Err(e) => return Err(e.into()),
    };
    let current = match current {
        Current::Report(p) => Saved::load(p)?,
        Current::Measure(run) => measure_now(run, interrupt)?,
    };
    let diffs = differences(&base, &current, true);
    if !diffs.is_empty() && !args.force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let named = cfg.metrics.iter().chain(cfg.tolerances.named_metrics());
    let metrics = stored::plan(named, |m| cfg.tolerances.for_metric(m), &base, &current)?;
    // A metric either report lacks is an error naming it (exit 2), never a silent
    // "inconclusive" that would let CI pass.
    print_reach(&metrics, &base, &current);
    let decisions: Vec<Decision> = metrics
        .iter()
        .map(|(m, t)| {
            let metric = Metric::named(m);
            let worse = if metric.higher_is_worse() {
                Worse::Higher
            } else {
                Worse::Lower
            };
            Ok(decide(
                m,
                &base.require(&metric)?,
                &current.require(&metric)?,
                *t,
                worse,
            ))
        })
        .collect::<Result<_, ReportFileError>>()?;
    if decisions.is_empty() {
        return Err(ConfigError::BadValue {
            flag: "--baseline",
            why: "the reports share no metric to gate (no groups, no CPU totals)".into(),
        }
        .into());
    }
    let outcome = Outcome {
        schema: crate::gate::SCHEMA,
        mode: "stored",
        ab_rounds: None,
        instruction_counts: None,
        baseline: base.name(),
        current: current.name(),
        verdict: overall(&decisions),
        decisions,
    };
    write_verdict(args, &outcome)?;
    Ok(verdict_exit(args, &outcome))
}

/// Up front: the smallest regression these rounds could show, metric by metric.
fn print_reach(metrics: &[(String, f64)], base: &Saved, current: &Saved) {
    let reaches: Vec<String> = metrics
        .iter()
        .filter_map(|(m, t)| {
            let metric = Metric::named(m);
            let r = stored::reach(&base.samples(&metric), &current.samples(&metric), *t)?;
            Some(format!("{m} +{:.1}%", 100.0 * r))
        })
        .collect();
    if !reaches.is_empty() {
        println!(
            "Reach: with {} baseline and {} current rounds at their spread, the smallest regression this gate can call: {}",
            base.report.rounds.len(),
            current.report.rounds.len(),
            reaches.join(", ")
        );
    }
}

/// The exit code of the gate's verdict, with a warning when an inconclusive gate passes.
pub(super) fn verdict_exit(args: &GateConfig, outcome: &Outcome) -> Exit {
    if outcome.verdict == Verdict::Inconclusive {
        eprintln!(
            "Warning: the gate is inconclusive (see the notes above){}",
            if args.strict {
                ""
            } else {
                "; passing (use --strict to fail)"
            }
        );
    }
    exit_of(outcome.verdict, args.strict)
}

/// Measure the current run now, with the run options given after `--`.
fn measure_now(cfg: &RunConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Saved> {
    let report = crate::measure::measure(cfg, interrupt)?;
    crate::commands::run::write_reports(cfg, &report)?;
    if report.status != crate::driver::Status::Completed {
        anyhow::bail!(
            "the run did not complete ({:?}), so there is nothing to gate",
            report.status
        );
    }
    let json = serde_json::to_value(&report).context("encoding the run's report")?;
    Ok(Saved::from_json("this run".into(), json)?)
}

/// The verdict on stdout (and as GitHub annotations), and in every file asked for.
pub(super) fn write_verdict(cfg: &GateConfig, outcome: &Outcome) -> anyhow::Result<()> {
    let args = &cfg.outputs;
    let text = render_text(outcome);
    crate::export::print_stdout(&text)?;
    if args.github {
        crate::export::print_stdout(&render_github(outcome))?;
    }
    let write = |path: &Path, what: &str, body: &str| {
        export::write_output(path, &format!("the gate's {what}"), body)
    };
    if let Some(p) = &args.markdown {
        write(p, "Markdown", &render_markdown(outcome))?;
    }
    if let Some(p) = &args.junit {
        write(p, "JUnit XML", &render_junit(outcome))?;
    }
    if let Some(p) = &args.bmf {
        write(p, "Bencher metrics", &render_bmf(outcome)?)?;
    }
    if let Some(p) = &args.gha {
        write(p, "github-action-benchmark JSON", &render_gha(outcome)?)?;
    }
    if let Some(p) = &args.json {
        let json = serde_json::to_string_pretty(outcome)?;
        write(p, "JSON", &json)?;
    }
    Ok(())
}

/// The exit code of a verdict.
pub fn exit_of(v: Verdict, strict: bool) -> Exit {
    match v {
        Verdict::Pass | Verdict::Improvement => Exit::Ok,
        Verdict::Regression => Exit::Regression,
        Verdict::Inconclusive if strict => Exit::Inconclusive,
        Verdict::Inconclusive => Exit::Ok,
    }
}
