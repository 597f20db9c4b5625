//! The stored-baseline gate's run (`oemputx gate --baseline FILE [--current REPORT | --
//! RUN OPTIONS]`): main's history of runs read, the current report read or measured now,
//! the metrics and tolerances picked, and each metric judged by [`crate::gate`] — against
//! the spread of main's runs when the history holds three or more, else against the newest
//! run's rounds, never calling a regression within the drift allowed between two runs.
//! The command writes the verdict ([`super::verdict`]) and then [`Judged::print_after`].

use crate::config::compare::FLOOR_US;
use crate::config::gate::{Current, GateConfig};
use crate::config::{ConfigError, RunConfig};
use crate::gate::first::{self, Bound, Hosts};
use crate::gate::history::{self, MIN_RUNS, Prediction};
use crate::gate::statistics::median;
use crate::gate::stored::{self, decide};
use crate::gate::{Decision, Outcome, Verdict, Worse, overall};
use crate::report::Report;
use crate::report::history::History;
use crate::report::saved::{
    Metric, ReportFileError, Saved, SavedSettings, differences, settings_differences,
};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// How a run measured now writes its reports (the put/get run's own writing, which the
/// command passes in): a gate's run leaves the same files as `oemputx` alone would.
pub type WriteReports<'a> = &'a dyn Fn(&RunConfig, &Report) -> anyhow::Result<()>;

/// What the stored gate came to.
pub enum Stored {
    /// No baseline file: why, for [`super::verdict::no_baseline`].
    NoBaseline(String),
    /// Every metric judged.
    Judged(Box<Judged>),
}

/// The verdict, and what the gate prints after it.
pub struct Judged {
    pub outcome: Outcome,
    history: History,
    metrics: Vec<(String, f64)>,
    current: Saved,
    baseline: PathBuf,
}

/// The stored-baseline gate: this run against main's history of runs (or, with fewer than
/// three, against the newest run's rounds, never calling a regression). `write` writes the
/// reports of a run measured now, before anything is judged.
pub fn run(
    cfg: &GateConfig,
    baseline: &Path,
    current: &Current,
    interrupt: Arc<AtomicBool>,
    write: WriteReports,
) -> anyhow::Result<Stored> {
    let history = match History::load(baseline) {
        Ok(b) => b,
        Err(ReportFileError::Unreadable { why, .. }) if !baseline.exists() => {
            return Ok(Stored::NoBaseline(format!(
                "no baseline at {} ({why}); make one on main with --save-baseline {} (each run of main appends to it)",
                baseline.display(),
                baseline.display()
            )));
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
        if !diffs.is_empty() && !cfg.force {
            return Err(ReportFileError::Differs(diffs).into());
        }
    }
    let current = match current {
        Current::Report(p) => Saved::load(p)?,
        Current::Measure(run) => measure_now(run, interrupt, write)?,
    };
    let diffs = differences(base, &current, true);
    if !diffs.is_empty() && !cfg.force {
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
    let outcome = outcome(&metrics, &history, &current)?;
    Ok(Stored::Judged(Box::new(Judged {
        outcome,
        history,
        metrics,
        current,
        baseline: baseline.to_path_buf(),
    })))
}

impl Judged {
    /// After the verdict: the steps among main's newest runs the baseline spans, and
    /// oemputx's own cost, shown but not gated.
    pub(crate) fn print_after(&self) -> anyhow::Result<()> {
        crate::out!(
            "{}",
            super::change_points::recent_steps(&self.history, &self.metrics, &self.baseline)?
        );
        print_ungated(&self.metrics, &self.history, &self.current)
    }
}

/// Every metric judged, and the gate's verdict on them.
fn outcome(
    metrics: &[(String, f64)],
    history: &History,
    current: &Saved,
) -> anyhow::Result<Outcome> {
    let decisions: Vec<Decision> = metrics
        .iter()
        .map(|(m, t)| judge(m, *t, history, current))
        .collect::<Result<_, ReportFileError>>()?;
    if decisions.is_empty() {
        return Err(ConfigError::BadValue {
            flag: "--baseline",
            why: "the reports share no metric to gate (no groups, no CPU totals)".into(),
        }
        .into());
    }
    Ok(Outcome {
        schema: crate::gate::SCHEMA,
        mode: "stored",
        ab_rounds: None,
        sequential: None,
        instruction_counts: None,
        profile: Default::default(),
        baseline_runs: Some(history.runs.len()),
        baseline: history.name(),
        current: current.name(),
        verdict: overall(&decisions),
        decisions,
    })
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
    if let Some(d) = from_zero(m, &metric, &figures, &now, tolerance) {
        return Ok(d);
    }
    let floor = (metric.unit() == "us/tran").then_some(FLOOR_US);
    if let Some(d) = history::decide(m, metric.unit(), &figures, &now, tolerance, (worse, floor)) {
        return Ok(d);
    }
    let base = history.latest().require(&metric)?;
    Ok(first::judge(
        decide(m, &base, &now, tolerance, worse),
        history.runs.len(),
        Bound::of(hosts(history, current), &base, &now).counting(steady_count(&metric)),
    ))
}

/// A count beyond CPU that main's runs never made (no sync, no byte written: every run's
/// figure 0) has no ratio: the current run making none passes, making any is a regression
/// (a flow that starts to fsync is the change this gate exists for).
fn from_zero(
    m: &str,
    metric: &Metric,
    main: &[f64],
    now: &[f64],
    tolerance: f64,
) -> Option<Decision> {
    if !matches!(metric, Metric::Cost { .. }) || main.iter().any(|v| *v != 0.0) {
        return None;
    }
    let made = if now.is_empty() { 0.0 } else { median(now) };
    let (verdict, note) = if made > 0.0 {
        (
            Verdict::Regression,
            Some(format!(
                "main's runs made none (0 in every run); this run makes {made:.3} per message"
            )),
        )
    } else {
        (Verdict::Pass, None)
    };
    let ratio = if made > 0.0 { f64::INFINITY } else { 1.0 };
    Some(
        Decision::of(m, metric.unit(), main, now, tolerance)
            .interval(ratio, (ratio, ratio), 0.95)
            .judged(verdict, note),
    )
}

/// A count beyond CPU that runs of the same code repeat whatever the host (bytes written,
/// write calls, syncs): the first baseline allows it the counts' narrow drift.
fn steady_count(metric: &Metric) -> bool {
    match metric {
        Metric::Cost { name, .. } => {
            crate::report::saved::cost_metric(name).is_some_and(|m| m.steady_between_runs)
        }
        _ => false,
    }
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
                let r = Bound::of(hosts, &base, &now)
                    .counting(steady_count(&metric))
                    .reach(*t)
                    .max(rounds);
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

/// Measure the current run now, with the run options given after `--`; its reports are
/// written (`write`) before a run that did not complete is refused.
fn measure_now(
    cfg: &RunConfig,
    interrupt: Arc<AtomicBool>,
    write: WriteReports,
) -> anyhow::Result<Saved> {
    let report = crate::measure::measure(cfg, interrupt)?;
    write(cfg, &report)?;
    if report.status != crate::driver::Status::Completed {
        anyhow::bail!(
            "the run did not complete ({}), so there is nothing to gate",
            report.status.describe()
        );
    }
    let json = serde_json::to_value(&report).context("encoding the run's report")?;
    Ok(Saved::from_json("this run".into(), json)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;
    use std::cell::Cell;

    /// `oemputx gate --baseline PATH --tolerance 60% -- RUN` on the embedded queue manager.
    fn config(baseline: &Path, run: &[&str]) -> GateConfig {
        let mut argv = vec!["oemputx", "gate", "--tolerance", "60%", "--baseline"];
        let path = baseline.display().to_string();
        argv.push(&path);
        argv.push("--");
        argv.extend_from_slice(run);
        argv.push("--quiet");
        match crate::cli::Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Some(crate::cli::Command::Gate(a))) => {
                a.options().expect("options").build().expect("builds")
            }
            other => panic!("not a gate: {other:?}"),
        }
    }

    fn parts(cfg: &GateConfig) -> (&Path, &Current, &RunConfig) {
        match &cfg.mode {
            crate::config::gate::GateMode::Stored {
                baseline,
                current: current @ Current::Measure(run),
            } => (baseline, current, run),
            other => panic!("not a gate measuring now: {other:?}"),
        }
    }

    /// main's history of one run of `run`'s settings, measured now, in `path`.
    fn history_of(path: &Path, run: &RunConfig) {
        let report = crate::measure::measure(run, Arc::new(AtomicBool::new(false))).expect("run");
        let json = serde_json::to_value(&report).expect("json");
        std::fs::write(path, History::first(json).expect("a history")).expect("write");
    }

    /// Counts the report writings a gate asks for.
    #[derive(Default)]
    struct Writes(Cell<usize>);

    impl Writes {
        fn write(&self, _: &RunConfig, _: &Report) -> anyhow::Result<()> {
            self.0.set(self.0.get() + 1);
            Ok(())
        }
    }

    const RUN: [&str; 4] = ["--count", "200", "--rounds", "3"];

    #[test]
    fn without_a_baseline_file_the_gate_says_how_to_make_one_and_measures_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(&dir.path().join("baseline.json"), &RUN);
        let (baseline, current, _) = parts(&cfg);
        let writes = Writes::default();
        let write = |c: &RunConfig, r: &Report| writes.write(c, r);
        let idle = Arc::new(AtomicBool::new(false));
        match run(&cfg, baseline, current, idle, &write).expect("no baseline is no error") {
            Stored::NoBaseline(msg) => {
                assert!(msg.starts_with("no baseline at "), "{msg}");
                assert!(msg.contains("--save-baseline"), "{msg}");
            }
            Stored::Judged(_) => panic!("judged without a baseline"),
        }
        assert_eq!(writes.0.get(), 0);
    }

    #[test]
    fn a_run_measured_now_is_written_then_judged_against_mains_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(&dir.path().join("baseline.json"), &RUN);
        let (baseline, current, run_cfg) = parts(&cfg);
        history_of(baseline, run_cfg);
        let writes = Writes::default();
        let write = |c: &RunConfig, r: &Report| {
            assert_eq!(r.transactions, 600);
            writes.write(c, r)
        };
        let idle = Arc::new(AtomicBool::new(false));
        let Stored::Judged(j) = run(&cfg, baseline, current, idle, &write).expect("judged") else {
            panic!("the baseline was there");
        };
        assert_eq!(writes.0.get(), 1, "the run's reports, once");
        let o = &j.outcome;
        assert_eq!((o.mode, o.baseline_runs), ("stored", Some(1)));
        assert_eq!(o.current, "this run");
        assert!(!o.decisions.is_empty());
        assert_eq!(o.verdict, overall(&o.decisions));
        j.print_after().expect("printed");
    }

    #[test]
    fn a_run_of_other_settings_is_refused_before_it_is_measured() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("baseline.json");
        history_of(&path, parts(&config(&path, &RUN)).2);
        let cfg = config(&path, &["--count", "200", "--rounds", "3", "--tasks", "2"]);
        let (baseline, current, _) = parts(&cfg);
        let writes = Writes::default();
        let write = |c: &RunConfig, r: &Report| writes.write(c, r);
        let idle = Arc::new(AtomicBool::new(false));
        let err = run(&cfg, baseline, current, idle, &write)
            .err()
            .expect("other settings");
        assert!(
            matches!(
                err.downcast_ref::<ReportFileError>(),
                Some(ReportFileError::Differs(_))
            ),
            "{err:#}"
        );
        assert_eq!(writes.0.get(), 0, "nothing measured, nothing written");
    }

    #[test]
    fn a_run_that_did_not_complete_has_its_reports_written_and_is_not_gated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(&dir.path().join("baseline.json"), &RUN);
        let (baseline, current, run_cfg) = parts(&cfg);
        history_of(baseline, run_cfg);
        let writes = Writes::default();
        let write = |c: &RunConfig, r: &Report| writes.write(c, r);
        // Ctrl-C before the first message.
        let stopped = Arc::new(AtomicBool::new(true));
        let err = run(&cfg, baseline, current, stopped, &write)
            .err()
            .expect("not complete");
        assert!(format!("{err:#}").contains("did not complete"), "{err:#}");
        assert_eq!(writes.0.get(), 1, "written before the refusal");
    }
}
