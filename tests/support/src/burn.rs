//! The C hold-out responder of lab/holdout/burn_responder.c, built once per test process:
//! two functions (`parse_request`, `render_reply`) that burn a known CPU time per message,
//! and what they really took, read back when it stops.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The responder's binary, built from its source with frame pointers.
pub fn burn_responder_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lab/holdout/burn_responder.c");
        let dir = tempfile::tempdir().expect("a temporary folder").keep();
        let bin = dir.join("burn_responder");
        let out = Command::new("gcc")
            .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(&bin)
            .arg(&src)
            .arg("-lrabbitmq")
            .output()
            .expect("gcc runs");
        assert!(
            out.status.success(),
            "building {}: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        bin
    })
    .clone()
}

/// What the responder measured of itself: messages, µs per message in each function, and
/// its whole process's CPU per message from its first message on (its own clock).
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    pub messages: u64,
    pub parse_request_us: f64,
    pub render_reply_us: f64,
    pub process_us: f64,
    pub by_size: BySize,
    /// Its own counters beyond CPU per message (with --write-bytes or --leak-bytes): JSON
    /// null otherwise.
    pub own: serde_json::Value,
}

/// Each request size's whole CPU per message (µs), as the responder measured it
/// (`--ns-per-byte`'s truth: receive, both functions, reply and ack, by body size).
pub type BySize = std::collections::BTreeMap<usize, f64>;

impl Truth {
    /// Each function's µs per message, by name.
    pub fn functions(&self) -> [(&'static str, f64); 2] {
        [
            ("parse_request", self.parse_request_us),
            ("render_reply", self.render_reply_us),
        ]
    }
}

/// The responder on a queue (which it declares); stopped, and its queue deleted, on drop.
pub struct BurnResponder {
    child: Option<Child>,
    truth: PathBuf,
    trace: PathBuf,
    _dir: tempfile::TempDir,
    pub queue: String,
}

impl BurnResponder {
    /// `parse_request` for `a_us` and `render_reply` for `b_us` of CPU per message, each
    /// varied by ±`jitter` (a fraction) per message.
    pub fn start(queue: &str, a_us: f64, b_us: f64, jitter: f64) -> BurnResponder {
        BurnResponder::start_with(queue, a_us, b_us, jitter, &[])
    }

    /// As [`BurnResponder::start`], with more of its options (e.g. `--ns-per-byte 25`).
    pub fn start_with(
        queue: &str,
        a_us: f64,
        b_us: f64,
        jitter: f64,
        more: &[&str],
    ) -> BurnResponder {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let truth = dir.path().join("truth.json");
        let trace = dir.path().join("trace.txt");
        let mut child = Command::new(burn_responder_bin())
            .args(["--input-queue", queue, "--url", &crate::amqp_url()])
            .args(["--a-us", &a_us.to_string(), "--b-us", &b_us.to_string()])
            .args(["--jitter", &jitter.to_string()])
            .args(more)
            .arg("--truth")
            .arg(&truth)
            .arg("--trace")
            .arg(&trace)
            .stdout(Stdio::piped())
            .spawn()
            .expect("the responder starts");
        let out = child.stdout.take().expect("its stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(l) if l.contains("consuming") => break,
                _ if Instant::now() > until => panic!("burn_responder did not start on {queue}"),
                _ => {}
            }
        }
        BurnResponder {
            child: Some(child),
            truth,
            trace,
            _dir: dir,
            queue: queue.to_string(),
        }
    }

    /// A responder burning `us` of CPU per message, and its drain rate (messages a second)
    /// measured apart from oemputx: `n` requests queued before it starts, timed from its
    /// first word until their `n` replies are on a queue of their own.
    pub fn start_draining(queue: &str, us: f64, n: usize) -> (BurnResponder, f64) {
        let replies = crate::fresh_queue("drained");
        let _guard = crate::QueueGuard(replies.clone());
        crate::declare_queue(queue);
        crate::declare_queue(&replies);
        crate::publish_requests(queue, n, &replies);
        let r = BurnResponder::start(queue, us, 0.0, 0.0);
        // From the replies already there once it said it consumes: its start-up left out.
        let (t0, d0) = (Instant::now(), crate::queue_depth(&replies));
        let until = t0 + Duration::from_secs(120);
        while crate::queue_depth(&replies) < n as u32 {
            assert!(
                Instant::now() < until,
                "the responder did not drain {n} requests in 2 minutes"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let rate = (n as u32 - d0) as f64 / t0.elapsed().as_secs_f64();
        (r, rate)
    }

    /// How many messages a second it answered between two instants (ns since the epoch),
    /// by its own count (its trace, interpolated).
    pub fn answered_per_second_between(&self, from_ns: u128, to_ns: u128) -> Option<f64> {
        let (m0, _) = self.traced_at(from_ns)?;
        let (m1, _) = self.traced_at(to_ns)?;
        let secs = (to_ns.saturating_sub(from_ns)) as f64 / 1e9;
        (secs > 0.0).then(|| (m1 - m0) / secs)
    }

    /// Its own CPU µs per message between two instants (ns since the epoch), from its
    /// trace (a line every 20 ms, interpolated); None with no message between them.
    pub fn cpu_per_message_between(&self, from_ns: u128, to_ns: u128) -> Option<f64> {
        let (m0, c0) = self.traced_at(from_ns)?;
        let (m1, c1) = self.traced_at(to_ns)?;
        (m1 > m0).then(|| (c1 - c0) / 1000.0 / (m1 - m0))
    }

    /// (messages answered, process CPU ns) at an instant, from the trace.
    fn traced_at(&self, at_ns: u128) -> Option<(f64, f64)> {
        let text = std::fs::read_to_string(&self.trace).ok()?;
        let points: Vec<(f64, f64, f64)> = text
            .lines()
            .filter_map(|l| {
                let v: Vec<f64> = l.split(' ').filter_map(|x| x.parse().ok()).collect();
                (v.len() == 3).then(|| (v[0], v[1], v[2]))
            })
            .collect();
        // Past its last line (the last message ends a ladder) nothing more was answered.
        let (first, last) = (points.first()?.0, points.last()?.0);
        let at = |t: f64| -> Option<(f64, f64)> {
            let t = t.clamp(first, last);
            let w = points.windows(2).find(|w| w[0].0 <= t && t <= w[1].0)?;
            let f = (t - w[0].0) / (w[1].0 - w[0].0).max(1.0);
            Some((
                w[0].1 + f * (w[1].1 - w[0].1),
                w[0].2 + f * (w[1].2 - w[0].2),
            ))
        };
        at(at_ns as f64)
    }

    /// The drain rate of a responder burning `us` a message, measured as
    /// [`BurnResponder::start_draining`] does, the responder stopped and its queue deleted.
    pub fn drain_rate(queue: &str, us: f64, n: usize) -> f64 {
        BurnResponder::start_draining(queue, us, n).1
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Stop it and read what it measured.
    pub fn stop(mut self) -> Truth {
        self.end();
        let text = std::fs::read_to_string(&self.truth).expect("the responder's truth file");
        let v: serde_json::Value = serde_json::from_str(&text).expect("its JSON");
        Truth {
            messages: v["messages"].as_u64().unwrap_or(0),
            parse_request_us: v["parse_request_us"].as_f64().unwrap_or(f64::NAN),
            render_reply_us: v["render_reply_us"].as_f64().unwrap_or(f64::NAN),
            process_us: v["process_us"].as_f64().unwrap_or(f64::NAN),
            by_size: v["by_size"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default(),
            own: v["own"].clone(),
        }
    }

    fn end(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            // It writes its truth and leaves within a tick (100 ms); killed after 5 s.
            let until = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for BurnResponder {
    fn drop(&mut self) {
        self.end();
        crate::delete_queue(&self.queue);
    }
}
