//! One policy for every output of every subcommand (issue 45): `--export-FORMAT -` puts
//! that format on stdout and nothing else (the text for a person goes to stderr), and a
//! file path gets the same bytes. Table-driven: each subcommand, each format it offers.
//!
//! Results read from saved files (compare, gate, merge, history) are the same bytes both
//! ways; results measured now (a run, account, cpu, pub/sub, the matrix) differ in their
//! figures between two runs, so there both must parse as the format and have the same
//! shape (keys, header row, title, families). `sweep` and live `compare`, which start
//! flows for minutes, write through the same `export::outputs::Outputs`; their JSON on
//! stdout is checked in tests/it/sweep_compare.rs.

use oemputx::config::formats::{Format, ResultKind};
use oemputx_test_support::*;
use std::path::Path;

/// The formats `kind` writes, by the name this file's flags and shapes use: the table
/// under test is the library's own, so that a format added to a result is tested here.
fn formats_of(kind: ResultKind) -> Vec<&'static str> {
    kind.formats()
        .iter()
        .map(|f| f.id().trim_start_matches("export_"))
        .collect()
}

/// What a format's text must be, and its shape.
fn shape(format: &str, text: &str) -> Result<String, String> {
    let first_line = || text.lines().next().unwrap_or("").to_string();
    match format {
        "json" | "bmf" | "gha" => {
            let v: serde_json::Value =
                serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            Ok(match &v {
                serde_json::Value::Object(m) => m.keys().cloned().collect::<Vec<_>>().join(","),
                other => format!("{}", other.is_array()),
            })
        }
        "tsv" | "csv" => {
            let mut r = csv::ReaderBuilder::new()
                .delimiter(if format == "tsv" { b'\t' } else { b',' })
                .has_headers(false)
                .flexible(false)
                .from_reader(text.as_bytes());
            let rows: Vec<csv::StringRecord> = r
                .records()
                .collect::<Result<_, _>>()
                .map_err(|e| format!("not {format}: {e}"))?;
            match rows.first() {
                Some(h) if rows.len() > 1 => Ok(h.iter().collect::<Vec<_>>().join("|")),
                _ => Err(format!("{format} without a header and a row")),
            }
        }
        "markdown" => {
            let table = text.lines().filter(|l| l.starts_with('|')).count();
            if table >= 3 && (text.starts_with('|') || text.starts_with('#')) {
                Ok(first_line().split('|').count().to_string())
            } else {
                Err("no Markdown table".into())
            }
        }
        "html" => {
            let t = text.trim();
            if t.to_ascii_lowercase().starts_with("<!doctype html") && t.ends_with("</html>") {
                let title = t
                    .split_once("<title>")
                    .and_then(|(_, r)| r.split_once("</title>"))
                    .map_or("", |(x, _)| x);
                Ok(title.split(':').next().unwrap_or("").to_string())
            } else {
                Err("not one HTML document".into())
            }
        }
        "junit" | "svg" => {
            let mut r = quick_xml::Reader::from_str(text);
            let mut root = None;
            loop {
                match r.read_event() {
                    Ok(quick_xml::events::Event::Eof) => break,
                    Ok(quick_xml::events::Event::Start(e)) if root.is_none() => {
                        root =
                            Some(String::from_utf8_lossy(e.name().as_ref().as_bytes()).into_owned())
                    }
                    Ok(_) => {}
                    Err(e) => return Err(format!("not XML: {e}")),
                }
            }
            root.ok_or_else(|| "no root element".into())
        }
        "openmetrics" => {
            if text.ends_with("# EOF\n") && text.matches("# EOF").count() == 1 {
                Ok(text
                    .lines()
                    .filter(|l| l.starts_with("# TYPE"))
                    .collect::<Vec<_>>()
                    .join(";"))
            } else {
                Err("not one OpenMetrics exposition ending # EOF".into())
            }
        }
        "folded" => {
            let ok = |l: &str| {
                l.rsplit_once(' ')
                    .is_some_and(|(stack, n)| !stack.is_empty() && n.parse::<u64>().is_ok())
            };
            if !text.is_empty() && text.lines().all(ok) {
                Ok("folded".into())
            } else {
                Err("not folded stacks (STACK COUNT per line)".into())
            }
        }
        other => Err(format!("no check for {other}")),
    }
}

/// Run oemputx with `args` and `--export-FORMAT TARGET` (`-` or a file), in `dir`; the
/// output's text (stdout for `-`), or why not.
fn export(dir: &Path, args: &[String], format: &str, target: &str) -> (String, String) {
    // Before any `--`: what follows it is another program's command line.
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let out = oemputx()
        .current_dir(dir)
        .args(&args[..at])
        .arg(format!("--export-{format}"))
        .arg(target)
        .args(&args[at..])
        .timeout(std::time::Duration::from_secs(240))
        .output()
        .expect("oemputx runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // A capacity search whose first step did not keep up on a loaded host ends with exit 1
    // and still writes its result: what is checked here is that result's shape.
    let no_capacity = out.status.code() == Some(1) && stderr.contains("Capacity: not found");
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)) || no_capacity,
        "{args:?} --export-{format} {target}: exit {:?}\n{stderr}",
        out.status.code()
    );
    let body = if target == "-" {
        out.stdout
    } else {
        std::fs::read(dir.join(target)).unwrap_or_else(|e| panic!("{target} not written: {e}"))
    };
    (String::from_utf8(body).expect("UTF-8"), stderr)
}

/// Each format of a command: on stdout it parses as that format alone; in a file it is the
/// same bytes (`same_bytes`) or the same shape.
fn check(dir: &Path, what: &str, args: &[String], formats: &[&str], same_bytes: bool) {
    for format in formats {
        // Folded stacks are --profile's: with it, where perf can sample every CPU.
        let profiled;
        let args = if *format == "folded" {
            if !oemputx_test_support::live::can_run_named(
                "--export-folded in every_output_…",
                &[Service::Perf],
            ) {
                continue;
            }
            let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
            let mut a = args.to_vec();
            a.insert(at, "--profile".to_string());
            profiled = a;
            &profiled
        } else {
            args
        };
        let (stdout, err) = export(dir, args, format, "-");
        let on_stdout = shape(format, &stdout)
            .unwrap_or_else(|e| panic!("{what} {format} on stdout: {e}\n{stdout}\n{err}"));
        let file = format!("{what}-out.{format}");
        let (in_file, _) = export(dir, args, format, &file);
        if same_bytes {
            assert_eq!(stdout, in_file, "{what} {format}: stdout and file differ");
        } else {
            let in_file = shape(format, &in_file)
                .unwrap_or_else(|e| panic!("{what} {format} in a file: {e}"));
            assert_eq!(on_stdout, in_file, "{what} {format}: shapes differ");
        }
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A quiet run of the embedded queue manager in `dir` (300 messages, 2 rounds) with `extra`
/// options: where it writes is the caller's.
fn embedded_run(dir: &Path, extra: &[&str]) {
    let out = oemputx()
        .current_dir(dir)
        .args(["--count", "300", "--rounds", "2", "--quiet", "--no-save"])
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

/// Two saved runs of the embedded queue manager, a history of three, and the shards of one
/// run: the inputs of the commands that read files.
fn saved_inputs(dir: &Path) {
    let run = |extra: &[&str]| embedded_run(dir, extra);
    run(&["--export-json", "a.json"]);
    run(&["--export-json", "b.json"]);
    for _ in 0..3 {
        run(&["--save-baseline", "history.json"]);
    }
    std::fs::create_dir(dir.join("shards")).expect("shards folder");
    let start = (chrono::Utc::now() + chrono::Duration::seconds(3))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // Both shards start together (--start-at), as on two hosts; shard 0 measures the CPU.
    let shard = |i: &str, measure: bool| {
        let mut c = oemputx_process();
        c.current_dir(dir)
            .args([
                "--count",
                "300",
                "--tasks",
                "2",
                "--rounds",
                "1",
                "--quiet",
                "--no-save",
            ])
            .args(["--shard", i, "--run-id", "outputs", "--start-at", &start])
            .args(["--export-json", &format!("shards/{}.json", &i[..1])])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if measure {
            c.arg("--measure");
        }
        c.spawn().expect("a shard starts")
    };
    let (a, b) = (shard("0/2", true), shard("1/2", false));
    for child in [a, b] {
        let out = child.wait_with_output().expect("a shard ends");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_output_of_every_command_on_stdout_is_that_format_alone_and_a_file_gets_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    saved_inputs(d);
    let from_files: [(&str, Vec<String>, ResultKind); 4] = [
        (
            "compare",
            strings(&["compare", "a.json", "b.json"]),
            ResultKind::Compare,
        ),
        (
            "gate",
            strings(&["gate", "--baseline", "history.json", "--current", "b.json"]),
            ResultKind::Gate,
        ),
        ("merge", strings(&["merge", "shards"]), ResultKind::Merge),
        (
            "history",
            strings(&["history", "history.json"]),
            ResultKind::History,
        ),
    ];
    for (what, args, kind) in &from_files {
        check(d, what, args, &formats_of(*kind), true);
    }
    let run = strings(&["--count", "300", "--rounds", "1", "--no-save"]);
    check(d, "run", &run, &formats_of(ResultKind::Run), false);
    let me = format!("ME=pid:{}", std::process::id());
    let account = strings(&["account", "--group", &me, "--messages", "10", "--", "true"]);
    check(
        d,
        "account",
        &account,
        &formats_of(ResultKind::Account),
        false,
    );
    // A ladder of one short step on the embedded queue manager.
    let ladder = strings(&[
        "ladder",
        "--rates",
        "2000",
        "--step-time",
        "1s",
        "--no-repeat",
        "--no-save",
    ]);
    check(d, "ladder", &ladder, &formats_of(ResultKind::Ladder), false);
    // A window still to come for each run (one in the past is refused).
    let cpu = strings(&["cpu", "--group", &me, "--from", "+1s", "--until", "+2s"]);
    // The window's JSON; its OpenMetrics is the watch's, rewritten every interval (a file
    // only, checked in tests/it/cli.rs).
    assert_eq!(formats_of(ResultKind::Cpu), ["json", "openmetrics"]);
    check(d, "cpu", &cpu, &["json"], false);
}

#[test]
fn measured_pub_sub_and_matrix_outputs_on_stdout_are_that_format_alone() {
    live!(RabbitMq);
    let dir = tempfile::tempdir().expect("temp dir");
    // Pub/sub selects by headers, the matrix by topic: an exchange of each type.
    let (ticker, cells) = (
        ExchangeGuard(fresh_queue("outputs-pubsub")),
        ExchangeGuard(fresh_queue("outputs-matrix")),
    );
    let pubsub = strings(&[
        "pubsub",
        "--qmgr",
        &amqp_url(),
        "--topic",
        &ticker.0,
        "--declare",
        "--subscribers",
        "2",
        "--count",
        "300",
        "--no-save",
    ]);
    check(
        dir.path(),
        "pubsub",
        &pubsub,
        &formats_of(ResultKind::Pubsub),
        false,
    );
    // Its rounds and its capacity search: each is a result of its own (JSON).
    let mut rounds = pubsub.clone();
    rounds.extend(strings(&["--rounds", "2"]));
    on_stdout(
        dir.path(),
        "pubsub --rounds",
        &rounds,
        &formats_of(ResultKind::PubsubRounds),
    );
    let mut capacity = pubsub.clone();
    capacity.extend(strings(&["--find-capacity", "--rate", "200"]));
    on_stdout(
        dir.path(),
        "pubsub --find-capacity",
        &capacity,
        &formats_of(ResultKind::PubsubCapacity),
    );
    let matrix = strings(&[
        "matrix",
        "--qmgr",
        &amqp_url(),
        "--topic",
        &cells.0,
        "--declare",
        "--count",
        "100",
        "--rounds",
        "1",
    ]);
    check(
        dir.path(),
        "matrix",
        &matrix,
        &formats_of(ResultKind::Matrix),
        false,
    );
}

/// Each format of a measured command on stdout only: it parses as that format alone (the
/// same outputs in files are checked by the command's own tests; one run a format keeps
/// this short).
fn on_stdout(dir: &Path, what: &str, args: &[String], formats: &[&str]) {
    for format in formats {
        let (stdout, err) = export(dir, args, format, "-");
        shape(format, &stdout)
            .unwrap_or_else(|e| panic!("{what} {format} on stdout: {e}\n{stdout}\n{err}"));
    }
}

#[test]
fn a_sweep_and_a_live_compare_on_stdout_are_that_format_alone() {
    live!(RabbitMq);
    let dir = tempfile::tempdir().expect("temp dir");
    let q = QueueGuard(fresh_queue("outputs-sweep"));
    // A few seconds each: what is measured by then is reported as partial, in every format.
    let sweep = strings(&[
        "sweep",
        "--tasks",
        "1",
        "--flow-cmd",
        "sample-flow --echo",
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q.0,
        "--count",
        "50",
        "--max-time",
        "3s",
        "--no-save",
    ]);
    on_stdout(dir.path(), "sweep", &sweep, &formats_of(ResultKind::Sweep));
    let compare = strings(&[
        "compare",
        "--flow-cmd",
        "sample-flow --echo",
        "--setting",
        "one=--threads 1",
        "--setting",
        "two=--threads 2",
        "--max-time",
        "3s",
        "--",
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q.0,
        "--count",
        "50",
    ]);
    on_stdout(
        dir.path(),
        "compare",
        &compare,
        &formats_of(ResultKind::Compare),
    );
}

#[test]
fn two_outputs_on_stdout_or_a_rewritten_file_on_stdout_are_refused_before_anything_runs() {
    let out = oemputx()
        .args(["--count", "100", "--export-json", "-", "--export-tsv", "-"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--export-json and --export-tsv both name stdout"),
        "{err}"
    );
    // A file rewritten every interval cannot be stdout: refused, not a stream of expositions.
    let out = oemputx()
        .args([
            "cpu",
            "--group",
            "ME=pid:1",
            "--interval",
            "1s",
            "--count",
            "2",
        ])
        .args(["--export-openmetrics", "-"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--export-openmetrics"), "{err}");
    // A window that began in the past cannot be measured: refused, not measured "now".
    let out = oemputx()
        .args(["cpu", "--group", "ME=pid:1"])
        .args(["--from", "2026-01-01T00:00:00Z", "--until", "+2s"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--from") && err.contains("in the past"),
        "{err}"
    );
    // A format a result cannot produce is a usage error naming those it can, before any
    // flow starts (a sweep has no single run's metrics to expose).
    let out = oemputx()
        .args(["sweep", "--flow-cmd", "sample-flow --echo", "--tasks", "1"])
        .args(["--qmgr", "amqp://guest:guest@127.0.0.1:5672/%2f"])
        .args(["--export-openmetrics", "m.prom"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--export-openmetrics") && err.contains("--export-json"),
        "{err}"
    );
}

#[test]
fn a_comparison_of_saved_runs_writes_the_json_it_is_asked_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    for name in ["a.json", "b.json"] {
        embedded_run(d, &["--export-json", name]);
    }
    oemputx()
        .current_dir(d)
        .args(["compare", "a.json", "b.json", "--export-json", "cmp.json"])
        .assert()
        .success();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("cmp.json")).expect("written"))
            .expect("JSON");
    oemputx_test_support::schema::assert_matches_schema(&j);
    assert_eq!(j["reports"].as_array().map(Vec::len), Some(2), "{j}");
    let flow = j["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["metric"] == "corrected"))
        .expect("the corrected total");
    assert!(flow["cells"][0]["change_pct"].is_null(), "{flow}");
    assert!(flow["cells"][1]["change_pct"].is_f64(), "{flow}");
}

/// Options that would start each command (against port 1, where nothing listens, and files
/// that do not exist): a format checked any later would fail differently.
fn starting(kind: ResultKind) -> Vec<&'static str> {
    const NOBODY: &str = "amqp://guest:guest@127.0.0.1:1/%2f";
    match kind {
        ResultKind::Run => vec!["--count", "1", "--qmgr", NOBODY],
        ResultKind::Cpu => vec!["cpu", "--group", "ME=pid:1"],
        ResultKind::Account => vec!["account", "--messages", "1", "--group", "ME=pid:1"],
        ResultKind::Sweep => vec![
            "sweep",
            "--flow-cmd",
            "sample-flow --echo",
            "--tasks",
            "1",
            "--qmgr",
            NOBODY,
        ],
        ResultKind::Compare => vec!["compare", "a.json", "b.json"],
        ResultKind::Gate => vec!["gate", "--baseline", "a.json", "--current", "b.json"],
        ResultKind::Pubsub => vec!["pubsub", "--qmgr", NOBODY],
        ResultKind::PubsubRounds => vec!["pubsub", "--qmgr", NOBODY, "--rounds", "2"],
        ResultKind::PubsubCapacity => vec!["pubsub", "--qmgr", NOBODY, "--find-capacity"],
        ResultKind::Matrix => vec!["matrix", "--qmgr", NOBODY],
        ResultKind::Merge => vec!["merge", "a.json"],
        ResultKind::History => vec!["history", "a.json"],
        ResultKind::Ladder => vec!["ladder", "--qmgr", NOBODY],
    }
}

#[test]
fn a_format_a_result_does_not_have_is_refused_naming_those_it_has_before_anything_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut tried = 0;
    for kind in ResultKind::ALL {
        for f in Format::ALL.iter().filter(|f| !kind.formats().contains(f)) {
            let mut args = starting(kind);
            args.extend([f.flag(), "out.x"]);
            if kind == ResultKind::Account {
                args.extend(["--", "true"]);
            }
            let out = oemputx()
                .current_dir(dir.path())
                .args(&args)
                .timeout(std::time::Duration::from_secs(20))
                .output()
                .expect("runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!("writes no {}", f.name())) && err.contains(f.flag()),
                "{args:?}: {err}"
            );
            for has in kind.formats() {
                assert!(
                    err.contains(has.flag()),
                    "{args:?} names {}: {err}",
                    has.flag()
                );
            }
            assert!(!dir.path().join("out.x").exists(), "{args:?} wrote out.x");
            tried += 1;
        }
    }
    assert!(tried > 50, "{tried}");
    // Help shows each command the flags it takes, and only those.
    let help = |args: &[&str]| {
        let out = oemputx().args(args).arg("--help").output().expect("runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let compare = help(&["compare"]);
    assert!(compare.contains("--export-markdown") && !compare.contains("--export-csv"));
    let gate = help(&["gate"]);
    assert!(gate.contains("--export-junit") && !gate.contains("--export-tsv"));
    let run = help(&[]);
    assert!(run.contains("--export-openmetrics") && !run.contains("--export-junit"));
}

/// Run oemputx in `dir` with `args`; (exit code, stdout, stderr).
fn in_dir(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = oemputx()
        .current_dir(dir)
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `args` run in `dir` are refused as a usage error whose message holds `why`.
fn refused(dir: &Path, args: &[&str], why: &str) {
    let (code, _, err) = in_dir(dir, args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert!(err.contains(why), "{args:?}: {err}");
}

#[test]
fn outputs_that_would_replace_an_input_hide_in_the_run_options_or_cannot_be_where_asked_are_refused_up_front()
 {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    for _ in 0..3 {
        embedded_run(d, &["--save-baseline", "history.json"]);
    }
    let kept = std::fs::read(d.join("history.json")).expect("the history");
    // history's outputs are checked before it reads: none replaces the history.
    let (code, _, err) = in_dir(
        d,
        &["history", "history.json", "--export-json", "history.json"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("one of this command's inputs"), "{err}");
    assert_eq!(std::fs::read(d.join("history.json")).ok(), Some(kept));
    // An output among a live compare's or the A/B gate's run options was dropped without a
    // word; a format a run has not, among a measuring gate's, was too.
    let nobody = "amqp://guest:guest@127.0.0.1:1/%2f";
    let live = [
        "compare",
        "--flow-cmd",
        "sample-flow --echo",
        "--setting",
        "a=--threads 1",
        "--setting",
        "b=--threads 2",
        "--",
        "--qmgr",
        nobody,
        "--export-json",
        "c.json",
    ];
    refused(d, &live, "give --export-json before --");
    let ab = [
        "gate",
        "--flow-a",
        "sample-flow --echo",
        "--flow-b",
        "sample-flow --echo",
        "--",
        "--qmgr",
        nobody,
        "--export-tsv",
        "t.tsv",
    ];
    refused(d, &ab, "give --export-tsv before --");
    let stored = [
        "gate",
        "--baseline",
        "history.json",
        "--",
        "--count",
        "100",
        "--export-svg",
        "g.svg",
    ];
    refused(d, &stored, "writes no SVG");
    // The baseline history is read before it is appended to: never stdout.
    let (code, out, err) = in_dir(d, &["--count", "100", "--save-baseline", "-"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    // Two outputs on stdout, one of them by another name (sweep's --chart).
    let sweep = [
        "sweep",
        "--flow-cmd",
        "sample-flow --echo",
        "--tasks",
        "1",
        "--qmgr",
        nobody,
        "--chart",
        "-",
        "--export-json",
        "-",
    ];
    let (code, _, err) = in_dir(d, &sweep);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--chart") && err.contains("stdout"), "{err}");
    let sweep_comma = [
        "sweep",
        "--flow-cmd",
        "sample-flow --echo",
        "--tasks",
        "1",
        "--qmgr",
        nobody,
        "--decimal-comma",
    ];
    refused(d, &sweep_comma, "--decimal-comma");
}

#[test]
fn a_gate_without_a_verdict_or_without_a_baseline_still_says_why_in_its_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    embedded_run(d, &["--export-json", "c.json"]);
    // Two outputs on stdout: refused before anything, and the JUnit file says why.
    let (code, _, err) = in_dir(
        d,
        &[
            "gate",
            "--baseline",
            "c.json",
            "--current",
            "c.json",
            "--export-json",
            "-",
            "--export-bmf",
            "-",
            "--export-junit",
            "j.xml",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    let junit = std::fs::read_to_string(d.join("j.xml")).expect("the JUnit file");
    assert!(junit.contains("name stdout"), "{junit}");
    // No baseline yet: a pass that says so (a skipped test case, a summary, a warning).
    let (code, out, err) = in_dir(
        d,
        &[
            "gate",
            "--baseline",
            "none.json",
            "--current",
            "c.json",
            "--github",
            "--export-junit",
            "k.xml",
            "--export-markdown",
            "k.md",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let junit = std::fs::read_to_string(d.join("k.xml")).expect("the JUnit file");
    assert!(
        junit.contains("<skipped") && junit.contains("no baseline at"),
        "{junit}"
    );
    let md = std::fs::read_to_string(d.join("k.md")).expect("the summary");
    assert!(md.contains("no baseline yet"), "{md}");
    assert!(
        out.contains("::warning title=oemputx gate: no baseline::"),
        "{out}"
    );
    // Under --strict: exit 4, and the files say there was no verdict.
    let (code, _, err) = in_dir(
        d,
        &[
            "gate",
            "--baseline",
            "none.json",
            "--current",
            "c.json",
            "--strict",
            "--export-junit",
            "s.xml",
        ],
    );
    assert_eq!(code, Some(4), "{err}");
    let junit = std::fs::read_to_string(d.join("s.xml")).expect("the JUnit file");
    assert!(
        junit.contains("no verdict") || junit.contains("<error"),
        "{junit}"
    );
}

#[test]
fn an_accounted_command_s_own_stdout_leaves_stdout_to_the_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let me = format!("ME=pid:{}", std::process::id());
    let (code, out, err) = in_dir(
        dir.path(),
        &[
            "account",
            "--messages",
            "1",
            "--group",
            &me,
            "--export-json",
            "-",
            "--",
            "sh",
            "-c",
            "echo CHILD-SAYS",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str::<serde_json::Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(err.contains("CHILD-SAYS"), "{err}");
}
