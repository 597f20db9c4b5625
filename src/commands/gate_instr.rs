//! `oemputx gate --instructions --flow-a CMD --flow-b CMD -- RUN OPTIONS`: the deterministic
//! gate, on instruction counts instead of CPU time.
//!
//! Each flow runs under valgrind's callgrind (children traced), once for 1 message, once for
//! N and once for 2N (N = the run options' --count, 1000 by default), each on a fresh
//! process that is stopped (SIGTERM, so callgrind writes its counts) after the replies came
//! back. This is the method of ruststream-amqp's and iai-callgrind's benchmarks:
//! instructions retired do not depend on the machine's speed or on what else it runs, so a
//! change of 2 % shows as 2 % in one run, where CPU time needs minutes of interleaved rounds
//! to see it through the noise (docs/gate.md has both calibrations). What it cannot see: the
//! broker's and the database's CPU, cache misses and waits; that is what the CPU-time gates
//! are for.
//!
//! **Which difference.** Start-up, connection and shutdown cancel in a difference of two
//! runs. The issue that asked for this gate named (I(2N) − I(N)) ÷ N; measured on
//! sample-flow, that difference strayed by up to 0.85 % between identical builds, because
//! the flow's libraries run timers and poll by the clock, so the longer a run (the 2N one
//! runs 10 s under valgrind) the more its count wanders. (I(N) − I(1)) ÷ (N − 1) strayed by
//! at most 0.21 % over the same runs (`lab/calibration/instr-*`), so that is the steady cost
//! gated; the 2N runs remain a check that the cost per message is flat (a flow that warms
//! up over its first thousand messages shows as a difference between the two), printed in
//! the note. The cold start is I(1).
//!
//! **Which run.** Each side is counted `--runs` times (5 by default), A and B alternating,
//! and each figure is the smallest over the runs: timing only ever adds polls and timer
//! work, so the least-disturbed run is the one that repeats. A smallest figure that no other
//! run comes within half the tolerance of is not trusted: the metric is then inconclusive.

use super::gate::{verdict_exit, write_verdict};
use super::gate_ab::MadeQueues;
use crate::config::flow_command::FlowCommand;
use crate::config::gate::{FlowPair, GateConfig};
use crate::config::{RunConfig, RunLength};
use crate::exit::Exit;
use crate::flows::Flows;
use crate::gate::{Decision, InstructionCounts, Outcome, Verdict, overall};
use crate::measure::measure;
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A flow under valgrind starts 20–50 times slower than without it.
const READY_UNDER_VALGRIND: Duration = Duration::from_secs(120);
/// The gated metrics, as named in the verdict table and in a gate file.
const STEADY: &str = "instructions/msg";
const COLD: &str = "cold start";

/// One side's counts: per run, the instructions over 1, N and 2N messages.
#[derive(Debug, Clone, Default)]
struct Counts {
    runs: Vec<[u64; 3]>,
}

impl Counts {
    /// The figure of each run: the steady cost (I(N) − I(1)) ÷ (N − 1), the cold start I(1),
    /// or the check (I(2N) − I(N)) ÷ N.
    fn per_run(&self, metric: Metric) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| {
                let [one, n1, n2] = r.map(|x| x as f64);
                match metric {
                    Metric::Steady(n) => (n1 - one) / (n as f64 - 1.0),
                    Metric::Cold => one,
                    Metric::Check(n) => (n2 - n1) / n as f64,
                }
            })
            .collect()
    }

    /// The smallest figure over the runs: the least-disturbed run.
    fn least(&self, metric: Metric) -> f64 {
        self.per_run(metric)
            .into_iter()
            .fold(f64::INFINITY, f64::min)
    }

    /// Whether another run comes within `within` (a fraction) of the smallest figure: a lone
    /// low figure may be a run that skipped work, not the undisturbed cost.
    fn confirmed(&self, metric: Metric, within: f64) -> bool {
        let least = self.least(metric);
        self.per_run(metric)
            .iter()
            .filter(|&&x| x <= least * (1.0 + within))
            .count()
            >= 2
    }
}

/// `oemputx gate --instructions`.
pub fn gate_instructions(
    cfg: &GateConfig,
    pair: &FlowPair,
    (runs, n): (usize, u64),
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let commands = &pair.flows;
    let [cmd_a, cmd_b] = &pair.shown;
    let base = &pair.run;
    let tolerances = &cfg.tolerances;
    let valgrind = valgrind_version()?;

    let pid = std::process::id();
    let queues: Vec<String> = ["A", "B"]
        .iter()
        .map(|s| format!("{}.I{s}.{pid}", base.request_queue))
        .collect();
    let _made = MadeQueues {
        endpoint: base.endpoint.clone(),
        queues: queues.clone(),
    };
    let dir = tempfile::Builder::new()
        .prefix("oemputx-callgrind")
        .tempdir()
        .context("making a directory for callgrind's output (set TMPDIR to a writable one)")?;
    eprintln!(
        "gate instructions: A = {cmd_a} (queue {})\ngate instructions: B = {cmd_b} (queue {})",
        queues[0], queues[1]
    );
    eprintln!(
        "gate instructions: {valgrind} (callgrind); each flow counted {runs} times over 1, {n} and {} messages",
        2 * n
    );
    let Some(counts) = count_sides(commands, base, &queues, (runs, n), dir.path(), &interrupt)?
    else {
        return Ok(Exit::Interrupted);
    };
    let decisions = vec![
        decide(Metric::Steady(n), &counts, tolerances.for_metric(STEADY)),
        decide(Metric::Cold, &counts, tolerances.for_metric(COLD)),
    ];
    let outcome = Outcome {
        baseline: format!("A: {cmd_a}"),
        current: format!("B: {cmd_b}"),
        verdict: overall(&decisions),
        decisions,
        ab_rounds: None,
        instruction_counts: Some(InstructionCounts {
            messages: [1, n, 2 * n],
            a: counts[0].runs.clone(),
            b: counts[1].runs.clone(),
        }),
    };
    write_verdict(cfg, &outcome)?;
    Ok(verdict_exit(cfg, &outcome))
}

/// Count both sides `runs` times over 1, `n` and 2`n` messages, A and B alternating; None
/// when Ctrl-C ended it.
fn count_sides(
    commands: &[FlowCommand; 2],
    base: &RunConfig,
    queues: &[String],
    (runs, n): (usize, u64),
    dir: &Path,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<Option<[Counts; 2]>> {
    let started = Instant::now();
    let mut counts = [Counts::default(), Counts::default()];
    for run in 0..runs {
        // A B, B A, A B: neither side always goes first.
        let order = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let mut cfg = base.clone();
            cfg.request_queue = queues[side].clone();
            let tag = format!("{}{run}", ["a", "b"][side]);
            let mut run_counts = [0; 3];
            for (k, messages) in [1, n, 2 * n].into_iter().enumerate() {
                if interrupt.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                cfg.length = RunLength::Count(messages);
                let file = format!("{tag}-{messages}");
                run_counts[k] = count(&commands[side], &cfg, dir, &file, interrupt)
                    .with_context(|| format!("counting flow {}", ["A", "B"][side]))?;
            }
            eprintln!(
                "gate instructions: flow {} run {}: {:.0} instructions/msg ({:.0} over messages N+1 to 2N), cold start {} ({:.0} s)",
                ["A", "B"][side],
                run + 1,
                (run_counts[1] as f64 - run_counts[0] as f64) / (n as f64 - 1.0),
                (run_counts[2] as f64 - run_counts[1] as f64) / n as f64,
                run_counts[0],
                started.elapsed().as_secs_f64()
            );
            counts[side].runs.push(run_counts);
        }
    }
    Ok(Some(counts))
}

/// valgrind's version, or what to do when it is missing.
fn valgrind_version() -> anyhow::Result<String> {
    let out = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .context("cannot run valgrind: install it (apt-get install valgrind; bash ci/services.sh valgrind does it) or put it on PATH")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Run `cmd` under callgrind for one round of `cfg` (its count), stop it, and return the
/// instructions its processes executed.
fn count(
    cmd: &FlowCommand,
    cfg: &RunConfig,
    dir: &Path,
    file: &str,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<u64> {
    let out = dir.join(format!("{file}.%p"));
    let wrapped = cmd.under(
        "valgrind",
        &[
            "--tool=callgrind".into(),
            "--trace-children=yes".into(),
            format!("--callgrind-out-file={}", out.display()),
        ],
    );
    let mut flows = Flows::start(&wrapped, &cfg.endpoint, &cfg.request_queue, 1, &[])?;
    flows.wait_ready_within(1, READY_UNDER_VALGRIND)?;
    let report = measure(cfg, interrupt.clone())?;
    if report.status != crate::driver::Status::Completed {
        anyhow::bail!(
            "the round of {} messages did not complete ({:?}: {})",
            match cfg.length {
                RunLength::Count(n) => n,
                RunLength::Duration(_) => 0,
            },
            report.status,
            report.status_detail.as_deref().unwrap_or("")
        );
    }
    // Stopping the flow makes callgrind write its counts.
    drop(flows);
    total_instructions(dir, file)
}

/// The instructions in all of callgrind's output files for `prefix` (one per process).
fn total_instructions(dir: &Path, prefix: &str) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut files = 0;
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.starts_with(&format!("{prefix}.")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())
            .with_context(|| format!("reading callgrind's {}", entry.path().display()))?;
        total += parse_totals(&text).with_context(|| {
            format!(
                "callgrind's {} has no totals line: did the flow stop before valgrind could write it?",
                entry.path().display()
            )
        })?;
        files += 1;
    }
    if files == 0 {
        anyhow::bail!(
            "callgrind wrote no counts: is the flow's program one valgrind can run (a native binary or a script that execs one)?"
        );
    }
    Ok(total)
}

/// The first event (Ir, instructions) of callgrind's `totals:` line, else its `summary:`.
fn parse_totals(text: &str) -> Option<u64> {
    let first = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    first("totals:").or_else(|| first("summary:"))
}

/// What is judged: the steady cost of a message (N given), or the cold start; the check is
/// the (I(2N) − I(N)) ÷ N figure, printed, not gated.
#[derive(Debug, Clone, Copy)]
enum Metric {
    Steady(u64),
    Cold,
    Check(u64),
}

/// Judge B's counts against A's on the least-disturbed runs; inconclusive when a smallest
/// figure is not confirmed by another run within half the tolerance.
fn decide(metric: Metric, counts: &[Counts; 2], tolerance: f64) -> Decision {
    let (name, unit) = match metric {
        Metric::Steady(_) | Metric::Check(_) => (STEADY, "instructions/msg"),
        Metric::Cold => (COLD, "instructions"),
    };
    let (a, b) = (counts[0].least(metric), counts[1].least(metric));
    let ratio = b / a;
    let runs_b = counts[1].per_run(metric);
    let (bmin, bmax) = runs_b
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let spread = |c: &Counts, least: f64| {
        c.per_run(metric)
            .iter()
            .fold(0.0f64, |s, x| s.max(x / least - 1.0))
    };
    let worst = spread(&counts[0], a).max(spread(&counts[1], b));
    let confirmed = counts.iter().all(|c| c.confirmed(metric, tolerance / 2.0));
    let check = match metric {
        Metric::Steady(n) => {
            let (ca, cb) = (
                counts[0].least(Metric::Check(n)),
                counts[1].least(Metric::Check(n)),
            );
            format!(
                "; over messages N+1 to 2N: A {ca:.0}, B {cb:.0} ({:+.2}%)",
                100.0 * (cb / ca - 1.0)
            )
        }
        _ => String::new(),
    };
    let (verdict, note) = if !ratio.is_finite() || a <= 0.0 {
        (
            Verdict::Inconclusive,
            "flow A counted no instructions for it".to_string(),
        )
    } else if !confirmed {
        (
            Verdict::Inconclusive,
            format!(
                "a side's smallest figure has no other run within {:.2}% of it: this flow's counts depend on timing more than the tolerance allows; give it one thread, run with --tasks 1, more --runs, or gate at a wider tolerance{check}",
                50.0 * tolerance
            ),
        )
    } else {
        let v = if ratio > 1.0 + tolerance {
            Verdict::Regression
        } else if ratio < 1.0 - tolerance {
            Verdict::Improvement
        } else {
            Verdict::Pass
        };
        (
            v,
            format!(
                "instruction counts (callgrind), the least-disturbed of {} runs a side; the others were up to {:.2}% above it{check}",
                counts[0].runs.len(),
                100.0 * worst
            ),
        )
    };
    Decision {
        metric: name.to_string(),
        unit,
        base_median: a,
        current_median: b,
        ratio,
        ci_low: f64::NAN,
        ci_high: f64::NAN,
        ci_level: f64::NAN,
        p_value: f64::NAN,
        tolerance,
        base_rounds: counts[0].runs.len(),
        current_rounds: counts[1].runs.len(),
        current_min: bmin,
        current_max: bmax,
        verdict,
        note: Some(note),
        adjusted_for: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_come_from_callgrinds_output() {
        let out = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 1063731\n\nfn=(1) main\n0 5\n\ntotals: 1063843\n";
        assert_eq!(parse_totals(out), Some(1_063_843));
        assert_eq!(parse_totals("events: Ir\nsummary: 42\n"), Some(42));
        assert_eq!(parse_totals("events: Ir\n"), None);
    }

    fn counts(runs: &[[u64; 3]]) -> Counts {
        Counts {
            runs: runs.to_vec(),
        }
    }

    #[test]
    fn the_least_disturbed_runs_decide() {
        // Flow A: 194,000 a message plus 1.29 M of start-up; one run of N disturbed.
        let a = counts(&[
            [1_290_000, 195_284_000, 389_390_000],
            [1_290_100, 197_850_000, 389_380_000],
            [1_289_900, 195_290_000, 401_410_000],
        ]);
        let steady = Metric::Steady(1000);
        assert!(
            (a.least(steady) - 194_188.2).abs() < 1.0,
            "{}",
            a.least(steady)
        );
        // B: 2 % more per message.
        let b = counts(&[
            [1_290_000, 199_170_000, 397_150_000],
            [1_290_000, 199_160_000, 397_140_000],
            [1_290_000, 201_000_000, 397_160_000],
        ]);
        let d = decide(steady, &[a.clone(), b], 0.01);
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        assert!((d.ratio - 1.0199).abs() < 0.001, "{d:?}");
        assert!(d.note.unwrap_or_default().contains("N+1 to 2N"));
        let same = decide(steady, &[a.clone(), a.clone()], 0.01);
        assert_eq!(same.verdict, Verdict::Pass);
        assert_eq!(
            decide(Metric::Cold, &[a.clone(), a.clone()], 0.01).verdict,
            Verdict::Pass
        );
        // A lone low figure that no other run comes near is not trusted.
        let lone = counts(&[
            [1_290_000, 190_000_000, 389_390_000],
            [1_290_000, 195_180_000, 389_380_000],
            [1_290_000, 197_850_000, 389_400_000],
        ]);
        let d = decide(steady, &[a, lone], 0.01);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
    }
}
