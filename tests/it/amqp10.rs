//! oemputx over AMQP 1.0 against the real RabbitMQ with its rabbitmq_amqp1_0 plugin (the
//! test command enables it), with fresh queue names and sample-flow serving them over AMQP
//! 1.0. Each test deletes the queues it made.

use oemputx_test_support::*;

fn amqp10_url() -> String {
    std::env::var("OEMPUTX_TEST_AMQP10")
        .unwrap_or_else(|_| "amqp10://guest:guest@127.0.0.1:5672".into())
}

/// sample-flow serving `queue` over AMQP 1.0 (it creates the queue, durable).
fn amqp10_flow(queue: &str, extra: &[&str], ready_word: &str) -> SampleFlow {
    let url = amqp10_url();
    let mut args = vec!["--url", url.as_str(), "--input-queue", queue];
    args.extend_from_slice(extra);
    SampleFlow::start(&args, ready_word)
}

#[test]
fn two_tasks_round_trip_every_request_and_rabbitmq_s_cpu_is_reported() {
    live!(RabbitMq, Amqp10);
    let queue = QueueGuard(fresh_queue("amqp10-echo"));
    let flow = amqp10_flow(&queue.0, &["--echo", "--threads", "2"], "echoing");
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp10_url(),
        "--request-queue",
        &queue.0,
        "--count",
        "2000",
        "--tasks",
        "2",
        "--msgs-per-loop",
        "3",
    ]);
    drop(flow);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (2000, 2000, 0, 0, 0));
    assert_eq!(j["settings"]["transport"], "amqp10");
    assert_eq!(j["settings"]["qmgr"], "amqp10://guest:***@127.0.0.1:5672");
    // Without --group an AMQP 1.0 run on RabbitMQ accounts the broker.
    let qmgr = group(&j, "QMGR");
    assert!(
        qmgr["total_us_per_tran"].as_f64().unwrap_or(0.0) > 0.0,
        "{qmgr}"
    );
    // The temporary reply queues went with their connections: only the request queue is
    // left, and it is empty.
    assert_eq!(queue_depth(&queue.0), 0);
}

#[test]
fn persistent_requests_wait_for_the_broker_and_the_reference_flow_serves_amqp10_too() {
    live!(RabbitMq, Amqp10, PostgreSql);
    let queue = QueueGuard(fresh_queue("amqp10-ref"));
    let table = TableGuard::fresh("amqp10");
    let pg = pg_url();
    let flow = amqp10_flow(
        &queue.0,
        &["--db", &pg, "--db-table", &table.0],
        "processing",
    );
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp10_url(),
        "--request-queue",
        &queue.0,
        "--count",
        "200",
        "--persistent",
    ]);
    drop(flow);
    let rows = pg_scalar(&format!("SELECT count(*) FROM {}", table.0));
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (200, 200, 0, 0, 0));
    assert_eq!(j["settings"]["persistent"], true);
    assert_eq!(rows, Some(200));
}

#[test]
fn a_missing_queue_a_bad_password_and_syncpoint_are_one_line_each() {
    live!(RabbitMq, Amqp10);
    let url = amqp10_url();
    let missing = fresh_queue("amqp10-missing");
    oemputx()
        .args(["--qmgr", &url, "--request-queue", &missing, "--count", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "queue '{missing}' does not exist"
        )))
        .stderr(predicates::str::contains("--declare"));
    oemputx()
        .args([
            "--qmgr",
            "amqp10://guest:WrOnGpAsS@127.0.0.1:5672",
            "--count",
            "1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "refused the login of user 'guest'",
        ))
        .stderr(predicates::str::contains("WrOnGpAsS").not());
    oemputx()
        .args(["--qmgr", &url, "--syncpoint", "--count", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no transaction coordinator"));
    oemputx()
        .args(["--qmgr", &url, "--reply-queue", "R", "--tasks", "2"])
        .args(["--count", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not yet supported on amqp10://"));
    // A style that is not the broker's: RabbitMQ's plugin refuses what it cannot serve,
    // and the error names the address style to check.
    oemputx()
        .args([
            "--qmgr",
            &format!("{url}?address-style=plain"),
            "--count",
            "1",
        ])
        .args(["--wait", "2s"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "address-style=plain is the broker's",
        ));
    oemputx()
        .args(["--qmgr", "amqp10://127.0.0.1:5672?address-style=artemis"])
        .args(["--count", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "address-style=artemis is unknown",
        ));
}

#[test]
fn declare_creates_the_queue_durable_for_a_flow_that_comes_later() {
    live!(RabbitMq, Amqp10);
    let queue = QueueGuard(fresh_queue("amqp10-declare"));
    // Nothing serves the queue yet: the requests wait in it, and time out.
    let (code, j, _) = run_json(&[
        "--qmgr",
        &amqp10_url(),
        "--request-queue",
        &queue.0,
        "--declare",
        "--count",
        "3",
        "--wait",
        "200ms",
    ]);
    assert_eq!(code, 1);
    assert_eq!(integrity5(&j).2, 3, "all timed out");
    assert_eq!(queue_depth(&queue.0), 3, "the requests are in the queue");
}

use predicates::prelude::PredicateBooleanExt;

/// An AMQP 1.0 run through a fault proxy that stalls 2 s in, with `--wait 2s`.
fn stalled_run(
    queue: &str,
) -> (
    std::process::Child,
    FaultProxy,
    std::path::PathBuf,
    tempfile::TempDir,
) {
    let proxy = FaultProxy::start("127.0.0.1:5672");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("stalled.json");
    let child = oemputx_process()
        .env("OEMPUTX_NO_SAVE", "1")
        .args(["--qmgr", &format!("amqp10://guest:guest@{}", proxy.addr())])
        .args([
            "--request-queue",
            queue,
            "--duration",
            "60s",
            "--wait",
            "2s",
        ])
        .args(["--quiet", "--export-json"])
        .arg(&json)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // The stall falls in the measured run, after a few hundred round trips (64 kB; the
    // set-up passes a few kB), not at a fixed time: 2 s after the start once fell in a
    // set-up the host had stretched, and a signal there ends the run with no report.
    proxy.set_after_bytes(64 * 1024, std::time::Duration::from_secs(60), Fault::Stall);
    (child, proxy, json, dir)
}

/// Delete the reply queues a run said it left behind (its path to the broker stalled, so it
/// could not): their names are random, and nothing else would remove them. Returns the names.
fn delete_left_behind(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let left: Vec<String> = text
        .lines()
        .filter_map(|l| l.split("rabbitmqctl delete_queue ").nth(1))
        .map(|q| q.trim().to_string())
        .collect();
    for q in &left {
        delete_queue(q);
    }
    left
}

#[test]
fn a_stalled_connection_ends_the_run_with_its_report_within_a_bounded_time() {
    live!(RabbitMq, Amqp10);
    // After the five timeouts the process stayed up, ignored SIGTERM and saved nothing
    // (issue 30, item 1).
    let queue = QueueGuard(fresh_queue("amqp10-stall"));
    let _flow = amqp10_flow(&queue.0, &["--echo"], "echoing");
    let (child, _proxy, json, _dir) = stalled_run(&queue.0);
    let started = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait");
    // The stalled path cannot delete the task's reply queue: the run names it, with how to
    // delete it by hand (these tests left one on the broker every suite run, unsaid).
    let left = delete_left_behind(&out.stderr);
    assert!(
        left.len() == 1 && left[0].starts_with("oemputx.reply."),
        "{left:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Five --wait timeouts in a row, and the close bounded: well within 30 s.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let j = read_json(&json);
    assert_ne!(j["status"], "completed", "{}", j["status"]);
    assert!(j["integrity"]["matched"].as_u64().unwrap_or(0) > 0);
}

#[test]
fn sigterm_during_a_stall_ends_the_run_at_once_with_its_report() {
    live!(RabbitMq, Amqp10);
    let queue = QueueGuard(fresh_queue("amqp10-stall-term"));
    let _flow = amqp10_flow(&queue.0, &["--echo"], "echoing");
    let (child, _proxy, json, _dir) = stalled_run(&queue.0);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let (out, after) = signal_and_wait(child, nix::sys::signal::Signal::SIGTERM);
    delete_left_behind(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(after < std::time::Duration::from_secs(5), "{:?}", after);
    let j = read_json(&json);
    assert_eq!(j["status"], "interrupted");
}

#[test]
fn an_amqp10_run_on_a_queue_an_amqp091_flow_serves_says_why_no_one_answers() {
    // The 0-9-1 flow cannot read a request sent over AMQP 1.0 and stops; the run used to
    // time out with no word of it (issue 31).
    live!(RabbitMq, Amqp10);
    let q = QueueGuard(fresh_queue("amqp10-clash"));
    declare_queue(&q.0);
    let mut flow = SampleFlow::start(&["--echo", "--input-queue", &q.0], "echoing");
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp10_url(),
        "--request-queue",
        &q.0,
        "--count",
        "3",
        "--wait",
        "1s",
    ]);
    assert_eq!(code, 1, "{err}");
    let detail = j["status_detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("consumer(s) on")
            && detail.contains("cannot read requests sent over AMQP 1.0"),
        "{detail}"
    );
    let (status, lines) = flow
        .wait_exit(std::time::Duration::from_secs(5))
        .expect("the 0-9-1 flow stops");
    assert!(!status.success());
    assert!(
        lines
            .iter()
            .any(|l| l.contains("a message could not be read")),
        "{lines:?}"
    );
}
