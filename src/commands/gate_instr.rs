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
use crate::config::flow_command::FlowCommand;
use crate::config::gate::{FlowPair, GateConfig};
use crate::config::{RunConfig, RunLength};
use crate::exit::Exit;
use crate::flows::Flows;
use crate::gate::instructions::{
    COLD, Counts, Metric, STEADY, decide, parse_totals, rejudge as rejudge_counts,
};
use crate::gate::{GateError, InstructionCounts, Outcome, overall};
use crate::interleave::flow_arm::MadeQueues;
use crate::measure::measure;
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A flow under valgrind starts 20–50 times slower than without it.
const READY_UNDER_VALGRIND: Duration = Duration::from_secs(120);

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
        schema: crate::gate::SCHEMA,
        mode: "instructions",
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

/// `oemputx gate --rejudge VERDICT.json…`: each saved instruction gate judged again with
/// the current rule, as a TSV line (the file, each metric's B ÷ A and verdict, the whole
/// gate's verdict).
pub fn rejudge(cfg: &GateConfig, files: &[std::path::PathBuf]) -> anyhow::Result<Exit> {
    let mut out =
        String::from("file\tsteady_ratio\tsteady_verdict\tcold_ratio\tcold_verdict\tverdict\n");
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| {
            GateError::input("--rejudge", format!("cannot read {}: {e}", f.display()))
        })?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            GateError::input("--rejudge", format!("{} is not JSON: {e}", f.display()))
        })?;
        let counts: InstructionCounts = json
            .get("instruction_counts")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .ok_or_else(|| {
                GateError::input(
                    "--rejudge",
                    format!(
                        "{} holds no instruction counts: give the --export-json of `gate --instructions`",
                        f.display()
                    ),
                )
            })?;
        let d = rejudge_counts(&counts, cfg.tolerances.for_metric(STEADY));
        out.push_str(&format!(
            "{}\t{:.4}\t{}\t{:.4}\t{}\t{}\n",
            f.display(),
            d[0].ratio,
            d[0].verdict.as_str(),
            d[1].ratio,
            d[1].verdict.as_str(),
            overall(&d).as_str()
        ));
    }
    crate::export::print_stdout(&out)?;
    Ok(Exit::Ok)
}
