//! `--profile` live: perf samples a C responder whose two functions burn a known CPU time per
//! message (lab/holdout/burn_responder.c), and each function's µs per message must come out
//! within 15 % of what the responder measured of itself (in one of two runs: a profile is a
//! sample, see `profiled_within`); an A/B gate whose B burns more in
//! its second function must name that function first. Without perf, `--profile` is a clear
//! error. The truths are the responder's own thread CPU clock, not the settings: on a loaded
//! host a function may take longer than asked, and the profile must follow what happened.

use oemputx_test_support::*;

fn function<'a>(j: &'a serde_json::Value, group: &str, name: &str) -> &'a serde_json::Value {
    // No profile: the run says why among its warnings.
    let groups = j["profile"]["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("no profile: {:#}", j["accounting"]["warnings"]));
    let g = groups
        .iter()
        .find(|g| g["name"] == group)
        .unwrap_or_else(|| panic!("no profile of {group}: {j:#}"));
    g["functions"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == name))
        .unwrap_or_else(|| panic!("{name} is not among {group}'s functions: {g:#}"))
}

/// perf sampling every CPU, one test at a time: three system-wide recorders at once would
/// add each other's interrupts to the flows they measure.
fn one_perf_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static PERF: std::sync::Mutex<()> = std::sync::Mutex::new(());
    PERF.lock().unwrap_or_else(|e| e.into_inner())
}

/// FLOW's row of function `name` and its total µs per message.
fn flow_total<'a>(j: &'a serde_json::Value, name: &str) -> (&'a serde_json::Value, f64) {
    let f = function(j, "FLOW", name);
    (f, us(f, "total_us_per_tran"))
}

fn us(f: &serde_json::Value, key: &str) -> f64 {
    f[key].as_f64().unwrap_or(f64::NAN)
}

/// A run against the responder with --profile, its files in `dir`: its JSON report.
fn profiled_run(
    responder: &BurnResponder,
    count: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> serde_json::Value {
    let pid = format!("FLOW=pid:{}", responder.pid());
    let out = oemputx()
        .current_dir(dir)
        .args(["--qmgr", &amqp_url(), "--request-queue", &responder.queue])
        .args(["--count", count, "--group", &pid, "--profile", "--no-save"])
        .args(["--export-json", "r.json"])
        .args(extra)
        // 20,000 to 25,000 round trips, then perf's script over every CPU's samples: at
        // load 4 beside the gate's base build that passed the helper's 60 s, which SIGKILLs
        // the run (CI, stop 73: killed at 77 % of 20,000 at 500 msg/s).
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .expect("oemputx runs");
    let err = String::from_utf8_lossy(&out.stderr);
    // The status itself: a signal (no code) is the timeout above.
    assert_eq!(out.status.code(), Some(0), "{:?}\n{err}", out.status);
    read_json(&dir.join("r.json"))
}

fn within(got: f64, want: f64) -> bool {
    (got / want - 1.0).abs() <= 0.15
}

/// A profiled run of `count` messages against a fresh responder (60 and 20 µs, ±`jitter`),
/// its files in `dir`: its JSON report and the responder's truth, once every function is
/// within 15 % of its truth or `excused` (a flag the report raised). A profile is a sample:
/// at load 4 its two functions read −8 … +8 % of their truth over 6 runs (render_reply's
/// 95 % sampling error alone is ±10 % at 300 samples), and CI once read −19 % beside the
/// gate's valgrind. So a run outside is measured once more, with a fresh responder, and
/// the second must be within: a bias, not a tail, fails both.
fn profiled_within(
    jitter: f64,
    count: &str,
    dir: &std::path::Path,
    extra: &[&str],
    excused: impl Fn(&serde_json::Value, &serde_json::Value) -> bool,
) -> (serde_json::Value, Truth, std::path::PathBuf) {
    let mut misses = Vec::new();
    for attempt in 1..=2 {
        // Each attempt's files in a folder of its own: the checks after read the last's.
        let dir = dir.join(format!("attempt-{attempt}"));
        std::fs::create_dir_all(&dir).expect("a folder for the attempt");
        let responder = BurnResponder::start(&fresh_queue("prof-acc"), 60.0, 20.0, jitter);
        let j = profiled_run(&responder, count, &dir, extra);
        let truth = responder.stop();
        let outside: Vec<String> = truth
            .functions()
            .into_iter()
            .filter_map(|(name, want)| {
                let (f, got) = flow_total(&j, name);
                (!within(got, want) && !excused(&j, f)).then(|| {
                    format!(
                        "attempt {attempt}: {name} {got:.2} µs/msg against its truth {want:.2} ({:+.1} %), reported as fact: {f:#} {}",
                        100.0 * (got / want - 1.0),
                        j["profile"]["warnings"]
                    )
                })
            })
            .collect();
        if outside.is_empty() {
            if !misses.is_empty() {
                eprintln!("measured again after {misses:?}");
            }
            return (j, truth, dir);
        }
        misses.extend(outside);
    }
    panic!("two runs in a row outside 15 %: {misses:#?}");
}

#[test]
fn each_function_of_the_flow_is_within_15_percent_of_its_truth_in_every_output() {
    live!(RabbitMq, Perf, CAmqp);
    let _perf = one_perf_at_a_time();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let exports = [
        "--export-folded",
        "stacks.folded",
        "--export-html",
        "r.html",
        "--export-markdown",
        "r.md",
    ];
    let (j, truth, dir) = profiled_within(0.5, "25000", dir.path(), &exports, |_, _| false);
    assert!(truth.messages >= 25000, "{truth:?}");
    for (name, _) in truth.functions() {
        let (f, got) = flow_total(&j, name);
        assert!(us(f, "self_us_per_tran") <= got + 1e-9, "{f:#}");
        assert!(f["samples"].as_u64().unwrap_or(0) > 50, "{f:#}");
        assert!(us(f, "self_pm_us") > 0.0, "{f:#}");
    }
    // The group's functions add up to its measured CPU per message.
    let flow = j["profile"]["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "FLOW"))
        .expect("FLOW's profile");
    let measured = group(&j, "FLOW")["total_us_per_tran"]
        .as_f64()
        .unwrap_or(0.0);
    assert!((us(flow, "us_per_tran") - measured).abs() < 1e-6);
    assert!(
        j["profile"]["overhead"]
            .as_str()
            .is_some_and(|s| s.contains("inside") && s.contains("outside"))
    );
    assert_matches_schema(&j);
    let folded = std::fs::read_to_string(dir.join("stacks.folded")).expect("folded");
    assert!(
        folded
            .lines()
            .any(|l| l.starts_with("FLOW;burn_responder;") && l.ends_with_count("parse_request")),
        "{folded}"
    );
    let html = std::fs::read_to_string(dir.join("r.html")).expect("HTML");
    assert!(html.contains("id=\"flame-FLOW\"") && html.contains("parse_request"));
    let md = std::fs::read_to_string(dir.join("r.md")).expect("Markdown");
    assert!(
        md.contains("Where the CPU goes") && md.contains("parse_request (burn_responder)"),
        "{md}"
    );
    browser::assert_renders(&dir.join("r.html"), "profile", &["cpu"]);
}

/// A folded line: `stack COUNT`, its leaf `leaf`.
trait FoldedLine {
    fn ends_with_count(&self, leaf: &str) -> bool;
}

impl FoldedLine for &str {
    fn ends_with_count(&self, leaf: &str) -> bool {
        self.rsplit_once(' ').is_some_and(|(stack, n)| {
            n.parse::<u64>().is_ok() && stack.rsplit(';').next() == Some(leaf)
        })
    }
}

/// With no variation in the work the flow may fall into step with the sampling: each
/// function is then within 15 % of its truth, or the profile says it may not be.
#[test]
fn a_regular_flow_is_profiled_within_15_percent_or_flagged() {
    live!(RabbitMq, Perf, CAmqp);
    let _perf = one_perf_at_a_time();
    let dir = tempfile::tempdir().expect("a temporary folder");
    // Within 15 % in one of two runs, each function, unless that run flagged it.
    let flagged = |j: &serde_json::Value, f: &serde_json::Value| {
        let group_flagged = j["profile"]["warnings"].as_array().is_some_and(|w| {
            w.iter()
                .filter_map(|x| x.as_str())
                .any(|w| w.starts_with("FLOW: perf's samples"))
        });
        !f["lock_in"].is_null() || group_flagged
    };
    let (_, truth, _) = profiled_within(0.0, "20000", dir.path(), &[], flagged);
    assert!(truth.messages >= 20000, "{truth:?}");
}

/// The A/B gate with B's second function made costlier: the differential names it first,
/// in the JSON, the verdict text and the HTML.
#[test]
fn the_gate_names_the_function_made_costlier_first() {
    live!(RabbitMq, Perf, CAmqp);
    let _perf = one_perf_at_a_time();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let bin = burn_responder_bin();
    // One spin speed for both sides, measured once: each responder measuring its own at its
    // start made A's parse_request 60 µs and B's 52 on one CI run (a bias of the process,
    // not of the code), and that sure −8 µs outranked B's real +15 in render_reply.
    let calibrated = std::process::Command::new(&bin)
        .args(["--calibrate", "5"])
        .output()
        .expect("the responder calibrates");
    let speed = String::from_utf8_lossy(&calibrated.stdout)
        .trim()
        .to_string();
    assert!(
        speed.parse::<f64>().is_ok_and(|s| s > 0.0),
        "speed {speed:?}"
    );
    let flow = |b_us: &str| {
        format!(
            "{} --a-us 60 --b-us {b_us} --jitter 0.5 --iterations-per-us {speed}",
            bin.display()
        )
    };
    // The 15 µs made is found within half of itself, or measured once more (a fresh
    // folder, the same speed), as the accuracy tests above: at load 4 beside the test
    // command one gate read +25.4 [17.2, 33.5], B's render_reply 46 µs where A's read 20.7
    // (its truth 20), four rounds a side. A bias fails both.
    let mut misses = Vec::new();
    let (text, dir) = loop {
        let attempt = misses.len() + 1;
        let dir = dir.path().join(format!("attempt-{attempt}"));
        std::fs::create_dir_all(&dir).expect("a folder for the attempt");
        let (j, text) = profiled_gate(&dir, &flow("20"), &flow("35"));
        let first = j["profile_diff"][0].clone();
        assert!(
            first["a_rounds"].as_u64().unwrap_or(0) >= 3
                && first["b_rounds"].as_u64().unwrap_or(0) >= 3,
            "too few rounds in 50 s for an interval: {first:#}\n{text}"
        );
        assert_eq!(first["function"], "render_reply", "{:#}", j["profile_diff"]);
        assert_eq!(first["group"], "FLOW");
        let change = first["change_us_per_tran"].as_f64().unwrap_or(0.0);
        let low = first["low_us_per_tran"].as_f64().unwrap_or(0.0);
        if (7.5..=22.5).contains(&change) && low > 0.0 {
            if !misses.is_empty() {
                eprintln!("measured again after {misses:?}");
            }
            break (text, dir);
        }
        misses.push(format!("attempt {attempt}: {first:#}"));
        assert!(
            misses.len() < 2,
            "two gates in a row outside 7.5..=22.5 µs or not above 0: {misses:#?}"
        );
    };
    let most = text
        .lines()
        .find(|l| l.starts_with("Most changed: "))
        .unwrap_or_else(|| panic!("no 'Most changed' line: {text}"));
    assert!(most.contains("in render_reply (FLOW)"), "{most}");
    let html = std::fs::read_to_string(dir.join("g.html")).expect("HTML");
    let at = html
        .find("Most changed: ")
        .expect("the HTML names the change");
    assert!(
        html[at..].starts_with("Most changed: +") && html[at..at + 80].contains("render_reply")
    );
    assert!(html.contains("id=\"flame-diff-FLOW\""));
}

/// `oemputx gate` of the two flows with --profile, in `dir`: its JSON (schema-checked) and
/// its text. It must end with 0 or 3.
fn profiled_gate(dir: &std::path::Path, a: &str, b: &str) -> (serde_json::Value, String) {
    let out = oemputx()
        .current_dir(dir)
        .args(["gate", "--flow-a", a, "--flow-b", b])
        .args([
            // 50 s, not 30: at a fresh clone's load, four rounds a side in 30 s put the
            // interval at [-0.8, 27.7] around the 15 µs made (13.4); more rounds narrow it.
            "--max-time",
            "50s",
            "--export-json",
            "g.json",
            "--export-html",
            "g.html",
        ])
        .args(["--", "--qmgr", &amqp_url(), "--count", "1500", "--profile"])
        // --max-time bounds the rounds, not the blocks' flows, perf's script and the
        // reports: at load 4 beside the test command's builds the gate took longer than
        // the helper's 60 s, which SIGKILLs it (CI, stop 65: "ExitStatus(9)" after its plan).
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .expect("oemputx runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    // The status itself (a code, or the signal that ended it): a SIGKILL here is the
    // timeout above (or another test's watchdog that outlived its child, fixed in cli.rs).
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{:?}\n{text}\n{err}",
        out.status
    );
    let j = read_json(&dir.join("g.json"));
    assert_matches_schema(&j);
    (j, text)
}

/// Run oemputx with `args` (and `env`): it must refuse them as a usage error, before
/// anything runs; its stderr.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = oemputx()
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("oemputx runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

#[test]
fn without_perf_or_with_nothing_to_profile_it_is_a_clear_usage_error() {
    let no_perf = [("OEMPUTX_PERF", "/nonexistent/perf")];
    let err = refused(&["--count", "10", "--profile", "--no-save"], &no_perf);
    assert!(
        err.contains("--profile") && err.contains("apt-get install linux-perf"),
        "{err}"
    );
    let err = refused(&["--count", "10", "--export-folded", "-", "--no-save"], &[]);
    assert!(
        err.contains("--export-folded") && err.contains("add --profile"),
        "{err}"
    );
    let err = refused(
        &["sweep", "--tasks", "1,2", "--flow-cmd", "true", "--profile"],
        &[],
    );
    assert!(err.contains("not yet for sweep"), "{err}");
    // compare has no folded stacks to write (its flame graphs are in its HTML).
    let err = refused(
        &["compare", "a.json", "b.json", "--export-folded", "x"],
        &[],
    );
    assert!(
        err.contains("--export-folded") && err.contains("writes no folded stacks"),
        "{err}"
    );
    // The stored gate has no second side's stacks: --profile is refused, not ignored.
    let err = refused(
        &[
            "gate",
            "--baseline",
            "b.json",
            "--",
            "--count",
            "10",
            "--profile",
        ],
        &[],
    );
    assert!(err.contains("only the A/B gate profiles"), "{err}");
}

/// SIGTERM while perf samples: oemputx ends at once, reporting the run as interrupted, and
/// its perf is gone with it.
#[test]
fn a_signal_mid_profile_ends_the_run_at_once_and_leaves_no_perf_behind() {
    live!(Perf);
    let _perf = one_perf_at_a_time();
    let child = oemputx_process()
        .args([
            "--duration",
            "60s",
            "--profile",
            "--no-save",
            "--export-json",
            "-",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oemputx starts");
    // Until perf is one of its children and the window has been open a while.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let perf = loop {
        let found: Vec<i32> = children(child.id())
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.contains("record") && c.contains("--control=fifo:"))
            })
            .collect();
        if let Some(p) = found.first() {
            break *p;
        }
        assert!(
            std::time::Instant::now() < until,
            "no perf record under oemputx"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (out, took) = signal_and_wait(child, nix::sys::signal::Signal::SIGTERM);
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(j["status"], "interrupted", "{j:#}");
    assert!(all_gone(&[perf]), "perf {perf} outlived oemputx");
}

/// Issue 61, item 11: a profiled run killed with SIGKILL (no handler runs) left its folder
/// with perf.data (about a megabyte a second) in the temporary folder for good, readable by
/// all. Now the folder is this user's alone, and the next profiled run removes what a
/// killed one left; a folder of a live process is kept.
#[test]
fn a_killed_profiled_runs_folder_is_private_and_the_next_profiled_run_removes_it() {
    live!(Perf);
    let _perf = one_perf_at_a_time();
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("a temporary folder of its own");
    let mut child = oemputx_process()
        .env("TMPDIR", tmp.path())
        .args(["--duration", "60s", "--profile", "--no-save", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("oemputx starts");
    let folders = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp.path())
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|p: &std::path::PathBuf| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("oemputx-profile-"))
            })
            .collect()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while folders().is_empty() {
        assert!(std::time::Instant::now() < until, "no profile folder");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let left = folders();
    let mode = std::fs::metadata(&left[0])
        .expect("folder")
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{:o}", mode);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    // perf, its child, may outlive it a moment.
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(
        folders(),
        left,
        "SIGKILL ran no handler: the folder is still there"
    );
    // A folder of a live process (this test's) is no leftover.
    let live = tmp
        .path()
        .join(format!("oemputx-profile-{}-x", std::process::id()));
    std::fs::create_dir(&live).expect("a live one");
    let out = oemputx()
        .env("TMPDIR", tmp.path())
        .args(["--count", "200", "--profile", "--no-save", "--quiet"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = folders();
    assert!(
        !after.contains(&left[0]),
        "the killed run's folder is left: {after:?}"
    );
    assert!(
        after.contains(&live),
        "a live process's folder was removed: {after:?}"
    );
}
