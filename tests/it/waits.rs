//! Issue 48, class (d): every wait oemputx makes is bounded and ends at once on a signal.
//!
//! One table of every wait a command line can reach — the handshake with each transport's
//! broker (put/get, pub/sub, the matrix) on a port that accepts and never answers, pmproxy
//! that never answers, `--start-at`, `cpu --interval` and `cpu --from`, the flows that
//! compare, sweep and the A/B gate wait for, the command `account` waits for, a reply and a
//! request queue that never come — each started, sent SIGTERM, and required to end with 130
//! well before its own bound would have ended it. Then the handshakes' bounds themselves:
//! without a signal, each silent port is an error naming the bound, in about that time.

use oemputx_test_support::*;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A port that accepts connections and never says a word: a hung broker, a firewall's
/// tarpit, the wrong service.
fn silent_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    port
}

/// One wait: a name, oemputx's arguments, and whether it needs RabbitMQ.
struct Wait {
    name: String,
    args: Vec<String>,
    rabbit: bool,
}

fn wait(name: &str, args: &[&str], rabbit: bool) -> Wait {
    Wait {
        name: name.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        rabbit,
    }
}

/// How a process ended, and how long after the signal.
type Ended = (std::process::ExitStatus, Duration);

fn start(args: &[String]) -> Child {
    oemputx_process()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("oemputx starts")
}

/// What `child` wrote to its (piped) stderr, read to its end.
pub(crate) fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

fn at(from_now_s: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(from_now_s))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The queue the wait for a reply declares (this test process's own).
fn reply_queue(tag: &str) -> String {
    format!("q.waits.reply.{tag}")
}

/// Every wait a command line can reach, against `port` (silent) and the real RabbitMQ.
fn every_wait(port: u16, tag: &str) -> Vec<Wait> {
    let silent = |scheme: &str| match scheme {
        "amqp" => format!("amqp://guest:guest@127.0.0.1:{port}/%2f"),
        "amqp10" => format!("amqp10://guest:guest@127.0.0.1:{port}"),
        "stomp" => format!("stomp://admin:admin@127.0.0.1:{port}"),
        other => format!("{other}://127.0.0.1:{port}"),
    };
    let pcp = format!("X=pcp://127.0.0.1:{port}");
    let amqp = amqp_url();
    // A flow that never consumes: a command that only sleeps, as long as no test runs.
    let never = format!(
        "sh -c 'exec sleep {}'",
        100_000 + std::process::id() % 10_000
    );
    // A flow deaf to SIGTERM (sleep inherits the ignored signal): after a signal its grace
    // is half a second, not the 10 s a run's normal end gives it.
    let deaf = format!(
        "sh -c 'trap \"\" TERM; exec sleep {}'",
        100_000 + std::process::id() % 10_000
    );
    let q = |what: &str| format!("{}.{tag}", fresh_queue(what));
    let mut all = Vec::new();
    for scheme in ["amqp", "amqp10", "nats", "stomp", "mqtt", "kafka"] {
        let url = silent(scheme);
        all.push(wait(
            &format!("a run's handshake with a silent {scheme} port"),
            &["--qmgr", &url, "--count", "5", "--wait", "60s", "--no-save"],
            false,
        ));
        // Pub/sub runs on neither (a usage error, no wait).
        if scheme != "amqp10" && scheme != "kafka" {
            all.push(wait(
                &format!("pub/sub's handshake with a silent {scheme} port"),
                &["pubsub", "--qmgr", &url, "--duration", "60s", "--no-save"],
                false,
            ));
        }
    }
    all.push(wait(
        "the matrix's handshake with a silent nats port",
        &["matrix", "--qmgr", &silent("nats")],
        false,
    ));
    all.push(wait(
        "--start-at a minute ahead",
        &["--count", "5", "--start-at", &at(60), "--no-save"],
        false,
    ));
    all.push(wait(
        "cpu --interval 60s",
        &["cpu", "--interval", "60s", "--group", "ME=comm:oemputx"],
        false,
    ));
    all.push(wait(
        "cpu --from a minute ahead",
        &[
            "cpu",
            "--from",
            &at(60),
            "--until",
            &at(120),
            "--group",
            "ME=comm:oemputx",
        ],
        false,
    ));
    all.push(wait(
        "a run's first answer from a silent pmproxy",
        &[
            "--count",
            "5",
            "--host",
            &pcp,
            "--group",
            "B@X=@rabbitmq",
            "--no-save",
        ],
        false,
    ));
    all.push(wait(
        "cpu's answer from a silent pmproxy",
        &["cpu", "--host", &pcp, "--group", "B@X=@rabbitmq"],
        false,
    ));
    all.push(wait(
        "account's command",
        &[
            "account",
            "--messages",
            "10",
            "--group",
            "ME=comm:oemputx",
            "--",
            "sleep",
            "100000",
        ],
        false,
    ));
    let (cq, sq, gq) = (q("waits.compare"), q("waits.sweep"), q("waits.gate"));
    // compare's flows started with `flow`, on a queue of their own.
    let compare = |name: &str, flow: &str, queue: &str| {
        wait(
            name,
            &[
                "compare",
                "--flow-cmd",
                flow,
                "--setting",
                "a=",
                "--setting",
                "b=",
                "--",
                "--qmgr",
                &amqp,
                "--request-queue",
                queue,
                "--count",
                "5",
            ],
            true,
        )
    };
    all.push(compare("compare's flows that never consume", &never, &cq));
    all.push(compare(
        "compare's flows that never consume and ignore SIGTERM",
        &deaf,
        &q("waits.deaf"),
    ));
    all.push(wait(
        "sweep's flows that never consume",
        &[
            "sweep",
            "--flow-cmd",
            &never,
            "--qmgr",
            &amqp,
            "--request-queue",
            &sq,
            "--count",
            "5",
            "--tasks",
            "1,2",
        ],
        true,
    ));
    all.push(wait(
        "the A/B gate's flows that never consume",
        &[
            "gate",
            "--flow-a",
            &never,
            "--flow-b",
            &never,
            "--",
            "--qmgr",
            &amqp,
            "--request-queue",
            &gq,
            "--count",
            "5",
        ],
        true,
    ));
    let (rq, mq) = (reply_queue(tag), q("waits.missing"));
    all.push(wait(
        "a reply nobody sends (--wait 60s)",
        &[
            "--qmgr",
            &amqp,
            "--request-queue",
            &rq,
            "--declare",
            "--count",
            "5",
            "--wait",
            "60s",
            "--no-save",
        ],
        true,
    ));
    all.push(wait(
        "a request queue nobody declares (--wait 60s)",
        &[
            "--qmgr",
            &amqp,
            "--request-queue",
            &mq,
            "--count",
            "5",
            "--wait",
            "60s",
            "--no-save",
        ],
        true,
    ));
    all
}

#[test]
fn every_wait_ends_at_once_on_a_signal_well_before_its_bound() {
    let rabbit = live::can_run(&[live::Service::RabbitMq]);
    let port = silent_port();
    let tag = format!("{}", std::process::id());
    let waits: Vec<Wait> = every_wait(port, &tag)
        .into_iter()
        .filter(|w| rabbit || !w.rabbit)
        .collect();
    // Every bound above is 5 s or more after the signal (the handshakes' 5 s, the waits'
    // 60 s): an end within 3 s of SIGTERM is the signal's doing, on a loaded host too.
    let mut failures = Vec::new();
    for batch in waits.chunks(6) {
        let children: Vec<(&Wait, Child)> = batch.iter().map(|w| (w, start(&w.args))).collect();
        // Into the wait: connected, or waiting for the flows, the instant, the interval.
        std::thread::sleep(Duration::from_millis(1500));
        let signalled = Instant::now();
        for (_, c) in &children {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        // Each one's end is seen as it comes (all are watched together).
        let mut running: Vec<(&Wait, Child, Option<Ended>)> =
            children.into_iter().map(|(w, c)| (w, c, None)).collect();
        while running.iter().any(|r| r.2.is_none()) && signalled.elapsed() < Duration::from_secs(20)
        {
            for (_, c, ended) in running.iter_mut().filter(|r| r.2.is_none()) {
                if let Ok(Some(s)) = c.try_wait() {
                    *ended = Some((s, signalled.elapsed()));
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for (w, mut c, ended) in running {
            if ended.is_none() {
                let _ = c.kill();
                let _ = c.wait();
            }
            let err = stderr_of(&mut c);
            match ended {
                Some((s, took)) if s.code() == Some(130) && took < Duration::from_secs(3) => {}
                other => failures.push(format!(
                    "{}: {other:?} after SIGTERM\n{}",
                    w.name,
                    err.lines().rev().take(3).collect::<Vec<_>>().join("\n")
                )),
            }
        }
    }
    // The queue the reply wait declared; the others were oemputx's own, or never made.
    delete_queue(&reply_queue(&tag));
    assert!(
        failures.is_empty(),
        "waits that did not end at once on SIGTERM:\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn a_silent_broker_is_an_error_naming_the_bound_in_about_that_time() {
    let port = silent_port();
    let url = |scheme: &str| match scheme {
        "amqp" => format!("amqp://guest:guest@127.0.0.1:{port}/%2f"),
        "amqp10" => format!("amqp10://guest:guest@127.0.0.1:{port}"),
        "stomp" => format!("stomp://admin:admin@127.0.0.1:{port}"),
        other => format!("{other}://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    let children: Vec<(String, Child)> = ["amqp", "amqp10", "nats", "stomp", "mqtt", "kafka"]
        .iter()
        .map(|s| {
            let args: Vec<String> = ["--qmgr", &url(s), "--count", "5", "--no-save"]
                .iter()
                .map(|a| a.to_string())
                .collect();
            (s.to_string(), start(&args))
        })
        .collect();
    for (scheme, c) in children {
        let out = c.wait_with_output().expect("oemputx ends");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{scheme}: {err}");
        // AMQP 1.0's handshake has 10 s: RabbitMQ holds a refused login's outcome 3 s.
        let bound = if scheme == "amqp10" {
            "within 10 s"
        } else {
            "within 5 s"
        };
        assert!(
            err.contains(bound),
            "{scheme}: the error names no bound ({bound}): {err}"
        );
        assert!(err.contains("cannot reach"), "{scheme}: {err}");
    }
    // Each handshake step is bounded by 5 s (AMQP's two steps: the port, then the
    // protocol; AMQP 1.0's protocol step 10 s); all ran at once, so the whole took about
    // one bound, not six.
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_interval_past_the_calendar_is_waited_for_not_skipped_nor_a_panic() {
    // 300000 years ends past chrono's last date (now + interval panicked, exit 101); 300
    // million years is past a chrono::Duration (counted as no wait: intervals printed back
    // to back at once, exit 0). Both must wait, and end on a signal like any interval.
    let children: Vec<(&str, Child)> = ["300000y", "300000000y"]
        .into_iter()
        .map(|every| {
            let args: Vec<String> = [
                "cpu",
                "--interval",
                every,
                "--count",
                "2",
                "--group",
                "ME=comm:oemputx",
            ]
            .iter()
            .map(|a| a.to_string())
            .collect();
            (every, start(&args))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    for (every, mut c) in children {
        let early = c.try_wait().expect("its state");
        if early.is_none() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut ended = early;
        while ended.is_none() && Instant::now() < deadline {
            ended = c.try_wait().expect("its state");
            std::thread::sleep(Duration::from_millis(10));
        }
        if ended.is_none() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let err = stderr_of(&mut c);
        assert!(
            early.is_none(),
            "--interval {every} did not wait: {early:?}\n{err}"
        );
        assert_eq!(ended.and_then(|s| s.code()), Some(130), "{every}: {err}");
    }
}
