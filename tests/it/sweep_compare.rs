//! `oemputx sweep` over the real broker and database, and `oemputx compare` on saved reports.

use oemputx_test_support::*;

use predicates::prelude::*;

#[test]
fn a_sweep_runs_every_point_in_interleaved_rounds_with_an_interval_for_each_ratio() {
    live!(RabbitMq, PostgreSql);
    let q = fresh_queue("sweep");
    let table = TableGuard::fresh("sweep");
    let chart = tempfile::NamedTempFile::new().expect("temp");
    let flow_cmd = format!("sample-flow --db {} --db-table {}", pg_url(), table.0);
    let out = oemputx()
        .args(["sweep", "--tasks", "1,2", "--flow-cmd", &flow_cmd])
        .args([
            "--qmgr",
            &amqp_url(),
            "--request-queue",
            &q,
            "--count",
            "60",
        ])
        .args(["--group", "QMGR=@rabbitmq", "--export-json", "-", "--quiet"])
        // The sweep's own options may come after the run's.
        // Bounds for a loaded host: the sweep ends once decided, which takes 16 rounds a
        // point here when quiet; beside other suites at load 11, 40 s gave 6 (issue 43).
        // The harness's bound lies beyond the sweep's own.
        // A wide precision: the sweep stops at its first look with a finite interval (16
        // blocks, about 55 s here when quiet) rather than running to --max-time for ±3 %;
        // what is checked is the sweep's shape, not how close its ratios are.
        .args(["--max-time", "150s", "--precision", "50%", "--chart"])
        .arg(chart.path())
        .arg("--export-html")
        .arg(chart.path().with_extension("html"))
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sweep JSON");
    assert_matches_schema(&j);
    assert_eq!(j["schema"], "oemputx.sweep/2");
    let points = j["points"].as_array().cloned().unwrap_or_default();
    let shape: Vec<(u64, String, u64, u64)> = points
        .iter()
        .map(|p| {
            (
                p["tasks"].as_u64().unwrap_or(0),
                p["mode"].as_str().unwrap_or("").to_string(),
                p["flow_processes"].as_u64().unwrap_or(0),
                p["flow_threads_each"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (1, "threads".into(), 1, 1),
            (1, "processes".into(), 1, 1),
            (2, "threads".into(), 1, 2),
            (2, "processes".into(), 2, 1)
        ]
    );
    // Every point measured as often as every other, in one window.
    let rounds: Vec<u64> = points.iter().filter_map(|p| p["rounds"].as_u64()).collect();
    assert!(
        rounds.iter().all(|&r| r == rounds[0] && r >= 16),
        "{rounds:?}"
    );
    for p in &points {
        let flow = p["groups"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["name"] == "FLOW"))
            .and_then(|g| g["us_per_tran"]["median"].as_f64())
            .unwrap_or(0.0);
        assert!(flow > 0.0, "FLOW accounted by the flows' pids: {p}");
    }
    // Every round's figures are kept, so a sweep can be judged again offline: the FLOW
    // median shown is the median of FLOW's rounds as kept.
    assert_eq!(j["run_shape"]["metrics"][0], "FLOW");
    assert_eq!(j["run_shape"]["control"], "DRIVER");
    for p in &points {
        let kept: Vec<f64> = p["round_figures"][0]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        let controls = p["round_controls"].as_array().map_or(0, Vec::len);
        assert_eq!(
            (kept.len() as u64, controls as u64),
            (
                p["rounds"].as_u64().unwrap_or(0),
                p["rounds"].as_u64().unwrap_or(0)
            ),
            "{p}"
        );
        let mut sorted = kept.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0;
        let shown = p["groups"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["name"] == "FLOW"))
            .and_then(|g| g["us_per_tran"]["median"].as_f64())
            .unwrap_or(0.0);
        assert!(
            (median - shown).abs() <= 1e-9 * shown,
            "{median} against {shown}"
        );
    }
    // Each N: processes ÷ threads with its interval, for FLOW, captured and the rate, and
    // whether the driver adjusted it.
    let ratios = j["ratios"].as_array().expect("ratios");
    assert_eq!(ratios.len(), 6, "{ratios:?}");
    for r in ratios {
        let (lo, hi) = (r["low"].as_f64(), r["high"].as_f64());
        assert!(lo.is_some() && hi.is_some() && lo <= hi, "{r}");
        assert!(
            r["adjusted_by"] == "DRIVER" || r["adjusted_by"].is_null(),
            "{r}"
        );
    }
    // Every message of every round is one row: the flows were really in the loop.
    let rows = pg_scalar(&format!("SELECT count(*) FROM {}", table.0)).unwrap_or(0);
    assert!(
        rows >= 60 * rounds.iter().sum::<u64>() as i64,
        "{rows} rows"
    );
    let svg = std::fs::read_to_string(chart.path()).expect("chart");
    assert!(
        svg.starts_with("<svg") && svg.contains("N processes x 1 thread"),
        "{svg:.200}"
    );
    let html = chart.path().with_extension("html");
    oemputx_test_support::browser::assert_renders(&html, "sweep", &["sweep"]);
    let _ = std::fs::remove_file(html);
}

#[test]
fn an_interrupted_sweep_says_so_in_every_output() {
    live!(RabbitMq, PostgreSql);
    let q = QueueGuard(fresh_queue("sweep-int"));
    let table = TableGuard::fresh("sweep_int");
    let dir = tempfile::tempdir().expect("temp dir");
    let (json, tsv, chart) = (
        dir.path().join("s.json"),
        dir.path().join("s.tsv"),
        dir.path().join("s.svg"),
    );
    let flow_cmd = format!("sample-flow --db {} --db-table {}", pg_url(), table.0);
    let child = oemputx_process()
        .args(["sweep", "--tasks", "1", "--flow-cmd", &flow_cmd])
        .args(["--qmgr", &amqp_url(), "--request-queue", &q.0])
        .args(["--count", "100", "--max-time", "5m", "--quiet"])
        .arg("--export-json")
        .arg(&json)
        .arg("--export-tsv")
        .arg(&tsv)
        .arg("--chart")
        .arg(&chart)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Some cycles in, well before any ratio can be decided.
    std::thread::sleep(std::time::Duration::from_secs(8));
    let (out, after) = signal_and_wait(child, nix::sys::signal::Signal::SIGINT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_sigint_reraised(&out.status, &format!("{err}"));
    assert!(after < std::time::Duration::from_secs(15), "{after:?}");
    let j = read_json(&json);
    assert_eq!(j["run_shape"]["ended"], "interrupted", "{j}");
    // A pasted row and the chart say it too: neither may pass for a whole sweep.
    pasteable_tsv(&tsv, &oemputx::export::identity::COLUMNS);
    let tsv = std::fs::read_to_string(&tsv).expect("TSV written");
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    let ended = rows[0]
        .iter()
        .position(|c| *c == "ended")
        .expect("ended column");
    assert!(rows.len() > 1, "{tsv}");
    assert!(rows[1..].iter().all(|r| r[ended] == "interrupted"), "{tsv}");
    let svg = std::fs::read_to_string(&chart).expect("chart written");
    assert!(svg.contains("INTERRUPTED"), "{svg:.300}");
}

#[test]
fn sweep_needs_a_broker_and_a_flow_command_without_threads() {
    oemputx()
        .args(["sweep", "--tasks", "1", "--flow-cmd", "sample-flow"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("sweep starts flows on a broker"));
    oemputx()
        .args([
            "sweep",
            "--tasks",
            "1",
            "--flow-cmd",
            "sample-flow --threads 3",
        ])
        .args(["--qmgr", &amqp_url()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("must not set --threads"));
}

fn embedded_report(dir: &std::path::Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    oemputx()
        .args([
            "--count",
            "200",
            "--rounds",
            "3",
            "--quiet",
            "--export-json",
        ])
        .arg(&path)
        .args(extra)
        .assert()
        .success();
    path
}

#[test]
fn compare_prints_the_overhead_table_and_refuses_runs_that_differ() {
    live!(RabbitMq, PostgreSql);
    let dir = tempfile::tempdir().expect("temp dir");
    let a = embedded_report(dir.path(), "a.json", &[]);
    let b = embedded_report(dir.path(), "b.json", &[]);
    let c = embedded_report(dir.path(), "c.json", &["--tasks", "2"]);
    let out = oemputx()
        .arg("compare")
        .args([&a, &b])
        .args(["--export-tsv", "-"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let tsv = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    // One value per cell, a row per report and metric (it was "29.22 [26.47-41.95]
    // (-54.6%)" in one cell; issue 31).
    assert_eq!(
        rows[0][..7],
        [
            "report",
            "metric",
            "rounds",
            "median_us_per_tran",
            "min_us_per_tran",
            "max_us_per_tran",
            "change_pct"
        ]
    );
    let driver_b = rows
        .iter()
        .find(|r| r[0] == "b.json" && r[1] == "DRIVER")
        .expect("DRIVER of b");
    assert_eq!(driver_b[2], "3", "{tsv}");
    for cell in &driver_b[3..7] {
        assert!(cell.parse::<f64>().is_ok(), "{tsv}");
    }
    let total = rows.last().expect("rows");
    assert_eq!(total[..2], ["b.json", "total_overhead"]);
    assert!(total[6].parse::<f64>().is_ok(), "{tsv}");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Total Overhead %"), "{text}");

    oemputx()
        .arg("compare")
        .args([&a, &c])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "tasks: 1 in a.json but 2 in c.json",
        ))
        .stderr(predicate::str::contains("--force"));
    oemputx()
        .arg("compare")
        .args([&a, &c])
        .arg("--force")
        .assert()
        .success()
        .stdout(predicate::str::contains("Compared with --force"));

    // A figure no run gives (negative, or absurdly large) is refused as the gate refuses
    // it, not compared (issue 30, item 21).
    let mut damaged: serde_json::Value = read_json(&b);
    damaged["rounds"][1]["groups"][0]["total_us_per_tran"] = serde_json::json!(-3.0);
    let negative = dir.path().join("negative.json");
    std::fs::write(&negative, damaged.to_string()).expect("write");
    damaged["rounds"][1]["groups"][0]["total_us_per_tran"] = serde_json::json!(1e308);
    let huge = dir.path().join("huge.json");
    std::fs::write(&huge, damaged.to_string()).expect("write");
    for bad in [&negative, &huge] {
        let out = oemputx()
            .arg("compare")
            .args([&a, bad])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("damaged") && err.len() < 600, "{err}");
        assert!(out.stdout.is_empty(), "nothing compared");
    }

    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, "{ not json").expect("write");
    oemputx()
        .arg("compare")
        .args([&a, &corrupt])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a JSON report"));
    oemputx()
        .arg("compare")
        .arg(&a)
        .arg(dir.path().join("missing.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read report"));
}

/// Every file under `dir`, recursively, as text.
fn all_text_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(all_text_under(&p));
        } else {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap_or_default()));
        }
    }
    out
}

#[test]
fn a_sweep_records_no_password_of_its_flow_command() {
    live!(RabbitMq, PostgreSql);
    // The database URL in the flow's command carries the test database's password: no
    // output, report or error may show it (issue 19, item 1).
    let q = QueueGuard(fresh_queue("sweep-secret"));
    let table = TableGuard::fresh("sweep_secret");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = pg_url();
    let password = db
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, p)| p.to_string())
        .expect("the test database URL has a password");
    let secret = format!(":{password}@");
    let flow_cmd = format!("sample-flow --db {db} --db-table {}", table.0);
    let out = oemputx()
        .current_dir(dir.path())
        .env_remove("OEMPUTX_NO_SAVE")
        .args([
            "sweep",
            "--tasks",
            "1",
            "--flow-cmd",
            &flow_cmd,
            "--max-time",
            "20s",
        ])
        .args([
            "--qmgr",
            &amqp_url(),
            "--request-queue",
            &q.0,
            "--count",
            "30",
        ])
        .args(["--export-json", "s.json", "--export-markdown", "s.md"])
        .args(["--export-tsv", "s.tsv", "--export-csv", "s.csv"])
        .args(["--reports-dir", "reports"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains(&secret), "stdout: {stdout}");
    assert!(!stderr.contains(&secret), "stderr: {stderr}");
    let files = all_text_under(dir.path());
    assert!(files.len() >= 4, "{files:?}");
    for (path, text) in &files {
        assert!(
            !text.contains(&secret),
            "{} shows the password",
            path.display()
        );
    }
    // What is recorded still says which database, with the password masked.
    let json = std::fs::read_to_string(dir.path().join("s.json")).expect("json");
    assert!(json.contains(":***@"), "{json:.300}");
}

#[test]
fn compare_measures_settings_in_one_window_with_an_interval_for_every_change() {
    live!(RabbitMq);
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("c.json");
    let tsv = dir.path().join("c.tsv");
    // As for the sweep: compare's first look needs 8 blocks (32 rounds a setting), which
    // 40 s of 300-message rounds did not hold beside other suites at load 11, nor 150 s at
    // load 15. Rounds of 100 messages, and a bound of its own the harness's lies beyond.
    let out = oemputx()
        .timeout(std::time::Duration::from_secs(360))
        .args(["compare", "--flow-cmd", "sample-flow --echo"])
        .args([
            "--setting",
            "one=--threads 1",
            "--setting",
            "two=--threads 2",
        ])
        // A wide minimum effect: every change is "same" at the first look with a finite
        // interval (about 50 s here when quiet, 117 s to its bound at 1 %); what is checked
        // is the window, the intervals and the outputs, not a change's size.
        .args(["--max-time", "200s", "--min-effect", "50%", "--export-json"])
        .arg(&json)
        .arg("--export-tsv")
        .arg(&tsv)
        .arg("--export-html")
        .arg(dir.path().join("c.html"))
        .args(["--", "--qmgr", &amqp_url(), "--count", "100"])
        .args(["--group", "QMGR=@rabbitmq"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Total Overhead %"), "{text}");
    assert!(stderr.contains("compare: look 1 after 8"), "{stderr}");
    pasteable_tsv(&tsv, &oemputx::export::identity::COLUMNS);
    oemputx_test_support::browser::assert_renders(
        &dir.path().join("c.html"),
        "compare-live",
        &["changes", "settings"],
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    assert_matches_schema(&j);
    let metrics: Vec<&str> = j["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    assert!(
        metrics.contains(&"FLOW") && metrics.contains(&"captured"),
        "{metrics:?}"
    );
    let changes = j["changes"].as_array().expect("changes");
    assert_eq!(
        changes.len(),
        metrics.len(),
        "one change per metric for the one contrast"
    );
    for c in changes {
        assert_eq!(
            (c["setting"].as_str(), c["against"].as_str()),
            (Some("two"), Some("one"))
        );
        let (lo, hi) = (c["low_pct"].as_f64(), c["high_pct"].as_f64());
        assert!(lo.is_some() && hi.is_some() && lo <= hi, "{c}");
    }
    // Both settings were measured the same number of times, in one window.
    let rounds: Vec<u64> = j["arms"]
        .as_array()
        .expect("arms")
        .iter()
        .filter_map(|a| a["rounds"].as_u64())
        .collect();
    assert!(
        rounds.len() == 2 && rounds[0] == rounds[1] && rounds[0] >= 32,
        "{rounds:?}"
    );
    // One value per TSV cell: a number parses as one.
    let t = std::fs::read_to_string(&tsv).expect("tsv");
    let row = t
        .lines()
        .find(|l| l.starts_with("two\tFLOW\t"))
        .expect("a FLOW row");
    let cells: Vec<&str> = row.split('\t').collect();
    assert!(
        cells[3].parse::<f64>().is_ok() && cells[6].parse::<f64>().is_ok(),
        "{row}"
    );
    // The queues it made are gone.
    assert!(!stderr.contains("could not delete"), "{stderr}");
}

#[test]
fn a_flow_that_fails_after_two_blocks_leaves_a_compare_report_of_those_blocks() {
    live!(RabbitMq);
    let dir = tempfile::tempdir().expect("tempdir");
    // The fault: the flow's command starts sample-flow four times (two settings, two
    // blocks: each block starts its flows anew), then refuses to start.
    let counter = dir.path().join("starts");
    let flow = dir.path().join("flaky-flow");
    std::fs::write(
        &flow,
        format!(
            "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{c}'\n\
             if [ $n -gt 4 ]; then echo 'flaky-flow: will not start (injected fault)' >&2; exit 1; fi\n\
             exec '{bin}' \"$@\"\n",
            c = counter.display(),
            bin = oemputx_test_support::flow::sample_flow_bin().display()
        ),
    )
    .expect("script");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&flow, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let json = dir.path().join("c.json");
    let out = oemputx()
        .timeout(std::time::Duration::from_secs(300))
        .args(["compare", "--flow-cmd"])
        .arg(format!("{} --echo", flow.display()))
        .args([
            "--setting",
            "one=--threads 1",
            "--setting",
            "two=--threads 1",
        ])
        .args(["--max-time", "200s", "--export-json"])
        .arg(&json)
        .args(["--", "--qmgr", &amqp_url(), "--count", "100"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the partial report"))
            .expect("JSON");
    assert_matches_schema(&j);
    let partial = &j["partial"];
    assert_eq!(partial["blocks_done"], 2, "{partial}");
    assert!(
        partial["reason"]
            .as_str()
            .is_some_and(|r| r.contains("will not start") || r.contains("exit")),
        "{partial}"
    );
    // Both settings were measured in the two blocks, and the table says it is partial.
    let rounds: Vec<u64> = j["arms"]
        .as_array()
        .expect("arms")
        .iter()
        .filter_map(|a| a["rounds"].as_u64())
        .collect();
    assert!(
        rounds.len() == 2 && rounds[0] == rounds[1] && rounds[0] > 0,
        "{rounds:?}"
    );
    assert!(stderr.contains("partial: stopped after 2 of"), "{stderr}");
}

/// Settings that are the driver's own options, against a hold-out responder (the C one, not
/// oemputx's client) whose CPU per request is a known function of its size: one window, the
/// responder's change from 1,000 to 3,000 bytes within 10 % of what it measured of itself,
/// and an A/A pair of identical settings whose interval covers no change.
#[test]
fn compare_settings_of_run_options_find_a_known_cost_of_size_and_no_change_between_twins() {
    live!(RabbitMq, CAmqp);
    let responder = BurnResponder::start_with(
        &fresh_queue("sizes"),
        20.0,
        0.0,
        0.0,
        &["--ns-per-byte", "25"],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("c.json");
    let out = oemputx()
        .timeout(std::time::Duration::from_secs(360))
        .args(["compare", "--setting", "small=--msg-size 1000"])
        .args(["--setting", "twin=--msg-size 1000"])
        .args(["--setting", "large=--msg-size 3000"])
        // Ten blocks planned (180 rounds), whatever the load: every interval is finite at
        // the last look (about 50 s here when quiet; bounded by --max-time 150 s it ran
        // 100 s, alone at the suite's end, deciding the twins' DRIVER within 1 %). What is
        // checked needs no decision: the cost of size against the responder's clock, and
        // the twins' interval around zero.
        .args(["--max-rounds", "180", "--max-time", "150s", "--export-json"])
        .arg(&json)
        .args([
            "--",
            "--qmgr",
            &amqp_url(),
            "--request-queue",
            &responder.queue,
        ])
        .args(["--count", "200", "--group"])
        .arg(format!("RESP=pid:{}", responder.pid()))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let truth = responder.stop();
    let j = read_json(&json);
    assert_matches_schema(&j);
    let metric = j["metrics"]
        .as_array()
        .and_then(|m| m.iter().position(|x| x == "RESP"))
        .expect("RESP is a metric");
    let base_us = j["arms"][0]["figures"][metric]["median"]
        .as_f64()
        .expect("the base's RESP median");
    let change = |setting: &str| {
        j["changes"]
            .as_array()
            .and_then(|c| {
                c.iter()
                    .find(|c| c["setting"] == setting && c["metric"] == "RESP")
            })
            .cloned()
            .unwrap_or_else(|| panic!("no RESP change of {setting}: {:#}", j["changes"]))
    };
    let pct = |c: &serde_json::Value, k: &str| c[k].as_f64().unwrap_or(f64::NAN);
    // What 2,000 bytes more cost the responder, by its own thread's clock.
    let (small, large) = (truth.by_size.get(&1000), truth.by_size.get(&3000));
    let want = large
        .zip(small)
        .map(|(l, s)| l - s)
        .expect("both sizes in the truth");
    let large_change = change("large");
    let got = base_us * pct(&large_change, "change_pct") / 100.0;
    assert!(
        (got - want).abs() <= 0.10 * want,
        "RESP changed by {got:.1} µs/msg, the responder measured {want:.1}: {large_change:#} {truth:?}"
    );
    let twin = change("twin");
    assert!(
        pct(&twin, "low_pct") <= 0.0 && 0.0 <= pct(&twin, "high_pct"),
        "identical settings read apart: {twin:#}"
    );
    // The settings as the report names them: each one's run options.
    assert_eq!(
        j["settings"][2]["command"], "-- --msg-size 3000",
        "{:#}",
        j["settings"]
    );
}

/// A setting that would change what is measured (the groups, the window) is refused before
/// anything runs, naming the option.
#[test]
fn a_setting_with_group_or_count_is_refused_before_anything_runs() {
    for (setting, flag) in [
        ("b=--group X=pid:1", "--group"),
        ("b=--count 5", "--count"),
        ("b=--export-json x.json", "--export-json"),
    ] {
        let t = std::time::Instant::now();
        let out = oemputx()
            .args([
                "compare",
                "--setting",
                "a=--msg-size 100",
                "--setting",
                setting,
            ])
            .args(["--", "--qmgr", "amqp://guest:guest@127.0.0.1:1/%2f"])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{setting}: {err}");
        assert!(
            err.contains(&format!("{flag} is not a driver setting")),
            "{err}"
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t.elapsed()
        );
    }
}
