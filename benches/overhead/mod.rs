//! What the driver-overhead benchmarks share (the three-loop method): options, one sample
//! per loop, the oemputx binary as a loop, a raw loop re-executed in a fresh process, and
//! the interleaved rounds with their paired verdict. Each transport's benchmark brings its
//! own raw client loops.
#![allow(dead_code)]

use oemputx::report::rounds;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Instant;

pub struct Opts {
    pub rounds: usize,
    pub count: u64,
    pub tasks: Vec<usize>,
    pub url: String,
}

/// The options after `--bench` (cargo passes it); without it, a quick smoke run that keeps
/// the benchmark working under `cargo test --all-targets`, not a measurement.
pub fn opts(default_url: String) -> Opts {
    let mut o = Opts {
        rounds: 5,
        count: 5000,
        tasks: vec![1, 8],
        url: default_url,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        o.rounds = 1;
        o.count = 200;
        o.tasks = vec![2];
        println!("smoke run (no --bench): the figures below are not a measurement");
    }
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--rounds" => o.rounds = val().parse().unwrap_or(o.rounds),
            "--count" => o.count = val().parse().unwrap_or(o.count),
            "--tasks" => o.tasks = val().split(',').filter_map(|t| t.parse().ok()).collect(),
            "--url" => o.url = val(),
            _ => {} // cargo bench passes --bench
        }
    }
    o
}

/// One measured loop: transactions per second and driver CPU µs per transaction.
#[derive(Clone, Copy)]
pub struct Sample {
    pub rate_tps: f64,
    pub cpu_us: f64,
}

pub fn process_cpu() -> std::time::Duration {
    oemputx::accounting::clock::self_process().expect("process CPU clock")
}

/// Split `total` over `tasks`: task `t`'s share.
pub fn share(total: u64, tasks: usize, t: usize) -> u64 {
    total / tasks as u64 + u64::from((t as u64) < total % tasks as u64)
}

/// One raw task's part of a measured loop: the task, its measured and its warmup round
/// trips, and the two barriers it must wait at — `ready` after connecting and warming up,
/// `done` after its measured round trips (then it closes).
pub struct RawTask {
    pub t: usize,
    pub n: u64,
    pub warm: u64,
    pub ready: Arc<Barrier>,
    pub done: Arc<Barrier>,
}

/// A raw loop: `tasks` threads each running `task`, measured (rate, and this process's CPU
/// per transaction) from the moment all are ready to the moment all are done.
pub fn raw_tasks<F>(count: u64, warmup: u64, tasks: usize, task: F) -> Sample
where
    F: Fn(RawTask) + Send + Sync + 'static,
{
    let task = Arc::new(task);
    let ready = Arc::new(Barrier::new(tasks + 1));
    let done = Arc::new(Barrier::new(tasks + 1));
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let part = RawTask {
                t,
                n: share(count, tasks, t),
                warm: share(warmup, tasks, t),
                ready: ready.clone(),
                done: done.clone(),
            };
            let task = task.clone();
            std::thread::spawn(move || task(part))
        })
        .collect();
    ready.wait();
    let (t0, c0) = (Instant::now(), process_cpu());
    done.wait();
    let (elapsed, cpu) = (t0.elapsed(), process_cpu() - c0);
    for h in handles {
        h.join().expect("raw loop thread");
    }
    Sample {
        rate_tps: count as f64 / elapsed.as_secs_f64(),
        cpu_us: cpu.as_secs_f64() * 1e6 / count as f64,
    }
}

/// The oemputx binary as a loop: its JSON report gives the same two figures.
pub fn oemputx_loop(url: &str, queue: &str, count: u64, warmup: u64, tasks: usize) -> Sample {
    oemputx_loop_with(url, queue, count, warmup, tasks, &[])
}

/// [`oemputx_loop`] with run options of the bench's own (Kafka's `--persistent`, so that
/// oemputx produces with acks=all as the raw loop and the C floor do).
pub fn oemputx_loop_with(
    url: &str,
    queue: &str,
    count: u64,
    warmup: u64,
    tasks: usize,
    extra: &[&str],
) -> Sample {
    let out = Command::new(env!("CARGO_BIN_EXE_oemputx"))
        .args(extra)
        .env("OEMPUTX_NO_SAVE", "1")
        .args([
            "--qmgr",
            url,
            "--request-queue",
            queue,
            "--msgfile",
            "msgfiles/request-630.xml",
        ])
        .args([
            "--count",
            &count.to_string(),
            "--warmup",
            &warmup.to_string(),
            "--tasks",
            &tasks.to_string(),
            "--quiet",
            "--export-json",
            "-",
        ])
        .stderr(Stdio::inherit())
        .output()
        .expect("oemputx runs");
    assert!(out.status.success(), "oemputx failed");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(j["transactions"].as_u64(), Some(count));
    Sample {
        rate_tps: j["rate_tps"].as_f64().expect("rate_tps"),
        cpu_us: j["app_cpu"]["us_per_tran"]
            .as_f64()
            .expect("app_cpu.us_per_tran"),
    }
}

/// `--child STYLE QUEUE COUNT WARMUP TASKS` on this benchmark's command line: the raw loop
/// to run in this process (see [`raw_process`]).
pub struct Child {
    pub style: String,
    pub queue: String,
    pub count: u64,
    pub warmup: u64,
    pub tasks: usize,
}

pub fn child_args() -> Option<Child> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == "--child")?;
    let num = |k: usize| args.get(i + k).and_then(|v| v.parse::<u64>().ok());
    Some(Child {
        style: args.get(i + 1)?.clone(),
        queue: args.get(i + 2)?.clone(),
        count: num(3)?,
        warmup: num(4)?,
        tasks: num(5)? as usize,
    })
}

/// Print a child's sample for [`raw_process`] to read.
pub fn report_child(s: Sample) {
    println!("{} {}", s.rate_tps, s.cpu_us);
}

/// A raw loop in a fresh process of its own (this benchmark re-executed with `--child`), so
/// that the raw loops start each round as cold as the oemputx binary does (a process of its
/// own, its own heap and caches). `env` names the URL for the child.
pub fn raw_process(
    env: (&str, &str),
    style: &str,
    queue: &str,
    count: u64,
    warmup: u64,
    tasks: usize,
) -> Sample {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .env(env.0, env.1)
        .args(["--child", style, queue])
        .args([count.to_string(), warmup.to_string(), tasks.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .expect("raw loop process runs");
    sample_of(&out.stdout, "the raw loop process")
}

/// The "RATE_TPS CPU_US_PER_TRAN" line a loop in a process of its own prints (a raw loop,
/// a C floor), as a sample; `what` names the loop when it printed none.
pub fn sample_of(stdout: &[u8], what: &str) -> Sample {
    let text = String::from_utf8_lossy(stdout);
    let mut v = text
        .split_whitespace()
        .filter_map(|x| x.parse::<f64>().ok());
    Sample {
        rate_tps: v.next().unwrap_or_else(|| panic!("no rate from {what}")),
        cpu_us: v.next().unwrap_or_else(|| panic!("no CPU from {what}")),
    }
}

/// (best, median, worst), by the report's own best/median/worst.
pub fn best_median_worst(v: Vec<f64>, higher_is_better: bool) -> (f64, f64, f64) {
    rounds::best_median_worst(&v, higher_is_better).map_or((f64::NAN, f64::NAN, f64::NAN), |b| {
        (b.best, b.median, b.worst)
    })
}

pub fn print_header() {
    println!(
        "{:>5} {:>8} | {:>9} {:>9} {:>9} | {:>8} {:>8} {:>8}",
        "tasks", "loop", "best tps", "median", "worst", "best CPU", "median", "worst"
    );
}

/// Run `loops` (name, one measured round) interleaved for `rounds` rounds, in a rotating
/// order so that none always runs first or last; print each loop's best/median/worst and
/// return every loop's samples, in the order given.
pub fn interleave(
    tasks: usize,
    rounds: usize,
    loops: &mut [(&str, &mut dyn FnMut() -> Sample)],
) -> Vec<Vec<Sample>> {
    let n = loops.len();
    let mut samples = vec![Vec::new(); n];
    for round in 0..rounds {
        for k in 0..n {
            let i = (round + k) % n;
            samples[i].push((loops[i].1)());
        }
    }
    for ((name, _), s) in loops.iter().zip(&samples) {
        let r = best_median_worst(s.iter().map(|x| x.rate_tps).collect(), true);
        let c = best_median_worst(s.iter().map(|x| x.cpu_us).collect(), false);
        println!(
            "{tasks:>5} {name:>8} | {:>9.0} {:>9.0} {:>9.0} | {:>8.2} {:>8.2} {:>8.2}",
            r.0, r.1, r.2, c.0, c.1, c.2
        );
    }
    samples
}

/// The verdict of oemputx against the raw loop. Two estimates of the same ratio: the ratio
/// of the medians compares the columns printed; the median of the per-round ratios pairs
/// each oemputx loop with the raw loop of its own round (seconds apart), so that the
/// machine's drift over the minutes of a run cancels out. The verdict is the paired one:
/// one loop's rounds spread by 20-70 % here, which leaves the ratio of two medians a
/// standard error too wide to tell 97 % from 100 %; both are printed.
pub fn verdict(tasks: usize, raw: &[Sample], ours: &[Sample]) -> String {
    verdict_against(tasks, ("raw", raw), ours, (0.97, 1.10))
}

/// The verdict of oemputx against `base` (its name and samples), with the targets (rate at
/// least, CPU at most, as shares of the base's).
pub fn verdict_against(
    tasks: usize,
    (base_name, raw): (&str, &[Sample]),
    ours: &[Sample],
    (rate_target, cpu_target): (f64, f64),
) -> String {
    let med =
        |s: &[Sample], f: fn(&Sample) -> f64| best_median_worst(s.iter().map(f).collect(), true).1;
    let rate_ratio = med(ours, |s| s.rate_tps) / med(raw, |s| s.rate_tps);
    let cpu_ratio = med(ours, |s| s.cpu_us) / med(raw, |s| s.cpu_us);
    let paired = |f: fn(&Sample) -> f64| {
        let ratios: Vec<f64> = ours.iter().zip(raw).map(|(o, r)| f(o) / f(r)).collect();
        best_median_worst(ratios, true).1
    };
    let (paired_rate, paired_cpu) = (paired(|s| s.rate_tps), paired(|s| s.cpu_us));
    let ok = paired_rate >= rate_target && paired_cpu <= cpu_target;
    format!(
        "tasks {tasks}: oemputx/{base_name} rate {:.1}% of medians, {:.1}% median of rounds (target >= {:.0}%); CPU/tran {:.1}% of medians, {:.1}% median of rounds (target <= {:.0}%): {} (by the median of rounds)",
        100.0 * rate_ratio,
        100.0 * paired_rate,
        100.0 * rate_target,
        100.0 * cpu_ratio,
        100.0 * paired_cpu,
        100.0 * cpu_target,
        if ok { "met" } else { "NOT met" }
    )
}
