//! oemputx against the real NATS server on 127.0.0.1:4222 (or $OEMPUTX_TEST_NATS), with
//! fresh subjects and sample-flow serving them. Core NATS keeps nothing, so there is
//! nothing to clean up after a test but its processes; a JetStream stream a test makes is
//! deleted when its guard drops.

use oemputx_test_support::*;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn nats_url() -> String {
    std::env::var("OEMPUTX_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// sample-flow serving `subject` on the test server.
fn nats_flow(subject: &str, extra: &[&str], ready_word: &str) -> SampleFlow {
    let url = nats_url();
    let mut args = vec!["--url", url.as_str(), "--input-queue", subject];
    args.extend_from_slice(extra);
    SampleFlow::start(&args, ready_word)
}

#[test]
fn four_tasks_round_trip_every_request_and_the_server_s_cpu_is_reported() {
    live!(Nats);
    let subject = fresh_queue("nats-echo");
    let _flow = nats_flow(&subject, &["--echo", "--threads", "2"], "echoing");
    let (code, j, err) = run_json(&[
        "--qmgr",
        &nats_url(),
        "--request-queue",
        &subject,
        "--count",
        "4000",
        "--tasks",
        "4",
        "--msgs-per-loop",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (4000, 4000, 0, 0, 0));
    assert_eq!(j["settings"]["transport"], "nats", "{}", j["settings"]);
    // The default group of a NATS run: the server, which did work for every message.
    let qmgr = group(&j, "QMGR");
    assert!(
        qmgr["total_us_per_tran"].as_f64().unwrap_or(0.0) > 0.0,
        "{qmgr}"
    );
    assert!(
        j["processes"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("nats-server.")))),
        "{}",
        j["processes"]
    );
}

#[test]
fn the_reference_flow_with_postgresql_serves_nats_too() {
    live!(Nats, PostgreSql);
    let subject = fresh_queue("nats-ref");
    let table = TableGuard::fresh("nats");
    let pg = pg_url();
    let flow = nats_flow(
        &subject,
        &["--db", &pg, "--db-table", &table.0, "--threads", "2"],
        "processing",
    );
    let (code, j, err) = run_json(&[
        "--qmgr",
        &nats_url(),
        "--request-queue",
        &subject,
        "--count",
        "300",
        "--tasks",
        "2",
    ]);
    drop(flow);
    let rows = pg_scalar(&format!("SELECT count(*) FROM {}", table.0));
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (300, 300, 0, 0, 0));
    // One row per request, and one for prepare's probe is not there: the probe is an
    // empty request the flow turns away.
    assert_eq!(rows, Some(300));
}

#[test]
fn no_responders_is_one_line_before_the_run_naming_the_subject() {
    live!(Nats);
    let subject = fresh_queue("nats-nobody");
    let started = Instant::now();
    oemputx()
        .args(["--qmgr", &nats_url(), "--request-queue", &subject])
        .args(["--count", "10", "--wait", "60s"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "no responders on subject '{subject}'"
        )))
        .stderr(predicates::str::contains("sample-flow --url"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not 60 s of waiting"
    );
}

#[test]
fn what_nats_cannot_do_is_a_usage_error_with_the_way_out() {
    let url = nats_url();
    for (args, says) in [
        (vec!["--syncpoint"], "no units of work"),
        (vec!["--reply-queue", "R"], "its own inbox"),
        (vec!["--request-queue", "a b"], "white space"),
        (vec!["--request-queue", "orders.*"], "wildcard"),
        (vec!["--request-queue", "orders..new"], "empty token"),
    ] {
        oemputx()
            .args(["--qmgr", &url, "--count", "1"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    // Nothing listens: exit 2, naming the server.
    let port = free_port();
    oemputx()
        .args([
            "--qmgr",
            &format!("nats://127.0.0.1:{port}"),
            "--count",
            "1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot reach nats://127.0.0.1"));
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A nats-server of the test's own (no JetStream), stopped when dropped.
struct OwnServer {
    child: Child,
    port: u16,
}

impl OwnServer {
    /// One that wants a user and password.
    fn with_password() -> OwnServer {
        OwnServer::start(&["--user", "app", "--pass", "right-one"])
    }

    fn start(args: &[&str]) -> OwnServer {
        let port = free_port();
        let child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is installed (ci/services.sh installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        OwnServer { child, port }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_refused_login_says_so_and_never_prints_the_password() {
    live!(NatsServer);
    let server = OwnServer::with_password();
    let out = oemputx()
        .args([
            "--qmgr",
            &format!("nats://app:SeCrEt99@127.0.0.1:{}", server.port),
            "--count",
            "1",
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("refused the login of user 'app'"), "{text}");
    assert!(!text.contains("SeCrEt99"), "{text}");
}

/// Run `f` against the test server on a runtime of its own.
fn with_jetstream<T>(f: impl AsyncFnOnce(async_nats::jetstream::Context) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let client = async_nats::connect(nats_url().as_str())
            .await
            .expect("the test NATS server answers");
        f(async_nats::jetstream::new(client)).await
    })
}

/// Messages the stream holds now.
fn stream_messages(name: &str) -> u64 {
    let name = name.to_string();
    with_jetstream(async move |js| {
        let mut stream = js.get_stream(&name).await.expect("the stream exists");
        stream.info().await.expect("stream info").state.messages
    })
}

/// The stream oemputx declares for a subject, deleted when dropped.
struct StreamGuard(String);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let name = self.0.clone();
        with_jetstream(async move |js| {
            let _ = js.delete_stream(&name).await;
        });
    }
}

#[test]
fn persistent_requests_go_through_a_jetstream_work_queue_and_each_is_answered_once() {
    live!(Nats);
    let subject = fresh_queue("nats-js");
    let stream = StreamGuard(oemputx::transport::nats::jetstream::stream_name(&subject));
    let url = nats_url();
    let persistent = |extra: &[&str]| {
        let mut cmd = oemputx();
        cmd.args(["--qmgr", &url, "--request-queue", &subject, "--persistent"])
            .args(["--count", "10", "--wait", "20s"])
            .args(extra);
        cmd
    };
    // No stream yet: one line naming --declare.
    persistent(&[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "no JetStream stream captures subject '{subject}'"
        )))
        .stderr(predicates::str::contains("--declare"));
    // Declared, but nothing reads it: one line naming the flow's --jetstream.
    persistent(&["--declare"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "nothing reads JetStream stream {}",
            stream.0
        )))
        .stderr(predicates::str::contains("--jetstream"));

    let flow = nats_flow(
        &subject,
        &["--echo", "--jetstream", "--threads", "2"],
        "echoing",
    );
    let (code, j, err) = run_json(&[
        "--qmgr",
        &url,
        "--request-queue",
        &subject,
        "--persistent",
        "--count",
        "600",
        "--tasks",
        "2",
        "--msgs-per-loop",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (600, 600, 0, 0, 0));
    assert_eq!(
        j["settings"]["persistent_store"],
        format!(
            "JetStream stream {} (workqueue retention, file storage, 1 replica)",
            stream.0
        ),
        "{}",
        j["settings"]
    );
    // The flow acknowledged every request after replying: the work queue is empty.
    let deadline = Instant::now() + Duration::from_secs(5);
    while stream_messages(&stream.0) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stream_messages(&stream.0), 0);
    drop(flow);

    // Core NATS on a subject the stream captures would count its acknowledgements as
    // replies: refused, naming --persistent.
    oemputx()
        .args(["--qmgr", &url, "--request-queue", &subject, "--count", "5"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "captured by JetStream stream {}",
            stream.0
        )))
        .stderr(predicates::str::contains("--persistent"));
}

#[test]
fn persistent_on_a_server_without_jetstream_names_the_fix() {
    live!(NatsServer);
    let server = OwnServer::start(&[]);
    oemputx()
        .args([
            "--qmgr",
            &format!("nats://127.0.0.1:{}", server.port),
            "--persistent",
            "--declare",
            "--count",
            "1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("JetStream is not enabled"))
        .stderr(predicates::str::contains("-js"));
}

/// A certificate authority and a server certificate for 127.0.0.1, made with openssl in
/// `dir`: (CA file, server certificate, server key).
fn make_certificates(dir: &std::path::Path) -> (String, String, String) {
    let path = |f: &str| dir.join(f).display().to_string();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl is installed (ci/services.sh installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca_args = [
        &["req", "-x509"][..],
        &ec[..],
        &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"],
        &["-subj", "/CN=oemputx test CA"],
    ];
    openssl(&ca_args.concat());
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("write");
    openssl(
        &[
            &["req"][..],
            &ec[..],
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.pem",
    ]);
    (path("ca.pem"), path("server.pem"), path("server.key"))
}

#[test]
fn tls_urls_round_trip_against_a_server_with_a_certificate_the_client_trusts() {
    live!(NatsServer);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (ca, cert, key) = make_certificates(dir.path());
    let server = OwnServer::start(&["--tls", "--tlscert", &cert, "--tlskey", &key]);
    let url = format!("tls://127.0.0.1:{}", server.port);
    let subject = fresh_queue("nats-tls");
    // async-nats trusts the system's roots, which SSL_CERT_FILE names.
    let trust = [("SSL_CERT_FILE", ca.as_str())];
    let _flow = SampleFlow::start_with_env(
        &["--echo", "--url", &url, "--input-queue", &subject],
        &trust,
        "echoing",
    );
    let out = oemputx()
        .env("SSL_CERT_FILE", &ca)
        .args(["--qmgr", &url, "--request-queue", &subject])
        .args([
            "--count",
            "200",
            "--tasks",
            "2",
            "--export-json",
            "-",
            "--quiet",
        ])
        .output()
        .expect("oemputx runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(integrity5(&j), (200, 200, 0, 0, 0));
    assert_eq!(j["settings"]["qmgr"], url);

    // Without the CA the certificate is not trusted: one line, exit 2.
    oemputx()
        .env("SSL_CERT_FILE", dir.path().join("none.pem"))
        .args(["--qmgr", &url, "--request-queue", &subject, "--count", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot reach tls://127.0.0.1"))
        .stderr(predicates::str::contains("trusted"));
}
