//! `oemputx cpu`'s measuring, in its three modes and without a driver (the OEMPUTX
//! report's first method: readings around a run): each process's CPU so far
//! ([`readings`]), the groups' CPU over one window whose edges are given ([`window`], the
//! file `merge --cpu` reads), and the groups' CPU per interval until a count or a signal
//! ([`watch`]). Each returns typed results; the command prints and writes them.

use crate::accounting::selector::GroupSpec;
use crate::accounting::snapshot::{self, Members};
use crate::accounting::{Accounting, CpuTable, GroupRow, RatioMode, Traffic};
use crate::config::ConfigError;
use crate::config::tools::CpuConfig;
use crate::report::cpu::{CpuInterval, CpuRow, GroupCpu};
use crate::report::merge::{CPU_WINDOW_SCHEMA, CpuWindow, WindowGroup};
use crate::window::Window as _;
use anyhow::Context as _;
use chrono::{DateTime, SecondsFormat, Utc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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

/// `cpu` without --interval or a window: each process's CPU so far, this host's groups
/// first, then each --host's.
pub(crate) fn readings(cfg: &CpuConfig) -> anyhow::Result<Vec<CpuRow>> {
    let (local, remote) = crate::accounting::hosts::place(cfg.groups.clone(), &cfg.hosts)
        .map_err(ConfigError::from)?;
    let snap = snapshot::take(
        &local,
        cfg.cpu_source,
        &mut crate::accounting::resources::syncs::Syncs::off("not counted by cpu's readings"),
    )?;
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
    Ok(rows)
}

/// When an interval that starts at `now` ends. An interval past the calendar's end (`cpu
/// --interval 300000y`) ends never, not at once: `now + interval` panicked there, and an
/// interval too long for a `chrono::Duration` was counted as none, printing intervals
/// back to back that claimed to be centuries long.
fn interval_end(now: DateTime<Utc>, interval: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(interval)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Sleep until `at`, waking every 50 ms for a signal; false when interrupted.
fn sleep_until(at: DateTime<Utc>, interrupt: &AtomicBool) -> bool {
    loop {
        if interrupt.load(Ordering::Relaxed) {
            return false;
        }
        let left = at - Utc::now();
        if left <= chrono::Duration::zero() {
            return true;
        }
        let step = left
            .to_std()
            .unwrap_or_default()
            .min(Duration::from_millis(50));
        std::thread::sleep(step);
    }
}

/// The groups' accounting, measured (no ratio is assumed: there is no driver to divide by).
fn accounting(cfg: &CpuConfig) -> anyhow::Result<Accounting> {
    Ok(
        Accounting::new(cfg.groups.clone(), cfg.cpu_source, RatioMode::Measured)
            .without_syncs("syncs are null: oemputx cpu reads CPU only")
            .with_hosts(&cfg.hosts)
            .map_err(ConfigError::from)?,
    )
}

/// The table of the window just ended as one "transaction": its µs per transaction are
/// the window's µs.
fn one_transaction(acc: &Accounting) -> anyhow::Result<CpuTable> {
    acc.table(Traffic {
        transactions: 1,
        ..Traffic::default()
    })
    .with_context(|| {
        format!(
            "taking CPU snapshots: {}",
            acc.error.clone().unwrap_or_default()
        )
    })
}

/// `cpu --from T --until T`: the groups' CPU over one window, its edges when the counters
/// were read; `None` when a signal came first.
pub fn window(
    cfg: &CpuConfig,
    (from, until): (DateTime<Utc>, DateTime<Utc>),
    interrupt: &AtomicBool,
) -> anyhow::Result<Option<CpuWindow>> {
    let mut acc = accounting(cfg)?;
    let late = Utc::now() > from;
    if !sleep_until(from, interrupt) {
        return Ok(None);
    }
    acc.start();
    let began = Utc::now();
    if !sleep_until(until, interrupt) {
        return Ok(None);
    }
    acc.end();
    let ended = Utc::now();
    let table = one_transaction(&acc)?;
    let w = CpuWindow {
        schema: CPU_WINDOW_SCHEMA.into(),
        from_utc: began.to_rfc3339_opts(SecondsFormat::Micros, true),
        until_utc: ended.to_rfc3339_opts(SecondsFormat::Micros, true),
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
    Ok(Some(w))
}

/// One interval from its table's groups (µs per "transaction" are µs in the interval),
/// added to `total`, each group's CPU since the watch began.
fn interval_of(
    (index, stamp): (u64, String),
    groups: &[GroupRow],
    total: &mut Vec<GroupCpu>,
    interval: Duration,
) -> CpuInterval {
    let rows = groups
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
    CpuInterval {
        index,
        stamp,
        rows,
        total: total.clone(),
        last,
        interval_s: interval.as_secs_f64(),
    }
}

/// `cpu --interval`: the groups' CPU per interval, each handed to `each` as it ends, until
/// --count intervals or a signal. Returns whether a signal ended it.
pub fn watch(
    cfg: &CpuConfig,
    interval: Duration,
    interrupt: &AtomicBool,
    mut each: impl FnMut(&CpuInterval) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    let mut acc = accounting(cfg)?;
    acc.start();
    let mut n = 0u64;
    // Each group's CPU since the watch began, for the OpenMetrics counters.
    let mut total: Vec<GroupCpu> = Vec::new();
    while cfg.count.is_none_or(|c| n < c) && !interrupt.load(Ordering::Relaxed) {
        // A signal ends the wait at once; the interval it cut short is not printed (its
        // figures would be read as a whole interval's).
        if !sleep_until(interval_end(Utc::now(), interval), interrupt) {
            break;
        }
        acc.end();
        let table = one_transaction(&acc)?;
        let stamp = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        each(&interval_of(
            (n, stamp),
            &table.groups,
            &mut total,
            interval,
        ))?;
        acc.roll();
        n += 1;
    }
    Ok(interrupt.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::formats::Format;
    use crate::export::cpu::{Shown, table, window_table};
    use crate::export::outputs::{Artifact, Style};

    /// `cpu` over this test process alone, as `--group ME=pid:<own pid>` asks.
    fn own(count: Option<u64>) -> CpuConfig {
        let me = format!("ME=pid:{}", std::process::id());
        CpuConfig {
            groups: crate::accounting::selector::parse_groups([me.as_str()]).expect("a group"),
            hosts: Vec::new(),
            interval: None,
            count,
            tsv: false,
            openmetrics: None,
            window: None,
            window_json: None,
            cpu_source: snapshot::CpuSource::Exact,
        }
    }

    fn burn() {
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    #[test]
    fn an_interval_ends_after_it_starts_or_never() {
        let now = Utc::now();
        assert_eq!(
            interval_end(now, Duration::from_secs(2)),
            now + chrono::Duration::seconds(2)
        );
        // Past the calendar's end: never, not at once and not a panic.
        let ages = Duration::from_secs(300_000 * 366 * 86_400);
        assert_eq!(interval_end(now, ages), DateTime::<Utc>::MAX_UTC);
        assert_eq!(interval_end(now, Duration::MAX), DateTime::<Utc>::MAX_UTC);
        // A signal already given ends a wait at once.
        assert!(!sleep_until(
            DateTime::<Utc>::MAX_UTC,
            &AtomicBool::new(true)
        ));
        assert!(sleep_until(now, &AtomicBool::new(false)));
    }

    #[test]
    fn a_snapshot_of_this_process_is_one_row_named_by_its_jobname_and_pid() {
        burn();
        let cfg = own(None);
        let snap = snapshot::take(
            &cfg.groups,
            cfg.cpu_source,
            &mut crate::accounting::resources::syncs::Syncs::off("a test"),
        )
        .expect("a snapshot");
        let me = std::process::id() as i32;
        let rows = rows_so_far(&cfg.groups, &snap, "@far");
        assert_eq!(rows.len(), 1, "{rows:?}");
        let r = &rows[0];
        assert_eq!((r.group.as_str(), r.pid), ("ME", Some(me)));
        assert!(r.name.ends_with(&format!(".{me}@far")), "{}", r.name);
        assert!(r.total_s > 0.0, "{r:?}");
        assert!((r.user_s + r.sys_s - r.total_s).abs() < 1e-9, "{r:?}");
        assert_eq!(readings(&cfg).expect("readings").len(), 1);
    }

    fn row(user_s: f64, sys_s: f64) -> CpuRow {
        CpuRow {
            group: "ME".into(),
            name: "ME*".into(),
            pid: None,
            user_s,
            sys_s,
            total_s: user_s + sys_s,
        }
    }

    #[test]
    fn the_table_is_the_same_text_and_tsv_as_before() {
        let rows = [row(0.5, 0.25)];
        let text = table(&rows, false, false, Some("T")).expect("text");
        let expected = concat!(
            "T\n",
            " Group          Process                            USR(s)       SYS(s)       Tot(s)\n",
            " ME             ME*                              0.500000     0.250000     0.750000\n",
        );
        assert_eq!(text, Shown::Text(expected.into()));
        let tsv = table(&rows, true, true, Some("T")).expect("tsv");
        let expected = "time_utc\tgroup\tprocess\tpid\tuser_s\tsys_s\ttotal_s\n\
                        T\tME\tME*\t\t0.500000\t0.250000\t0.750000\n";
        assert_eq!(tsv, Shown::Tsv(expected.into()));
        // Later intervals of a TSV watch: rows only.
        let tsv = table(&rows, true, false, Some("T")).expect("tsv");
        assert_eq!(
            tsv,
            Shown::Tsv("T\tME\tME*\t\t0.500000\t0.250000\t0.750000\n".into())
        );
    }

    #[test]
    fn a_window_renders_its_json_and_an_interval_its_openmetrics() {
        let w = CpuWindow {
            schema: CPU_WINDOW_SCHEMA.into(),
            from_utc: "2026-01-01T00:00:00.000000Z".into(),
            until_utc: "2026-01-01T00:01:00.000000Z".into(),
            groups: vec![WindowGroup {
                name: "ME".into(),
                host: "local".into(),
                user_s: 0.5,
                sys_s: 0.25,
                processes: 1,
            }],
            capture_ratio: None,
            host: crate::report::Host::current(),
        };
        let style = Style::default();
        let json = w.render(Format::Json, &style).expect("JSON");
        assert_eq!(json, serde_json::to_string_pretty(&w).expect("JSON") + "\n");
        let back: CpuWindow = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back.groups, w.groups);
        let err = w
            .render(Format::OpenMetrics, &style)
            .expect_err("the watch's");
        assert!(err.to_string().contains("--interval"), "{err}");
        assert!(w.render(Format::Tsv, &style).is_err());
        let Shown::Text(t) = window_table(&w, false).expect("text") else {
            panic!("text asked for")
        };
        assert!(t.starts_with("2026-01-01T00:00:00.000000Z .. 2026-01-01T00:01:00.000000Z\n"));
        assert!(t.ends_with("0.750000\n"), "{t}");
        let g = GroupRow {
            name: "ME".into(),
            host: "local".into(),
            user_us_per_tran: 500_000.0,
            sys_us_per_tran: 250_000.0,
            total_us_per_tran: 750_000.0,
            pct: 100.0,
            processes: 1,
            ticks_us_per_tran: None,
            cost: Default::default(),
        };
        let mut total = Vec::new();
        interval_of(
            (0, "T".into()),
            std::slice::from_ref(&g),
            &mut total,
            Duration::from_secs(1),
        );
        let i = interval_of((1, "T".into()), &[g], &mut total, Duration::from_secs(1));
        assert_eq!(i.rows, [row(0.5, 0.25)]);
        let om = i.render(Format::OpenMetrics, &style).expect("OpenMetrics");
        assert!(
            om.contains(
                r#"oemputx_group_cpu_seconds_total{group="ME",host="local",mode="user"} 1.0"#
            ),
            "{om}"
        );
        assert!(
            om.contains(r#"oemputx_group_cpus_busy{group="ME",host="local"} 0.75"#),
            "{om}"
        );
        assert!(i.render(Format::Json, &style).is_err());
    }

    #[test]
    fn a_short_window_of_this_process_is_measured_with_no_broker() {
        let cfg = own(None);
        let from = Utc::now() + chrono::Duration::milliseconds(20);
        let until = from + chrono::Duration::milliseconds(100);
        let w = window(&cfg, (from, until), &AtomicBool::new(false))
            .expect("measured")
            .expect("not interrupted");
        assert_eq!(w.schema, CPU_WINDOW_SCHEMA);
        let (began, ended) = (
            DateTime::parse_from_rfc3339(&w.from_utc).expect("an instant"),
            DateTime::parse_from_rfc3339(&w.until_utc).expect("an instant"),
        );
        // Never early at either edge; on a busy host it may begin late (88 ms of the 100
        // once, beside the test command's builds), and says so.
        let slack = chrono::Duration::milliseconds(1);
        assert!(began >= from - slack && ended >= until - slack, "{w:?}");
        assert!(ended > began, "{w:?}");
        let me = w.groups.iter().find(|g| g.name == "ME").expect("ME");
        // This process, and a row of the children it reaped in the window when another test
        // of this binary ran a command then (the account tests do, beside it).
        assert!((1..=2).contains(&me.processes), "{w:?}");
        assert!(me.user_s >= 0.0 && me.sys_s >= 0.0, "{w:?}");
        // A signal before its start: nothing measured.
        let late = Utc::now() + chrono::Duration::seconds(60);
        let stopped = window(&cfg, (late, late), &AtomicBool::new(true)).expect("no error");
        assert!(stopped.is_none());
    }

    #[test]
    fn a_watch_of_two_short_intervals_hands_on_each_and_adds_them_up() {
        let mut seen = Vec::new();
        let interrupted = watch(
            &own(Some(2)),
            Duration::from_millis(100),
            &AtomicBool::new(false),
            |i| {
                burn();
                seen.push(i.clone());
                Ok(())
            },
        )
        .expect("watched");
        assert!(!interrupted);
        assert_eq!(seen.iter().map(|i| i.index).collect::<Vec<_>>(), [0, 1]);
        for i in &seen {
            assert_eq!(i.rows.len(), 1, "{i:?}");
            assert_eq!(i.rows[0].name, "ME*");
            assert!((i.interval_s - 0.1).abs() < 1e-9);
        }
        let (first, second) = (&seen[0].total[0], &seen[1].total[0]);
        let last = &seen[1].last[0];
        assert!(
            (second.user_s - first.user_s - last.user_s).abs() < 1e-9,
            "{seen:?}"
        );
        assert!(second.user_s + second.sys_s > 0.0, "{seen:?}");
    }
}
