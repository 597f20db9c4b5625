//! The oemputx binary as the tests run it: isolated from the developer's profiles and
//! reports folder, with a timeout; and its JSON report read back.

use std::path::PathBuf;
use std::time::Duration;

/// Run oemputx with `args` and JSON on stdout; returns (exit code, parsed JSON or Null, stderr).
pub fn run_json(args: &[&str]) -> (i32, serde_json::Value, String) {
    run_json_env(args, &[])
}

/// [`run_json`] with these environment variables set (a password, say).
pub fn run_json_env(args: &[&str], env: &[(&str, &str)]) -> (i32, serde_json::Value, String) {
    let out = oemputx()
        .envs(env.iter().copied())
        .args(args)
        .args(["--export-json", "-", "--quiet", "--no-save"])
        .output()
        .expect("oemputx runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The oemputx binary of this build (in the test binary's target folder, where cargo puts it).
pub fn oemputx_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("oemputx")
}

/// The settings every oemputx a test starts runs with: profiles only from what the test
/// gives (never the developer's home) and nothing saved under reports/.
const ISOLATION: [(&str, &str); 2] = [
    ("XDG_CONFIG_HOME", "/nonexistent-oemputx-test"),
    ("OEMPUTX_NO_SAVE", "1"),
];

/// The oemputx binary, as a test runs it: isolated (see [`ISOLATION`]) and never hanging
/// beyond a minute.
pub fn oemputx() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::new(oemputx_bin());
    c.envs(ISOLATION)
        .env_remove("OEMPUTX_QMGR")
        .timeout(Duration::from_secs(60));
    c
}

/// The same as a process of its own, for tests that signal it or read it while it runs;
/// the test bounds its wait itself.
pub fn oemputx_process() -> std::process::Command {
    let mut c = std::process::Command::new(oemputx_bin());
    // The broker a developer exported for oemputx (OEMPUTX_QMGR) is not the test's: a test
    // that means the embedded one must get it.
    c.envs(ISOLATION).env_remove("OEMPUTX_QMGR");
    c
}

/// A selector for this test process and everything it started (`tree:PID`): a test's own
/// oemputx, flows and commands, never another checkout's processes of the same name, which
/// `comm:oemputx` or `comm:sleep` would take on a shared host.
pub fn own_tree() -> String {
    format!("tree:{}", std::process::id())
}

/// A group's row of a JSON report, or null.
pub fn group<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

/// A report's integrity counts: (sent, matched, timed out, unmatched, duplicates).
pub fn integrity5(j: &serde_json::Value) -> (u64, u64, u64, u64, u64) {
    let i = &j["integrity"];
    let n = |k: &str| i[k].as_u64().unwrap_or(u64::MAX);
    (
        n("sent"),
        n("matched"),
        n("timed_out"),
        n("unmatched"),
        n("duplicates"),
    )
}

/// Send `signal` to a running oemputx and wait for it to end: its output, and how long it
/// took after the signal.
pub fn signal_and_wait(
    child: std::process::Child,
    signal: nix::sys::signal::Signal,
) -> (std::process::Output, Duration) {
    let signalled = std::time::Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).expect("signal");
    let out = child.wait_with_output().expect("wait");
    (out, signalled.elapsed())
}

/// An oemputx stopped by Ctrl-C writes its reports, then re-raises SIGINT: it dies of the
/// signal, which a shell reports as 130 and which stops a shell loop around it (an exit
/// code of 130 would not). `context` is shown when it did not.
pub fn assert_sigint_reraised(status: &std::process::ExitStatus, context: &str) {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(nix::sys::signal::Signal::SIGINT as i32),
        "not ended by SIGINT: {status:?}\n{context}"
    );
}

/// The JSON a run wrote to `path`.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("the JSON file was written");
    serde_json::from_str(&text).expect("the JSON parses")
}

/// A TSV file as Python's csv module reads it (a spreadsheet's conventions: a tab between
/// cells, RFC 4180 quotes), every row as long as the header, and every one of `columns`
/// (the identity columns, `oemputx::export::identity::COLUMNS`) in the header: the rows,
/// header first.
pub fn pasteable_tsv(path: &std::path::Path, columns: &[&str]) -> Vec<Vec<String>> {
    let script = "import csv, json, sys\n\
        rows = list(csv.reader(open(sys.argv[1], newline=''), delimiter='\\t'))\n\
        bad = [i for i, r in enumerate(rows) if len(r) != len(rows[0])]\n\
        assert not bad, f'rows {bad} differ in length from the header'\n\
        print(json.dumps(rows))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "Python's csv module cannot read {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).expect("the rows as JSON");
    let header = rows.first().expect("a header");
    for c in columns {
        assert!(
            header.iter().any(|h| h == c),
            "{}: no column {c} in {header:?}",
            path.display()
        );
    }
    // Numbers as a spreadsheet reads them: a decimal point, no thousands separators.
    for row in &rows[1..] {
        for cell in row {
            let t = cell.trim();
            if t.starts_with(|c: char| c.is_ascii_digit()) && t.contains(',') {
                panic!("{}: a number with a comma {t:?}", path.display());
            }
        }
    }
    rows
}

/// Whether process `pid` runs (a zombie, exited and not yet reaped, has left its tree).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// Bounded: true once none of `pids` runs (10 s at most). Whatever it finds, it leaves
/// none of them running on this host.
pub fn all_gone(pids: &[i32]) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = !pids.iter().any(|p| alive(*p));
    for p in pids.iter().filter(|p| alive(**p)) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*p),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    gone
}

/// The pids a test's shell wrote to `file`, one per line (none when it wrote none).
pub fn pids_in_file(file: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The children of process `pid`, started by any of its threads (/proc's `children`).
pub fn children(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    out
}

/// `cmd` spawned, again while the kernel answers that its program is busy. A program this
/// test process has just written (a renamed copy of a binary, a script) can be held open for
/// an instant by a child another test thread forked in that moment, which has not yet
/// exec'd and closed it: exec then fails with ETXTBSY ("Text file busy", seen under CI's
/// load). The hold ends within milliseconds.
pub fn spawn_written(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 250 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            spawned => return spawned,
        }
    }
}
