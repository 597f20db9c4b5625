//! Per-process CPU accounting as a user sees it: the table under a real run, the `cpu` and
//! `account` subcommands, and the errors of bad groups.

use oemputx_test_support::*;

use predicates::prelude::*;

#[test]
fn a_rabbitmq_run_reports_the_broker_the_flow_and_the_driver_per_transaction() {
    live!(RabbitMq);
    let q = fresh_queue("acct");
    let flow = EchoFlow::start(&q, &["--extra-cpu-us", "100"]);
    let flow_pid = flow.pid();
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "500",
        "--group",
        "QMGR=@rabbitmq",
        "--group",
        &format!("FLOW=pid:{flow_pid}"),
    ]);
    assert_eq!(code, 0, "{err}");
    let flow_us = group(&j, "FLOW")["total_us_per_tran"]
        .as_f64()
        .unwrap_or(0.0);
    // It burns 100 us per message on its own clock, plus its AMQP work (about 300 us more in
    // a debug build, more when the other tests share the CPUs): the burn is the floor, and the
    // ceiling only catches a gross misattribution such as the broker's CPU counted as the flow's.
    assert!((100.0..3000.0).contains(&flow_us), "FLOW {flow_us} us/tran");
    assert!(
        group(&j, "QMGR")["total_us_per_tran"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );
    assert!(
        group(&j, "DRIVER")["total_us_per_tran"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );
    let rows = j["processes"].as_array().cloned().unwrap_or_default();
    assert!(
        rows.iter().any(|r| r["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("beam.smp."))),
        "{rows:?}"
    );
    let captured = j["captured_us_per_tran"].as_f64().unwrap_or(0.0);
    let ratio = j["capture_ratio"]["value"].as_f64().unwrap_or(0.0);
    // Measured, or (a window too short for /proc/stat's ticks) measured and not applied.
    let source = j["capture_ratio"]["source"].as_str().unwrap_or("");
    assert!(matches!(source, "measured" | "not applied"), "{source}");
    if source == "not applied" {
        assert_eq!(ratio, 1.0);
    }
    assert!(ratio > 0.0 && ratio <= 1.0, "{ratio}");
    assert!((j["corrected_us_per_tran"].as_f64().unwrap_or(0.0) - captured / ratio).abs() < 1e-6);
    let pct: f64 = j["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|g| g["pct"].as_f64()).sum())
        .unwrap_or(0.0);
    assert!((pct - 100.0).abs() < 0.01, "group shares add to {pct}");
    assert!(j["other_cpu"]["us_per_tran"].as_f64().is_some());
    assert!(j["host"]["clk_tck"].as_i64().is_some());
}

#[test]
fn a_fixed_capture_ratio_corrects_the_way_the_z_os_habit_does() {
    let out = oemputx()
        .args([
            "--count",
            "300",
            "--capture-ratio",
            "0.9",
            "--export-json",
            "-",
            "--quiet",
        ])
        .output()
        .expect("runs");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["capture_ratio"]["source"], "fixed");
    let (c, k) = (
        j["captured_us_per_tran"].as_f64().unwrap_or(0.0),
        j["corrected_us_per_tran"].as_f64().unwrap_or(0.0),
    );
    assert!((k - c / 0.9).abs() < 1e-9);
}

#[test]
fn the_embedded_default_accounts_its_flow_thread_and_the_driver() {
    // Long enough for /proc/stat's ticks to measure a capture ratio: the embedded queue
    // manager's threads share one CPU and 500 round trips took 2 ms (ratio "n/a").
    oemputx()
        .args(["--count", "100000"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(" oemputx-flow.").and(predicate::str::contains(" EMBEDDED*")),
        )
        .stdout(
            predicate::str::contains(" DRIVER*").and(predicate::str::contains("Capture ratio (")),
        )
        .stdout(predicate::str::contains("Verdict"))
        // Its flow is one responder thread: capacity counts the one CPU it can use, not
        // the host's (the estimate was twice too high on two CPUs).
        .stdout(predicate::str::contains(" local (1 CPU): the groups' "));
}

#[test]
fn a_capture_ratio_too_uncertain_for_its_window_is_shown_with_its_sigma_and_not_applied() {
    // 200 round trips take a few tens of ms: /proc/stat's 10 ms ticks leave the ratio
    // uncertain by far more than 3%.
    let out = oemputx()
        .args(["--count", "200", "--quiet", "--export-json", "-"])
        .output()
        .expect("runs");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let r = &j["capture_ratio"];
    let (v, s) = (
        r["measured_value"].as_f64().unwrap_or(f64::NAN),
        r["sigma"].as_f64().unwrap_or(f64::NAN),
    );
    assert!(s > 0.03 * v, "{r}");
    assert_eq!(r["source"], "not applied", "{r}");
    assert_eq!(r["value"], 1.0);
    assert_eq!(j["corrected_us_per_tran"], j["captured_us_per_tran"]);
    let warned = j["accounting"]["warnings"].as_array().is_some_and(|w| {
        w.iter().any(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("too uncertain to apply"))
        })
    });
    assert!(warned, "{}", j["accounting"]);
}

#[test]
fn a_capture_ratio_measured_over_a_long_enough_window_is_applied_with_its_sigma() {
    // On a host loaded far past its CPUs (load 4 beside this suite's four test threads and
    // its builds), the tasks' CPU can exceed the machine's busy time by more than tick
    // noise (3.190 s against 3.075 s once): the ratio is then rightly not applied, and says
    // why. That is the host's window, not this code's: measured again, at most three times.
    let mut tries = Vec::new();
    let (out, j) = loop {
        let out = oemputx()
            .args(["--duration", "1500ms", "--export-json", "-"])
            .output()
            .expect("runs");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let r = &j["capture_ratio"];
        let overloaded = r["source"] == "not applied"
            && r["note"]
                .as_str()
                .is_some_and(|n| n.contains("exceeds the machine's busy time"));
        if !overloaded || tries.len() == 2 {
            break (out, j);
        }
        tries.push(r.to_string());
    };
    let r = &j["capture_ratio"];
    assert_eq!(r["source"], "measured", "{r} (after {tries:?})");
    let (v, s) = (
        r["value"].as_f64().unwrap_or(f64::NAN),
        r["sigma"].as_f64().unwrap_or(f64::NAN),
    );
    assert!(s > 0.0 && s < 0.03 * v, "{r}");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(&format!("{v:.3} ±{s:.3}")), "{text}");
}

#[test]
fn a_group_that_matches_nothing_is_a_warning_and_a_row_not_a_failure() {
    oemputx()
        .args(["--count", "50", "--group", "GHOST=comm:no-such-process-x"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("GHOST*").and(predicate::str::contains("matched nothing")),
        );
}

#[test]
fn bad_groups_are_usage_errors() {
    for (group, says) in [
        ("QMGR", "NAME=SELECTOR"),
        ("Q=bogus:1", "unknown selector"),
        ("Q=cmd:(", "not a valid regular expression"),
        ("Q=@nosuch", "unknown preset"),
        ("Q=cgroup:/sys/fs/cgroup/no/such/dir", "does not exist"),
        ("Q=user:no-such-user-x", "no user named"),
        // A newline in a name broke the table and let `gate --github` print workflow
        // commands (issue 30, item 21).
        ("A\n::error::B=comm:x", "a group name is 1 to 64 letters"),
        ("A B=comm:x", "a group name is 1 to 64 letters"),
    ] {
        oemputx()
            .args(["--count", "5", "--group", group])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    // The same errors are usage errors from `cpu` too.
    oemputx()
        .args(["cpu", "--group", "Q=user:no-such-user-x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no user named"));
    oemputx()
        .args(["--capture-ratio", "1.5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--capture-ratio"));
}

#[test]
fn a_cgroup_group_reads_the_cgroup_counter() {
    // The root cpuacct (v1) or the v2 root: whatever this machine mounts.
    let root = ["/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup"]
        .into_iter()
        .find(|p| {
            std::path::Path::new(p).join("cpuacct.usage").exists()
                || std::path::Path::new(p).join("cpu.stat").exists()
        });
    let Some(root) = root else {
        eprintln!("no readable cgroup counter on this machine; nothing to check");
        return;
    };
    let out = oemputx()
        .args([
            "--count",
            "200",
            "--group",
            &format!("ALL=cgroup:{root}"),
            "--export-json",
            "-",
            "--quiet",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // The whole machine's cgroup holds at least what oemputx itself spent.
    let all = group(&j, "ALL")["total_us_per_tran"]
        .as_f64()
        .unwrap_or(0.0);
    let driver = group(&j, "DRIVER")["total_us_per_tran"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(all >= driver, "cgroup {all} < driver {driver}");
}

#[test]
fn cpu_lists_a_groups_processes_as_tsv_that_parses() {
    let me = std::process::id();
    let out = oemputx()
        .args(["cpu", "--tsv", "--group", &format!("ME=pid:{me}")])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let mut r = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .from_reader(out.stdout.as_slice());
    let headers = r.headers().expect("header").clone();
    assert_eq!(
        headers.iter().collect::<Vec<_>>(),
        vec!["group", "process", "pid", "user_s", "sys_s", "total_s"]
    );
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.expect("row")).collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(&rows[0][2], me.to_string().as_str());
    assert!(rows[0][5].parse::<f64>().expect("a number") > 0.0);
}

#[test]
fn cpu_with_an_interval_prints_one_block_per_interval() {
    oemputx()
        .args([
            "cpu",
            "--group",
            "INIT=pid:1",
            "--interval",
            "200ms",
            "--count",
            "2",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("INIT*").count(2));
}

#[test]
fn account_runs_any_command_and_divides_by_its_messages() {
    let out = oemputx()
        .args([
            "account",
            "--messages",
            "100",
            "--group",
            "INIT=pid:1",
            "--export-json",
            "-",
            "--",
        ])
        .args([
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["schema"], "oemputx.account/1");
    assert_eq!(j["messages"], 100);
    let cmd = group(&j, "COMMAND")["total_us_per_tran"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(cmd > 0.0, "the shell loop's CPU per message");
    assert!((j["command_cpu_us_per_msg"].as_f64().unwrap_or(0.0) - cmd).abs() < 1e-6);
}

#[test]
fn account_reports_a_failing_command_and_exits_1() {
    oemputx()
        .args([
            "account",
            "--messages",
            "1",
            "--group",
            "INIT=pid:1",
            "--",
            "false",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the command failed"));
    oemputx()
        .args([
            "account",
            "--messages",
            "1",
            "--group",
            "INIT=pid:1",
            "--",
            "/no/such/driver",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot run"));
}

#[test]
fn a_process_in_two_groups_is_counted_once_in_the_captured_total() {
    // The same selector twice: this test's own processes (oemputx among them), not every
    // oemputx on the host.
    let (t_group, u_group) = (format!("T={}", own_tree()), format!("U={}", own_tree()));
    let (code, j, err) = run_json(&["--count", "3000", "--group", &t_group, "--group", &u_group]);
    assert_eq!(code, 0, "{err}");
    let t = group(&j, "T")["total_us_per_tran"].as_f64().unwrap_or(0.0);
    let u = group(&j, "U")["total_us_per_tran"].as_f64().unwrap_or(0.0);
    let captured = j["captured_us_per_tran"].as_f64().unwrap_or(0.0);
    // T and U hold the same process; the driver is inside it too.
    assert!(t > 0.0 && (t - u).abs() < 1e-9, "{t} {u}");
    assert!((captured - t).abs() < 1e-6, "captured {captured}, T {t}");
    let notes: Vec<&str> = j["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["note"].as_str())
        .collect();
    assert!(notes.contains(&"counted under T"), "{notes:?}");
}

#[test]
fn account_passes_a_signal_on_to_its_command_and_exits_130() {
    let child = oemputx_process()
        .args([
            "account",
            "--messages",
            "1",
            "--group",
            "INIT=pid:1",
            "--",
            "sleep",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let sleeper = children(child.id());
    assert_eq!(sleeper.len(), 1, "{sleeper:?}");
    let (out, after) = signal_and_wait(child, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(out.status.code(), Some(130));
    assert!(after < std::time::Duration::from_secs(3));
    assert!(!alive(sleeper[0]), "the command outlived oemputx");
}

#[test]
fn a_command_oemputx_started_dies_with_it_even_when_it_is_killed() {
    let mut child = oemputx_process()
        .args([
            "account",
            "--messages",
            "1",
            "--group",
            "INIT=pid:1",
            "--",
            "sleep",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let sleeper = children(child.id());
    assert_eq!(sleeper.len(), 1, "{sleeper:?}");
    let _ = child.kill();
    let _ = child.wait();
    let gone = std::time::Instant::now();
    while alive(sleeper[0]) && gone.elapsed() < std::time::Duration::from_secs(3) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !alive(sleeper[0]),
        "the command outlived a SIGKILLed oemputx"
    );
}

/// What `account`'s command started in the background, and how oemputx ended: the command
/// is `sh -c` with two background sleeps (their pids written to a file), then `then`.
fn account_with_grandchildren(then: &str) -> (Option<i32>, Vec<i32>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("pids");
    let script = format!(
        "sleep 300 & echo $! >> '{f}'; sleep 300 & echo $! >> '{f}'; {then}",
        f = file.display()
    );
    let out = oemputx_process()
        .args([
            "account",
            "--messages",
            "1",
            "--group",
            "INIT=pid:1",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .expect("runs");
    (out.status.code(), pids_in_file(&file))
}

#[test]
fn account_leaves_nothing_its_command_started_running_on_a_normal_end_or_an_error() {
    for (then, code) in [("exit 0", 0), ("exit 3", 1)] {
        let (got, pids) = account_with_grandchildren(then);
        assert_eq!(got, Some(code), "{then}");
        assert_eq!(pids.len(), 2, "{then}: {pids:?}");
        let gone = all_gone(&pids);
        // Never leave them behind on this host, whatever the test found.
        for p in &pids {
            if alive(*p) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        assert!(
            gone,
            "{then}: the command's children outlived account: {pids:?}"
        );
    }
}

/// A load of short-lived processes on the host, as other people's work makes it: a shell
/// loop of short commands and a compile, each under a parent outside any group (their CPU
/// is in no process alive at both snapshots). Stopped when dropped.
struct ShortLivedLoad {
    loops: Vec<std::process::Child>,
    _dir: tempfile::TempDir,
}

impl ShortLivedLoad {
    fn start() -> ShortLivedLoad {
        let dir = tempfile::tempdir().expect("temp dir");
        let src = dir.path().join("load.c");
        // Enough code that each compile takes a few tens of ms of cc1's CPU.
        let body: String = (0..300)
            .map(|i| {
                format!("int f{i}(int x){{int s=0;for(int j=0;j<x;j++)s+=j*{i}%7;return s;}}\n")
            })
            .collect();
        std::fs::write(&src, body).expect("C source");
        let spawn = |script: String| {
            std::process::Command::new("sh")
                .args(["-c", &script])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("sh starts")
        };
        let shell = spawn("while :; do for i in 1 2 3 4 5 6 7 8 9 10; do ls / >/dev/null; cat /proc/loadavg >/dev/null; done; sleep 0.001; done".into());
        let compile = spawn(format!(
            "while :; do cc -O2 -c {} -o {}; done",
            src.display(),
            dir.path().join("load.o").display()
        ));
        // Let both reach their stride before the run opens its window.
        std::thread::sleep(std::time::Duration::from_millis(500));
        ShortLivedLoad {
            loops: vec![shell, compile],
            _dir: dir,
        }
    }
}

impl Drop for ShortLivedLoad {
    fn drop(&mut self) {
        for c in &mut self.loops {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn quick_start_json() -> serde_json::Value {
    let (code, j, err) = run_json(&["--count", "100000", "--rounds", "3"]);
    assert_eq!(code, 0, "{err}");
    j
}

#[test]
fn short_lived_processes_on_the_host_neither_inflate_the_correction_nor_pass_in_silence() {
    // The figure this host gives without the load (other tests may run beside it: it is
    // whatever the host is now, not an idle machine's).
    let base = quick_start_json();
    let base_ratio = base["capture_ratio"]["measured_value"].as_f64();
    let loaded = {
        let _load = ShortLivedLoad::start();
        quick_start_json()
    };
    let r = &loaded["capture_ratio"];
    let source = r["source"].as_str().unwrap_or("");
    let measured = r["measured_value"].as_f64().unwrap_or(f64::NAN);
    match source {
        // Counted whole: within 0.05 of the figure without the load.
        "measured" => {
            let base = base_ratio.unwrap_or(f64::NAN);
            assert!((measured - base).abs() <= 0.05, "loaded {r} against {base}");
        }
        // Or not applied, with the reason named in the report.
        "not applied" => {
            assert_eq!(
                loaded["corrected_us_per_tran"],
                loaded["captured_us_per_tran"]
            );
            assert!(r["note"].as_str().is_some_and(|n| !n.is_empty()), "{r}");
        }
        other => panic!("capture ratio source {other}: {r}"),
    }
    // The load is named: the host was not quiet, and the warning says so first.
    let host = &loaded["accounting"]["host_load"];
    assert!(
        matches!(host["state"].as_str(), Some("busy" | "contended")),
        "{host}"
    );
    assert!(host["other_cpus"].as_f64().unwrap_or(0.0) > 0.05, "{host}");
    let first = loaded["accounting"]["warnings"][0].as_str().unwrap_or("");
    assert!(
        first.starts_with("the host was"),
        "{}",
        loaded["accounting"]
    );
    // Where the source sees processes that came and went, Other CPU carries them.
    if matches!(
        r["tasks_source"].as_str(),
        Some("cgroup_v1_root" | "cgroup_v2_top")
    ) {
        let short = loaded["other_cpu"]["short_lived_us_per_tran"]
            .as_f64()
            .unwrap_or(0.0);
        assert!(short > 0.0, "{}", loaded["other_cpu"]);
    }
}
