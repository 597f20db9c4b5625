//! The reference flow over the real RabbitMQ and PostgreSQL: every message becomes one row,
//! one audit copy and one reply, and the report shows the flow, the broker and the database.

use oemputx_test_support::*;

use std::process::Command;

#[test]
fn the_reference_flow_writes_one_row_per_message_and_the_report_shows_every_tier() {
    live!(RabbitMq, PostgreSql);
    let q = fresh_queue("flow");
    let audit = QueueGuard(fresh_queue("audit"));
    let table = TableGuard::fresh("flow");
    let stats = tempfile::NamedTempFile::new().expect("temp file");
    let stats_path = stats.path().to_string_lossy().into_owned();
    let flow = EchoFlow::reference(
        &q,
        &[
            "--db",
            &pg_url(),
            "--db-table",
            &table.0,
            "--audit-queue",
            &audit.0,
            "--stats",
            "node",
            "--stats-interval",
            "1h",
            "--stats-file",
            &stats_path,
        ],
    );
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "200",
        "--tasks",
        "2",
        "--group",
        &format!("FLOW=pid:{}", flow.pid()),
        "--group",
        "QMGR=@rabbitmq",
        "--group",
        "DB=@postgresql",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["integrity"]["matched"], 200, "{}", j["integrity"]);
    for g in ["FLOW", "QMGR", "DB", "DRIVER"] {
        let us = group(&j, g)["total_us_per_tran"].as_f64().unwrap_or(0.0);
        assert!(us > 0.0, "{g} shows no CPU: {}", j["groups"]);
    }
    // One row per message sent, each with the request's correlation id.
    let rows = pg_scalar(&format!("SELECT count(*) FROM {}", table.0));
    assert_eq!(rows, Some(200));
    let distinct = pg_scalar(&format!(
        "SELECT count(DISTINCT correl_id) FROM {}",
        table.0
    ));
    assert_eq!(distinct, Some(200));
    assert_eq!(queue_depth(&audit.0), 200, "one audit copy per message");
    drop(flow); // SIGTERM: the last statistics snapshot is written on the way out.
    let text = std::fs::read_to_string(stats.path()).expect("stats file");
    let last: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|v: &serde_json::Value| v["final"] == true)
        .expect("a final snapshot");
    let nodes = last["nodes"].as_array().cloned().unwrap_or_default();
    let insert = nodes
        .iter()
        .find(|n| n["node"] == "DatabaseInsert")
        .expect("DatabaseInsert node");
    assert_eq!(insert["invocations"], 200);
    assert!(insert["cpu_us"].as_f64().unwrap_or(0.0) > 0.0);
}

#[test]
fn a_request_that_is_not_xml_gets_an_error_reply_and_no_row() {
    live!(RabbitMq, PostgreSql);
    let q = fresh_queue("flowbad");
    let table = TableGuard::fresh("flowbad");
    let _flow = EchoFlow::reference(&q, &["--db", &pg_url(), "--db-table", &table.0]);
    let body = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(body.path(), "not xml at all").expect("write");
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "20",
        "--msgfile",
        &body.path().to_string_lossy(),
    ]);
    // Every request is answered (with an error reply): none times out.
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["integrity"]["matched"], 20);
    assert_eq!(
        pg_scalar(&format!("SELECT count(*) FROM {}", table.0)),
        Some(0)
    );
}

fn sample_flow(args: &[&str]) -> std::process::Output {
    Command::new(flow_bin())
        .args(args)
        .output()
        .expect("sample-flow runs")
}

#[test]
fn a_database_that_refuses_says_why_not_just_db_error() {
    live!(RabbitMq, PostgreSql);
    // The server's own message was hidden behind "db error" (issue 19, item 15).
    let q = QueueGuard(fresh_queue("flowbaduser"));
    let url = pg_url();
    let (_, rest) = url.split_once("://").expect("a URL");
    let (_, host_db) = rest.split_once('@').expect("user@host");
    let bad = format!("postgres://no_such_role_oemputx:SeCrEt99@{host_db}");
    let out = sample_flow(&["--url", &amqp_url(), "--input-queue", &q.0, "--db", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no_such_role_oemputx") && err.contains("FATAL"),
        "{err}"
    );
    assert!(!err.contains("SeCrEt99"), "{err}");
}

#[test]
fn an_unreachable_database_or_broker_is_a_clear_error() {
    live!(RabbitMq, PostgreSql);
    let q = QueueGuard(fresh_queue("flownodb"));
    let out = sample_flow(&[
        "--url",
        &amqp_url(),
        "--input-queue",
        &q.0,
        "--db",
        "postgres://postgres:secret@127.0.0.1:1/none",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot connect to PostgreSQL"), "{err}");
    assert!(err.contains("postgres:***@127.0.0.1:1"), "{err}");
    assert!(!err.contains("secret"), "{err}");

    let out = sample_flow(&["--url", "amqp://guest:guest@127.0.0.1:1/%2f", "--echo"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot connect to amqp://guest:***@127.0.0.1:1"),
        "{err}"
    );

    let out = sample_flow(&["--db-table", "x; DROP TABLE y", "--db", &pg_url()]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a plain table name"));
}

#[test]
fn the_flow_exits_with_a_message_when_its_input_queue_is_deleted() {
    live!(RabbitMq);
    // It kept running, consuming nothing (issue 19, item 12).
    let q = fresh_queue("flow-deleted");
    let mut flow = SampleFlow::start(
        &["--echo", "--input-queue", &q, "--url", &amqp_url()],
        "echoing",
    );
    delete_queue(&q);
    let (status, lines) = flow
        .wait_exit(std::time::Duration::from_secs(10))
        .expect("the flow exits after its queue is gone");
    assert!(!status.success(), "{status:?}");
    let text = lines.join("\n");
    assert!(text.contains("cancelled") && text.contains(&q), "{text}");
}
