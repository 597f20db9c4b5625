//! The exporters as their readers use them: JSON checked against the committed schema, TSV
//! pasted back into numbers, CSV for decimal-comma locales, Markdown, the reports folder.

use oemputx_test_support::*;

use assert_cmd::Command;

fn validate(report: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schemas/oemputx.report-2.schema.json"))
            .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report does not match schemas/oemputx.report-2.schema.json:\n{}",
        errors.join("\n")
    );
}

#[test]
fn embedded_json_matches_the_committed_schema() {
    let out = oemputx()
        .args([
            "--count",
            "200",
            "--tasks",
            "2",
            "--quiet",
            "--export-json",
            "-",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    validate(&serde_json::from_slice(&out.stdout).expect("JSON"));
}

#[test]
fn rabbitmq_json_with_groups_matches_the_committed_schema() {
    live!(RabbitMq);
    let q = fresh_queue("schema");
    let flow = EchoFlow::start(&q, &[]);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "100",
        "--group",
        "QMGR=@rabbitmq",
        "--group",
        &format!("FLOW=pid:{}", flow.pid()),
    ]);
    assert_eq!(code, 0, "{err}");
    validate(&j);
    assert!(j["processes"].as_array().is_some_and(|p| !p.is_empty()));
}

#[test]
fn a_schema_violation_is_caught() {
    // The test above would pass vacuously if the validator accepted anything.
    let out = oemputx()
        .args(["--count", "20", "--quiet", "--export-json", "-"])
        .output()
        .expect("runs");
    let mut j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    j["settings"]["qmgr"] = "amqp://guest:hunter2@host:5672/%2F".into();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schemas/oemputx.report-2.schema.json"))
            .expect("JSON");
    assert!(
        !jsonschema::is_valid(&schema, &j),
        "a plaintext password must fail the schema"
    );
}

fn read_table(
    path: &std::path::Path,
    delimiter: u8,
) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .from_path(path)
        .expect("readable");
    let headers = r.headers().expect("header").clone();
    r.records()
        .map(|rec| {
            headers
                .iter()
                .map(String::from)
                .zip(rec.expect("row").iter().map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn a_pasted_tsv_parses_back_into_the_reports_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (tsv, json) = (dir.path().join("run.tsv"), dir.path().join("run.json"));
    oemputx()
        .args(["--count", "300", "--quiet", "--export-tsv"])
        .arg(&tsv)
        .arg("--export-json")
        .arg(&json)
        .assert()
        .success();
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("JSON");
    let rows = read_table(&tsv, b'\t');
    let summary = rows
        .iter()
        .find(|r| r["row"] == "summary")
        .expect("a summary row");
    let close = |cell: &str, v: f64| {
        (cell.parse::<f64>().expect("a plain number") - v).abs() <= 0.0005 + v.abs() * 1e-9
    };
    assert_eq!(summary["transactions"], "300");
    assert!(close(
        &summary["rate_tps"],
        j["rate_tps"].as_f64().expect("rate")
    ));
    assert!(close(
        &summary["round_trip_mean_us"],
        j["round_trip_us"]["mean"].as_f64().expect("mean")
    ));
    assert!(close(
        &summary["captured_us_per_tran"],
        j["captured_us_per_tran"].as_f64().expect("captured")
    ));
    for g in j["groups"].as_array().expect("groups") {
        let row = rows
            .iter()
            .find(|r| r["row"] == "group" && r["group"] == g["name"].as_str().unwrap_or(""))
            .expect("a row per group");
        assert!(close(
            &row["total_us_per_tran"],
            g["total_us_per_tran"].as_f64().expect("total")
        ));
    }
    assert_eq!(
        rows.iter().filter(|r| r["row"] == "process").count(),
        j["processes"].as_array().map_or(0, Vec::len)
    );
    // Units are in the column names, no thousands separators anywhere.
    // (Text columns may hold words: a ratio "not applied".)
    let text = ["capture_ratio_source", "name", "label", "group"];
    assert!(rows.iter().all(|r| {
        r.iter()
            .filter(|(k, _)| !text.contains(&k.as_str()))
            .all(|(_, v)| !v.contains(' ') || v.contains(':'))
    }));
}

#[test]
fn every_tsv_row_says_which_run_it_is_and_rounds_have_each_group() {
    // Two pasted runs could not be told apart, round rows had no group's CPU, and a capture
    // ratio that was not applied showed as a plain 1.000 (issue 31).
    let dir = tempfile::tempdir().expect("tempdir");
    let (tsv, json) = (dir.path().join("run.tsv"), dir.path().join("run.json"));
    oemputx()
        .args(["--count", "200", "--rounds", "3", "--tasks", "2", "--quiet"])
        .args(["--label", "paste-me", "--export-tsv"])
        .arg(&tsv)
        .arg("--export-json")
        .arg(&json)
        .assert()
        .success();
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("JSON");
    let rows = read_table(&tsv, b'\t');
    let bytes = j["settings"]["msg_bytes_max"].to_string();
    for r in &rows {
        assert_eq!(
            (
                r["label"].as_str(),
                r["transport"].as_str(),
                r["tasks"].as_str(),
                r["msg_bytes"].as_str(),
                r["persistent"].as_str()
            ),
            ("paste-me", "embedded", "2", bytes.as_str(), "false"),
            "{r:?}"
        );
        assert_eq!(r["start_utc"], j["start_utc"].as_str().unwrap_or("-"));
    }
    for g in j["groups"].as_array().expect("groups") {
        let name = g["name"].as_str().unwrap_or("");
        let per_round: Vec<&String> = rows
            .iter()
            .filter(|r| r["row"] == "round" && r["group"] == name)
            .map(|r| &r["total_us_per_tran"])
            .collect();
        assert_eq!(per_round.len(), 3, "{name}: {rows:?}");
        assert!(
            per_round.iter().all(|v| v.parse::<f64>().is_ok()),
            "{per_round:?}"
        );
    }
    let summary = rows
        .iter()
        .find(|r| r["row"] == "summary")
        .expect("summary");
    let source = j["capture_ratio"]["source"].as_str().unwrap_or("");
    assert_eq!(summary["capture_ratio_source"], source);
    assert!(
        ["measured", "fixed", "not applied"].contains(&source),
        "{source}"
    );
}

#[test]
fn csv_for_decimal_comma_locales_uses_semicolons() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("run.csv");
    oemputx()
        .args([
            "--count",
            "100",
            "--quiet",
            "--decimal-comma",
            "--delimiter",
            ";",
            "--export-csv",
        ])
        .arg(&csv)
        .assert()
        .success();
    let rows = read_table(&csv, b';');
    let summary = rows
        .iter()
        .find(|r| r["row"] == "summary")
        .expect("summary");
    assert!(
        summary["rate_tps"].contains(',') && !summary["rate_tps"].contains('.'),
        "{}",
        summary["rate_tps"]
    );
    assert!(summary["rate_tps"].replace(',', ".").parse::<f64>().is_ok());
    oemputx()
        .args(["--count", "10", "--decimal-comma", "--export-csv", "-"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--delimiter ';'"));
}

#[test]
fn markdown_has_the_summary_and_the_cpu_table() {
    let out = oemputx()
        .args(["--count", "100", "--quiet", "--export-markdown", "-"])
        .output()
        .expect("runs");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("| Total transactions | 100 |"), "{md}");
    assert!(
        md.contains("| Jobname.PID | USR µs/tran | SYS µs/tran | Tot µs/tran | % |"),
        "{md}"
    );
    assert!(md.contains("**DRIVER\\***"), "{md}");
}

#[test]
fn every_run_is_saved_under_reports_with_latest_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    for _ in 0..2 {
        Command::cargo_bin("oemputx")
            .expect("binary")
            .env_remove("OEMPUTX_NO_SAVE")
            .current_dir(dir.path())
            .args(["--count", "50", "--quiet", "--label", "nightly"])
            .assert()
            .success();
    }
    let reports = dir.path().join("reports");
    let mut json: Vec<_> = std::fs::read_dir(&reports)
        .expect("reports folder")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with("-nightly.json"))
        .collect();
    json.sort();
    assert_eq!(json.len(), 2, "{json:?}");
    for ext in ["txt", "tsv"] {
        assert!(
            reports
                .join(json[1].replace(".json", &format!(".{ext}")))
                .exists()
        );
    }
    let latest = std::fs::read(reports.join("latest.json")).expect("latest.json");
    assert_eq!(
        latest,
        std::fs::read(reports.join(&json[1])).expect("newest"),
        "latest.json is the newest run"
    );
}

#[test]
fn rounds_keep_every_windows_figures_and_summarise_them() {
    let out = oemputx()
        .args([
            "--count",
            "400",
            "--rounds",
            "3",
            "--warmup",
            "50",
            "--quiet",
            "--export-json",
            "-",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    validate(&j);
    let rounds = j["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 3);
    assert!(rounds.iter().all(|r| r["transactions"] == 400));
    assert_eq!(
        j["transactions"], 1200,
        "the run's totals add the rounds up"
    );
    assert_eq!(j["integrity"]["sent"], 1200);
    let s = &j["rounds_summary"];
    assert_eq!(s["rounds"], 3);
    let rate = &s["rate_tps"];
    assert!(
        rate["best"].as_f64() >= rate["median"].as_f64()
            && rate["median"].as_f64() >= rate["worst"].as_f64()
    );
    assert!(
        s["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g["name"] == "DRIVER"))
    );
    // Text: a row per round and the best/median/worst lines.
    let text = oemputx()
        .args(["--count", "200", "--rounds", "2"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(" Round      Trans")
            && text.contains("Rate (trans/s)")
            && text.contains("Noise"),
        "{text}"
    );
}

#[test]
fn a_single_round_has_one_round_row_and_no_summary() {
    let out = oemputx()
        .args(["--count", "100", "--quiet", "--export-json", "-"])
        .output()
        .expect("runs");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["rounds"].as_array().map(Vec::len), Some(1));
    assert!(j["rounds_summary"].is_null());
    assert_eq!(j["rounds"][0]["transactions"], 100);
}

#[test]
fn probe_sizes_each_round_from_the_measured_rate() {
    let out = oemputx()
        .args([
            "--count",
            "10",
            "--probe",
            "1s",
            "--rounds",
            "2",
            "--quiet",
            "--export-json",
            "-",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    validate(&j);
    let per_round = j["probe"]["count_per_round"]
        .as_u64()
        .expect("probe figures");
    // The embedded loop makes thousands of round trips a second: far more than --count 10.
    assert!(per_round > 100, "{per_round}");
    assert!(
        j["rounds"]
            .as_array()
            .expect("rounds")
            .iter()
            .all(|r| r["transactions"].as_u64() == Some(per_round))
    );
    oemputx()
        .args(["--duration", "1s", "--probe"])
        .assert()
        .code(2);
}

/// Every schema tag the code writes has its schema file, and every file is of a tag in use.
#[test]
fn every_json_output_is_versioned_and_has_its_schema_file() {
    let mut tags = std::collections::BTreeSet::new();
    let re = regex_lite_tags();
    for entry in walk(std::path::Path::new("src")) {
        let text = std::fs::read_to_string(&entry).expect("source");
        for t in re(&text) {
            tags.insert(t);
        }
    }
    // A saved-report test plants an unknown schema on purpose.
    tags.remove("oemputx.report/0");
    assert!(tags.len() >= 8, "{tags:?}");
    for t in &tags {
        assert!(
            oemputx_test_support::schema::schema_file(t).is_file(),
            "{t} has no schema file under schemas/"
        );
    }
    for f in std::fs::read_dir("schemas").expect("schemas/") {
        let name = f.expect("entry").file_name().to_string_lossy().into_owned();
        let tag = name
            .strip_suffix(".schema.json")
            .and_then(|n| n.rsplit_once('-'))
            .map(|(t, v)| format!("{t}/{v}"))
            .unwrap_or_default();
        assert!(
            tags.contains(&tag),
            "schemas/{name} is of no tag the code writes"
        );
    }
}

/// The `"oemputx.NAME/N"` literals of a source text.
fn regex_lite_tags() -> impl Fn(&str) -> Vec<String> {
    |text: &str| {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("\"oemputx.") {
            let tail = &rest[i + 1..];
            let end = tail.find('"').unwrap_or(0);
            let tag = &tail[..end];
            if tag.contains('/')
                && tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "./-".contains(c))
            {
                out.push(tag.to_string());
            }
            rest = &tail[end.max(1)..];
        }
        out
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("folder").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_account_and_gate_json_match_their_schemas() {
    let out = oemputx()
        // The test's own sleep (a grandchild), not every sleep on the host.
        .args([
            "account",
            "--messages",
            "10",
            "--group",
            &format!("SLEEP={}", own_tree()),
        ])
        .args(["--export-json", "-", "--", "sleep", "0.1"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_matches_schema(&j);
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["a.json", "b.json"] {
        oemputx()
            .args([
                "--count",
                "100",
                "--rounds",
                "3",
                "--quiet",
                "--export-json",
            ])
            .arg(dir.path().join(name))
            .assert()
            .success();
    }
    let verdict = dir.path().join("verdict.json");
    oemputx()
        .args(["gate", "--baseline"])
        .arg(dir.path().join("a.json"))
        .arg("--current")
        .arg(dir.path().join("b.json"))
        .args(["--tolerance", "90%", "--export-json"])
        .arg(&verdict)
        .assert()
        .success();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&verdict).expect("verdict")).expect("JSON");
    assert_eq!(j["mode"], "stored");
    assert_matches_schema(&j);
}

#[test]
fn capacity_figures_agree_with_hand_arithmetic_from_the_same_json() {
    let (code, j, err) = run_json(&["--count", "2000", "--rounds", "2"]);
    assert_eq!(code, 0, "{err}");
    let c = &j["capacity"];
    let f = |v: &serde_json::Value| v.as_f64().expect("a number");
    let ratio = f(&j["corrected_us_per_tran"]) / f(&j["captured_us_per_tran"]);
    let mut system_us = 0.0;
    for g in j["groups"].as_array().expect("groups") {
        let name = g["name"].as_str().expect("name");
        let row = c["groups"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .expect("a capacity row per group");
        let us = f(&g["total_us_per_tran"]);
        assert!(
            (f(&row["cores_per_1000_tps"]) - us / 1000.0).abs() < 1e-9,
            "{row}"
        );
        assert!((f(&row["corrected_cores_per_1000_tps"]) - us * ratio / 1000.0).abs() < 1e-9);
        if name != "DRIVER" {
            system_us += us * ratio;
        }
    }
    // The embedded queue manager's flow is one responder thread: it can fill one CPU,
    // whatever the host has.
    let host = &c["hosts"][0];
    assert_eq!(host["cpus"], 1, "{c}");
    let full = 1e6 / system_us;
    assert!((f(&host["full_at_tps"]) - full).abs() < 1e-6 * full, "{c}");
    assert!((f(&c["full_at_tps"]) - full).abs() < 1e-6 * full);
    assert_eq!(c["busiest_host"], "local");
    assert!(
        c["assumption"]
            .as_str()
            .unwrap_or("")
            .contains("oemputx ladder")
    );
}

/// Parse OpenMetrics text with Python's prometheus_client (a real parser): the families and
/// their samples as JSON, or the parser's error.
fn parse_openmetrics(text: &str) -> serde_json::Value {
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(sys.stdin.read()):
    out[f.name] = {"type": f.type, "unit": f.unit,
                   "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
print(json.dumps(out))
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("parser ends");
    assert!(
        out.status.success(),
        "the OpenMetrics parser refused it: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn a_run_s_openmetrics_parse_and_agree_with_its_json() {
    live!(PromParser);
    let dir = tempfile::tempdir().expect("tempdir");
    let (om, json) = (dir.path().join("run.om"), dir.path().join("run.json"));
    oemputx()
        .args(["--count", "1000", "--quiet", "--export-openmetrics"])
        .arg(&om)
        .arg("--export-json")
        .arg(&json)
        .assert()
        .success();
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("JSON");
    let m = parse_openmetrics(&std::fs::read_to_string(&om).expect("written"));
    assert_eq!(m["oemputx_group_cpu_seconds"]["type"], "counter");
    assert_eq!(m["oemputx_group_cpu_seconds"]["unit"], "seconds");
    assert_eq!(m["oemputx_transactions"]["samples"][0]["value"], 1000.0);
    for g in j["groups"].as_array().expect("groups") {
        let name = g["name"].as_str().expect("name");
        let gauge = m["oemputx_group_cpu_microseconds_per_transaction"]["samples"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["labels"]["group"] == name))
            .expect("a gauge per group");
        let want = g["total_us_per_tran"].as_f64().expect("total");
        assert!((gauge["value"].as_f64().expect("value") - want).abs() < 1e-6 * want.max(1.0));
        let seconds: f64 = m["oemputx_group_cpu_seconds"]["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .filter(|s| {
                s["labels"]["group"] == name && s["name"] == "oemputx_group_cpu_seconds_total"
            })
            .filter_map(|s| s["value"].as_f64())
            .sum();
        assert!(
            (seconds - want * 1000.0 / 1e6).abs() < 1e-9 + 1e-6 * seconds,
            "{name}: {seconds}"
        );
    }
}

#[test]
fn cpu_interval_rewrites_a_file_the_openmetrics_parser_takes() {
    live!(PromParser);
    let dir = tempfile::tempdir().expect("tempdir");
    let om = dir.path().join("cpu.prom");
    oemputx()
        .args([
            "cpu",
            "--group",
            &format!("SELF={}", own_tree()),
            "--interval",
            "200ms",
            "--count",
            "3",
        ])
        .arg("--export-openmetrics")
        .arg(&om)
        .assert()
        .success();
    let m = parse_openmetrics(&std::fs::read_to_string(&om).expect("written"));
    let counter = m["oemputx_group_cpu_seconds"]["samples"]
        .as_array()
        .expect("samples");
    assert_eq!(counter.len(), 2, "user and system: {m}");
    assert!(
        counter
            .iter()
            .all(|s| s["labels"]["group"] == "SELF" && s["labels"]["host"] == "local")
    );
    assert_eq!(m["oemputx_group_cpus_busy"]["type"], "gauge");
}

#[test]
fn a_report_reads_back_into_the_model_it_was_written_from() {
    // merge reads shard reports back whole (issue 33): every field must survive.
    let (code, mut j, err) = run_json(&["--count", "500", "--rounds", "2"]);
    assert_eq!(code, 0, "{err}");
    // The headline is read off the report when it is written, not part of the model.
    let headline = j.as_object_mut().and_then(|m| m.remove("headline"));
    assert!(headline.is_some_and(|h| h["text"].is_string()), "{j}");
    let r: oemputx::report::Report =
        serde_json::from_value(j.clone()).expect("the report reads back");
    let again = serde_json::to_value(&r).expect("and writes again");
    assert_eq!(again, j);
}

#[test]
fn a_pasted_tsv_row_parses_with_python_and_carries_what_tells_two_runs_apart() {
    // Two runs that differ only in persistence: their summary rows, parsed as a
    // spreadsheet user's Python would (csv module, tab dialect), differ in a column, and
    // every row carries the settings that tell runs apart.
    let tsv = |extra: &[&str]| {
        let out = oemputx()
            .args(["--count", "200", "--rounds", "2", "--quiet", "--no-save"])
            .args(["--export-tsv", "-"])
            .args(extra)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let parse = |text: &str| {
        let script = "import csv,sys,json; rows=list(csv.DictReader(sys.stdin, delimiter='\\t')); print(json.dumps(rows[-1]))";
        let mut py = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        std::io::Write::write_all(py.stdin.as_mut().expect("stdin"), text.as_bytes()).expect("fed");
        let out = py.wait_with_output().expect("python3 ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&out.stdout)
            .expect("a row")
    };
    let (plain, persistent) = (parse(&tsv(&[])), parse(&tsv(&["--persistent"])));
    for column in [
        "rounds",
        "count",
        "warmup",
        "syncpoint",
        "persistent",
        "tasks",
        "msg_bytes",
        "rate_limit_tps",
        "other_cpu_us_per_tran",
        "captured_spread_pct",
        "host_state",
        "oemputx_version",
    ] {
        assert!(plain.contains_key(column), "no {column}: {plain:?}");
    }
    assert_eq!(plain["rounds"], "2");
    assert_eq!(plain["count"], "200");
    assert_ne!(plain["persistent"], persistent["persistent"]);
    // Numbers as spreadsheets read them: a decimal point, no thousands separator.
    let rate = plain["rate_tps"].as_str().unwrap_or_default();
    assert!(rate.parse::<f64>().is_ok() && !rate.contains(','), "{rate}");
}

#[test]
fn a_price_per_vcpu_hour_gives_each_group_its_cost_per_million_messages_in_every_format() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let f = |n: &str| dir.path().join(n);
    let out = oemputx()
        .args([
            "--count",
            "2000",
            "--no-save",
            "--price-per-vcpu-hour",
            "0.0425",
        ])
        .arg("--export-json")
        .arg(f("r.json"))
        .arg("--export-tsv")
        .arg(f("r.tsv"))
        .arg("--export-markdown")
        .arg(f("r.md"))
        .arg("--export-html")
        .arg(f("r.html"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let j = read_json(&f("r.json"));
    assert_matches_schema(&j);
    assert_eq!(j["capacity"]["price_per_vcpu_hour"], 0.0425);
    let groups = j["capacity"]["groups"].as_array().expect("groups");
    assert!(!groups.is_empty());
    for g in groups {
        // By hand: a million messages of us µs take us/3,600 vCPU-hours.
        let us = g["corrected_cores_per_1000_tps"]
            .as_f64()
            .map_or_else(|| g["us_per_tran"].as_f64().expect("us"), |c| c * 1000.0);
        let cost = g["cost_per_million"].as_f64().expect("a cost");
        assert!(
            (cost - us * 0.0425 / 3600.0).abs() <= 1e-12 + 1e-9 * cost,
            "{g}"
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(" per 1M msgs") && text.contains("Price "),
        "{text}"
    );
    let rows = pasteable_tsv(&f("r.tsv"), &oemputx::export::identity::COLUMNS);
    let at = rows[0]
        .iter()
        .position(|h| h == "cost_per_million")
        .expect("a cost column");
    assert!(
        rows.iter()
            .filter(|r| r[0] == "group")
            .all(|r| r[at].parse::<f64>().is_ok()),
        "{rows:?}"
    );
    let md = std::fs::read_to_string(f("r.md")).expect("md");
    assert!(
        md.contains("cost per 1M msgs at 0.04250 per vCPU-hour"),
        "{md}"
    );
    let html = std::fs::read_to_string(f("r.html")).expect("html");
    assert!(html.contains("cost per 1M msgs"));
    // Without a price nothing changes; a price that is no price is refused, and so is one
    // too small to print (1e-320 was accepted and printed as a price of zero).
    for no_price in ["0", "1e-320", "0.0000009"] {
        oemputx()
            .args(["--count", "10", "--no-save"])
            .arg(format!("--price-per-vcpu-hour={no_price}"))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("at least 0.000001"));
    }
}
