//! CPU charged to every task on the machine, exited ones included: the capture ratio's
//! numerator.
//!
//! The sum over processes alive at both snapshots misses every process that started and
//! ended in the window when its parent is outside the groups (a shell loop, a compiler's
//! children, orphans reaped by init): on a shared host the ratio read 0.571 and the corrected
//! total came out 1.75x the captured one (docs/accounting.md). The root cgroup's counter
//! counts all of them, exactly:
//! - cgroup v1: the root `cpuacct.usage`, ns, charged by the scheduler to every task as it
//!   runs (40 short Python runs: 3.960 s against /proc/stat's 3.970 s busy).
//! - cgroup v2: the root's own `cpu.stat` is rebuilt from /proc/stat's ticks (kernel
//!   `root_cgroup_cputime`; steal included before a 2025 fix), so it would make the ratio 1
//!   by construction; the top-level cgroups' `cpu.stat`
//!   `usage_usec` are the scheduler's figures, and the processes that live in the root
//!   cgroup itself (kernel threads, mostly) are added from their own CPU clocks.
//! - Neither (no cgroup file system, or only a container's part of it): the processes alive
//!   at both snapshots plus the children every process reaped in the window (cutime/cstime,
//!   USER_HZ ticks); children reaped by a process that also ended in the window are lost.
//!
//! Each counter is updated when the scheduler accounts the running task (at a tick or a
//! switch), so each edge is late by at most one kernel tick per CPU.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the CPU of all tasks came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TasksSource {
    /// The root cgroup's `cpuacct.usage` (cgroup v1), ns.
    CgroupV1Root,
    /// The top-level cgroups' `cpu.stat` (cgroup v2), µs, plus the root cgroup's processes.
    CgroupV2Top,
    /// Live processes plus every process's reaped children (ticks): misses children whose
    /// parent also ended in the window.
    Processes,
}

impl TasksSource {
    /// As the reports name it, with its precision.
    pub fn describe(self) -> &'static str {
        match self {
            TasksSource::CgroupV1Root => {
                "root cgroup cpuacct.usage (v1): every task, exited ones included, ns"
            }
            TasksSource::CgroupV2Top => {
                "top-level cgroups' cpu.stat (v2) + root cgroup's processes: every task, µs"
            }
            TasksSource::Processes => {
                "processes alive at both snapshots + reaped children (ticks): no cgroup counter readable"
            }
        }
    }

    /// A short name with its unit, for one line of a report.
    pub fn short(self) -> &'static str {
        match self {
            TasksSource::CgroupV1Root => "root cgroup cpuacct.usage (v1, ns)",
            TasksSource::CgroupV2Top => "top-level cgroups' cpu.stat (v2, µs)",
            TasksSource::Processes => "live processes + reaped children (ticks)",
        }
    }

    /// Whether it counts processes that started and ended inside the window, whoever reaped
    /// them.
    pub fn counts_short_lived(self) -> bool {
        !matches!(self, TasksSource::Processes)
    }
}

/// The machine's task CPU at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllTasks {
    pub source: TasksSource,
    /// CPU of every task in the counted cgroups so far, ns.
    pub ns: u64,
    /// cgroup v2: the processes in the root cgroup itself, whose CPU the caller adds from
    /// its per-process figures.
    pub root_pids: Vec<i32>,
}

/// Where the root cgroup is mounted, and which version it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    V1(PathBuf),
    V2(PathBuf),
}

/// One line of /proc/self/mountinfo, as far as choosing a root needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub fs_type: String,
    /// The mount's root inside its file system: "/" for the whole hierarchy.
    pub root: String,
    pub mount_point: PathBuf,
    /// Super options (cgroup v1 names its controllers there).
    pub options: Vec<String>,
}

/// The root cgroup to read: v1's cpuacct hierarchy when mounted whole (exact, ns, and it
/// holds every task), else v2's when mounted whole. A mount whose root is not "/" is a
/// container's part of the hierarchy: it does not hold the other tasks of the machine whose
/// busy time /proc/stat counts, so it is not used.
pub(crate) fn pick(mounts: &[Mount]) -> Option<Root> {
    let whole = |m: &&Mount| m.root == "/";
    let v1 = mounts
        .iter()
        .filter(whole)
        .find(|m| m.fs_type == "cgroup" && m.options.iter().any(|o| o == "cpuacct"));
    if let Some(m) = v1 {
        return Some(Root::V1(m.mount_point.clone()));
    }
    mounts
        .iter()
        .filter(whole)
        .find(|m| m.fs_type == "cgroup2")
        .map(|m| Root::V2(m.mount_point.clone()))
}

/// This machine's root cgroup, found once: mounts do not change during a run.
fn root() -> Option<&'static Root> {
    static ROOT: std::sync::OnceLock<Option<Root>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let infos = procfs::process::Process::myself().ok()?.mountinfo().ok()?;
        let mounts: Vec<Mount> = infos
            .iter()
            .map(|m| Mount {
                fs_type: m.fs_type.clone(),
                root: m.root.clone(),
                mount_point: m.mount_point.clone(),
                options: m.super_options.keys().cloned().collect(),
            })
            .collect();
        pick(&mounts)
    })
    .as_ref()
}

/// The CPU of all tasks now, or `None` when no root cgroup can be read (the table then
/// falls back to [`TasksSource::Processes`]).
pub fn read() -> Option<AllTasks> {
    match root()? {
        Root::V1(dir) => Some(AllTasks {
            source: TasksSource::CgroupV1Root,
            ns: read_u64(&dir.join("cpuacct.usage"))?,
            root_pids: Vec::new(),
        }),
        Root::V2(dir) => read_v2(dir),
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `usage_usec` of a v2 `cpu.stat`.
pub(crate) fn usage_usec(cpu_stat: &str) -> Option<u64> {
    cpu_stat
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())
}

fn read_v2(dir: &Path) -> Option<AllTasks> {
    let mut usec = 0u64;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        // A cgroup removed between listing and reading took its CPU with it: the window
        // loses at most what it ran since the first snapshot.
        if let Ok(text) = std::fs::read_to_string(path.join("cpu.stat"))
            && let Some(u) = usage_usec(&text)
        {
            usec = usec.saturating_add(u);
        }
    }
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).ok()?;
    Some(AllTasks {
        source: TasksSource::CgroupV2Top,
        ns: usec.saturating_mul(1000),
        root_pids: procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(fs: &str, root: &str, at: &str, opts: &[&str]) -> Mount {
        Mount {
            fs_type: fs.into(),
            root: root.into(),
            mount_point: at.into(),
            options: opts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn v1_cpuacct_mounted_whole_is_preferred_to_v2() {
        let mounts = [
            mount("cgroup2", "/", "/sys/fs/cgroup/unified", &[]),
            mount("cgroup", "/", "/sys/fs/cgroup/cpu", &["rw", "cpu"]),
            mount("cgroup", "/", "/sys/fs/cgroup/cpuacct", &["rw", "cpuacct"]),
        ];
        assert_eq!(
            pick(&mounts),
            Some(Root::V1("/sys/fs/cgroup/cpuacct".into()))
        );
    }

    #[test]
    fn a_containers_part_of_the_hierarchy_is_not_the_root() {
        // Docker mounts its own cgroup as the container's /sys/fs/cgroup.
        let mounts = [
            mount(
                "cgroup",
                "/docker/abc",
                "/sys/fs/cgroup/cpuacct",
                &["cpuacct"],
            ),
            mount("cgroup2", "/docker/abc", "/sys/fs/cgroup", &[]),
        ];
        assert_eq!(pick(&mounts), None);
        let v2 = [mount("cgroup2", "/", "/sys/fs/cgroup", &[])];
        assert_eq!(pick(&v2), Some(Root::V2("/sys/fs/cgroup".into())));
    }

    #[test]
    fn usage_usec_is_read_from_a_v2_cpu_stat() {
        let text = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\nnr_periods 0\n";
        assert_eq!(usage_usec(text), Some(123_456));
        assert_eq!(usage_usec("user_usec 1\n"), None);
    }

    #[test]
    fn only_the_process_sum_misses_short_lived_processes() {
        assert!(TasksSource::CgroupV1Root.counts_short_lived());
        assert!(TasksSource::CgroupV2Top.counts_short_lived());
        assert!(!TasksSource::Processes.counts_short_lived());
    }
}
