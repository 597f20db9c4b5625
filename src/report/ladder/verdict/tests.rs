//! The ladder's conclusions on constructed steps, each figure worked out by hand.

use super::super::{LadderEnd, Limiter, Phase, Step, StepGroup};
use super::*;
use crate::driver::Status;

/// A paced step at `offered` that achieved `achieved`, p50/mean `p50` µs, costing `cost`
/// µs/msg (FLOW 60 % of it, DRIVER 10 %), with `idle` CPUs idle.
fn step(n: usize, offered: f64, achieved: f64, p50: f64, cost: f64, idle: f64) -> Step {
    let holds = achieved >= super::super::KEEP_UP * offered;
    let group = |name: &str, share: f64| StepGroup {
        name: name.into(),
        host: "local".into(),
        us_per_tran: cost * share,
        low_us_per_tran: Some(cost * share * 0.98),
        high_us_per_tran: Some(cost * share * 1.02),
        cores: cost * share * achieved / 1e6,
    };
    Step {
        step: n,
        phase: Phase::Listed,
        offered_tps: Some(offered),
        tasks: 4,
        repeat_of: None,
        status: Status::Completed,
        start_utc: String::new(),
        end_utc: String::new(),
        transactions: (achieved * 10.0) as u64,
        elapsed_s: 10.0,
        achieved_tps: achieved,
        mean_us: p50,
        p50_us: p50,
        p90_us: p50 * 1.5,
        p99_us: p50 * 3.0,
        p999_us: p50 * 5.0,
        slo_us: vec![],
        backlog_growth: 0.0,
        backlog_end: 0.0,
        holds,
        why: if holds {
            vec![]
        } else {
            vec![format!(
                "it kept {achieved:.0} of the {offered:.0} msg/s offered"
            )]
        },
        captured_us_per_tran: Some(cost),
        corrected_us_per_tran: Some(cost),
        corrected_low_us_per_tran: Some(cost * 0.98),
        corrected_high_us_per_tran: Some(cost * 1.02),
        capture_ratio: Some(1.0),
        groups: vec![group("FLOW", 0.6), group("DRIVER", 0.1)],
        host_idle_cpus: Some(idle),
        host_state: None,
        drift: None,
    }
}

/// 100, 200, 400 held; 800 did not (4 tasks answered 600/s, each request 6.7 ms in the
/// system against 1 ms unloaded: queued); the bisection: 566 held, 673 did not, 617 held.
fn bisected() -> Vec<Step> {
    vec![
        step(1, 100.0, 100.0, 1000.0, 900.0, 1.5),
        step(2, 200.0, 199.9, 1100.0, 700.0, 1.4),
        step(3, 400.0, 399.0, 1200.0, 500.0, 1.2),
        step(4, 800.0, 600.0, 6600.0, 400.0, 1.0),
        step(5, 566.0, 565.0, 1500.0, 450.0, 1.1),
        step(6, 673.0, 601.0, 6000.0, 420.0, 1.0),
        step(7, 617.0, 612.0, 2500.0, 430.0, 1.0),
    ]
}

/// A step's settings as a saved report has them.
fn settings() -> crate::report::Settings {
    serde_json::from_value(serde_json::json!({
        "transport": "amqp", "qmgr": "amqp://guest:***@127.0.0.1:5672/%2f", "profile": null,
        "request_queue": "Q", "reply_queue": null, "clear_reply_queue": true,
        "message_source": "generated", "messages_in_rotation": 1, "msg_bytes_min": 100,
        "msg_bytes_max": 100, "persistent": false, "syncpoint": false, "msgs_per_loop": 1,
        "tasks": 4, "count": null, "duration_s": 2.0, "wait_s": 60.0, "match": "correl",
        "warmup": 0, "rate_limit_tps": null, "max_timeouts": null
    }))
    .expect("settings")
}

fn ladder(steps: Vec<Step>) -> Ladder {
    Ladder {
        schema: super::super::SCHEMA.into(),
        tool: crate::report::Tool {
            name: "oemputx".into(),
            version: "test".into(),
        },
        label: "t".into(),
        commit: None,
        start_utc: String::new(),
        end_utc: String::new(),
        elapsed_s: 0.0,
        settings: settings(),
        rates_asked: "auto".into(),
        step_time_s: 10.0,
        windows_per_step: 5,
        settle_s: 1.0,
        slo: vec![],
        tasks_auto: false,
        steps,
        max_sustainable_tps: None,
        max_sustainable_low_tps: None,
        max_sustainable_high_tps: None,
        limited_by: None,
        limited_why: None,
        knee_tps: None,
        answer: String::new(),
        capacity: vec![],
        capacity_at: vec![],
        price_per_vcpu_hour: Some(0.05),
        end: LadderEnd::Completed,
        end_detail: None,
        warnings: vec![],
        host: crate::report::Host {
            hostname: "h".into(),
            cpus: 2,
            cpu_model: None,
            kernel: String::new(),
            clk_tck: None,
            kernel_hz: None,
            irq_time_accounting: None,
        },
    }
}

#[test]
fn the_top_is_the_highest_rate_that_held_and_the_interval_reaches_the_lowest_that_did_not() {
    assert_eq!(top(&bisected()), (Some(617.0), Some(673.0)));
    // A repeat of 617 that fails takes it back: 617 disagrees with itself, so 566 is the
    // top and 673 (failed every time) bounds it; a third measurement that fails decides.
    let mut s = bisected();
    let mut again = step(8, 617.0, 590.0, 5000.0, 430.0, 1.0);
    again.phase = Phase::Repeat;
    again.repeat_of = Some(7);
    s.push(again);
    assert_eq!(top(&s), (Some(566.0), Some(673.0)));
    s.push(step(9, 617.0, 580.0, 5000.0, 430.0, 1.0));
    assert_eq!(top(&s), (Some(566.0), Some(617.0)));
    // The lowest rate's repeat failing by chance takes nothing back but itself.
    let mut s = bisected();
    let mut low = step(8, 100.0, 90.0, 1000.0, 900.0, 1.5);
    low.repeat_of = Some(1);
    s.push(low);
    assert_eq!(top(&s), (Some(617.0), Some(673.0)));
    // Nothing held; everything held.
    assert_eq!(
        top(&[step(1, 900.0, 500.0, 1.0, 1.0, 1.0)]),
        (None, Some(900.0))
    );
    assert_eq!(top(&bisected()[..3]), (Some(400.0), None));
}

#[test]
fn the_curve_has_one_point_a_rate_the_one_that_counts() {
    let mut s = bisected();
    let mut more = step(8, 800.0, 640.0, 6000.0, 400.0, 1.0);
    more.phase = Phase::MoreTasks;
    s.push(more);
    let mut again = step(9, 100.0, 100.0, 1000.0, 950.0, 1.5);
    again.repeat_of = Some(1);
    s.push(again);
    let points: Vec<(f64, usize)> = curve(&s)
        .iter()
        .map(|x| (x.offered_tps.unwrap_or(0.0), x.step))
        .collect();
    assert_eq!(
        points,
        [
            (100.0, 1),
            (200.0, 2),
            (400.0, 3),
            (566.0, 5),
            (617.0, 7),
            (673.0, 6),
            (800.0, 8)
        ]
    );
}

#[test]
fn a_rate_measured_again_with_more_tasks_counts_by_its_new_measurement() {
    let mut s = bisected()[..3].to_vec();
    s.push(step(4, 800.0, 300.0, 1000.0, 400.0, 1.5));
    let mut more = step(5, 800.0, 799.0, 1300.0, 400.0, 1.0);
    more.phase = Phase::MoreTasks;
    more.tasks = 8;
    s.push(more);
    assert_eq!(top(&s), (Some(800.0), None));
}

#[test]
fn what_limited_the_step_is_the_host_the_driver_or_the_flow_by_hand() {
    let r0 = unloaded_round_trip_us(&bisected());
    // The least p50 of the steps that held.
    assert_eq!(r0, Some(1000.0));
    // 673 msg/s offered, 601 achieved by 4 tasks: 4 ÷ 601 = 6.66 ms in the system ≥ 1.5 ms.
    let failed = &bisected()[5];
    let ev = |r0| Evidence {
        unloaded_us: r0,
        ..Evidence::default()
    };
    let (by, why) = diagnose(failed, ev(r0), 2, 1);
    assert_eq!(by, Limiter::Flow, "{why}");
    assert!(why.contains("6.7 ms") && why.contains("1.0 ms"), "{why}");
    // The same with 0.1 of 2 CPUs idle: below 10 % of the machine.
    let mut full = failed.clone();
    full.host_idle_cpus = Some(0.1);
    assert_eq!(diagnose(&full, ev(r0), 2, 1).0, Limiter::Host);
    // 900 offered, 1 task achieving 800/s: 1.25 ms each, under 1.5 × 1 ms: nothing queued.
    let mut lone = failed.clone();
    lone.tasks = 1;
    lone.offered_tps = Some(900.0);
    lone.achieved_tps = 800.0;
    let (by, why) = diagnose(&lone, ev(r0), 2, 1);
    assert_eq!(by, Limiter::Driver, "{why}");
    assert!(why.contains("--tasks auto"), "{why}");
    // Measured instead: 8 tasks got 810/s where 4 got 800 (+1 %): more tasks did not help.
    let mut more = lone.clone();
    more.tasks = 8;
    more.achieved_tps = 810.0;
    let helped = |fewer| Evidence {
        unloaded_us: r0,
        fewer_tasks: Some((4, fewer)),
        ..Evidence::default()
    };
    let (by, why) = diagnose(&more, helped(800.0), 2, 1);
    assert_eq!(by, Limiter::Flow, "{why}");
    assert!(
        why.contains("8 tasks got 810 msg/s where 4 got 800"),
        "{why}"
    );
    // 8 tasks got 810/s where 4 got 600 (+35 %): they did, and the cap was reached.
    assert_eq!(diagnose(&more, helped(600.0), 2, 1).0, Limiter::Driver);
    // One task that got 950/s unpaced could offer 900: not the driver, whatever Little says.
    let reached = Evidence {
        unloaded_us: r0,
        tasks_reached: Some((1, 950.0)),
        ..Evidence::default()
    };
    let (by, why) = diagnose(&lone, reached, 2, 1);
    assert_eq!(by, Limiter::Flow, "{why}");
    assert!(why.contains("got 950 msg/s through at step 1"), "{why}");
}

#[test]
fn the_knee_is_where_throughput_per_round_trip_peaks() {
    // Power: 100/1000, 199.9/1100, 399/1200 = 0.3325, 600/6600, 565/1500 = 0.377,
    // 601/6000, 612/2500 = 0.245: the largest at 566.
    assert_eq!(knee(&bisected()), Some(566.0));
    assert_eq!(knee(&bisected()[..2]), None);
}

#[test]
fn a_repeat_that_costs_more_than_its_interval_and_five_percent_is_flagged() {
    let mut s = bisected();
    let mut again = step(8, 100.0, 100.0, 1000.0, 1010.0, 1.5);
    again.phase = Phase::Repeat;
    again.repeat_of = Some(1);
    s.push(again);
    let w = drift(&mut s);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("step 8 (a repeat of step 1 at 100 msg/s)") && w[0].contains("+12.2 %"),
        "{w:?}"
    );
    assert!(s[7].drift.is_some());
    // 3 % apart with ±2 % intervals: not flagged.
    let mut s = bisected();
    let mut again = step(8, 100.0, 100.0, 1000.0, 927.0, 1.5);
    again.repeat_of = Some(1);
    s.push(again);
    assert!(drift(&mut s).is_empty());
}

#[test]
fn capacity_is_measured_at_each_rate_that_held_and_interpolated_never_extrapolated() {
    let rows = capacity(&bisected(), Some(0.05));
    let rates: Vec<f64> = rows.iter().map(|r| r.offered_tps).collect();
    assert_eq!(rates, [100.0, 200.0, 400.0, 566.0, 617.0]);
    // At 100 msg/s: 900 µs/msg corrected, 90 of it the driver's: 810 × 100 ÷ 10^6.
    let first = &rows[0];
    assert!(
        (first.corrected_cores.expect("cores") - 0.081).abs() < 1e-12,
        "{first:?}"
    );
    let flow = first
        .groups
        .iter()
        .find(|g| g.name == "FLOW")
        .expect("FLOW");
    assert!((flow.cores - 0.054).abs() < 1e-12);
    // A million messages at 810 µs and 0.05 a vCPU-hour: 810 × 0.05 ÷ 3600.
    assert!((first.cost_per_million.expect("price") - 810.0 * 0.05 / 3600.0).abs() < 1e-12);
    // Halfway between 100 (0.081) and 200 (630 × 199.9 ÷ 10^6 = 0.125937).
    let mid = cores_at(&rows, 150.0).expect("between two rates");
    assert!((mid - (0.081 + 0.125937) / 2.0).abs() < 1e-9, "{mid}");
    assert_eq!(cores_at(&rows, 50.0), None);
    assert_eq!(cores_at(&rows, 700.0), None);
    // Every figure interpolated, the price too; at a measured rate, the measurement.
    let at = capacity_at(&rows, 150.0).expect("between two rates");
    let flow = |r: &CapacityRow| r.groups.iter().find(|g| g.name == "FLOW").map(|g| g.cores);
    let (f100, f200) = (flow(&rows[0]).expect("FLOW"), flow(&rows[1]).expect("FLOW"));
    assert!((flow(&at).expect("FLOW") - (f100 + f200) / 2.0).abs() < 1e-12);
    assert_eq!(capacity_at(&rows, 200.0).as_ref(), Some(&rows[1]));
    let asked = capacity_asked(&rows, &[150.0, 700.0, 50.0]);
    assert!(asked[0].row.is_some() && asked[0].note.is_none());
    assert_eq!(
        asked[1].note.as_deref(),
        Some("past the highest rate that held (617 msg/s): not extrapolated")
    );
    assert!(
        asked[2]
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("below the lowest"))
    );
    assert_eq!(
        capacity_asked(&[], &[10.0])[0].note.as_deref(),
        Some("no rate held: nothing to interpolate")
    );
}

#[test]
fn the_answer_says_the_top_its_interval_what_limits_and_how_the_cost_moves() {
    let mut l = ladder(bisected());
    conclude(&mut l, 1);
    assert_eq!(l.max_sustainable_tps, Some(617.0));
    assert_eq!(
        (l.max_sustainable_low_tps, l.max_sustainable_high_tps),
        (Some(617.0), Some(673.0))
    );
    assert_eq!(l.limited_by, Some(Limiter::Flow));
    assert_eq!(l.knee_tps, Some(566.0));
    assert!(
        l.answer.starts_with(
            "sustains 617 msg/s [617, 673]; the flow limits (at 673 msg/s it kept 601"
        ),
        "{}",
        l.answer
    );
    assert!(
        l.answer
            .ends_with("cost falls from 900 µs/msg at 100 msg/s to 430 at 617"),
        "{}",
        l.answer
    );
    let mut none = ladder(vec![step(1, 900.0, 500.0, 1.0, 1.0, 1.0)]);
    conclude(&mut none, 1);
    assert!(
        none.answer.contains("even 900 msg/s did not hold"),
        "{}",
        none.answer
    );
}

#[test]
fn a_step_that_keeps_the_rate_but_misses_its_slo_does_not_hold_and_says_so() {
    use crate::config::ladder::Slo;
    let mut s = step(1, 400.0, 399.0, 1200.0, 500.0, 1.2);
    let slo = [Slo {
        percentile: 99.0,
        limit_us: 3000.0,
    }];
    // p99 3,600 µs against 3 ms: only the objective fails.
    s.slo_us = vec![3600.0];
    assert_eq!(
        s.reasons_not_held(&slo, None, 2.0),
        ["p99 was 3.6 ms (the SLO is p99 ≤ 3ms)"]
    );
    s.slo_us = vec![2900.0];
    assert!(s.reasons_not_held(&slo, None, 2.0).is_empty());
    // Held the rate, missed the objective: the flow, not the driver.
    s.slo_us = vec![3600.0];
    s.holds = false;
    let (by, why) = diagnose(&s, Evidence::default(), 2, 1);
    assert_eq!(by, Limiter::Flow);
    assert!(why.contains("latency objective"), "{why}");
    // A backlog's trend of 1.7 requests a second over windows of 0.4 s at 12.5 msg/s adds
    // up to less than a request: noise; of 20 a second over 2 s, growth.
    s.slo_us = vec![2900.0];
    s.offered_tps = Some(12.5);
    s.achieved_tps = 12.5;
    s.backlog_growth = 1.7;
    assert!(s.reasons_not_held(&slo, None, 0.4).is_empty());
    s.backlog_growth = 20.0;
    assert!(s.reasons_not_held(&slo, None, 2.0)[0].starts_with("its backlog grew 20"));
}

#[test]
fn more_tasks_in_vain_at_a_higher_rate_make_a_lower_failure_the_flow_s() {
    // A single-threaded flow of about 1,000 msg/s, 2 tasks (lab/ladder-repeat.sh's first
    // ladder): 1,600 failed with 2 tasks (974) and with 4 (989, +1.6 %), then the bisection
    // failed 1,040 with 2 tasks (986): each took 2.0 ms in the system against 1.6 ms
    // unloaded, which by Little's law alone reads as the driver.
    let mut s = vec![
        step(1, 400.0, 400.0, 1600.0, 1000.0, 1.0),
        step(2, 800.0, 800.0, 1700.0, 1000.0, 1.0),
        step(3, 1600.0, 973.5, 9000.0, 1000.0, 1.0),
        step(4, 1600.0, 988.8, 9000.0, 1000.0, 1.0),
        step(5, 951.0, 950.5, 2000.0, 1000.0, 1.0),
        step(6, 1040.0, 986.3, 9000.0, 1000.0, 1.0),
    ];
    for x in &mut s {
        x.tasks = 2;
    }
    s[3].tasks = 4;
    s[3].phase = Phase::MoreTasks;
    let failed = &s[5];
    let ev = Evidence::of(&s, failed);
    assert_eq!(
        ev.more_tasks_in_vain,
        Some(TasksTried {
            rate: 1600.0,
            fewer: (2, 973.5),
            more: (4, 988.8)
        })
    );
    let (by, why) = diagnose(failed, ev, 2, 1);
    assert_eq!(by, Limiter::Flow, "{why}");
    assert!(
        why.starts_with("at 1,600 msg/s, 4 tasks got 989 msg/s where 2 got 974"),
        "{why}"
    );
    let mut l = ladder(s);
    conclude(&mut l, 1);
    assert_eq!(
        (l.max_sustainable_tps, l.limited_by),
        (Some(951.0), Some(Limiter::Flow))
    );
}
