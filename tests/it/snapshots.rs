//! Snapshot tests of every exporter from one fixed report model: a change to a layout shows
//! up as a diff of a committed `.snap` file, to be accepted on purpose (`cargo insta review`).

use chrono::TimeZone;
use oemputx::accounting::all_tasks::TasksSource;
use oemputx::accounting::host_load::{self, HostLoad};
use oemputx::accounting::resources::{BeyondInfo, GroupCost};
use oemputx::accounting::snapshot::CpuSource;
use oemputx::accounting::{
    AccountingInfo, CaptureRatio, CpuTable, GroupRow, OtherCpu, OtherProcess, ProcessRow,
};
use oemputx::config::RunOptions;
use oemputx::driver::{Integrity, Outcome, Round, Status};
use oemputx::export::{self, delimited::Format};
use oemputx::report::{Host, Latency, Measured, Report, RoundGroup, RoundRow};
use std::time::Duration;

fn process(group: &str, name: &str, pid: i32, user: f64, sys: f64, pct: f64) -> ProcessRow {
    ProcessRow {
        group: group.into(),
        host: "local".into(),
        name: format!("{name}.{pid}"),
        pid: Some(pid),
        user_us_per_tran: user,
        sys_us_per_tran: sys,
        total_us_per_tran: user + sys,
        pct,
        split_sigma_us_per_tran: 1.5,
        exact: true,
        note: None,
        ticks_us_per_tran: Some(((user + sys) / 10.0).round() * 10.0),
    }
}

fn group(name: &str, user: f64, sys: f64, pct: f64, processes: usize) -> GroupRow {
    GroupRow {
        name: name.into(),
        host: "local".into(),
        user_us_per_tran: user,
        sys_us_per_tran: sys,
        total_us_per_tran: user + sys,
        pct,
        processes,
        ticks_us_per_tran: None,
        cost: Default::default(),
    }
}

/// A persistent message's cost beyond CPU for the broker: a journal write and a sync.
fn qmgr_cost() -> GroupCost {
    GroupCost {
        disk_write_bytes_per_tran: Some(4102.4),
        disk_read_bytes_per_tran: Some(0.0),
        write_calls_per_tran: Some(3.002),
        read_calls_per_tran: Some(2.001),
        syncs_per_tran: Some(1.0),
        net_sent_bytes_per_tran: Some(1559.3),
        net_received_bytes_per_tran: Some(1526.3),
        voluntary_switches_per_tran: Some(5.737),
        involuntary_switches_per_tran: Some(0.529),
        rss_bytes: Some(129_347_584.0),
        peak_rss_bytes: Some(149_671_936.0),
        rss_growth_bytes_per_tran: Some(34.8),
    }
}

fn fixed_report() -> Report {
    report_of(Integrity {
        sent: 1000,
        received: 1000,
        matched: 1000,
        ..Default::default()
    })
}

/// The fixed report of a run whose books were `integrity`.
fn report_of(integrity: Integrity) -> Report {
    let cfg = RunOptions {
        count: Some(1000),
        tasks: 2,
        msg_size: Some(630),
        label: Some("snapshot".into()),
        ..RunOptions::on("amqp://guest:secret@mq.example:5672/%2f")
    }
    .build()
    .expect("config");
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("histogram");
    for i in 0..1000u64 {
        h.record(200_000 + (i % 100) * 1_000).expect("record");
    }
    let start = chrono::Utc
        .with_ymd_and_hms(2026, 11, 30, 7, 0, 0)
        .single()
        .expect("time");
    let outcome = Outcome {
        status: Status::Completed,
        start,
        end: start + chrono::Duration::milliseconds(250),
        elapsed: Duration::from_millis(250),
        cleared: 0,
        store: None,
        broker: None,
        integrity,
        round_trip_ns: h.clone(),
        per_task_matched: vec![500, 500],
        interruptions: Vec::new(),
        error: None,
        rounds: vec![Round {
            elapsed: Duration::from_millis(250),
            integrity,
            round_trip_ns: h.clone(),
        }],
        probed: None,
        late_for_start_s: None,
    };
    let table = CpuTable {
        processes: vec![
            process("QMGR", "beam.smp", 4711, 41.20, 12.07, 41.0),
            process("FLOW", "sample-flow", 4800, 20.10, 15.60, 27.5),
            process("DRIVER", "oemputx", 4900, 22.00, 19.00, 31.5),
        ],
        groups: vec![
            GroupRow { cost: qmgr_cost(), ..group("QMGR", 41.20, 12.07, 41.0, 1) },
            group("FLOW", 20.10, 15.60, 27.5, 1),
            group("DRIVER", 22.00, 19.00, 31.5, 1),
        ],
        captured_us_per_tran: 129.97,
        capture_ratio: Some(CaptureRatio { value: 0.93, source: "measured".into(), tasks_cpu_s: Some(0.1386), busy_s: Some(0.149), measured_value: Some(0.93), sigma: Some(0.004), tasks_source: Some(TasksSource::CgroupV1Root), irq_s: Some(0.0104), steal_s: Some(0.0), unaccounted_share: Some(0.0002), note: None }),
        corrected_us_per_tran: Some(129.97 / 0.93),
        other_cpu: OtherCpu { us_per_tran: 2.5, short_lived_us_per_tran: Some(0.3), top: vec![OtherProcess { name: "redis-server".into(), pid: 2225, us_per_tran: 1.2 }] },
        info: AccountingInfo {
            cpu_source: Some(CpuSource::Exact),
            tick_s: 0.004,
            tick_source: "CONFIG_HZ=250".into(),
            steal_s: 0.0,
            snapshot_cpu_s: 0.0018,
            snapshot_share_pct: 1.38,
            verdict: "waiting: a round trip takes 249.5 us but the measured processes spend 130.0 us of CPU on it".into(),
            load: None,
            host_load: Some(HostLoad::classify(host_load::Window { cpus: 2, elapsed_s: 0.25, run_s: 0.13, other_s: 0.0025, idle_s: 0.3575, steal_s: 0.0, counts_short_lived: true })),
            warnings: vec![],
            error: None,
            hosts: vec![],
            beyond_cpu: Some(BeyondInfo {
                syncs: "perf counters on the tracepoints syscalls:sys_enter_{fsync,fdatasync,sync_file_range,msync}, per thread".into(),
                network: "TCP_INFO (bytes_sent, bytes_received) of each socket a member holds, from sock_diag".into(),
                notes: vec![],
            }),
        },
    };
    let round = |n: usize, rate: f64, cpu: f64| RoundRow {
        round: n,
        transactions: 1000,
        elapsed_s: 1000.0 / rate,
        rate_tps: rate,
        round_trip_us: Latency::of(&h),
        app_cpu_us_per_tran: Some(cpu),
        captured_us_per_tran: Some(cpu * 3.0),
        corrected_us_per_tran: Some(cpu * 3.0 / 0.93),
        groups: vec![RoundGroup {
            name: "QMGR".into(),
            total_us_per_tran: cpu * 1.3,
            cost: GroupCost::default(),
        }],
    };
    let rounds = vec![
        round(1, 4000.0, 41.0),
        round(2, 4100.0, 40.0),
        round(3, 3900.0, 44.0),
    ];
    let mut r = Report::build(
        &cfg,
        Measured {
            outcome: &outcome,
            app_cpu: Some(Duration::from_millis(41)),
            app_cpu_source: "process CPU clock (ns, all threads)".into(),
            table: Some(table),
            accounting_error: None,
            rounds,
            profile: None,
            serving: None,
            silence: None,
        },
    );
    // Pinned: Report::build takes the checkout's HEAD (or CI's GITHUB_SHA), which changed
    // the TSV and CSV snapshots with every commit.
    r.commit = Some("0123456789abcdef0123456789abcdef01234567".into());
    r.host = Host {
        hostname: "snapshot-host".into(),
        cpus: 2,
        cpu_model: Some("Test CPU".into()),
        kernel: "6.18.0".into(),
        clk_tck: Some(100),
        kernel_hz: Some(250),
        irq_time_accounting: Some(false),
    };
    r
}

#[test]
fn replies_that_are_all_duplicates_or_strays_are_warned_about() {
    let cases = [
        (
            Integrity {
                sent: 1000,
                received: 2000,
                matched: 1000,
                duplicates: 1000,
                ..Default::default()
            },
            "1000 duplicate replies for 1000 matched",
        ),
        (
            Integrity {
                sent: 1000,
                received: 1000,
                unmatched: 400,
                duplicates: 600,
                timed_out: 1000,
                ..Default::default()
            },
            "none of the 1000 replies received answered a request of this run",
        ),
    ];
    for (integrity, says) in cases {
        let text = export::text::render(&report_of(integrity));
        assert!(text.contains(says), "{says}:\n{text}");
    }
    // A few duplicates among many matched replies are warned about too: each is work
    // done twice (issue 30, item 15).
    let text = export::text::render(&report_of(Integrity {
        sent: 1000,
        received: 1003,
        matched: 1000,
        duplicates: 3,
        ..Default::default()
    }));
    assert!(
        text.contains(
            "3 duplicate replies for 1000 matched: the flow answered some requests more than once"
        ),
        "{text}"
    );
}

#[test]
fn text_layout() {
    insta::assert_snapshot!(export::text::render(&fixed_report()));
}

#[test]
fn round_trips_of_seconds_keep_their_columns_apart() {
    // At a second and more (1,000,000 us) the columns ran together: "2465.81013973.0"
    // (issue 19, item 9).
    let mut r = fixed_report();
    r.round_trip_us = Latency {
        mean: 900_000.0,
        min: 2465.8,
        p50: 1_013_973.0,
        p90: 1_500_000.0,
        p99: 12_345_678.9,
        p999: 12_345_678.9,
        max: 98_765_432.1,
    };
    let text = export::text::render(&r);
    let header = text
        .lines()
        .position(|l| l.starts_with("Round trip (us)"))
        .expect("latency table");
    let lines: Vec<&str> = text.lines().collect();
    let values: Vec<&str> = lines[header + 1].split_whitespace().collect();
    assert_eq!(
        values,
        [
            "2465.8",
            "1013973.0",
            "1500000.0",
            "12345678.9",
            "12345678.9",
            "98765432.1"
        ]
    );
    // Each value ends under its column's name.
    for (name, value) in ["min", "p50", "p90", "p99", "p99.9", "max"]
        .iter()
        .zip(&values)
    {
        let name_end = lines[header].find(name).expect("name") + name.len();
        let value_end = lines[header + 1].find(value).expect("value") + value.len();
        if *name != "p99.9" {
            assert_eq!(
                name_end,
                value_end,
                "{name}\n{}\n{}",
                lines[header],
                lines[header + 1]
            );
        }
    }
}

#[test]
fn tsv_layout() {
    let f = Format {
        delimiter: b'\t',
        decimal_comma: false,
    };
    insta::assert_snapshot!(export::delimited::render(&fixed_report(), f).expect("tsv"));
}

#[test]
fn csv_layout_for_decimal_comma_locales() {
    let f = Format {
        delimiter: b';',
        decimal_comma: true,
    };
    insta::assert_snapshot!(export::delimited::render(&fixed_report(), f).expect("csv"));
}

#[test]
fn markdown_layout() {
    insta::assert_snapshot!(export::markdown::render(&fixed_report()));
}
