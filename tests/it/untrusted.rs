//! Issue 48's classes, across every reader of a saved file: text from a file another host
//! or a CI artifact made never reaches a terminal, a CI log, XML, HTML, Markdown or a
//! spreadsheet raw. A saved report whose group is named with a control character, a line
//! break, a GitHub workflow command, markup or a formula is refused by every command that
//! reads one (exit 2), and the refusal itself shows the name escaped.

use oemputx_test_support::*;
use std::path::Path;

/// A name no run writes: every kind of text that does harm somewhere.
const HOSTILE: &str = "::error::pwn\u{1b}[31m<script>x</script>|=cmd\r\n::add-mask::Z";

/// A quiet run of the embedded queue manager in `dir` with `extra` options.
fn run(dir: &Path, extra: &[&str]) {
    let out = oemputx()
        .current_dir(dir)
        .args(["--count", "300", "--rounds", "3", "--quiet", "--no-save"])
        .args(["--group", &format!("ME=pid:{}", std::process::id())])
        .args(extra)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `file` with the group ME renamed to [`HOSTILE`] everywhere it appears.
fn poison(file: &Path) {
    let text = std::fs::read_to_string(file).expect("saved");
    let name = serde_json::to_string(HOSTILE).expect("a JSON string");
    assert!(
        text.contains("\"ME\""),
        "the group is in {}",
        file.display()
    );
    std::fs::write(file, text.replace("\"ME\"", &name)).expect("rewritten");
}

/// Nothing on a terminal or in a CI log from the hostile name: no escape sequence, no
/// carriage return, no line that starts a workflow command but oemputx's own annotations.
fn defused(what: &str, out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    assert!(
        !text.contains('\u{1b}'),
        "{what}: an escape sequence\n{text}"
    );
    assert!(!text.contains('\r'), "{what}: a carriage return\n{text}");
    for line in text.lines() {
        let own = [
            "::error title=oemputx",
            "::warning title=oemputx",
            "::notice",
        ]
        .iter()
        .any(|p| line.starts_with(p));
        assert!(
            !line.starts_with("::") || own,
            "{what}: a workflow command\n{text}"
        );
    }
}

#[test]
fn a_saved_report_with_a_hostile_group_name_is_refused_by_every_reader_with_the_name_escaped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    run(d, &["--export-json", "a.json"]);
    run(d, &["--export-json", "b.json"]);
    let shard = [
        "--shard",
        "0/1",
        "--run-id",
        "u",
        "--measure",
        "--export-json",
    ];
    run(d, &[&shard[..], &["s.json"]].concat());
    for _ in 0..3 {
        run(d, &["--save-baseline", "history.json"]);
    }
    std::fs::copy(d.join("b.json"), d.join("clean.json")).expect("a clean copy");
    for f in ["a.json", "history.json", "s.json"] {
        poison(&d.join(f));
    }
    let readers: [&[&str]; 6] = [
        &["compare", "a.json", "b.json", "--export-tsv", "t.tsv"],
        &[
            "compare",
            "clean.json",
            "a.json",
            "--export-markdown",
            "m.md",
        ],
        &[
            "gate",
            "--baseline",
            "history.json",
            "--current",
            "clean.json",
            "--github",
            "--export-junit",
            "j.xml",
        ],
        &[
            "gate",
            "--baseline",
            "clean.json",
            "--current",
            "a.json",
            "--github",
        ],
        &["history", "history.json", "--export-html", "h.html"],
        &["merge", "s.json", "--export-html", "h.html"],
    ];
    for args in readers {
        let out = oemputx()
            .current_dir(d)
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("is not one oemputx writes"), "{args:?}: {err}");
        defused(&format!("{args:?} stderr"), &out.stderr);
        defused(&format!("{args:?} stdout"), &out.stdout);
        for written in ["t.tsv", "m.md", "h.html"] {
            assert!(!d.join(written).exists(), "{args:?} wrote {written}");
        }
        // The gate's failure outputs say why, and stay well-formed XML.
        if let Ok(xml) = std::fs::read_to_string(d.join("j.xml")) {
            let mut r = quick_xml::Reader::from_str(&xml);
            loop {
                match r.read_event() {
                    Ok(quick_xml::events::Event::Eof) => break,
                    Ok(_) => {}
                    Err(e) => panic!("{args:?}: the JUnit file is not XML: {e}\n{xml}"),
                }
            }
            assert!(!xml.contains('\u{1b}'), "{xml}");
            std::fs::remove_file(d.join("j.xml")).expect("removed");
        }
    }
}

/// A process that names itself `name` (any local user can, in /proc/PID/comm) and burns CPU.
fn named_process(name: &str) -> std::process::Child {
    let child = std::process::Command::new("sh")
        .args([
            "-c",
            "printf \"$1\" > /proc/$$/comm; while :; do :; done",
            "sh",
            name,
        ])
        .spawn()
        .expect("sh starts");
    // Renamed before oemputx reads it.
    let comm = format!("/proc/{}/comm", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(&comm).is_ok_and(|c| c.starts_with("sh"))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// No byte of a hostile name does harm in `what`: no control character but tab and line
/// feed, no workflow command opening a line, no markup of its own, no formula cell.
fn harmless(what: &str, text: &str, markup: bool, cells: Option<u8>) {
    defused(what, text.as_bytes());
    assert!(
        !text.contains('\u{7}'),
        "{what}: a control character\n{text}"
    );
    if markup {
        assert!(
            !text.contains("<b>"),
            "{what}: the name's markup is live\n{text}"
        );
    }
    if let Some(delimiter) = cells {
        let mut rows = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        for row in rows.records() {
            let row = row.unwrap_or_else(|e| panic!("{what}: does not parse: {e}\n{text}"));
            for cell in row.iter() {
                assert!(
                    !cell.starts_with("=1+2"),
                    "{what}: a formula cell {cell:?}\n{text}"
                );
            }
        }
    }
}

#[test]
fn a_hostile_process_name_reaches_every_sink_of_a_run_defused() {
    // Class (b) across the sinks of one run: a workflow command with an escape sequence,
    // and a formula with markup, a carriage return and a bell, as two local processes'
    // names (15 bytes each at most), measured as a group and shown in every format.
    let workflow = named_process("::error::\\033[2Jx");
    let formula = named_process("=1+2<b>&\\r\\a");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = |name: &str| dir.path().join(name).display().to_string();
    let out = oemputx()
        .args(["--count", "2000", "--no-save"])
        .args([
            "--group",
            &format!("NAMED=pid:{},pid:{}", workflow.id(), formula.id()),
        ])
        .args([
            "--export-json",
            &file("r.json"),
            "--export-tsv",
            &file("r.tsv"),
        ])
        .args([
            "--export-csv",
            &file("r.csv"),
            "--export-markdown",
            &file("r.md"),
        ])
        .args(["--export-html", &file("r.html")])
        .args(["--export-openmetrics", &file("r.prom")])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    for mut p in [workflow, formula] {
        let _ = p.kill();
        let _ = p.wait();
    }
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).expect("written");
    // The names are there (the test is not vacuous): in the text and the HTML, defused.
    assert!(stdout.contains("error::"), "{stdout}");
    assert!(stdout.contains("1+2"), "{stdout}");
    assert!(read("r.html").contains("1+2"));
    harmless("the text on stdout", &stdout, false, None);
    harmless("stderr", &String::from_utf8_lossy(&out.stderr), false, None);
    harmless("TSV", &read("r.tsv"), false, Some(b'\t'));
    harmless("CSV", &read("r.csv"), false, Some(b','));
    harmless("Markdown", &read("r.md"), true, None);
    harmless("HTML", &read("r.html"), true, None);
    harmless("OpenMetrics", &read("r.prom"), false, None);
    // JSON keeps what the kernel said, escaped by JSON itself.
    let j: serde_json::Value = serde_json::from_str(&read("r.json")).expect("JSON parses");
    let names: Vec<String> = j["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    assert!(
        names.iter().any(|n| n.contains("\u{1b}[2J")),
        "the JSON keeps the raw name: {names:?}"
    );
}

/// A sparse file that claims `bytes` and holds none: reading it whole would need them all.
fn claims(path: &Path, bytes: u64) -> String {
    std::fs::File::create(path)
        .and_then(|f| f.set_len(bytes))
        .expect("a sparse file");
    path.display().to_string()
}

#[test]
fn every_file_reader_refuses_a_file_over_its_bound_before_reading_it() {
    // Class (a) across every reader: each file oemputx reads goes through one reader that
    // checks kind and size before it reads (files::read_regular). Here each is handed a
    // file that claims 4 GiB, under an address-space limit of 1 GiB: a reader that read
    // first and checked after would die of the allocation (SIGABRT), not exit 2.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let huge = claims(&dir.path().join("huge"), 4 << 30);
    let run = dir.path().join("run.json");
    run_json_to(&run);
    let run = run.display().to_string();
    // The CA file is read as the TLS handshake begins: a port that accepts.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    let tls = format!(
        "amqps://guest:guest@127.0.0.1:{}/%2f?cacertfile={huge}",
        listener.local_addr().expect("its address").port()
    );
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "a message file",
            vec!["--msgfile", &huge, "--count", "1", "--no-save"],
        ),
        (
            "a --lines file",
            vec!["--msgfile", &huge, "--lines", "--count", "1", "--no-save"],
        ),
        ("a profile file", vec!["profiles", "--config", &huge]),
        ("a saved report (compare)", vec!["compare", &run, &huge]),
        (
            "a baseline (gate)",
            vec!["gate", "--baseline", &huge, "--current", &run],
        ),
        (
            "a gate file",
            vec![
                "gate",
                "--gate-file",
                &huge,
                "--baseline",
                &run,
                "--current",
                &run,
            ],
        ),
        ("a history", vec!["history", &huge]),
        ("a shard (merge)", vec!["merge", &huge]),
        (
            "a CPU window (merge --cpu)",
            vec!["merge", "--cpu", &huge, &run],
        ),
        (
            "a CA file (TLS)",
            vec!["--qmgr", &tls, "--count", "1", "--no-save"],
        ),
        ("a pid file", vec!["cpu", "--group", "P=pidfile:HUGE"]),
    ];
    let pidfile = format!("P=pidfile:{huge}");
    let mut failures = Vec::new();
    for (what, mut args) in cases {
        for a in args.iter_mut() {
            if *a == "P=pidfile:HUGE" {
                *a = &pidfile;
            }
        }
        let mut cmd = oemputx_process();
        cmd.args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let limit = 1u64 << 30;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child before exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || {
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_AS, limit, limit)
                    .map_err(std::io::Error::from)
            });
        }
        let started = std::time::Instant::now();
        let out = cmd.output().expect("oemputx runs");
        let err = String::from_utf8_lossy(&out.stderr);
        let named = err.contains("iB a ") && err.contains(huge.as_str());
        if out.status.code() != Some(2) || !named || started.elapsed().as_secs() > 30 {
            failures.push(format!("{what}: {:?}\n{err}", out.status));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A saved run of the embedded queue manager, for the readers that need one good file.
fn run_json_to(path: &Path) {
    let out = oemputx()
        .args(["--count", "300", "--rounds", "3", "--quiet", "--no-save"])
        .args(["--export-json", &path.display().to_string()])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
