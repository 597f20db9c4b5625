//! Syncs per process: perf counting events on the syscall tracepoints
//! `syscalls:sys_enter_{fsync,fdatasync,sync_file_range,msync}`, one per thread of each group
//! member, opened at the member's first snapshot with `inherit` and `inherit_thread` (threads
//! it starts later count into it, processes it forks do not: they are members, and counted,
//! in their own right) and read at every snapshot after. A kernel before 5.13 has no
//! `inherit_thread`: there the counters do not inherit, and threads started later are not
//! counted (the reason says so).
//!
//! Why counters and not tracefs triggers: a counter is this process's alone, ends with it,
//! and leaves the host's tracing state as it found it (other checkouts measure beside us).
//! While any syscall tracepoint is on, the kernel takes its slower system-call path for
//! every task; docs/accounting.md gives what that costs per call.

use super::Key;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

/// The most counters one run opens (four per thread): beyond, syncs are null.
const MAX_COUNTERS: usize = 8192;
/// Descriptors kept free for everything else (the /proc reads, the exports, the broker).
const FDS_SPARE: u64 = 512;

/// Where the syscall tracepoints' ids are, tried in order.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The counters a run holds, or why it holds none.
pub struct Syncs {
    state: Result<Counters, String>,
}

struct Counters {
    /// The tracepoints' ids, one per sync call.
    ids: Vec<u64>,
    /// Each member process's counters (every thread × every call); an empty list for a
    /// process none could be opened for (it ended, or another user's).
    by_process: HashMap<Key, Vec<File>>,
    /// Counters open now, and the most this process may hold (its descriptor limit less
    /// [`FDS_SPARE`], at most [`MAX_COUNTERS`]).
    opened: usize,
    limit: usize,
    /// Whether threads started after a counter opened count into it (`inherit_thread`).
    inherits: bool,
}

impl Default for Syncs {
    fn default() -> Self {
        Syncs::new()
    }
}

impl Syncs {
    /// Ready to count, or off with the reason (no tracefs, no syscall tracepoints).
    pub fn new() -> Syncs {
        Syncs {
            state: tracepoint_ids().map(|ids| Counters {
                ids,
                by_process: HashMap::new(),
                opened: 0,
                limit: descriptor_room(),
                inherits: true,
            }),
        }
    }

    /// Counting switched off by the caller, with the reason reports give.
    pub fn off(why: &str) -> Syncs {
        Syncs {
            state: Err(why.to_string()),
        }
    }

    /// Each of `keys`' syncs so far (counters opened now for a process seen first now read
    /// 0 from here on). A process whose counters could not be opened is left out, so that
    /// a group holding it has no figure rather than a short one.
    pub fn read(&mut self, keys: &[Key]) -> Result<HashMap<Key, u64>, String> {
        let c = match &mut self.state {
            Ok(c) => c,
            Err(e) => return Err(e.clone()),
        };
        // Members gone since: their counters close (a churning group must not pile up
        // descriptors until the limit).
        let now: std::collections::HashSet<&Key> = keys.iter().collect();
        c.by_process.retain(|k, files| {
            let keep = now.contains(k);
            if !keep {
                c.opened -= files.len();
            }
            keep
        });
        for k in keys {
            if !c.by_process.contains_key(k) {
                let files = c.open_process(k.0)?;
                c.by_process.insert(*k, files);
            }
        }
        let mut out = HashMap::new();
        for k in keys {
            let Some(files) = c.by_process.get(k).filter(|f| !f.is_empty()) else {
                continue;
            };
            // A counter that cannot be read leaves the process out: a short figure is worse
            // than none.
            let sum = files.iter().try_fold(0u64, |acc, mut f| {
                let mut b = [0u8; 8];
                f.read_exact(&mut b).ok()?;
                Some(acc + u64::from_ne_bytes(b))
            });
            if let Some(sum) = sum {
                out.insert(*k, sum);
            }
        }
        Ok(out)
    }
}

impl Counters {
    /// A counter per thread of `pid` per sync call. A process that is gone, or whose threads
    /// perf refuses one by one, gets none; a refusal of perf itself ends counting.
    fn open_process(&mut self, pid: i32) -> Result<Vec<File>, String> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Ok(Vec::new());
        };
        let tids: Vec<i32> = tasks
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        let mut files = Vec::new();
        for tid in tids {
            for id in self.ids.clone() {
                if self.opened + files.len() >= self.limit {
                    return Err(format!(
                        "syncs are null: the groups hold more than {} threads (one counter per thread and sync call, at most {} with this process's descriptor limit)",
                        self.limit / self.ids.len().max(1),
                        self.limit
                    ));
                }
                match self.open_inheriting(id, tid) {
                    Ok(f) => files.push(f),
                    // The thread ended between listing and opening.
                    Err(e) if e.raw_os_error() == Some(libc_esrch()) => {}
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::PermissionDenied) => {
                        return Err(format!(
                            "syncs are null: perf refused a counter on the syscall tracepoints for thread {tid} ({e}); run as root, or with CAP_PERFMON and the right to trace the groups' processes"
                        ));
                    }
                    Err(e) => {
                        return Err(format!(
                            "syncs are null: perf could not count the syscall tracepoints ({e})"
                        ));
                    }
                }
            }
        }
        self.opened += files.len();
        Ok(files)
    }

    /// A counter that threads started later count into; on a kernel without
    /// `inherit_thread` (before 5.13: EINVAL), one that does not inherit at all, from then on.
    fn open_inheriting(&mut self, id: u64, tid: i32) -> std::io::Result<File> {
        if self.inherits {
            match open(id, tid, true) {
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EINVAL as i32) => {
                    self.inherits = false;
                }
                other => return other,
            }
        }
        open(id, tid, false)
    }
}

/// How many counters this process may hold: its descriptor limit, raised to the hard
/// limit where it is lower (the usual 1,024 holds 250 threads' counters), less a spare.
fn descriptor_room() -> usize {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    let soft = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    (soft.saturating_sub(FDS_SPARE) as usize).min(MAX_COUNTERS)
}

fn libc_esrch() -> i32 {
    nix::errno::Errno::ESRCH as i32
}

/// The ids of the sync calls' entry tracepoints, or why they cannot be counted.
fn tracepoint_ids() -> Result<Vec<u64>, String> {
    let Some(root) = TRACEFS
        .iter()
        .find(|r| std::path::Path::new(r).join("events/syscalls").is_dir())
    else {
        return Err(
            "syncs are null: tracefs is not mounted, so the syscall tracepoints cannot be named (as root: mount -t tracefs nodev /sys/kernel/tracing)"
                .into(),
        );
    };
    super::SYNC_CALLS
        .iter()
        .map(|call| {
            let path = format!("{root}/events/syscalls/sys_enter_{call}/id");
            crate::files::read_text(std::path::Path::new(&path), 64, "tracepoint id")
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .ok_or_else(|| {
                    format!("syncs are null: the tracepoint syscalls:sys_enter_{call} is not readable at {path} (a kernel without CONFIG_FTRACE_SYSCALLS, or not root)")
                })
        })
        .collect()
}

/// A counting perf event on tracepoint `id` for thread `tid`, and (`inherit`) the threads
/// it starts later.
fn open(id: u64, tid: i32, inherit: bool) -> std::io::Result<File> {
    use perf_event_open_sys as sys;
    let mut attr = sys::bindings::perf_event_attr {
        type_: sys::bindings::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
        config: id,
        ..Default::default()
    };
    if inherit {
        attr.set_inherit(1);
        attr.set_inherit_thread(1);
    }
    // SAFETY: `attr` is a fully initialised perf_event_attr whose size field is its own
    // size; the call reads it and returns a new file descriptor or -1.
    let fd = unsafe {
        sys::perf_event_open(
            &mut attr,
            tid,
            -1,
            -1,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd`, open and owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(File::from(owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_s_fsyncs_are_counted_or_the_reason_is_given() {
        let me = std::process::id() as i32;
        let start = procfs::process::Process::myself()
            .and_then(|p| p.stat())
            .map(|s| s.starttime)
            .expect("own stat");
        let key = (me, start);
        let mut syncs = Syncs::new();
        let before = match syncs.read(&[key]) {
            Ok(m) => m,
            Err(why) => {
                // Not root, or no tracefs: the reason names what to do. CI runs as root with
                // tracefs mounted (ci/services.sh): there the counters must work.
                assert!(why.starts_with("syncs are null: "), "{why}");
                assert!(std::env::var_os("CI").is_none(), "under CI: {why}");
                return;
            }
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let f = File::create(dir.path().join("x")).expect("create");
        for _ in 0..5 {
            f.sync_all().expect("fsync");
            f.sync_data().expect("fdatasync");
        }
        let after = syncs.read(&[key]).expect("read");
        let n = after[&key] - before[&key];
        // Other test threads of this process may sync too: at least ours.
        assert!(n >= 10, "10 syncs made, {n} counted");
    }
}
