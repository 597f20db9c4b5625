//! The driver's overhead on STOMP (ActiveMQ) against a raw loop of the same codec (the
//! three-loop method of `loop_overhead`, two loops here).
//!
//! In one run, interleaved rounds of
//!   (a) a raw loop on a blocking socket with oemputx's STOMP codec
//!       (`oemputx::transport::stomp::frame`) and nothing else of oemputx: each task its own
//!       connection and `/temp-queue/` reply subscription, SEND with `reply-to` and
//!       `correlation-id`, read frames until the reply with that id — what oemputx does on
//!       the wire;
//!   (b) the `oemputx` binary doing the same,
//! against the same ActiveMQ, the same `sample-flow --echo --threads 2` responder, the same
//! 630-byte message and task count; every loop in a fresh process each round. Targets: rate
//! ≥ 97 % and driver CPU per round trip ≤ 110 % of raw, by the median of the per-round ratios.
//!
//! Run: `cargo bench --bench stomp_overhead -- [--rounds 5] [--count 5000] [--tasks 1,8]`
//! (needs ActiveMQ's STOMP connector on 127.0.0.1:61613 or $OEMPUTX_TEST_STOMP;
//! `bash ci/services.sh` installs and starts it).

mod overhead;
use oemputx::transport::stomp::frame::{Frame, decode, encode_parts};
use oemputx_test_support::SampleFlow;
use overhead::{RawTask, Sample};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn default_url() -> String {
    std::env::var("OEMPUTX_TEST_STOMP")
        .unwrap_or_else(|_| "stomp://admin:admin@127.0.0.1:61613".into())
}

/// A blocking connection with the codec: write frames, read the next one.
struct Raw {
    s: TcpStream,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl Raw {
    fn send(&mut self, command: &str, headers: &[(String, String)], body: &[u8]) {
        self.out.clear();
        encode_parts(command, headers, body, &mut self.out);
        self.s.write_all(&self.out).expect("write");
    }
    fn next(&mut self) -> Frame {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((f, used)) = decode(&self.buf, 1 << 24).expect("a valid frame") {
                self.buf.drain(..used);
                return f;
            }
            let n = self.s.read(&mut chunk).expect("read");
            assert!(n > 0, "the broker closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// `host:port`, login and passcode from a plain `stomp://` URL.
fn parts(url: &str) -> (String, String, String) {
    let rest = url.trim_start_matches("stomp://");
    let (auth, host) = rest.rsplit_once('@').unwrap_or(("", rest));
    let (login, pass) = auth.split_once(':').unwrap_or((auth, ""));
    (
        host.trim_end_matches('/').to_string(),
        login.to_string(),
        pass.to_string(),
    )
}

/// (a) The raw loop: `tasks` threads, each with its own connection and temporary queue.
fn raw_loop(url: &str, queue: &str, count: u64, warmup: u64, tasks: usize) -> Sample {
    let body = std::fs::read("msgfiles/request-630.xml").expect("msgfiles/request-630.xml");
    let (addr, login, pass) = parts(url);
    let queue = queue.to_string();
    overhead::raw_tasks(count, warmup, tasks, move |p: RawTask| {
        let s =
            TcpStream::connect(&addr).expect("ActiveMQ's STOMP connector (bash ci/services.sh)");
        s.set_nodelay(true).expect("nodelay");
        let mut c = Raw {
            s,
            buf: Vec::with_capacity(8192),
            out: Vec::with_capacity(2048),
        };
        let h = |k: &str, v: &str| (k.to_string(), v.to_string());
        c.send(
            "CONNECT",
            &[
                h("accept-version", "1.2"),
                h("host", "localhost"),
                h("heart-beat", "0,0"),
                h("login", &login),
                h("passcode", &pass),
            ],
            b"",
        );
        assert_eq!(c.next().command, "CONNECTED");
        let reply_to = format!("/temp-queue/raw.{}.{}", std::process::id(), p.t);
        c.send(
            "SUBSCRIBE",
            &[h("id", "r"), h("destination", &reply_to), h("ack", "auto")],
            b"",
        );
        let mut headers = vec![
            h("destination", &format!("/queue/{queue}")),
            h("reply-to", &reply_to),
            h("persistent", "false"),
            h("correlation-id", ""),
        ];
        let mut trips = |prefix: &str, n: u64| {
            for i in 0..n {
                let id = format!("{prefix}-{}-{i}", p.t);
                headers[3].1.clone_from(&id);
                c.send("SEND", &headers, &body);
                loop {
                    let f = c.next();
                    if f.command == "MESSAGE" && f.get("correlation-id") == Some(id.as_str()) {
                        break;
                    }
                }
            }
        };
        trips("warm", p.warm);
        p.ready.wait();
        trips("raw", p.n);
        p.done.wait();
        c.send("DISCONNECT", &[], b"");
    })
}

fn main() {
    if let Some(c) = overhead::child_args() {
        let s = raw_loop(&default_url(), &c.queue, c.count, c.warmup, c.tasks);
        overhead::report_child(s);
        return;
    }
    let o = overhead::opts(default_url());
    if !oemputx_test_support::live::can_run_named(
        "the stomp_overhead benchmark",
        &[oemputx_test_support::Service::ActiveMq],
    ) {
        return;
    }
    let queue = format!("oemputx.bench.stomp.{}", std::process::id());
    let _flow = SampleFlow::start(
        &[
            "--echo",
            "--url",
            &o.url,
            "--input-queue",
            &queue,
            "--threads",
            "2",
        ],
        "echoing",
    );
    std::thread::sleep(Duration::from_millis(300));
    println!(
        "STOMP loop overhead: {} rounds of {} round trips, 630-byte message, sample-flow --echo --threads 2",
        o.rounds, o.count
    );
    overhead::print_header();
    let env = ("OEMPUTX_TEST_STOMP", o.url.as_str());
    let mut verdicts = Vec::new();
    for &tasks in &o.tasks {
        // One unmeasured pass of each to warm the broker (its JIT above all) and the flow.
        let warmup = o.count / 10;
        raw_loop(&o.url, &queue, o.count / 5, warmup, tasks);
        overhead::oemputx_loop(&o.url, &queue, o.count / 5, warmup, tasks);
        let (count, q) = (o.count, queue.as_str());
        let s = overhead::interleave(
            tasks,
            o.rounds,
            &mut [
                ("raw", &mut || {
                    overhead::raw_process(env, "codec", q, count, warmup, tasks)
                }),
                ("oemputx", &mut || {
                    overhead::oemputx_loop(&o.url, q, count, warmup, tasks)
                }),
            ],
        );
        verdicts.push(overhead::verdict(tasks, &s[0], &s[1]));
    }
    for v in &verdicts {
        println!("{v}");
    }
}
