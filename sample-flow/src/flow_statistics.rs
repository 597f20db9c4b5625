//! The reference flow's accounting and statistics, modelled on a broker's own: per thread and,
//! at the finer level, per node, the messages, the elapsed time and the CPU time (each
//! thread's own CPU clock), emitted as one JSON line per thread every interval.
//!
//! The levels cost differently, which is one of the experiments this flow exists for:
//! `thread` reads the thread CPU clock twice per message, `node` twice per node per message.

use serde::Serialize;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How much the flow measures about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing: no clock is read per message.
    Off,
    /// Per thread: messages, elapsed and CPU per message.
    Thread,
    /// Per thread and per node.
    Node,
}

/// One node's figures over an interval.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeStats {
    pub node: &'static str,
    pub invocations: u64,
    pub elapsed_us: f64,
    pub cpu_us: f64,
}

/// One thread's snapshot, as written out.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub record: &'static str,
    pub time_utc: String,
    pub pid: u32,
    pub thread: usize,
    pub level: Level,
    pub interval_s: f64,
    pub messages: u64,
    pub elapsed_us: f64,
    pub cpu_us: f64,
    pub cpu_us_per_msg: Option<f64>,
    /// Empty unless the level is `node`.
    pub nodes: Vec<NodeStats>,
    /// True for the last snapshot a thread writes as it stops.
    #[serde(rename = "final")]
    pub last: bool,
}

/// Where snapshots go: stdout, or a file shared by the threads (one line each, whole).
#[derive(Clone)]
pub enum Sink {
    Stdout,
    File(Arc<Mutex<std::fs::File>>),
}

impl Sink {
    fn write(&self, line: &str) {
        // Statistics are best effort: a full disk must not stop the flow.
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Sink::File(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = writeln!(f, "{line}");
                }
            }
        }
    }
}

/// One thread's collector.
pub struct Collector {
    level: Level,
    thread: usize,
    interval: Duration,
    sink: Sink,
    since: Instant,
    messages: u64,
    elapsed: Duration,
    cpu: Duration,
    nodes: Vec<NodeStats>,
    /// The message in hand: when it started, on both clocks.
    msg_start: Option<(Instant, Duration)>,
    /// The node in hand.
    node_start: Option<(Instant, Duration)>,
}

fn thread_cpu() -> Duration {
    // A thread CPU clock that cannot be read counts as zero rather than stop the flow.
    oemputx::accounting::clock::self_thread().unwrap_or_default()
}

impl Collector {
    pub fn new(
        level: Level,
        thread: usize,
        nodes: &[&'static str],
        interval: Duration,
        sink: Sink,
    ) -> Self {
        Collector {
            level,
            thread,
            interval,
            sink,
            since: Instant::now(),
            messages: 0,
            elapsed: Duration::ZERO,
            cpu: Duration::ZERO,
            nodes: nodes
                .iter()
                .map(|&node| NodeStats {
                    node,
                    ..NodeStats::default()
                })
                .collect(),
            msg_start: None,
            node_start: None,
        }
    }

    /// A message is in hand.
    pub fn message_start(&mut self) {
        if self.level != Level::Off {
            self.msg_start = Some((Instant::now(), thread_cpu()));
        }
    }

    /// The message in hand is done.
    pub fn message_end(&mut self) {
        if let Some((t, c)) = self.msg_start.take() {
            self.messages += 1;
            self.elapsed += t.elapsed();
            self.cpu += thread_cpu().saturating_sub(c);
        }
    }

    /// Node `i` starts (at level `node` only).
    pub fn node_start(&mut self) {
        if self.level == Level::Node {
            self.node_start = Some((Instant::now(), thread_cpu()));
        }
    }

    /// Node `i` is done.
    pub fn node_end(&mut self, i: usize) {
        if let Some((t, c)) = self.node_start.take()
            && let Some(n) = self.nodes.get_mut(i)
        {
            n.invocations += 1;
            n.elapsed_us += t.elapsed().as_secs_f64() * 1e6;
            n.cpu_us += thread_cpu().saturating_sub(c).as_secs_f64() * 1e6;
        }
    }

    /// Write a snapshot when the interval has passed (or `last`), then start a new interval.
    pub fn maybe_emit(&mut self, last: bool) {
        if self.level == Level::Off {
            return;
        }
        let span = self.since.elapsed();
        if span < self.interval && !last {
            return;
        }
        let cpu_us = self.cpu.as_secs_f64() * 1e6;
        let snap = Snapshot {
            record: "sample-flow.stats/1",
            time_utc: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            pid: std::process::id(),
            thread: self.thread,
            level: self.level,
            interval_s: span.as_secs_f64(),
            messages: self.messages,
            elapsed_us: self.elapsed.as_secs_f64() * 1e6,
            cpu_us,
            cpu_us_per_msg: (self.messages > 0).then(|| cpu_us / self.messages as f64),
            nodes: if self.level == Level::Node {
                self.nodes.clone()
            } else {
                Vec::new()
            },
            last,
        };
        if let Ok(line) = serde_json::to_string(&snap) {
            self.sink.write(&line);
        }
        self.since = Instant::now();
        self.messages = 0;
        self.elapsed = Duration::ZERO;
        self.cpu = Duration::ZERO;
        for n in &mut self.nodes {
            *n = NodeStats {
                node: n.node,
                ..NodeStats::default()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_sink() -> (tempfile::NamedTempFile, Sink) {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let handle = f.reopen().expect("reopen");
        (f, Sink::File(Arc::new(Mutex::new(handle))))
    }

    fn burn(d: Duration) {
        let start = thread_cpu();
        while thread_cpu() - start < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn node_level_counts_messages_and_cpu_per_node() {
        let (f, sink) = file_sink();
        let mut c = Collector::new(Level::Node, 3, &["A", "B"], Duration::from_secs(3600), sink);
        for _ in 0..2 {
            c.message_start();
            c.node_start();
            burn(Duration::from_millis(2));
            c.node_end(0);
            c.node_start();
            c.node_end(1);
            c.message_end();
        }
        c.maybe_emit(false);
        assert_eq!(
            std::fs::read_to_string(f.path()).expect("read"),
            "",
            "interval not over"
        );
        c.maybe_emit(true);
        let text = std::fs::read_to_string(f.path()).expect("read");
        let v: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(v["thread"], 3);
        assert_eq!(v["messages"], 2);
        assert_eq!(v["final"], true);
        assert_eq!(v["nodes"][0]["invocations"], 2);
        let a = v["nodes"][0]["cpu_us"].as_f64().expect("cpu");
        assert!(a >= 4000.0, "two 2 ms burns, got {a} us");
        let total = v["cpu_us"].as_f64().expect("cpu");
        assert!(total >= a, "the thread's CPU includes its nodes'");
    }

    #[test]
    fn thread_level_has_no_nodes_and_off_writes_nothing() {
        let (f, sink) = file_sink();
        let mut c = Collector::new(Level::Thread, 0, &["A"], Duration::ZERO, sink.clone());
        c.message_start();
        c.node_start();
        c.node_end(0);
        c.message_end();
        c.maybe_emit(false);
        let mut off = Collector::new(Level::Off, 1, &["A"], Duration::ZERO, sink);
        off.message_start();
        off.message_end();
        off.maybe_emit(true);
        let text = std::fs::read_to_string(f.path()).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
        assert_eq!(v["messages"], 1);
        assert_eq!(v["nodes"].as_array().map(Vec::len), Some(0));
    }
}
