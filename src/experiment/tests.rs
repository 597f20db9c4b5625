//! The engine fed synthetic rounds: its bookkeeping, its stopping, and (in smaller numbers
//! than `cargo bench --bench experiment` runs) its error rates.

use super::sim::{Case, Noise, false_verdicts, run, tally};
use super::*;

fn spec(name: &str, rule: Rule) -> MetricSpec {
    MetricSpec {
        name: name.into(),
        higher_is_worse: true,
        rule,
        floor: 0.0,
        adjusted: true,
    }
}

fn design(arms: usize, rule: Rule) -> Design {
    Design {
        arms,
        contrasts: (1..arms).map(|i| (0, i)).collect(),
        metrics: vec![spec("FLOW", rule)],
        control: false,
        cycles_per_block: 2,
        alpha: 0.10,
        max_blocks: 30,
        precision: None,
        stop_on_worse: false,
    }
}

fn figures(v: &[f64]) -> Vec<Figures> {
    v.iter()
        .map(|&x| Figures {
            values: vec![Some(x)],
            control: None,
        })
        .collect()
}

#[test]
fn designs_that_cannot_run_are_refused() {
    let d = design(2, Rule::Gate { tolerance: 0.02 });
    assert_eq!(
        Experiment::new(Design {
            arms: 1,
            ..d.clone()
        })
        .err(),
        Some(DesignError::TooSmall)
    );
    assert_eq!(
        Experiment::new(Design {
            contrasts: vec![(0, 0)],
            ..d.clone()
        })
        .err(),
        Some(DesignError::BadContrast(0))
    );
    let mut e = Experiment::new(d).expect("runs");
    assert_eq!(e.record(figures(&[1.0])), Err(DesignError::BadFigures));
}

#[test]
fn cycles_follow_the_balanced_order_and_close_blocks() {
    let mut e = Experiment::new(design(3, Rule::Gate { tolerance: 0.02 })).expect("runs");
    let first: Vec<usize> = e.order().to_vec();
    assert_eq!(first.len(), 3);
    assert!(!e.record(figures(&[100.0, 100.0, 100.0])).expect("cycle"));
    assert_ne!(
        e.order(),
        first.as_slice(),
        "the next cycle takes the next row"
    );
    assert!(e.record(figures(&[100.0, 100.0, 100.0])).expect("cycle"));
    assert_eq!((e.cycles(), e.blocks()), (2, 1));
    assert!(!e.look_due());
}

#[test]
fn every_arm_begins_a_block_equally_often_and_every_row_is_taken_equally_often() {
    for arms in 2..=8 {
        for per_block in 1..=10 {
            let mut e = Experiment::new(Design {
                cycles_per_block: per_block,
                max_blocks: 1000,
                ..design(arms, Rule::Gate { tolerance: 0.02 })
            })
            .expect("runs");
            let rows = order::williams(arms);
            let mut first = vec![0usize; arms];
            let mut taken = vec![0usize; rows.len()];
            // One full period: as many blocks as the design has rows.
            for _ in 0..rows.len() * per_block {
                let o = e.order().to_vec();
                if e.cycles().is_multiple_of(per_block) {
                    first[o[0]] += 1;
                }
                taken[rows.iter().position(|r| *r == o).expect("a row")] += 1;
                e.record(figures(&vec![100.0; arms])).expect("cycle");
            }
            assert!(
                first.iter().all(|&n| n == first[0]),
                "{arms} arms, blocks of {per_block}: first after a restart {first:?}"
            );
            assert!(
                taken.iter().all(|&n| n == per_block),
                "{arms} arms, blocks of {per_block}: rows taken {taken:?}"
            );
        }
    }
}

#[test]
fn a_clear_change_is_found_and_a_missing_figure_is_counted_not_paired() {
    let mut e = Experiment::new(Design {
        stop_on_worse: true,
        ..design(2, Rule::Gate { tolerance: 0.02 })
    })
    .expect("runs");
    for c in 0..40 {
        let wobble = 1.0 + 0.01 * ((c * 7 % 5) as f64 - 2.0);
        let b = if c == 3 { None } else { Some(110.0 * wobble) };
        e.record(vec![
            Figures {
                values: vec![Some(100.0 * wobble)],
                control: None,
            },
            Figures {
                values: vec![b],
                control: None,
            },
        ])
        .expect("cycle");
        if e.look_due() && e.cycles().is_multiple_of(2) {
            e.look(false);
            if e.done() {
                break;
            }
        }
    }
    let o = &e.outcomes()[0];
    assert_eq!(o.finding, Some(Finding::Worse), "{o:?}");
    assert_eq!(o.skipped, 1);
    assert!(
        o.interval.is_some_and(|i| (i.ratio - 1.1).abs() < 0.01),
        "{o:?}"
    );
    assert!(
        o.decided_after
            .is_some_and(|n| (FIRST_LOOK..=20).contains(&n)),
        "{o:?}"
    );
}

#[test]
fn a_floor_keeps_a_tiny_group_from_reporting_a_large_relative_change() {
    // A group at 0.01 µs/tran that "doubles": 0.01 µs is below a 0.5 µs floor.
    let mut d = design(2, Rule::Difference { min_effect: 0.01 });
    d.metrics[0].floor = 0.5;
    let mut e = Experiment::new(d).expect("runs");
    for c in 0..(2 * 12) {
        let w = 1.0 + 0.001 * (c % 3) as f64;
        e.record(figures(&[0.01 * w, 0.02 * w])).expect("cycle");
        if e.look_due() && e.cycles().is_multiple_of(2) {
            e.look(false);
        }
    }
    let o = &e.outcomes()[0];
    assert_ne!(o.finding, Some(Finding::Worse), "{o:?}");
    assert!(o.rule.threshold() >= 49.0, "{:?}", o.rule);
}

#[test]
fn the_precision_target_stops_a_metric_without_a_finding() {
    let mut d = design(2, Rule::Difference { min_effect: 0.0 });
    d.precision = Some(0.05);
    let mut e = Experiment::new(d).expect("runs");
    let mut stopped = false;
    for c in 0..200 {
        let w = 1.0 + 0.01 * ((c * 13 % 7) as f64 - 3.0);
        e.record(figures(&[100.0 * w, 100.0 / w])).expect("cycle");
        if e.look_due() && e.cycles().is_multiple_of(2) {
            e.look(false);
            if e.done() {
                stopped = true;
                break;
            }
        }
    }
    assert!(stopped);
    let o = &e.outcomes()[0];
    assert!(o.precise && o.finding.is_none(), "{o:?}");
    assert!(o.interval.is_some_and(|i| half_width(&i) <= 0.05));
}

#[test]
fn the_median_interval_comes_from_order_statistics() {
    let v: Vec<f64> = (1..=20).map(f64::from).collect();
    let s = median_interval(&v, 0.05).expect("summary");
    // n = 20 at 95 %: k = 6, [x(6), x(15)].
    assert_eq!((s.median, s.low, s.high, s.rounds), (10.5, 6.0, 15.0, 20));
    let few = median_interval(&[3.0, 1.0, 2.0], 0.05).expect("summary");
    assert_eq!((few.low, few.high), (1.0, 3.0));
    assert!(median_interval(&[], 0.05).is_none());
}

fn aa(arms: usize, noise: Noise) -> Case {
    Case {
        arms,
        effects: vec![0.0; arms],
        noise,
        rule: Rule::Difference { min_effect: 0.01 },
        cycles_per_block: 2,
        max_blocks: 24,
        alpha: 0.10,
        control: true,
    }
}

#[test]
fn simulated_aa_runs_rarely_call_a_difference() {
    // 200 runs a case here; the bench runs 1,000. At most 5 % may be false verdicts.
    for (arms, noise) in [
        (2, Noise::measured()),
        (5, Noise::measured()),
        (2, Noise::calm()),
    ] {
        let false_ = false_verdicts(&aa(arms, noise), 200, 0x5eed);
        assert!(false_ <= 10, "{arms} arms: {false_} of 200");
    }
}

#[test]
fn a_five_percent_change_is_found_and_estimated_near_its_size() {
    let mut case = aa(2, Noise::measured());
    case.effects = vec![0.0, 0.05];
    let t = tally(&case, 100, 0xfeed);
    assert!(t[0][0] >= 80, "{t:?}");
    let r = run(&case, 42);
    assert!((r.estimates[0] - 0.05).abs() < 0.03, "{r:?}");
}

#[test]
fn a_decided_change_goes_on_narrowing_while_the_run_goes_on() {
    // +4 % in the first blocks, +3 % after: decided early, then every later
    // block joins the estimate and narrows the deciding interval.
    let mut e = Experiment::new(Design {
        max_blocks: 30,
        ..design(2, Rule::Difference { min_effect: 0.01 })
    })
    .expect("runs");
    e.plan(30);
    let mut deciding = None;
    for c in 0..60 {
        let wobble = 1.0 + 0.01 * ((c * 7 % 5) as f64 - 2.0) / 2.0;
        let change = if c < 16 { 1.04 } else { 1.03 };
        if e.record(figures(&[100.0, 100.0 * change * wobble]))
            .expect("cycle")
            && e.look_due()
        {
            let look = e.look(e.blocks() == 30);
            if deciding.is_none() && look.items[0].decided.is_some() {
                deciding = look.items[0].interval.map(|i| (i, e.blocks()));
            }
        }
    }
    let (deciding, after) = deciding.expect("decided");
    let o = &e.outcomes()[0];
    let i = o.interval.expect("an interval");
    assert_eq!(
        (o.finding, o.decided_after),
        (Some(Finding::Worse), Some(after))
    );
    assert!(
        after < 20,
        "decided while the change was +4 %: after {after} blocks"
    );
    assert_eq!(i.pairs, 30, "every block is in the estimate");
    assert!(
        i.low >= deciding.low && i.high <= deciding.high,
        "{i:?} within {deciding:?}"
    );
    assert!(i.high < deciding.high, "narrowed: {i:?} from {deciding:?}");
    assert!(
        (i.ratio - 1.03).abs() < (deciding.ratio - 1.03).abs(),
        "nearer +3 %: {i:?} against {deciding:?}"
    );
    assert!(i.low <= i.ratio && i.ratio <= i.high);
}

/// A sweep's ratio stopped at its precision while its interval still straddled the minimum
/// effect is judged again at later looks (the run goes on for the other metric): once the
/// narrowed interval lies beyond the minimum effect it is a finding, not "no difference".
#[test]
fn a_metric_stopped_at_its_precision_is_judged_again_on_its_narrowed_interval() {
    let rule = Rule::Difference { min_effect: 0.02 };
    let mut d = design(2, rule);
    d.metrics.push(spec("noisy", rule));
    d.precision = Some(0.02);
    d.max_blocks = 60;
    let mut e = Experiment::new(d).expect("runs");
    e.plan(60);
    let (mut precise_at, mut found_at) = (None, None);
    for c in 0..400usize {
        // Metric 0: +3 % with a ±4 % spread; metric 1: a spread too wide to settle soon.
        let small = 1.0 + 0.04 * ((c * 7 % 5) as f64 - 2.0) / 2.0;
        let wide = 1.0 + 0.3 * ((c * 5 % 7) as f64 - 3.0) / 3.0;
        let base = Figures {
            values: vec![Some(100.0), Some(100.0)],
            control: None,
        };
        let other = Figures {
            values: vec![Some(103.0 * small), Some(100.0 * wide)],
            control: None,
        };
        if e.record(vec![base, other]).expect("cycle") && e.look_due() {
            let look = e.look(false);
            match look.items[0].decided {
                Some(None) if precise_at.is_none() => precise_at = Some(e.blocks()),
                Some(Some(f)) if found_at.is_none() => found_at = Some((e.blocks(), f)),
                _ => {}
            }
            if found_at.is_some() {
                break;
            }
        }
    }
    let precise_at = precise_at.expect("stopped at its precision first, without a finding");
    let (found_at, finding) = found_at.expect("judged again later");
    assert!(found_at > precise_at, "{precise_at} then {found_at}");
    assert_eq!(finding, Finding::Worse);
    let o = &e.outcomes()[0];
    assert_eq!(
        (o.finding, o.decided_after),
        (Some(Finding::Worse), Some(found_at))
    );
    let i = o.interval.expect("an interval");
    assert!(i.low > 1.02, "{i:?}");
}
