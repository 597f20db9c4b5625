//! The sweep (`oemputx sweep`), the broker paper's scaling experiment: for each task count
//! N, the driver with N tasks against (a) one flow process with N threads and (b) N flow
//! processes of one thread each. Every (N, mode) point is an arm of the experiment engine, a
//! flow of its own on its own request queue, restarted each block, measured in interleaved
//! rounds until each N's processes ÷ threads ratio is decided or as precise as asked, or the
//! time is up. The flow gets its mode in `OEMPUTX_SWEEP_MODE` (`threads` or `processes`).

use crate::config::sweep::{SweepConfig, SweepMode};
use crate::experiment::{Design, Experiment, Figures, Look, MetricSpec, Rule, median_interval};
use crate::interleave::flow_arm::{Arms, FlowArm, FlowGroup};
use crate::interleave::{Budget, End, Interleave};
use crate::report::Report;
use crate::report::saved::{Metric, SavedFigures};
use crate::report::sweep::{GroupFigure, ModeRatio, Point, RunShape, SCHEMA, Sweep, words};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The metrics each N's ratio is judged on: the flow's cost, the captured total, the rate.
const METRICS: [&str; 3] = ["FLOW", "captured", "rate"];
/// The control variate: the driver runs the same code at every point.
const CONTROL: &str = "DRIVER";
/// Cycles per block: two keep the blocks short (every point's flows restart per block).
const CYCLES_PER_BLOCK: usize = 2;

/// One point's shape: (N, mode, processes, threads each).
fn shapes(sc: &SweepConfig) -> Vec<(usize, SweepMode, usize, usize)> {
    let mut out = Vec::new();
    for &n in &sc.task_counts {
        for &mode in &sc.modes {
            let (p, t) = match mode {
                SweepMode::Threads => (1, n),
                SweepMode::Processes => (n, 1),
            };
            out.push((n, mode, p, t));
        }
    }
    out
}

/// Every point's flow, on its own queue; accounted by its process ids unless the user
/// named a FLOW group.
fn start_arms(
    sc: &SweepConfig,
    shapes: &[(usize, SweepMode, usize, usize)],
    queues: &[String],
) -> anyhow::Result<Arms> {
    let group = if sc.run.groups.iter().any(|g| g.name == "FLOW") {
        FlowGroup::Given
    } else {
        FlowGroup::Pids
    };
    shapes
        .iter()
        .zip(queues)
        .map(|(&(n, mode, p, t), q)| {
            let run = sc.run.silent().with_tasks(n)?.on_own_queue(q)?;
            let cmd = sc.flow.with_env("OEMPUTX_SWEEP_MODE", mode.as_str());
            let extra = vec!["--threads".to_string(), t.to_string()];
            FlowArm::start(
                format!("N={n} {}", mode.as_str()),
                &cmd,
                extra,
                (p, p * t),
                group,
                run,
            )
        })
        .collect()
}

/// The engine's design: per N, processes against threads.
fn design(sc: &SweepConfig, shapes: &[(usize, SweepMode, usize, usize)], control: bool) -> Design {
    let arm = |n: usize, m: SweepMode| shapes.iter().position(|s| s.0 == n && s.1 == m);
    let contrasts = sc
        .task_counts
        .iter()
        .filter_map(|&n| Some((arm(n, SweepMode::Threads)?, arm(n, SweepMode::Processes)?)))
        .collect();
    Design {
        arms: shapes.len(),
        contrasts,
        metrics: METRICS
            .iter()
            .map(|m| MetricSpec {
                name: m.to_string(),
                higher_is_worse: Metric::named(m).higher_is_worse(),
                rule: Rule::Difference {
                    min_effect: sc.min_effect,
                },
                floor: 0.0,
                adjusted: true,
            })
            .collect(),
        control,
        cycles_per_block: CYCLES_PER_BLOCK,
        alpha: crate::experiment::family_alpha(METRICS.len()),
        max_blocks: 1000,
        precision: Some(sc.precision),
        stop_on_worse: false,
    }
}

fn figures(r: &Report) -> Figures {
    let f = SavedFigures::from(r);
    Figures {
        values: METRICS.iter().map(|m| Metric::named(m).of(&f)).collect(),
        control: Metric::named(CONTROL).of(&f),
    }
}

/// A point's figures from its rounds: each a median with its 95 % interval.
fn point(
    shape: (usize, SweepMode, usize, usize),
    rounds: &[Report],
    engine: &Experiment,
    arm: usize,
) -> Point {
    let (tasks, mode, processes, threads) = shape;
    let summary = |v: Vec<f64>| median_interval(&v, 0.05);
    let mut names: Vec<String> = Vec::new();
    for r in rounds {
        for g in &r.groups {
            if !names.contains(&g.name) {
                names.push(g.name.clone());
            }
        }
    }
    Point {
        tasks,
        mode,
        flow_processes: processes,
        flow_threads_each: threads,
        rounds: rounds.len(),
        rate_tps: summary(rounds.iter().map(|r| r.rate_tps).collect()),
        round_trip_mean_us: summary(rounds.iter().map(|r| r.round_trip_us.mean).collect()),
        groups: names
            .into_iter()
            .map(|name| GroupFigure {
                us_per_tran: summary(
                    rounds
                        .iter()
                        .filter_map(|r| r.groups.iter().find(|g| g.name == name))
                        .map(|g| g.total_us_per_tran)
                        .collect(),
                ),
                name,
            })
            .collect(),
        captured_us_per_tran: summary(
            rounds
                .iter()
                .filter_map(|r| r.captured_us_per_tran)
                .collect(),
        ),
        corrected_us_per_tran: summary(
            rounds
                .iter()
                .filter_map(|r| r.corrected_us_per_tran)
                .collect(),
        ),
        round_figures: (0..METRICS.len())
            .map(|m| engine.round_values(arm, m))
            .collect(),
        round_controls: engine.round_controls(arm),
    }
}

/// Each N's processes ÷ threads per metric, from the engine (the rate turned back from its
/// "above 1 is worse" orientation into plain processes ÷ threads).
fn ratios(engine: &Experiment, sc: &SweepConfig) -> Vec<ModeRatio> {
    let d = engine.design();
    engine
        .outcomes()
        .iter()
        .map(|o| {
            let rate = !d.metrics[o.metric].higher_is_worse;
            let turn = |x: f64| if rate { 1.0 / x } else { x };
            let (ratio, low, high) = match o.interval {
                Some(i) if rate => (Some(turn(i.ratio)), Some(turn(i.high)), Some(turn(i.low))),
                Some(i) => (Some(i.ratio), Some(i.low), Some(i.high)),
                None => (None, None, None),
            };
            // 0 and infinity are an end too few blocks leave unbounded: no figure.
            let finite = |v: Option<f64>| v.filter(|x| x.is_finite() && *x > 0.0);
            ModeRatio {
                tasks: sc.task_counts.get(o.contrast).copied().unwrap_or(0),
                metric: d.metrics[o.metric].name.clone(),
                ratio: finite(ratio),
                low: finite(low),
                high: finite(high),
                level: o.level,
                finding: o.finding,
                min_effect_pct: 100.0 * o.rule.threshold(),
                reading: {
                    let (worse, better) = words(rate);
                    crate::experiment::reading::difference(o, worse, better)
                },
                adjusted_by: o.slope.map(|_| CONTROL.to_string()),
            }
        })
        .collect()
}

/// Run the sweep: every point in interleaved rounds until each N's ratio is decided or as
/// precise as asked, or the time is up. The sweep and how it ended, or `None` when it was
/// interrupted before one round was measured (nothing to report).
pub fn run(sc: &SweepConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Option<(Sweep, End)>> {
    let shapes = shapes(sc);
    let pid = std::process::id();
    let queues: Vec<String> = (0..shapes.len())
        .map(|i| format!("{}.S{i}.{pid}", sc.run.request_queue))
        .collect();
    let mut arms = start_arms(sc, &shapes, &queues)?;
    let quiet = sc.run.quiet;
    if !quiet {
        crate::say!(
            "sweep: {} points ({}), each a flow of its own, in interleaved rounds until each N's processes ÷ threads is within ±{:.1}% or decided, at most {}",
            shapes.len(),
            arms.iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            100.0 * sc.precision,
            humantime::format_duration(sc.max_time)
        );
    }
    let start_utc = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut engine = Experiment::new(design(sc, &shapes, true))?;
    let mut run = Interleave::new(
        arms.as_mut_slice(),
        Budget {
            max_time: sc.max_time,
            max_blocks: 1000,
        },
    );
    let end = run.drive(&mut engine, figures, &interrupt, |look, elapsed| {
        if !quiet {
            crate::say!("{}", look_line(sc, look, elapsed));
        }
    });
    let elapsed = run.elapsed().as_secs_f64();
    let rounds = std::mem::take(&mut run.rounds);
    let Some(first) = rounds.iter().find_map(|r| r.first()) else {
        // Not one round measured: there is nothing to report, only what stopped it.
        return match run.fault.take() {
            Some(e) => Err(e),
            None => Ok(None),
        };
    };
    let partial = run.partial(&engine, end);
    if let Some(p) = partial.as_ref().filter(|_| end == End::Failed) {
        crate::say!("sweep: {}; the report covers the blocks measured", p.line());
    }
    drop(run);
    drop(arms);
    let sweep = Sweep {
        schema: SCHEMA,
        label: format!("{}-sweep", sc.run.label),
        start_utc,
        flow_cmd: sc.shown_cmd.clone(),
        settings: first.settings.clone(),
        host: first.host.clone(),
        points: shapes
            .iter()
            .zip(&rounds)
            .enumerate()
            .map(|(arm, (s, r))| point(*s, r, &engine, arm))
            .collect(),
        ratios: ratios(&engine, sc),
        run_shape: RunShape {
            blocks: engine.blocks(),
            cycles: engine.cycles(),
            cycles_per_block: CYCLES_PER_BLOCK,
            elapsed_s: elapsed,
            ended: end.as_str(),
            precision_pct: 100.0 * sc.precision,
            metrics: METRICS.iter().map(|m| m.to_string()).collect(),
            control: CONTROL.to_string(),
        },
        partial,
    };
    Ok(Some((sweep, end)))
}

/// The progress line of a look: each N's FLOW ratio so far.
fn look_line(sc: &SweepConfig, look: &Look, elapsed: std::time::Duration) -> String {
    format!(
        "sweep: look {} after {} blocks ({:.0} s): {}",
        look.boundary.look,
        look.blocks,
        elapsed.as_secs_f64(),
        look.items
            .iter()
            .filter(|i| i.metric == 0)
            .filter_map(|i| i.interval.map(|v| (i.contrast, v)))
            .map(|(c, v)| format!(
                "N={} FLOW {:+.1}% [{:+.1}%, {:+.1}%]",
                sc.task_counts.get(c).copied().unwrap_or(0),
                100.0 * (v.ratio - 1.0),
                100.0 * (v.low - 1.0),
                100.0 * (v.high - 1.0)
            ))
            .collect::<Vec<_>>()
            .join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn config(extra: &[&str]) -> SweepConfig {
        let mut argv = vec![
            "oemputx",
            "sweep",
            "--flow-cmd",
            "sample-flow --echo",
            "--qmgr",
            "amqp://guest:guest@127.0.0.1:5672/%2f",
        ];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Some(crate::cli::Command::Sweep(a))) => {
                a.options().expect("options").build().expect("builds")
            }
            other => panic!("not a sweep: {other:?}"),
        }
    }

    #[test]
    fn every_task_count_is_a_point_per_mode_threads_in_one_process_or_processes_of_one_thread() {
        let sc = config(&["--tasks", "1,2,4"]);
        let s = shapes(&sc);
        assert_eq!(s.len(), 6);
        assert!(s.contains(&(4, SweepMode::Threads, 1, 4)));
        assert!(s.contains(&(4, SweepMode::Processes, 4, 1)));
        // Each N's contrast is its threads point against its processes point.
        let d = design(&sc, &s, true);
        assert_eq!(d.arms, 6);
        assert_eq!(d.contrasts.len(), 3);
        for (t, p) in &d.contrasts {
            assert_eq!(s[*t].0, s[*p].0);
            assert_eq!(
                (s[*t].1, s[*p].1),
                (SweepMode::Threads, SweepMode::Processes)
            );
        }
        assert_eq!(d.metrics.len(), METRICS.len());
        assert!(!d.metrics[2].higher_is_worse, "the rate: higher is better");
    }
}
