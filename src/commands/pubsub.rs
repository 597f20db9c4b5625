//! `oemputx pubsub`: check the options, build the broker and measure one window
//! ([`crate::orchestrate::pubsub`]) — or rounds of it, or a capacity search — and write it.

use crate::config::formats::Format;
use crate::config::pubsub::PubsubConfig;
use crate::exit::Exit;
use crate::export::outputs::{Artifact as _, Outputs, Style};
use crate::orchestrate::pubsub::measure;
use crate::pubsub::Broker;
use crate::pubsub::report::{
    BestMedianWorst, CAPACITY_SCHEMA, CapacityStep, PubSubCapacity, PubSubReport, PubSubRounds,
    ROUNDS_SCHEMA,
};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx pubsub`.
pub fn pubsub(args: &PubsubConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let broker = crate::orchestrate::pubsub::broker(args)?;
    broker.prepare()?;
    if args.find_capacity {
        return find_capacity(args, broker, &interrupt);
    }
    if args.rounds > 1 {
        return rounds(args, broker, &interrupt);
    }
    let report = measure(args, broker, args.pacing.rate, interrupt)?;
    write(args, &report)?;
    if report.interrupted {
        return Ok(Exit::Interrupted);
    }
    if report.complete() {
        Ok(Exit::Ok)
    } else {
        crate::say!(
            "oemputx pubsub: not every subscriber got exactly its messages ({} lost, {} duplicated){}",
            report.lost,
            report.duplicates,
            report
                .error
                .as_deref()
                .map(|e| format!("; {e}"))
                .unwrap_or_default()
        );
        Ok(Exit::Failure)
    }
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

/// `--rounds N`: the same run N times; each round's line, then best/median/worst of the
/// CPU per message published, the spread a gate would judge.
fn rounds(
    args: &PubsubConfig,
    broker: Arc<dyn Broker>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let plan = &args.plan;
    crate::outln!(
        "oemputx pubsub on {}: {} rounds of {} messages",
        broker.describe(),
        args.rounds,
        plan.count
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
    let mut captured: Vec<f64> = all
        .iter()
        .filter_map(|r| r.cpu_per_published.as_ref().map(|c| c.captured_us))
        .collect();
    captured.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        captured
            .get(((captured.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    let (best, median, worst) = (pick(0.0), pick(0.5), pick(1.0));
    if let (Some(b), Some(m), Some(w)) = (best, median, worst) {
        crate::outln!(
            "Captured CPU per message published: best {b:.2}  median {m:.2}  worst {w:.2} µs ({:.1} % spread)",
            100.0 * (w - b) / m.max(f64::MIN_POSITIVE)
        );
    }
    let json = PubSubRounds {
        schema: ROUNDS_SCHEMA,
        captured_us_per_published: BestMedianWorst {
            best,
            median,
            worst,
        },
        rounds: &all,
    };
    let mut out = Outputs::new();
    if let Some(dir) = &args.save_dir {
        let text = json.render(Format::Json, &Style::default())?;
        let saved = crate::export::save_in_folder(
            dir,
            &now_stamp(),
            "pubsub-rounds",
            &[("json", "the pub/sub rounds JSON", text.as_str())],
        );
        if let Err(e) = saved {
            out.failed(format!("{e:#}"));
        }
    }
    out.artifact(&json, &args.exports, &Style::default());
    out.finish(None)?;
    Ok(if all.iter().any(|r| r.interrupted) {
        Exit::Interrupted
    } else if all.iter().all(PubSubReport::complete) {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

/// A step keeps up when every subscriber got all its messages at ≥ 95 % of its share of
/// the publish rate and the backlog drained within a tenth of the publishing time.
fn sustained(r: &PubSubReport) -> bool {
    r.complete() && r.subscriber_pace_pct.min >= 95.0 && r.drain_s <= 0.1 * r.publishing_s.max(0.1)
}

/// `--find-capacity`: raise the rate by half each step (from --rate, or 500 a second)
/// until a step does not keep up; the capacity is the last step that did.
fn find_capacity(
    args: &PubsubConfig,
    broker: Arc<dyn Broker>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    const MAX_STEPS: usize = 20;
    let plan = &args.plan;
    let mut rate = args.pacing.rate.unwrap_or(500.0);
    let mut steps: Vec<(f64, PubSubReport)> = Vec::new();
    crate::outln!(
        "oemputx pubsub --find-capacity on {}: {} messages a step, rate ×1.5 until a step does not keep up",
        broker.describe(),
        plan.count
    );
    crate::outln!("{}", step_header("rate asked", "keeps up"));
    for _ in 0..MAX_STEPS {
        let r = measure(args, broker.clone(), Some(rate), interrupt.clone())?;
        let ok = sustained(&r);
        crate::outln!(
            "{}",
            step_line(format!("{rate:.0}"), &r, if ok { "yes" } else { "no" })
        );
        let stop = r.interrupted;
        steps.push((rate, r));
        if !ok || stop {
            break;
        }
        rate *= 1.5;
    }
    let best = steps.iter().rev().find(|(_, r)| sustained(r));
    match best {
        Some((rate, r)) => crate::outln!(
            "Capacity: {:.1} messages a second published ({rate:.0} asked), {} µs of captured CPU per message published",
            r.publish_mps,
            r.cpu_per_published
                .as_ref()
                .map_or("-".into(), |c| format!("{:.2}", c.captured_us))
        ),
        None => crate::outln!(
            "Capacity: not found: even the first step did not keep up; start lower with --rate"
        ),
    }
    let json = PubSubCapacity {
        schema: CAPACITY_SCHEMA,
        capacity_mps: best.map(|(_, r)| r.publish_mps),
        steps: steps
            .iter()
            .map(|(rate, r)| CapacityStep {
                rate_asked: *rate,
                sustained: sustained(r),
                report: r,
            })
            .collect(),
    };
    let mut out = Outputs::new();
    out.artifact(&json, &args.exports, &Style::default());
    out.finish(None)?;
    Ok(if steps.iter().any(|(_, r)| r.interrupted) {
        Exit::Interrupted
    } else if best.is_some() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

/// The files asked for, the run saved under the reports folder (unless --no-save), then
/// the text and the output on stdout, if one is.
fn write(args: &PubsubConfig, report: &PubSubReport) -> anyhow::Result<()> {
    let text = crate::export::pubsub::text(report);
    let mut out = Outputs::new();
    out.artifact(report, &args.exports, &Style::default());
    if let Some(dir) = &args.save_dir {
        let style = Style::default();
        let mut files = Vec::new();
        for (ext, format) in [
            ("tsv", Format::Tsv),
            ("json", Format::Json),
            ("md", Format::Markdown),
            #[cfg(feature = "html")]
            ("html", Format::Html),
        ] {
            files.push((ext, format, report.render(format, &style)?));
        }
        let mut named: Vec<(&str, &str, &str)> =
            vec![("txt", "the pub/sub text report", text.as_str())];
        named.extend(
            files
                .iter()
                .map(|(ext, f, body)| (*ext, f.name(), body.as_str())),
        );
        if let Err(e) = crate::export::save_in_folder(dir, &now_stamp(), "pubsub", &named) {
            out.failed(format!("{e:#}"));
        }
    }
    out.finish(Some(&text))
}

/// The current UTC time as the reports folder's file names start with it.
fn now_stamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}
