//! The A/B gate's run (`oemputx gate --flow-a CMD --flow-b CMD -- RUN OPTIONS`).
//!
//! Both flows run at once, each on its own request queue; measured rounds alternate A B,
//! B A, A B, … so that both are measured in the same stretch of time, and each adjacent A/B
//! couple is a pair. Each side's processes and their descendants are its FLOW group; the
//! shared groups (the broker, the database, the driver) are measured per side from that
//! side's rounds. Pairs are added until every gated metric is decided, or the time (or the
//! rounds, when bounded) run out: the plan is made again before every look from the pace of
//! the latest blocks, so that a run on a machine that grows quieter uses the time it was
//! given ([`crate::gate::ab`] decides, on the experiment engine). The flows are
//! stopped and the queues deleted on the way out, also after an error or Ctrl-C.

use crate::config::gate::{FlowPair, GateConfig};
use crate::experiment::{Experiment, FIRST_LOOK};
use crate::gate::ab::{self, PAIRS_PER_BLOCK};
use crate::gate::{LookRecord, Outcome, Sequential};
use crate::interleave::flow_arm::{Arms, FlowArm, FlowGroup};
use crate::interleave::{Budget, End, Interleave};
use crate::profiling::diff::Differential;
use crate::report::saved::SavedFigures;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Both flows, each on its own queue, its processes and their descendants its FLOW group.
fn start_sides(pair: &FlowPair, queues: &[String]) -> anyhow::Result<Arms> {
    let base = &pair.run;
    let sides_of = ["A", "B"].into_iter().zip(&pair.flows).zip(&pair.own_runs);
    sides_of
        .zip(queues)
        .map(|(((name, cmd), own), queue)| {
            let mut run = own.as_deref().unwrap_or(base).on_own_queue(queue)?;
            run.label = format!("{}-{name}", base.label);
            FlowArm::start(
                format!("flow {name}"),
                cmd,
                Vec::new(),
                (1, 1),
                FlowGroup::Tree,
                run,
            )
        })
        .collect()
}

/// Fewer rounds than the first look needs would be overridden without a word (a
/// `--max-rounds 1` ran 64): refused, naming the least that can decide.
fn check_max_rounds(max_rounds: usize) -> Result<(), crate::config::ConfigError> {
    let least = 2 * PAIRS_PER_BLOCK * FIRST_LOOK;
    if max_rounds < least {
        return Err(crate::config::bad(
            "--max-rounds",
            format!(
                "{max_rounds} rounds cannot decide anything: the first look comes after {FIRST_LOOK} blocks of {} rounds (A and B), so give {least} or more, or leave it out and bound the run with --max-time alone",
                2 * PAIRS_PER_BLOCK
            ),
        ));
    }
    Ok(())
}

/// What the gate is about to do: the two flows, their queues, the plan and the control.
fn announce(pair: &FlowPair, queues: &[String], max_blocks: usize) {
    let [cmd_a, cmd_b] = &pair.shown;
    let bound = if pair.rounds_given {
        format!(
            "at most {} rounds or {}",
            2 * max_blocks * PAIRS_PER_BLOCK,
            humantime::format_duration(pair.max_time)
        )
    } else {
        format!(
            "as many rounds as fit in {} (the plan made again at every look)",
            humantime::format_duration(pair.max_time)
        )
    };
    crate::say!(
        "gate A/B: A = {cmd_a} (queue {}.bN, a new one each block)\ngate A/B: B = {cmd_b} (queue {}.bN)\ngate A/B: rounds in ABBA order until decided, {bound}; blocks of {PAIRS_PER_BLOCK} pairs, each on fresh flow processes; a look after every block from the {FIRST_LOOK}th; {}",
        queues[0],
        queues[1],
        pair.control.as_deref().map_or_else(
            || "pairs judged as measured (--control none)".to_string(),
            |c| format!(
                "each pair adjusted by {c}'s change in it (control variate, slope β per metric; --control none to judge pairs as measured)"
            ),
        ),
    );
}

/// How the run went against its budget, said on stderr and kept for the verdict.
fn sequential(
    pair: &FlowPair,
    (blocks, max_blocks): (usize, usize),
    (elapsed, pace): (std::time::Duration, std::time::Duration),
    end: End,
    looks: Vec<LookRecord>,
) -> Sequential {
    let s = Sequential {
        method: ab::METHOD,
        alpha: ab::ALPHA,
        max_time_s: pair.max_time.as_secs_f64(),
        max_rounds: pair.rounds_given.then_some(pair.max_rounds),
        pairs_per_block: PAIRS_PER_BLOCK,
        blocks,
        elapsed_s: elapsed.as_secs_f64(),
        seconds_per_block: pace.as_secs_f64(),
        stopped: match end {
            End::Decided => "decided",
            End::Interrupted => "interrupted",
            End::Failed => "failed",
            End::Budget if blocks >= max_blocks && pair.rounds_given => "rounds",
            End::Budget if blocks >= max_blocks => "cap",
            End::Budget => "time",
        },
        looks,
    };
    crate::say!(
        "gate A/B: stopped ({}) after {} looks, {} blocks in {:.0} s ({:.1} s a block at the end)",
        s.stopped,
        s.looks.len(),
        s.blocks,
        s.elapsed_s,
        s.seconds_per_block
    );
    s
}

/// Both flows measured in ABBA rounds until every gated metric is decided or the rounds
/// or the time run out: the verdicts and how the run ended, or `None` when it was
/// interrupted before the first pair.
pub fn run(
    cfg: &GateConfig,
    pair: &FlowPair,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Option<(Outcome, End)>> {
    let [cmd_a, cmd_b] = &pair.shown;
    let base = &pair.run;
    let max_blocks = (pair.max_rounds / (2 * PAIRS_PER_BLOCK)).max(FIRST_LOOK);
    if pair.rounds_given {
        check_max_rounds(pair.max_rounds)?;
    }
    let pid = std::process::id();
    let queues: Vec<String> = ["A", "B"]
        .iter()
        .map(|s| format!("{}.{s}.{pid}", base.request_queue))
        .collect();
    // Each side deletes its queue after stopping its flow (also on an error or Ctrl-C).
    let mut sides = start_sides(pair, &queues)?;
    let control = pair.control.as_deref();
    announce(pair, &queues, max_blocks);
    let budget = Budget {
        max_time: pair.max_time,
        max_blocks,
    };
    let mut run = Interleave::new(sides.as_mut_slice(), budget);
    // The first pair shows which metrics the rounds carry.
    if !run.cycle(&[0, 1], &interrupt)? {
        crate::say!("gate A/B: interrupted before the first pair");
        return Ok(None);
    }
    let first: Vec<SavedFigures> = (run.rounds.iter())
        .filter_map(|r| r.last().map(SavedFigures::from))
        .collect();
    let named = (cfg.metrics.iter())
        .chain(cfg.tolerances.named_metrics())
        .cloned();
    let specs = ab::metrics(named, |m| cfg.tolerances.for_metric(m), &first, control)?;
    let mut engine = Experiment::new(ab::design(specs.clone(), control.is_some(), max_blocks))?;
    let figures = |r: &crate::report::Report| ab::figures(&specs, control, &SavedFigures::from(r));
    let mut looks = Vec::new();
    let end = run.drive_or_err(&mut engine, figures, &interrupt, |look, elapsed| {
        crate::say!("{}", ab::look_line(look, &specs, elapsed));
        looks.push(LookRecord::of(look, elapsed));
    })?;
    let elapsed = run.elapsed();
    let blocks = (engine.blocks(), max_blocks);
    let sequential = sequential(pair, blocks, (elapsed, run.pace()), end, looks);
    let rounds: Vec<Vec<SavedFigures>> = (run.rounds.iter())
        .map(|r| r.iter().map(SavedFigures::from).collect())
        .collect();
    let a_first: Vec<bool> = run.orders.iter().map(|o| o.first() == Some(&0)).collect();
    let pairs = a_first.len();
    crate::say!(
        "gate A/B: {pairs} pairs (A {} rounds, B {} rounds) in {:.0} s",
        rounds[0].len(),
        rounds[1].len(),
        elapsed.as_secs_f64()
    );
    let mut outcome = ab::outcome(
        &engine,
        [&rounds[0], &rounds[1]],
        a_first,
        control,
        (format!("A: {cmd_a}"), format!("B: {cmd_b}")),
        Some(sequential),
    );
    outcome.profile = Differential::of(
        run.rounds[0].iter().map(|r| &r.profile),
        run.rounds[1].iter().map(|r| &r.profile),
        None,
    );
    if end == End::Interrupted {
        crate::say!("gate A/B: interrupted after {pairs} pairs; the verdicts cover them");
    }
    Ok(Some((outcome, end)))
}
