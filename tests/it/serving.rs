//! Who served the request queue (issue 31): against the real RabbitMQ, a FLOW group that
//! takes another user's process of the same name and an idle flow of another queue (what a
//! group by name takes on a shared host), and a consumer of another name outside it, are
//! named in the report's text and JSON; a group that serves alone is not.
//!
//! FLOW is given as the test's own processes (pid:N), never by name: `@sample-flow` would
//! also take every other checkout's sample-flow on the host, busy or not, and what the
//! report says would depend on them (issue 43).

use oemputx_test_support::*;

/// A copy of sample-flow under another name: a consumer `@sample-flow` does not take.
fn renamed_flow(dir: &std::path::Path) -> std::path::PathBuf {
    let copy = dir.join("other-consumer");
    std::fs::copy(flow_bin(), &copy).expect("copy sample-flow");
    copy
}

fn run_on(queue: &str, flow: &str) -> (i32, serde_json::Value, String) {
    let out = oemputx()
        .args([
            "--qmgr",
            &amqp_url(),
            "--request-queue",
            queue,
            "--count",
            "300",
        ])
        .args([
            "--group",
            &format!("FLOW={flow}"),
            "--group",
            "QMGR=@rabbitmq",
        ])
        .args(["--export-json", "-", "--no-save"])
        .output()
        .expect("oemputx runs");
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn warnings(j: &serde_json::Value) -> Vec<String> {
    j["accounting"]["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn stray_consumers_of_the_request_queue_are_named_in_text_and_json() {
    live!(RabbitMq);
    let q = QueueGuard(fresh_queue("serving"));
    declare_queue(&q.0);
    let ours = SampleFlow::start(&["--echo", "--input-queue", &q.0], "echoing");
    // Another queue's flow, idle, as another checkout's would be: in FLOW (a group by name
    // takes it), connected to the broker, serving none of this run's requests.
    let idle_q = QueueGuard(fresh_queue("serving-idle"));
    let idle = SampleFlow::start(&["--echo", "--input-queue", &idle_q.0], "echoing");
    // A consumer of another name: not in FLOW.
    let dir = tempfile::tempdir().expect("tempdir");
    let other = renamed_flow(dir.path());
    let mut stray = spawn_written(
        std::process::Command::new(&other)
            .args(["--echo", "--input-queue", &q.0])
            .stderr(std::process::Stdio::null()),
    )
    .expect("the renamed consumer starts");
    // The same name as ours, run by another user (only root can start one).
    let root = nix::unistd::getuid().is_root();
    let mut foreign = root.then(|| {
        std::process::Command::new("setpriv")
            .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
            .arg(flow_bin())
            .args(["--echo", "--input-queue", &q.0])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("setpriv starts sample-flow as nobody")
    });
    // Until the broker counts every consumer.
    let want = if root { 3 } else { 2 };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while consumer_count(&q.0) < want && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut flow = format!("pid:{},pid:{}", ours.pid(), idle.pid());
    if let Some(f) = &foreign {
        flow.push_str(&format!(",pid:{}", f.id()));
    }
    let (code, j, err) = run_on(&q.0, &flow);
    let _ = stray.kill();
    let _ = stray.wait();
    if let Some(f) = foreign.as_mut() {
        let _ = f.kill();
        let _ = f.wait();
    }
    assert_eq!(code, 0, "{err}");
    assert_matches_schema(&j);
    let s = &j["serving"];
    assert_eq!(s["consumers"], want, "{s}");
    let others: Vec<&str> = s["others"]
        .as_array()
        .map(|o| o.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(others.contains(&"other-consumer"), "{s}");
    let w = warnings(&j).join("\n");
    assert!(
        w.contains(&format!("the request queue {} has {want} consumer(s)", q.0))
            && w.contains("other-consumer"),
        "{w}"
    );
    // The idle flow is named, and its connection did not count as one of this queue's.
    assert!(
        w.contains("did next to nothing in the window")
            && w.contains(&format!("{} sample-flow", idle.pid())),
        "{w}"
    );
    if root {
        assert!(
            w.contains("FLOW holds processes of another user") && w.contains("(user nobody)"),
            "{w}"
        );
    }
    // The text report (on stderr, the JSON having stdout) says it too.
    assert!(err.contains("Served by             : "), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("Warning") && l.contains("other-consumer")),
        "{err}"
    );
}

#[test]
fn a_flow_that_serves_its_queue_alone_gets_no_serving_warning() {
    live!(RabbitMq);
    let q = QueueGuard(fresh_queue("serving-alone"));
    declare_queue(&q.0);
    let flow = SampleFlow::start(&["--echo", "--input-queue", &q.0], "echoing");
    let out = oemputx()
        .args([
            "--qmgr",
            &amqp_url(),
            "--request-queue",
            &q.0,
            "--count",
            "300",
        ])
        .args([
            "--group",
            &format!("FLOW=pid:{}", flow.pid()),
            "--group",
            "QMGR=@rabbitmq",
        ])
        .args(["--no-save"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let served = text
        .lines()
        .find(|l| l.starts_with("Served by"))
        .unwrap_or_default();
    assert!(
        served.contains(
            "1 consumer(s) by the broker's count; FLOW 1 process(es) holding 1 connection(s)"
        ),
        "{text}"
    );
    assert!(
        !text.contains("consumer(s) but FLOW") && !text.contains("another user"),
        "{text}"
    );
}

#[test]
fn a_built_in_profile_reaches_the_broker_from_any_directory() {
    live!(RabbitMq);
    let q = QueueGuard(fresh_queue("builtin"));
    declare_queue(&q.0);
    let _flow = SampleFlow::start(&["--echo", "--input-queue", &q.0], "echoing");
    let cwd = tempfile::tempdir().expect("tempdir");
    let out = oemputx()
        .current_dir(cwd.path())
        .args([
            "--qmgr",
            "RABBIT",
            "--request-queue",
            &q.0,
            "--count",
            "100",
        ])
        .args(["--export-json", "-", "--quiet", "--no-save"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["settings"]["profile"], "RABBIT");
    assert_eq!(j["integrity"]["matched"], 100);
}
