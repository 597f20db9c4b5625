//! The instruction gate's runs (`oemputx gate --instructions --flow-a CMD --flow-b CMD --
//! RUN OPTIONS`): the deterministic gate, on instruction counts instead of CPU time.
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

use crate::config::flow_command::FlowCommand;
use crate::config::gate::{GateConfig, InstrSides, OneFlow};
use crate::config::{RunConfig, RunLength};
use crate::flows::Flows;
use crate::gate::instructions::{
    BASELINE_SCHEMA, BaselineSettings, COLD, Counts, InstrBaseline, Library, Metric, Provenance,
    STEADY, decide, parse_totals, rejudge as rejudge_counts,
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

/// What an instruction gate's counting came to.
#[derive(Debug)]
pub enum Counted {
    /// Ctrl-C ended the counting.
    Interrupted,
    /// Flow A's counts saved as the baseline of later gates.
    Saved,
    /// Flow B judged against flow A (counted now or saved).
    Judged(Box<Outcome>),
}

/// `oemputx gate --instructions`: both flows counted now, flow A's counts saved, or flow B
/// counted against saved counts.
pub fn run(
    cfg: &GateConfig,
    sides: &InstrSides,
    base: &RunConfig,
    (runs, n): (usize, u64),
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Counted> {
    let valgrind = valgrind_version()?;
    // What is counted now: both sides, or the one side (named A or B as in the verdict).
    let now: Vec<(&str, &OneFlow)> = match sides {
        InstrSides::Both([a, b]) => vec![("A", a), ("B", b)],
        InstrSides::Save { a, .. } => vec![("A", a)],
        InstrSides::Stored { b, .. } => vec![("B", b)],
    };
    // A stored baseline is checked before anything is counted.
    let stored = match sides {
        InstrSides::Stored { baseline, b } => {
            Some(load_stored(cfg, baseline, b, &valgrind, base, n)?)
        }
        _ => None,
    };
    let pid = std::process::id();
    let queues: Vec<String> = now
        .iter()
        .map(|(name, _)| format!("{}.I{name}.{pid}", base.request_queue))
        .collect();
    let _made = MadeQueues {
        endpoint: base.endpoint.clone(),
        queues: queues.clone(),
    };
    let dir = tempfile::Builder::new()
        .prefix("oemputx-callgrind")
        .tempdir()
        .context("making a directory for callgrind's output (set TMPDIR to a writable one)")?;
    for ((name, f), q) in now.iter().zip(&queues) {
        crate::say!("gate instructions: {name} = {} (queue {q})", f.shown);
    }
    crate::say!(
        "gate instructions: {valgrind} (callgrind); each flow counted {runs} times over 1, {n} and {} messages",
        2 * n
    );
    let flows: Vec<(&str, &FlowCommand, &str)> = now
        .iter()
        .zip(&queues)
        .map(|((name, f), q)| (*name, &f.flow, q.as_str()))
        .collect();
    let Some(counted) = count_sides(&flows, base, (runs, n), dir.path(), &interrupt)? else {
        return Ok(Counted::Interrupted);
    };
    if let InstrSides::Save { a, path } = sides {
        save(a, path, &counted[0], &valgrind, base, n)?;
        return Ok(Counted::Saved);
    }
    let (counts, names) = pair(sides, stored, counted)?;
    let tolerances = &cfg.tolerances;
    let decisions = vec![
        decide(Metric::Steady(n), &counts, tolerances.for_metric(STEADY)),
        decide(Metric::Cold, &counts, tolerances.for_metric(COLD)),
    ];
    let [a, b] = counts;
    Ok(Counted::Judged(Box::new(Outcome {
        instruction_counts: Some(InstructionCounts {
            messages: [1, n, 2 * n],
            a: a.runs,
            b: b.runs,
        }),
        ..Outcome::of("instructions", names, decisions)
    })))
}

/// The two sides judged, A and B, and their names in the verdict: both counted now, or A's
/// counts from the saved baseline.
fn pair(
    sides: &InstrSides,
    stored: Option<InstrBaseline>,
    counted: Vec<Counts>,
) -> anyhow::Result<([Counts; 2], (String, String))> {
    let mut counted = counted.into_iter();
    // Every side counted now has its counts: one missing is this code's error, named, never
    // an empty count judged.
    let mut next = || {
        counted
            .next()
            .ok_or_else(|| anyhow::anyhow!("the instruction gate lost a side's counts"))
    };
    Ok(match (sides, stored) {
        (InstrSides::Stored { baseline, b }, Some(file)) => (
            [Counts { runs: file.runs }, next()?],
            (
                format!(
                    "A: {} (counted {}, {})",
                    file.flow,
                    file.created_utc,
                    baseline.display()
                ),
                format!("B: {}", b.shown),
            ),
        ),
        (InstrSides::Both([a, b]), _) => (
            [next()?, next()?],
            (format!("A: {}", a.shown), format!("B: {}", b.shown)),
        ),
        (InstrSides::Stored { .. } | InstrSides::Save { .. }, _) => unreachable_stored()?,
    })
}

/// The saved baseline, checked against the conditions of a count now: a difference in
/// valgrind, CPU, compilers, libraries or settings refuses the gate unless --force.
fn load_stored(
    cfg: &GateConfig,
    baseline: &Path,
    b: &OneFlow,
    valgrind: &str,
    base: &RunConfig,
    n: u64,
) -> anyhow::Result<InstrBaseline> {
    let file = InstrBaseline::load(baseline)?;
    let here = provenance(valgrind, &b.flow);
    let diffs = file.differences(&here, base, n);
    if !diffs.is_empty() && !cfg.force {
        return Err(GateError::input(
            "--baseline",
            format!(
                "{} was counted under other conditions, so its counts cannot be compared with these: {}; count a new baseline on main with these (or pass --force)",
                baseline.display(),
                diffs.join("; ")
            ),
        )
        .into());
    }
    for d in &diffs {
        crate::say!("gate instructions: warning (--force): {d}");
    }
    Ok(file)
}

/// Flow A's counts written as the baseline of later gates.
fn save(
    a: &OneFlow,
    path: &Path,
    counted: &Counts,
    valgrind: &str,
    base: &RunConfig,
    n: u64,
) -> anyhow::Result<()> {
    let file = InstrBaseline {
        schema: BASELINE_SCHEMA.to_string(),
        created_utc: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        flow: a.shown.clone(),
        messages: [1, n, 2 * n],
        runs: counted.runs.clone(),
        provenance: provenance(valgrind, &a.flow),
        settings: BaselineSettings::of(base, n),
    };
    let json = serde_json::to_string_pretty(&file)? + "\n";
    crate::export::write_output(path, "the instruction baseline", &json)?;
    crate::say!(
        "gate instructions: flow A's counts saved in {} ({:.0} instructions/msg): gate a branch with --flow-b CMD --baseline {}",
        path.display(),
        counted.least(Metric::Steady(n)),
        path.display()
    );
    Ok(())
}

/// A stored gate always has its baseline loaded before counting, and a saving one returns
/// before judging; this only keeps the match total without a panic.
fn unreachable_stored<T>() -> anyhow::Result<T> {
    anyhow::bail!("the instruction baseline was not loaded")
}

/// What a count depends on besides the flow's own code: valgrind, the CPU (glibc picks its
/// string and memory routines by CPU), the compilers the program was built with and the
/// libraries it loads.
fn provenance(valgrind: &str, flow: &FlowCommand) -> Provenance {
    let program = which(&flow.program);
    let text = |cmd: &str, args: &[&str]| -> String {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let path = program.display().to_string();
    let compilers = text("readelf", &["-p", ".comment", &path])
        .lines()
        .filter_map(|l| l.split_once(']').map(|(_, c)| c.trim().to_string()))
        .filter(|c| !c.is_empty())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let libraries = text("ldd", &[&path])
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            let lib = rest.split_whitespace().next()?;
            let bytes = std::fs::read(lib).ok()?;
            Some(Library {
                name: name.to_string(),
                path: lib.to_string(),
                fingerprint: format!("{:016x}", fnv1a(&bytes)),
            })
        })
        .collect();
    Provenance {
        valgrind: valgrind.to_string(),
        cpu: cpu_model(),
        compilers,
        libraries,
    }
}

/// The program as the flow runs it: found on PATH when it is a bare name.
fn which(program: &Path) -> std::path::PathBuf {
    if program.components().count() > 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(program))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// The CPU's model name and flags (what glibc's routine choice rests on).
fn cpu_model() -> String {
    use procfs::Current;
    // The first CPU's: a baseline is counted on one machine, whose CPUs are alike. The
    // flags joined by single spaces, as /proc/cpuinfo lists them, so that the fingerprints
    // of baselines saved before procfs read it still match.
    let info = procfs::CpuInfo::current().ok();
    let model = info
        .as_ref()
        .and_then(|i| i.model_name(0))
        .unwrap_or_default()
        .to_string();
    let flags = info
        .as_ref()
        .and_then(|i| i.flags(0))
        .map(|f| f.join(" "))
        .unwrap_or_default();
    format!("{model} (flags {:016x})", fnv1a(flags.as_bytes()))
}

/// FNV-1a, 64 bits: a fingerprint of a file's content (identity, not security).
fn fnv1a(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(bytes);
    h.finish()
}

/// Count every side `runs` times over 1, `n` and 2`n` messages, the sides taking turns to go
/// first; None when Ctrl-C ended it.
fn count_sides(
    sides: &[(&str, &FlowCommand, &str)],
    base: &RunConfig,
    (runs, n): (usize, u64),
    dir: &Path,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<Option<Vec<Counts>>> {
    let started = Instant::now();
    let mut counts = vec![Counts::default(); sides.len()];
    for run in 0..runs {
        // A B, B A, A B: neither side always goes first.
        for k in 0..sides.len() {
            let side = (k + run) % sides.len();
            let (name, cmd, queue) = sides[side];
            let mut cfg = base.clone();
            cfg.request_queue = queue.to_string();
            let tag = format!("{}{run}", name.to_ascii_lowercase());
            let mut run_counts = [0; 3];
            for (k, messages) in [1, n, 2 * n].into_iter().enumerate() {
                if interrupt.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                cfg.length = RunLength::Count(messages);
                let file = format!("{tag}-{messages}");
                run_counts[k] = count(cmd, &cfg, dir, &file, interrupt)
                    .with_context(|| format!("counting flow {name}"))?;
            }
            crate::say!(
                "gate instructions: flow {name} run {}: {:.0} instructions/msg ({:.0} over messages N+1 to 2N), cold start {} ({:.0} s)",
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
/// gate's verdict) under a header.
pub fn rejudge(cfg: &GateConfig, files: &[std::path::PathBuf]) -> anyhow::Result<String> {
    let mut out =
        String::from("file\tsteady_ratio\tsteady_verdict\tcold_ratio\tcold_verdict\tverdict\n");
    for f in files {
        out.push_str(&rejudged(f, cfg.tolerances.for_metric(STEADY))?);
    }
    Ok(out)
}

/// One saved verdict's line of [`rejudge`].
fn rejudged(f: &Path, tolerance: f64) -> anyhow::Result<String> {
    let text = crate::files::read_text(f, crate::files::MAX_REPORT_BYTES, "verdict file")
        .map_err(|e| GateError::input("--rejudge", e.to_string()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| GateError::input("--rejudge", format!("{} is not JSON: {e}", f.display())))?;
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
    let d = rejudge_counts(&counts, tolerance);
    Ok(format!(
        "{}\t{:.4}\t{}\t{:.4}\t{}\t{}\n",
        f.display(),
        d[0].ratio,
        d[0].verdict.as_str(),
        d[1].ratio,
        d[1].verdict.as_str(),
        overall(&d).as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunOptions;
    use crate::config::gate::{GateMode, GateOutputs, Tolerances};
    use crate::gate::Verdict;

    /// A callgrind output file as callgrind writes one (trimmed): its header, a cost line and
    /// the `totals:` line whose first event is the instructions.
    fn callgrind_file(ir: u64) -> String {
        format!(
            "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd:  /usr/bin/true\npart: 1\n\ndesc: I1 cache: \nevents: Ir\nsummary: {ir}\n\nfl=(1) ???\nfn=(1) 0x0000000000001100\n0 {ir}\n\ntotals: {ir}\n"
        )
    }

    fn gate_config(force: bool) -> GateConfig {
        GateConfig {
            mode: GateMode::Rejudge(Vec::new()),
            tolerances: Tolerances::uniform(0.02),
            metrics: Vec::new(),
            strict: false,
            force,
            outputs: GateOutputs::default(),
        }
    }

    fn one_flow(cmd: &str) -> OneFlow {
        OneFlow {
            flow: FlowCommand::parse("--flow-a", cmd).expect("a valid command"),
            shown: cmd.to_string(),
        }
    }

    fn run_config() -> RunConfig {
        RunOptions {
            count: Some(100),
            no_progress: true,
            ..RunOptions::default()
        }
        .build()
        .expect("test config is valid")
    }

    #[test]
    fn the_instructions_are_added_over_every_process_of_a_count_and_no_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A flow and the child it started: one file per process, each named for its pid.
        std::fs::write(dir.path().join("a0-1000.101"), callgrind_file(1_000)).expect("write");
        std::fs::write(dir.path().join("a0-1000.102"), callgrind_file(234)).expect("write");
        // Another count's files, and one whose name only begins the same, are not this one's.
        std::fs::write(dir.path().join("a0-1.101"), callgrind_file(7)).expect("write");
        std::fs::write(dir.path().join("a0-10000.101"), callgrind_file(9)).expect("write");
        let total = total_instructions(dir.path(), "a0-1000").expect("counted");
        assert_eq!(total, 1_234);
        assert_eq!(total_instructions(dir.path(), "a0-1").expect("counted"), 7);
    }

    #[test]
    fn a_count_without_files_or_without_totals_is_an_error_that_says_what_to_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let none = total_instructions(dir.path(), "b1-1").expect_err("no files");
        assert!(
            format!("{none:#}").contains("callgrind wrote no counts"),
            "{none:#}"
        );
        // A flow killed before callgrind wrote its totals leaves a header and no more.
        std::fs::write(
            dir.path().join("b1-1.77"),
            "# callgrind format\nversion: 1\n",
        )
        .expect("write");
        let cut = total_instructions(dir.path(), "b1-1").expect_err("no totals");
        let text = format!("{cut:#}");
        assert!(
            text.contains("b1-1.77") && text.contains("has no totals line"),
            "{text}"
        );
        let missing = total_instructions(&dir.path().join("gone"), "b1-1").expect_err("no dir");
        assert!(format!("{missing:#}").contains("reading"), "{missing:#}");
    }

    #[test]
    fn a_fingerprint_is_fnv1a_of_the_bytes() {
        // The published FNV-1a 64-bit test vectors: a baseline's fingerprints stay comparable.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_cpu_is_its_model_and_a_fingerprint_of_its_flags() {
        let cpu = cpu_model();
        let (_, flags) = cpu.rsplit_once(" (flags ").expect("flags part");
        let hex = flags.strip_suffix(')').expect("closed");
        assert_eq!(hex.len(), 16, "{cpu}");
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{cpu}");
        assert_eq!(cpu, cpu_model(), "the same machine, the same CPU");
    }

    #[test]
    fn a_bare_program_is_found_on_path_and_a_path_is_kept() {
        let sh = which(Path::new("sh"));
        assert!(sh.is_absolute() && sh.is_file(), "{}", sh.display());
        assert_eq!(which(Path::new("./flow")), Path::new("./flow"));
        let nowhere = "oemputx-no-such-program-on-path";
        assert_eq!(which(Path::new(nowhere)), Path::new(nowhere));
    }

    #[test]
    fn the_provenance_of_a_program_is_the_same_twice_and_fingerprints_its_libraries() {
        let flow = one_flow("sh -c true").flow;
        let p = provenance("valgrind-3.19.0", &flow);
        assert_eq!(p.valgrind, "valgrind-3.19.0");
        assert_eq!(p.cpu, cpu_model());
        for lib in &p.libraries {
            let bytes = std::fs::read(&lib.path).expect("a library ldd named");
            assert_eq!(
                lib.fingerprint,
                format!("{:016x}", fnv1a(&bytes)),
                "{lib:?}"
            );
        }
        // What a stored gate compares: nothing changed, nothing differs.
        assert_eq!(p, provenance("valgrind-3.19.0", &flow));
    }

    #[test]
    fn saved_counts_load_back_and_other_conditions_refuse_them_unless_forced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("instr.json");
        let (a, base) = (one_flow("sh -c true"), run_config());
        let counted = Counts {
            runs: vec![[1_000, 51_000, 101_000], [1_010, 51_100, 101_300]],
        };
        save(&a, &path, &counted, "valgrind-3.19.0", &base, 100).expect("saved");
        let file = load_stored(
            &gate_config(false),
            &path,
            &a,
            "valgrind-3.19.0",
            &base,
            100,
        )
        .expect("the same conditions");
        assert_eq!(file.runs, counted.runs);
        assert_eq!(file.messages, [1, 100, 200]);
        assert_eq!(file.flow, "sh -c true");
        let other = load_stored(
            &gate_config(false),
            &path,
            &a,
            "valgrind-3.20.0",
            &base,
            100,
        )
        .expect_err("another valgrind");
        let text = format!("{other:#}");
        assert!(text.contains("counted under other conditions"), "{text}");
        assert!(
            text.contains("valgrind-3.19.0 then, valgrind-3.20.0 now"),
            "{text}"
        );
        load_stored(&gate_config(true), &path, &a, "valgrind-3.20.0", &base, 100)
            .expect("--force compares anyway");
    }

    #[test]
    fn a_saved_verdict_is_judged_again_as_a_tsv_line_and_one_without_counts_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let same = InstructionCounts {
            messages: [1, 1_000, 2_000],
            a: vec![[500_000, 1_500_000, 2_500_000]; 3],
            b: vec![[500_000, 1_500_000, 2_500_000]; 3],
        };
        let path = dir.path().join("verdict.json");
        let json = serde_json::json!({ "instruction_counts": same });
        std::fs::write(&path, json.to_string()).expect("write");
        let tsv = rejudge(&gate_config(false), std::slice::from_ref(&path)).expect("judged");
        let lines: Vec<&str> = tsv.lines().collect();
        assert_eq!(
            lines[0],
            "file\tsteady_ratio\tsteady_verdict\tcold_ratio\tcold_verdict\tverdict"
        );
        let fields: Vec<&str> = lines[1].split('\t').collect();
        assert_eq!(fields.len(), 6, "{}", lines[1]);
        assert_eq!(fields[0], path.display().to_string());
        assert_eq!((fields[1], fields[3]), ("1.0000", "1.0000"), "{}", lines[1]);
        assert_eq!(fields[5], Verdict::Pass.as_str(), "{}", lines[1]);
        let stored = dir.path().join("stored.json");
        std::fs::write(&stored, r#"{"mode":"stored"}"#).expect("write");
        let err = rejudge(&gate_config(false), &[stored]).expect_err("no counts");
        assert!(
            format!("{err:#}").contains("holds no instruction counts"),
            "{err:#}"
        );
    }

    /// valgrind's version, or None (said) where it cannot run.
    fn valgrind_here() -> Option<String> {
        let ok = std::process::Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            println!("skipped: `valgrind --version` does not succeed here");
            return None;
        }
        Some(valgrind_version().expect("valgrind runs"))
    }

    #[test]
    fn callgrind_counts_a_program_and_its_children_where_valgrind_is_installed() {
        let Some(version) = valgrind_here() else {
            return;
        };
        assert!(version.starts_with("valgrind-"), "{version}");
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("c0-1.%p");
        let status = std::process::Command::new("valgrind")
            .args(["--tool=callgrind", "--trace-children=yes", "-q"])
            .arg(format!("--callgrind-out-file={}", out.display()))
            .args(["sh", "-c", "true; /bin/true"])
            .status()
            .expect("valgrind runs");
        assert!(status.success());
        let total = total_instructions(dir.path(), "c0-1").expect("counted");
        assert!(
            total > 10_000,
            "{total} instructions for a shell and a child"
        );
    }
}
