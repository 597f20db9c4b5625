//! Broker clusters and failover (issue 63): a three-node NATS cluster of the test's own
//! (ci/cluster-lab.sh on free ports, so that no other test's cluster loses a node), a
//! hold-out responder on the third node (the test's own async-nats client, not sample-flow),
//! and the node oemputx is connected to lost in the middle of a paced run.

use oemputx_test_support::*;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A cluster lab of the test's own: three nodes on free ports, taken down when dropped.
struct Lab {
    ports: Vec<u16>,
    dir: tempfile::TempDir,
    /// `nats` or `rabbitmq`.
    kind: &'static str,
}

impl Lab {
    fn up() -> Lab {
        Lab::start("nats", 2000)
    }

    /// A lab of `kind` whose nodes' second ports (routes, Erlang distribution) are their
    /// client ports + `gap`. The ports are drawn below the kernel's ephemeral range
    /// (32768 up), where other tests' listeners on port 0 and outgoing connections land;
    /// a port taken between the draw and the start is drawn again, three times at most.
    fn start(kind: &'static str, gap: u16) -> Lab {
        let mut said_last = String::new();
        for attempt in 0..3u64 {
            let ports = lab_ports(gap, attempt);
            let lab = Lab {
                ports,
                dir: tempfile::tempdir().expect("temp dir"),
                kind,
            };
            let out = lab.script(&["up", kind]);
            if out.status.success() {
                return lab;
            }
            said_last = said(&out);
        }
        panic!("the {kind} lab did not come up: {said_last}")
    }

    fn script(&self, args: &[&str]) -> Output {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ci/cluster-lab.sh");
        let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
        Command::new("bash")
            .arg(script)
            .args(args)
            .env("OEMPUTX_CLUSTER_PORTS", ports.join(" "))
            .env("OEMPUTX_CLUSTER_DIR", self.dir.path())
            .output()
            .expect("bash runs")
    }

    /// `kill` (SIGKILL), `stop` (SIGTERM) or `start` node `n` (1-3).
    fn node(&self, what: &str, n: usize) {
        let out = self.script(&[what, self.kind, &n.to_string()]);
        assert!(out.status.success(), "{what} node {n}: {}", said(&out));
    }

    /// The --qmgr naming every node, the first first.
    fn url(&self) -> String {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect();
        nodes.join(",")
    }

    fn address(&self, n: usize) -> String {
        format!("127.0.0.1:{}", self.ports[n - 1])
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let kind = self.kind;
        let _ = self.script(&["down", kind]);
    }
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A responder of the test's own on one node: it answers every request on `subject` with
/// its body, and counts what it answered.
struct Responder {
    answered: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Responder {
    fn start(url: &str, subject: &str, asker: &str) -> Responder {
        let (answered, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let (url, subject) = (url.to_string(), subject.to_string());
            let (answered, stop) = (answered.clone(), stop.clone());
            std::thread::spawn(move || serve(&url, &subject, &answered, &stop, &ready_tx))
        };
        ready_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the responder subscribed");
        // The subscription is known across the cluster before the run asks for it.
        wait_for_interest(asker, subject);
        Responder {
            answered,
            stop,
            thread: Some(thread),
        }
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn serve(
    url: &str,
    subject: &str,
    answered: &AtomicU64,
    stop: &AtomicBool,
    ready: &std::sync::mpsc::Sender<()>,
) {
    use futures_util::StreamExt;
    runtime().block_on(async {
        let client = async_nats::connect(url)
            .await
            .expect("the responder connects");
        let mut sub = client
            .subscribe(subject.to_string())
            .await
            .expect("subscribes");
        client.flush().await.expect("flushes");
        let _ = ready.send(());
        while !stop.load(Ordering::Relaxed) {
            let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(100), sub.next()).await
            else {
                continue;
            };
            if let Some(reply) = m.reply
                && client.publish(reply, m.payload).await.is_ok()
            {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
}

/// Wait until a request on `subject` through `url` gets an answer (the responder's
/// interest has crossed the cluster's routes).
fn wait_for_interest(url: &str, subject: &str) {
    runtime().block_on(async {
        let client = async_nats::connect(url).await.expect("connects");
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let asked = tokio::time::timeout(
                Duration::from_secs(1),
                client.request(subject.to_string(), "ping".into()),
            )
            .await;
            if matches!(asked, Ok(Ok(_))) {
                return;
            }
            assert!(Instant::now() < until, "no answer on {subject} via {url}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

/// oemputx at 200 msg/s over `tasks` tasks for `duration` against `url`'s nodes, its JSON
/// report in `json` and its TSV beside it (`.tsv`).
fn paced_run(
    url: &str,
    subject: &str,
    tasks: &str,
    duration: &str,
    json: &std::path::Path,
) -> std::process::Child {
    paced_run_with(url, subject, tasks, duration, json, &[])
}

/// [`paced_run`] with more options (`--persistent`, say).
fn paced_run_with(
    url: &str,
    subject: &str,
    tasks: &str,
    duration: &str,
    json: &std::path::Path,
    extra: &[&str],
) -> std::process::Child {
    oemputx_process()
        .args(["--qmgr", url, "--request-queue", subject])
        .args(extra)
        .args(["--rate", "200", "--tasks", tasks, "--duration", duration])
        .args(
            ["--wait", "2s"]
                .iter()
                .filter(|_| !extra.contains(&"--wait")),
        )
        .args(["--no-groups", "--no-save", "--quiet", "--export-json"])
        .arg(json)
        .arg("--export-tsv")
        .arg(json.with_extension("tsv"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oemputx starts")
}

/// The run's end, bounded: 20 s of run and its reconnects, with room for a loaded host.
fn ended(child: std::process::Child) -> (i32, String) {
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(90));
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let out = child.wait_with_output().expect("oemputx ends");
    drop(watchdog);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The books every failover run must keep: every request accounted for once, `duplicates`
/// second replies (none on NATS core; a quorum queue's redeliveries, the breaks'), at least
/// `least` matched, replies after every break, and no more matched than the responder
/// answered. The rate offered is the host's to keep, not the failover's: the quiet fresh clone
/// of 5db27fa matched 2,395 of JetStream R3's 4,000 offered (a stream's new leader took
/// seconds), where 2,400 had been asked; so what is asked is that serving went on.
fn assert_books(j: &serde_json::Value, answered: u64, least: u64, duplicates: u64) {
    let i = &j["integrity"];
    let n = |k: &str| i[k].as_u64().unwrap_or(u64::MAX);
    assert_eq!(
        n("sent"),
        n("matched") + n("timed_out") + n("abandoned"),
        "{i}"
    );
    assert_eq!(n("duplicates"), duplicates, "{i} {}", j["interruptions"]);
    assert!(
        n("matched") >= least,
        "matched {} of the offered, fewer than {least}: {i}",
        n("matched")
    );
    assert!(
        n("matched") <= answered,
        "matched {} > answered {answered}",
        n("matched")
    );
    let lost: u64 = j["interruptions"]
        .as_array()
        .map(|a| a.iter().map(|b| b["lost"].as_u64().unwrap_or(0)).sum())
        .unwrap_or(0);
    assert!(lost <= n("timed_out"), "lost {lost} are timeouts too: {i}");
    for b in j["interruptions"].as_array().into_iter().flatten() {
        assert!(b["end_utc"].is_string(), "no reply after the break: {b}");
    }
    // The run went to its end, not cut short by timeouts after the break.
    assert_eq!(j["status"], "completed", "{}", j["status_detail"]);
}

/// Each of `tasks` tasks broke once, from node `from` to one of `to`, after 1 ms to 10 s
/// without replies.
fn assert_one_break_a_task(j: &serde_json::Value, tasks: u64, from: &str, to: &[String]) {
    let breaks = j["interruptions"].as_array().cloned().unwrap_or_default();
    let mut seen: Vec<u64> = breaks.iter().filter_map(|b| b["task"].as_u64()).collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..tasks).collect::<Vec<_>>(),
        "{}",
        j["interruptions"]
    );
    // In total, in the JSON and on the TSV's summary row.
    let total = &j["interruptions_total"];
    assert_eq!(total["interruptions"].as_u64(), Some(tasks), "{total}");
    let lost: u64 = breaks.iter().filter_map(|b| b["lost"].as_u64()).sum();
    assert_eq!(total["lost"].as_u64(), Some(lost), "{total}");
    for b in &breaks {
        assert_eq!(b["from"].as_str(), Some(from), "{b}");
        assert!(to.iter().any(|t| b["to"].as_str() == Some(t)), "{b}");
        let outage = b["outage_ms"].as_f64().unwrap_or(-1.0);
        assert!((1.0..=10_000.0).contains(&outage), "{b}");
    }
}

#[test]
fn the_node_oemputx_is_connected_to_killed_mid_run_is_one_interruption_not_the_end() {
    live!(NatsServer);
    let lab = Lab::up();
    let subject = fresh_queue("failover");
    let responder = Responder::start(
        &format!("nats://{}", lab.address(3)),
        &subject,
        &format!("nats://{}", lab.address(1)),
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("failover.json");
    let child = paced_run(&lab.url(), &subject, "1", "20s", &json);
    std::thread::sleep(Duration::from_secs(6));
    // The nodes are tried in the order given: the run is on node 1.
    lab.node("kill", 1);
    let (code, err) = ended(child);
    let answered = responder.answered();
    let j = read_json(&json);
    assert_eq!(code, 0, "{err}\n{}", j["interruptions"]);
    let breaks = j["interruptions"].as_array().cloned().unwrap_or_default();
    let [b] = breaks.as_slice() else {
        panic!("one interruption: {}", j["interruptions"])
    };
    let outage = b["outage_ms"].as_f64().unwrap_or(-1.0);
    assert!((1.0..=10_000.0).contains(&outage), "{b}");
    assert_eq!(b["from"], lab.address(1), "{b}");
    assert!(
        b["to"] == lab.address(2) || b["to"] == lab.address(3),
        "{b}"
    );
    assert_eq!(b["reconnected"], true, "{b}");
    assert_eq!(b["duplicated"], 0, "{b}");
    assert_books(&j, answered, 200, 0);
    assert_eq!(j["status"], "completed", "{}", j["status_detail"]);
    assert!(
        j["settings"]["reconnect_for_s"].as_f64() == Some(7.0),
        "{}",
        j["settings"]
    );
}

/// On a JetStream stream with three replicas, the node oemputx is connected to killed 6 s
/// into a 20 s run at 200 msg/s over two tasks: one interruption a task, the run completes,
/// and every request is accounted for once. The stream keeps its copies on the two nodes
/// left; sample-flow on node 3 reads it and answers (its own count bounds what was
/// matched), and a request it gets again after the break counts as duplicated.
#[test]
fn on_jetstream_r3_the_node_oemputx_is_connected_to_killed_is_one_interruption_a_task() {
    live!(NatsServer);
    let lab = Lab::up();
    let subject = fresh_queue("failover-js");
    let node3 = format!("nats://{}", lab.address(3));
    let flow = SampleFlow::start(
        &[
            "--url",
            &node3,
            "--input-queue",
            &subject,
            "--echo",
            "--jetstream",
            "--replicas",
            "3",
        ],
        "echoing",
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("failover-js.json");
    // The stream elects new leaders after the loss, and a store waits for it up to --wait:
    // in CI beside the other tests it had none for 4.7 s and more, so 10 s rather than 2.
    let persistent = [
        "--persistent",
        "--declare",
        "--replicas",
        "3",
        "--wait",
        "10s",
    ];
    let child = paced_run_with(&lab.url(), &subject, "2", "20s", &json, &persistent);
    std::thread::sleep(Duration::from_secs(6));
    lab.node("kill", 1);
    let (code, err) = ended(child);
    let said = flow.stop();
    let answered = said
        .iter()
        .find_map(|l| l.split("stopping after ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("the flow's count: {said:?}"));
    let j = read_json(&json);
    assert_eq!(code, 0, "{err}\n{}", j["interruptions"]);
    assert_eq!(j["settings"]["replicas"], 3, "{}", j["settings"]);
    assert_one_break_a_task(&j, 2, &lab.address(1), &[lab.address(2), lab.address(3)]);
    let duplicated = j["interruptions_total"]["duplicated"].as_u64().unwrap_or(0);
    assert_books(&j, answered, 200, duplicated);
}

#[test]
fn a_node_stopped_cleanly_and_one_that_came_back_are_each_an_interruption() {
    live!(NatsServer);
    let lab = Lab::up();
    let subject = fresh_queue("failover-back");
    let responder = Responder::start(
        &format!("nats://{}", lab.address(3)),
        &subject,
        &format!("nats://{}", lab.address(1)),
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("failover-back.json");
    let child = paced_run(&lab.url(), &subject, "1", "20s", &json);
    std::thread::sleep(Duration::from_secs(5));
    // SIGTERM: node 1 shuts down cleanly; the run goes on on node 2.
    lab.node("stop", 1);
    std::thread::sleep(Duration::from_secs(2));
    // Node 1 comes back; then node 2 goes, and the run goes back to node 1, the first.
    lab.node("start", 1);
    std::thread::sleep(Duration::from_secs(4));
    lab.node("kill", 2);
    let (code, err) = ended(child);
    let answered = responder.answered();
    let j = read_json(&json);
    assert_eq!(code, 0, "{err}\n{}", j["interruptions"]);
    let breaks = j["interruptions"].as_array().cloned().unwrap_or_default();
    let hops: Vec<(String, String)> = breaks
        .iter()
        .map(|b| {
            (
                b["from"].as_str().unwrap_or("?").to_string(),
                b["to"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    assert_eq!(
        hops,
        [
            (lab.address(1), lab.address(2)),
            (lab.address(2), lab.address(1))
        ],
        "{}",
        j["interruptions"]
    );
    for b in &breaks {
        let outage = b["outage_ms"].as_f64().unwrap_or(-1.0);
        assert!((1.0..=10_000.0).contains(&outage), "{b}");
    }
    assert_books(&j, answered, 200, 0);
}

/// oemputx at 200 msg/s over two tasks (at load 4 one task's synchronous round trip through
/// the proxy could not keep the rate) on a node list whose first node, a proxy in front of
/// the shared broker at `at`, is cut 4 s into a 10 s run (every connection closed, every new
/// one refused): each task breaks once, from the proxy to the broker, and the run completes
/// with its books kept and no password shown. `url_of(node1)` writes the list.
fn first_node_cut_is_one_break_a_task(
    at: &str,
    queue: &str,
    flow: Option<SampleFlow>,
    url_of: impl Fn(&str) -> String,
) {
    let proxy = FaultProxy::start(at);
    let node1 = format!("127.0.0.1:{}", proxy.port);
    let url = url_of(&node1);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("failover.json");
    let child = paced_run(&url, queue, "2", "10s", &json);
    std::thread::sleep(Duration::from_secs(4));
    proxy.set(Fault::Cut);
    let (code, err) = ended(child);
    let said = flow.map(SampleFlow::stop).unwrap_or_default();
    let j = read_json(&json);
    assert_eq!(code, 0, "{err}\n{}\nthe flow: {said:?}", j["interruptions"]);
    let password = url.split_once('@').and_then(|(u, _)| u.rsplit(':').next());
    for shown in [err.as_str(), &j["settings"]["qmgr"].to_string()] {
        assert!(
            password.is_none_or(|p| !shown.contains(&format!(":{p}@"))),
            "{shown}"
        );
    }
    assert_one_break_a_task(&j, 2, &node1, &[at.to_string()]);
    // 10 s at 200 msg/s offered 2000, but the rate is the host's to keep: at load 4 beside
    // the suite AMQP 1.0's two tasks sent 530. What this checks is that replies went on
    // after the break (exit 0: each was followed by one); the flow's count is not read.
    assert_books(&j, u64::MAX, 100, 0);
    let tsv = std::fs::read_to_string(json.with_extension("tsv")).expect("the TSV");
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    let at_col = |name: &str| rows[0].iter().position(|h| *h == name).expect(name);
    let summary = rows
        .iter()
        .find(|r| r[0] == "summary")
        .expect("a summary row");
    assert_eq!(summary[at_col("interruptions")], "2", "{tsv}");
    assert_eq!(
        summary[at_col("lost_at_breaks")],
        j["interruptions_total"]["lost"].to_string(),
        "{tsv}"
    );
}

#[test]
fn on_rabbitmq_a_node_list_goes_on_on_the_next_node_when_the_first_is_lost() {
    live!(RabbitMq);
    // The request queue and its echo flow are on the broker, reached either way.
    let q = fresh_queue("failover-amqp");
    let _cleanup = QueueGuard(q.clone());
    let _flow = EchoFlow::start(&q, &[]);
    let (at, userinfo) = broker_parts();
    first_node_cut_is_one_break_a_task(&at, &q, None, |node1| {
        format!("{userinfo}@{node1}/%2f,{at}")
    });
}

#[test]
fn on_mqtt_a_node_list_goes_on_on_the_next_node_when_the_first_is_lost() {
    live!(Mosquitto);
    let topic = format!("oemputx/failover/{}", fresh_queue("mqtt"));
    let at = "127.0.0.1:1883";
    let flow = SampleFlow::start(
        &[
            "--url",
            &format!("mqtt://{at}"),
            "--input-queue",
            &topic,
            "--echo",
        ],
        "echoing",
    );
    first_node_cut_is_one_break_a_task(at, &topic, Some(flow), |node1| {
        format!("mqtt://{node1},{at}")
    });
}

#[test]
fn on_stomp_activemq_s_failover_list_goes_on_on_the_next_node_when_the_first_is_lost() {
    live!(ActiveMq);
    let q = fresh_queue("failover-stomp");
    let at = "127.0.0.1:61613";
    let flow = SampleFlow::start(
        &[
            "--url",
            &format!("stomp://admin:admin@{at}"),
            "--input-queue",
            &q,
            "--echo",
        ],
        "echoing",
    );
    first_node_cut_is_one_break_a_task(at, &q, Some(flow), |node1| {
        format!("failover:(stomp://admin:admin@{node1},stomp://{at})")
    });
}

#[test]
fn on_amqp_1_0_a_node_list_goes_on_on_the_next_node_when_the_first_is_lost() {
    live!(RabbitMq, Amqp10);
    let q = fresh_queue("failover-amqp10");
    let _cleanup = QueueGuard(q.clone());
    let (at, _) = broker_parts();
    let flow = SampleFlow::start(
        &[
            "--url",
            &format!("amqp10://guest:guest@{at}"),
            "--input-queue",
            &q,
            "--echo",
        ],
        "echoing",
    );
    first_node_cut_is_one_break_a_task(&at, &q, Some(flow), |node1| {
        format!("amqp10://guest:guest@{node1},{at}")
    });
}

/// The shared broker's `host:port`, and a URL's `amqp://user:password` part.
fn broker_parts() -> (String, String) {
    let broker = amqp_url();
    let at = broker
        .split_once('@')
        .and_then(|(_, rest)| rest.split('/').next())
        .unwrap_or("127.0.0.1:5672")
        .to_string();
    let userinfo = broker
        .split_once('@')
        .map_or("amqp://guest:guest", |(u, _)| u)
        .to_string();
    (at, userinfo)
}

/// sample-flow on a node list (a proxy in front of the shared broker, then the broker)
/// whose first node is lost mid-run: it connects again to the second and goes on serving;
/// the requests it had not answered come to it again, so oemputx (on the broker directly,
/// never broken) gets every reply in time, and a second reply only where one was written
/// and its acknowledgement lost with the connection.
#[test]
fn sample_flow_on_a_node_list_connects_again_to_the_next_node_and_goes_on_serving() {
    live!(RabbitMq);
    let q = fresh_queue("failover-flow");
    let _cleanup = QueueGuard(q.clone());
    let (at, userinfo) = broker_parts();
    let proxy = FaultProxy::start(&at);
    let flow_url = format!("{userinfo}@127.0.0.1:{}/%2f,{at}", proxy.port);
    let flow = SampleFlow::start(
        &["--url", &flow_url, "--input-queue", &q, "--echo"],
        "echoing",
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("failover-flow.json");
    let child = paced_run(&amqp_url(), &q, "2", "10s", &json);
    std::thread::sleep(Duration::from_secs(4));
    proxy.set(Fault::Cut);
    let (code, err) = ended(child);
    let said = flow.stop();
    let j = read_json(&json);
    let i = &j["integrity"];
    let n = |k: &str| i[k].as_u64().unwrap_or(u64::MAX);
    assert!(
        said.iter()
            .any(|l| l.ends_with(&format!("broke; connected again to {at}"))),
        "{said:?}"
    );
    assert!(!said.concat().contains("guest:guest"), "{said:?}");
    assert!(
        j["interruptions"].as_array().is_none_or(Vec::is_empty),
        "{j}"
    );
    assert_eq!(
        n("sent"),
        n("matched") + n("timed_out") + n("abandoned"),
        "{i}"
    );
    assert_eq!(n("timed_out"), 0, "{i} {said:?}");
    assert!(n("matched") >= 1200, "{i}");
    // At most the requests in flight (one a task) answered twice; a run with one exits 1
    // saying so.
    assert!(n("duplicates") <= 2, "{i} {said:?}");
    assert_eq!(code, if n("duplicates") == 0 { 0 } else { 1 }, "{err}");
}

/// A RabbitMQ cluster lab of the test's own: three nodes on free ports (each with its Erlang
/// distribution port, + 10000, free too), taken down when dropped.
fn rabbit_lab() -> Lab {
    Lab::start("rabbitmq", 10_000)
}

/// Three ports from 20000 to 22767 whose port + `gap` is free too (a RabbitMQ node's Erlang
/// port at + 10000 stays below 32768): a draw spread by this process and the attempt.
fn lab_ports(gap: u16, attempt: u64) -> Vec<u16> {
    let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
    let mut ports = Vec::new();
    let mut x = u64::from(std::process::id())
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(attempt.wrapping_mul(1_442_695_040_888_963_407) | 1)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos().into());
    while ports.len() < 3 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let p = 20_000 + ((x >> 33) % 2_768) as u16;
        if !ports.contains(&p) && free(p) && free(p + gap) {
            ports.push(p);
        }
    }
    ports
}

/// An echo responder of the test's own (amqprs, not sample-flow) on one node: it declares
/// `queue` a quorum queue, answers each request to its reply_to with its correlation id,
/// acknowledges it after the reply, and counts what it answered.
fn quorum_responder(port: u16, queue: &str) -> Responder {
    let (answered, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = {
        let queue = queue.to_string();
        let (answered, stop) = (answered.clone(), stop.clone());
        std::thread::spawn(move || {
            runtime().block_on(echo_quorum(port, &queue, &answered, &stop, &ready_tx))
        })
    };
    ready_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the responder consumes");
    Responder {
        answered,
        stop,
        thread: Some(thread),
    }
}

async fn echo_quorum(
    port: u16,
    queue: &str,
    answered: &AtomicU64,
    stop: &AtomicBool,
    ready: &std::sync::mpsc::Sender<()>,
) {
    use amqprs::channel::{
        BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, QueueDeclareArguments,
    };
    let args =
        amqprs::connection::OpenConnectionArguments::new("127.0.0.1", port, "guest", "guest");
    let conn = amqprs::connection::Connection::open(&args)
        .await
        .expect("the responder connects");
    let ch = conn.open_channel(None).await.expect("channel");
    let mut quorum = amqprs::FieldTable::new();
    quorum.insert(
        "x-queue-type".try_into().expect("a field name"),
        "quorum".into(),
    );
    ch.queue_declare(
        QueueDeclareArguments::durable_client_named(queue)
            .arguments(quorum)
            .finish(),
    )
    .await
    .expect("declare the quorum queue");
    let (_, mut rx) = ch
        .basic_consume_rx(BasicConsumeArguments::new(queue, "quorum-echo"))
        .await
        .expect("consume");
    let _ = ready.send(());
    while !stop.load(Ordering::Relaxed) {
        let Ok(Some(msg)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await
        else {
            continue;
        };
        let (Some(deliver), Some(props), Some(body)) =
            (msg.deliver, msg.basic_properties, msg.content)
        else {
            continue;
        };
        if let Some(reply_to) = props.reply_to().cloned() {
            let mut reply = amqprs::BasicProperties::default();
            if let Some(c) = props.correlation_id() {
                reply.with_correlation_id(c);
            }
            let sent = ch
                .basic_publish(reply, body, BasicPublishArguments::new("", &reply_to))
                .await;
            if sent.is_ok() {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }
        let _ = ch
            .basic_ack(BasicAckArguments::new(deliver.delivery_tag(), false))
            .await;
    }
    let _ = conn.close().await;
}

#[test]
fn on_a_rabbitmq_quorum_queue_the_node_oemputx_is_on_killed_is_one_interruption() {
    live!(RabbitMq);
    let lab = rabbit_lab();
    let q = fresh_queue("failover-quorum");
    let responder = quorum_responder(lab.ports[2], &q);
    let url = format!(
        "amqp://guest:guest@{}/%2f,{},{}",
        lab.address(1),
        lab.address(2),
        lab.address(3)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("failover-quorum.json");
    // Two tasks share the 200 msg/s: at load 4 one task's synchronous round trip through
    // the cluster (8 ms) could not keep the rate, whatever the failover did.
    let child = paced_run(&url, &q, "2", "20s", &json);
    std::thread::sleep(Duration::from_secs(6));
    lab.node("kill", 1);
    let (code, err) = ended(child);
    let answered = responder.answered();
    let j = read_json(&json);
    assert_eq!(code, 0, "{err}\n{}", j["interruptions"]);
    // Both tasks were on node 1: one interruption each, to node 2 or 3.
    assert_one_break_a_task(&j, 2, &lab.address(1), &[lab.address(2), lab.address(3)]);
    // A quorum queue may deliver again what the lost node had not settled: second replies
    // are counted as the interruption's duplicated, never as matched twice.
    let duplicated: u64 = j["interruptions"]
        .as_array()
        .map(|a| a.iter().filter_map(|b| b["duplicated"].as_u64()).sum())
        .unwrap_or(0);
    assert_books(&j, answered, 200, duplicated);
}
