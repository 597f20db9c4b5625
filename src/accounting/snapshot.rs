//! Snapshots: every process's CPU at one instant, which processes each group holds, the
//! cgroup counters and the machine's idle time.
//!
//! Processes are keyed by (pid, start time) so that a reused pid is never taken for the old
//! process; a process that vanishes between listing and reading is simply not in the
//! snapshot (procfs reports it as NotFound).

use super::selector::{GroupSpec, ProcFacts, Selector};
use procfs::CurrentSI;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// (pid, start time in clock ticks since boot).
pub type Key = super::resources::Key;

/// How process CPU is read.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum CpuSource {
    /// Process CPU clocks (ns); user/system split from /proc ticks, scaled to the exact total.
    Exact,
    /// /proc/PID/stat utime+stime (clock ticks), for comparison.
    Ticks,
}

/// One process's (or thread's) counters.
#[derive(Debug, Clone)]
pub struct Sample {
    pub pid: i32,
    pub name: String,
    /// CPU so far, nanoseconds (from the CPU clock, or from ticks with `--cpu-source ticks`).
    pub cpu_ns: u64,
    pub utime: u64,
    pub stime: u64,
    /// CPU of reaped children, clock ticks.
    pub children_ticks: u64,
}

/// A cgroup's counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct CgroupSample {
    pub usage_ns: u64,
    /// User and system time, in the unit the cgroup reports them (µs for v2, ticks for v1);
    /// only their ratio is used.
    pub user: u64,
    pub system: u64,
}

/// What a group held at one snapshot.
#[derive(Debug, Clone)]
pub enum Members {
    Procs(Vec<Key>),
    Threads(HashMap<Key, Sample>),
    Cgroup(Option<CgroupSample>),
}

/// The machine at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    /// Every process that could be read.
    pub procs: HashMap<Key, Sample>,
    /// Per group, in the order of the specs.
    pub groups: Vec<Members>,
    /// /proc/stat idle and iowait, clock ticks.
    pub idle_ticks: u64,
    pub iowait_ticks: u64,
    pub steal_ticks: u64,
    /// /proc/stat irq + softirq, clock ticks: CPU no task is charged with.
    pub irq_ticks: u64,
    /// CPU charged to every task on the machine so far (`None`: no root cgroup readable,
    /// the table sums processes instead).
    pub all_tasks: Option<super::all_tasks::AllTasks>,
    /// Boot-relative time of this snapshot in clock ticks, to tell processes that started later.
    pub uptime_ticks: u64,
    /// Processes that could not be read for lack of permission (hidepid, another user).
    pub denied: Vec<i32>,
    /// CPU this thread spent taking the snapshot.
    pub cost: Duration,
    /// The groups' members' counters beyond CPU (disk, calls, syncs, network, memory).
    pub usage: super::resources::UseSample,
}

#[cfg(test)]
impl Snapshot {
    /// A snapshot with nothing read, taken `at`: what tests build theirs on.
    pub(crate) fn empty(at: Instant) -> Snapshot {
        Snapshot {
            at,
            procs: HashMap::new(),
            groups: Vec::new(),
            idle_ticks: 0,
            iowait_ticks: 0,
            steal_ticks: 0,
            irq_ticks: 0,
            all_tasks: None,
            uptime_ticks: 0,
            denied: Vec::new(),
            cost: Duration::ZERO,
            usage: super::resources::UseSample::unread("a constructed snapshot"),
        }
    }
}

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot list processes in /proc: {0}. Is /proc mounted?")]
    Proc(String),
    #[error("cannot read /proc/stat: {0}")]
    Stat(String),
}

// A failure of the run (exit 1).
crate::runtime_error!(SnapshotError);

/// Clock ticks per second (USER_HZ), as /proc reports times.
pub fn clk_tck() -> u64 {
    procfs::ticks_per_second().max(1)
}

fn read_cgroup(dir: &Path) -> Option<CgroupSample> {
    // cgroup v2: cpu.stat has usage_usec, user_usec, system_usec.
    if let Ok(text) = std::fs::read_to_string(dir.join("cpu.stat")) {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
        };
        if let Some(usage) = field("usage_usec ") {
            return Some(CgroupSample {
                usage_ns: usage * 1000,
                user: field("user_usec ").unwrap_or(0),
                system: field("system_usec ").unwrap_or(0),
            });
        }
    }
    // cgroup v1 cpuacct: usage in ns, cpuacct.stat in ticks.
    let usage = std::fs::read_to_string(dir.join("cpuacct.usage"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(dir.join("cpuacct.stat")).unwrap_or_default();
    let field = |k: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(CgroupSample {
        usage_ns: usage,
        user: field("user "),
        system: field("system "),
    })
}

/// A pid file's pid; a FIFO or device named as one is no pid file (and is not waited on).
fn read_pidfile(path: &Path) -> Option<i32> {
    crate::files::read_text(path, super::selector::MAX_PIDFILE_BYTES, "pid file")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn uptime_ticks() -> u64 {
    let secs = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| {
            t.split_whitespace()
                .next()
                .and_then(|s| s.parse::<f64>().ok())
        })
        .unwrap_or(0.0);
    (secs * clk_tck() as f64) as u64
}

/// Take a snapshot for `groups`, with their members' counters beyond CPU (`syncs` holds the
/// sync counters the run keeps open).
pub fn take(
    groups: &[GroupSpec],
    source: CpuSource,
    syncs: &mut super::resources::syncs::Syncs,
) -> Result<Snapshot, SnapshotError> {
    let cost_start = crate::accounting::clock::self_thread().ok();
    let at = Instant::now();
    let read = read_processes(groups, source)?;
    let members = group_members(groups, &read.facts, source);
    let usage = usage_of(groups, &members, syncs);
    let ks = procfs::KernelStats::current().map_err(|e| SnapshotError::Stat(e.to_string()))?;
    let all_tasks = super::all_tasks::read();
    let cost = match (cost_start, crate::accounting::clock::self_thread().ok()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => Duration::ZERO,
    };
    Ok(Snapshot {
        at,
        procs: read.procs,
        groups: members,
        idle_ticks: ks.total.idle,
        iowait_ticks: ks.total.iowait.unwrap_or(0),
        steal_ticks: ks.total.steal.unwrap_or(0),
        irq_ticks: ks.total.irq.unwrap_or(0) + ks.total.softirq.unwrap_or(0),
        all_tasks,
        uptime_ticks: uptime_ticks(),
        denied: read.denied,
        cost,
        usage,
    })
}

/// The members' counters beyond CPU: every process any group holds (each once), oemputx's
/// grouped threads, each group's cgroup.
fn usage_of(
    groups: &[GroupSpec],
    members: &[Members],
    syncs: &mut super::resources::syncs::Syncs,
) -> super::resources::UseSample {
    let (mut procs, mut threads) = (Vec::new(), Vec::new());
    for m in members {
        match m {
            Members::Procs(ks) => procs.extend(ks),
            Members::Threads(ts) => threads.extend(ts.keys()),
            Members::Cgroup(_) => {}
        }
    }
    procs.sort_unstable();
    procs.dedup();
    let cgroups: Vec<Option<&Path>> = groups
        .iter()
        .map(|g| g.cgroup().map(PathBuf::as_path))
        .collect();
    super::resources::sample(&procs, &threads, &cgroups, syncs)
}

/// Clock ticks to nanoseconds.
fn ticks_to_ns(t: u64) -> u64 {
    t.saturating_mul(1_000_000_000) / clk_tck()
}

/// Every process /proc lets us read: its CPU sample, and the facts selectors match on.
struct ProcessRead {
    procs: HashMap<Key, Sample>,
    facts: Vec<(Key, ProcFacts)>,
    denied: Vec<i32>,
}

fn read_processes(groups: &[GroupSpec], source: CpuSource) -> Result<ProcessRead, SnapshotError> {
    // Command lines and owners are read only when a selector needs them: they cost a file
    // read per process.
    let wants = |f: fn(&Selector) -> bool| groups.iter().flat_map(|g| &g.selectors).any(f);
    let want_cmd = wants(|s| matches!(s, Selector::Cmd(_)));
    let want_uid = wants(|s| matches!(s, Selector::Uid(_)));
    let mut read = ProcessRead {
        procs: HashMap::new(),
        facts: Vec::new(),
        denied: Vec::new(),
    };
    let all = procfs::process::all_processes().map_err(|e| SnapshotError::Proc(e.to_string()))?;
    for proc in all.flatten() {
        let stat = match proc.stat() {
            Ok(s) => s,
            Err(procfs::ProcError::PermissionDenied(_)) => {
                read.denied.push(proc.pid);
                continue;
            }
            // Gone between listing and reading: not part of this snapshot.
            Err(_) => continue,
        };
        let cpu_ns = match source {
            CpuSource::Exact => crate::accounting::clock::process(stat.pid)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or_else(|_| ticks_to_ns(stat.utime + stat.stime)),
            CpuSource::Ticks => ticks_to_ns(stat.utime + stat.stime),
        };
        let key = (stat.pid, stat.starttime);
        let children_ticks = (stat.cutime.max(0) + stat.cstime.max(0)) as u64;
        read.facts.push((
            key,
            ProcFacts {
                pid: stat.pid,
                ppid: stat.ppid,
                comm: stat.comm.clone(),
                cmdline: if want_cmd {
                    proc.cmdline().ok().map(|v| v.join(" "))
                } else {
                    None
                },
                uid: if want_uid { proc.uid().ok() } else { None },
                user: None,
                cgroups: None,
            },
        ));
        read.procs.insert(
            key,
            Sample {
                pid: stat.pid,
                name: stat.comm,
                cpu_ns,
                utime: stat.utime,
                stime: stat.stime,
                children_ticks,
            },
        );
    }
    Ok(read)
}

/// The descendants of each `tree:` root (the root included), by following parent links.
pub(super) fn trees(
    groups: &[GroupSpec],
    facts: &[(Key, ProcFacts)],
) -> HashMap<i32, HashSet<i32>> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (_, f) in facts {
        children.entry(f.ppid).or_default().push(f.pid);
    }
    let mut trees = HashMap::new();
    for root in groups
        .iter()
        .flat_map(|g| &g.selectors)
        .filter_map(|s| match s {
            Selector::Tree(r) => Some(*r),
            _ => None,
        })
    {
        let mut set = HashSet::from([root]);
        let mut stack = vec![root];
        while let Some(p) = stack.pop() {
            for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
                if set.insert(c) {
                    stack.push(c);
                }
            }
        }
        trees.insert(root, set);
    }
    trees
}

/// What each group holds now: its cgroup's counters, its threads in this process, or the
/// processes its selectors match.
fn group_members(
    groups: &[GroupSpec],
    facts: &[(Key, ProcFacts)],
    source: CpuSource,
) -> Vec<Members> {
    let trees = trees(groups, facts);
    let in_tree = |root: i32, pid: i32| trees.get(&root).is_some_and(|s| s.contains(&pid));
    let pidfiles: HashMap<PathBuf, Option<i32>> = groups
        .iter()
        .flat_map(|g| &g.selectors)
        .filter_map(|s| match s {
            Selector::PidFile(p) => Some((p.clone(), read_pidfile(p))),
            _ => None,
        })
        .collect();
    let pidfile_pid = |p: &PathBuf| pidfiles.get(p).copied().flatten();
    groups
        .iter()
        .map(|g| {
            if let Some(dir) = g.cgroup() {
                return Members::Cgroup(read_cgroup(dir));
            }
            let thread_res: Vec<&regex::Regex> = g
                .selectors
                .iter()
                .filter_map(|s| match s {
                    Selector::Thread(re) => Some(re),
                    _ => None,
                })
                .collect();
            if !thread_res.is_empty() {
                return Members::Threads(own_threads(&thread_res, source, ticks_to_ns));
            }
            Members::Procs(matching(g, facts, &in_tree, &pidfile_pid))
        })
        .collect()
}

/// The processes any of a group's selectors matches, given the `tree:` roots' descendants
/// and the pid files' pids (this machine's, or none for another host).
pub(super) fn matching(
    g: &GroupSpec,
    facts: &[(Key, ProcFacts)],
    in_tree: &dyn Fn(i32, i32) -> bool,
    pidfile_pid: &dyn Fn(&PathBuf) -> Option<i32>,
) -> Vec<Key> {
    facts
        .iter()
        .filter(|(_, f)| {
            g.selectors
                .iter()
                .any(|s| s.matches(f, in_tree, pidfile_pid))
        })
        .map(|(k, _)| *k)
        .collect()
}

/// Threads of this process whose names match any of `res`.
fn own_threads(
    res: &[&regex::Regex],
    source: CpuSource,
    ticks_to_ns: impl Fn(u64) -> u64,
) -> HashMap<Key, Sample> {
    let mut out = HashMap::new();
    let Ok(me) = procfs::process::Process::myself() else {
        return out;
    };
    let Ok(tasks) = me.tasks() else { return out };
    for task in tasks.flatten() {
        let Ok(stat) = task.stat() else { continue };
        if !res.iter().any(|re| re.is_match(&stat.comm)) {
            continue;
        }
        let cpu_ns = match source {
            CpuSource::Exact => crate::accounting::clock::thread(task.tid)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or_else(|_| ticks_to_ns(stat.utime + stat.stime)),
            CpuSource::Ticks => ticks_to_ns(stat.utime + stat.stime),
        };
        out.insert(
            (task.tid, stat.starttime),
            Sample {
                pid: task.tid,
                name: stat.comm,
                cpu_ns,
                utime: stat.utime,
                stime: stat.stime,
                children_ticks: 0,
            },
        );
    }
    out
}
