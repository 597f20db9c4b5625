//! `oemputx gate`: the CI regression gate on cost per message. It reads the baseline (and
//! the current report, or measures one now), picks the metrics and tolerances, lets
//! [`crate::gate`] decide, and writes the verdict in the formats asked for.

use crate::config::compare::FLOOR_US;
use crate::config::gate::{Current, GateConfig};
use crate::config::{ConfigError, RunConfig};
use crate::exit::Exit;
use crate::gate::first::{self, Bound, Hosts};
use crate::gate::history::{self, MIN_RUNS, Prediction};
use crate::gate::statistics::median;
use crate::gate::stored::{self, decide};
use crate::gate::{Decision, Outcome, Worse, overall};
use crate::orchestrate::verdict::{no_baseline, verdict_exit, write_verdict};
use crate::report::history::History;
use crate::report::saved::{
    Metric, ReportFileError, Saved, SavedSettings, differences, settings_differences,
};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The stored-baseline gate: this run against main's history of runs (or, with fewer than
/// three, against the newest run's rounds, never calling a regression).
pub fn stored(
    cfg: &GateConfig,
    baseline: &Path,
    current: &Current,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let args = cfg;
    let history = match History::load(baseline) {
        Ok(b) => b,
        Err(ReportFileError::Unreadable { why, .. }) if !baseline.exists() => {
            let msg = format!(
                "no baseline at {} ({why}); make one on main with --save-baseline {} (each run of main appends to it)",
                baseline.display(),
                baseline.display()
            );
            return Ok(no_baseline(cfg, &msg));
        }
        Err(e) => return Err(e.into()),
    };
    let base = history.latest();
    if let Current::Measure(run) = current {
        // Before the first message: a run that cannot be gated against this baseline is
        // refused in seconds, not after minutes of measuring.
        let planned = SavedSettings::planned(run);
        let diffs = settings_differences(
            (&base.report.settings, &base.name()),
            (&planned, "this run"),
        );
        if !diffs.is_empty() && !args.force {
            return Err(ReportFileError::Differs(diffs).into());
        }
    }
    let current = match current {
        Current::Report(p) => Saved::load(p)?,
        Current::Measure(run) => measure_now(run, interrupt)?,
    };
    let diffs = differences(base, &current, true);
    if !diffs.is_empty() && !args.force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let named = cfg.metrics.iter().chain(cfg.tolerances.named_metrics());
    // A metric either report lacks is an error naming it (exit 2), never a silent
    // "inconclusive" that would let CI pass.
    let metrics = stored::plan(
        named,
        |m| cfg.tolerances.for_metric(m),
        &history.runs,
        &current,
    )?;
    print_reach(&metrics, &history, &current)?;
    let decisions: Vec<Decision> = metrics
        .iter()
        .map(|(m, t)| judge(m, *t, &history, &current))
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
        profile: Default::default(),
        baseline_runs: Some(history.runs.len()),
        baseline: history.name(),
        current: current.name(),
        verdict: overall(&decisions),
        decisions,
    };
    write_verdict(args, &outcome)?;
    crate::out!(
        "{}",
        crate::orchestrate::change_points::recent_steps(&history, &metrics, baseline)?
    );
    print_ungated(&metrics, &history, &current)?;
    Ok(verdict_exit(args, &outcome))
}

/// One metric's decision: against the spread of main's runs when the history has three or
/// more, else by the rounds rule, a regression standing only beyond the drift bound.
fn judge(
    m: &str,
    tolerance: f64,
    history: &History,
    current: &Saved,
) -> Result<Decision, ReportFileError> {
    let metric = Metric::named(m);
    let worse = if metric.higher_is_worse() {
        Worse::Higher
    } else {
        Worse::Lower
    };
    let now = current.require(&metric)?;
    let figures = run_figures(history, &metric)?;
    let floor = (metric.unit() == "us/tran").then_some(FLOOR_US);
    if let Some(d) = history::decide(m, metric.unit(), &figures, &now, tolerance, (worse, floor)) {
        return Ok(d);
    }
    let base = history.latest().require(&metric)?;
    Ok(first::judge(
        decide(m, &base, &now, tolerance, worse),
        history.runs.len(),
        Bound::of(hosts(history, current), &base, &now),
    ))
}

/// The host's state in the baseline's newest run and in this one.
fn hosts(history: &History, current: &Saved) -> Hosts {
    Hosts {
        baseline: history.latest().host_state(),
        current: current.host_state(),
    }
}

/// Each of main's runs' figure for a metric: the median of its rounds.
fn run_figures(history: &History, metric: &Metric) -> Result<Vec<f64>, ReportFileError> {
    history.figures(metric)
}

/// Up front: the smallest regression this gate can call, metric by metric — from the
/// spread of main's runs, or (fewer than three) the larger of the first baseline's bound
/// and what the rounds themselves can tell.
fn print_reach(
    metrics: &[(String, f64)],
    history: &History,
    current: &Saved,
) -> Result<(), ReportFileError> {
    let n = history.runs.len();
    let hosts = hosts(history, current);
    let mut parts = Vec::new();
    for (name, t) in metrics {
        let metric = Metric::named(name);
        // Group names come from saved reports: never raw on a terminal or a CI log.
        let m = crate::export::for_terminal(name);
        let figures = run_figures(history, &metric)?;
        if let Some(p) = Prediction::of(&figures) {
            parts.push(match p.reach(*t) {
                Some(r) => format!("{m} +{:.1}% (drift ±{:.1}%)", 100.0 * r, 100.0 * p.band()),
                None => format!(
                    "{m} none at ±{:.0}% (drift ±{:.1}%)",
                    100.0 * t,
                    100.0 * p.band()
                ),
            });
            continue;
        }
        let (base, now) = (history.latest().samples(&metric), current.samples(&metric));
        parts.push(match stored::reach(&base, &now, *t) {
            Some(rounds) => {
                let r = Bound::of(hosts, &base, &now).reach(*t).max(rounds);
                format!("{m} +{:.0}%", 100.0 * r)
            }
            None => format!("{m} none (fewer than 3 rounds)"),
        });
    }
    let text = if n >= MIN_RUNS {
        format!(
            "Reach: from the spread of main's {n} runs, the smallest regression this gate can call: {}\n",
            parts.join(", ")
        )
    } else {
        format!(
            "Reach: a baseline of {n} run{} has no spread between runs, so a change is called only beyond the tolerance and the drift allowed between two runs (hosts {}, docs/gate.md): {}; smaller ones need a history of {MIN_RUNS} runs (--save-baseline on main)\n",
            if n == 1 { "" } else { "s" },
            hosts.describe(),
            parts.join(", "),
        )
    };
    // Before the verdict's files: a full stdout must not keep them from being written.
    crate::out!("{text}");
    Ok(())
}

/// DRIVER, oemputx's own cost, is shown but not gated unless named: it is the tool's, not
/// the flow's, and it moves with the machine more than any group.
fn print_ungated(
    metrics: &[(String, f64)],
    history: &History,
    current: &Saved,
) -> anyhow::Result<()> {
    let driver = Metric::named(stored::UNGATED);
    if metrics.iter().any(|(m, _)| m == stored::UNGATED) {
        return Ok(());
    }
    let (Ok(figures), Ok(now)) = (run_figures(history, &driver), current.require(&driver)) else {
        return Ok(());
    };
    let (base, now) = (median(&figures), median(&now));
    crate::out!(
        "Not gated: {} (oemputx's own cost) {base:.2} -> {now:.2} us/tran ({:+.1}%); --metric {} gates it\n",
        stored::UNGATED,
        100.0 * (now / base - 1.0),
        stored::UNGATED
    );
    Ok(())
}

/// Measure the current run now, with the run options given after `--`.
fn measure_now(cfg: &RunConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Saved> {
    let report = crate::measure::measure(cfg, interrupt)?;
    crate::commands::run::write_reports(cfg, &report)?;
    if report.status != crate::driver::Status::Completed {
        anyhow::bail!(
            "the run did not complete ({}), so there is nothing to gate",
            report.status.describe()
        );
    }
    let json = serde_json::to_value(&report).context("encoding the run's report")?;
    Ok(Saved::from_json("this run".into(), json)?)
}
