//! The CPU table between two snapshots, built in named steps that each can be tested on
//! constructed snapshots: a member row per kind (process, thread, cgroup), the driver's row,
//! the group totals, the CPU outside the groups, the capture ratio and the verdict.
//!
//! Processes are keyed by (pid, start time): a pid reused inside the window is two
//! processes, one that exited and one that started, never one whose CPU went backwards.

use super::all_tasks::TasksSource;
use super::host_load::{HostLoad, HostState};
use super::selector::GroupSpec;
use super::snapshot::{CgroupSample, CpuSource, Key, Members, Sample, Snapshot};
use super::{
    AccountingInfo, CaptureRatio, CpuTable, DriverRow, GroupRow, Load, LoadKind, OtherCpu,
    OtherProcess, ProcessRow, RatioMode, math,
};
use std::collections::{HashMap, HashSet};

/// The largest 1σ, as a share of the ratio, at which a measured capture ratio is applied.
const MAX_RATIO_SIGMA: f64 = 0.03;

/// The largest share of the machine's busy CPU that may be neither charged to a task nor
/// counted as interrupts for a measured ratio to be applied. Quiet, this machine leaves
/// none (ratio 1.000 ±0.007, docs/accounting.md); a larger gap is CPU the sources could not
/// see, and dividing by it would inflate every figure.
const MAX_UNACCOUNTED: f64 = 0.05;

/// How far above 1 (beyond 3σ of tick noise) a measured ratio may read and still be
/// clamped: each counter's edge is late by up to a tick per CPU.
const OVER_ONE_SLACK: f64 = 0.02;

/// The CPU of every task over the window, and where it came from.
#[derive(Debug, Clone, Copy)]
struct TasksCpu {
    ns: u64,
    source: TasksSource,
}

/// The traffic a table is for: its transactions (the divisor), the driver's own row, and the
/// figures the verdict weighs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Traffic<'a> {
    /// Round trips in the window; every figure is per transaction.
    pub transactions: u64,
    /// Whatever drove the traffic, as one more group.
    pub driver: Option<&'a DriverRow>,
    /// Concurrent request streams (tasks): they can keep at most that many CPUs busy.
    pub concurrency: Option<usize>,
    pub round_trip_us: f64,
    pub rate_tps: f64,
}

/// Facts about the machine the arithmetic needs, read once by the caller so that the steps
/// stay pure.
#[derive(Debug, Clone)]
pub struct Machine {
    /// The kernel's tick, seconds, for the split's uncertainty, and where it came from.
    pub tick_s: f64,
    pub tick_source: String,
    /// USER_HZ: /proc's clock ticks per second.
    pub clk_tck: u64,
    /// CPUs this process may use.
    pub cpus: usize,
    /// The granularity of the machine's idle counters, seconds: /proc/stat counts in USER_HZ
    /// ticks, whatever unit a source reports them in.
    pub counter_tick_s: f64,
    /// The `--host` name of another host; `None`: this machine.
    pub host: Option<String>,
}

/// A process's CPU over the window: exact nanoseconds, and the tick counts that split it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cpu {
    ns: u64,
    user_ticks: u64,
    sys_ticks: u64,
}

/// What a row measures: a process two groups hold is one thing measured twice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Measured {
    Process(Key),
    /// Children the process reaped in the window.
    Children(Key),
    /// One of oemputx's own threads.
    Thread(Key),
    Cgroup(String),
    /// oemputx less its grouped threads, or the command `oemputx account` ran (its pid).
    Driver(i32),
}

/// The table under construction.
struct Builder<'a> {
    start: &'a Snapshot,
    end: &'a Snapshot,
    traffic: Traffic<'a>,
    machine: &'a Machine,
    /// Whether process totals come from CPU clocks (exact) or from ticks.
    exact: bool,
    rows: Vec<ProcessRow>,
    /// What each row measures (same index as `rows`), to count each process once.
    measured: Vec<Measured>,
    warnings: Vec<String>,
    /// Every process some group holds, so that the rest count as "other".
    grouped: HashSet<Key>,
}

/// Build the table of the window `start`..`end` for `groups`.
pub fn build(
    groups: &[GroupSpec],
    (start, end): (&Snapshot, &Snapshot),
    traffic: Traffic,
    machine: &Machine,
    source: CpuSource,
    ratio: RatioMode,
) -> CpuTable {
    let mut b = Builder {
        start,
        end,
        traffic,
        machine,
        exact: source == CpuSource::Exact,
        rows: Vec::new(),
        measured: Vec::new(),
        warnings: Vec::new(),
        grouped: HashSet::new(),
    };
    for (i, spec) in groups.iter().enumerate() {
        b.member_rows(spec, &start.groups[i], &end.groups[i]);
    }
    if let Some(d) = traffic.driver {
        b.driver_row(d);
    }
    let names: Vec<&str> = groups
        .iter()
        .map(|g| g.name.as_str())
        .chain(traffic.driver.map(|d| d.group))
        .collect();
    let counted = b.count_each_once();
    let (captured, mut group_rows) = b.group_totals(&names, &counted);
    let (costs, beyond) = super::costs::group_costs(groups, (start, end), traffic.transactions);
    for (row, cost) in group_rows.iter_mut().zip(costs) {
        row.cost = cost;
    }
    let (mut other_cpu, live_ns) = b.other_cpu();
    let tasks = b.all_tasks(live_ns);
    let came_and_went = tasks.ns.saturating_sub(live_ns);
    other_cpu.short_lived_us_per_tran = Some(b.per(came_and_went as f64));
    other_cpu.us_per_tran += b.per(came_and_went as f64);
    let capture_ratio = b.capture_ratio(ratio, &tasks);
    b.warn_denied();
    let host_load = b.host_load(captured, &tasks);
    let (mut verdict, load) = b.verdict(captured);
    if let Some(h) = host_load.as_ref().filter(|h| h.state != HostState::Quiet) {
        verdict.push_str(&format!(
            "; on a {} host (other work {:.2} CPUs, idle {:.2}: see the first warning)",
            h.state.word(),
            h.other_cpus + h.steal_cpus,
            h.idle_cpus
        ));
        b.warnings.insert(0, h.warning());
    }
    let snapshot_cpu_s = (start.cost + end.cost).as_secs_f64();
    let captured_s = captured * traffic.transactions as f64 / 1e6;
    let tck = machine.clk_tck as f64;
    CpuTable {
        processes: b.rows,
        groups: group_rows,
        captured_us_per_tran: captured,
        corrected_us_per_tran: capture_ratio.as_ref().map(|r| captured / r.value),
        capture_ratio,
        other_cpu,
        info: AccountingInfo {
            cpu_source: Some(source),
            tick_s: machine.tick_s,
            tick_source: machine.tick_source.clone(),
            steal_s: end.steal_ticks.saturating_sub(start.steal_ticks) as f64 / tck,
            snapshot_cpu_s,
            snapshot_share_pct: if captured_s > 0.0 {
                100.0 * snapshot_cpu_s / captured_s
            } else {
                0.0
            },
            verdict,
            load,
            host_load,
            warnings: b.warnings,
            error: None,
            hosts: Vec::new(),
            beyond_cpu: Some(beyond),
        },
    }
}

/// A row's share of the captured total, percent (0 when nothing was captured).
pub(super) fn share_of(v: f64, captured: f64) -> f64 {
    if captured > 0.0 {
        100.0 * v / captured
    } else {
        0.0
    }
}

/// Folded from +0.0: an empty f64 sum is -0.0, which prints as "-0.00".
fn sum(it: impl Iterator<Item = f64>) -> f64 {
    it.fold(0.0, |acc, v| acc + v)
}

impl Builder<'_> {
    fn host_name(&self) -> String {
        self.machine.host.clone().unwrap_or_else(|| "local".into())
    }

    /// Nanoseconds of the window → µs per transaction.
    fn per(&self, ns: f64) -> f64 {
        match self.traffic.transactions {
            0 => 0.0,
            n => ns / 1000.0 / n as f64,
        }
    }

    fn ticks_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e9 / self.machine.clk_tck as f64
    }

    /// A process's CPU over the window: end − start, or its whole life when it was not in
    /// the first snapshot (with a note saying whether it started or joined the group).
    fn delta(&self, key: &Key, end: &Sample, start: Option<&Sample>) -> (Cpu, Option<String>) {
        match start {
            Some(s) => (
                Cpu {
                    ns: end.cpu_ns.saturating_sub(s.cpu_ns),
                    user_ticks: end.utime.saturating_sub(s.utime),
                    sys_ticks: end.stime.saturating_sub(s.stime),
                },
                None,
            ),
            None => {
                let whole = Cpu {
                    ns: end.cpu_ns,
                    user_ticks: end.utime,
                    sys_ticks: end.stime,
                };
                let note = if key.1 >= self.start.uptime_ticks {
                    "started in the window"
                } else {
                    "joined the group in the window"
                };
                (whole, Some(note.into()))
            }
        }
    }

    /// One row: the exact total split by the tick counts, with the split's 1σ.
    fn row(&self, group: &str, name: String, pid: Option<i32>, cpu: Cpu) -> ProcessRow {
        let (u, s) = math::split(cpu.ns as f64, cpu.user_ticks, cpu.sys_ticks);
        // Half a tick added to each side (Laplace): with all ticks on one side, p(1-p)
        // would claim a certainty that a handful of samples cannot give.
        let share = (cpu.sys_ticks as f64 + 0.5) / ((cpu.user_ticks + cpu.sys_ticks) as f64 + 1.0);
        let sigma_ns = math::split_sigma(cpu.ns as f64 / 1e9, self.machine.tick_s, share) * 1e9;
        ProcessRow {
            group: group.to_string(),
            host: self.host_name(),
            name,
            pid,
            user_us_per_tran: self.per(u),
            sys_us_per_tran: self.per(s),
            total_us_per_tran: self.per(cpu.ns as f64),
            pct: 0.0,
            split_sigma_us_per_tran: self.per(sigma_ns),
            ticks_us_per_tran: None,
            exact: self.exact,
            note: None,
        }
    }

    /// A process or thread seen at the end: its window's CPU, with the ticks reading beside it.
    fn live(&self, group: &str, key: &Key, end: &Sample, start: Option<&Sample>) -> ProcessRow {
        let (cpu, note) = self.delta(key, end, start);
        let mut row = self.row(
            group,
            format!("{}.{}", end.name, end.pid),
            Some(end.pid),
            cpu,
        );
        row.note = note;
        row.ticks_us_per_tran = Some(self.per(self.ticks_ns(cpu.user_ticks + cpu.sys_ticks)));
        row
    }

    /// Step 1: the rows of one group's members, by kind.
    fn member_rows(&mut self, spec: &GroupSpec, a: &Members, b: &Members) {
        let before = self.rows.len();
        match (a, b) {
            (Members::Procs(ka), Members::Procs(kb)) => self.process_rows(&spec.name, ka, kb),
            (Members::Threads(ta), Members::Threads(tb)) => self.thread_rows(&spec.name, ta, tb),
            (Members::Cgroup(Some(ca)), Members::Cgroup(Some(cb))) => self.cgroup_row(spec, ca, cb),
            _ => self.warnings.push(format!(
                "{}: its cgroup counters could not be read",
                spec.name
            )),
        }
        if self.rows.len() == before {
            self.warnings.push(format!("group {} matched nothing: check its selectors (oemputx cpu --group … lists what a group holds); processes that start and exit inside the window are seen only by a cgroup: selector", spec.name));
        }
    }

    /// Processes in the group at either snapshot, each once, in the order first seen.
    fn process_rows(&mut self, group: &str, at_start: &[Key], at_end: &[Key]) {
        let mut seen = HashSet::new();
        let keys: Vec<Key> = at_start
            .iter()
            .chain(at_end)
            .filter(|k| seen.insert(**k))
            .copied()
            .collect();
        for key in keys {
            self.grouped.insert(key);
            match (self.start.procs.get(&key), self.end.procs.get(&key)) {
                (start, Some(end)) => {
                    let row = self.live(group, &key, end, start);
                    self.push(row, Measured::Process(key));
                    self.reaped_children_row(group, &key, end, start);
                }
                (Some(start), None) => self.exited_row(group, &key, start),
                (None, None) => {}
            }
        }
    }

    /// Children a member reaped in the window: their CPU, at tick precision.
    fn reaped_children_row(
        &mut self,
        group: &str,
        key: &Key,
        end: &Sample,
        start: Option<&Sample>,
    ) {
        let reaped = start.map_or(0, |s| end.children_ticks.saturating_sub(s.children_ticks));
        if reaped == 0 {
            return;
        }
        let cpu = Cpu {
            ns: reaped * 1_000_000_000 / self.machine.clk_tck,
            ..Cpu::default()
        };
        let mut row = self.row(
            group,
            format!("{}.{} children", end.name, end.pid),
            None,
            cpu,
        );
        row.exact = false;
        row.note = Some("reaped children (ticks)".into());
        self.push(row, Measured::Children(*key));
    }

    /// A member gone by the end: its CPU after the first snapshot is in no snapshot.
    fn exited_row(&mut self, group: &str, key: &Key, start: &Sample) {
        self.warnings.push(format!(
            "{group} {}.{} exited in the window: its CPU after the first snapshot is missing (partly counted if a group member reaped it)",
            start.name, start.pid
        ));
        let name = format!("{}.{}", start.name, start.pid);
        let mut row = self.row(group, name, Some(start.pid), Cpu::default());
        row.note = Some("exited in the window".into());
        self.push(row, Measured::Process(*key));
    }

    fn thread_rows(
        &mut self,
        group: &str,
        at_start: &HashMap<Key, Sample>,
        at_end: &HashMap<Key, Sample>,
    ) {
        for (key, end) in at_end {
            let row = self.live(group, key, end, at_start.get(key));
            self.push(row, Measured::Thread(*key));
        }
        for (key, start) in at_start.iter().filter(|(k, _)| !at_end.contains_key(k)) {
            self.warnings.push(format!(
                "{group} thread {}.{} ended in the window: its CPU is missing",
                start.name, key.0
            ));
        }
    }

    /// A cgroup's counters: exact, and they keep the CPU of members that exited.
    fn cgroup_row(&mut self, spec: &GroupSpec, a: &CgroupSample, b: &CgroupSample) {
        let cpu = Cpu {
            ns: b.usage_ns.saturating_sub(a.usage_ns),
            user_ticks: b.user.saturating_sub(a.user),
            sys_ticks: b.system.saturating_sub(a.system),
        };
        let path = spec
            .cgroup()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut row = self.row(&spec.name, format!("cgroup:{path}"), None, cpu);
        row.exact = true;
        self.push(row, Measured::Cgroup(path));
    }

    /// Step 2: the driver — this process (less the threads that belong to a group), split
    /// like this process's ticks; or, for `oemputx account`, the command it ran, from rusage.
    fn driver_row(&mut self, d: &DriverRow) {
        let me = std::process::id() as i32;
        let mine = self.end.procs.iter().find(|((pid, _), _)| *pid == me);
        let (user_ticks, sys_ticks) = match (d.split, mine) {
            (Some(split), _) => split,
            (None, Some((k, s))) => {
                let start = self.start.procs.get(k);
                (
                    s.utime.saturating_sub(start.map_or(0, |x| x.utime)),
                    s.stime.saturating_sub(start.map_or(0, |x| x.stime)),
                )
            }
            (None, None) => (0, 0),
        };
        let cpu = Cpu {
            ns: d.cpu.as_nanos() as u64,
            user_ticks,
            sys_ticks,
        };
        let mut row = self.row(d.group, d.name.clone(), d.pid, cpu);
        row.exact = true;
        self.push(row, Measured::Driver(d.pid.unwrap_or(me)));
    }

    fn push(&mut self, row: ProcessRow, measured: Measured) {
        self.rows.push(row);
        self.measured.push(measured);
    }

    /// Step 3: which rows the captured total counts. A process two groups hold is a row in
    /// each (each group's total is what it holds) but counted once, under the first; the
    /// driver and oemputx's own threads are inside oemputx's process, so a group that holds
    /// that process counts them. Returns one flag per row.
    fn count_each_once(&mut self) -> Vec<bool> {
        let mut first: HashMap<&Measured, &str> = HashMap::new();
        // On this machine a group that holds a process holds its threads too.
        let holder = |pid: i32, first: &HashMap<&Measured, &str>| -> Option<String> {
            first.iter().find_map(|(m, g)| match m {
                Measured::Process((p, _)) if *p == pid => Some(g.to_string()),
                _ => None,
            })
        };
        for (m, r) in self.measured.iter().zip(&self.rows) {
            if matches!(m, Measured::Process(_)) {
                first.entry(m).or_insert(r.group.as_str());
            }
        }
        let local = self.machine.host.is_none();
        let me = std::process::id() as i32;
        let mut counted = Vec::with_capacity(self.rows.len());
        let mut notes = Vec::new();
        let mut seen: HashSet<&Measured> = HashSet::new();
        for (i, m) in self.measured.iter().enumerate() {
            let inside = match m {
                Measured::Thread(_) if local => holder(me, &first),
                Measured::Driver(pid) if local => holder(*pid, &first),
                _ => None,
            };
            let again = !seen.insert(m);
            let count = inside.is_none() && !again;
            counted.push(count);
            if count {
                continue;
            }
            let by =
                inside.unwrap_or_else(|| first.get(m).map_or(String::new(), |g| g.to_string()));
            notes.push((i, by));
        }
        for (i, by) in notes {
            let r = &mut self.rows[i];
            let what = if r.group == by {
                format!("also in group {by}")
            } else {
                format!("held by group {by} too")
            };
            self.warnings.push(format!(
                "{} {} is {what}: the captured total counts it once, under {by}; each group's own total includes it",
                r.group, r.name
            ));
            let note = format!("counted under {by}");
            r.note = Some(match r.note.take() {
                Some(n) => format!("{n}; {note}"),
                None => note,
            });
        }
        counted
    }

    /// Step 4: each row's share of the captured total, and one total row per group.
    fn group_totals(&mut self, names: &[&str], counted: &[bool]) -> (f64, Vec<GroupRow>) {
        let captured = sum(self
            .rows
            .iter()
            .zip(counted)
            .filter(|(_, c)| **c)
            .map(|(r, _)| r.total_us_per_tran));
        let share = |v: f64| share_of(v, captured);
        for r in &mut self.rows {
            r.pct = share(r.total_us_per_tran);
        }
        let groups = names
            .iter()
            .map(|&name| {
                let members: Vec<&ProcessRow> =
                    self.rows.iter().filter(|r| r.group == name).collect();
                let total = sum(members.iter().map(|r| r.total_us_per_tran));
                GroupRow {
                    host: self.host_name(),
                    name: name.to_string(),
                    user_us_per_tran: sum(members.iter().map(|r| r.user_us_per_tran)),
                    sys_us_per_tran: sum(members.iter().map(|r| r.sys_us_per_tran)),
                    total_us_per_tran: total,
                    pct: share(total),
                    processes: members.len(),
                    // + 0.0 turns the -0.0 of an empty sum into 0.0.
                    ticks_us_per_tran: members
                        .iter()
                        .map(|r| r.ticks_us_per_tran)
                        .sum::<Option<f64>>()
                        .map(|t| t + 0.0),
                    cost: Default::default(),
                }
            })
            .collect();
        (captured, groups)
    }

    /// Step 5: CPU of every process outside the groups and the driver (the three largest
    /// named), and the CPU of all tasks on the machine, for the capture ratio.
    fn other_cpu(&self) -> (OtherCpu, u64) {
        let me = std::process::id() as i32;
        // A command that has exited is in no snapshot; its CPU still ran on this machine.
        let mut all_ns = self
            .traffic
            .driver
            .filter(|d| d.exited)
            .map_or(0, |d| d.cpu.as_nanos() as u64);
        let mut others: Vec<(u64, &Sample)> = Vec::new();
        for (key, end) in &self.end.procs {
            let (cpu, _) = self.delta(key, end, self.start.procs.get(key));
            all_ns += cpu.ns;
            // oemputx itself is a row of its own, on this machine only.
            if !self.grouped.contains(key) && (self.machine.host.is_some() || key.0 != me) {
                others.push((cpu.ns, end));
            }
        }
        let other_ns: u64 = others.iter().map(|(ns, _)| ns).sum();
        others.sort_by_key(|x| std::cmp::Reverse(x.0));
        let other = OtherCpu {
            us_per_tran: self.per(other_ns as f64),
            short_lived_us_per_tran: None,
            top: others
                .iter()
                .take(3)
                .map(|(ns, s)| OtherProcess {
                    name: s.name.clone(),
                    pid: s.pid,
                    us_per_tran: self.per(*ns as f64),
                })
                .collect(),
        };
        (other, all_ns)
    }

    /// Step 6a: the CPU charged to every task in the window — the root cgroup's counter
    /// when one can be read at both edges, else the live processes (`live_ns`) plus the
    /// children every process reaped (ticks).
    fn all_tasks(&self, live_ns: u64) -> TasksCpu {
        if let (Some(a), Some(b)) = (&self.start.all_tasks, &self.end.all_tasks)
            && a.source == b.source
        {
            // v2: the root cgroup's own processes are outside every top-level cgroup.
            let root: u64 = b
                .root_pids
                .iter()
                .filter_map(|pid| self.end.procs.iter().find(|((p, _), _)| p == pid))
                .map(|(k, e)| self.delta(k, e, self.start.procs.get(k)).0.ns)
                .sum();
            return TasksCpu {
                ns: b.ns.saturating_sub(a.ns) + root,
                source: b.source,
            };
        }
        let reaped: u64 = self
            .end
            .procs
            .iter()
            .filter_map(|(k, e)| {
                let s = self.start.procs.get(k)?;
                Some(e.children_ticks.saturating_sub(s.children_ticks))
            })
            .sum();
        TasksCpu {
            ns: live_ns + reaped * 1_000_000_000 / self.machine.clk_tck,
            source: TasksSource::Processes,
        }
    }

    /// Step 6b: the capture ratio, fixed or measured (all tasks' CPU ÷ the machine's busy
    /// time, steal left out: the hypervisor's time is no CPU of this machine's). A measured
    /// ratio is applied only when /proc/stat's tick counting leaves it within ±3% (1σ) and
    /// when what it leaves out is what a capture ratio is for — interrupts — rather than CPU
    /// the sources could not see; above 1 it is tick noise and is clamped.
    fn capture_ratio(&mut self, mode: RatioMode, tasks: &TasksCpu) -> Option<CaptureRatio> {
        let (a, b) = (self.start, self.end);
        let tck = self.machine.clk_tck as f64;
        let elapsed_s = b.at.duration_since(a.at).as_secs_f64();
        let cpus = self.machine.cpus;
        let steal_s = b.steal_ticks.saturating_sub(a.steal_ticks) as f64 / tck;
        let irq_s = b.irq_ticks.saturating_sub(a.irq_ticks) as f64 / tck;
        if let RatioMode::Fixed(v) = mode {
            return Some(CaptureRatio {
                value: v,
                source: "fixed".into(),
                tasks_cpu_s: None,
                busy_s: None,
                measured_value: None,
                sigma: None,
                tasks_source: None,
                irq_s: None,
                steal_s: Some(steal_s),
                unaccounted_share: None,
                note: None,
            });
        }
        let idle_s = b.idle_ticks.saturating_sub(a.idle_ticks) as f64 / tck;
        let iowait_s = b.iowait_ticks.saturating_sub(a.iowait_ticks) as f64 / tck;
        let tasks_s = tasks.ns as f64 / 1e9;
        let Some(v) = math::capture_ratio(tasks_s, elapsed_s, cpus, idle_s + steal_s, iowait_s)
        else {
            self.warnings.push("the capture ratio could not be measured (window too short for /proc/stat's ticks); give --capture-ratio 0.9 or run longer".into());
            return None;
        };
        let busy = tasks_s / v;
        let sigma = math::capture_ratio_sigma(v, busy, cpus, self.machine.counter_tick_s);
        let unaccounted = (1.0 - v - irq_s / busy).max(0.0);
        let mut ratio = CaptureRatio {
            value: v,
            source: "measured".into(),
            tasks_cpu_s: Some(tasks_s),
            busy_s: Some(busy),
            measured_value: Some(v),
            sigma: Some(sigma),
            tasks_source: Some(tasks.source),
            irq_s: Some(irq_s),
            steal_s: Some(steal_s),
            unaccounted_share: Some(unaccounted),
            note: None,
        };
        if sigma > MAX_RATIO_SIGMA * v {
            self.warnings.push(format!(
                "the measured capture ratio {v:.3}±{sigma:.3} is too uncertain to apply (/proc/stat counts idle in {:.0} ms ticks; the window had {busy:.3} s of busy CPU): the corrected total is the captured one; run longer (about {:.0} s) or give --capture-ratio",
                1000.0 * self.machine.counter_tick_s,
                (elapsed_s * sigma / (MAX_RATIO_SIGMA * v)).ceil().max(1.0)
            ));
            ratio.value = 1.0;
            ratio.source = "not applied".into();
            ratio.note = Some("too uncertain: run longer".into());
        } else if unaccounted - 2.0 * sigma > MAX_UNACCOUNTED {
            let why = self.unaccounted_why(tasks.source, unaccounted, busy);
            self.warnings.push(format!(
                "the measured capture ratio {v:.3} was not applied: {why}; the corrected total is the captured one (give --capture-ratio to apply one)"
            ));
            ratio.value = 1.0;
            ratio.source = "not applied".into();
            ratio.note = Some(why);
        } else if v - 1.0 > 3.0 * sigma + OVER_ONE_SLACK {
            let why = format!(
                "the tasks' CPU ({tasks_s:.3} s) exceeds the machine's busy time ({busy:.3} s) by more than tick noise{}",
                if tasks.source.counts_short_lived() {
                    ""
                } else {
                    ": children reaped in the window bring their whole lives' CPU, before it too"
                }
            );
            self.warnings.push(format!(
                "the measured capture ratio {v:.3}±{sigma:.3} was not applied: {why}; the corrected total is the captured one"
            ));
            ratio.value = 1.0;
            ratio.source = "not applied".into();
            ratio.note = Some(why);
        } else if v > 1.0 {
            self.warnings.push(format!(
                "the measured capture ratio came out at {v:.3}±{sigma:.3}, above 1: tick noise; it is clamped to 1"
            ));
            ratio.value = 1.0;
        }
        Some(ratio)
    }

    /// Why part of the busy CPU is charged to no task: the source cannot see short-lived
    /// processes, or (with a root cgroup) the gap is not interrupts as /proc/stat counts them.
    fn unaccounted_why(&self, source: TasksSource, unaccounted: f64, busy_s: f64) -> String {
        let pct = 100.0 * unaccounted;
        let secs = unaccounted * busy_s;
        if source.counts_short_lived() {
            format!(
                "{pct:.1} % of the busy CPU ({secs:.3} s) is charged to no task and is not interrupts ({})",
                source.describe()
            )
        } else {
            format!(
                "{pct:.1} % of the busy CPU ({secs:.3} s) is charged to no process that could be read: most likely processes that started and ended in the window under a parent that had not reaped them (a shell loop, a compile), which only a root cgroup counter sees, and none is readable here ({})",
                source.describe()
            )
        }
    }

    /// Step 6c: how busy the host was with work other than the run's, from the CPU of all
    /// tasks less the captured groups and the driver.
    fn host_load(&self, captured_us: f64, tasks: &TasksCpu) -> Option<HostLoad> {
        let (a, b) = (self.start, self.end);
        let tck = self.machine.clk_tck as f64;
        let elapsed_s = b.at.duration_since(a.at).as_secs_f64();
        if elapsed_s <= 0.0 {
            return None;
        }
        let run_s = captured_us * self.traffic.transactions as f64 / 1e6;
        let tasks_s = tasks.ns as f64 / 1e9;
        Some(HostLoad::classify(super::host_load::Window {
            cpus: self.machine.cpus,
            elapsed_s,
            run_s,
            other_s: (tasks_s - run_s).max(0.0),
            idle_s: (b.idle_ticks.saturating_sub(a.idle_ticks)
                + b.iowait_ticks.saturating_sub(a.iowait_ticks)) as f64
                / tck,
            steal_s: b.steal_ticks.saturating_sub(a.steal_ticks) as f64 / tck,
            counts_short_lived: tasks.source.counts_short_lived(),
        }))
    }

    /// Processes /proc would not let us read, by pid.
    fn warn_denied(&mut self) {
        let denied: HashSet<i32> = self
            .start
            .denied
            .iter()
            .chain(&self.end.denied)
            .copied()
            .collect();
        if denied.is_empty() {
            return;
        }
        let mut pids: Vec<i32> = denied.into_iter().collect();
        pids.sort_unstable();
        let named: Vec<String> = pids.iter().take(10).map(|p| format!("/proc/{p}")).collect();
        self.warnings.push(format!(
            "{} process(es) could not be read ({}{}): /proc is mounted with hidepid or they belong to another user; run oemputx as their user or as root to account them",
            pids.len(),
            named.join(", "),
            if pids.len() > 10 { ", …" } else { "" }
        ));
    }

    /// Step 7: CPU-bound or waiting, with the arithmetic. Concurrent request streams can
    /// keep at most min(streams, CPUs) CPUs busy. Only the measured groups weigh: CPU
    /// outside them (a compiler on the same machine) is not the transactions' cost, and
    /// adding it called a run that spent 10 µs of a 134 µs round trip "CPU-bound".
    ///
    /// Worded in CPUs, never as a percentage above 100: the processes of one request stream
    /// can work in parallel (flow, broker, database), and "kept 203 % of the 1 CPU(s)" read
    /// as an error.
    fn verdict(&self, captured: f64) -> (String, Option<Load>) {
        // No transaction, no figure per transaction: a rate of zero made the arithmetic
        // say "kept 497% busy" and "a round trip takes 0.0 us".
        if self.traffic.transactions == 0 {
            return ("none: no transaction completed, so there is no cost per transaction to judge (see the integrity counts above)".into(), None);
        }
        let cpus = self.machine.cpus;
        let usable = self.traffic.concurrency.map_or(cpus, |c| c.clamp(1, cpus));
        let (bound, share) = math::cpu_bound(captured, self.traffic.rate_tps, usable);
        let busy = share * usable as f64;
        let round_trip = self.traffic.round_trip_us;
        // Within 2 % of the usable CPUs is "all of them", not parallel work: the window's
        // edges and the CPU clocks' reading times put a tick or two either side (a pinned
        // embedded run, one CPU in turn, read 1.004 and was called parallel).
        let parallel = busy > usable as f64 * 1.02;
        let text = match (bound, parallel, captured > round_trip) {
            (true, false, _) => format!(
                "CPU-bound: the measured processes kept {:.2} of the {usable} CPU(s) its request streams can use busy ({:.0}%)",
                busy.min(usable as f64),
                100.0 * share.min(1.0)
            ),
            (true, true, _) => format!(
                "CPU-bound: the measured processes kept {busy:.2} CPUs busy on average, more than the {usable} its request streams can use one at a time: they work on each transaction in parallel"
            ),
            (false, _, false) => format!(
                "waiting: a round trip takes {round_trip:.1} us but the measured processes spend {captured:.1} us of CPU on it; the {usable} CPU(s) its request streams can use were {:.0}% busy, so the rest is I/O, locks, network or queueing",
                100.0 * share
            ),
            (false, _, true) => format!(
                "waiting: the measured processes spend {captured:.1} us of CPU on each transaction, more than a round trip takes ({round_trip:.1} us), working on it in parallel; yet the {usable} CPU(s) its request streams can use were only {:.0}% busy, so part of the time is I/O, locks, network or queueing",
                100.0 * share
            ),
        };
        let load = Load {
            kind: if bound {
                LoadKind::CpuBound
            } else {
                LoadKind::Waiting
            },
            busy_cpus: busy,
            usable_cpus: usable,
            busy_share: share,
        };
        (text, Some(load))
    }
}

#[cfg(test)]
mod tests;
