//! Issue 48, class (c): every child process tree oemputx starts is gone when the command
//! returns, on every exit path. The commands that start children — compare, sweep and the
//! A/B gate (their flows) and account (its command) — each get a command that starts two
//! background grandchildren (their pids written to a file) and then either fails at once
//! (the error path) or goes on serving (the signal path: SIGTERM mid-run). Afterwards none
//! of the grandchildren may run. (The normal end of each is in its own tests: flows.rs's
//! `a_stopped_flow_leaves_no_grandchild_running`, accounting.rs's
//! `account_leaves_nothing_its_command_started_running_on_a_normal_end_or_an_error`.)

use oemputx_test_support::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// A shell command that starts two sleeps in the background (pids appended to `file`), then
/// does `then`.
fn tree(file: &Path, then: &str) -> String {
    let f = file.display();
    format!("sh -c 'sleep 100000 & echo $! >> {f}; sleep 100000 & echo $! >> {f}; {then}' sh")
}

/// The command lines of every command that starts children, with `cmd` as their flow (or
/// account's command) and `queue` as the request queue.
fn commands(cmd: &str, queue: &str) -> Vec<(&'static str, Vec<String>)> {
    let amqp = amqp_url();
    let run = ["--qmgr", &amqp, "--request-queue", queue, "--count", "400"];
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut compare = strings(&[
        "compare",
        "--flow-cmd",
        cmd,
        "--setting",
        "a=",
        "--setting",
        "b=",
        "--",
    ]);
    compare.extend(strings(&run));
    let mut sweep = strings(&["sweep", "--flow-cmd", cmd, "--tasks", "1,2"]);
    sweep.extend(strings(&run));
    let mut gate = strings(&["gate", "--flow-a", cmd, "--flow-b", cmd, "--"]);
    gate.extend(strings(&run));
    let account = strings(&[
        "account",
        "--messages",
        "1",
        "--group",
        "INIT=pid:1",
        "--",
        "sh",
        "-c",
        // account runs its command directly: the same tree, without the outer quoting.
        cmd.strip_prefix("sh -c '")
            .and_then(|c| c.strip_suffix("' sh"))
            .unwrap_or(cmd),
    ]);
    vec![
        ("compare", compare),
        ("sweep", sweep),
        ("the A/B gate", gate),
        ("account", account),
    ]
}

#[test]
fn a_child_that_fails_at_once_leaves_no_grandchild_running() {
    live!(RabbitMq);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("pids");
    let queue = fresh_queue("trees.fail");
    let mut failures = Vec::new();
    for (what, args) in commands(&tree(&file, "exit 3"), &queue) {
        let _ = std::fs::remove_file(&file);
        let out = oemputx()
            .args(&args)
            .timeout(Duration::from_secs(120))
            .output()
            .expect("runs");
        let pids = pids_in_file(&file);
        let code = out.status.code();
        if code == Some(0) || pids.len() < 2 || !all_gone(&pids) {
            failures.push(format!(
                "{what}: exit {code:?}, grandchildren {pids:?} still running or never started\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    delete_queue(&queue);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_signal_mid_run_leaves_no_grandchild_running() {
    live!(RabbitMq);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("pids");
    let queue = fresh_queue("trees.signal");
    // The flow serves (the sample flow's echo), so each command is mid-run when signalled;
    // account's command just waits.
    let serve = format!(
        "exec {} --url \"$OEMPUTX_URL\" --input-queue \"$OEMPUTX_QUEUE\" --echo",
        sample_flow_bin().display()
    );
    let mut failures = Vec::new();
    for (what, args) in commands(&tree(&file, &serve), &queue) {
        let _ = std::fs::remove_file(&file);
        let mut args = args;
        if what == "account" {
            let last = args.len() - 1;
            args[last] = args[last].replace(&serve, "sleep 100000");
        }
        let child = oemputx_process()
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("oemputx starts");
        // Mid-run: the grandchildren are there, and a moment more.
        let deadline = Instant::now() + Duration::from_secs(30);
        while pids_in_file(&file).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        let (out, _) = signal_and_wait(child, nix::sys::signal::Signal::SIGTERM);
        let pids = pids_in_file(&file);
        let code = out.status.code();
        if code != Some(130) || pids.len() < 2 || !all_gone(&pids) {
            failures.push(format!(
                "{what}: exit {code:?}, grandchildren {pids:?} still running or never started\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    delete_queue(&queue);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
