//! Merging the reports of a run driven from several hosts into one report: the set must be
//! whole (every shard of one run, with one settings hash, each completed), histograms and
//! counters are added (percentiles, rates and the integrity identity computed again from
//! them), and the CPU of the shared processes — the broker, the queue manager, the
//! database — comes from ONE measurement over the shards' common window (a shard run with
//! `--measure`, or `oemputx cpu --from … --until …`), divided by every shard's messages;
//! each shard's own DRIVER CPU is summed. Pure: the files are read by the command.

use super::{
    GroupRow, Latency, ProcessRow, Report, decode_histogram, encode_histogram, percentiles,
};
use crate::accounting::CaptureRatio;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JSON schema tag of a CPU window (`oemputx cpu --from … --until …`).
pub const CPU_WINDOW_SCHEMA: &str = "oemputx.cpu-window/1";

/// A set of reports that cannot be merged: the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(
        "{0} is not a shard's report (it has no \"shard\"): run each shard with --shard I/N --run-id ID"
    )]
    NotAShard(String),
    #[error("the reports are not of one run: {0}; give the reports of one run's shards only")]
    Mixed(String),
    #[error(
        "the set is incomplete: {0}; merge needs every shard of the run, each completed (rerun the missing shard with the same --run-id)"
    )]
    Incomplete(String),
    #[error(
        "{path}: its round-trip histogram cannot be read ({why}); the report is damaged, make it again"
    )]
    BadHistogram { path: String, why: String },
    #[error("{0}")]
    Measurement(String),
}

// The user's input (exit 2).
crate::usage_error!(MergeError);

/// One group's CPU over a window, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowGroup {
    pub name: String,
    pub host: String,
    pub user_s: f64,
    pub sys_s: f64,
    /// Processes (or threads, or a cgroup) the group held.
    pub processes: usize,
}

/// `oemputx cpu --from … --until …`: the groups' CPU over one window, for merge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CpuWindow {
    pub schema: String,
    pub from_utc: String,
    pub until_utc: String,
    pub groups: Vec<WindowGroup>,
    pub capture_ratio: Option<CaptureRatio>,
    pub host: super::Host,
}

/// One shard as the merged report lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardRow {
    pub index: usize,
    pub file: String,
    pub hostname: String,
    pub transactions: u64,
    pub start_utc: String,
    pub end_utc: String,
    pub rate_tps: f64,
    pub late_for_start_s: Option<f64>,
    /// The node the shard says it ran on (the launcher's name, else its hostname).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// How a merged report was made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergeInfo {
    pub run_id: String,
    pub shards: Vec<ShardRow>,
    /// Where the shared groups' CPU comes from.
    pub measurement: String,
    /// The union of the shards' windows, and how far apart their starts were (seconds).
    pub window_s: f64,
    pub start_spread_s: f64,
}

/// A shard's report and the file it came from.
pub struct Shard {
    pub file: String,
    pub report: Report,
}

fn utc(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// The set checked: one run, one settings hash, shards 0..N each once and completed.
/// More transactions than any real run makes (a billion a second for eleven days): a
/// larger count is a damaged file, and sums of such counts could overflow.
pub const MAX_TRANSACTIONS: u64 = 1_000_000_000_000_000;

/// Why a shard's place is not one oemputx writes, if it is not: a run id, settings hash or
/// node that a merge would print (in its report, in its refusal of a mixed set) with line
/// breaks or escape sequences another host put there. Named with its characters escaped.
fn not_its_own_place(i: &super::ShardInfo) -> Option<String> {
    use crate::accounting::selector::{plain_host_name, plain_name};
    if !plain_name(&i.run_id) {
        return Some(format!(
            "run id {:?} is not one oemputx writes (1 to 64 letters, digits, '_', '-' or '.')",
            i.run_id
        ));
    }
    if !(i.settings_hash.len() == 16 && i.settings_hash.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Some(format!(
            "settings hash {:?} is not one oemputx writes (16 hexadecimal digits)",
            i.settings_hash
        ));
    }
    i.node.as_deref().filter(|n| !plain_host_name(n)).map(|n| {
        format!("node {n:?} is not one oemputx writes (1 to 253 letters, digits, '_', '-' or '.')")
    })
}

/// Why a shard's figures cannot be a run's, if they cannot: a count beyond
/// [`MAX_TRANSACTIONS`], or a CPU figure negative, not finite or beyond
/// [`super::saved::MAX_FIGURE`].
fn implausible(r: &Report) -> Option<String> {
    if let Some(why) = r.shard.as_ref().and_then(not_its_own_place) {
        return Some(why);
    }
    if let Some(why) = r
        .groups
        .iter()
        .find_map(|g| super::saved::not_a_group_name(&g.name))
    {
        return Some(why);
    }
    let i = &r.integrity;
    let counts = [
        ("transactions", r.transactions),
        ("sent", i.sent),
        ("received", i.received),
        ("matched", i.matched),
        ("unmatched", i.unmatched),
        ("timed_out", i.timed_out),
        ("duplicates", i.duplicates),
        ("late", i.late),
        ("abandoned", i.abandoned),
    ];
    if let Some((name, n)) = counts.iter().find(|(_, n)| *n > MAX_TRANSACTIONS) {
        return Some(format!(
            "{name} is {n}, beyond {MAX_TRANSACTIONS} (no run is that long)"
        ));
    }
    let ok = |x: f64| x.is_finite() && (0.0..=super::saved::MAX_FIGURE).contains(&x);
    let figures = r
        .groups
        .iter()
        .flat_map(|g| {
            [
                (
                    format!("group {} user_us_per_tran", g.name),
                    g.user_us_per_tran,
                ),
                (
                    format!("group {} sys_us_per_tran", g.name),
                    g.sys_us_per_tran,
                ),
                (
                    format!("group {} total_us_per_tran", g.name),
                    g.total_us_per_tran,
                ),
            ]
        })
        .chain([
            ("elapsed_s".to_string(), r.elapsed_s),
            ("rate_tps".to_string(), r.rate_tps),
        ])
        .chain(
            r.app_cpu
                .total_s
                .map(|x| ("app_cpu.total_s".to_string(), x)),
        );
    for (name, x) in figures {
        if !ok(x) {
            return Some(format!(
                "{name} is {x:e}: a run's figures are never negative, infinite or above {:e}",
                super::saved::MAX_FIGURE
            ));
        }
    }
    None
}

fn check(shards: &[Shard]) -> Result<(String, usize), MergeError> {
    let Some(first) = shards.first() else {
        return Err(MergeError::Incomplete("no report was given".into()));
    };
    let info = |s: &Shard| {
        s.report
            .shard
            .clone()
            .ok_or_else(|| MergeError::NotAShard(s.file.clone()))
    };
    let head = info(first)?;
    let mut seen: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut problems = Vec::new();
    for s in shards {
        let i = info(s)?;
        for (what, a, b) in [
            ("run id", &i.run_id, &head.run_id),
            ("settings hash", &i.settings_hash, &head.settings_hash),
        ] {
            if a != b {
                problems.push(format!("{} has {what} {a}, {} has {b}", s.file, first.file));
            }
        }
        if i.of != head.of {
            problems.push(format!(
                "{} is one of {} shards, {} one of {}",
                s.file, i.of, first.file, head.of
            ));
        }
        if i.index >= i.of {
            problems.push(format!(
                "{} says it is shard {} of {}: a shard's index is below the count",
                s.file, i.index, i.of
            ));
        }
        if let Some(why) = implausible(&s.report) {
            return Err(MergeError::Measurement(format!(
                "{}: {why}; the report is damaged or hand-edited, make it again",
                s.file
            )));
        }
        seen.entry(i.index).or_default().push(&s.file);
        if s.report.status != crate::driver::Status::Completed {
            problems.push(format!(
                "shard {} ({}) did not complete ({})",
                i.index,
                s.file,
                s.report.status.describe()
            ));
        }
    }
    if let Some(p) = problems
        .iter()
        .find(|p| p.contains(" has ") || p.contains(" one of "))
    {
        return Err(MergeError::Mixed(p.clone()));
    }
    // The count comes from a file: never allocate by it. The first few missing indices
    // are named (they lie within the first `seen.len() + SHOWN` indices), the rest counted.
    const SHOWN: usize = 10;
    let present = seen.keys().filter(|k| **k < head.of).count();
    let missing_count = head.of - present;
    if missing_count > 0 {
        let named: Vec<String> = (0..head.of)
            .filter(|i| !seen.contains_key(i))
            .take(SHOWN)
            .map(|i| i.to_string())
            .collect();
        let more = if missing_count > named.len() {
            format!(" and {} more", missing_count - named.len())
        } else {
            String::new()
        };
        problems.insert(
            0,
            format!("shard(s) {}{more} of {} missing", named.join(", "), head.of),
        );
    }
    for (i, files) in &seen {
        if files.len() > 1 {
            problems.push(format!(
                "shard {i} given {} times ({})",
                files.len(),
                files.join(", ")
            ));
        }
    }
    if !problems.is_empty() {
        return Err(MergeError::Incomplete(problems.join("; ")));
    }
    Ok((head.run_id, head.of))
}

/// The shared groups' CPU (seconds, by group and host) and their processes' rows (seconds),
/// its source, capture ratio and host.
type Measured = (
    Vec<WindowGroup>,
    Vec<ProcessRow>,
    String,
    Option<CaptureRatio>,
    super::Host,
);

fn measurement(shards: &[Shard], cpu: Option<CpuWindow>) -> Result<Measured, MergeError> {
    let measuring: Vec<&Shard> = shards
        .iter()
        .filter(|s| s.report.shard.as_ref().is_some_and(|i| i.measure))
        .collect();
    match (cpu, measuring.as_slice()) {
        (Some(w), []) => covers(&w, shards).map(|()| (
            w.groups.into_iter().filter(|g| g.name != "DRIVER").collect(),
            Vec::new(),
            format!("oemputx cpu from {} until {}", w.from_utc, w.until_utc),
            w.capture_ratio,
            w.host,
        )),
        (None, [m]) => {
            let n = m.report.transactions as f64;
            let groups = m
                .report
                .groups
                .iter()
                .filter(|g| g.name != "DRIVER")
                .map(|g| WindowGroup {
                    name: g.name.clone(),
                    host: g.host.clone(),
                    user_s: g.user_us_per_tran * n / 1e6,
                    sys_s: g.sys_us_per_tran * n / 1e6,
                    processes: g.processes,
                })
                .collect();
            let i = m.report.shard.as_ref().map_or(0, |i| i.index);
            // Its processes' rows in seconds, to be divided by every shard's messages.
            let rows = m
                .report
                .processes
                .iter()
                .filter(|p| p.group != "DRIVER")
                .map(|p| ProcessRow {
                    user_us_per_tran: p.user_us_per_tran * n / 1e6,
                    sys_us_per_tran: p.sys_us_per_tran * n / 1e6,
                    total_us_per_tran: p.total_us_per_tran * n / 1e6,
                    split_sigma_us_per_tran: p.split_sigma_us_per_tran * n / 1e6,
                    ticks_us_per_tran: None,
                    ..p.clone()
                })
                .collect();
            Ok((
                groups,
                rows,
                format!("shard {i} (--measure), over its window"),
                m.report.capture_ratio.clone(),
                m.report.host.clone(),
            ))
        }
        (None, []) => Err(MergeError::Measurement(
            "nothing measured the shared processes once for the whole run: run one shard with --measure, or give --cpu FILE from `oemputx cpu --from START --until END --export-json FILE`".into(),
        )),
        (Some(_), _) => Err(MergeError::Measurement(
            "both --cpu and a shard run with --measure measured the shared processes: keep one".into(),
        )),
        (None, _) => Err(MergeError::Measurement(
            "more than one shard ran with --measure: the shared processes must be measured once".into(),
        )),
    }
}

/// How far a CPU window's edges may lie inside the shards' window, in seconds, and still be
/// taken to cover it: the instants are written to the microsecond, but a window is begun
/// and ended by a process that wakes at its instants (and shards may run on hosts whose
/// clocks differ by NTP's few milliseconds), so a window asked for the shards' exact span
/// can begin a scheduling delay late.
pub const WINDOW_TOLERANCE_S: f64 = 1.0;

/// A CPU window (`--cpu`) covers the shards' window: it begins at most
/// [`WINDOW_TOLERANCE_S`] after the first shard began and ends at most that before the last
/// one ended. One that does not missed part of the run's shared CPU, and every figure per
/// transaction would come out too low.
fn covers(w: &CpuWindow, shards: &[Shard]) -> Result<(), MergeError> {
    let damaged = |what: String| {
        MergeError::Measurement(format!(
            "{what} is not an RFC 3339 instant, so whether the CPU window (--cpu) covers the shards cannot be told; the file is damaged: make it again"
        ))
    };
    let from = utc(&w.from_utc)
        .ok_or_else(|| damaged(format!("the CPU window's from_utc '{}'", w.from_utc)))?;
    let until = utc(&w.until_utc)
        .ok_or_else(|| damaged(format!("the CPU window's until_utc '{}'", w.until_utc)))?;
    for s in shards {
        for (what, at) in [
            ("start_utc", &s.report.start_utc),
            ("end_utc", &s.report.end_utc),
        ] {
            if utc(at).is_none() {
                return Err(damaged(format!("{}'s {what} '{at}'", s.file)));
            }
        }
    }
    let (Some(start), Some(end), _, _) = window(shards) else {
        return Ok(());
    };
    let secs = |a: chrono::DateTime<chrono::Utc>, b: chrono::DateTime<chrono::Utc>| {
        (b - a).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
    };
    let (late, early) = (secs(start, from), secs(until, end));
    let mut misses = Vec::new();
    if late > WINDOW_TOLERANCE_S {
        misses.push(format!("begins {late:.3} s after the first shard began"));
    }
    if early > WINDOW_TOLERANCE_S {
        misses.push(format!("ends {early:.3} s before the last shard ended"));
    }
    if misses.is_empty() {
        return Ok(());
    }
    Err(MergeError::Measurement(format!(
        "the CPU window given with --cpu, from {} until {}, does not cover the shards' window, from {} until {}: it {} (more than the {WINDOW_TOLERANCE_S} s allowed for clock granularity), so the shared processes' CPU of part of the run is missing. Measure again with `oemputx cpu --from` at or before the shards' --start-at and `--until` after the last shard ends, or run one shard with --measure",
        w.from_utc,
        w.until_utc,
        super::format_utc(&start),
        super::format_utc(&end),
        misses.join(" and ")
    )))
}

/// The shards' round-trip histograms added up.
fn histograms(sorted: &[Shard]) -> Result<hdrhistogram::Histogram<u64>, MergeError> {
    let mut hist: Option<hdrhistogram::Histogram<u64>> = None;
    for s in sorted {
        let bad = |why: String| MergeError::BadHistogram {
            path: s.file.clone(),
            why,
        };
        let text = s
            .report
            .round_trip_histogram
            .as_deref()
            .ok_or_else(|| bad("it has none (written by an oemputx before shards)".into()))?;
        let h = decode_histogram(text).map_err(bad)?;
        if h.is_empty() && s.report.transactions > 0 {
            return Err(bad(format!(
                "it holds no round trip, and the shard counts {} transactions",
                s.report.transactions
            )));
        }
        match hist.as_mut() {
            None => hist = Some(h),
            Some(all) => all.add(&h).map_err(|e| bad(format!("{e:?}")))?,
        }
    }
    hist.ok_or_else(|| MergeError::Incomplete("no report was given".into()))
}

/// The union of the shards' windows: its start and end, its length and how far apart the
/// shards began (seconds).
type Window = (
    Option<chrono::DateTime<chrono::Utc>>,
    Option<chrono::DateTime<chrono::Utc>>,
    f64,
    f64,
);

fn window(sorted: &[Shard]) -> Window {
    let starts: Vec<_> = sorted
        .iter()
        .filter_map(|s| utc(&s.report.start_utc))
        .collect();
    let ends: Vec<_> = sorted
        .iter()
        .filter_map(|s| utc(&s.report.end_utc))
        .collect();
    let (start, end) = (starts.iter().min().copied(), ends.iter().max().copied());
    let secs = |a: chrono::DateTime<chrono::Utc>, b: chrono::DateTime<chrono::Utc>| {
        (b - a).num_microseconds().unwrap_or(0) as f64 / 1e6
    };
    let window_s = start.zip(end).map_or(0.0, |(a, b)| secs(a, b));
    let spread = starts
        .iter()
        .min()
        .zip(starts.iter().max())
        .map_or(0.0, |(a, b)| secs(*a, *b));
    (start, end, window_s, spread)
}

fn integrity(sorted: &[Shard]) -> crate::driver::Integrity {
    let mut t = crate::driver::Integrity::default();
    for s in sorted {
        let i = &s.report.integrity;
        t.sent += i.sent;
        t.received += i.received;
        t.matched += i.matched;
        t.unmatched += i.unmatched;
        t.timed_out += i.timed_out;
        t.duplicates += i.duplicates;
        t.late += i.late;
        t.abandoned += i.abandoned;
    }
    t
}

/// The groups and process rows per transaction: the shared groups once, each shard's DRIVER
/// added; shares of the captured total set.
fn cpu_rows(
    sorted: &[Shard],
    shared: &[WindowGroup],
    shared_rows: Vec<ProcessRow>,
    total: u64,
) -> (Vec<GroupRow>, Vec<ProcessRow>) {
    let per = |s: f64| {
        if total > 0 {
            s * 1e6 / total as f64
        } else {
            0.0
        }
    };
    let mut processes: Vec<ProcessRow> = shared_rows
        .into_iter()
        .map(|p| ProcessRow {
            user_us_per_tran: per(p.user_us_per_tran),
            sys_us_per_tran: per(p.sys_us_per_tran),
            total_us_per_tran: per(p.total_us_per_tran),
            split_sigma_us_per_tran: per(p.split_sigma_us_per_tran),
            ..p
        })
        .collect();
    let mut groups: Vec<GroupRow> = shared
        .iter()
        .map(|g| GroupRow {
            processes: g.processes,
            ..group_row(&g.name, &g.host, per(g.user_s), per(g.sys_s))
        })
        .collect();
    let (mut du, mut ds) = (0.0, 0.0);
    for s in sorted {
        let n = s.report.transactions as f64;
        let index = s.report.shard.as_ref().map_or(0, |i| i.index);
        for g in s.report.groups.iter().filter(|g| g.name == "DRIVER") {
            du += g.user_us_per_tran * n / 1e6;
            ds += g.sys_us_per_tran * n / 1e6;
        }
        for p in s.report.processes.iter().filter(|p| p.group == "DRIVER") {
            let (user, sys) = (
                per(p.user_us_per_tran * n / 1e6),
                per(p.sys_us_per_tran * n / 1e6),
            );
            processes.push(ProcessRow {
                name: format!("{}@shard{index}", p.name),
                user_us_per_tran: user,
                sys_us_per_tran: sys,
                total_us_per_tran: user + sys,
                ticks_us_per_tran: None,
                ..p.clone()
            });
        }
    }
    if du + ds > 0.0 {
        groups.push(GroupRow {
            processes: sorted.len(),
            ..group_row("DRIVER", "local", per(du), per(ds))
        });
    }
    let captured: f64 = groups.iter().map(|g| g.total_us_per_tran).sum();
    let share = |x: f64| {
        if captured > 0.0 {
            100.0 * x / captured
        } else {
            0.0
        }
    };
    for g in &mut groups {
        g.pct = share(g.total_us_per_tran);
    }
    for p in &mut processes {
        p.pct = share(p.total_us_per_tran);
    }
    (groups, processes)
}

fn shard_rows(sorted: &[Shard]) -> Vec<ShardRow> {
    sorted
        .iter()
        .map(|s| ShardRow {
            index: s.report.shard.as_ref().map_or(0, |i| i.index),
            file: s.file.clone(),
            hostname: s.report.host.hostname.clone(),
            transactions: s.report.transactions,
            start_utc: s.report.start_utc.clone(),
            end_utc: s.report.end_utc.clone(),
            rate_tps: s.report.rate_tps,
            late_for_start_s: s.report.shard.as_ref().and_then(|i| i.late_for_start_s),
            node: s.report.shard.as_ref().and_then(|i| i.node.clone()),
        })
        .collect()
}

/// The accounting notes of the merge: the measuring shard's, its verdict replaced by how
/// the figures were made, every shard's warnings kept by name.
fn accounting(out: &mut Report, sorted: &[Shard], source: &str, captured: f64) {
    let total = out.transactions;
    let Some(acc) = out.accounting.as_mut() else {
        return;
    };
    acc.hosts = Vec::new();
    acc.load = None;
    let captured_s = captured * total as f64 / 1e6;
    acc.snapshot_share_pct = if captured_s > 0.0 {
        100.0 * acc.snapshot_cpu_s / captured_s
    } else {
        0.0
    };
    acc.verdict = format!(
        "merged from {} shards: the shared groups measured once ({source}), divided by all {total} transactions; DRIVER is the sum of the shards' own",
        sorted.len()
    );
    acc.warnings = sorted
        .iter()
        .flat_map(|s| {
            let i = s.report.shard.as_ref().map_or(0, |i| i.index);
            s.report
                .accounting
                .iter()
                .flat_map(|a| a.warnings.clone())
                .map(move |w| format!("shard {i}: {w}"))
                .collect::<Vec<_>>()
        })
        .collect();
}

/// The merged report.
pub fn merge(shards: Vec<Shard>, cpu: Option<CpuWindow>) -> Result<Report, MergeError> {
    let (run_id, _) = check(&shards)?;
    let (shared, shared_rows, source, ratio, host) = measurement(&shards, cpu)?;
    let mut sorted = shards;
    sorted.sort_by_key(|s| s.report.shard.as_ref().map_or(0, |i| i.index));
    let hist = histograms(&sorted)?;
    let (start, end, window_s, start_spread_s) = window(&sorted);
    let total: u64 = sorted.iter().map(|s| s.report.transactions).sum();
    let (groups, processes) = cpu_rows(&sorted, &shared, shared_rows, total);
    let captured: f64 = groups.iter().map(|g| g.total_us_per_tran).sum();
    let app_s: f64 = sorted.iter().filter_map(|s| s.report.app_cpu.total_s).sum();
    let mut out = sorted[0].report.clone();
    out.label = run_id.clone();
    out.transactions = total;
    out.elapsed_s = window_s;
    out.rate_tps = if window_s > 0.0 {
        total as f64 / window_s
    } else {
        0.0
    };
    out.start_utc = start.map_or(out.start_utc, |t| super::format_utc(&t));
    out.end_utc = end.map_or(out.end_utc, |t| super::format_utc(&t));
    out.round_trip_us = Latency::of(&hist);
    out.round_trip_percentiles = percentiles(&hist);
    out.round_trip_histogram = encode_histogram(&hist);
    out.integrity = integrity(&sorted);
    out.per_task_transactions = sorted
        .iter()
        .flat_map(|s| s.report.per_task_transactions.clone())
        .collect();
    // Every shard's breaks, in order of time (each names its task within its shard).
    out.interruptions = sorted
        .iter()
        .flat_map(|s| s.report.interruptions.clone())
        .collect();
    out.interruptions
        .sort_by(|a, b| a.start_utc.cmp(&b.start_utc));
    out.interruptions_total = crate::driver::InterruptionTotals::of(&out.interruptions);
    out.app_cpu.total_s = Some(app_s);
    out.app_cpu.us_per_tran = (total > 0).then(|| app_s * 1e6 / total as f64);
    out.app_cpu.pct_of_elapsed = (window_s > 0.0).then(|| 100.0 * app_s / window_s);
    out.settings.tasks = sorted.iter().map(|s| s.report.settings.tasks).sum();
    out.settings.count = sorted.iter().map(|s| s.report.settings.count).sum();
    out.settings.rate_limit_tps = sorted
        .iter()
        .map(|s| s.report.settings.rate_limit_tps)
        .sum();
    out.groups = groups;
    out.processes = processes;
    out.captured_us_per_tran = Some(captured);
    out.corrected_us_per_tran = ratio
        .as_ref()
        .filter(|r| r.value > 0.0)
        .map(|r| captured / r.value);
    out.capture_ratio = ratio;
    out.other_cpu = None;
    out.rounds = Vec::new();
    out.rounds_summary = None;
    out.probe = None;
    out.serving = None;
    out.host = host;
    out.shard = None;
    accounting(&mut out, &sorted, &source, captured);
    out.merged = Some(MergeInfo {
        run_id,
        shards: shard_rows(&sorted),
        measurement: source,
        window_s,
        start_spread_s,
    });
    out.capacity = None;
    Ok(out.with_capacity())
}

fn group_row(name: &str, host: &str, user: f64, sys: f64) -> GroupRow {
    GroupRow {
        name: name.into(),
        host: host.into(),
        user_us_per_tran: user,
        sys_us_per_tran: sys,
        total_us_per_tran: user + sys,
        pct: 0.0,
        processes: 0,
        ticks_us_per_tran: None,
        // Not yet summed over shards: null in a merged report.
        cost: Default::default(),
    }
}
