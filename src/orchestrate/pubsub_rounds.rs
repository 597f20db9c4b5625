//! `oemputx pubsub` as a whole: one window ([`super::pubsub::measure`]), or `--rounds N`
//! of it (the spread of the CPU per message published, the spread a gate would judge), or
//! `--find-capacity` (the rate raised by half each step until a step does not keep up).
//! Each round's or step's line is printed as it ends, so that a long search shows how it
//! goes; the result comes back typed, for the command to write.

use super::pubsub::measure;
use crate::config::pubsub::PubsubConfig;
use crate::pubsub::Broker;
use crate::pubsub::report::{
    BestMedianWorst, CAPACITY_SCHEMA, CapacityStep, PubSubCapacity, PubSubReport, PubSubRounds,
    ROUNDS_SCHEMA,
};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The first rate of a capacity search without --rate, messages a second.
const FIRST_RATE: f64 = 500.0;
/// Each step of a capacity search asks this much more than the last.
const STEP_FACTOR: f64 = 1.5;
/// A capacity search stops after this many steps whatever they did (500 × 1.5¹⁹ ≈ 1.1
/// million a second: past any broker's).
const MAX_STEPS: usize = 20;

/// What `oemputx pubsub` measured: one window, rounds of it, or a capacity search.
#[derive(Debug)]
pub enum PubSubRun {
    // Boxed: a report is several times the size of the other two, which hold theirs in a Vec.
    One(Box<PubSubReport>),
    Rounds(PubSubRounds),
    Capacity(PubSubCapacity),
}

/// The broker the options name, prepared, then what they ask for measured on it.
pub fn run(args: &PubsubConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<PubSubRun> {
    let broker = super::pubsub::broker(args)?;
    broker.prepare()?;
    if args.find_capacity {
        return capacity(args, broker, &interrupt).map(PubSubRun::Capacity);
    }
    if args.rounds > 1 {
        return rounds(args, broker, &interrupt).map(PubSubRun::Rounds);
    }
    let report = measure(args, broker, args.pacing.rate, interrupt)?;
    Ok(PubSubRun::One(Box::new(report)))
}

/// The broker's (first group's) CPU per message published, µs.
fn broker_us(r: &PubSubReport) -> f64 {
    r.cpu_per_published
        .as_ref()
        .and_then(|c| c.groups.first())
        .map_or(f64::NAN, |g| g.total_us_per_tran)
}

/// One line of a step or round: its rates, backlog, drain and CPU per message published.
fn step_line(first: String, r: &PubSubReport, last: &str) -> String {
    format!(
        "{first:>12} {:>12.1} {:>10.1} {:>10} {:>9.3} {:>12.2} {last:>9}",
        r.publish_mps,
        r.subscriber_pace_pct.min,
        r.backlog.max,
        r.drain_s,
        broker_us(r),
    )
}

/// The header of [`step_line`]'s table.
fn step_header(first: &str, last: &str) -> String {
    format!(
        "{first:>12} {:>12} {:>10} {:>10} {:>9} {:>12} {last:>9}",
        "published/s", "pace min %", "backlog", "drain s", "QMGR µs/pub"
    )
}

/// `--rounds N`: the same run N times on `broker`, each round's line as it ends, then
/// best/median/worst of the captured CPU per message published. An interrupted round is
/// the last.
pub fn rounds(
    args: &PubsubConfig,
    broker: Arc<dyn Broker>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<PubSubRounds> {
    crate::outln!(
        "oemputx pubsub on {}: {} rounds of {} messages",
        broker.describe(),
        args.rounds,
        args.plan.count
    );
    crate::outln!("{}", step_header("round", "complete"));
    let mut all = Vec::new();
    for i in 1..=args.rounds {
        let r = measure(args, broker.clone(), args.pacing.rate, interrupt.clone())?;
        let done = if r.complete() { "yes" } else { "no" };
        crate::outln!("{}", step_line(i.to_string(), &r, done));
        let stop = r.interrupted;
        all.push(r);
        if stop {
            crate::outln!("interrupted in round {i}: the rounds after it are not run");
            break;
        }
    }
    let spread = captured_spread(&all);
    if let Some(line) = spread_line(&spread) {
        crate::outln!("{line}");
    }
    Ok(PubSubRounds {
        schema: ROUNDS_SCHEMA,
        captured_us_per_published: spread,
        rounds: all,
    })
}

/// Best, median and worst of the rounds' captured CPU per message published (the rounds
/// without a CPU figure left out; all None when none has one).
fn captured_spread(rounds: &[PubSubReport]) -> BestMedianWorst {
    let mut captured: Vec<f64> = rounds
        .iter()
        .filter_map(|r| r.cpu_per_published.as_ref().map(|c| c.captured_us))
        .collect();
    captured.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        captured
            .get(((captured.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    BestMedianWorst {
        best: pick(0.0),
        median: pick(0.5),
        worst: pick(1.0),
    }
}

/// The rounds' spread as the line after their table, when there is one.
fn spread_line(s: &BestMedianWorst) -> Option<String> {
    let (Some(b), Some(m), Some(w)) = (s.best, s.median, s.worst) else {
        return None;
    };
    Some(format!(
        "Captured CPU per message published: best {b:.2}  median {m:.2}  worst {w:.2} µs ({:.1} % spread)",
        100.0 * (w - b) / m.max(f64::MIN_POSITIVE)
    ))
}

/// A step keeps up when every subscriber got all its messages at ≥ 95 % of its share of
/// the publish rate and the backlog drained within a tenth of the publishing time.
fn sustained(r: &PubSubReport) -> bool {
    r.complete() && r.subscriber_pace_pct.min >= 95.0 && r.drain_s <= 0.1 * r.publishing_s.max(0.1)
}

/// The rate of the step after one at `rate` that ended as `r`: half as much again while
/// steps keep up; none after the first that does not, or an interrupted one.
fn next_rate(rate: f64, r: &PubSubReport) -> Option<f64> {
    (sustained(r) && !r.interrupted).then_some(rate * STEP_FACTOR)
}

/// `--find-capacity` on `broker`: from --rate (or [`FIRST_RATE`]) up by [`STEP_FACTOR`]
/// each step until a step does not keep up; the capacity is the last step that did.
pub fn capacity(
    args: &PubsubConfig,
    broker: Arc<dyn Broker>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<PubSubCapacity> {
    let mut rate = args.pacing.rate.unwrap_or(FIRST_RATE);
    let mut steps: Vec<CapacityStep> = Vec::new();
    crate::outln!(
        "oemputx pubsub --find-capacity on {}: {} messages a step, rate ×1.5 until a step does not keep up",
        broker.describe(),
        args.plan.count
    );
    crate::outln!("{}", step_header("rate asked", "keeps up"));
    for _ in 0..MAX_STEPS {
        let r = measure(args, broker.clone(), Some(rate), interrupt.clone())?;
        let ok = sustained(&r);
        crate::outln!(
            "{}",
            step_line(format!("{rate:.0}"), &r, if ok { "yes" } else { "no" })
        );
        let next = next_rate(rate, &r);
        steps.push(CapacityStep {
            rate_asked: rate,
            sustained: ok,
            report: r,
        });
        match next {
            Some(n) => rate = n,
            None => break,
        }
    }
    let best = steps.iter().rev().find(|s| s.sustained);
    crate::outln!("{}", capacity_line(best));
    Ok(PubSubCapacity {
        schema: CAPACITY_SCHEMA,
        capacity_mps: best.map(|s| s.report.publish_mps),
        steps,
    })
}

/// The search's last line: the highest step that kept up, or that none did.
fn capacity_line(best: Option<&CapacityStep>) -> String {
    match best {
        Some(s) => format!(
            "Capacity: {:.1} messages a second published ({:.0} asked), {} µs of captured CPU per message published",
            s.report.publish_mps,
            s.rate_asked,
            s.report
                .cpu_per_published
                .as_ref()
                .map_or("-".into(), |c| format!("{:.2}", c.captured_us))
        ),
        None => "Capacity: not found: even the first step did not keep up; start lower with --rate"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::pubsub::PubsubOptions;
    use crate::pubsub::memory::{Faults, Memory, MemoryBroker};
    use crate::pubsub::report::PerMessage;
    use std::time::Duration;

    /// A small run's options. Its URL, the embedded queue manager's, names no broker (the
    /// in-memory double is handed in, and names its transport itself).
    fn options(rounds: usize, rate: Option<f64>) -> PubsubConfig {
        PubsubOptions {
            qmgr: "embedded://".into(),
            publishers: 1,
            subscribers: 2,
            symbols: 10,
            select: 5,
            count: 200,
            rate,
            drain_timeout: Duration::from_millis(300),
            no_save: true,
            rounds,
            find_capacity: rounds == 1,
            ..PubsubOptions::default()
        }
        .build()
        .expect("valid options")
    }

    fn memory(faults: Faults) -> Arc<dyn Broker> {
        Arc::new(MemoryBroker(Arc::new(Memory::with_faults(faults))))
    }

    /// One window on the double, faultless: complete, every figure its own.
    fn report() -> PubSubReport {
        let args = options(2, None);
        measure(&args, memory(Faults::default()), None, Arc::default()).expect("a window")
    }

    #[test]
    fn a_step_keeps_up_when_complete_at_pace_and_drained_within_a_tenth_of_publishing() {
        let mut r = report();
        assert!(r.complete());
        r.subscriber_pace_pct.min = 95.0;
        r.publishing_s = 2.0;
        r.drain_s = 0.2;
        assert!(sustained(&r));
        r.drain_s = 0.21;
        assert!(!sustained(&r), "drained too slowly");
        // A short step may take a tenth of 0.1 s to drain, however short it was.
        (r.publishing_s, r.drain_s) = (0.01, 0.01);
        assert!(sustained(&r));
        r.subscriber_pace_pct.min = 94.9;
        assert!(!sustained(&r), "a subscriber fell behind");
        r.subscriber_pace_pct.min = 100.0;
        r.lost = 1;
        assert!(!sustained(&r), "incomplete");
    }

    #[test]
    fn the_search_asks_half_as_much_again_while_steps_keep_up_and_stops_at_the_first_that_does_not()
    {
        let mut r = report();
        (r.subscriber_pace_pct.min, r.publishing_s, r.drain_s) = (100.0, 1.0, 0.0);
        assert_eq!(next_rate(500.0, &r), Some(750.0));
        assert_eq!(next_rate(750.0, &r), Some(1125.0));
        r.drain_s = 0.5;
        assert_eq!(next_rate(1125.0, &r), None);
        r.drain_s = 0.0;
        r.interrupted = true;
        assert_eq!(next_rate(1125.0, &r), None);
    }

    #[test]
    fn step_lines_line_up_under_their_header() {
        let mut r = report();
        (
            r.publish_mps,
            r.subscriber_pace_pct.min,
            r.backlog.max,
            r.drain_s,
        ) = (1234.56, 99.04, 17, 0.0126);
        r.cpu_per_published = None;
        assert_eq!(
            step_header("round", "complete"),
            "       round  published/s pace min %    backlog   drain s  QMGR µs/pub  complete"
        );
        assert_eq!(
            step_line("3".into(), &r, "yes"),
            "           3       1234.6       99.0         17     0.013          NaN       yes"
        );
        assert_eq!(
            step_header("round", "complete").chars().count(),
            step_line("3".into(), &r, "yes").chars().count()
        );
    }

    #[test]
    fn best_median_and_worst_of_the_rounds_that_have_a_cpu_figure() {
        let mut rounds: Vec<PubSubReport> = [Some(3.0), None, Some(1.0), Some(2.0)]
            .into_iter()
            .map(|us| {
                let mut r = report();
                r.cpu_per_published = us.map(|captured_us| PerMessage {
                    messages: 200,
                    groups: Vec::new(),
                    captured_us,
                    corrected_us: None,
                });
                r
            })
            .collect();
        let s = captured_spread(&rounds);
        assert_eq!(
            (s.best, s.median, s.worst),
            (Some(1.0), Some(2.0), Some(3.0))
        );
        assert_eq!(
            spread_line(&s).as_deref(),
            Some(
                "Captured CPU per message published: best 1.00  median 2.00  worst 3.00 µs (100.0 % spread)"
            )
        );
        rounds.iter_mut().for_each(|r| r.cpu_per_published = None);
        let none = captured_spread(&rounds);
        assert_eq!((none.best, none.median, none.worst), (None, None, None));
        assert_eq!(spread_line(&none), None);
    }

    #[test]
    fn rounds_on_the_in_memory_broker_are_each_complete_and_an_interrupt_ends_them() {
        let args = options(3, None);
        let r = rounds(&args, memory(Faults::default()), &Arc::default()).expect("rounds");
        assert_eq!(r.rounds.len(), 3);
        assert!(r.rounds.iter().all(PubSubReport::complete));
        assert!(r.rounds.iter().all(|r| r.published == 200));
        let stopped = Arc::new(AtomicBool::new(true));
        let r = rounds(&args, memory(Faults::default()), &stopped).expect("rounds");
        assert_eq!(r.rounds.len(), 1, "the round interrupted is the last");
        assert!(r.rounds[0].interrupted);
    }

    #[test]
    fn a_broker_that_loses_messages_has_no_capacity_after_its_first_step() {
        let args = options(1, Some(2000.0));
        let lossy = memory(Faults {
            lose_every: 10,
            ..Faults::default()
        });
        let c = capacity(&args, lossy, &Arc::default()).expect("a search");
        assert_eq!(c.steps.len(), 1);
        assert_eq!(c.steps[0].rate_asked, 2000.0);
        assert!(!c.steps[0].sustained && c.steps[0].report.lost > 0);
        assert_eq!(c.capacity_mps, None);
        assert_eq!(
            capacity_line(None),
            "Capacity: not found: even the first step did not keep up; start lower with --rate"
        );
    }
}
