//! `oemputx cpu`: the groups' CPU without the put/get driver — readings taken before and
//! after a run, or watched per interval (the OEMPUTX report's first method: RMF readings
//! around a run).

use crate::accounting::Accounting;
use crate::accounting::Traffic;
use crate::accounting::selector::GroupSpec;
use crate::accounting::snapshot::{self, Members};
use crate::config::ConfigError;
use crate::config::tools::CpuConfig;
use crate::exit::Exit;
use crate::window::Window;
use anyhow::Context;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The CPU each group's members have used so far, rows named `Jobname.PID` + `host`.
fn rows_so_far(groups: &[GroupSpec], snap: &snapshot::Snapshot, host: &str) -> Vec<CpuRow> {
    let mut rows = Vec::new();
    for (g, members) in groups.iter().zip(&snap.groups) {
        let samples: Vec<&snapshot::Sample> = match members {
            Members::Procs(keys) => keys.iter().filter_map(|k| snap.procs.get(k)).collect(),
            Members::Threads(t) => t.values().collect(),
            Members::Cgroup(c) => {
                if let Some(c) = c {
                    let total = c.usage_ns as f64 / 1e9;
                    let (u, s) = crate::accounting::math::split(total, c.user, c.system);
                    rows.push(CpuRow {
                        group: g.name.clone(),
                        name: "cgroup".into(),
                        pid: None,
                        user_s: u,
                        sys_s: s,
                        total_s: total,
                    });
                }
                continue;
            }
        };
        for p in samples {
            let total = p.cpu_ns as f64 / 1e9;
            let (u, s) = crate::accounting::math::split(total, p.utime, p.stime);
            rows.push(CpuRow {
                group: g.name.clone(),
                name: format!("{}.{}{host}", p.name, p.pid),
                pid: Some(p.pid),
                user_s: u,
                sys_s: s,
                total_s: total,
            });
        }
    }
    rows
}

/// The interval's groups added to the totals, and the file rewritten (atomically: a
/// collector never reads half of it).
fn write_openmetrics(
    path: &std::path::Path,
    total: &mut Vec<crate::export::openmetrics::GroupCpu>,
    groups: &[crate::accounting::GroupRow],
    interval: std::time::Duration,
) -> anyhow::Result<()> {
    use crate::export::openmetrics::{GroupCpu, watch};
    // The table's µs "per transaction" are µs in the interval (one transaction).
    let last: Vec<GroupCpu> = groups
        .iter()
        .map(|g| GroupCpu {
            group: g.name.clone(),
            host: g.host.clone(),
            user_s: g.user_us_per_tran / 1e6,
            sys_s: g.sys_us_per_tran / 1e6,
        })
        .collect();
    for l in &last {
        match total
            .iter_mut()
            .find(|t| t.group == l.group && t.host == l.host)
        {
            Some(t) => {
                t.user_s += l.user_s;
                t.sys_s += l.sys_s;
            }
            None => total.push(l.clone()),
        }
    }
    crate::export::write_output(
        path,
        "the OpenMetrics file",
        &watch(total, &last, interval.as_secs_f64()),
    )
}

/// One output row of `oemputx cpu`.
struct CpuRow {
    group: String,
    name: String,
    pid: Option<i32>,
    user_s: f64,
    sys_s: f64,
    total_s: f64,
}

fn print_rows(rows: &[CpuRow], tsv: bool, header: bool, stamp: Option<&str>) -> anyhow::Result<()> {
    if tsv {
        let mut w = csv::WriterBuilder::new()
            .delimiter(b'\t')
            .has_headers(false)
            .from_writer(std::io::stdout());
        if header {
            let mut h = vec!["group", "process", "pid", "user_s", "sys_s", "total_s"];
            if stamp.is_some() {
                h.insert(0, "time_utc");
            }
            w.write_record(&h)?;
        }
        for r in rows {
            let mut rec = vec![
                r.group.clone(),
                r.name.clone(),
                r.pid.map(|p| p.to_string()).unwrap_or_default(),
            ];
            rec.extend([r.user_s, r.sys_s, r.total_s].map(|v| format!("{v:.6}")));
            if let Some(t) = stamp {
                rec.insert(0, t.to_string());
            }
            w.write_record(&rec)?;
        }
        w.flush()?;
        return Ok(());
    }
    let mut o = String::new();
    if let Some(t) = stamp {
        let _ = writeln!(o, "{t}");
    }
    if header || stamp.is_some() {
        let _ = writeln!(
            o,
            " {:<14} {:<28} {:>12} {:>12} {:>12}",
            "Group", "Process", "USR(s)", "SYS(s)", "Tot(s)"
        );
    }
    for r in rows {
        let _ = writeln!(
            o,
            " {:<14} {:<28} {:>12.6} {:>12.6} {:>12.6}",
            r.group, r.name, r.user_s, r.sys_s, r.total_s
        );
    }
    crate::export::print_stdout(&o)?;
    Ok(())
}

/// Sleep until `at`, waking every 50 ms for a signal; false when interrupted.
/// When an interval that starts at `now` ends. An interval past the calendar's end (`cpu
/// --interval 300000y`) ends never, not at once: `now + interval` panicked there, and an
/// interval too long for a `chrono::Duration` was counted as none, printing intervals
/// back to back that claimed to be centuries long.
fn interval_end(
    now: chrono::DateTime<chrono::Utc>,
    interval: std::time::Duration,
) -> chrono::DateTime<chrono::Utc> {
    chrono::Duration::from_std(interval)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

fn sleep_until(at: chrono::DateTime<chrono::Utc>, interrupt: &AtomicBool) -> bool {
    loop {
        if interrupt.load(Ordering::Relaxed) {
            return false;
        }
        let left = at - chrono::Utc::now();
        if left <= chrono::Duration::zero() {
            return true;
        }
        let step = left
            .to_std()
            .unwrap_or_default()
            .min(std::time::Duration::from_millis(50));
        std::thread::sleep(step);
    }
}

/// `cpu --from T --until T`: the groups' CPU over one window, printed and, with
/// --export-json, written for `oemputx merge --cpu`.
fn window(
    args: &CpuConfig,
    (from, until): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    interrupt: &AtomicBool,
) -> anyhow::Result<Exit> {
    use crate::report::merge::{CPU_WINDOW_SCHEMA, CpuWindow, WindowGroup};
    let mut acc = Accounting::new(
        args.groups.clone(),
        args.cpu_source,
        crate::accounting::RatioMode::Measured,
    )
    .with_hosts(&args.hosts)
    .map_err(ConfigError::from)?;
    let late = chrono::Utc::now() > from;
    if !sleep_until(from, interrupt) {
        return Ok(Exit::Interrupted);
    }
    acc.start();
    let began = chrono::Utc::now();
    if !sleep_until(until, interrupt) {
        return Ok(Exit::Interrupted);
    }
    acc.end();
    let ended = chrono::Utc::now();
    let table = acc
        .table(Traffic {
            transactions: 1,
            ..Traffic::default()
        })
        .with_context(|| {
            format!(
                "taking CPU snapshots: {}",
                acc.error.clone().unwrap_or_default()
            )
        })?;
    // One "transaction": the table's µs per transaction are the window's µs.
    let w = CpuWindow {
        schema: CPU_WINDOW_SCHEMA.into(),
        from_utc: began.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        until_utc: ended.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        groups: table
            .groups
            .iter()
            .map(|g| WindowGroup {
                name: g.name.clone(),
                host: g.host.clone(),
                user_s: g.user_us_per_tran / 1e6,
                sys_s: g.sys_us_per_tran / 1e6,
                processes: g.processes,
            })
            .collect(),
        capture_ratio: table.capture_ratio.clone(),
        host: crate::report::Host::current(),
    };
    if late {
        crate::say!(
            "oemputx cpu: --from was already past when it started; the window began at {}",
            w.from_utc
        );
    }
    let json = serde_json::to_string_pretty(&w)? + "\n";
    let to_stdout = args
        .window_json
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    if let Some(p) = args.window_json.as_deref().filter(|_| !to_stdout) {
        crate::export::write_output(p, "the CPU window", &json)?;
    }
    let rows: Vec<CpuRow> = w
        .groups
        .iter()
        .map(|g| CpuRow {
            group: g.name.clone(),
            name: format!("{}*", g.name),
            pid: None,
            user_s: g.user_s,
            sys_s: g.sys_s,
            total_s: g.user_s + g.sys_s,
        })
        .collect();
    if to_stdout {
        crate::export::print_output(&json)?;
    } else {
        print_rows(
            &rows,
            args.tsv,
            true,
            Some(&format!("{} .. {}", w.from_utc, w.until_utc)),
        )?;
    }
    Ok(Exit::Ok)
}

/// `oemputx cpu`.
pub fn cpu(args: &CpuConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    if let Some(edges) = args.window {
        return window(args, edges, &interrupt);
    }
    let (groups, hosts) = (args.groups.clone(), &args.hosts);
    let Some(interval) = args.interval else {
        let (local, remote) =
            crate::accounting::hosts::place(groups, hosts).map_err(ConfigError::from)?;
        let snap = snapshot::take(&local, args.cpu_source)?;
        let mut rows = rows_so_far(&local, &snap, "");
        for r in &remote {
            let (snap, _) = r.host.snapshot(&r.groups).map_err(ConfigError::from)?;
            rows.extend(rows_so_far(&r.groups, &snap, &format!("@{}", r.host.name)));
        }
        if rows.is_empty() {
            crate::say!(
                "oemputx cpu: no process matched the groups; give --group NAME=SEL (see oemputx --help)"
            );
        }
        print_rows(&rows, args.tsv, true, None)?;
        return Ok(Exit::Ok);
    };
    let mut acc = Accounting::new(
        groups,
        args.cpu_source,
        crate::accounting::RatioMode::Measured,
    )
    .with_hosts(hosts)
    .map_err(ConfigError::from)?;
    acc.start();
    let mut n = 0u64;
    // Each group's CPU since the watch began, for the OpenMetrics counters.
    let mut total: Vec<crate::export::openmetrics::GroupCpu> = Vec::new();
    while args.count.is_none_or(|c| n < c) && !interrupt.load(Ordering::Relaxed) {
        // A signal ends the wait at once; the interval it cut short is not printed (its
        // figures would be read as a whole interval's).
        if !sleep_until(interval_end(chrono::Utc::now(), interval), &interrupt) {
            break;
        }
        acc.end();
        // One "transaction" per interval: the table's µs/tran are µs in the interval.
        let table = acc
            .table(Traffic {
                transactions: 1,
                ..Traffic::default()
            })
            .with_context(|| {
                format!(
                    "taking CPU snapshots: {}",
                    acc.error.clone().unwrap_or_default()
                )
            })?;
        let rows: Vec<CpuRow> = table
            .groups
            .iter()
            .map(|g| CpuRow {
                group: g.name.clone(),
                name: format!("{}*", g.name),
                pid: None,
                user_s: g.user_us_per_tran / 1e6,
                sys_s: g.sys_us_per_tran / 1e6,
                total_s: g.total_us_per_tran / 1e6,
            })
            .collect();
        let stamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        if let Some(path) = &args.openmetrics {
            write_openmetrics(path, &mut total, &table.groups, interval)?;
        }
        print_rows(&rows, args.tsv, n == 0, Some(&stamp))?;
        acc.roll();
        n += 1;
    }
    Ok(if interrupt.load(Ordering::Relaxed) {
        Exit::Interrupted
    } else {
        Exit::Ok
    })
}
