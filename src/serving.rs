//! Who served the request queue: the broker's count of the queue's consumers (where it
//! tells: RabbitMQ) and the local processes connected to the broker (by their sockets,
//! [`crate::accounting::sockets`]), set against the FLOW group after a run. On a shared
//! host a group by name takes other people's processes and misses a consumer of another
//! name; either corrupts the one figure people act on, so the report says so: a FLOW
//! process of another user, a FLOW process with no connection to the broker or that did
//! nothing in the window, more consumers than FLOW's connections with other local
//! processes connected.
//!
//! Matching by sockets rather than narrowing a preset to them: the figures stay what the
//! groups say (a user's own selectors are never second-guessed), and the warnings name the
//! processes to add or take out.

use crate::accounting::sockets::{self, Connections};
use crate::accounting::{GroupRow, ProcessRow};
use crate::config::RunConfig;
use crate::report::serving::{Peer, Serving};
use std::net::ToSocketAddrs;

/// The group the serving processes are expected in.
const FLOW: &str = "FLOW";

/// A FLOW process whose CPU in the window is below this share of the busiest FLOW
/// process's served none of this run's requests. Measured on a debug build: another
/// checkout's idle `sample-flow --echo` (heartbeats, timers) spent 0.7 % (one thread) and
/// 1.5 % (two) of what the flow serving a 300-request run spent in the same window; a
/// consumer of this queue beside others gets its round-robin share, 1/N of the requests.
/// Below 0.1 % of the group (the earlier rule) such a process still counted as serving,
/// and its connections hid a stray consumer outside FLOW.
const SERVED_SHARE: f64 = 0.05;

fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {uid}"), |u| u.name)
}

/// A process's name and, when it is not ours, its owner.
pub(crate) fn describe(pid: i32) -> (String, Option<String>) {
    let p = procfs::process::Process::new(pid);
    let name = p
        .as_ref()
        .ok()
        .and_then(|p| p.stat().ok())
        .map_or_else(|| "?".into(), |s| s.comm);
    let me = nix::unistd::getuid().as_raw();
    let other = p
        .ok()
        .and_then(|p| p.uid().ok())
        .filter(|u| *u != me)
        .map(user_name);
    (name, other)
}

/// What the host and the broker show of who serves `cfg`'s request queue, with the CPU
/// table's FLOW processes; `None` where the transport has no broker to connect to (the
/// embedded queue manager, IBM MQ's bindings) or the run has no FLOW group.
pub fn check(
    cfg: &RunConfig,
    processes: &[ProcessRow],
    groups: &[GroupRow],
) -> Option<(Serving, Vec<String>)> {
    let (host, port) = cfg.endpoint.kind().broker_address()?;
    let flow_rows: Vec<_> = processes
        .iter()
        .filter(|p| p.group == FLOW && p.host == "local")
        .filter_map(|p| p.pid.map(|pid| (pid, p.total_us_per_tran)))
        .collect();
    if !groups.iter().any(|g| g.name == FLOW) {
        return None;
    }
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    let conns = sockets::to_broker(&addrs);
    let consumers = cfg.endpoint.kind().counted_consumers(&cfg.request_queue);
    let serving = serving_of(
        format!("{host}:{port}"),
        consumers,
        &flow_rows,
        &conns,
        std::process::id() as i32,
        describe,
    );
    let warnings = warnings(&serving, &flow_rows, &cfg.request_queue);
    Some((serving, warnings))
}

/// The facts, from what was read (`describe` names a process: testable without /proc).
fn serving_of(
    broker: String,
    consumers: Option<u32>,
    flow_rows: &[(i32, f64)],
    conns: &Connections,
    me: i32,
    describe: impl Fn(i32) -> (String, Option<String>),
) -> Serving {
    let peer = |pid: i32| {
        let (name, other_user) = describe(pid);
        Peer {
            pid,
            name,
            other_user,
            connections: conns.by_pid.get(&pid).copied().unwrap_or(0),
        }
    };
    let mut flow_pids: Vec<i32> = flow_rows.iter().map(|(p, _)| *p).collect();
    flow_pids.dedup();
    Serving {
        broker,
        consumers,
        flow: flow_pids.iter().map(|&p| peer(p)).collect(),
        others: conns
            .by_pid
            .keys()
            .filter(|p| **p != me && !flow_pids.contains(p))
            .map(|&p| peer(p))
            .collect(),
        unreadable_by_uid: conns.unreadable.clone(),
    }
}

fn list(peers: &[&Peer]) -> String {
    peers
        .iter()
        .map(|p| match &p.other_user {
            Some(u) => format!("{} {} (user {u})", p.pid, p.name),
            None => format!("{} {}", p.pid, p.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the facts say is wrong with the FLOW group, each as a warning naming the processes.
fn warnings(s: &Serving, flow_rows: &[(i32, f64)], queue: &str) -> Vec<String> {
    let mut out = Vec::new();
    let others_users: Vec<&Peer> = s.flow.iter().filter(|p| p.other_user.is_some()).collect();
    if !others_users.is_empty() {
        out.push(format!(
            "FLOW holds processes of another user: {}; on a shared host they may serve someone else's queue, and their CPU is in FLOW's cost per transaction. Narrow the group (--group FLOW=pid:N,… or user:NAME)",
            list(&others_users)
        ));
    }
    let unconnected: Vec<&Peer> = s.flow.iter().filter(|p| p.connections == 0).collect();
    if !unconnected.is_empty() && unconnected.len() < s.flow.len() {
        out.push(format!(
            "FLOW holds processes with no connection to the broker at {}: {}; they cannot have taken this run's requests from {queue}. Take them out of the group, or check that the flow connects to this broker",
            s.broker,
            list(&unconnected)
        ));
    } else if !unconnected.is_empty() {
        out.push(format!(
            "none of FLOW's processes holds a connection to the broker at {} ({}): either the flow reaches it through another address (a proxy, another name for the host), or FLOW holds the wrong processes and the flow that answered is outside it",
            s.broker,
            list(&unconnected)
        ));
    }
    let cpu_of = |pid: i32| -> f64 {
        flow_rows
            .iter()
            .filter(|(q, _)| *q == pid)
            .map(|(_, c)| c)
            .sum()
    };
    let busiest = s.flow.iter().map(|p| cpu_of(p.pid)).fold(0.0, f64::max);
    // With no CPU in the group at all (no transaction) nothing tells who served.
    let served = |p: &Peer| busiest <= 0.0 || cpu_of(p.pid) >= SERVED_SHARE * busiest;
    let idle: Vec<&Peer> = s
        .flow
        .iter()
        .filter(|p| p.connections > 0 && !served(p))
        .collect();
    if !idle.is_empty() {
        out.push(format!(
            "FLOW holds processes connected to the broker that did next to nothing in the window (under {:.0} % of the busiest FLOW process's CPU): {}; they served no request of this run (another queue's flow, another checkout's?)",
            SERVED_SHARE * 100.0,
            list(&idle)
        ));
    }
    // Only the connections of FLOW processes that served can be this queue's consumers: a
    // name-selected FLOW also holds other people's flows, connected to the same broker for
    // queues of their own, and counting their connections hid a consumer outside FLOW.
    let flow_connections: usize = s
        .flow
        .iter()
        .filter(|p| served(p))
        .map(|p| p.connections)
        .sum();
    let outsiders = !s.others.is_empty() || !s.unreadable_by_uid.is_empty();
    if let Some(c) = s.consumers
        && c as usize > flow_connections
        && outsiders
    {
        let others: Vec<&Peer> = s.others.iter().collect();
        let mut who = list(&others);
        for (uid, n) in &s.unreadable_by_uid {
            if !who.is_empty() {
                who.push_str(", ");
            }
            who.push_str(&format!(
                "{n} connection(s) of {} not readable",
                user_name(*uid)
            ));
        }
        out.push(format!(
            "the request queue {queue} has {c} consumer(s) but FLOW's processes that served this run hold {flow_connections} connection(s) to the broker, and processes outside FLOW are connected to it: {who}; if one of them consumes {queue}, it answers requests whose CPU FLOW is not charged for. Add it to FLOW, or stop it"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conns(pairs: &[(i32, usize)]) -> Connections {
        Connections {
            by_pid: pairs.iter().copied().collect(),
            unreadable: Default::default(),
        }
    }

    fn named(pid: i32) -> (String, Option<String>) {
        match pid {
            20 => ("sample-flow".into(), Some("nobody".into())),
            30 => ("python3".into(), None),
            _ => ("sample-flow".into(), None),
        }
    }

    #[test]
    fn a_group_that_serves_alone_gives_no_warning() {
        let rows = [(10, 50.0), (11, 48.0)];
        let s = serving_of(
            "h:1".into(),
            Some(2),
            &rows,
            &conns(&[(10, 1), (11, 1), (99, 4)]),
            99,
            named,
        );
        assert!(s.others.is_empty(), "oemputx itself is no outsider: {s:?}");
        assert!(warnings(&s, &rows, "Q").is_empty());
    }

    #[test]
    fn strays_of_another_user_unconnected_idle_or_outside_the_group_are_each_named() {
        // FLOW: 10 (ours, serving), 20 (another user's, connected), 21 (not connected),
        // 22 (connected, idle); outside: 30 python3 connected; 4 consumers.
        let rows = [(10, 50.0), (20, 40.0), (21, 5.0), (22, 0.0)];
        let c = conns(&[(10, 1), (20, 1), (22, 1), (30, 1)]);
        let s = serving_of("h:1".into(), Some(4), &rows, &c, 99, named);
        let w = warnings(&s, &rows, "MQSI.IN").join("\n");
        assert!(
            w.contains("another user: 20 sample-flow (user nobody)"),
            "{w}"
        );
        assert!(
            w.contains("no connection to the broker at h:1: 21 sample-flow"),
            "{w}"
        );
        assert!(
            w.contains("did next to nothing in the window (under 5 % of the busiest FLOW process's CPU): 22 sample-flow"),
            "{w}"
        );
        assert!(
            w.contains("has 4 consumer(s) but FLOW's processes that served this run hold 2"),
            "{w}"
        );
        assert!(w.contains("30 python3"), "{w}");
    }

    #[test]
    fn another_checkout_s_idle_flows_in_a_named_flow_group_do_not_hide_a_stray_consumer() {
        // FLOW by name: 10 serves this run; 40 and 41 are another checkout's flows on
        // their own queue, connected (1 and 2 connections) and idle but for their timers
        // (0.7 % and 1.5 % of 10's CPU, as measured). Outside FLOW, 30 consumes the queue
        // too: 2 consumers, 1 of them FLOW's.
        let rows = [(10, 161.1), (40, 1.16), (41, 2.47)];
        let c = conns(&[(10, 1), (40, 1), (41, 2), (30, 1)]);
        let s = serving_of("h:1".into(), Some(2), &rows, &c, 99, named);
        let w = warnings(&s, &rows, "Q").join("\n");
        assert!(
            w.contains("has 2 consumer(s) but FLOW's processes that served this run hold 1"),
            "{w}"
        );
        assert!(w.contains("30 python3"), "{w}");
        assert!(w.contains("40 sample-flow, 41 sample-flow"), "{w}");
    }
}
