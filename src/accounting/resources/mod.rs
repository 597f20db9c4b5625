//! Cost beyond CPU: what each group's processes wrote to and read from disk, their write and
//! read calls and syncs, the bytes their TCP sockets sent and received, their context
//! switches and their memory, over the same window as the CPU and per transaction.
//!
//! The sources are the kernel's own counters, read at the CPU snapshots' instants:
//! `/proc/PID/io` (bytes that reached the block layer, and the calls), each thread's
//! `/proc/PID/task/TID/status` (context switches; the process's own file counts only its
//! main thread), `/proc/PID/status` (VmRSS, VmHWM), TCP_INFO through sock_diag for each
//! socket a member holds, and the syscall tracepoints for syncs (counted per thread by perf
//! events opened at the window's start). Where a source cannot be read the figure is `null`
//! and [`BeyondInfo`] says why: a figure is never a guess.

pub mod proc_files;
pub mod syncs;
pub mod tcp;

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A process: (pid, start time in clock ticks since boot), so that a reused pid is never
/// taken for the old process.
pub type Key = (i32, u64);

/// One process's (or one of oemputx's threads') counters at a snapshot.
#[derive(Debug, Clone, Default)]
pub struct ProcUse {
    pub io: Option<proc_files::Io>,
    /// Each live thread's voluntary and involuntary context switches, by thread id: the
    /// window's are summed thread by thread, so that a thread that ends takes only its own
    /// window's switches with it, not its whole life's out of the sum.
    pub switches: Option<HashMap<i32, (u64, u64)>>,
    /// Resident and peak resident set, bytes (`None` for a thread).
    pub rss: Option<u64>,
    pub peak_rss: Option<u64>,
    /// Inodes of the sockets the process holds (`None`: its descriptors could not be read).
    pub sockets: Option<Vec<u64>>,
    /// The process ended between the group's listing and this read: it is taken as absent
    /// at this edge (as one that went in the window), not as a source that could not be
    /// read. RabbitMQ's short-lived helpers (its disk-space `sh -c df`) end so every few
    /// seconds, and one made a whole group's resident set unknown.
    pub ended: bool,
}

/// Everything beyond CPU one snapshot read.
#[derive(Debug, Clone)]
pub struct UseSample {
    /// Group members (processes and oemputx's grouped threads) by key.
    pub members: HashMap<Key, ProcUse>,
    /// Per group spec, a cgroup group's own counters.
    pub cgroups: Vec<Option<proc_files::CgroupUse>>,
    /// Every TCP socket on the host: inode → (bytes sent, bytes received); or why not.
    pub tcp: Result<HashMap<u64, (u64, u64)>, String>,
    /// Syncs per member process so far (since its counters were opened), or why not.
    pub syncs: Result<HashMap<Key, u64>, String>,
}

impl UseSample {
    /// Nothing read, for the reason given (another host's snapshot, a constructed one).
    pub fn unread(why: &str) -> UseSample {
        UseSample {
            members: HashMap::new(),
            cgroups: Vec::new(),
            tcp: Err(why.to_string()),
            syncs: Err(why.to_string()),
        }
    }
}

/// A group's cost beyond CPU over the window. Every field is `null` where its source could
/// not be read (the accounting info's `beyond_cpu` says why).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupCost {
    #[serde(default)]
    pub disk_write_bytes_per_tran: Option<f64>,
    #[serde(default)]
    pub disk_read_bytes_per_tran: Option<f64>,
    #[serde(default)]
    pub write_calls_per_tran: Option<f64>,
    #[serde(default)]
    pub read_calls_per_tran: Option<f64>,
    #[serde(default)]
    pub syncs_per_tran: Option<f64>,
    #[serde(default)]
    pub net_sent_bytes_per_tran: Option<f64>,
    #[serde(default)]
    pub net_received_bytes_per_tran: Option<f64>,
    #[serde(default)]
    pub voluntary_switches_per_tran: Option<f64>,
    #[serde(default)]
    pub involuntary_switches_per_tran: Option<f64>,
    /// Resident set at the window's end, bytes, summed over the members.
    #[serde(default)]
    pub rss_bytes: Option<f64>,
    /// Each member's peak resident set (since it started, not only in the window), summed.
    #[serde(default)]
    pub peak_rss_bytes: Option<f64>,
    /// (resident set at the end − at the start) ÷ transactions, members present at both.
    #[serde(default)]
    pub rss_growth_bytes_per_tran: Option<f64>,
}

/// How one figure is read from a group's cost.
pub type Figure = fn(&GroupCost) -> Option<f64>;

/// What a figure counts, for how reports print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per transaction.
    BytesPerTran,
    /// Calls or switches per transaction.
    CountPerTran,
    /// Bytes at an instant (the resident set).
    Bytes,
}

/// One metric beyond CPU: its name (the gate's `--metric`, the JSON field less
/// `_per_tran`), its label in reports, its unit, its OpenMetrics family and its reader.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub label: &'static str,
    pub unit: Unit,
    pub family: &'static str,
    pub get: Figure,
    /// Whether runs of the same code give it to within a few % whatever the host's load
    /// (bytes written, write calls, syncs): the first-baseline gate allows it a narrow drift.
    pub steady_between_runs: bool,
}

/// The metrics beyond CPU, in report order: the gate, the exports and the tests list them
/// from here.
pub const METRICS: [Metric; 12] = [
    Metric {
        name: "disk_write_bytes",
        label: "Disk written, bytes",
        unit: Unit::BytesPerTran,
        family: "oemputx_group_disk_write_bytes_per_transaction",
        get: |c| c.disk_write_bytes_per_tran,
        steady_between_runs: true,
    },
    Metric {
        name: "disk_read_bytes",
        label: "Disk read, bytes",
        unit: Unit::BytesPerTran,
        family: "oemputx_group_disk_read_bytes_per_transaction",
        get: |c| c.disk_read_bytes_per_tran,
        steady_between_runs: false,
    },
    Metric {
        name: "write_calls",
        label: "Write calls",
        unit: Unit::CountPerTran,
        family: "oemputx_group_write_calls_per_transaction",
        get: |c| c.write_calls_per_tran,
        steady_between_runs: true,
    },
    Metric {
        name: "read_calls",
        label: "Read calls",
        unit: Unit::CountPerTran,
        family: "oemputx_group_read_calls_per_transaction",
        get: |c| c.read_calls_per_tran,
        steady_between_runs: false,
    },
    Metric {
        name: "syncs",
        label: "Syncs",
        unit: Unit::CountPerTran,
        family: "oemputx_group_syncs_per_transaction",
        get: |c| c.syncs_per_tran,
        steady_between_runs: true,
    },
    Metric {
        name: "net_sent_bytes",
        label: "Network sent, bytes",
        unit: Unit::BytesPerTran,
        family: "oemputx_group_net_sent_bytes_per_transaction",
        get: |c| c.net_sent_bytes_per_tran,
        steady_between_runs: false,
    },
    Metric {
        name: "net_received_bytes",
        label: "Network received, bytes",
        unit: Unit::BytesPerTran,
        family: "oemputx_group_net_received_bytes_per_transaction",
        get: |c| c.net_received_bytes_per_tran,
        steady_between_runs: false,
    },
    Metric {
        name: "voluntary_switches",
        label: "Voluntary switches",
        unit: Unit::CountPerTran,
        family: "oemputx_group_voluntary_switches_per_transaction",
        get: |c| c.voluntary_switches_per_tran,
        steady_between_runs: false,
    },
    Metric {
        name: "involuntary_switches",
        label: "Involuntary switches",
        unit: Unit::CountPerTran,
        family: "oemputx_group_involuntary_switches_per_transaction",
        get: |c| c.involuntary_switches_per_tran,
        steady_between_runs: false,
    },
    Metric {
        name: "rss_bytes",
        label: "Resident at end, MB",
        unit: Unit::Bytes,
        family: "oemputx_group_rss_bytes",
        get: |c| c.rss_bytes,
        steady_between_runs: false,
    },
    Metric {
        name: "peak_rss_bytes",
        label: "Peak resident, MB",
        unit: Unit::Bytes,
        family: "oemputx_group_peak_rss_bytes",
        get: |c| c.peak_rss_bytes,
        steady_between_runs: false,
    },
    Metric {
        name: "rss_growth_bytes",
        label: "Resident growth, bytes",
        unit: Unit::BytesPerTran,
        family: "oemputx_group_rss_growth_bytes_per_transaction",
        get: |c| c.rss_growth_bytes_per_tran,
        steady_between_runs: false,
    },
];

impl Metric {
    /// The figure as reports print it: bytes per transaction to one place, counts to three,
    /// a resident set in MB (10^6 bytes); `n/a` where it is null.
    pub fn shown(&self, c: &GroupCost) -> String {
        match ((self.get)(c), self.unit) {
            (None, _) => "n/a".into(),
            (Some(v), Unit::BytesPerTran) => format!("{v:.1}"),
            (Some(v), Unit::CountPerTran) => format!("{v:.3}"),
            (Some(v), Unit::Bytes) => format!("{:.1}", v / 1e6),
        }
    }
}

impl GroupCost {
    /// Whether any figure was measured (a driver's or a merged group's has none).
    pub fn any(&self) -> bool {
        METRICS.iter().any(|m| (m.get)(self).is_some())
    }
}

/// How the figures beyond CPU were read, and why any is missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BeyondInfo {
    /// Where syncs came from, or why they are `null`.
    pub syncs: String,
    /// Where network bytes came from, or why they are `null`.
    pub network: String,
    /// What the figures leave out in this window (sockets closed, members that came or went).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The syscalls counted as syncs.
pub const SYNC_CALLS: [&str; 4] = ["fsync", "fdatasync", "sync_file_range", "msync"];

/// Read what a snapshot needs beyond CPU: each member process's counters (`procs`), each of
/// oemputx's grouped threads' (`threads`), each group's cgroup's (`cgroups`, one per group).
/// `syncs` holds the counters opened at the first window's start (or why there are none).
pub fn sample(
    procs: &[Key],
    threads: &[Key],
    cgroups: &[Option<&std::path::Path>],
    syncs: &mut syncs::Syncs,
) -> UseSample {
    let mut members: HashMap<Key, ProcUse> = procs
        .iter()
        .map(|k| (*k, proc_files::process(k.0)))
        .collect();
    for t in threads {
        members
            .entry(*t)
            .or_insert_with(|| proc_files::own_thread(t.0));
    }
    let wants_tcp = members
        .values()
        .any(|u| u.sockets.as_ref().is_some_and(|s| !s.is_empty()));
    UseSample {
        members,
        cgroups: cgroups
            .iter()
            .map(|d| d.and_then(proc_files::cgroup))
            .collect(),
        tcp: if wants_tcp {
            tcp::all()
        } else {
            Ok(HashMap::new())
        },
        syncs: syncs.read(procs),
    }
}
