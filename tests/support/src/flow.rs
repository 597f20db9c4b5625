//! The one launcher of `sample-flow` for the tests and the benchmarks: start it, wait until
//! it says it is consuming, keep its stderr lines, stop it with SIGTERM (a kill after 5 s)
//! when done or dropped.
//!
//! `sample-flow` is its own workspace crate, so its binary is found beside oemputx's in the
//! target folder; `cargo build --workspace` (the test command does) puts it there.
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// The sample-flow binary beside this build's oemputx.
pub fn sample_flow_bin() -> PathBuf {
    let bin = crate::bin::oemputx_bin().with_file_name("sample-flow");
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build --workspace` (the test command does)",
        bin.display()
    );
    bin
}

/// A running sample-flow.
pub struct SampleFlow {
    child: Child,
    lines: Receiver<String>,
}

impl SampleFlow {
    /// Start `sample-flow ARGS` and wait (10 s at most) for its first line, which must
    /// contain `ready_word` ("echoing" for --echo, "processing" for the reference flow).
    pub fn start(args: &[&str], ready_word: &str) -> SampleFlow {
        SampleFlow::start_with_env(args, &[], ready_word)
    }

    /// [`SampleFlow::start`] with environment variables of its own.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)], ready_word: &str) -> SampleFlow {
        let mut child = Command::new(sample_flow_bin())
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sample-flow starts");
        let (tx, lines) = channel();
        let stderr = child.stderr.take().expect("stderr piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_default();
        let flow = SampleFlow { child, lines };
        assert!(
            first.contains(ready_word),
            "sample-flow did not start: {first}"
        );
        flow
    }

    /// The flow's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait up to `within` for it to exit by itself: its exit status and what it printed
    /// after its first line; None when it is still running.
    pub fn wait_exit(
        &mut self,
        within: Duration,
    ) -> Option<(std::process::ExitStatus, Vec<String>)> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut rest = Vec::new();
                while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
                    rest.push(line);
                }
                return Some((status, rest));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Stop it and return what it printed after its first line (its CPU truth at exit).
    pub fn stop(mut self) -> Vec<String> {
        self.terminate();
        // The reader thread ends at the pipe's end, soon after the process.
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            rest.push(line);
        }
        rest
    }

    fn terminate(&mut self) {
        // Not once reaped (`wait_exit` may have): its pid may by now be another process's,
        // another test suite's on a shared host.
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SampleFlow {
    fn drop(&mut self) {
        self.terminate();
    }
}
