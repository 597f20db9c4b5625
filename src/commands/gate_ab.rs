//! `oemputx gate --flow-a CMD --flow-b CMD -- RUN OPTIONS`: A/B in one run.
//!
//! Both flows run at once, each on its own request queue; measured rounds alternate A B,
//! B A, A B, … so that both are measured in the same stretch of time, and each adjacent A/B
//! couple is a pair. Each side's processes and their descendants are its FLOW group; the
//! shared groups (the broker, the database, the driver) are measured per side from that
//! side's rounds. Pairs are added until every gated metric is decided, or the rounds or
//! the time run out ([`crate::gate::sequential`] says how the looks keep their error rate).
//! The flows are stopped and the queues deleted on the way out, also after an error or
//! Ctrl-C.

use super::gate::{verdict_exit, write_verdict};
use crate::accounting::selector::{GroupSpec, Selector};
use crate::config::flow_command::FlowCommand;
use crate::config::gate::{FlowPair, GateConfig, Tolerances};
use crate::config::{ConfigError, RunConfig};
use crate::exit::Exit;
use crate::flows::Flows;
use crate::gate::control::{self, Pair};
use crate::gate::sequential::{
    Boundary, FIRST_LOOK, PairedInterval, Spending, detectable_change, judge, paired_interval,
    pairs_to_decide,
};
use crate::gate::statistics::median;
use crate::gate::{AbRounds, Adjustment, Decision, Outcome, Verdict, overall};
use crate::measure::measure;
use crate::report::saved::{Metric, SavedFigures};
use crate::transport::Endpoint;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The overall two-sided error level of the repeated intervals: each one-sided error (a
/// false regression, a false pass) is at most half of it.
const ALPHA: f64 = 0.10;
/// Pairs per block: A B, B A, A B, B A on the same two flow processes, then both restart.
/// Four pairs keep the restarts' cost (about a second each) small against the rounds.
const PAIRS_PER_BLOCK: usize = 4;

/// One side of the comparison: its flow, its run settings, its rounds' figures.
struct Side {
    name: &'static str,
    cmd: FlowCommand,
    cfg: RunConfig,
    /// The running flow; stopped when replaced or when the side goes.
    flows: Option<Flows>,
    rounds: Vec<SavedFigures>,
}

impl Side {
    /// Stop the flow and start a fresh process of it: a process's own lasting bias (where
    /// its code and data landed, which CPU the scheduler favours) becomes noise that
    /// averages out over blocks, instead of a difference between A and B.
    fn restart(&mut self) -> anyhow::Result<()> {
        drop(self.flows.take());
        let mut flows = Flows::start(
            &self.cmd,
            &self.cfg.endpoint,
            &self.cfg.request_queue,
            1,
            &[],
        )?;
        flows.wait_ready(1)?;
        set_flow_group(&mut self.cfg, &flows);
        self.flows = Some(flows);
        Ok(())
    }
}

/// The side's flow processes and their descendants are its FLOW group.
fn set_flow_group(cfg: &mut RunConfig, flows: &Flows) {
    cfg.groups.retain(|g| g.name != "FLOW");
    cfg.groups.insert(
        0,
        GroupSpec {
            name: "FLOW".into(),
            selectors: flows.pids().into_iter().map(Selector::Tree).collect(),
            host: None,
        },
    );
}

/// The request queues the gate made; deleted when dropped (after the flows have stopped).
pub(super) struct MadeQueues {
    pub(super) endpoint: Endpoint,
    pub(super) queues: Vec<String>,
}

impl Drop for MadeQueues {
    fn drop(&mut self) {
        for q in &self.queues {
            if let Err(e) = self.endpoint.kind().delete_queue(q) {
                eprintln!("Warning: could not delete the gate's queue {q}: {e}");
            }
        }
    }
}

/// One gated metric: its tolerance, its pairs by block, and its verdict once decided.
struct Gated {
    name: String,
    metric: Metric,
    tolerance: f64,
    /// The finished blocks' pairs: ln(B ÷ A) of the metric and of the control group.
    blocks: Vec<Vec<Pair>>,
    /// The current block's pairs.
    pending: Vec<Pair>,
    /// Pairs where a side had no figure for it (e.g. no capture ratio that round).
    skipped: usize,
    /// Whether the control adjusts this metric (not the control itself).
    adjustable: bool,
    /// The slope used at the last look, when the look was adjusted.
    slope: Option<f64>,
    /// The observations of the last look: one per block (adjusted when `slope` is set).
    observations: Vec<f64>,
    decided: Option<(Verdict, PairedInterval, usize)>,
    /// The two-sided error level of the last interval computed (that of `last`/`decided`).
    level: Option<f64>,
    last: Option<PairedInterval>,
}

impl Gated {
    /// The blocks' plain means: what a look without the control sees.
    fn plain(&self) -> Vec<f64> {
        control::block_means(&self.blocks, 0.0)
    }
}

/// The control group of the pairs (`--control`), when there is one.
struct Control {
    name: String,
    metric: Metric,
}

/// `oemputx gate --flow-a … --flow-b … -- RUN OPTIONS`.
pub fn gate_ab(
    cfg: &GateConfig,
    pair: &FlowPair,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let commands = &pair.flows;
    let [cmd_a, cmd_b] = &pair.shown;
    let base = &pair.run;
    let tolerances = &cfg.tolerances;
    let max_blocks = (pair.max_rounds / (2 * PAIRS_PER_BLOCK)).max(FIRST_LOOK);
    let max_pairs = max_blocks * PAIRS_PER_BLOCK;
    let max_time = pair.max_time;
    let mut spending = Spending::new(ALPHA, max_blocks);
    let control = pair.control.as_ref().map(|name| Control {
        name: name.clone(),
        metric: Metric::named(name),
    });

    let pid = std::process::id();
    let queues: Vec<String> = ["A", "B"]
        .iter()
        .map(|s| format!("{}.{s}.{pid}", base.request_queue))
        .collect();
    // Declared first so that it drops last: the queues go after the flows have stopped.
    let _made = MadeQueues {
        endpoint: base.endpoint.clone(),
        queues: queues.clone(),
    };
    let mut sides = Vec::with_capacity(2);
    for ((name, cmd), queue) in ["A", "B"].into_iter().zip(commands).zip(&queues) {
        sides.push(start_side(name, cmd, base, queue)?);
    }
    eprintln!(
        "gate A/B: A = {cmd_a} (queue {})\ngate A/B: B = {cmd_b} (queue {})\ngate A/B: rounds in ABBA order until decided, at most {} rounds or {}; blocks of {PAIRS_PER_BLOCK} pairs, each on fresh flow processes; a look after every block from the {FIRST_LOOK}th; {}",
        queues[0],
        queues[1],
        2 * max_pairs,
        humantime::format_duration(max_time),
        control.as_ref().map_or_else(
            || "pairs judged as measured (--control none)".to_string(),
            |c| format!(
                "each pair adjusted by {}'s change in it (control variate, slope β per metric; --control none to judge pairs as measured)",
                c.name
            )
        ),
    );

    let started = Instant::now();
    let run = run_pairs(
        cfg,
        tolerances,
        &mut sides,
        &mut spending,
        (max_pairs, max_time),
        control.as_ref(),
        &interrupt,
    )?;
    let (gated, pairs, interrupted) = (run.gated, run.pairs, run.interrupted);
    let level = run.last_look.map_or(ALPHA, |b| b.level);
    eprintln!(
        "gate A/B: {pairs} pairs ({}) in {:.0} s",
        sides_summary(&sides),
        started.elapsed().as_secs_f64()
    );
    let outcome = outcome(
        &gated,
        &sides,
        (pairs, level),
        control.as_ref(),
        commands_text(cmd_a, cmd_b),
    );
    write_verdict(cfg, &outcome)?;
    drop(sides);
    if interrupted {
        eprintln!("gate A/B: interrupted after {pairs} pairs; the verdicts above cover them");
        return Ok(Exit::Interrupted);
    }
    Ok(verdict_exit(cfg, &outcome))
}

/// What the pairs gave: each metric's state, how many pairs ran, whether Ctrl-C ended it,
/// and the boundary of the last look.
struct PairsRun {
    gated: Vec<Gated>,
    pairs: usize,
    interrupted: bool,
    last_look: Option<Boundary>,
}

/// Measure blocks of pairs in ABBA order, looking after each from the first look on, until
/// every metric is decided, one is a regression, or the rounds, the time or the user's
/// patience run out. A block is begun only when it is expected to end within the time.
fn run_pairs(
    cfg: &GateConfig,
    tolerances: &Tolerances,
    sides: &mut [Side],
    spending: &mut Spending,
    (max_pairs, max_time): (usize, Duration),
    control: Option<&Control>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<PairsRun> {
    let started = Instant::now();
    let mut run = PairsRun {
        gated: Vec::new(),
        pairs: 0,
        interrupted: false,
        last_look: None,
    };
    let mut blocks = 0;
    loop {
        for _ in 0..PAIRS_PER_BLOCK {
            if !measure_pair(sides, run.pairs, interrupt)? {
                run.interrupted = true;
                return Ok(run);
            }
            run.pairs += 1;
            if run.gated.is_empty() {
                run.gated = metrics(cfg, tolerances, sides, control)?;
            }
            add_pair(&mut run.gated, sides, control);
        }
        blocks += 1;
        close_block(&mut run.gated);
        let elapsed = started.elapsed();
        let per_block = elapsed / blocks as u32;
        let spent = run.pairs + PAIRS_PER_BLOCK > max_pairs || elapsed + per_block > max_time;
        if blocks == FIRST_LOOK {
            // The plan: the blocks that fit, from how long these took (never from what they
            // measured).
            let fit = (max_time.as_secs_f64() / per_block.as_secs_f64().max(1e-3)) as usize;
            spending.plan(fit.min(max_pairs / PAIRS_PER_BLOCK).max(FIRST_LOOK));
        }
        if blocks >= FIRST_LOOK {
            let last = spent || blocks >= spending.planned();
            let boundary = spending.look(blocks, last);
            run.last_look = Some(boundary);
            look(
                &mut run.gated,
                blocks,
                (boundary, spending.planned()),
                started,
            );
            // Done when every metric is decided, or one is a regression: no later verdict
            // of the others changes the gate's.
            let regression = run
                .gated
                .iter()
                .any(|g| matches!(g.decided, Some((Verdict::Regression, ..))));
            if last || regression || run.gated.iter().all(|g| g.decided.is_some()) {
                return Ok(run);
            }
        } else if spent {
            return Ok(run);
        }
        for side in sides.iter_mut() {
            side.restart()?;
        }
    }
}

/// One pair: A then B when `pairs` is even, B then A when odd (ABBA). False when Ctrl-C
/// ended it.
fn measure_pair(
    sides: &mut [Side],
    pairs: usize,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<bool> {
    let order = if pairs.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    };
    for i in order {
        if interrupt.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let side = &mut sides[i];
        let report = measure(&side.cfg, interrupt.clone())?;
        if report.status == crate::driver::Status::Interrupted {
            return Ok(false);
        }
        if report.status != crate::driver::Status::Completed {
            anyhow::bail!(
                "a round of flow {} did not complete ({:?}: {}); the gate stops",
                side.name,
                report.status,
                report.status_detail.as_deref().unwrap_or("")
            );
        }
        side.rounds.push(SavedFigures::from(&report));
    }
    Ok(true)
}

/// Start one side's flow on its own queue, and its run settings: its queue, and its flow's
/// processes and their descendants as the FLOW group (replacing any FLOW of the options).
fn start_side(
    name: &'static str,
    cmd: &FlowCommand,
    base: &RunConfig,
    queue: &str,
) -> anyhow::Result<Side> {
    let mut flows = Flows::start(cmd, &base.endpoint, queue, 1, &[])?;
    flows.wait_ready(1)?;
    let mut cfg = base.on_own_queue(queue)?;
    cfg.label = format!("{}-{name}", base.label);
    set_flow_group(&mut cfg, &flows);
    Ok(Side {
        name,
        cmd: cmd.clone(),
        cfg,
        flows: Some(flows),
        rounds: Vec::new(),
    })
}

/// What to gate: FLOW and the captured total, and what --metric and the gate file add.
///
/// The captured total, not the corrected one: both sides run on the same machine in the
/// same stretch of time, so the capture ratio corrects nothing between them, and it adds
/// the machine's unattributed CPU as noise (measured here: the ratio fell to 0.54–0.68 in
/// 12 of 128 rounds of an A/A run, when processes came and went; docs/gate.md).
fn metrics(
    cfg: &GateConfig,
    tolerances: &Tolerances,
    sides: &[Side],
    control: Option<&Control>,
) -> anyhow::Result<Vec<Gated>> {
    let has = |m: &Metric| {
        sides
            .iter()
            .all(|s| s.rounds.iter().all(|r| m.of(r).is_some()))
    };
    if let Some(c) = control
        && !has(&c.metric)
    {
        return Err(ConfigError::BadValue {
            flag: "--control",
            why: format!(
                "the first rounds have no figure for '{}' ({}): name a group both sides run the same code in (DRIVER, the default), or none",
                c.name,
                c.metric.field()
            ),
        }
        .into());
    }
    let mut names = vec!["FLOW".to_string(), "captured".to_string()];
    for m in cfg.metrics.iter().chain(tolerances.named_metrics()) {
        if !names.contains(m) {
            names.push(m.clone());
        }
    }
    names
        .into_iter()
        .map(|name| {
            let metric = Metric::named(&name);
            if !has(&metric) {
                return Err(ConfigError::BadValue {
                    flag: "--metric",
                    why: format!(
                        "the first rounds have no figure for '{name}' ({}): name a group of the run options, captured, corrected, rate or p99",
                        metric.field()
                    ),
                }
                .into());
            }
            Ok(Gated {
                tolerance: tolerances.for_metric(&name),
                adjustable: control.is_some_and(|c| c.name != name),
                name,
                metric,
                blocks: Vec::new(),
                pending: Vec::new(),
                skipped: 0,
                slope: None,
                observations: Vec::new(),
                decided: None,
                level: None,
                last: None,
            })
        })
        .collect()
}

/// ln(B ÷ A) of a figure in the newest pair, oriented so that above 0 is worse (for the
/// rate, lower is worse); None when a side has no positive figure for it.
fn pair_log_ratio(metric: &Metric, a: &SavedFigures, b: &SavedFigures) -> Option<f64> {
    match (metric.of(a), metric.of(b)) {
        (Some(x), Some(y)) if x > 0.0 && y > 0.0 => {
            let d = (y / x).ln();
            Some(if metric.higher_is_worse() { d } else { -d })
        }
        _ => None,
    }
}

/// The newest pair's ln(B ÷ A) for every undecided metric, with the control's.
fn add_pair(gated: &mut [Gated], sides: &[Side], control: Option<&Control>) {
    let (Some(a), Some(b)) = (sides[0].rounds.last(), sides[1].rounds.last()) else {
        return;
    };
    let c = control
        .and_then(|c| pair_log_ratio(&c.metric, a, b))
        .unwrap_or(f64::NAN);
    for g in gated.iter_mut().filter(|g| g.decided.is_none()) {
        match pair_log_ratio(&g.metric, a, b) {
            Some(d) => g.pending.push(Pair { d, control: c }),
            None => g.skipped += 1,
        }
    }
}

/// End a block: its pairs make one observation (pairs of one block share their flow
/// processes, so they are not independent of each other; blocks are).
fn close_block(gated: &mut [Gated]) {
    for g in gated.iter_mut().filter(|g| g.decided.is_none()) {
        if !g.pending.is_empty() {
            g.blocks.push(std::mem::take(&mut g.pending));
        }
    }
}

/// Whether the control itself differs between the sides at this look's level: then its
/// change is not only the machine's, and the look is judged unadjusted. The control's
/// blocks are read from any metric's pairs (each pair carries the control's figure).
fn control_differs(gated: &[Gated], level: f64) -> Option<PairedInterval> {
    let g = gated.iter().max_by_key(|g| g.blocks.len())?;
    let c: Vec<Vec<Pair>> = g
        .blocks
        .iter()
        .map(|b| {
            b.iter()
                .map(|p| Pair {
                    d: p.control,
                    control: f64::NAN,
                })
                .collect()
        })
        .collect();
    let i = paired_interval(&control::block_means(&c, 0.0), level)?;
    (i.low > 1.0 || i.high < 1.0).then_some(i)
}

/// A look: each undecided metric's interval at the look's level (adjusted by the control
/// unless the control itself differs), and its verdict when it allows one.
fn look(
    gated: &mut [Gated],
    blocks: usize,
    (boundary, planned): (Boundary, usize),
    started: Instant,
) {
    let mut line = format!(
        "gate A/B: look {} after {blocks} of {planned} planned blocks ({:.0} s, {:.1}% interval):",
        boundary.look,
        started.elapsed().as_secs_f64(),
        100.0 * (1.0 - boundary.level)
    );
    let differs = gated
        .iter()
        .any(|g| g.adjustable)
        .then(|| control_differs(gated, boundary.level))
        .flatten();
    if let Some(c) = differs {
        line.push_str(&format!(
            " (the control itself moved {:+.1}% [{:+.1}%, {:+.1}%]: judged unadjusted)",
            100.0 * (c.ratio - 1.0),
            100.0 * (c.low - 1.0),
            100.0 * (c.high - 1.0)
        ));
    }
    for g in gated.iter_mut() {
        if let Some((v, _, n)) = &g.decided {
            line.push_str(&format!(" {} {} at {n};", g.name, v.as_str()));
            continue;
        }
        g.slope = (g.adjustable && differs.is_none())
            .then(|| control::slope(&g.blocks))
            .flatten();
        g.observations = control::block_means(&g.blocks, g.slope.unwrap_or(0.0));
        let Some(i) = paired_interval(&g.observations, boundary.level) else {
            continue;
        };
        g.last = Some(i);
        g.level = Some(boundary.level);
        let state = match judge(&i, g.tolerance) {
            Some(v) => {
                g.decided = Some((v, i, blocks));
                v.as_str()
            }
            None => "undecided",
        };
        let slope = g.slope.map(|b| format!(" (β {b:.2})")).unwrap_or_default();
        line.push_str(&format!(
            " {} {:+.1}% [{:+.1}%, {:+.1}%] {state}{slope};",
            g.name,
            100.0 * (i.ratio - 1.0),
            100.0 * (i.low - 1.0),
            100.0 * (i.high - 1.0)
        ));
    }
    eprintln!("{}", line.trim_end_matches(';'));
}

fn commands_text(a: &str, b: &str) -> (String, String) {
    (format!("A: {a}"), format!("B: {b}"))
}

/// Each side's rounds, for the summary line.
fn sides_summary(sides: &[Side]) -> String {
    sides
        .iter()
        .map(|s| format!("{} {} rounds", s.name, s.rounds.len()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The gate's outcome: a decision per metric, from its deciding look, or from the last
/// pairs when it was not decided (with what more would take).
fn outcome(
    gated: &[Gated],
    sides: &[Side],
    (pairs, level): (usize, f64),
    control: Option<&Control>,
    (a, b): (String, String),
) -> Outcome {
    let decisions: Vec<Decision> = gated
        .iter()
        .map(|g| decision(g, sides, (pairs, level), control))
        .collect();
    Outcome {
        baseline: a,
        current: b,
        verdict: if decisions.is_empty() {
            Verdict::Inconclusive
        } else {
            overall(&decisions)
        },
        decisions,
        ab_rounds: Some(AbRounds {
            a_first: (0..pairs).map(|p| p % 2 == 0).collect(),
            a: sides[0].rounds.clone(),
            b: sides[1].rounds.clone(),
        }),
        instruction_counts: None,
    }
}

fn decision(
    g: &Gated,
    sides: &[Side],
    (pairs, level): (usize, f64),
    control: Option<&Control>,
) -> Decision {
    let adjusted_for = g.slope.zip(control).map(|(slope, c)| Adjustment {
        group: c.name.clone(),
        slope,
    });
    let adjusted = adjusted_for.as_ref().map_or_else(String::new, |a| {
        format!("; each pair adjusted by {}'s (β {:.2})", a.group, a.slope)
    });
    let values =
        |s: &Side| -> Vec<f64> { s.rounds.iter().filter_map(|r| g.metric.of(r)).collect() };
    let (a, b) = (values(&sides[0]), values(&sides[1]));
    let (bmin, bmax) = b
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    // Before any look (a run cut short), the blocks as measured.
    let observations = if g.observations.is_empty() {
        g.plain()
    } else {
        g.observations.clone()
    };
    let interval = g
        .decided
        .map(|(_, i, _)| i)
        .or(g.last)
        .or_else(|| paired_interval(&observations, level));
    let ci_level = 1.0 - g.level.unwrap_or(level);
    let (verdict, note) = match (&g.decided, interval) {
        (Some((v, _, n)), _) => (
            *v,
            Some(format!(
                "decided after {n} blocks of {PAIRS_PER_BLOCK} pairs (A/B, ABBA order){adjusted}"
            )),
        ),
        (None, Some(i)) => (
            Verdict::Inconclusive,
            Some(undecided_note(g, &i, pairs / PAIRS_PER_BLOCK) + &adjusted),
        ),
        (None, None) => (
            Verdict::Inconclusive,
            Some(format!(
                "only {} finished blocks: raise --max-rounds or --max-time",
                g.blocks.len()
            )),
        ),
    };
    let i = interval.unwrap_or(PairedInterval {
        ratio: f64::NAN,
        low: f64::NAN,
        high: f64::NAN,
        sd_log: f64::NAN,
        pairs: 0,
        z: f64::NAN,
    });
    Decision {
        metric: g.name.clone(),
        unit: if g.metric.higher_is_worse() && g.name != "p99" {
            "us/tran"
        } else if g.name == "p99" {
            "us"
        } else {
            "tps"
        },
        base_median: median(&a),
        current_median: median(&b),
        ratio: i.ratio,
        ci_low: i.low,
        ci_high: i.high,
        ci_level,
        p_value: paired_p(&observations),
        tolerance: g.tolerance,
        base_rounds: a.len(),
        current_rounds: b.len(),
        current_min: bmin,
        current_max: bmax,
        verdict,
        note,
        adjusted_for,
    }
}

/// Why a metric is undecided, the smallest change these pairs could have caught, and
/// about how many pairs would decide it at this spread.
fn undecided_note(g: &Gated, i: &PairedInterval, blocks: usize) -> String {
    let reach = detectable_change(i.sd_log, i.pairs, i.z, g.tolerance);
    let more = match pairs_to_decide(i, g.tolerance) {
        Some(n) if n > blocks => format!(
            "about {n} blocks ({} rounds) would decide it at this spread: raise --max-rounds/--max-time, or make rounds longer (--count)",
            2 * PAIRS_PER_BLOCK * n
        ),
        Some(_) => "a few more blocks would probably decide it: raise --max-rounds/--max-time".into(),
        None => "the estimate sits on the tolerance's edge: no number of rounds will decide it; a tolerance further from the change would".into(),
    };
    let skipped = if g.skipped > 0 {
        format!(" ({} pairs had no figure for it)", g.skipped)
    } else {
        String::new()
    };
    format!(
        "the interval [{:+.1}%, {:+.1}%] straddles +{:.1}% after {} blocks{skipped}; these blocks could catch +{:.1}% or more; {more}",
        100.0 * (i.low - 1.0),
        100.0 * (i.high - 1.0),
        100.0 * g.tolerance,
        i.pairs,
        100.0 * reach
    )
}

/// The paired t-test's two-sided p-value for "no change"; NaN with fewer than two pairs.
fn paired_p(d: &[f64]) -> f64 {
    let n = d.len();
    if n < 2 {
        return f64::NAN;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    if sd == 0.0 {
        return if mean == 0.0 { 1.0 } else { 0.0 };
    }
    let t = mean / (sd / (n as f64).sqrt());
    StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map(|dist| 2.0 * (1.0 - dist.cdf(t.abs())))
        .unwrap_or(f64::NAN)
}
