//! The processes oemputx starts and waits on while it measures (the flows of `sweep`,
//! `compare` and the gates, the command `account` runs): each the leader of a process group
//! of its own, and stopped as that group, so that what it started in turn (`sh -c 'flow &
//! wait'`, a driver that forks workers) stops with it on every path — a normal end, an
//! error, a signal, a drop. Signalling the child alone left its children running.
//!
//! **Why the leader is reaped last.** A process id is free for the kernel to give to any
//! process on the host once nothing holds it, and a signal to that number (or to the group
//! of that number) would then reach a stranger. An exited child that is not yet reaped
//! holds its id, and with it its group's: so how a leader ended is read without reaping it
//! (`waitid` with `WNOWAIT`), and it is reaped only after its group has been signalled and
//! is gone.

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How often a stop looks whether the group is gone.
const POLL: Duration = Duration::from_millis(20);
/// How long the processes SIGKILL reached are waited for (they cannot refuse it).
const AFTER_KILL: Duration = Duration::from_secs(2);

/// A child process and the process group it leads; the group is stopped when dropped.
pub struct Group {
    child: Child,
    /// The leader's status once it is reaped (after which its id is never signalled).
    reaped: Option<ExitStatus>,
    /// How long a drop waits after SIGTERM before SIGKILL.
    grace: Duration,
}

/// Have the kernel send the child SIGTERM when oemputx dies, SIGKILL included, so that no
/// flow or wrapped command outlives the run that started it. The signal follows the thread
/// that forked: children are started from the main thread, which lives as long as the
/// process. It reaches the child only; the child's own children are its group's, which
/// every other exit path of oemputx signals.
fn dies_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
    // calls (prctl, getppid, _exit) and no allocation.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(std::io::Error::from)?;
            // The parent died before the line above: nobody will send the signal.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                nix::libc::_exit(1);
            }
            Ok(())
        });
    }
}

impl Group {
    /// Start `cmd` as the leader of a new process group, to be given `grace` between SIGTERM
    /// and SIGKILL when it is stopped. A terminal's Ctrl-C no longer reaches it directly:
    /// oemputx, whose handler sees it, passes it on to the whole group.
    pub fn spawn(cmd: &mut Command, grace: Duration) -> std::io::Result<Group> {
        cmd.process_group(0);
        dies_with_parent(cmd);
        Ok(Group {
            child: cmd.spawn()?,
            reaped: None,
            grace,
        })
    }

    /// The leader's process id (its group's id too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader, to take its pipes.
    pub(crate) fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// How the leader ended, if it has, read without reaping it (its id stays its own).
    pub fn ended(&self) -> Option<ExitStatus> {
        self.peek().ok().flatten()
    }

    /// [`Group::ended`], with the error of a leader that cannot be waited for (reaped by
    /// something else: nothing in oemputx does).
    pub(crate) fn peek(&self) -> std::io::Result<Option<ExitStatus>> {
        if let Some(status) = self.reaped {
            return Ok(Some(status));
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        // std decodes the raw wait status: the exit code in the second byte, or the signal
        // (0x80 when it dumped core).
        Ok(match waitid(Id::Pid(pid), flags)? {
            WaitStatus::Exited(_, code) => Some(ExitStatus::from_raw((code & 0xff) << 8)),
            WaitStatus::Signaled(_, sig, core) => Some(ExitStatus::from_raw(
                sig as i32 | if core { 0x80 } else { 0 },
            )),
            _ => None,
        })
    }

    /// Send `sig` to every process of the group. Nothing once the leader is reaped: its id
    /// may then name someone else's group.
    pub fn signal(&self, sig: Signal) {
        if self.reaped.is_none() {
            let _ = killpg(Pid::from_raw(self.child.id() as i32), sig);
        }
    }

    /// Stop the group: SIGTERM to all of it, at most its grace for all of it to end, then
    /// SIGKILL; the leader reaped last. Returns how the leader ended.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.signal(Signal::SIGTERM);
        self.finish(Instant::now() + self.grace)
    }

    /// The second half of [`Group::stop`], for several groups signalled first and then
    /// waited for together: wait until `deadline` for the group to be gone, SIGKILL what is
    /// left, and reap the leader.
    pub fn finish(&mut self, deadline: Instant) -> Option<ExitStatus> {
        if self.reaped.is_some() {
            return self.reaped;
        }
        let pgid = self.child.id() as i32;
        while self.alive(pgid) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        if self.alive(pgid) {
            self.signal(Signal::SIGKILL);
            let killed = Instant::now() + AFTER_KILL;
            while self.alive(pgid) && Instant::now() < killed {
                std::thread::sleep(POLL);
            }
        }
        // The leader has ended (or been killed): this does not block for long.
        self.reaped = self.child.wait().ok();
        self.reaped
    }

    /// Whether any process of the group still runs (exited ones waiting to be reaped do
    /// not run). Without a readable /proc, the leader alone is looked at.
    fn alive(&self, pgid: i32) -> bool {
        match group_runs(pgid) {
            Some(runs) => runs,
            None => self.ended().is_none(),
        }
    }
}

impl Drop for Group {
    /// Every path out of a command that started the group stops it: an error, a signal.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a process of group `pgid` runs (one not a zombie), from /proc; None when /proc
/// cannot be read.
fn group_runs(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        // A process that ended between the listing and this read is no member.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, group)) = state_and_group(&stat)
            && group == pgid
            && state != "Z"
            && state != "X"
        {
            return Some(true);
        }
    }
    Some(false)
}

/// A /proc/PID/stat line's state and process group. The command name in parentheses may hold
/// spaces and parentheses itself, so the fields are counted from the last ')'.
fn state_and_group(stat: &str) -> Option<(&str, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

/// What the tests of process trees share (here and in `flows`): the pids a `sh -c` tree
/// wrote down, and whether they are gone.
#[cfg(test)]
pub(crate) mod testing {
    use super::{POLL, state_and_group};
    use std::time::{Duration, Instant};

    /// A process counts as gone once it no longer runs: an exited orphan stays a zombie
    /// until init reaps it, which this container's init does only every few seconds.
    fn runs(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| state_and_group(&s).map(|(state, _)| state != "Z" && state != "X"))
            .unwrap_or(false)
    }

    /// The pids a `sh -c` tree wrote to `file`, waited for (bounded) until it holds `n`.
    pub(crate) fn pids_in(file: &std::path::Path, n: usize) -> Vec<i32> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let pids: Vec<i32> = std::fs::read_to_string(file)
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.len() >= n || Instant::now() > deadline {
                return pids;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Bounded: true once none of `pids` runs. Whatever it finds, it leaves none running
    /// on the host.
    pub(crate) fn all_gone(pids: &[i32]) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|p| runs(*p)) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        let gone = !pids.iter().any(|p| runs(*p));
        for pid in pids.iter().filter(|p| runs(**p)) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{all_gone, pids_in};
    use super::*;

    fn tree(file: &std::path::Path, then: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(format!(
            "sleep 300 & echo $! >> '{f}'; sleep 300 & echo $! >> '{f}'; {then}",
            f = file.display()
        ));
        c
    }

    #[test]
    fn a_stopped_group_leaves_no_grandchild_running() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("pids");
        let mut g = Group::spawn(&mut tree(&file, "wait"), Duration::from_secs(5)).expect("starts");
        let pids = pids_in(&file, 2);
        assert_eq!(pids.len(), 2, "{pids:?}");
        assert!(g.ended().is_none());
        let status = g.stop().expect("reaped");
        assert!(!status.success(), "{status}");
        assert!(all_gone(&pids), "grandchildren still run: {pids:?}");
    }

    #[test]
    fn a_leader_that_exits_leaves_no_grandchild_running_once_dropped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("pids");
        let g = Group::spawn(&mut tree(&file, "exit 3"), Duration::from_secs(5)).expect("starts");
        let pids = pids_in(&file, 2);
        let deadline = Instant::now() + Duration::from_secs(10);
        while g.ended().is_none() && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        // Read without reaping: the same answer twice, and the id still held.
        assert_eq!(g.ended().and_then(|s| s.code()), Some(3));
        assert_eq!(g.ended().and_then(|s| s.code()), Some(3));
        assert!(std::fs::metadata(format!("/proc/{}", g.id())).is_ok());
        drop(g);
        assert!(all_gone(&pids), "grandchildren still run: {pids:?}");
    }

    #[test]
    fn a_group_that_ignores_sigterm_is_killed_after_its_grace() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("pids");
        let mut c = Command::new("sh");
        c.arg("-c").arg(format!(
            "trap '' TERM; sleep 300 & echo $! >> '{}'; wait",
            file.display()
        ));
        let mut g = Group::spawn(&mut c, Duration::from_millis(300)).expect("starts");
        let pids = pids_in(&file, 1);
        g.stop();
        assert!(all_gone(&pids), "still run: {pids:?}");
    }

    #[test]
    fn a_stat_line_gives_state_and_group_whatever_the_name() {
        let line = "42 (a) b (c) S 1 4242 4242 0 -1";
        assert_eq!(state_and_group(line), Some(("S", 4242)));
        assert_eq!(state_and_group("garbage"), None);
    }
}
