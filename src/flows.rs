//! Flows that oemputx starts itself (`sweep`, the A/B gate): the command parsed once, its
//! processes started directly (no shell) with the broker's URL and their request queue, the
//! wait until they consume, and their stop when dropped: each flow process leads a process
//! group of its own (`crate::children`), and the whole group gets SIGTERM, then SIGKILL, so
//! that what a flow's command starts (`sh -c 'flow & wait'`) stops with it.
//!
//! A flow gets its URL and queue as `--url URL --input-queue Q` (unless its command already
//! sets them) and as the environment variables `OEMPUTX_URL` and `OEMPUTX_QUEUE`, so that any
//! responder can take them one way or the other.
//!
//! **No password on a child's command line**, where every local user can read it
//! (/proc/PID/cmdline, `ps`): a broker URL with a password goes in `OEMPUTX_URL` only, not as
//! `--url`; a PostgreSQL URL in the flow's own command loses its password to `PGPASSWORD`
//! (libpq's convention, which sample-flow follows too); any other URL with a password there
//! is refused with what to do. RabbitMQ's default `guest:guest` is no secret (public, and
//! the broker lets it in over loopback only), so it stays in the URL: a responder that
//! reads only `--url` works against a default broker.

use crate::children::Group;
use crate::config::ConfigError;
use crate::config::flow_command::{FlowCommand, secret_of, without_secrets};
use crate::transport::Endpoint;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long flows may take to start consuming.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long stopped flows may take to end before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The same once a signal stopped oemputx: the first SIGTERM must end it within a second,
/// and a flow that ignores SIGTERM held it for the whole grace.
const SIGNALLED_GRACE: Duration = Duration::from_millis(500);
/// Stderr lines kept per flow, for the error when it dies.
const LOG_LINES: usize = 5;

/// Flow processes serving one request queue; stopped when dropped.
pub struct Flows {
    /// Each flow process leads a process group of its own: what it starts stops with it.
    children: Vec<Group>,
    /// The last lines each child wrote to stderr, for error messages.
    logs: Vec<Arc<Mutex<Vec<String>>>>,
    endpoint: Endpoint,
    queue: String,
    /// Whether the flows have had their SIGTERM ([`Flows::signal`]): sent once, so that a
    /// flow that handles a second signal as "die now" still ends its own way.
    signalled: bool,
}

impl Flows {
    /// Start `processes` copies of `cmd` on `queue` at `endpoint`, each with `extra`
    /// arguments (e.g. `--threads N`).
    pub fn start(
        cmd: &FlowCommand,
        endpoint: &Endpoint,
        queue: &str,
        processes: usize,
        extra: &[String],
    ) -> Result<Flows, ConfigError> {
        Flows::start_with_env(cmd, endpoint, queue, processes, extra, &[])
    }

    /// [`Flows::start`] with these environment variables set too.
    pub fn start_with_env(
        cmd: &FlowCommand,
        endpoint: &Endpoint,
        queue: &str,
        processes: usize,
        extra: &[String],
        env: &[(&str, String)],
    ) -> Result<Flows, ConfigError> {
        let mut flows = Flows {
            children: Vec::new(),
            logs: Vec::new(),
            endpoint: endpoint.clone(),
            queue: queue.to_string(),
            signalled: false,
        };
        let url = endpoint.kind().url_for_flow();
        let free = without_secrets(&cmd.args).map_err(|why| ConfigError::BadValue {
            flag: cmd.flag,
            why,
        })?;
        // The broker's URL goes on the command line only when it holds no secret.
        let url_arg = url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .is_none_or(|u| secret_of(&u).is_none());
        for _ in 0..processes {
            let mut c = Command::new(&cmd.program);
            c.args(&free.args).args(extra);
            c.envs(free.env.iter().map(|(k, v)| (k, v)));
            c.envs(cmd.env.iter().map(|(k, v)| (k, v)));
            c.envs(env.iter().map(|(k, v)| (k, v)));
            if !cmd.sets("--input-queue") {
                c.args(["--input-queue", queue]);
            }
            c.env("OEMPUTX_QUEUE", queue);
            if let Some(url) = &url {
                if !cmd.sets("--url") && url_arg {
                    c.args(["--url", url]);
                }
                c.env("OEMPUTX_URL", url);
            }
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let mut child =
                Group::spawn(&mut c, STOP_GRACE).map_err(|e| ConfigError::BadValue {
                    flag: cmd.flag,
                    why: format!("cannot start {}: {e}", cmd.program.display()),
                })?;
            let log = Arc::new(Mutex::new(Vec::new()));
            if let Some(stderr) = child.child_mut().stderr.take() {
                let log = log.clone();
                std::thread::spawn(move || keep_tail(stderr, &log));
            }
            flows.children.push(child);
            flows.logs.push(log);
        }
        Ok(flows)
    }

    /// The flows' process ids.
    pub fn pids(&self) -> Vec<i32> {
        self.children.iter().map(|c| c.id() as i32).collect()
    }

    /// Why a flow has already exited, if one has.
    pub fn exited(&self) -> Option<String> {
        for (c, log) in self.children.iter().zip(&self.logs) {
            if let Some(status) = c.ended() {
                let tail = log.lock().map(|l| l.join("\n")).unwrap_or_default();
                let tail = crate::secret::scrub(&tail);
                return Some(format!("the flow exited ({status}): {tail}"));
            }
        }
        None
    }

    /// Wait until the queue has `want` consumers (the flows are ready), or a flow dies, or
    /// 20 s pass. A transport that cannot count consumers is taken as ready.
    pub(crate) fn wait_ready(&mut self, want: usize) -> anyhow::Result<()> {
        self.wait_ready_within(want, READY_TIMEOUT)
    }

    /// [`Flows::wait_ready`] with its own time limit (a flow under valgrind starts slowly).
    pub(crate) fn wait_ready_within(
        &mut self,
        want: usize,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        // Whether the current run of unanswered counts has been said.
        let mut said = false;
        loop {
            if let Some(why) = self.exited() {
                anyhow::bail!("{why}");
            }
            if crate::signals::interrupted() {
                anyhow::bail!(
                    "interrupted while waiting for the flows to consume '{}'",
                    self.queue
                );
            }
            // A count that gets no answer within its bound is asked again until the wait's
            // own deadline: on a loaded host (the test command's builds and six test
            // threads beside the instruction gate) RabbitMQ answered none of three counts
            // in a row within their 2 s, and the gate ended with exit 1. The first failure
            // is said; the last one is the error.
            let have = match self.endpoint.kind().consumers(&self.queue) {
                Ok(have) => have,
                Err(e) if Instant::now() < deadline => {
                    if !std::mem::replace(&mut said, true) {
                        crate::say!(
                            "waiting for the flows: {e}; asking again until the flows' start-up bound"
                        );
                    }
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            said = false;
            let Some(have) = have else {
                return Ok(());
            };
            if have as usize >= want {
                return Ok(());
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "the flows did not start consuming '{}' within {} s ({have} of {want} consumers); check the flow's command",
                    self.queue,
                    timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Flows {
    /// Send every flow's whole group SIGTERM without waiting for it to end: several
    /// commands' flows then end side by side instead of one after the other (a sweep's
    /// four points took a second to stop after a signal).
    pub fn signal(&mut self) {
        if !std::mem::replace(&mut self.signalled, true) {
            for c in &self.children {
                c.signal(nix::sys::signal::Signal::SIGTERM);
            }
        }
    }
}

impl Drop for Flows {
    /// Every flow's whole group gets SIGTERM at once, and all share one grace before
    /// SIGKILL; each leader is reaped last (crate::children says why).
    fn drop(&mut self) {
        self.signal();
        let grace = if crate::signals::interrupted() {
            SIGNALLED_GRACE
        } else {
            STOP_GRACE
        };
        let deadline = Instant::now() + grace;
        for c in &mut self.children {
            c.finish(deadline);
        }
    }
}

/// The longest line of a flow's stderr kept (the rest of a longer line is dropped).
pub const LOG_LINE_BYTES: usize = 4096;

/// Read a flow's stderr to its end, keeping its last [`LOG_LINES`] lines, each cut at
/// [`LOG_LINE_BYTES`] and decoded lossily. It never stops early: a reader that gave up at
/// a byte that is not UTF-8 closed the pipe, and the flow died of SIGPIPE at its next write;
/// and a line is never held whole, however long it runs.
fn keep_tail(stderr: impl std::io::Read, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        let (done, used) = match reader.fill_buf() {
            Ok([]) => (true, 0),
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(at) => {
                    let room = LOG_LINE_BYTES.saturating_sub(line.len());
                    line.extend_from_slice(&buf[..at.min(room)]);
                    push_line(log, &mut line);
                    (false, at + 1)
                }
                None => {
                    let room = LOG_LINE_BYTES.saturating_sub(line.len());
                    line.extend_from_slice(&buf[..buf.len().min(room)]);
                    (false, buf.len())
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => (false, 0),
            Err(_) => (true, 0),
        };
        reader.consume(used);
        if done {
            if !line.is_empty() {
                push_line(log, &mut line);
            }
            return;
        }
    }
}

fn push_line(log: &Mutex<Vec<String>>, line: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(line).into_owned();
    line.clear();
    if let Ok(mut l) = log.lock() {
        l.push(text);
        let excess = l.len().saturating_sub(LOG_LINES);
        l.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flows_stderr_is_read_to_its_end_whatever_its_bytes_and_lines_are_bounded() {
        let long = vec![b'x'; 3 * super::LOG_LINE_BYTES];
        let mut input = b"first\n\xff\xfe not UTF-8\n".to_vec();
        input.extend(&long);
        input.extend(b"\nlast, no newline");
        let log = std::sync::Mutex::new(Vec::new());
        super::keep_tail(&input[..], &log);
        let l = log.lock().expect("log");
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!(l[0], "first");
        assert!(l[1].ends_with(" not UTF-8"), "{:?}", l[1]);
        assert_eq!(l[2].len(), super::LOG_LINE_BYTES);
        assert_eq!(l[3], "last, no newline");
    }

    use super::*;
    use crate::children::testing::{all_gone, pids_in};

    /// What every local user can read of a started flow: its command line. The planted
    /// password is in neither the flow command's nor the broker's part of it, only in the
    /// flow's own environment.
    // Its run is on RabbitMQ.
    #[cfg(feature = "rabbitmq")]
    #[test]
    fn a_started_flow_s_command_line_holds_no_password() {
        let cmd = FlowCommand::parse(
            "--flow-cmd",
            "sh -c 'sleep 5' flow --db postgres://postgres:SeCrEt99@127.0.0.1:5432/test",
        )
        .expect("parses");
        let Ok(endpoint) = crate::transport::parse_url("amqp://app:SeCrEt99@127.0.0.1:1/%2f")
        else {
            panic!("URL parses");
        };
        let flows = Flows::start(&cmd, &endpoint, "q.secret.test", 1, &[]).expect("starts");
        let pid = flows.pids()[0];
        let read = |what: &str| {
            std::fs::read(format!("/proc/{pid}/{what}"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .expect("readable")
        };
        // Between fork and exec the child's command line is empty, or still the test's.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut cmdline = read("cmdline");
        while !cmdline.starts_with("sh ") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            cmdline = read("cmdline");
        }
        assert!(!cmdline.contains("SeCrEt99"), "{cmdline}");
        assert!(
            cmdline.contains("postgres://postgres@127.0.0.1:5432/test"),
            "{cmdline}"
        );
        assert!(!cmdline.contains("--url"), "{cmdline}");
        let environ = read("environ");
        assert!(environ.contains("PGPASSWORD=SeCrEt99"));
        assert!(
            environ.contains("OEMPUTX_URL=amqp://app:SeCrEt99@"),
            "{environ}"
        );
    }

    /// A flow is handed its broker's password percent-encoded (`OEMPUTX_URL`); one that
    /// prints it so, not in a URL's password place, and dies must not show it either.
    #[cfg(feature = "rabbitmq")]
    #[test]
    fn a_dying_flow_that_prints_its_percent_encoded_password_does_not_show_it() {
        let cmd = FlowCommand::parse(
            "--flow-cmd",
            "sh -c 'echo \"retrying with ${OEMPUTX_URL#*app:}\" >&2; sleep 0.3; exit 3'",
        )
        .expect("parses");
        let Ok(endpoint) = crate::transport::parse_url("amqp://app:p%40ss%2Fw0rd@127.0.0.1:1/%2f")
        else {
            panic!("URL parses");
        };
        let flows = Flows::start(&cmd, &endpoint, "q.secret.enc", 1, &[]).expect("starts");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut why = None;
        while why.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            why = flows.exited();
        }
        let why = why.expect("the flow exited");
        assert!(why.contains("retrying with ***@127.0.0.1"), "{why}");
        assert!(!why.contains("p%40ss") && !why.contains("w0rd"), "{why}");
    }

    #[test]
    fn a_keyword_password_leaves_the_command_line_and_a_dying_flow_does_not_show_it() {
        // The flow prints its bare password and dies: oemputx's error must not repeat it.
        let cmd = FlowCommand::parse(
            "--flow-cmd",
            "sh -c 'echo \"login failed for $PGPASSWORD\" >&2; sleep 0.3; exit 3' flow --db 'host=127.0.0.1 password=SeCrEt77x dbname=test'",
        )
        .expect("parses");
        let Ok(endpoint) = crate::transport::parse_url("embedded:") else {
            panic!("URL parses");
        };
        let flows = Flows::start(&cmd, &endpoint, "q.secret.kw", 1, &[]).expect("starts");
        let pid = flows.pids()[0];
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        assert!(!cmdline.contains("SeCrEt77x"), "{cmdline}");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut why = None;
        while why.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            why = flows.exited();
        }
        let why = why.expect("the flow exited");
        assert!(why.contains("login failed for ***"), "{why}");
    }

    /// A flow command that starts processes of its own: `sh -c` with two background
    /// sleeps, whose pids it writes to `file`, then `then`.
    fn tree_flow(file: &std::path::Path, then: &str) -> FlowCommand {
        FlowCommand::parse(
            "--flow-cmd",
            &format!(
                "sh -c 'sleep 300 & echo $! >> {f}; sleep 300 & echo $! >> {f}; {then}'",
                f = file.display()
            ),
        )
        .expect("parses")
    }

    #[test]
    fn a_stopped_flow_leaves_no_grandchild_running() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("pids");
        let Ok(endpoint) = crate::transport::parse_url("embedded:") else {
            panic!("URL parses");
        };
        let flows =
            Flows::start(&tree_flow(&file, "wait"), &endpoint, "q.tree", 1, &[]).expect("starts");
        let pids = pids_in(&file, 2);
        assert_eq!(pids.len(), 2, "{pids:?}");
        drop(flows);
        assert!(all_gone(&pids), "the flow's children still run: {pids:?}");
    }

    #[test]
    fn a_flow_that_dies_leaves_no_grandchild_running() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("pids");
        let Ok(endpoint) = crate::transport::parse_url("embedded:") else {
            panic!("URL parses");
        };
        let flows =
            Flows::start(&tree_flow(&file, "exit 3"), &endpoint, "q.tree", 1, &[]).expect("starts");
        let pids = pids_in(&file, 2);
        assert_eq!(pids.len(), 2, "{pids:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut why = None;
        while why.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            why = flows.exited();
        }
        assert!(why.is_some_and(|w| w.contains("exit status: 3")));
        drop(flows);
        assert!(
            all_gone(&pids),
            "the dead flow's children still run: {pids:?}"
        );
    }
}
