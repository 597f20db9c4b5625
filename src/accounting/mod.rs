//! Per-process, per-group CPU over the measured window: OEMPUTX's address-space table.
//!
//! Two snapshots (right before the first measured put, right after the last measured reply)
//! of every process's CPU clock, the groups' members, cgroup counters and the machine's idle
//! time; the difference, divided by the transactions, is each row's µs per transaction.
//! Accounting knows nothing of brokers or of the driver: it is a [`Window`] the driver calls.

pub mod all_tasks;
pub mod clock;
pub mod costs;
pub mod host_load;
pub mod hosts;
pub mod math;
pub mod pcp;
pub mod resources;
pub mod selector;
pub mod snapshot;
pub mod sockets;
pub mod table;

use crate::window::Window;
use selector::GroupSpec;
use serde::Serialize;
use snapshot::{CpuSource, Snapshot};
use std::time::Duration;
pub use table::{Machine, Traffic};

/// How the capture ratio is found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RatioMode {
    /// From /proc: CPU of all tasks ÷ busy time.
    Measured,
    /// A fixed value, the z/OS habit (e.g. 0.9).
    Fixed(f64),
}

/// One row of the table: a process (or thread, or cgroup) of a group.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ProcessRow {
    pub group: String,
    /// `local`, or the `--host` name the process runs on.
    pub host: String,
    pub name: String,
    /// `null` for a cgroup row or reaped children.
    pub pid: Option<i32>,
    pub user_us_per_tran: f64,
    pub sys_us_per_tran: f64,
    pub total_us_per_tran: f64,
    /// Share of the captured total, percent.
    pub pct: f64,
    /// 1σ uncertainty of the user/system split (µs/tran); the total is exact.
    pub split_sigma_us_per_tran: f64,
    /// Whether the total is exact (CPU clock or cgroup) or tick-based.
    pub exact: bool,
    /// "started", "exited", "reaped children" when the process came or went in the window.
    pub note: Option<String>,
    /// The same window read from /proc/PID/stat ticks (utime+stime), for comparison with the
    /// exact total; `null` where ticks do not apply (cgroups, the driver).
    pub ticks_us_per_tran: Option<f64>,
}

/// A group's total row.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GroupRow {
    pub name: String,
    /// `local`, or the `--host` name the group is on.
    pub host: String,
    pub user_us_per_tran: f64,
    pub sys_us_per_tran: f64,
    pub total_us_per_tran: f64,
    pub pct: f64,
    /// Rows (processes, threads, cgroup) in the group.
    pub processes: usize,
    /// The same window from /proc ticks, when every row has a tick figure.
    pub ticks_us_per_tran: Option<f64>,
    /// What the group cost beyond CPU (disk, calls, syncs, network, switches, memory).
    #[serde(flatten)]
    pub cost: resources::GroupCost,
}

/// The capture ratio applied.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CaptureRatio {
    pub value: f64,
    /// "measured", "fixed", or "not applied" (measured, but too uncertain: value is 1).
    pub source: std::borrow::Cow<'static, str>,
    /// For a measured ratio: CPU of all tasks and the machine's busy time over the window.
    pub tasks_cpu_s: Option<f64>,
    pub busy_s: Option<f64>,
    /// For a measured ratio: what was measured, and its 1σ from /proc/stat's tick counting.
    pub measured_value: Option<f64>,
    pub sigma: Option<f64>,
    /// Where the CPU of all tasks came from (absent in reports before it was recorded).
    #[serde(default)]
    pub tasks_source: Option<all_tasks::TasksSource>,
    /// Interrupts and softirqs over the window, seconds (/proc/stat's ticks): the CPU a
    /// capture ratio is for.
    #[serde(default)]
    pub irq_s: Option<f64>,
    /// Steal over the window, seconds: left out of the busy time, never folded into the
    /// correction.
    #[serde(default)]
    pub steal_s: Option<f64>,
    /// Share of the busy time charged to no task and not interrupts (1 − ratio − irq share).
    #[serde(default)]
    pub unaccounted_share: Option<f64>,
    /// Why a measured ratio was not applied.
    #[serde(default)]
    pub note: Option<String>,
}
/// A process outside the groups and the driver.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct OtherProcess {
    pub name: String,
    pub pid: i32,
    pub us_per_tran: f64,
}

/// CPU on the machine outside the groups and the driver: a disturbed run shows here.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct OtherCpu {
    pub us_per_tran: f64,
    /// Of that, processes that started or ended inside the window (all tasks' CPU less the
    /// live processes'): a shell loop's commands, a compiler's children.
    #[serde(default)]
    pub short_lived_us_per_tran: Option<f64>,
    pub top: Vec<OtherProcess>,
}

/// Everything accounting found, as the report carries it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CpuTable {
    pub processes: Vec<ProcessRow>,
    pub groups: Vec<GroupRow>,
    pub captured_us_per_tran: f64,
    pub capture_ratio: Option<CaptureRatio>,
    pub corrected_us_per_tran: Option<f64>,
    pub other_cpu: OtherCpu,
    /// How it was measured, its verdict and warnings.
    pub info: AccountingInfo,
}

/// The verdict as figures: its kind, and how busy the measured processes kept the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Load {
    pub kind: LoadKind,
    /// CPUs' worth the measured groups kept busy on average: captured µs/tran × tps ÷ 10^6.
    pub busy_cpus: f64,
    /// The CPUs the run's concurrent request streams can keep busy: min(streams, CPUs).
    pub usable_cpus: usize,
    /// busy_cpus ÷ usable_cpus; above 1 when the processes work on a transaction in
    /// parallel (the flow, the broker and the database each on a CPU of its own).
    pub busy_share: f64,
}

/// CPU-bound: the measured processes kept at least 80 % of the usable CPUs busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    CpuBound,
    Waiting,
}

/// How the CPU table was measured.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct AccountingInfo {
    pub cpu_source: Option<CpuSource>,
    /// Kernel tick used for the split's uncertainty, seconds, and where it came from.
    pub tick_s: f64,
    pub tick_source: String,
    /// Steal time during the window (virtual machines), seconds.
    pub steal_s: f64,
    /// CPU oemputx spent taking the two snapshots, and that as a share of the captured CPU.
    pub snapshot_cpu_s: f64,
    pub snapshot_share_pct: f64,
    /// CPU-bound or waiting, with the arithmetic.
    pub verdict: String,
    /// The verdict as figures (none without transactions).
    pub load: Option<Load>,
    /// How busy the host was with other work: quiet, busy or contended.
    #[serde(default)]
    pub host_load: Option<host_load::HostLoad>,
    /// Groups that matched nothing, processes that could not be read, processes that came or went.
    pub warnings: Vec<String>,
    /// Set when the snapshots could not be taken.
    pub error: Option<String>,
    /// How the figures beyond CPU were read, and why any is null.
    #[serde(default)]
    pub beyond_cpu: Option<resources::BeyondInfo>,
    /// With groups on other hosts: each host's figures (this machine's first, as `local`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<hosts::HostFigures>,
}

impl Machine {
    /// This machine: its kernel tick, USER_HZ and the CPUs this process may use.
    pub fn this() -> Machine {
        let (tick_s, tick_source) = kernel_tick();
        Machine {
            tick_s,
            tick_source,
            clk_tck: snapshot::clk_tck(),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            counter_tick_s: 1.0 / snapshot::clk_tck() as f64,
            host: None,
        }
    }
}

/// The kernel tick (1/CONFIG_HZ) when the kernel says, else 1/USER_HZ, a conservative bound.
/// Read once: the kernel configuration is a compressed file, and it does not change.
fn kernel_tick() -> (f64, String) {
    static TICK: std::sync::OnceLock<(f64, String)> = std::sync::OnceLock::new();
    TICK.get_or_init(read_kernel_tick).clone()
}

fn read_kernel_tick() -> (f64, String) {
    if let Ok(cfg) = procfs::kernel_config()
        && let Some(procfs::ConfigSetting::Value(hz)) = cfg.get("CONFIG_HZ")
        && let Ok(hz) = hz.parse::<f64>()
        && hz > 0.0
    {
        return (1.0 / hz, format!("CONFIG_HZ={hz}"));
    }
    let tck = snapshot::clk_tck() as f64;
    (
        1.0 / tck,
        format!("USER_HZ={tck} (CONFIG_HZ not readable; an upper bound)"),
    )
}

impl CaptureRatio {
    /// How the ratio is labelled in reports: its source, with what was measured when it
    /// was not applied.
    pub fn label(&self) -> String {
        match (self.source.as_ref(), self.measured_value, self.sigma) {
            ("not applied", Some(v), Some(s)) => {
                format!("Capture ratio (not applied: {v:.3}±{s:.3})")
            }
            (source, _, _) => format!("Capture ratio ({source})"),
        }
    }

    /// The value as reports print it, with its 1σ when it was measured and applied.
    pub fn shown(&self) -> String {
        match (self.source.as_ref(), self.sigma) {
            ("measured", Some(s)) => format!("{:.3} ±{s:.3}", self.value),
            _ => format!("{:.3}", self.value),
        }
    }
}

/// The row for whatever drove the traffic: oemputx itself, or the command `account` ran.
#[derive(Debug, Clone)]
pub struct DriverRow {
    pub group: &'static str,
    pub name: String,
    pub pid: Option<i32>,
    pub cpu: Duration,
    /// User and system ticks, when known other than from this process's /proc entry.
    pub split: Option<(u64, u64)>,
    /// True when the driver has exited and so is in no snapshot.
    pub exited: bool,
}

impl DriverRow {
    /// oemputx's own driver CPU.
    pub fn oemputx(cpu: Duration) -> Self {
        let me = std::process::id() as i32;
        DriverRow {
            group: "DRIVER",
            name: format!("oemputx.{me}"),
            pid: Some(me),
            cpu,
            split: None,
            exited: false,
        }
    }
}

/// The accounting window: groups to measure, and the two snapshots.
pub struct Accounting {
    groups: Vec<GroupSpec>,
    source: CpuSource,
    ratio: RatioMode,
    /// (start, end) of each window (one per round).
    windows: Vec<(Option<Snapshot>, Option<Snapshot>)>,
    /// Groups on other hosts, with their own windows, in step with `windows`.
    remote: Vec<hosts::Remote>,
    /// The first snapshot failure, reported instead of the table.
    pub error: Option<String>,
    /// The sync counters the run keeps open from its first snapshot.
    syncs: resources::syncs::Syncs,
}

impl Accounting {
    /// Measure `groups` with `source`, correcting with `ratio`.
    pub fn new(groups: Vec<GroupSpec>, source: CpuSource, ratio: RatioMode) -> Self {
        Accounting {
            groups,
            source,
            ratio,
            windows: Vec::new(),
            remote: Vec::new(),
            error: None,
            syncs: resources::syncs::Syncs::new(),
        }
    }

    /// Whether to count syncs (their tracepoints slow every system call on the host a little while
    /// they are on): the figure is null with this reason.
    pub(crate) fn counting_syncs(self, count: bool) -> Self {
        if count {
            self
        } else {
            self.without_syncs("syncs are null: not counted (--no-syncs)")
        }
    }

    /// Count no syncs, for the reason given (the figure is null with it).
    pub(crate) fn without_syncs(mut self, why: &str) -> Self {
        self.syncs = resources::syncs::Syncs::off(why);
        self
    }

    /// Read the groups placed on other hosts (`NAME@HOST=…`) through those hosts' PCP.
    /// Each host is asked once now, so that one that cannot be read is an error before the
    /// run rather than a missing table after it.
    pub(crate) fn with_hosts(mut self, hosts: &[pcp::PcpHost]) -> Result<Self, pcp::PcpError> {
        let (local, remote) = hosts::place(std::mem::take(&mut self.groups), hosts)?;
        for r in &remote {
            r.host.check()?;
        }
        self.groups = local;
        self.remote = remote;
        Ok(self)
    }

    /// This machine's snapshot and every host's, taken at the same moment: one thread per
    /// host, so that a slow host does not move the others' edges.
    fn snap(&mut self) -> (Option<Snapshot>, Vec<hosts::Edge>) {
        let syncs = &mut self.syncs;
        let (local, remote) = std::thread::scope(|sc| {
            let asks: Vec<_> = self
                .remote
                .iter()
                .map(|r| sc.spawn(|| r.host.snapshot(&r.groups)))
                .collect();
            let local = snapshot::take(&self.groups, self.source, syncs);
            let remote: Vec<_> = asks
                .into_iter()
                .map(|h| match h.join() {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err("a host's snapshot thread panicked".to_string()),
                })
                .collect();
            (local, remote)
        });
        let local = match local {
            Ok(s) => Some(s),
            Err(e) => {
                self.error.get_or_insert(e.to_string());
                None
            }
        };
        let remote = remote
            .into_iter()
            .map(|r| match r {
                Ok(s) => Some(s),
                Err(e) => {
                    self.error.get_or_insert(e);
                    None
                }
            })
            .collect();
        (local, remote)
    }

    /// Make the end snapshot the next start, for measuring interval after interval.
    pub(crate) fn roll(&mut self) {
        if let Some((_, end)) = self.windows.pop() {
            self.windows.push((end, None));
        }
        for r in &mut self.remote {
            if let Some((_, end)) = r.windows.pop() {
                r.windows.push((end, None));
            }
        }
    }

    /// The first window's start and the last window's end: the whole run.
    fn whole(&self) -> Option<(&Snapshot, &Snapshot)> {
        Some((
            self.windows.first()?.0.as_ref()?,
            self.windows.last()?.1.as_ref()?,
        ))
    }

    /// Wall time from the first snapshot to the last.
    pub fn elapsed(&self) -> Option<Duration> {
        let (a, b) = self.whole()?;
        Some(b.at.duration_since(a.at))
    }

    /// The table of window (round) `i` alone.
    pub(crate) fn round_table(&self, i: usize, traffic: Traffic) -> Option<CpuTable> {
        let (a, b) = self.windows.get(i)?;
        self.table_between((a.as_ref()?, b.as_ref()?), (i, i), traffic)
    }

    /// The table of the whole run: the first window's start to the last window's end.
    pub fn table(&self, traffic: Traffic) -> Option<CpuTable> {
        let (a, b) = self.whole()?;
        let last = self.windows.len().checked_sub(1)?;
        self.table_between((a, b), (0, last), traffic)
    }

    /// The table from window `first`'s start to window `last`'s end, on every host that
    /// could be read (a warning names each that could not); `None` when this machine's
    /// snapshot is missing (the error says why).
    fn table_between(
        &self,
        (a, b): (&Snapshot, &Snapshot),
        (first, last): (usize, usize),
        traffic: Traffic,
    ) -> Option<CpuTable> {
        let mut t = table::build(
            &self.groups,
            (a, b),
            traffic,
            &Machine::this(),
            self.source,
            self.ratio,
        );
        let mut remote = Vec::new();
        for r in &self.remote {
            let start = r.windows.get(first).and_then(|w| w.0.as_ref());
            let end = r.windows.get(last).and_then(|w| w.1.as_ref());
            match (start, end) {
                (Some(start), Some(end)) => remote.push((r, start, end)),
                // A host that could not be read costs its own groups only: the local
                // groups and the other hosts' were measured and stay.
                (start, _) => t.info.warnings.push(format!(
                    "host {} could not be read at the window's {}: its groups ({}) are not in this table, and the totals are without them ({})",
                    r.host.name,
                    if start.is_none() { "start" } else { "end" },
                    r.groups
                        .iter()
                        .map(|g| g.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    self.error.as_deref().unwrap_or("see the accounting error"),
                )),
            }
        }
        hosts::merge(&mut t, (a, b), &remote, traffic, self.source, self.ratio);
        Some(t)
    }
}

impl Window for Accounting {
    fn start(&mut self) {
        let (s, remote) = self.snap();
        self.windows.push((s, None));
        for (r, e) in self.remote.iter_mut().zip(remote) {
            r.windows.push((e, None));
        }
    }
    fn end(&mut self) {
        let (e, remote) = self.snap();
        match self.windows.last_mut() {
            Some(w) => w.1 = e,
            None => self.windows.push((None, e)),
        }
        for (r, e) in self.remote.iter_mut().zip(remote) {
            match r.windows.last_mut() {
                Some(w) => w.1 = e,
                None => r.windows.push((None, e)),
            }
        }
    }
}
