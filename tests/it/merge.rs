//! A run driven from several shards and merged (issue 33): shares of the load, a common
//! start, lossless histograms and counters added, the shared processes measured once, and
//! every incomplete or mixed set refused by name.

use oemputx_test_support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The start instant `secs` from now, RFC 3339 with milliseconds.
fn start_in(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Run shards `which` of `of` at once (embedded unless `extra` names a broker), shard 0 with
/// --measure when `measure`; their JSON files.
fn shards(
    dir: &Path,
    run_id: &str,
    which: &[usize],
    of: usize,
    measure: bool,
    extra: &[&str],
) -> Vec<PathBuf> {
    let at = start_in(3);
    let children: Vec<(PathBuf, std::process::Child)> = which
        .iter()
        .map(|&i| {
            let path = dir.join(format!("{run_id}-{i}.json"));
            let mut c = oemputx_process();
            c.args([
                "--shard",
                &format!("{i}/{of}"),
                "--run-id",
                run_id,
                "--start-at",
                &at,
            ])
            .args(["--quiet", "--no-save", "--export-json"])
            .arg(&path)
            .args(extra);
            if measure && i == 0 {
                c.arg("--measure");
            }
            (path, c.spawn().expect("a shard starts"))
        })
        .collect();
    children
        .into_iter()
        .map(|(p, mut c)| {
            let status = c.wait().expect("the shard ends");
            assert!(status.success(), "shard {} failed", p.display());
            p
        })
        .collect()
}

fn merged(args: &[&Path], extra: &[&str]) -> (i32, Value, String) {
    let out = oemputx()
        .arg("merge")
        .args(args)
        .args(extra)
        .args(["--export-json", "-", "--quiet"])
        .output()
        .expect("merge runs");
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
fn shards_take_their_shares_and_merge_adds_them_up_with_the_driver_summed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = shards(
        dir.path(),
        "embedded-3",
        &[0, 1, 2],
        3,
        true,
        &["--count", "3001", "--tasks", "4"],
    );
    let reports: Vec<Value> = files.iter().map(|p| read_json(p)).collect();
    // Shares: 3001 messages and 4 tasks among 3 shards.
    let counts: Vec<u64> = reports
        .iter()
        .map(|r| r["transactions"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(counts, [1001, 1000, 1000]);
    let tasks: Vec<u64> = reports
        .iter()
        .map(|r| r["settings"]["tasks"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(tasks, [2, 1, 1]);
    let hashes: Vec<&str> = reports
        .iter()
        .filter_map(|r| r["shard"]["settings_hash"].as_str())
        .collect();
    assert!(
        hashes.len() == 3 && hashes.iter().all(|h| *h == hashes[0]),
        "{hashes:?}"
    );
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (code, j, err) = merged(&paths, &[]);
    assert_eq!(code, 0, "{err}");
    assert_matches_schema(&j);
    assert_eq!(j["transactions"], 3001);
    let i = &j["integrity"];
    assert_eq!(
        (i["sent"].as_u64(), i["matched"].as_u64()),
        (Some(3001), Some(3001))
    );
    assert_eq!(j["merged"]["shards"].as_array().map(Vec::len), Some(3));
    // The driver: every shard's own CPU, over all messages, by hand from the same files.
    let driver_s: f64 = reports
        .iter()
        .map(|r| {
            let d = group(r, "DRIVER");
            f(&d["total_us_per_tran"]) * f(&r["transactions"]) / 1e6
        })
        .sum();
    let d = group(&j, "DRIVER");
    assert!(
        (f(&d["total_us_per_tran"]) - driver_s * 1e6 / 3001.0).abs() < 1e-6,
        "{d}"
    );
    // The shared group: shard 0's (--measure) CPU over all messages.
    let m = group(&reports[0], "EMBEDDED");
    let e = group(&j, "EMBEDDED");
    let want = f(&m["total_us_per_tran"]) * 1001.0 / 3001.0;
    assert!((f(&e["total_us_per_tran"]) - want).abs() < 1e-6, "{e} {m}");
    // Percentiles from the added histograms lie within the shards' own extremes.
    let min = reports
        .iter()
        .map(|r| f(&r["round_trip_us"]["min"]))
        .fold(f64::INFINITY, f64::min);
    let max = reports
        .iter()
        .map(|r| f(&r["round_trip_us"]["max"]))
        .fold(0.0, f64::max);
    let rt = &j["round_trip_us"];
    assert!(
        min <= f(&rt["p50"]) && f(&rt["p50"]) <= f(&rt["p99"]) && f(&rt["max"]) <= max * 1.01,
        "{rt}"
    );
    assert!(
        (f(&rt["min"]) - min).abs() <= min * 0.01 + 0.01,
        "{rt} {min}"
    );
}

#[test]
fn an_incomplete_or_mixed_set_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let two = shards(
        dir.path(),
        "part",
        &[0, 2],
        3,
        true,
        &["--count", "300", "--tasks", "3"],
    );
    let paths: Vec<&Path> = two.iter().map(PathBuf::as_path).collect();
    let (code, _, err) = merged(&paths, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shard(s) 1 of 3 missing"), "{err}");
    let other = shards(
        dir.path(),
        "other",
        &[1],
        3,
        false,
        &["--count", "300", "--tasks", "3"],
    );
    let mixed = [paths[0], paths[1], other[0].as_path()];
    let (code, _, err) = merged(&mixed, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not of one run") && err.contains("run id"),
        "{err}"
    );
    // Nothing measured the shared processes.
    let bare = shards(
        dir.path(),
        "bare",
        &[0, 1],
        2,
        false,
        &["--count", "300", "--tasks", "2"],
    );
    let paths: Vec<&Path> = bare.iter().map(PathBuf::as_path).collect();
    let (code, _, err) = merged(&paths, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--measure") && err.contains("--cpu"), "{err}");
    // A shard needs its run's id.
    oemputx()
        .args(["--count", "10", "--shard", "0/2", "--tasks", "2"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--run-id"));
}

/// A shard edited by hand (or written by another tool) with the broker's password in its
/// settings, or in any other text of it: merge masks it in every output, as a run masks its
/// own (issue 61, item 13, and the hostile pass after it).
#[test]
fn a_shards_unmasked_password_is_masked_in_every_merged_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = shards(
        dir.path(),
        "secret",
        &[0, 1],
        2,
        true,
        &["--count", "200", "--tasks", "2"],
    );
    let password = "Sh4rdSecretPw";
    for f in &files {
        let mut j = read_json(f);
        let url = format!("amqp://perf:{password}@127.0.0.1:5672/%2f");
        j["settings"]["qmgr"] = Value::from(url.clone());
        // Any other text may carry it too: a queue's name, the status, a warning.
        j["settings"]["request_queue"] = Value::from(format!("Q.{url}"));
        j["status_detail"] = Value::from(format!("stopped at {url}"));
        if let Some(w) = j["accounting"]["warnings"].as_array_mut() {
            w.push(Value::from(format!("seen on {url}")));
        }
        std::fs::write(f, serde_json::to_vec(&j).expect("json")).expect("edit the shard");
    }
    let tsv = dir.path().join("merged.tsv");
    let html = dir.path().join("merged.html");
    let out = oemputx()
        .arg("merge")
        .args(&files)
        .arg("--export-tsv")
        .arg(&tsv)
        .arg("--export-html")
        .arg(&html)
        .args(["--export-json", "-"])
        .output()
        .expect("merge runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let j: Value = serde_json::from_str(&stdout).expect("the merged JSON");
    assert_eq!(
        j["settings"]["qmgr"], "amqp://perf:***@127.0.0.1:5672/%2f",
        "{j}"
    );
    // The text report, on stdout when nothing else is.
    let text = oemputx()
        .arg("merge")
        .args(&files)
        .output()
        .expect("merge runs");
    assert_eq!(text.status.code(), Some(0));
    for (what, body) in [
        ("stdout", stdout.to_string()),
        ("stderr", stderr.to_string()),
        ("text", String::from_utf8_lossy(&text.stdout).into_owned()),
        ("tsv", std::fs::read_to_string(&tsv).expect("tsv")),
        ("html", std::fs::read_to_string(&html).expect("html")),
    ] {
        assert!(!body.contains(password), "{what}: {body}");
    }
}

#[test]
fn a_cpu_window_measures_the_shared_processes_once_for_all_shards() {
    let dir = tempfile::tempdir().expect("tempdir");
    let window = dir.path().join("window.json");
    // The window the shards will run in, measured by a process of its own.
    // Ending well after the shards will: a window that ends before the last shard is
    // refused, and a loaded host may start a shard late.
    let (from, until) = (start_in(2), start_in(8));
    let mut watcher = oemputx_process()
        .args([
            "cpu",
            "--group",
            "INIT=pid:1",
            "--from",
            &from,
            "--until",
            &until,
            "--export-json",
        ])
        .arg(&window)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("cpu starts");
    let files = shards(
        dir.path(),
        "windowed",
        &[0, 1],
        2,
        false,
        &["--count", "2000", "--tasks", "2"],
    );
    assert!(watcher.wait().expect("cpu ends").success());
    let w = read_json(&window);
    assert_eq!(w["schema"], "oemputx.cpu-window/1");
    assert_matches_schema(&w);
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let cpu = window.to_string_lossy().into_owned();
    let (code, j, err) = merged(&paths, &["--cpu", &cpu]);
    assert_eq!(code, 0, "{err}");
    let init = group(&j, "INIT");
    let g = &w["groups"][0];
    let want = (f(&g["user_s"]) + f(&g["sys_s"])) * 1e6 / 2000.0;
    assert!(
        (f(&init["total_us_per_tran"]) - want).abs() < 1e-6,
        "{init} {g}"
    );
    assert!(
        j["merged"]["measurement"]
            .as_str()
            .unwrap_or("")
            .contains("oemputx cpu from")
    );
}

#[test]
fn shards_on_rabbitmq_share_one_window_and_the_broker_is_measured_once() {
    live!(RabbitMq);
    let q = QueueGuard(fresh_queue("shards"));
    declare_queue(&q.0);
    let _flow = SampleFlow::start(
        &["--echo", "--input-queue", &q.0, "--threads", "2"],
        "echoing",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let url = amqp_url();
    let files = shards(
        dir.path(),
        "rabbit-2",
        &[0, 1],
        2,
        true,
        &[
            "--qmgr",
            &url,
            "--request-queue",
            &q.0,
            "--duration",
            "2s",
            "--tasks",
            "2",
            "--group",
            "QMGR=@rabbitmq",
        ],
    );
    let reports: Vec<Value> = files.iter().map(|p| read_json(p)).collect();
    for r in &reports {
        assert_eq!(r["shard"]["late_for_start_s"], 0.0, "{}", r["shard"]);
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (code, j, err) = merged(&paths, &[]);
    assert_eq!(code, 0, "{err}");
    let total: u64 = reports
        .iter()
        .map(|r| r["transactions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(j["transactions"].as_u64(), Some(total));
    assert!(f(&j["merged"]["start_spread_s"]) < 0.5, "{}", j["merged"]);
    let qmgr = group(&j, "QMGR");
    let measured = group(&reports[0], "QMGR");
    let want = f(&measured["total_us_per_tran"]) * f(&reports[0]["transactions"]) / total as f64;
    assert!(
        (f(&qmgr["total_us_per_tran"]) - want).abs() < 1e-6,
        "{qmgr}"
    );
}

/// `kubernetes-validate --strict FILE`: whether it passed, and what it said.
fn kubernetes_validate(file: &Path) -> (bool, String) {
    let out = std::process::Command::new("kubernetes-validate")
        .arg("--strict")
        .arg(file)
        .output()
        .expect("run kubernetes-validate");
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success() && said.contains("passed"), said)
}

/// deploy/kubernetes/'s Jobs (the Indexed Job of the shards, the merge step) are valid
/// batch/v1 Jobs by Kubernetes' own schemas (strict: no unknown field), the shards' an
/// Indexed one that gives each pod its index; docs/shards.md shows them as they are.
#[test]
fn the_kubernetes_jobs_in_deploy_are_valid_and_the_docs_show_them() {
    live!(KubernetesValidate);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/shards.md")).expect("docs/shards.md");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("deploy/kubernetes"))
        .expect("deploy/kubernetes")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let dir = tempfile::tempdir().expect("tempdir");
    for file in &files {
        let yaml = std::fs::read_to_string(file).expect("read");
        let (ok, said) = kubernetes_validate(file);
        assert!(ok, "{}: {said}", file.display());
        assert!(
            yaml.contains("kind: Job") && yaml.contains("backoffLimit: 0"),
            "{yaml}"
        );
        let body = &yaml[yaml.find("apiVersion:").expect("a manifest")..];
        assert!(
            doc.contains(body),
            "docs/shards.md does not show {} as it is",
            file.display()
        );
        // And it does reject a broken Job, so the pass above means something.
        let broken = dir.path().join("broken.yaml");
        std::fs::write(
            &broken,
            yaml.replace("backoffLimit: 0", "backoffLimit: none"),
        )
        .expect("write");
        assert!(!kubernetes_validate(&broken).0, "{}", file.display());
    }
    let indexed = std::fs::read_to_string(root.join("deploy/kubernetes/oemputx-shards-job.yaml"))
        .expect("read");
    assert!(
        indexed.contains("completionMode: Indexed") && indexed.contains("--shards 4"),
        "{indexed}"
    );
}

/// A shard file edited by `edit`, written beside the original as `name`.
fn edited(from: &Path, name: &str, edit: impl Fn(&mut Value)) -> PathBuf {
    let mut j: Value =
        serde_json::from_str(&std::fs::read_to_string(from).expect("read")).expect("json");
    edit(&mut j);
    let to = from.with_file_name(name);
    std::fs::write(&to, j.to_string()).expect("write");
    to
}

#[test]
fn hostile_shards_are_refused_by_name_without_allocating_by_their_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let two = shards(
        dir.path(),
        "hostile",
        &[0, 1],
        2,
        true,
        &["--count", "200", "--tasks", "2"],
    );
    // A count of 10^15 shards: named as missing in an instant, not 4.5 GB of indices.
    let huge: Vec<PathBuf> = two
        .iter()
        .enumerate()
        .map(|(i, p)| {
            edited(p, &format!("huge-{i}.json"), |j| {
                j["shard"]["of"] = Value::from(1_000_000_000_000_000u64)
            })
        })
        .collect();
    let started = std::time::Instant::now();
    let (code, _, err) = merged(&[&huge[0], &huge[1]], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more of 1000000000000000 missing"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // An index at or above its count.
    let beyond = edited(&two[1], "beyond.json", |j| {
        j["shard"]["index"] = Value::from(2)
    });
    let (code, _, err) = merged(&[&two[0], &beyond], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("says it is shard 2 of 2"), "{err}");
    // Counts that would wrap when added, and a negative figure.
    let wrap: Vec<PathBuf> = two
        .iter()
        .enumerate()
        .map(|(i, p)| {
            edited(p, &format!("wrap-{i}.json"), |j| {
                j["transactions"] = Value::from(1u64 << 63)
            })
        })
        .collect();
    let (code, _, err) = merged(&[&wrap[0], &wrap[1]], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("transactions is 9223372036854775808"), "{err}");
    let negative = edited(&two[0], "negative.json", |j| {
        j["groups"][0]["total_us_per_tran"] = Value::from(-5.0)
    });
    let (code, _, err) = merged(&[&negative, &two[1]], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("total_us_per_tran is -5e0"), "{err}");
    // The merged report written over one of its own shards: refused, the shard kept.
    let before = std::fs::read(&two[0]).expect("shard");
    let out = oemputx()
        .arg("merge")
        .args(&two)
        .arg("--export-json")
        .arg(&two[0])
        .output()
        .expect("merge runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("one of the shards being merged"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&two[0]).expect("shard"), before);
}

/// A CPU window file as `oemputx cpu --from --until` writes it, over `from`..`until`, its
/// host taken from `like` (a shard's report).
fn cpu_window(dir: &Path, name: &str, like: &Value, from: &str, until: &str) -> PathBuf {
    let w = serde_json::json!({
        "schema": "oemputx.cpu-window/1",
        "from_utc": from,
        "until_utc": until,
        "groups": [{"name": "INIT", "host": "local", "user_s": 0.2, "sys_s": 0.1, "processes": 1}],
        "capture_ratio": null,
        "host": like["host"].clone(),
    });
    let path = dir.join(name);
    std::fs::write(&path, w.to_string()).expect("write");
    path
}

#[test]
fn a_cpu_window_that_does_not_cover_the_shards_is_refused_naming_both_windows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let two = shards(
        dir.path(),
        "uncovered",
        &[0, 1],
        2,
        false,
        &["--count", "200", "--tasks", "2"],
    );
    // The shards' windows set to known instants: 12:00:00 to 12:00:10, and 12:00:02 to
    // 12:00:12.
    let times = [
        ("2026-12-04T12:00:00.000000Z", "2026-12-04T12:00:10.000000Z"),
        ("2026-12-04T12:00:02.000000Z", "2026-12-04T12:00:12.000000Z"),
    ];
    let fixed: Vec<PathBuf> = two
        .iter()
        .zip(times)
        .enumerate()
        .map(|(i, (p, (start, end)))| {
            edited(p, &format!("fixed-{i}.json"), |j| {
                j["start_utc"] = Value::from(start);
                j["end_utc"] = Value::from(end);
            })
        })
        .collect();
    let like = read_json(&fixed[0]);
    let paths: Vec<&Path> = fixed.iter().map(PathBuf::as_path).collect();
    let merge_with = |from: &str, until: &str, name: &str| {
        let w = cpu_window(dir.path(), name, &like, from, until);
        merged(&paths, &["--cpu", &w.to_string_lossy()])
    };
    // Beginning 5 s after the first shard began.
    let (code, _, err) = merge_with("2026-12-04T12:00:05Z", "2026-12-04T12:00:20Z", "late.json");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not cover the shards' window"), "{err}");
    assert!(
        err.contains("from 2026-12-04T12:00:05Z until 2026-12-04T12:00:20Z"),
        "{err}"
    );
    assert!(
        err.contains("from 2026-12-04T12:00:00.000000Z until 2026-12-04T12:00:12.000000Z"),
        "{err}"
    );
    assert!(
        err.contains("begins 5.000 s after the first shard began"),
        "{err}"
    );
    assert!(err.contains("oemputx cpu --from"), "{err}");
    // Ending 4 s before the last shard ended.
    let (code, _, err) = merge_with("2026-12-04T11:59:59Z", "2026-12-04T12:00:08Z", "early.json");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ends 4.000 s before the last shard ended"),
        "{err}"
    );
    // Within the second allowed for clock granularity at both edges: merged.
    let (code, j, err) = merge_with(
        "2026-12-04T12:00:00.600Z",
        "2026-12-04T12:00:11.400Z",
        "close.json",
    );
    assert_eq!(code, 0, "{err}");
    assert!(f(&group(&j, "INIT")["total_us_per_tran"]) > 0.0, "{j}");
    // An instant that is none.
    let (code, _, err) = merge_with("yesterday", "2026-12-04T12:00:20Z", "damaged.json");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("from_utc 'yesterday' is not an RFC 3339 instant"),
        "{err}"
    );
}

/// Lines that forge a report, an escape sequence and markup: what another host can put in
/// a shard's strings.
const FORGED: &str = "x\n Captured total  0.01\n::error::forged\u{1b}[2J<b>";

#[test]
fn a_shard_s_hostile_place_or_host_is_refused_or_kept_on_its_own_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let two = shards(
        dir.path(),
        "place",
        &[0, 1],
        2,
        true,
        &["--count", "200", "--tasks", "2"],
    );
    // A node, run id or settings hash oemputx never writes: refused by name, escaped.
    for (field, what) in [
        ("node", "node"),
        ("run_id", "run id"),
        ("settings_hash", "settings hash"),
    ] {
        let bad: Vec<PathBuf> = two
            .iter()
            .enumerate()
            .map(|(i, p)| {
                edited(p, &format!("{field}-{i}.json"), |j| {
                    j["shard"][field] = Value::from(FORGED)
                })
            })
            .collect();
        let (code, _, err) = merged(&[&bad[0], &bad[1]], &[]);
        assert_eq!(code, 2, "{field}: {err}");
        assert!(err.contains(&format!("{what} \"x\\n")), "{field}: {err}");
        assert!(!err.contains("\n Captured total"), "{field}: {err}");
    }
    // A host's name, model and kernel are its own: a merged report shows them, each on one line.
    let hosts: Vec<PathBuf> = two
        .iter()
        .enumerate()
        .map(|(i, p)| {
            edited(p, &format!("host-{i}.json"), |j| {
                j["shard"].as_object_mut().expect("a shard").remove("node");
                for f in ["hostname", "kernel", "cpu_model"] {
                    j["host"][f] = Value::from(FORGED);
                }
            })
        })
        .collect();
    let out = oemputx()
        .arg("merge")
        .args(&hosts)
        .output()
        .expect("merge runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Host              : x"), "{text}");
    for line in text.lines() {
        assert!(
            !line.starts_with(" Captured total  0.01") && !line.starts_with("::"),
            "a forged line: {line:?}\n{text}"
        );
    }
}

#[test]
fn a_shard_under_a_hostile_slurmd_nodename_is_refused_before_it_runs() {
    let out = oemputx()
        .env("SLURMD_NODENAME", FORGED)
        .args([
            "--shard",
            "0/1",
            "--run-id",
            "n",
            "--count",
            "10",
            "--no-save",
        ])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("SLURMD_NODENAME=\"x\\n"), "{err}");
    // A node's own name is kept.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("s.json");
    let out = oemputx()
        .env("SLURMD_NODENAME", "node-7.lab")
        .args([
            "--shard",
            "0/1",
            "--run-id",
            "n",
            "--count",
            "10",
            "--no-save",
        ])
        .args(["--quiet", "--export-json"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_slice(&std::fs::read(&file).expect("written")).expect("json");
    assert_eq!(j["shard"]["node"], "node-7.lab");
}
