//! Each group's cost beyond CPU between two snapshots, per transaction: the members present
//! at both edges, each socket once, the rest noted (see [`super::resources`] for the sources).

use super::resources::{BeyondInfo, GroupCost, ProcUse, SYNC_CALLS, proc_files};
use super::selector::GroupSpec;
use super::snapshot::{Key, Members, Snapshot};
use std::collections::{BTreeSet, HashSet};

/// Each group's cost over `start`..`end`, per transaction, and how it was read.
pub fn group_costs(
    groups: &[GroupSpec],
    (start, end): (&Snapshot, &Snapshot),
    transactions: u64,
) -> (Vec<GroupCost>, BeyondInfo) {
    let mut info = BeyondInfo {
        syncs: match (&start.usage.syncs, &end.usage.syncs) {
            (Ok(_), Ok(_)) => format!(
                "perf counters on the tracepoints syscalls:sys_enter_{{{}}}, per thread",
                SYNC_CALLS.join(",")
            ),
            (Err(e), _) | (_, Err(e)) => e.clone(),
        },
        network: match (&start.usage.tcp, &end.usage.tcp) {
            (Ok(_), Ok(_)) => {
                "TCP_INFO (bytes_sent, bytes_received) of each socket a member holds, from sock_diag"
                    .into()
            }
            (Err(e), _) | (_, Err(e)) => e.clone(),
        },
        notes: Vec::new(),
    };
    let costs = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let w = Window {
                start,
                end,
                n: transactions,
            };
            match (&start.groups[i], &end.groups[i]) {
                (Members::Procs(a), Members::Procs(b)) => w.members(&g.name, a, b, &mut info),
                (Members::Threads(a), Members::Threads(b)) => {
                    let a: Vec<Key> = a.keys().copied().collect();
                    let b: Vec<Key> = b.keys().copied().collect();
                    let mut c = w.members(&g.name, &a, &b, &mut info);
                    // Threads share their process's memory and sockets: no figure of their own.
                    (c.rss_bytes, c.peak_rss_bytes, c.rss_growth_bytes_per_tran) =
                        (None, None, None);
                    (c.net_sent_bytes_per_tran, c.net_received_bytes_per_tran) = (None, None);
                    c.syncs_per_tran = None;
                    c
                }
                (Members::Cgroup(_), Members::Cgroup(_)) => w.cgroup(i),
                _ => GroupCost::default(),
            }
        })
        .collect();
    (costs, info)
}

/// The window the figures are over.
struct Window<'a> {
    start: &'a Snapshot,
    end: &'a Snapshot,
    n: u64,
}

impl Window<'_> {
    fn per(&self, v: u64) -> Option<f64> {
        (self.n > 0).then(|| v as f64 / self.n as f64)
    }

    /// A figure summed over the members at both snapshots (end − start), or `None` when any
    /// such member's source could not be read at either.
    fn delta(&self, keys: &[Key], f: impl Fn(&ProcUse) -> Option<u64>) -> Option<u64> {
        let (a, b) = (&self.start.usage.members, &self.end.usage.members);
        keys.iter().try_fold(0u64, |acc, k| {
            Some(acc + f(b.get(k)?)?.saturating_sub(f(a.get(k)?)?))
        })
    }

    /// A group of processes (or threads): members present at both edges, the rest noted.
    fn members(
        &self,
        group: &str,
        at_start: &[Key],
        at_end: &[Key],
        info: &mut BeyondInfo,
    ) -> GroupCost {
        // A member that ended between the listing and the read of its counters went in the
        // window (at the end) or before it (at the start).
        let live = |s: &Snapshot, keys: &[Key]| -> Vec<Key> {
            let ended = |k: &Key| s.usage.members.get(k).is_some_and(|u| u.ended);
            keys.iter().filter(|k| !ended(k)).copied().collect()
        };
        let (at_start, at_end) = (live(self.start, at_start), live(self.end, at_end));
        let (at_start, at_end) = (at_start.as_slice(), at_end.as_slice());
        let (sa, sb): (HashSet<&Key>, HashSet<&Key>) =
            (at_start.iter().collect(), at_end.iter().collect());
        let both: Vec<Key> = at_start
            .iter()
            .filter(|k| sb.contains(k))
            .copied()
            .collect();
        let came = at_end.iter().filter(|k| !sa.contains(k)).count();
        let went = at_start.iter().filter(|k| !sb.contains(k)).count();
        if came + went > 0 {
            info.notes.push(format!(
                "{group}: {came} member(s) came and {went} went in the window; disk, calls, switches and syncs count the {} present at both edges",
                both.len()
            ));
        }
        let io = |f: fn(&proc_files::Io) -> u64| move |u: &ProcUse| u.io.as_ref().map(f);
        let sum_at = |s: &Snapshot, keys: &[Key], f: fn(&ProcUse) -> Option<u64>| {
            keys.iter()
                .try_fold(0u64, |acc, k| Some(acc + f(s.usage.members.get(k)?)?))
        };
        let rss_growth = match (
            sum_at(self.start, &both, |u| u.rss),
            sum_at(self.end, &both, |u| u.rss),
        ) {
            (Some(a), Some(b)) if self.n > 0 => Some((b as f64 - a as f64) / self.n as f64),
            _ => None,
        };
        let (sent, received, closed) = self.network(at_start, at_end);
        if closed > 0 {
            info.notes.push(format!(
                "{group}: {closed} TCP socket(s) closed in the window; their bytes after its start are not counted"
            ));
        }
        GroupCost {
            disk_write_bytes_per_tran: self
                .delta(&both, io(|i| i.write_bytes))
                .and_then(|v| self.per(v)),
            disk_read_bytes_per_tran: self
                .delta(&both, io(|i| i.read_bytes))
                .and_then(|v| self.per(v)),
            write_calls_per_tran: self.delta(&both, io(|i| i.syscw)).and_then(|v| self.per(v)),
            read_calls_per_tran: self.delta(&both, io(|i| i.syscr)).and_then(|v| self.per(v)),
            syncs_per_tran: self.syncs(&both).and_then(|v| self.per(v)),
            net_sent_bytes_per_tran: sent.and_then(|v| self.per(v)),
            net_received_bytes_per_tran: received.and_then(|v| self.per(v)),
            voluntary_switches_per_tran: self.switches(&both, |s| s.0).and_then(|v| self.per(v)),
            involuntary_switches_per_tran: self.switches(&both, |s| s.1).and_then(|v| self.per(v)),
            rss_bytes: sum_at(self.end, at_end, |u| u.rss).map(|v| v as f64),
            peak_rss_bytes: sum_at(self.end, at_end, |u| u.peak_rss).map(|v| v as f64),
            rss_growth_bytes_per_tran: rss_growth,
        }
    }

    /// Context switches over the window, thread by thread: end − start for a thread alive at
    /// both, its whole count for one that started inside; a thread that ended inside takes
    /// its window's switches with it. `None` when a member's threads could not be read.
    fn switches(&self, both: &[Key], which: fn(&(u64, u64)) -> u64) -> Option<u64> {
        let (a, b) = (&self.start.usage.members, &self.end.usage.members);
        both.iter().try_fold(0u64, |acc, k| {
            let (ta, tb) = (a.get(k)?.switches.as_ref()?, b.get(k)?.switches.as_ref()?);
            let window: u64 = tb
                .iter()
                .map(|(tid, end)| which(end).saturating_sub(ta.get(tid).map_or(0, which)))
                .sum();
            Some(acc + window)
        })
    }

    /// Syncs of the members present at both edges.
    fn syncs(&self, both: &[Key]) -> Option<u64> {
        let (Ok(a), Ok(b)) = (&self.start.usage.syncs, &self.end.usage.syncs) else {
            return None;
        };
        both.iter().try_fold(0u64, |acc, k| {
            Some(acc + b.get(k)?.saturating_sub(*a.get(k)?))
        })
    }

    /// Bytes sent and received over the window by the sockets the members hold (each
    /// socket once): end − start for a socket alive at both, its whole count for one that
    /// opened inside; the number of sockets that closed inside, whose bytes are lost.
    fn network(&self, at_start: &[Key], at_end: &[Key]) -> (Option<u64>, Option<u64>, usize) {
        let (Ok(ta), Ok(tb)) = (&self.start.usage.tcp, &self.end.usage.tcp) else {
            return (None, None, 0);
        };
        // A member whose descriptors could not be read leaves the group without a figure.
        let inodes = |s: &Snapshot, keys: &[Key]| -> Option<BTreeSet<u64>> {
            keys.iter().try_fold(BTreeSet::new(), |mut set, k| {
                set.extend(s.usage.members.get(k)?.sockets.as_ref()?);
                Some(set)
            })
        };
        let (Some(ia), Some(ib)) = (inodes(self.start, at_start), inodes(self.end, at_end)) else {
            return (None, None, 0);
        };
        let (mut sent, mut received) = (0u64, 0u64);
        for i in ib.iter().filter(|i| tb.contains_key(i)) {
            let (s1, r1) = tb[i];
            let (s0, r0) = ta.get(i).copied().unwrap_or((0, 0));
            sent += s1.saturating_sub(s0);
            received += r1.saturating_sub(r0);
        }
        let closed = ia
            .iter()
            .filter(|i| ta.contains_key(i) && !tb.contains_key(i))
            .count();
        (Some(sent), Some(received), closed)
    }

    /// A cgroup's own counters: its io.stat bytes and calls, its memory now and at peak.
    fn cgroup(&self, i: usize) -> GroupCost {
        let (Some(Some(a)), Some(Some(b))) = (
            self.start.usage.cgroups.get(i),
            self.end.usage.cgroups.get(i),
        ) else {
            return GroupCost::default();
        };
        let d = |f: fn(&proc_files::CgroupUse) -> Option<u64>| -> Option<f64> {
            self.per(f(b)?.saturating_sub(f(a)?))
        };
        GroupCost {
            disk_write_bytes_per_tran: d(|c| c.write_bytes),
            disk_read_bytes_per_tran: d(|c| c.read_bytes),
            write_calls_per_tran: None,
            read_calls_per_tran: None,
            rss_bytes: b.memory.map(|v| v as f64),
            peak_rss_bytes: b.memory_peak.map(|v| v as f64),
            rss_growth_bytes_per_tran: match (a.memory, b.memory) {
                (Some(x), Some(y)) if self.n > 0 => Some((y as f64 - x as f64) / self.n as f64),
                _ => None,
            },
            ..GroupCost::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::resources::UseSample;
    use std::collections::HashMap;
    use std::time::Instant;

    fn snap(members: &[(Key, ProcUse)]) -> Snapshot {
        let mut usage = UseSample::unread("a constructed snapshot");
        usage.members = members.iter().cloned().collect::<HashMap<_, _>>();
        Snapshot {
            groups: vec![Members::Procs(members.iter().map(|m| m.0).collect())],
            usage,
            ..Snapshot::empty(Instant::now())
        }
    }

    fn alive(rss: u64, write_calls: u64) -> ProcUse {
        ProcUse {
            io: Some(proc_files::Io {
                syscw: write_calls,
                ..proc_files::Io::default()
            }),
            rss: Some(rss),
            peak_rss: Some(rss),
            ..ProcUse::default()
        }
    }

    #[test]
    fn a_member_that_ended_before_its_counters_were_read_went_in_the_window_and_leaves_the_figures_known()
     {
        let (broker, helper) = ((10, 1), (11, 2));
        let gone = ProcUse {
            ended: true,
            sockets: Some(Vec::new()),
            ..ProcUse::default()
        };
        let start = snap(&[(broker, alive(1000, 5)), (helper, alive(10, 1))]);
        let end = snap(&[(broker, alive(3000, 25)), (helper, gone)]);
        let groups = [GroupSpec {
            name: "QMGR".into(),
            selectors: Vec::new(),
            host: None,
        }];
        let (costs, info) = group_costs(&groups, (&start, &end), 10);
        assert_eq!(costs[0].rss_bytes, Some(3000.0));
        assert_eq!(costs[0].write_calls_per_tran, Some(2.0));
        assert_eq!(costs[0].rss_growth_bytes_per_tran, Some(200.0));
        assert!(
            info.notes
                .iter()
                .any(|n| n.contains("0 member(s) came and 1 went")),
            "{:?}",
            info.notes
        );
        // A member whose counters could not be read (another user's) still makes them unknown.
        let unreadable = snap(&[(broker, alive(3000, 25)), (helper, ProcUse::default())]);
        let (costs, _) = group_costs(&groups, (&start, &unreadable), 10);
        assert_eq!(costs[0].rss_bytes, None);
    }
}
