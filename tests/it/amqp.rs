//! oemputx against the real RabbitMQ on 127.0.0.1:5672 (or $OEMPUTX_TEST_AMQP), with fresh
//! queue names and a responder started per test.

use oemputx_test_support::*;

use amqprs::BasicProperties;
use amqprs::channel::{BasicConsumeArguments, BasicPublishArguments, QueueDeclareArguments};
use amqprs::connection::{Connection, OpenConnectionArguments};

fn integrity(j: &serde_json::Value) -> (u64, u64, u64, u64) {
    let i = &j["integrity"];
    let n = |k: &str| i[k].as_u64().unwrap_or(u64::MAX);
    (n("sent"), n("matched"), n("timed_out"), n("unmatched"))
}

#[test]
fn one_task_round_trips_every_request_through_the_echo_flow() {
    live!(RabbitMq);
    let q = fresh_queue("one");
    let _flow = EchoFlow::start(&q, &[]);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "300",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["schema"], "oemputx.report/2");
    assert_eq!(integrity(&j), (300, 300, 0, 0));
    assert_eq!(j["transactions"], 300);
    assert!(j["rate_tps"].as_f64().unwrap_or(0.0) > 0.0);
    assert!(j["app_cpu"]["us_per_tran"].as_f64().unwrap_or(0.0) > 0.0);
    assert!(
        j["round_trip_us"]["p99"].as_f64().unwrap_or(0.0)
            >= j["round_trip_us"]["p50"].as_f64().unwrap_or(f64::MAX)
    );
    assert_eq!(j["settings"]["qmgr"], "amqp://guest:***@127.0.0.1:5672/%2F");
}

#[test]
fn four_tasks_on_a_shared_named_reply_queue_get_their_own_replies() {
    live!(RabbitMq);
    let q = fresh_queue("shared-in");
    let reply = fresh_queue("shared-out");
    let _cleanup = QueueGuard(reply.clone());
    let _flow = EchoFlow::start(&q, &["--threads", "2"]);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--reply-queue",
        &reply,
        "--declare",
        "--count",
        "400",
        "--tasks",
        "4",
        "--msgs-per-loop",
        "3",
        "--wait",
        "10s",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity(&j), (400, 400, 0, 0));
    assert_eq!(
        j["per_task_transactions"],
        serde_json::json!([100, 100, 100, 100])
    );
}

#[test]
fn a_named_reply_queue_is_cleared_at_start_and_the_count_reported() {
    live!(RabbitMq);
    let q = fresh_queue("clear-in");
    let reply = fresh_queue("clear-out");
    let _cleanup = QueueGuard(reply.clone());
    declare_queue(&reply);
    // Leave three stale replies behind, as a crashed earlier run would.
    let _flow = EchoFlow::start(&q, &[]);
    let (code, _, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--reply-queue",
        &reply,
        "--count",
        "3",
        "--wait",
        "1s",
        "--match",
        "any",
        "--no-clear",
    ]);
    assert_eq!(code, 0, "{err}");
    publish_raw(&reply, 3);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--reply-queue",
        &reply,
        "--count",
        "10",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["reply_queue_cleared"], 3);
    assert_eq!(integrity(&j), (10, 10, 0, 0));
}

#[test]
fn syncpoint_and_persistent_runs_complete() {
    live!(RabbitMq);
    let q = fresh_queue("sync");
    let _flow = EchoFlow::start(&q, &[]);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "60",
        "--syncpoint",
        "--persistent",
        "--msgs-per-loop",
        "4",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity(&j), (60, 60, 0, 0));
    assert_eq!(j["settings"]["syncpoint"], true);
}

#[test]
fn without_a_responder_every_request_times_out_and_the_run_exits_1_with_its_report() {
    live!(RabbitMq);
    let q = fresh_queue("silent");
    let _cleanup = QueueGuard(q.clone());
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--declare",
        "--count",
        "3",
        "--wait",
        "150ms",
    ]);
    let left = queue_depth(&q);
    assert_eq!(code, 1, "{err}");
    assert_eq!(j["status"], "timed_out");
    assert_eq!(integrity(&j), (3, 0, 3, 0));
    assert_eq!(left, 3, "the three requests wait on the queue");
}

#[test]
fn without_a_responder_a_long_run_stops_after_a_few_timeouts_in_a_row_and_says_why() {
    live!(RabbitMq);
    // 2000 requests to nobody used to wait --wait each (issue 19, item 5).
    let q = fresh_queue("dead");
    let _cleanup = QueueGuard(q.clone());
    let started = std::time::Instant::now();
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--declare",
        "--count",
        "2000",
        "--wait",
        "200ms",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(j["status"], "stopped_after_timeouts", "{}", j["status"]);
    assert_eq!(j["integrity"]["timed_out"], 5);
    let detail = j["status_detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("in a row") && detail.contains("--max-timeouts"),
        "{detail}"
    );
    // Under --quiet the reason is on stderr too: it was nowhere (issue 30, item 21).
    assert!(
        err.contains("the run did not complete") && err.contains(detail),
        "{err}"
    );
}

#[test]
fn a_missing_request_queue_is_a_usage_error_not_a_silent_declare() {
    live!(RabbitMq);
    let q = fresh_queue("missing");
    // Waited for at most --wait (its flow may be starting), then an error.
    let (code, _, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "1",
        "--wait",
        "1s",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("does not exist") && err.contains("--declare"),
        "{err}"
    );
}

#[test]
fn a_wrong_password_is_refused_without_showing_it() {
    live!(RabbitMq);
    let url = amqp_url().replacen(":guest@", ":not-the-password@", 1);
    let (code, _, err) = run_json(&["--qmgr", &url, "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refused the login"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");
}

/// A responder written the way other RPC servers are (not sample-flow): it answers with
/// correlation_id = the request's message_id, the MQ habit, and auto-acknowledges.
#[test]
fn a_foreign_responder_that_copies_message_id_works() {
    live!(RabbitMq);
    let q = fresh_queue("foreign");
    let _cleanup = QueueGuard(q.clone());
    declare_queue(&q);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let responder = {
        let (q, stop) = (q.clone(), stop.clone());
        std::thread::spawn(move || foreign_responder(&q, &stop))
    };
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "200",
        "--tasks",
        "2",
    ]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = responder.join();
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity(&j), (200, 200, 0, 0));
}

fn open_args() -> OpenConnectionArguments {
    let ep = oemputx::transport::amqp::url::AmqpEndpoint::parse(&amqp_url()).expect("amqp url");
    let mut args = OpenConnectionArguments::new(&ep.host, ep.port, &ep.user, ep.password.expose());
    args.virtual_host(&ep.vhost);
    args
}

fn foreign_responder(q: &str, stop: &std::sync::atomic::AtomicBool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let conn = Connection::open(&open_args()).await.expect("connect");
        let ch = conn.open_channel(None).await.expect("channel");
        let (_, mut rx) = ch
            .basic_consume_rx(
                BasicConsumeArguments::new(q, "foreign")
                    .manual_ack(false)
                    .finish(),
            )
            .await
            .expect("consume");
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok(Some(m)) =
                tokio::time::timeout(std::time::Duration::from_millis(100), rx.recv()).await
            else {
                continue;
            };
            let props = m.basic_properties.unwrap_or_default();
            let (Some(reply_to), Some(id)) = (props.reply_to(), props.message_id()) else {
                continue;
            };
            let mut reply = BasicProperties::default();
            reply.with_correlation_id(id);
            ch.basic_publish(
                reply.finish(),
                b"<ok/>".to_vec(),
                BasicPublishArguments::new("", reply_to),
            )
            .await
            .expect("publish");
        }
        let _ = conn.close().await;
    });
}

fn publish_raw(q: &str, n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let conn = Connection::open(&open_args()).await.expect("connect");
        let ch = conn.open_channel(None).await.expect("channel");
        ch.queue_declare(QueueDeclareArguments::new(q).passive(true).finish())
            .await
            .expect("queue exists");
        for i in 0..n {
            let mut p = BasicProperties::default();
            p.with_correlation_id(&format!("stale-{i}"));
            ch.basic_publish(
                p.finish(),
                b"stale".to_vec(),
                BasicPublishArguments::new("", q),
            )
            .await
            .expect("publish");
        }
        // Publishing is asynchronous: a round trip makes sure the broker has them.
        ch.queue_declare(QueueDeclareArguments::new(q).passive(true).finish())
            .await
            .expect("sync");
        let _ = conn.close().await;
    });
}

/// A TCP proxy to the test broker that cuts every connection when `cut` is set.
fn cutting_proxy(cut: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u16 {
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(broker) = TcpStream::connect("127.0.0.1:5672") else {
                continue;
            };
            let pipes = [
                (
                    client.try_clone().expect("clone"),
                    broker.try_clone().expect("clone"),
                ),
                (
                    broker.try_clone().expect("clone"),
                    client.try_clone().expect("clone"),
                ),
            ];
            for (mut from, mut to) in pipes {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
            let cut = cut.clone();
            std::thread::spawn(move || {
                while !cut.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let _ = client.shutdown(Shutdown::Both);
                let _ = broker.shutdown(Shutdown::Both);
            });
        }
    });
    port
}

#[test]
fn a_lost_connection_is_reported_as_lost_not_as_a_closed_consumer() {
    live!(RabbitMq);
    // It said "the broker closed the reply consumer" (issue 19, item 15).
    let q = fresh_queue("cut");
    let _cleanup = QueueGuard(q.clone());
    let _flow = EchoFlow::start(&q, &[]);
    let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = cutting_proxy(cut.clone());
    let cutter = {
        let cut = cut.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            cut.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    };
    let (code, j, err) = run_json(&[
        "--qmgr",
        &format!("amqp://guest:guest@127.0.0.1:{port}/%2f"),
        "--request-queue",
        &q,
        "--duration",
        "20s",
        "--wait",
        "2s",
    ]);
    let _ = cutter.join();
    assert_eq!(code, 1, "{err}");
    let detail = j["status_detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("connection to the broker was lost"),
        "{detail}"
    );
    assert!(
        j["transactions"].as_u64().unwrap_or(0) > 0,
        "the report covers the run before the cut"
    );
}

#[test]
fn ctrl_c_mid_run_on_rabbitmq_exits_130_with_every_request_accounted_for() {
    live!(RabbitMq);
    let q = fresh_queue("int");
    let _flow = EchoFlow::start(&q, &[]);
    let url = amqp_url();
    let child = oemputx_process()
        .env("OEMPUTX_NO_SAVE", "1")
        .args(["--qmgr", &url, "--request-queue", &q, "--duration", "60s"])
        .args(["--tasks", "2", "--export-json", "-", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signal");
    let out = child.wait_with_output().expect("wait");
    assert_sigint_reraised(&out.status, "");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let (sent, matched, timed_out, unmatched) = integrity(&j);
    assert!(sent > 0, "{}", j["integrity"]);
    // Every request sent is matched or counted as abandoned at the interrupt; none is lost.
    let abandoned = j["integrity"]["abandoned"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(matched + timed_out + abandoned, sent, "{}", j["integrity"]);
    assert_eq!(unmatched, 0);
}

#[test]
fn a_flow_that_replies_twice_makes_the_run_exit_1_with_a_warning() {
    live!(RabbitMq);
    let q = fresh_queue("twice");
    let _responder = BadResponder::start(&q, Misbehaviour::ReplyTwice);
    let (code, j, err) = run_json(&[
        "--qmgr",
        &amqp_url(),
        "--request-queue",
        &q,
        "--count",
        "300",
        "--wait",
        "5s",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(j["status"], "completed");
    assert_eq!(j["integrity"]["matched"], 300);
    assert!(j["integrity"]["duplicates"].as_u64().unwrap_or(0) >= 290);
    assert!(err.contains("replied more than once"), "{err}");
    let warnings = j["accounting"]["warnings"].to_string();
    assert!(warnings.contains("duplicate replies"), "{warnings}");
}

/// A run that no one answers says, within the run, what it waits on and who consumes it:
/// once, after the first request has waited 5 s with no reply (issue 43: a profile and a
/// flow on different topics waited 181 s for 0 transactions, saying nothing until the
/// end). A fresh queue with no consumer; the run still ends by itself (--max-timeouts 1).
#[test]
fn a_run_with_no_reply_names_the_queue_the_broker_and_its_consumers_within_the_run() {
    live!(RabbitMq);
    use std::io::{BufRead, BufReader};
    let q = QueueGuard(fresh_queue("noreply"));
    let started = std::time::Instant::now();
    let mut child = oemputx_process()
        .args(["--qmgr", &amqp_url(), "--request-queue", &q.0, "--declare"])
        .args(["--count", "3", "--wait", "9s", "--max-timeouts", "1"])
        .args(["--quiet", "--no-save"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oemputx starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send((started.elapsed(), line));
        }
    });
    let mut seen = Vec::new();
    let deadline = started + std::time::Duration::from_secs(50);
    let status = loop {
        while let Ok(l) = lines.try_recv() {
            seen.push(l);
        }
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not end by itself: {seen:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let ended = started.elapsed();
    while let Ok(l) = lines.recv_timeout(std::time::Duration::from_secs(2)) {
        seen.push(l);
    }
    let all = seen
        .iter()
        .map(|(_, l)| l.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    // Stopped after its one allowed timeout: exit 1, about 9 s in.
    assert_eq!(status.code(), Some(1), "{all}");
    let hints: Vec<&(std::time::Duration, String)> = seen
        .iter()
        .filter(|(_, l)| l.contains("no reply yet after 5 s"))
        .collect();
    assert_eq!(hints.len(), 1, "once: {all}");
    let (at, hint) = hints[0];
    // Not before the 5 s, and while the run still waited (its one request waits 9 s).
    assert!(
        *at >= std::time::Duration::from_secs(5) && *at < ended,
        "hint at {at:?}, the run ended at {ended:?}: {all}"
    );
    assert!(
        hint.contains(&format!(
            "requests put to {} on amqp://guest:***@127.0.0.1:5672",
            q.0
        )) && !hint.contains("guest:guest"),
        "{hint}"
    );
    assert!(
        hint.contains(&format!("consumers of {}: 0 by the broker's count", q.0)),
        "{hint}"
    );
    assert!(
        hint.contains("connected to 127.0.0.1:5672 from this host: "),
        "{hint}"
    );
}

#[test]
fn a_flow_started_just_before_the_run_is_waited_for_until_it_declares_its_queue() {
    // As CI scripts do it: the flow started in the background, the run at once. The queue
    // does not exist yet when oemputx looks: it says so and waits (at most --wait).
    live!(RabbitMq);
    let q = fresh_queue("late-flow");
    let child = oemputx_process()
        .args(["--qmgr", &amqp_url(), "--request-queue", &q])
        .args(["--count", "100", "--no-save", "--quiet", "--wait", "30s"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oemputx starts");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let flow = EchoFlow::start(&q, &[]);
    let out = child.wait_with_output().expect("oemputx ends");
    drop(flow);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("queue '{q}' does not exist yet")) && err.contains("--declare"),
        "{err}"
    );
}

#[test]
fn a_queue_nobody_declares_is_an_error_after_wait_and_a_signal_ends_the_wait_with_130() {
    live!(RabbitMq);
    let q = fresh_queue("nobody");
    let started = std::time::Instant::now();
    let out = oemputx()
        .args(["--qmgr", &amqp_url(), "--request-queue", &q])
        .args(["--count", "10", "--no-save", "--quiet", "--wait", "1s"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("queue '{q}' does not exist on")),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // SIGTERM during a long wait: ended at once, as an interrupted run.
    let child = oemputx_process()
        .args(["--qmgr", &amqp_url(), "--request-queue", &q])
        .args(["--count", "10", "--no-save", "--quiet", "--wait", "120s"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oemputx starts");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signalled");
    let stopped = std::time::Instant::now();
    let out = child.wait_with_output().expect("ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!("interrupted while waiting for queue '{q}'")),
        "{err}"
    );
    assert!(stopped.elapsed() < std::time::Duration::from_secs(10));
}

/// Every reply path AMQP 0-9-1 has, and publisher confirms, against a responder that is not
/// oemputx's client (the C hold-out on librabbitmq, which replies to whatever `reply_to`
/// names): each run answers every request, and its report names the path.
#[test]
fn direct_reply_to_a_queue_per_request_and_per_task_each_match_every_reply() {
    live!(RabbitMq, CAmqp);
    let responder = BurnResponder::start(&fresh_queue("paths"), 5.0, 0.0, 0.0);
    let runs: [(&[&str], &str); 4] = [
        (&["--reply-queue", "amq.rabbitmq.reply-to"], "direct"),
        (&["--reply-queue", "per-request"], "per-request"),
        (&["--reply-queue", "per-task"], "per-task"),
        (&["--confirm-window", "1", "--persistent"], "per-task"),
    ];
    // 300 requests a path: what is checked is that every reply is matched, and 1,000 a path
    // made this the suite's tenth-longest test (47 s: a queue declared per request, a confirm
    // awaited per persistent message).
    for (options, path) in runs {
        let out = oemputx()
            .args(["--qmgr", &amqp_url(), "--request-queue", &responder.queue])
            .args([
                "--count",
                "300",
                "--no-save",
                "--export-json",
                "-",
                "--quiet",
            ])
            .args(options)
            .output()
            .expect("oemputx runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{options:?}: {err}");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
        assert_eq!(
            integrity(&j),
            (300, 300, 0, 0),
            "{options:?}: {:#}",
            j["integrity"]
        );
        assert_eq!(j["settings"]["reply_path"], path, "{options:?}");
    }
}

/// What a reply path or confirms cannot be combined with is refused before anything runs,
/// naming the option: on another transport, and direct reply-to under syncpoint.
#[test]
fn reply_paths_and_confirms_are_refused_where_they_cannot_work() {
    let refused = |args: &[&str], flag: &str| {
        let out = oemputx()
            .args(args)
            .args(["--count", "1", "--no-save"])
            .output()
            .expect("oemputx runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    };
    // The embedded queue manager: no direct reply-to, per-request or confirms.
    refused(&["--reply-queue", "amq.rabbitmq.reply-to"], "--reply-queue");
    refused(&["--reply-queue", "per-request"], "--reply-queue");
    refused(&["--confirm-window", "4"], "--confirm-window");
    refused(&["--confirm-window", "0"], "--confirm-window");
    let url = amqp_url();
    refused(
        &[
            "--qmgr",
            &url,
            "--reply-queue",
            "amq.rabbitmq.reply-to",
            "--syncpoint",
        ],
        "--syncpoint",
    );
    refused(
        &["--qmgr", &url, "--confirm-window", "1", "--syncpoint"],
        "--confirm-window",
    );
}

/// Whether RabbitMQ takes a declare of `q` as a queue of `kind` (it refuses one that
/// differs from the queue there: 406 PRECONDITION_FAILED).
fn declares_as(q: &str, kind: &str) -> bool {
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(async {
            let conn = Connection::open(&open_args()).await.expect("connect");
            let ch = conn.open_channel(None).await.expect("channel");
            let mut args = amqprs::FieldTable::new();
            args.insert(
                "x-queue-type".try_into().expect("a field name"),
                kind.into(),
            );
            let taken = ch
                .queue_declare(
                    QueueDeclareArguments::durable_client_named(q)
                        .arguments(args)
                        .finish(),
                )
                .await
                .is_ok();
            let _ = conn.close().await;
            taken
        })
}

/// `--queue-type quorum --declare` makes the request queue a quorum queue, sample-flow
/// `--queue-type quorum` serves it, and the report says so in its settings, its text and on
/// every row; a run asking for a classic queue of the same name is refused, naming why.
#[test]
fn a_quorum_request_queue_is_declared_served_reported_and_a_classic_ask_refused() {
    live!(RabbitMq);
    let q = fresh_queue("quorum");
    let _cleanup = QueueGuard(q.clone());
    let url = amqp_url();
    let base = ["--qmgr", url.as_str(), "--request-queue", q.as_str()];
    // No flow yet: the one request times out, and the queue stays, made by oemputx.
    let (code, j, err) = run_json(
        &[
            &base[..],
            &[
                "--declare",
                "--queue-type",
                "quorum",
                "--count",
                "1",
                "--wait",
                "1s",
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(j["settings"]["queue_type"], "quorum", "{err}");
    assert_matches_schema(&j);
    assert!(declares_as(&q, "quorum") && !declares_as(&q, "classic"));
    let _flow = EchoFlow::start(&q, &["--queue-type", "quorum"]);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let tsv = dir.path().join("r.tsv");
    let out = oemputx()
        .args(base)
        .args(["--queue-type", "quorum", "--count", "200", "--no-save"])
        .arg("--export-tsv")
        .arg(&tsv)
        .output()
        .expect("oemputx runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("(a quorum queue)"), "{text}");
    let rows = std::fs::read_to_string(&tsv).expect("the TSV");
    let mut lines = rows.lines().map(|l| l.split('\t').collect::<Vec<_>>());
    let header = lines.next().expect("a header");
    let at = header
        .iter()
        .position(|h| *h == "queue_type")
        .expect("a queue_type column");
    for row in lines {
        assert_eq!(row[at], "quorum", "{rows}");
    }
    let (code, _, err) =
        run_json(&[&base[..], &["--queue-type", "classic", "--count", "1"]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("another kind") && err.contains(&q), "{err}");
}
