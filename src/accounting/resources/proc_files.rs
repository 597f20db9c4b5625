//! The per-process files beyond CPU: `/proc/PID/io`, each thread's `status` for context
//! switches, the process's `status` for its memory, its `fd` links for its sockets; and a
//! cgroup's `io.stat` and `memory.current`/`memory.peak` (cgroup v2).

use super::ProcUse;

/// `/proc/PID/io`: bytes that reached the storage layer, and the read and write calls (all
/// of them: files, sockets and pipes alike).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Io {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub syscr: u64,
    pub syscw: u64,
}

impl From<procfs::process::Io> for Io {
    fn from(i: procfs::process::Io) -> Self {
        Io {
            read_bytes: i.read_bytes,
            write_bytes: i.write_bytes,
            syscr: i.syscr,
            syscw: i.syscw,
        }
    }
}

/// A cgroup's disk bytes and memory, where its controllers show them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupUse {
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    pub memory: Option<u64>,
    pub memory_peak: Option<u64>,
}

/// A process's counters; each source that cannot be read (gone, another user's) is `None`.
pub fn process(pid: i32) -> ProcUse {
    // Ended since it was listed: nothing of it to read, and no sockets held.
    let ended = || ProcUse {
        sockets: Some(Vec::new()),
        ended: true,
        ..ProcUse::default()
    };
    let p = match procfs::process::Process::new(pid) {
        Ok(p) => p,
        Err(procfs::ProcError::NotFound(_)) => return ended(),
        Err(_) => return ProcUse::default(),
    };
    let status = match p.status() {
        Ok(s) => Some(s),
        // Reaped between opening its folder and reading its status.
        Err(procfs::ProcError::NotFound(_)) => return ended(),
        Err(_) => None,
    };
    // A zombie has ended too: its status shows no memory, its counters are its last. (A
    // leader that exited while its other threads run shows Z as well, and is alive.)
    if status
        .as_ref()
        .is_some_and(|s| s.state.starts_with(['Z', 'X']) && s.threads <= 1)
    {
        return ended();
    }
    let kib = |v: Option<u64>| v.map(|k| k.saturating_mul(1024));
    ProcUse {
        io: p.io().ok().map(Io::from),
        // A thread that ends between listing and reading is simply not there.
        switches: p.tasks().ok().map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| {
                    let s = t.status().ok()?;
                    Some((
                        t.tid,
                        (s.voluntary_ctxt_switches?, s.nonvoluntary_ctxt_switches?),
                    ))
                })
                .collect()
        }),
        rss: kib(status.as_ref().and_then(|s| s.vmrss)),
        peak_rss: kib(status.as_ref().and_then(|s| s.vmhwm)),
        sockets: sockets(&p),
        ended: false,
    }
}

/// The inodes of the sockets `p` holds. Another user's descriptors without root: none
/// known (`None`), not none held. A process that ended since it was listed holds none: a
/// short-lived member (a broker's helper, a CLI's VM) must not take its group's network
/// figure with it, as it did under CI's load.
fn sockets(p: &procfs::process::Process) -> Option<Vec<u64>> {
    match p.fd() {
        Ok(fds) => Some(
            fds.flatten()
                .filter_map(|fd| match fd.target {
                    procfs::process::FDTarget::Socket(inode) => Some(inode),
                    _ => None,
                })
                .collect(),
        ),
        Err(procfs::ProcError::NotFound(_)) if !p.is_alive() => Some(Vec::new()),
        Err(_) => None,
    }
}

/// One of oemputx's own threads (a `thread:` group's member): its io and switches.
pub fn own_thread(tid: i32) -> ProcUse {
    let task = procfs::process::Process::myself().and_then(|me| me.task_from_tid(tid));
    let task = match task {
        Ok(t) => t,
        // The thread ended since it was listed: it went in the window.
        Err(procfs::ProcError::NotFound(_)) => {
            return ProcUse {
                ended: true,
                ..ProcUse::default()
            };
        }
        Err(_) => return ProcUse::default(),
    };
    ProcUse {
        io: task.io().ok().map(Io::from),
        switches: task.status().ok().and_then(|s| {
            let counts = (s.voluntary_ctxt_switches?, s.nonvoluntary_ctxt_switches?);
            Some(std::collections::HashMap::from([(tid, counts)]))
        }),
        ..ProcUse::default()
    }
}

/// A cgroup's counters: `io.stat` summed over its devices, `memory.stat`'s anonymous memory
/// and `memory.peak` (which holds page cache too). `None` when the folder shows none of them (cgroup v1, or no controller).
pub fn cgroup(dir: &std::path::Path) -> Option<CgroupUse> {
    // Through the bounded reader: the folder is the user's `cgroup:` selector, and a FIFO
    // or a huge file named like a controller's must not stall or swell a snapshot.
    let read = |f: &str| crate::files::read_text(&dir.join(f), 1 << 20, "cgroup file").ok();
    let number = |f: &str| read(f).and_then(|t| t.trim().parse::<u64>().ok());
    let (read_bytes, write_bytes) = match read("io.stat") {
        Some(text) => {
            let (r, w) = io_stat(&text);
            (Some(r), Some(w))
        }
        None => (None, None),
    };
    // The cgroup's anonymous memory, not memory.current: that holds the page cache, which
    // a broker writing its journal grows without keeping a byte of it.
    let anon = read("memory.stat").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("anon ")?.trim().parse::<u64>().ok())
    });
    let u = CgroupUse {
        read_bytes,
        write_bytes,
        memory: anon,
        memory_peak: number("memory.peak"),
    };
    (u != CgroupUse::default()).then_some(u)
}

/// `io.stat`'s rbytes and wbytes summed over its devices.
fn io_stat(text: &str) -> (u64, u64) {
    let mut sums = (0u64, 0u64);
    for field in text.split_whitespace() {
        if let Some((k, v)) = field.split_once('=')
            && let Ok(v) = v.parse::<u64>()
        {
            match k {
                "rbytes" => sums.0 += v,
                "wbytes" => sums.1 += v,
                _ => {}
            }
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn io_stat_sums_its_devices() {
        let text = "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n\
                    253:1 rbytes=10 wbytes=20 rios=1 wios=1 dbytes=0 dios=0\n";
        assert_eq!(io_stat(text), (4106, 8212));
    }

    #[test]
    fn this_process_s_writes_and_switches_are_counted() {
        let me = std::process::id() as i32;
        let before = process(me);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f = std::fs::File::create(dir.path().join("x")).expect("create");
        for _ in 0..10 {
            f.write_all(&[0u8; 100]).expect("write");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = process(me);
        let (a, b) = (before.io.expect("io"), after.io.expect("io"));
        // Other test threads write too: at least ours.
        assert!(b.syscw >= a.syscw + 10, "{a:?} → {b:?}");
        let sum = |u: &ProcUse| {
            u.switches
                .as_ref()
                .expect("switches")
                .values()
                .map(|s| s.0)
                .sum::<u64>()
        };
        let (va, vb) = (sum(&before), sum(&after));
        assert!(vb > va, "the sleep is a voluntary switch: {va} → {vb}");
        assert!(
            after.rss.expect("rss") > 0 && after.peak_rss.expect("hwm") >= after.rss.expect("rss")
        );
    }
}
