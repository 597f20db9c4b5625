//! The driver's overhead on NATS against a raw async-nats request loop (the three-loop
//! method of `loop_overhead`, two loops here).
//!
//! In one run, interleaved rounds of
//!   (a) a raw loop written straight on async-nats, with no oemputx code: each task its own
//!       connection and inbox subscription, publish with a reply subject of that inbox, wait
//!       for the reply on it — what oemputx does on the wire;
//!   (b) the `oemputx` binary doing the same,
//! against the same nats-server, the same `sample-flow --echo --threads 2` responder, the
//! same 630-byte message and task count; every loop in a fresh process each round. Targets:
//! rate ≥ 97 % and driver CPU per round trip ≤ 110 % of raw, by the median of the per-round
//! ratios.
//!
//! Run: `cargo bench --bench nats_overhead -- [--rounds 5] [--count 5000] [--tasks 1,8]`
//! (needs NATS on 127.0.0.1:4222 or $OEMPUTX_TEST_NATS; `bash ci/services.sh` starts it).

mod overhead;
use oemputx_test_support::SampleFlow;
use overhead::{RawTask, Sample};

use futures_util::StreamExt;
use std::time::Duration;

fn default_url() -> String {
    std::env::var("OEMPUTX_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// (a) The raw loop: `tasks` threads, each with its own connection and inbox.
fn raw_loop(url: &str, subject: &str, count: u64, warmup: u64, tasks: usize) -> Sample {
    let body = bytes::Bytes::from(
        std::fs::read("msgfiles/request-630.xml").expect("msgfiles/request-630.xml"),
    );
    let (url, subject) = (url.to_string(), subject.to_string());
    overhead::raw_tasks(count, warmup, tasks, move |p: RawTask| {
        let t = p.t;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        let (client, inbox, mut sub) = rt.block_on(async {
            let client = async_nats::connect(url.as_str())
                .await
                .expect("NATS must be running (bash ci/services.sh)");
            let inbox = client.new_inbox();
            let sub = client
                .subscribe(format!("{inbox}.*"))
                .await
                .expect("subscribe");
            (client, inbox, sub)
        });
        let mut trips = |prefix: &str, n: u64| {
            rt.block_on(async {
                for i in 0..n {
                    let reply = format!("{inbox}.{prefix}-{t}-{i}");
                    client
                        .publish_with_reply(subject.clone(), reply.clone(), body.clone())
                        .await
                        .expect("publish");
                    loop {
                        let m = sub.next().await.expect("reply");
                        if m.subject.as_str() == reply {
                            break;
                        }
                    }
                }
            });
        };
        trips("warm", p.warm);
        p.ready.wait();
        trips("raw", p.n);
        p.done.wait();
        rt.block_on(async {
            let _ = client.drain().await;
        });
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
        "the nats_overhead benchmark",
        &[oemputx_test_support::Service::Nats],
    ) {
        return;
    }
    let subject = format!("oemputx.bench.{}", std::process::id());
    let _flow = SampleFlow::start(
        &[
            "--echo",
            "--url",
            &o.url,
            "--input-queue",
            &subject,
            "--threads",
            "2",
        ],
        "echoing",
    );
    std::thread::sleep(Duration::from_millis(300));
    println!(
        "NATS loop overhead: {} rounds of {} round trips, 630-byte message, sample-flow --echo --threads 2",
        o.rounds, o.count
    );
    overhead::print_header();
    let env = ("OEMPUTX_TEST_NATS", o.url.as_str());
    let mut verdicts = Vec::new();
    for &tasks in &o.tasks {
        // One unmeasured pass of each to warm the server, the flow and the page cache.
        let warmup = o.count / 10;
        raw_loop(&o.url, &subject, o.count / 5, warmup, tasks);
        overhead::oemputx_loop(&o.url, &subject, o.count / 5, warmup, tasks);
        let (count, q) = (o.count, subject.as_str());
        let s = overhead::interleave(
            tasks,
            o.rounds,
            &mut [
                ("raw", &mut || {
                    overhead::raw_process(env, "async", q, count, warmup, tasks)
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
