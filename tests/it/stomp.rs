//! oemputx over STOMP 1.2 against the real ActiveMQ Classic (the test command installs and
//! starts it with its STOMP connector), sample-flow serving the queue over STOMP. Queues
//! are fresh per test; ActiveMQ makes them on demand.

use oemputx_test_support::*;

fn stomp_url() -> String {
    std::env::var("OEMPUTX_TEST_STOMP")
        .unwrap_or_else(|_| "stomp://admin:admin@127.0.0.1:61613".into())
}

/// sample-flow serving `queue` over STOMP.
fn stomp_flow(queue: &str, extra: &[&str]) -> SampleFlow {
    let url = stomp_url();
    let mut args = vec!["--url", url.as_str(), "--input-queue", queue];
    args.extend_from_slice(extra);
    SampleFlow::start(
        &args,
        if extra.contains(&"--echo") {
            "echoing"
        } else {
            "processing"
        },
    )
}

#[test]
fn put_get_over_stomp_matches_every_reply_non_persistent_and_persistent() {
    live!(ActiveMq);
    let q = fresh_queue("stomp");
    let _flow = stomp_flow(&q, &["--echo", "--threads", "2"]);
    for (persistent, n) in [(false, 500u64), (true, 200)] {
        let count = n.to_string();
        let mut args = vec![
            "--qmgr",
            stomp_url().leak(),
            "--request-queue",
            q.as_str(),
            "--count",
            &count,
            "--tasks",
            "2",
        ];
        if persistent {
            args.push("--persistent");
        }
        let (code, j, err) = run_json(&args);
        assert_eq!(code, 0, "persistent {persistent}: {err}");
        assert_matches_schema(&j);
        assert_eq!(j["settings"]["transport"], "stomp");
        assert_eq!(integrity5(&j), (n, n, 0, 0, 0), "{}", j["integrity"]);
        assert!(!err.contains("admin:admin"), "{err}");
        // Receipts on a default connector wait ~45 ms a round trip (Nagle against delayed
        // ACKs): the report says what to change, and only then.
        let p50 = j["round_trip_percentiles"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["pct"] == 50.0))
            .and_then(|p| p["us"].as_f64())
            .expect("a median round trip");
        let hinted = j["accounting"]["warnings"]
            .to_string()
            .contains("tcpNoDelay");
        assert_eq!(
            hinted,
            persistent && p50 >= 30_000.0,
            "p50 {p50} us: {}",
            j["accounting"]["warnings"]
        );
    }
}

#[test]
fn a_closed_connector_is_one_line_naming_the_fix() {
    // A port nothing listens on: the STOMP connector is not enabled there.
    let (code, _, err) = run_json(&["--qmgr", "stomp://admin:s3cret@127.0.0.1:9", "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("STOMP connector") && err.contains("activemq.xml"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
    let (code, _, err) = run_json(&[
        "--qmgr",
        "stomp://127.0.0.1:61613",
        "--syncpoint",
        "--count",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--syncpoint"), "{err}");
}

/// `oemputx pubsub ARGS --export-json -`: exit code, the JSON (schema-checked), stderr.
fn pubsub(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = oemputx()
        .arg("pubsub")
        .args(args)
        .args(["--export-json", "-"])
        .output()
        .expect("oemputx runs");
    let j = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    if !j.is_null() {
        assert_matches_schema(&j);
    }
    (
        out.status.code().unwrap_or(-1),
        j,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every subscriber got exactly its block, none lost, duplicated or astray.
fn assert_all_exact(j: &serde_json::Value, subscribers: usize) {
    let subs = j["subscribers"].as_array().expect("subscribers");
    assert_eq!(subs.len(), subscribers, "{j}");
    for s in subs {
        assert!(s["expected"].as_u64().is_some_and(|n| n > 0), "{s}");
        assert_eq!(s["received"], s["expected"], "{s}");
        assert_eq!(
            (&s["lost"], &s["duplicates"], &s["strays"]),
            (&0.into(), &0.into(), &0.into()),
            "{s}"
        );
    }
}

#[test]
fn jms_selectors_on_activemq_give_each_subscriber_its_block_and_a_stomp_py_subscriber_agrees() {
    live!(ActiveMq, StompPy);
    let topic = fresh_queue("ticker");
    // Another client (stomp.py) with the selector symbol IN ('S05',...,'S09') of 20 symbols.
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/holdout/stomp_subscriber.py");
    let mut other = std::process::Command::new("python3")
        .arg(&script)
        .args([topic.as_str(), "5", "9", "2"])
        .env("OEMPUTX_URL", stomp_url())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        other.stdout.take().expect("stdout"),
    ));
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
    let url = stomp_url();
    let common = [
        "--qmgr",
        url.as_str(),
        "--topic",
        topic.as_str(),
        "--symbols",
        "20",
        "--select",
        "5",
    ];
    let (code, j, err) = pubsub(
        &[
            &common[..],
            &[
                "--subscribers",
                "4",
                "--count",
                "2000",
                "--rate",
                "4000",
                "--ack",
                "auto",
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["settings"]["transport"], "stomp");
    assert!(
        j["settings"]["modes"]
            .as_str()
            .is_some_and(|m| m.contains("JMS selector")),
        "{}",
        j["settings"]
    );
    assert_all_exact(&j, 4);
    // Symbols go out in order: 2000 messages over 20 symbols, 100 of each, 500 in S05..S09.
    let (out, _) = signal_and_wait(other, nix::sys::signal::Signal::SIGTERM);
    assert!(out.status.success(), "{out:?}");
    let last = lines.map_while(Result::ok).last().unwrap_or_default();
    assert_eq!(last, "received 500 distinct 500", "the stomp.py subscriber");

    // The study's other variant: a topic per symbol, no selector; cumulative acks.
    let topic = fresh_queue("ticker-topics");
    let (code, j, err) = pubsub(&[
        "--qmgr",
        &url,
        "--topic",
        &topic,
        "--symbols",
        "20",
        "--select",
        "5",
        "--subscribers",
        "4",
        "--count",
        "2000",
        "--rate",
        "4000",
        "--ack",
        "client",
        "--select-by",
        "topic",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        j["settings"]["modes"]
            .as_str()
            .is_some_and(|m| m.contains("a subscription per symbol")),
        "{}",
        j["settings"]
    );
    assert_all_exact(&j, 4);
}

#[test]
fn competing_subscribers_on_activemq_are_refused_as_not_yet() {
    let (code, _, err) = pubsub(&[
        "--qmgr",
        "stomp://admin:admin@127.0.0.1:61613",
        "--topic",
        "t",
        "--compete",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--compete") && err.contains("not yet"),
        "{err}"
    );
}

#[test]
fn the_matrix_fills_its_eight_cells_on_activemq() {
    live!(ActiveMq);
    let topic = fresh_queue("matrix");
    let out = oemputx()
        .args([
            "matrix",
            "--qmgr",
            stomp_url().as_str(),
            "--topic",
            &topic,
            "--count",
            "200",
            "--export-json",
            "-",
        ])
        .output()
        .expect("oemputx runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value =
        serde_json::from_str(&text[text.find("{\n").expect("JSON after the table")..])
            .expect("JSON");
    assert_matches_schema(&j);
    let cells = j["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 8);
    for c in cells {
        assert!(c["received_mps"].as_f64().is_some_and(|r| r > 0.0), "{c}");
        assert!(
            c["broker_us_per_published"]
                .as_f64()
                .is_some_and(|r| r > 0.0),
            "{c}"
        );
        assert_eq!(c["lost"], 0, "{c}");
    }
}

#[test]
fn the_reference_flow_serves_stomp_and_writes_a_row_per_request() {
    live!(ActiveMq, PostgreSql);
    let q = fresh_queue("stomp-ref");
    let table = TableGuard::fresh("stomp_ref");
    let _flow = stomp_flow(&q, &["--db", &pg_url(), "--db-table", &table.0]);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &stomp_url(),
        "--request-queue",
        &q,
        "--count",
        "200",
        "--tasks",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (200, 200, 0, 0, 0), "{}", j["integrity"]);
    assert_eq!(
        pg_scalar(&format!("SELECT count(*) FROM {}", table.0)),
        Some(200)
    );
}

/// A STOMP server on 127.0.0.1 that logs every client in (CONNECTED), takes its frames and
/// answers none of them: a broker that never sends a receipt. Each connection is served
/// by a thread of its own, which ends when the client goes.
fn broker_without_receipts() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = s.read(&mut chunk) {
                    if chunk[..n].windows(8).any(|w| w == b"CONNECT\n") {
                        let _ = s.write_all(b"CONNECTED\nversion:1.2\n\n\0");
                    }
                }
            });
        }
    });
    format!("stomp://127.0.0.1:{port}")
}

/// A persistent run of one request against a broker that never sends its receipt.
fn run_without_receipt(wait: &str, json: &std::path::Path) -> std::process::Child {
    oemputx_process()
        .args(["--qmgr", &broker_without_receipts()])
        .args(["--request-queue", &fresh_queue("stomp-no-receipt")])
        .args(["--count", "1", "--persistent", "--wait", wait])
        .args(["--group", &format!("SELF={}", own_tree())])
        .args(["--quiet", "--export-json"])
        .arg(json)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn")
}

#[test]
fn sigterm_during_a_persistent_send_s_wait_for_its_receipt_exits_130_with_its_report() {
    // Issue 48, item 18: the receipt was waited for 60 s whatever the signal, then the run
    // failed (exit 1). No ActiveMQ needed: the broker is a local listener.
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("no-receipt.json");
    let child = run_without_receipt("60s", &json);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let (out, after) = signal_and_wait(child, nix::sys::signal::Signal::SIGTERM);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(after < std::time::Duration::from_secs(5), "{after:?}");
    let j = read_json(&json);
    assert_eq!(j["status"], "interrupted", "{err}");
    assert_eq!(j["integrity"]["abandoned"], 1, "{}", j["integrity"]);
}

#[test]
fn a_receipt_that_never_comes_ends_the_run_after_wait_not_a_fixed_minute() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("no-receipt.json");
    let started = std::time::Instant::now();
    let out = run_without_receipt("1s", &json)
        .wait_with_output()
        .expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(err.contains("no receipt within --wait (1s)"), "{err}");
}

/// A STOMP server on 127.0.0.1 that answers every CONNECT with an ERROR frame whose message
/// carries GitHub workflow commands and terminal escapes (a hostile broker, or a man in the
/// middle); its header escapes `\n` so that the message holds a line break too.
fn broker_that_answers_with_a_hostile_error() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = s.read(&mut chunk) {
                    if chunk[..n].windows(8).any(|w| w == b"CONNECT\n") {
                        let _ = s.write_all(
                            b"ERROR\nmessage:::error::pwned\x1b[31m\\n::add-mask::x\x1b]0;title\x07\n\n::warning::body\x1b[2J\n\0",
                        );
                    }
                }
            });
        }
    });
    format!("stomp://127.0.0.1:{port}")
}

#[test]
fn a_brokers_error_reaches_the_terminal_without_workflow_commands_or_escapes() {
    // Issue 48, item 11: the broker's words were printed raw.
    let out = oemputx()
        .args(["--qmgr", &broker_that_answers_with_a_hostile_error()])
        .args(["--request-queue", &fresh_queue("stomp-hostile-error")])
        .args(["--count", "1", "--no-save"])
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    // The broker's words are still shown, defused.
    assert!(stderr.contains("error::pwned"), "{stderr}");
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(!text.contains('\u{1b}'), "{name} holds an escape: {text:?}");
        assert!(!text.contains('\u{7}'), "{name} holds a BEL: {text:?}");
        for line in text.lines() {
            assert!(
                !line.trim_start().starts_with("::"),
                "{name} has a workflow command: {line:?}"
            );
        }
    }
}
