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

/// What the responder measured of itself: messages, and µs per message in each function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truth {
    pub messages: u64,
    pub parse_request_us: f64,
    pub render_reply_us: f64,
}

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
    _dir: tempfile::TempDir,
    pub queue: String,
}

impl BurnResponder {
    /// `parse_request` for `a_us` and `render_reply` for `b_us` of CPU per message, each
    /// varied by ±`jitter` (a fraction) per message.
    pub fn start(queue: &str, a_us: f64, b_us: f64, jitter: f64) -> BurnResponder {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let truth = dir.path().join("truth.json");
        let mut child = Command::new(burn_responder_bin())
            .args(["--input-queue", queue, "--url", &crate::amqp_url()])
            .args(["--a-us", &a_us.to_string(), "--b-us", &b_us.to_string()])
            .args(["--jitter", &jitter.to_string()])
            .arg("--truth")
            .arg(&truth)
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
            _dir: dir,
            queue: queue.to_string(),
        }
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
