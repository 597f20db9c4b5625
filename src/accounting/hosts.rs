//! Groups on other hosts: their snapshots, taken at the window's edges concurrently with the
//! local one, and their tables merged into the run's. Each host keeps its own capture ratio,
//! corrected total and other-CPU row, because each host's idle time says only how busy that
//! host was; the run's corrected total is the sum of the hosts' corrected totals.

use super::pcp::{HostFacts, PcpError, PcpHost, UNITS_PER_S};
use super::selector::GroupSpec;
use super::snapshot::{CpuSource, Snapshot};
use super::table::{self, Machine, Traffic};
use super::{CaptureRatio, CpuTable, OtherCpu, RatioMode};
use serde::Serialize;

/// A window's edge on one host: its snapshot and what came with it.
pub type Edge = Option<(Snapshot, HostFacts)>;
/// A host with its snapshots at the start and the end of a window.
pub type HostWindow<'a> = (
    &'a Remote,
    &'a (Snapshot, HostFacts),
    &'a (Snapshot, HostFacts),
);

/// A host and the groups placed on it, with its snapshots.
pub struct Remote {
    pub host: PcpHost,
    pub groups: Vec<GroupSpec>,
    pub windows: Vec<(Edge, Edge)>,
}

/// One host's figures beside the run's.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct HostFigures {
    /// `local`, or the `--host` name.
    pub name: String,
    /// The host's CPUs (PCP's hinv.ncpu); null for this machine (the report's host has it).
    pub cpus: Option<usize>,
    /// How it was read: `/proc`, or the pmproxy URL without credentials.
    pub source: String,
    pub captured_us_per_tran: f64,
    pub capture_ratio: Option<CaptureRatio>,
    pub corrected_us_per_tran: Option<f64>,
    pub other_cpu: OtherCpu,
    /// How busy the host was with other work over the window.
    #[serde(default)]
    pub host_load: Option<super::host_load::HostLoad>,
    /// Whether its per-process totals are exact (pmdaproc lists threads) or tick-based.
    pub exact: bool,
    /// Where each process's user/system split comes from: `process` (its own, as
    /// `/proc/PID/stat` gives it) or `threads` (the sum of its threads' own splits, which
    /// can lean a few points from the process's; PCP without a user).
    pub split: std::borrow::Cow<'static, str>,
    /// The largest gap between this host's snapshot and the local one at either edge of
    /// the window (ms), and that as a share of the window.
    pub skew_ms: f64,
    pub skew_pct: f64,
    /// CPU of the host's PCP agents over the window (what the snapshots cost there),
    /// seconds and µs per transaction; this machine's CPU for the requests, seconds.
    pub agents_cpu_s: f64,
    pub agents_us_per_tran: f64,
    pub local_cpu_s: f64,
    /// The slower of the two requests, ms.
    pub round_trip_ms: f64,
    /// The host's own clock at its two snapshots (seconds since the epoch, as PCP stamps a
    /// fetch), and the window by that clock: a host whose clock runs apart shows here.
    pub host_clock_start: Option<f64>,
    pub host_clock_end: Option<f64>,
    pub window_s_by_host_clock: Option<f64>,
}

/// A skew above this share of the window is worth a warning.
const SKEW_WARN_PCT: f64 = 1.0;

/// Place each group on its host: the local groups, and one `Remote` per host with groups.
pub fn place(
    groups: Vec<GroupSpec>,
    hosts: &[PcpHost],
) -> Result<(Vec<GroupSpec>, Vec<Remote>), PcpError> {
    let mut local = Vec::new();
    let mut remote: Vec<Remote> = Vec::new();
    for g in groups {
        let Some(h) = g.host.clone() else {
            local.push(g);
            continue;
        };
        let Some(host) = hosts.iter().find(|x| x.name == h) else {
            let known: Vec<&str> = hosts.iter().map(|x| x.name.as_str()).collect();
            return Err(PcpError::UnknownHost {
                group: g.name,
                host: h,
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            });
        };
        match remote.iter_mut().find(|r| r.host.name == h) {
            Some(r) => r.groups.push(g),
            None => remote.push(Remote {
                host: host.clone(),
                groups: vec![g],
                windows: Vec::new(),
            }),
        }
    }
    Ok((local, remote))
}

/// The host as the table's arithmetic needs it.
fn machine(name: &str, f: &HostFacts) -> Machine {
    Machine {
        tick_s: 1.0 / f.hz as f64,
        tick_source: format!("USER_HZ={} on {name}, an upper bound", f.hz),
        clk_tck: UNITS_PER_S,
        cpus: f.ncpu,
        counter_tick_s: 1.0 / f.hz as f64,
        host: Some(name.to_string()),
    }
}

/// Merge the remote hosts' tables for one window into the local table `t`.
pub fn merge(
    t: &mut CpuTable,
    local: (&Snapshot, &Snapshot),
    remote: &[HostWindow],
    traffic: Traffic,
    source: CpuSource,
    ratio: RatioMode,
) {
    if remote.is_empty() {
        return;
    }
    let mut hosts = vec![HostFigures {
        name: "local".into(),
        cpus: None,
        source: "/proc".into(),
        captured_us_per_tran: t.captured_us_per_tran,
        capture_ratio: t.capture_ratio.clone(),
        corrected_us_per_tran: t.corrected_us_per_tran,
        other_cpu: t.other_cpu.clone(),
        host_load: t.info.host_load.clone(),
        exact: source == CpuSource::Exact,
        split: "process".into(),
        skew_ms: 0.0,
        skew_pct: 0.0,
        agents_cpu_s: 0.0,
        agents_us_per_tran: 0.0,
        local_cpu_s: t.info.snapshot_cpu_s,
        round_trip_ms: 0.0,
        host_clock_start: None,
        host_clock_end: None,
        window_s_by_host_clock: None,
    }];
    for hw in remote {
        let (h, figures) = one_host(hw, local, traffic, (source, ratio), &mut t.info.warnings);
        hosts.push(figures);
        t.processes.extend(h.processes);
        t.groups.extend(h.groups);
        // The remote groups' figures beyond CPU came through PCP: say what they lack.
        if let (Some(info), Some(theirs)) = (t.info.beyond_cpu.as_mut(), h.info.beyond_cpu) {
            info.notes.push(format!(
                "host {}: disk bytes and calls through PCP's proc.io (null for a process pmdaproc will not show this client: it answers another user's io with zeros), switches and resident set through proc.psinfo; {}",
                hw.0.host.name, theirs.syncs
            ));
            info.notes.extend(theirs.notes);
        }
    }
    let captured: f64 = hosts.iter().map(|h| h.captured_us_per_tran).sum();
    t.captured_us_per_tran = captured;
    t.corrected_us_per_tran = Some(
        hosts
            .iter()
            .map(|h| h.corrected_us_per_tran.unwrap_or(h.captured_us_per_tran))
            .sum(),
    );
    // Shares are of the run's captured total, across hosts.
    let pct = |v: f64| table::share_of(v, captured);
    for row in &mut t.processes {
        row.pct = pct(row.total_us_per_tran);
    }
    for g in &mut t.groups {
        g.pct = pct(g.total_us_per_tran);
    }
    let elsewhere: f64 = hosts.iter().skip(1).map(|h| h.captured_us_per_tran).sum();
    t.info.verdict = format!(
        "{} (this machine's groups only; the groups on other hosts spend {elsewhere:.1} us more per transaction, each host's share in the Hosts lines)",
        t.info.verdict
    );
    t.info.hosts = hosts;
}

/// One host's table for the window, its rows labelled with the host, and its figures.
fn one_host(
    (r, (sa, fa), (sb, fb)): &HostWindow,
    local: (&Snapshot, &Snapshot),
    traffic: Traffic,
    (source, ratio): (CpuSource, RatioMode),
    warnings: &mut Vec<String>,
) -> (CpuTable, HostFigures) {
    let window_ms = local.1.at.duration_since(local.0.at).as_secs_f64() * 1000.0;
    let per = |s: f64| match traffic.transactions {
        0 => 0.0,
        n => s * 1e6 / n as f64,
    };
    let name = &r.host.name;
    let exact = fa.threads && fb.threads && source == CpuSource::Exact;
    let host_source = if exact {
        CpuSource::Exact
    } else {
        CpuSource::Ticks
    };
    let host_traffic = Traffic {
        driver: None,
        ..traffic
    };
    let mut h = table::build(
        &r.groups,
        (sa, sb),
        host_traffic,
        &machine(name, fb),
        host_source,
        ratio,
    );
    if !(fa.threads && fb.threads) {
        warnings.push(format!("host {name}: pmdaproc there lists no threads, so each process's CPU is its ticks (10 ms steps); add -L to the proc line of /etc/pcp/pmcd/pmcd.conf on {name} and restart pmcd for exact figures"));
    }
    // Without threads the split is the process's own already (one instance a process).
    let process_split = !(fa.threads && fb.threads) || (fa.process_split && fb.process_split);
    if fa.threads && fb.threads && fa.process_split != fb.process_split {
        warnings.push(format!("host {name}: the processes-only context answered at one edge of the window and not at the other, so this window's user/system split there mixes a process's own split with its threads' sum; the totals are unaffected"));
    } else if !process_split {
        warnings.push(format!("host {name}: the user/system split is the sum of each thread's (pmdaproc lists processes alone only for a client pmcd has authenticated), which leant 4 points towards system for RabbitMQ here; give oemputx a PCP user, pcp://USER@HOST with the password in {}, for each process's own split", super::pcp::PASSWORD_ENV));
    }
    for row in &mut h.processes {
        row.name = format!("{}@{name}", row.name);
        row.host = name.clone();
    }
    for g in &mut h.groups {
        g.host = name.clone();
    }
    let skew = |l: &Snapshot, s: &Snapshot| {
        let (a, b) = (l.at, s.at);
        (if a > b { a - b } else { b - a }).as_secs_f64() * 1000.0
    };
    let skew_ms = skew(local.0, sa).max(skew(local.1, sb));
    let skew_pct = if window_ms > 0.0 {
        100.0 * skew_ms / window_ms
    } else {
        0.0
    };
    if skew_pct > SKEW_WARN_PCT {
        warnings.push(format!("host {name}: its snapshots were up to {skew_ms:.1} ms from the local ones, {skew_pct:.1}% of the window; run longer (more --count) so that the edges matter less"));
    }
    let agents_cpu_s = fb.agents_ns.saturating_sub(fa.agents_ns) as f64 / 1e9;
    warnings.extend(h.info.warnings.iter().map(|w| format!("host {name}: {w}")));
    let figures = HostFigures {
        name: name.clone(),
        cpus: Some(fb.ncpu),
        source: r.host.shown.clone(),
        captured_us_per_tran: h.captured_us_per_tran,
        capture_ratio: h.capture_ratio.clone(),
        corrected_us_per_tran: h.corrected_us_per_tran,
        other_cpu: h.other_cpu.clone(),
        host_load: h.info.host_load.clone(),
        exact,
        split: if process_split { "process" } else { "threads" }.into(),
        skew_ms,
        skew_pct,
        agents_cpu_s,
        agents_us_per_tran: per(agents_cpu_s),
        local_cpu_s: (sa.cost + sb.cost).as_secs_f64(),
        round_trip_ms: fa.round_trip.max(fb.round_trip).as_secs_f64() * 1000.0,
        host_clock_start: (fa.timestamp > 0.0).then_some(fa.timestamp),
        host_clock_end: (fb.timestamp > 0.0).then_some(fb.timestamp),
        window_s_by_host_clock: (fa.timestamp > 0.0 && fb.timestamp > 0.0)
            .then_some(fb.timestamp - fa.timestamp),
    };
    (h, figures)
}
