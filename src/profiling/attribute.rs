//! Samples to groups, and a group's samples to functions in µs per message.

use super::stacks::{Frame, Sample};
use super::{FunctionRow, GroupProfile, LockIn, TOP_FUNCTIONS};
use crate::accounting::{GroupRow, ProcessRow};
use std::collections::{HashMap, HashSet};

/// An excess of P(next in f | this in f) over f's share below this is noise or the ordinary
/// run of a function across samples: with jitter in the flow it stayed within ±0.03, in
/// lock-in it read 0.1–0.2 (docs/profiles.md).
const LOCK_IN_EXCESS: f64 = 0.08;
/// Fewer pairs than this say nothing about lock-in.
const LOCK_IN_PAIRS: u64 = 50;
/// The far lag, in a thread's samples: a function that runs in bursts longer than the
/// sampling period is in step with itself at lag 1 only; lock-in lasts the whole run, so
/// it shows at this lag (8 ms and more apart) too.
const FAR_LAG: usize = 8;

/// A run's CPU table as the report keeps it.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    pub processes: &'a [ProcessRow],
    pub groups: &'a [GroupRow],
}

/// Which group a process or thread belongs to, from the CPU table's rows on this host.
pub struct Membership {
    names: Vec<String>,
    /// Threads named by their own rows (`thread:` selectors: an embedded queue manager).
    by_tid: HashMap<i32, usize>,
    by_pid: HashMap<i32, usize>,
    /// Groups with a cgroup row (named `cgroup:PATH`): their processes are not known by id.
    pub cgroup_groups: Vec<String>,
}

impl Membership {
    /// `ignored`: oemputx's threads that work for the profile (their CPU is in no row).
    pub fn of(rows: &Rows, ignored: &[i32]) -> Membership {
        let mut m = Membership {
            names: Vec::new(),
            by_tid: HashMap::new(),
            by_pid: HashMap::new(),
            cgroup_groups: Vec::new(),
        };
        for g in rows.groups.iter().filter(|g| g.host == "local") {
            m.names.push(g.name.clone());
        }
        if !m.names.iter().any(|n| n == "DRIVER") {
            m.names.push("DRIVER".into());
        }
        for row in rows.processes.iter().filter(|r| r.host == "local") {
            let Some(gi) = m.names.iter().position(|n| *n == row.group) else {
                continue;
            };
            match row.pid {
                // A row's id is a process's or (`thread:` rows) a thread's: ids are unique
                // among live tasks, so a sample's thread is looked up first, then its process.
                Some(pid) => {
                    m.by_tid.entry(pid).or_insert(gi);
                    m.by_pid.entry(pid).or_insert(gi);
                }
                None if row.name.starts_with("cgroup:")
                    && !m.cgroup_groups.contains(&row.group) =>
                {
                    m.cgroup_groups.push(row.group.clone());
                }
                None => {}
            }
        }
        for t in ignored {
            m.by_tid.entry(*t).or_insert(usize::MAX);
        }
        m
    }

    fn group_of(&self, s: &Sample) -> Option<usize> {
        if let Some(g) = self.by_tid.get(&s.tid) {
            return (*g != usize::MAX).then_some(*g);
        }
        self.by_pid.get(&s.pid).copied()
    }
}

/// One group's samples as they arrive.
#[derive(Default)]
struct Tally {
    samples: u64,
    weight: u64,
    unresolved: u64,
    unresolved_modules: HashMap<String, u64>,
    comms: HashMap<String, u64>,
    self_w: HashMap<(String, String), (u64, u64)>,
    total_w: HashMap<(String, String), (u64, u64)>,
    folded: HashMap<String, u64>,
    /// Each thread's samples, for lock-in.
    threads: HashMap<i32, Thread>,
}

type Key = (String, String);

/// One thread's samples as lock-in sees them: a thread of a broker may spend most of its
/// time in one function and another thread in another, so a function's samples are
/// expected to follow each other as often as the function's share *of that thread*.
#[derive(Default)]
struct Thread {
    samples: u64,
    counts: HashMap<Key, u64>,
    /// The last samples' functions, the latest last.
    history: std::collections::VecDeque<HashSet<Key>>,
    /// Per function: pairs of samples one ([0]) and [`FAR_LAG`] ([1]) apart starting in
    /// it, and of those the pairs whose second sample is in it too.
    pairs: [HashMap<Key, (u64, u64)>; 2],
}

impl Thread {
    fn add(&mut self, on_stack: HashSet<Key>) {
        self.samples += 1;
        for k in &on_stack {
            *self.counts.entry(k.clone()).or_default() += 1;
        }
        for (i, lag) in [1, FAR_LAG].into_iter().enumerate() {
            let n = self.history.len();
            let Some(prev) = n.checked_sub(lag).and_then(|j| self.history.get(j)) else {
                continue;
            };
            for k in prev {
                let p = self.pairs[i].entry(k.clone()).or_default();
                p.0 += 1;
                if on_stack.contains(k) {
                    p.1 += 1;
                }
            }
        }
        self.history.push_back(on_stack);
        if self.history.len() > FAR_LAG {
            self.history.pop_front();
        }
    }
}

/// Every sample inside the windows, tallied by group.
pub struct Attribution {
    membership: Membership,
    windows: Vec<(u64, u64)>,
    tallies: Vec<Tally>,
    pub samples: u64,
    pub attributed: u64,
}

impl Attribution {
    pub fn new(membership: Membership, windows: Vec<(u64, u64)>) -> Attribution {
        let tallies = membership.names.iter().map(|_| Tally::default()).collect();
        Attribution {
            membership,
            windows,
            tallies,
            samples: 0,
            attributed: 0,
        }
    }

    /// Take one sample: dropped outside the windows, on an idle CPU or outside the groups.
    pub fn add(&mut self, s: Sample) {
        if s.pid == 0
            || !self
                .windows
                .iter()
                .any(|(a, b)| (*a..=*b).contains(&s.time_ns))
        {
            return;
        }
        self.samples += 1;
        let Some(gi) = self.membership.group_of(&s) else {
            return;
        };
        self.attributed += 1;
        self.tallies[gi].add(s);
    }

    /// Each group's functions, scaled to its measured µs per message.
    pub fn groups(self, table: &Rows, transactions: u64) -> Vec<GroupProfile> {
        let measured = |name: &str| {
            if name == "DRIVER" {
                table
                    .processes
                    .iter()
                    .filter(|r| r.group == "DRIVER")
                    .map(|r| r.total_us_per_tran)
                    .sum::<f64>()
            } else {
                table
                    .groups
                    .iter()
                    .find(|g| g.name == name && g.host == "local")
                    .map_or(0.0, |g| g.total_us_per_tran)
            }
        };
        self.membership
            .names
            .into_iter()
            .zip(self.tallies)
            .map(|(name, t)| {
                let us = measured(&name);
                t.profile(name, us, transactions)
            })
            .collect()
    }
}

fn key(f: &Frame) -> (String, String) {
    (f.symbol.clone(), f.module.clone())
}

impl Tally {
    fn add(&mut self, s: Sample) {
        self.samples += 1;
        self.weight += s.period;
        *self.comms.entry(s.comm.clone()).or_default() += 1;
        let Some(leaf) = s.frames.first() else {
            self.unresolved += 1;
            return;
        };
        if leaf.unresolved() {
            self.unresolved += 1;
            *self
                .unresolved_modules
                .entry(leaf.module.clone())
                .or_default() += 1;
        }
        let e = self.self_w.entry(key(leaf)).or_default();
        e.0 += s.period;
        e.1 += 1;
        let on_stack: HashSet<(String, String)> = s.frames.iter().map(key).collect();
        for k in &on_stack {
            let e = self.total_w.entry(k.clone()).or_default();
            e.0 += s.period;
            e.1 += 1;
        }
        let mut stack = s.comm.replace(';', ":");
        for f in s.frames.iter().rev() {
            stack.push(';');
            stack.push_str(&f.symbol.replace(';', ":"));
        }
        *self.folded.entry(stack).or_default() += 1;
        self.threads.entry(s.tid).or_default().add(on_stack);
    }

    fn row(&self, k: &(String, String), us: f64) -> FunctionRow {
        let share = |w: u64| w as f64 / self.weight.max(1) as f64;
        let pm = |p: f64| 1.96 * (p * (1.0 - p) / self.samples.max(1) as f64).sqrt() * us;
        let (sw, sn) = self.self_w.get(k).copied().unwrap_or_default();
        let (tw, tn) = self.total_w.get(k).copied().unwrap_or_default();
        FunctionRow {
            name: k.0.clone(),
            module: k.1.clone(),
            self_us_per_tran: share(sw) * us,
            self_pm_us: pm(share(sw)),
            total_us_per_tran: share(tw) * us,
            total_pm_us: pm(share(tw)),
            samples: sn,
            total_samples: tn,
            lock_in: self.lock_in(k),
        }
    }

    fn lock_in(&self, k: &(String, String)) -> Option<LockIn> {
        // Pairs, pairs in it again, and what independence expects of both, over threads.
        let in_step = |lag: usize| {
            let (mut n, mut same, mut expected, mut var) = (0u64, 0u64, 0.0, 0.0);
            for t in self.threads.values() {
                let Some((tn, ts)) = t.pairs[lag].get(k).copied() else {
                    continue;
                };
                let q = t.counts.get(k).copied().unwrap_or(0) as f64 / t.samples.max(1) as f64;
                n += tn;
                same += ts;
                expected += tn as f64 * q;
                var += tn as f64 * q * (1.0 - q);
            }
            if n < LOCK_IN_PAIRS {
                return None;
            }
            let (p, e) = (same as f64 / n as f64, expected / n as f64);
            let noise = 3.0 * var.sqrt() / n as f64;
            (e < 0.9 && p - e > LOCK_IN_EXCESS.max(noise)).then_some((p, n, e))
        };
        let (next_same, pairs, share) = in_step(0)?;
        in_step(1)?;
        Some(LockIn {
            next_same,
            share,
            pairs,
        })
    }

    fn profile(self, name: String, us: f64, transactions: u64) -> GroupProfile {
        let measured_ns = us * 1000.0 * transactions as f64;
        let coverage = (measured_ns > 0.0).then(|| self.weight as f64 / measured_ns);
        let mut all: Vec<FunctionRow> = self.total_w.keys().map(|k| self.row(k, us)).collect();
        all.sort_by(|a, b| {
            b.self_us_per_tran
                .total_cmp(&a.self_us_per_tran)
                .then(b.total_us_per_tran.total_cmp(&a.total_us_per_tran))
                .then(a.name.cmp(&b.name))
        });
        let mut top: Vec<FunctionRow> = all.iter().take(TOP_FUNCTIONS).cloned().collect();
        let mut by_total: Vec<&FunctionRow> = all.iter().collect();
        by_total.sort_by(|a, b| b.total_us_per_tran.total_cmp(&a.total_us_per_tran));
        for f in by_total.into_iter().take(TOP_FUNCTIONS / 2) {
            if !top.iter().any(|t| t.name == f.name && t.module == f.module) {
                top.push(f.clone());
            }
        }
        let unresolved_pct = 100.0 * self.unresolved as f64 / self.samples.max(1) as f64;
        let unresolved_hint = (unresolved_pct >= 5.0).then(|| self.hint());
        let mut folded: Vec<(String, u64)> = self.folded.into_iter().collect();
        folded.sort();
        GroupProfile {
            name,
            us_per_tran: us,
            samples: self.samples,
            coverage,
            unresolved_pct,
            unresolved_hint,
            functions: top,
            all,
            folded,
        }
    }

    /// What would name the unnamed samples of the group's busiest process.
    fn hint(&self) -> String {
        let comm = self
            .comms
            .iter()
            .max_by_key(|(c, n)| (**n, (*c).clone()))
            .map(|(c, _)| c.as_str())
            .unwrap_or("");
        let module = self
            .unresolved_modules
            .iter()
            .max_by_key(|(m, n)| (**n, (*m).clone()))
            .map(|(m, _)| m.as_str())
            .unwrap_or("");
        symbols_hint(comm, module)
    }
}

/// What it takes for a component's functions to have names in perf's samples.
pub(crate) fn symbols_hint(comm: &str, module: &str) -> String {
    if comm.starts_with("beam") || comm.starts_with("erts") || comm.contains("_sched") {
        "RabbitMQ's Erlang code is JIT-compiled: start the node with ERL_FLAGS=\"+JPperf true\" (OTP 24+), which writes /tmp/perf-PID.map for perf".into()
    } else if comm.starts_with("postgres") {
        "install PostgreSQL's debug symbols (Debian: postgresql-15-dbgsym from the debian-debug archive)".into()
    } else if comm.starts_with("java") || module.contains("perf-") {
        "Java: run with -XX:+PreserveFramePointer and a perf map agent (perf-map-agent, or -XX:+DumpPerfMapAtExit)".into()
    } else if comm.starts_with("python") {
        "Python 3.12+: run with PYTHONPERFSUPPORT=1 (or -X perf) so that perf names Python functions".into()
    } else if module.is_empty() || module == "[unknown]" {
        "frames without a module are JIT code or a binary built without frame pointers: build with -fno-omit-frame-pointer (Rust: RUSTFLAGS=\"-C force-frame-pointers=yes\")".into()
    } else {
        format!(
            "install the debug symbols of {module} (Debian: its -dbgsym package from the debian-debug archive) or build it with symbols"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiling::stacks::Frame;

    fn rows(pid: i32) -> (Vec<ProcessRow>, Vec<GroupRow>) {
        let p = ProcessRow {
            group: "FLOW".into(),
            host: "local".into(),
            name: "flow".into(),
            pid: Some(pid),
            user_us_per_tran: 60.0,
            sys_us_per_tran: 40.0,
            total_us_per_tran: 100.0,
            pct: 100.0,
            split_sigma_us_per_tran: 0.0,
            exact: true,
            note: None,
            ticks_us_per_tran: None,
        };
        let g = GroupRow {
            name: "FLOW".into(),
            host: "local".into(),
            user_us_per_tran: 60.0,
            sys_us_per_tran: 40.0,
            total_us_per_tran: 100.0,
            pct: 100.0,
            processes: 1,
            ticks_us_per_tran: None,
            cost: Default::default(),
        };
        (vec![p], vec![g])
    }

    fn sample(pid: i32, tid: i32, t: u64, leaf: &str) -> Sample {
        let f = |s: &str| Frame {
            symbol: s.into(),
            module: "flow".into(),
        };
        Sample {
            comm: "flow".into(),
            pid,
            tid,
            time_ns: t,
            period: 1_000_000,
            frames: vec![f(leaf), f("main")],
        }
    }

    /// FLOW's profile from `leaves`, one (thread, leaf) per sample in order.
    fn profile(leaves: &[(i32, &str)]) -> GroupProfile {
        let pid = 999_999;
        let (p, g) = rows(pid);
        let rows = Rows {
            processes: &p,
            groups: &g,
        };
        let mut a = Attribution::new(Membership::of(&rows, &[]), vec![(0, u64::MAX)]);
        for (i, (tid, leaf)) in leaves.iter().enumerate() {
            a.add(sample(pid, *tid, i as u64 + 1, leaf));
        }
        a.add(sample(4, 4, 1, "stranger"));
        assert_eq!(
            (a.samples, a.attributed),
            (leaves.len() as u64 + 1, leaves.len() as u64)
        );
        let mut groups = a.groups(&rows, 1000);
        groups.remove(groups.iter().position(|g| g.name == "FLOW").expect("FLOW"))
    }

    fn row<'a>(g: &'a GroupProfile, name: &str) -> &'a FunctionRow {
        g.all.iter().find(|f| f.name == name).expect("the function")
    }

    #[test]
    fn a_groups_functions_add_up_to_its_measured_cpu_per_message() {
        let leaves: Vec<(i32, &str)> = (0..300)
            .map(|i| (999_999, if i % 3 == 2 { "render" } else { "parse" }))
            .collect();
        let g = profile(&leaves);
        assert!((row(&g, "parse").self_us_per_tran - 200.0 / 3.0).abs() < 1e-9);
        assert!((row(&g, "render").self_us_per_tran - 100.0 / 3.0).abs() < 1e-9);
        assert!((row(&g, "main").total_us_per_tran - 100.0).abs() < 1e-9);
        let sum: f64 = g.all.iter().map(|f| f.self_us_per_tran).sum();
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
        // ± of a share of 2/3 over 300 samples: 1.96 × sqrt(2/9 / 300) × 100 µs.
        let pm = 1.96 * (2.0f64 / 9.0 / 300.0).sqrt() * 100.0;
        assert!((row(&g, "parse").self_pm_us - pm).abs() < 1e-9);
        // 300 samples of 1 ms for 1000 messages of 100 µs: they stand for 3 × its CPU.
        assert!((g.coverage.unwrap_or(0.0) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn samples_in_step_with_the_flow_are_flagged_and_independent_ones_are_not() {
        // In step: parse for 4 samples, render for 4, over and over (lag 8 lands in place).
        let stepped: Vec<(i32, &str)> = (0..800)
            .map(|i| (999_999, if i % 8 < 4 { "parse" } else { "render" }))
            .collect();
        let g = profile(&stepped);
        let l = row(&g, "parse").lock_in.clone().expect("flagged");
        assert!((l.share - 0.5).abs() < 0.01 && l.next_same > 0.7, "{l:?}");
        // The same shares drawn independently: not flagged.
        let mut rng = fastrand::Rng::with_seed(7);
        let random: Vec<(i32, &str)> = (0..800)
            .map(|_| (999_999, if rng.bool() { "parse" } else { "render" }))
            .collect();
        assert!(row(&profile(&random), "parse").lock_in.is_none());
        // Two threads, each always in its own function: no lock-in, only different work.
        let split: Vec<(i32, &str)> = (0..800)
            .map(|i| {
                if i % 2 == 0 {
                    (999_999, "parse")
                } else {
                    (1_000_000, "render")
                }
            })
            .collect();
        // The second thread is a thread of FLOW's process only by its pid.
        let g = profile(&split);
        assert!(row(&g, "parse").lock_in.is_none() && row(&g, "render").lock_in.is_none());
    }
}
