//! Per-process, per-group CPU over the measured window: OEMPUTX's address-space table.
//!
//! Two snapshots (right before the first measured put, right after the last measured reply)
//! of every process's CPU clock, the groups' members, cgroup counters and the machine's idle
//! time; the difference, divided by the transactions, is each row's µs per transaction.
//! Accounting knows nothing of brokers or of the driver: it is a [`Window`] the driver calls.

pub mod clock;
pub mod math;
pub mod selector;
pub mod snapshot;

use crate::window::Window;
use selector::GroupSpec;
use serde::Serialize;
use snapshot::{CpuSource, Key, Members, Sample, Snapshot};
use std::collections::HashSet;
use std::time::Duration;

/// How the capture ratio is found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RatioMode {
    /// From /proc: CPU of all tasks ÷ busy time.
    Measured,
    /// A fixed value, the z/OS habit (e.g. 0.9).
    Fixed(f64),
}

/// One row of the table: a process (or thread, or cgroup) of a group.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    pub group: String,
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

impl ProcessRow {
    fn with_ticks(mut self, ticks_us_per_tran: f64) -> Self {
        self.ticks_us_per_tran = Some(ticks_us_per_tran);
        self
    }
}

/// A group's total row.
#[derive(Debug, Clone, Serialize)]
pub struct GroupRow {
    pub name: String,
    pub user_us_per_tran: f64,
    pub sys_us_per_tran: f64,
    pub total_us_per_tran: f64,
    pub pct: f64,
    /// Rows (processes, threads, cgroup) in the group.
    pub processes: usize,
    /// The same window from /proc ticks, when every row has a tick figure.
    pub ticks_us_per_tran: Option<f64>,
}

/// The capture ratio applied.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureRatio {
    pub value: f64,
    /// "measured" or "fixed".
    pub source: &'static str,
    /// For a measured ratio: CPU of all tasks and the machine's busy time over the window.
    pub tasks_cpu_s: Option<f64>,
    pub busy_s: Option<f64>,
}

/// A process outside the groups and the driver.
#[derive(Debug, Clone, Serialize)]
pub struct OtherProcess {
    pub name: String,
    pub pid: i32,
    pub us_per_tran: f64,
}

/// CPU on the machine outside the groups and the driver: a disturbed run shows here.
#[derive(Debug, Clone, Serialize)]
pub struct OtherCpu {
    pub us_per_tran: f64,
    pub top: Vec<OtherProcess>,
}

/// Everything accounting found, as the report carries it.
#[derive(Debug, Clone, Serialize)]
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

/// How the CPU table was measured.
#[derive(Debug, Clone, Default, Serialize)]
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
    /// Groups that matched nothing, processes that could not be read, processes that came or went.
    pub warnings: Vec<String>,
    /// Set when the snapshots could not be taken.
    pub error: Option<String>,
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
    /// The first snapshot failure, reported instead of the table.
    pub error: Option<String>,
}

impl Accounting {
    /// Measure `groups` with `source`, correcting with `ratio`.
    pub fn new(groups: Vec<GroupSpec>, source: CpuSource, ratio: RatioMode) -> Self {
        Accounting {
            groups,
            source,
            ratio,
            windows: Vec::new(),
            error: None,
        }
    }

    fn snap(&mut self) -> Option<Snapshot> {
        match snapshot::take(&self.groups, self.source) {
            Ok(s) => Some(s),
            Err(e) => {
                self.error.get_or_insert(e.to_string());
                None
            }
        }
    }

    /// Make the end snapshot the next start, for measuring interval after interval.
    pub fn roll(&mut self) {
        if let Some((_, end)) = self.windows.pop() {
            self.windows.push((end, None));
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
    pub fn round_table(
        &self,
        i: usize,
        transactions: u64,
        driver: Option<&DriverRow>,
        concurrency: Option<usize>,
        round_trip_us: f64,
        rate_tps: f64,
    ) -> Option<CpuTable> {
        let (a, b) = self.windows.get(i)?;
        self.table_between(
            a.as_ref()?,
            b.as_ref()?,
            transactions,
            driver,
            concurrency,
            round_trip_us,
            rate_tps,
        )
    }

    /// The table for `transactions` round trips, with the driver's own CPU as one more group
    /// (`driver_cpu`, split like this process's ticks), and the round trip and rate for the verdict.
    pub fn table(
        &self,
        transactions: u64,
        driver: Option<&DriverRow>,
        concurrency: Option<usize>,
        round_trip_us: f64,
        rate_tps: f64,
    ) -> Option<CpuTable> {
        let (a, b) = self.whole()?;
        self.table_between(
            a,
            b,
            transactions,
            driver,
            concurrency,
            round_trip_us,
            rate_tps,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn table_between(
        &self,
        a: &Snapshot,
        b: &Snapshot,
        transactions: u64,
        driver: Option<&DriverRow>,
        concurrency: Option<usize>,
        round_trip_us: f64,
        rate_tps: f64,
    ) -> Option<CpuTable> {
        let per = |ns: f64| {
            if transactions > 0 {
                ns / 1000.0 / transactions as f64
            } else {
                0.0
            }
        };
        let (tick_s, tick_source) = kernel_tick();
        let mut rows: Vec<ProcessRow> = Vec::new();
        let mut warnings = Vec::new();
        let mut grouped: HashSet<Key> = HashSet::new();
        let window_start = a.uptime_ticks;
        let ticks_ns = |t: u64| t as f64 * 1e9 / snapshot::clk_tck() as f64;

        // A process's CPU over the window: end − start, or its whole life if it started inside.
        let delta =
            |key: &Key, end: &Sample, start: Option<&Sample>| -> (u64, u64, u64, Option<String>) {
                match start {
                    Some(s) => (
                        end.cpu_ns.saturating_sub(s.cpu_ns),
                        end.utime.saturating_sub(s.utime),
                        end.stime.saturating_sub(s.stime),
                        None,
                    ),
                    None if key.1 >= window_start => (
                        end.cpu_ns,
                        end.utime,
                        end.stime,
                        Some("started in the window".into()),
                    ),
                    None => (
                        end.cpu_ns,
                        end.utime,
                        end.stime,
                        Some("joined the group in the window".into()),
                    ),
                }
            };
        let row = |group: &str,
                   name: String,
                   pid: Option<i32>,
                   ns: u64,
                   ut: u64,
                   st: u64,
                   exact: bool,
                   note: Option<String>| {
            let (u, s) = math::split(ns as f64, ut, st);
            // Half a tick added to each side (Laplace): with all ticks on one side, p(1-p)
            // would claim a certainty that a handful of samples cannot give.
            let share = (st as f64 + 0.5) / ((ut + st) as f64 + 1.0);
            let sigma_ns = math::split_sigma(ns as f64 / 1e9, tick_s, share) * 1e9;
            ProcessRow {
                group: group.to_string(),
                name,
                pid,
                user_us_per_tran: per(u),
                sys_us_per_tran: per(s),
                total_us_per_tran: per(ns as f64),
                pct: 0.0,
                split_sigma_us_per_tran: per(sigma_ns),
                ticks_us_per_tran: None,
                exact,
                note,
            }
        };
        let exact = self.source == CpuSource::Exact;
        // A process or thread seen at the end: its window's CPU, with the ticks reading beside it.
        let live = |group: &str, key: &Key, end: &Sample, start: Option<&Sample>| {
            let (ns, ut, st, note) = delta(key, end, start);
            let name = format!("{}.{}", end.name, end.pid);
            row(group, name, Some(end.pid), ns, ut, st, exact, note)
                .with_ticks(per(ticks_ns(ut + st)))
        };

        for (i, g) in self.groups.iter().enumerate() {
            let before = rows.len();
            match (&a.groups[i], &b.groups[i]) {
                (Members::Procs(ka), Members::Procs(kb)) => {
                    let keys: Vec<Key> = {
                        let mut seen = HashSet::new();
                        ka.iter()
                            .chain(kb)
                            .filter(|k| seen.insert(**k))
                            .copied()
                            .collect()
                    };
                    for key in keys {
                        grouped.insert(key);
                        match (a.procs.get(&key), b.procs.get(&key)) {
                            (start, Some(end)) => {
                                rows.push(live(&g.name, &key, end, start));
                                // Children it reaped in the window: their CPU, at tick precision.
                                let reaped = start.map_or(0, |s| {
                                    end.children_ticks.saturating_sub(s.children_ticks)
                                });
                                if reaped > 0 {
                                    let ns = reaped * 1_000_000_000 / snapshot::clk_tck();
                                    rows.push(row(
                                        &g.name,
                                        format!("{}.{} children", end.name, end.pid),
                                        None,
                                        ns,
                                        0,
                                        0,
                                        false,
                                        Some("reaped children (ticks)".into()),
                                    ));
                                }
                            }
                            (Some(start), None) => {
                                warnings.push(format!(
                                    "{} {}.{} exited in the window: its CPU after the first snapshot is missing (partly counted if a group member reaped it)",
                                    g.name, start.name, start.pid
                                ));
                                rows.push(row(
                                    &g.name,
                                    format!("{}.{}", start.name, start.pid),
                                    Some(start.pid),
                                    0,
                                    0,
                                    0,
                                    exact,
                                    Some("exited in the window".into()),
                                ));
                            }
                            (None, None) => {}
                        }
                    }
                }
                (Members::Threads(ta), Members::Threads(tb)) => {
                    for (key, end) in tb {
                        rows.push(live(&g.name, key, end, ta.get(key)));
                    }
                    for (key, start) in ta.iter().filter(|(k, _)| !tb.contains_key(k)) {
                        warnings.push(format!(
                            "{} thread {}.{} ended in the window: its CPU is missing",
                            g.name, start.name, key.0
                        ));
                    }
                }
                (Members::Cgroup(Some(ca)), Members::Cgroup(Some(cb))) => {
                    let ns = cb.usage_ns.saturating_sub(ca.usage_ns);
                    let (ut, st) = (
                        cb.user.saturating_sub(ca.user),
                        cb.system.saturating_sub(ca.system),
                    );
                    let path = g
                        .cgroup()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default();
                    rows.push(row(
                        &g.name,
                        format!("cgroup:{path}"),
                        None,
                        ns,
                        ut,
                        st,
                        true,
                        None,
                    ));
                }
                _ => warnings.push(format!("{}: its cgroup counters could not be read", g.name)),
            }
            if rows.len() == before {
                warnings.push(format!("group {} matched nothing: check its selectors (oemputx cpu --group … lists what a group holds); processes that start and exit inside the window are seen only by a cgroup: selector", g.name));
            }
        }

        // The driver: this process (less the threads that belong to a group), split like
        // this process's ticks; or, for `oemputx account`, the command it ran, from rusage.
        let me = std::process::id() as i32;
        if let Some(d) = driver {
            let mine = b.procs.iter().find(|((pid, _), _)| *pid == me);
            let (ut, st) = match (d.split, mine) {
                (Some(split), _) => split,
                (None, Some((k, s))) => {
                    let start = a.procs.get(k);
                    (
                        s.utime.saturating_sub(start.map_or(0, |x| x.utime)),
                        s.stime.saturating_sub(start.map_or(0, |x| x.stime)),
                    )
                }
                (None, None) => (0, 0),
            };
            rows.push(row(
                d.group,
                d.name.clone(),
                d.pid,
                d.cpu.as_nanos() as u64,
                ut,
                st,
                true,
                None,
            ));
        }

        // Folded from +0.0: an empty f64 sum is -0.0, which prints as "-0.00".
        let sum = |it: &mut dyn Iterator<Item = f64>| it.fold(0.0, |acc, v| acc + v);
        let captured = sum(&mut rows.iter().map(|r| r.total_us_per_tran));
        for r in &mut rows {
            r.pct = if captured > 0.0 {
                100.0 * r.total_us_per_tran / captured
            } else {
                0.0
            };
        }
        let mut groups: Vec<GroupRow> = Vec::new();
        for name in self
            .groups
            .iter()
            .map(|g| g.name.as_str())
            .chain(driver.map(|d| d.group))
        {
            let members: Vec<&ProcessRow> = rows.iter().filter(|r| r.group == name).collect();
            let total = sum(&mut members.iter().map(|r| r.total_us_per_tran));
            groups.push(GroupRow {
                name: name.to_string(),
                user_us_per_tran: sum(&mut members.iter().map(|r| r.user_us_per_tran)),
                sys_us_per_tran: sum(&mut members.iter().map(|r| r.sys_us_per_tran)),
                total_us_per_tran: total,
                pct: if captured > 0.0 {
                    100.0 * total / captured
                } else {
                    0.0
                },
                processes: members.len(),
                // + 0.0 turns the -0.0 of an empty sum into 0.0.
                ticks_us_per_tran: members
                    .iter()
                    .map(|r| r.ticks_us_per_tran)
                    .sum::<Option<f64>>()
                    .map(|t| t + 0.0),
            });
        }

        // Every task on the machine, for the capture ratio and the "other" CPU.
        let elapsed_s = b.at.duration_since(a.at).as_secs_f64();
        // A command that has exited is in no snapshot; its CPU still ran on this machine.
        let mut all_ns = driver
            .filter(|d| d.exited)
            .map_or(0, |d| d.cpu.as_nanos() as u64);
        let mut others: Vec<(u64, &Sample)> = Vec::new();
        for (key, end) in &b.procs {
            let (ns, ..) = delta(key, end, a.procs.get(key));
            all_ns += ns;
            if !grouped.contains(key) && key.0 != me {
                others.push((ns, end));
            }
        }
        let other_ns: u64 = others.iter().map(|(ns, _)| ns).sum();
        others.sort_by_key(|x| std::cmp::Reverse(x.0));
        let other_cpu = OtherCpu {
            us_per_tran: per(other_ns as f64),
            top: others
                .iter()
                .take(3)
                .map(|(ns, s)| OtherProcess {
                    name: s.name.clone(),
                    pid: s.pid,
                    us_per_tran: per(*ns as f64),
                })
                .collect(),
        };
        let tck = snapshot::clk_tck() as f64;
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let ratio = match self.ratio {
            RatioMode::Fixed(v) => Some(CaptureRatio {
                value: v,
                source: "fixed",
                tasks_cpu_s: None,
                busy_s: None,
            }),
            RatioMode::Measured => {
                let idle_s = b.idle_ticks.saturating_sub(a.idle_ticks) as f64 / tck;
                let iowait_s = b.iowait_ticks.saturating_sub(a.iowait_ticks) as f64 / tck;
                let tasks_s = all_ns as f64 / 1e9;
                let busy = elapsed_s * cpus as f64 - idle_s - iowait_s;
                match math::capture_ratio(tasks_s, elapsed_s, cpus, idle_s, iowait_s) {
                    Some(v) if v > 1.0 => {
                        warnings.push(format!(
                            "the measured capture ratio came out at {v:.3}, above 1: /proc/stat counts idle in {:.0} ms ticks, too coarse for a {elapsed_s:.3} s window; it is clamped to 1 (run longer for a real figure)",
                            1000.0 / tck
                        ));
                        Some(CaptureRatio {
                            value: 1.0,
                            source: "measured",
                            tasks_cpu_s: Some(tasks_s),
                            busy_s: Some(busy),
                        })
                    }
                    Some(v) => Some(CaptureRatio {
                        value: v,
                        source: "measured",
                        tasks_cpu_s: Some(tasks_s),
                        busy_s: Some(busy),
                    }),
                    None => {
                        warnings.push("the capture ratio could not be measured (window too short for /proc/stat's ticks); give --capture-ratio 0.9 or run longer".into());
                        None
                    }
                }
            }
        };
        let denied: HashSet<i32> = a.denied.iter().chain(&b.denied).copied().collect();
        if !denied.is_empty() {
            let mut pids: Vec<i32> = denied.into_iter().collect();
            pids.sort_unstable();
            let named: Vec<String> = pids.iter().take(10).map(|p| format!("/proc/{p}")).collect();
            warnings.push(format!(
                "{} process(es) could not be read ({}{}): /proc is mounted with hidepid or they belong to another user; run oemputx as their user or as root to account them",
                pids.len(),
                named.join(", "),
                if pids.len() > 10 { ", …" } else { "" }
            ));
        }
        // Concurrent request streams can keep at most min(streams, CPUs) CPUs busy.
        let usable = concurrency.map_or(cpus, |c| c.clamp(1, cpus));
        let (bound, used) = math::cpu_bound(captured + other_cpu.us_per_tran, rate_tps, usable);
        let verdict = if bound {
            format!(
                "CPU-bound: each transaction's CPU kept {:.0}% of the {usable} CPU(s) its request streams can use busy",
                100.0 * used
            )
        } else {
            format!(
                "waiting: a round trip takes {round_trip_us:.1} us but the measured processes spend {captured:.1} us of CPU on it; the {usable} CPU(s) its request streams can use were {:.0}% busy, so the rest is I/O, locks, network or queueing",
                100.0 * used
            )
        };
        let snapshot_cpu = (a.cost + b.cost).as_secs_f64();
        let captured_s = captured * transactions as f64 / 1e6;
        Some(CpuTable {
            processes: rows,
            groups,
            captured_us_per_tran: captured,
            corrected_us_per_tran: ratio.as_ref().map(|r| captured / r.value),
            capture_ratio: ratio,
            other_cpu,
            info: AccountingInfo {
                cpu_source: Some(self.source),
                tick_s,
                tick_source,
                steal_s: b.steal_ticks.saturating_sub(a.steal_ticks) as f64 / tck,
                snapshot_cpu_s: snapshot_cpu,
                snapshot_share_pct: if captured_s > 0.0 {
                    100.0 * snapshot_cpu / captured_s
                } else {
                    0.0
                },
                verdict,
                warnings,
                error: None,
            },
        })
    }
}

impl Window for Accounting {
    fn start(&mut self) {
        let s = self.snap();
        self.windows.push((s, None));
    }
    fn end(&mut self) {
        let e = self.snap();
        match self.windows.last_mut() {
            Some(w) => w.1 = e,
            None => self.windows.push((None, e)),
        }
    }
}
