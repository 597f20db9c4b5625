//! The Kafka transport against a real Kafka-protocol broker (tansu, memory storage, started
//! by ci/services.sh on 127.0.0.1:19092; $OEMPUTX_TEST_KAFKA points elsewhere): request/reply
//! by Spring Kafka's header convention with sample-flow and with responders of the tests'
//! own, correlation, a slow responder, a missing topic, a broker that goes away, and
//! credentials that never show. Every test uses topics of its own and deletes them.

use oemputx_test_support::kafka::{
    Answer, KafkaResponder, OwnBroker, TopicGuard, create_topic, kafka_url, topics_at,
};
use oemputx_test_support::*;
use std::time::{Duration, Instant};

fn topic(what: &str) -> TopicGuard {
    TopicGuard(fresh_queue(&format!("kafka-{what}")))
}

/// The run's reply topics (`oemputx.reply.PID.…`) still on the broker at `address`.
fn reply_topics_left(address: &str, pid: u32) -> Vec<String> {
    let prefix = format!("oemputx.reply.{pid}.");
    topics_at(address)
        .into_iter()
        .filter(|t| t.starts_with(&prefix))
        .collect()
}

#[test]
fn sample_flow_answers_every_request_by_the_header_convention_and_the_reply_topic_goes() {
    live!(Kafka);
    let t = topic("echo");
    let flow = SampleFlow::start(
        &["--url", &kafka_url(), "--input-queue", &t.0, "--echo"],
        "echoing",
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("kafka.json");
    let child = oemputx_process()
        .args(["--qmgr", &kafka_url(), "--request-queue", &t.0])
        .args(["--count", "300", "--tasks", "2", "--no-save", "--quiet"])
        .arg("--export-json")
        .arg(&json)
        .spawn()
        .expect("oemputx starts");
    let pid = child.id();
    let out = child.wait_with_output().expect("oemputx ends");
    assert_eq!(out.status.code(), Some(0));
    let j = read_json(&json);
    assert_matches_schema(&j);
    assert_eq!(integrity5(&j), (300, 300, 0, 0, 0), "{}", j["integrity"]);
    assert_eq!(j["settings"]["transport"], "kafka", "{}", j["settings"]);
    // Without --persistent each request is produced with acks=1, on a connection of its own
    // to the partition's leader; the flow saw every one, headers and all.
    let store = j["settings"]["persistent_store"].as_str().unwrap_or("");
    assert!(store.contains("acks=1"), "{}", j["settings"]);
    // The broker it talked to: its cluster id and the API versions a run uses.
    let broker = j["settings"]["broker"].as_str().unwrap_or("");
    assert!(
        broker.starts_with("cluster ") && broker.contains("Produce ") && broker.contains("Fetch "),
        "{}",
        j["settings"]
    );
    // With --persistent, acks=all through the client's own producer.
    let url = kafka_url();
    let args = ["--qmgr", &url, "--request-queue", &t.0, "--count", "100"];
    let (code, j, err) = run_json(&[&args[..], &["--persistent"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (100, 100, 0, 0, 0), "{}", j["integrity"]);
    let store = j["settings"]["persistent_store"].as_str().unwrap_or("");
    assert!(store.contains("acks=all"), "{}", j["settings"]);
    // The flow answered them all; the run's own reply topic went with the run.
    drop(flow);
    assert_eq!(
        reply_topics_left(&kafka_oemputx_address(), pid),
        Vec::<String>::new()
    );
}

/// `kafka+ssl://` end to end: a real TLS handshake (a CA made here) through a
/// TLS-terminating proxy in front of a tansu of the test's own, which tells its clients to
/// come back through the proxy; sample-flow answers through it too. Both produce paths go
/// through TLS: acks=1 on oemputx's own connection, acks=all on the client's.
#[test]
fn kafka_ssl_round_trips_through_a_real_tls_handshake_on_both_produce_paths() {
    live!(Tansu);
    let pki = crate::amqps::pki();
    let port = oemputx_test_support::kafka::free_port();
    let proxy = crate::amqps::tls_proxy(
        pki.server.clone(),
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
    );
    let _broker = OwnBroker::start_at(port, Some(&format!("localhost:{proxy}")));
    let url = format!(
        "kafka+ssl://localhost:{proxy}?cacertfile={}",
        pki.ca_file.display()
    );
    let t = fresh_queue("kafka-tls");
    let _flow = SampleFlow::start(&["--url", &url, "--input-queue", &t, "--echo"], "echoing");
    for (persistent, acks) in [(false, "acks=1"), (true, "acks=all")] {
        let mut args = vec!["--qmgr", &url, "--request-queue", &t, "--count", "100"];
        if persistent {
            args.push("--persistent");
        }
        let (code, j, err) = run_json(&args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(integrity5(&j), (100, 100, 0, 0, 0), "{}", j["integrity"]);
        let store = j["settings"]["persistent_store"].as_str().unwrap_or("");
        assert!(store.contains(acks), "{}", j["settings"]);
        // The broker described through the same handshake.
        let broker = j["settings"]["broker"].as_str().unwrap_or("");
        assert!(broker.starts_with("cluster "), "{}", j["settings"]);
    }
    // Without the CA the handshake is refused, naming the way out.
    let plain = format!("kafka+ssl://localhost:{proxy}");
    let (code, _, err) = run_json(&["--qmgr", &plain, "--request-queue", &t, "--count", "1"]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("certificate") && err.contains("cacertfile"),
        "{err}"
    );
}

fn kafka_oemputx_address() -> String {
    oemputx_test_support::kafka::address()
}

#[test]
fn replies_are_matched_by_correlation_id_and_a_reply_to_nobody_is_unmatched() {
    live!(Kafka);
    let t = topic("correl");
    create_topic(&t.0, 1);
    // Every third reply carries a correlation id of its own: its request times out, the
    // reply is counted as answering nothing.
    let _responder = KafkaResponder::start(&t.0, Answer::WrongIdEvery(3));
    let (code, j, err) = run_json(&[
        "--qmgr",
        &kafka_url(),
        "--request-queue",
        &t.0,
        "--count",
        "30",
        "--wait",
        "300ms",
        "--max-timeouts",
        "100",
    ]);
    let (sent, matched, timed_out, unmatched, dups) = integrity5(&j);
    assert_eq!(sent, 30, "{err}");
    assert_eq!(
        (matched, timed_out, unmatched, dups),
        (20, 10, 10, 0),
        "{code:?} {err}"
    );
}

#[test]
fn a_slow_responder_s_replies_come_late_and_are_counted_so() {
    live!(Kafka);
    let t = topic("slow");
    create_topic(&t.0, 1);
    // A reply topic of the test's own: the responder's last late replies come after the run
    // has ended, and a broker that makes topics on a produce (tansu does) would make the
    // run's own reply topic again after oemputx deleted it. Dropped before it, the responder
    // stops first.
    let replies = topic("slow-replies");
    create_topic(&replies.0, 1);
    let responder = KafkaResponder::start(&t.0, Answer::After(Duration::from_millis(400)));
    let (_, j, err) = run_json(&[
        "--qmgr",
        &kafka_url(),
        "--reply-queue",
        &replies.0,
        "--request-queue",
        &t.0,
        "--count",
        "4",
        "--wait",
        "150ms",
        "--max-timeouts",
        "10",
    ]);
    let i = &j["integrity"];
    assert_eq!(i["matched"], 0, "{i} {err}");
    assert_eq!(i["timed_out"], 4, "{i} {err}");
    // A late reply is read while a later request waits: counted late, never matched (the
    // responder answers one at a time, so the run ends before most of them come).
    assert!(i["late"].as_u64().unwrap_or(0) >= 1, "{i}");
    drop(responder);
}

#[test]
fn a_missing_topic_is_a_usage_error_naming_it_and_declare_makes_it() {
    live!(Kafka);
    let t = topic("missing");
    let out = oemputx()
        .args([
            "--qmgr",
            &kafka_url(),
            "--request-queue",
            &t.0,
            "--count",
            "1",
        ])
        .args(["--no-save"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("'{}' does not exist", t.0)) && err.contains("--declare"),
        "{err}"
    );
    // With --declare the topic is made (and kept: it is the flow's); a responder answers.
    let out = oemputx()
        .args(["--qmgr", &kafka_url(), "--request-queue", &t.0, "--declare"])
        .args([
            "--count",
            "1",
            "--wait",
            "200ms",
            "--max-timeouts",
            "5",
            "--no-save",
        ])
        .output()
        .expect("runs");
    assert!(
        topics_at(&kafka_oemputx_address()).contains(&t.0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_broker_that_goes_away_ends_the_run_within_its_bounds_with_a_partial_report() {
    live!(Tansu);
    let mut broker = OwnBroker::start();
    let at = broker.address();
    let url = format!("kafka://{at}");
    let t = fresh_queue("kafka-gone");
    let _responder = KafkaResponder::start_at(&at, &t, Answer::Echo);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("gone.json");
    let child = oemputx_process()
        .args(["--qmgr", &url, "--request-queue", &t, "--declare"])
        .args(["--duration", "60s", "--wait", "2s", "--no-save", "--quiet"])
        .arg("--export-json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oemputx starts");
    std::thread::sleep(Duration::from_millis(2500));
    let killed = Instant::now();
    broker.kill();
    let out = child.wait_with_output().expect("oemputx ends");
    let err = String::from_utf8_lossy(&out.stderr);
    // Bounded, not the 60 s: the client's backoff deadline (5 s) to see the broker gone,
    // --reconnect-for (the wait and 5 s: 7 s) of attempts to connect again, and the last
    // attempt's own backoff deadline (5 s).
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "{:?}",
        killed.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    let j = read_json(&json);
    assert!(
        j["integrity"]["matched"].as_u64().unwrap_or(0) > 0,
        "{}",
        j["integrity"]
    );
    assert_ne!(j["status"], "completed", "{}", j["status"]);
    // The break is in the report, with no node to go on on.
    let breaks = j["interruptions"].as_array().cloned().unwrap_or_default();
    assert!(
        !breaks.is_empty() && breaks.iter().all(|b| b["reconnected"] == false),
        "{}",
        j["interruptions"]
    );
}

#[test]
fn credentials_never_show_in_errors_reports_or_the_settings() {
    live!(Kafka);
    let t = topic("secret");
    create_topic(&t.0, 1);
    // tansu without --authentication refuses or ignores SASL; either way the password must
    // not be printed. A silent port is the other case: nobody answers at all.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = silent.local_addr().expect("address").port();
    let dir = tempfile::tempdir().expect("temp dir");
    for url in [
        format!("kafka://perf:hunter2@{}", kafka_oemputx_address()),
        format!("kafka://perf:hunter2@127.0.0.1:{port}?sasl=scram-sha-256"),
    ] {
        let json = dir.path().join("secret.json");
        let out = oemputx()
            .args(["--qmgr", &url, "--request-queue", &t.0, "--count", "2"])
            .args(["--wait", "200ms", "--max-timeouts", "5", "--no-save"])
            .arg("--export-json")
            .arg(&json)
            .timeout(Duration::from_secs(60))
            .output()
            .expect("runs");
        let all = format!(
            "{}{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&json).unwrap_or_default()
        );
        assert!(!all.contains("hunter2"), "{url}: {all}");
        assert!(all.contains("perf:***@"), "{url}: {all}");
    }
    drop(silent);
}

#[test]
fn options_kafka_cannot_serve_are_refused_before_anything_starts() {
    for (args, says) in [
        (vec!["--syncpoint"], "--syncpoint"),
        (
            vec!["--request-queue", "no spaces"],
            "not a Kafka topic name",
        ),
        (vec!["--confirm-window", "1"], "--confirm-window"),
    ] {
        let out = oemputx()
            .args(["--qmgr", "kafka://127.0.0.1:1", "--count", "1", "--no-save"])
            .args(&args)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Pub/sub is not on Kafka (yet): said at once, naming where it runs.
    let out = oemputx()
        .args([
            "pubsub",
            "--qmgr",
            "kafka://127.0.0.1:1",
            "--topic",
            "t",
            "--count",
            "1",
        ])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not on kafka://127.0.0.1:1"), "{err}");
}

/// A responder written with another client (confluent-kafka, librdkafka) by the convention,
/// burning a known CPU per message: every request matched, and oemputx's FLOW figure agrees
/// with the responder's own getrusage over its messages.
#[test]
fn a_hold_out_librdkafka_responder_is_answered_and_costed_as_it_counts_itself() {
    live!(Kafka, Tansu);
    let t = TopicGuard(fresh_queue("kafka-holdout"));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/holdout/kafka_responder.py");
    let mut responder = std::process::Command::new(oemputx_test_support::kafka::PYTHON)
        .arg(&script)
        .args([&t.0, "300"])
        .env("OEMPUTX_KAFKA", oemputx_test_support::kafka::address())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the responder starts");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        responder.stdout.take().expect("its stdout"),
    ));
    assert_eq!(
        lines.next().and_then(Result::ok).as_deref(),
        Some("ready"),
        "the responder did not start"
    );
    let pid = responder.id().to_string();
    let (code, j, err) = run_json(&[
        "--qmgr",
        &kafka_url(),
        "--request-queue",
        &t.0,
        "--count",
        "300",
        "--group",
        &format!("FLOW=pid:{pid}"),
        "--group",
        "QMGR=@kafka",
    ]);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(responder.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let said = lines
        .map_while(Result::ok)
        .find(|l| l.starts_with("messages "))
        .unwrap_or_default();
    let _ = responder.wait();
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (300, 300, 0, 0, 0), "{}", j["integrity"]);
    let own: f64 = said
        .split_whitespace()
        .skip_while(|w| *w != "us_per_msg")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    let flow = group(&j, "FLOW")["total_us_per_tran"]
        .as_f64()
        .unwrap_or(f64::NAN);
    // The responder counts from its first request to its last reply; oemputx's window also
    // holds the idle edges before and after (librdkafka's polling threads): a few % at most.
    assert!(
        (flow / own - 1.0).abs() < 0.05,
        "oemputx FLOW {flow:.1} µs/msg against the responder's own {own:.1} ({said})"
    );
    assert!(
        group(&j, "QMGR")["total_us_per_tran"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );
}

/// The reference flow on Kafka (XML check, transform, audit copy, enrich, a PostgreSQL row,
/// the reply): every request answered, a row each, and the report's FLOW, QMGR (the broker's
/// processes) and DB groups each with CPU of their own.
#[test]
fn the_reference_flow_on_kafka_reports_flow_broker_and_database_groups() {
    live!(Kafka, PostgreSql);
    let t = topic("reference");
    let audit = topic("reference-audit");
    let table = TableGuard::fresh("kafka_ref");
    let flow = SampleFlow::start(
        &[
            "--url",
            &kafka_url(),
            "--input-queue",
            &t.0,
            "--audit-queue",
            &audit.0,
            "--db",
            &pg_url(),
            "--db-table",
            &table.0,
        ],
        "processing",
    );
    let (code, j, err) = run_json(&[
        "--qmgr",
        &kafka_url(),
        "--request-queue",
        &t.0,
        "--count",
        "200",
        "--group",
        &format!("FLOW=pid:{}", flow.pid()),
        "--group",
        "QMGR=@kafka",
        "--group",
        "DB=@postgresql",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (200, 200, 0, 0, 0), "{}", j["integrity"]);
    for g in ["FLOW", "QMGR", "DB"] {
        let cpu = group(&j, g)["total_us_per_tran"].as_f64().unwrap_or(0.0);
        assert!(cpu > 0.0, "{g}: {cpu} µs/tran\n{}", j["groups"]);
    }
    assert_eq!(
        pg_scalar(&format!("SELECT count(*) FROM {}", table.0)),
        Some(200)
    );
    drop(flow);
}
