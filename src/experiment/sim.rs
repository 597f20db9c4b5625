//! Synthetic runs of the engine: how often it calls a difference that is not there, and how
//! often it finds one that is, under the kinds of noise measured on this kind of machine
//! (docs/history.md): round-to-round spread, a slow drift of the whole machine, a common
//! "weather" that moves every process's cost in a round (and the control's), a lasting
//! bias of each flow process (restarted every block), the cost of the first round after a
//! restart, and now and then a round caught by a burst of other work. Deterministic for a seed. `cargo bench --bench experiment` prints
//! the table the docs quote; the unit tests run a smaller one.

use super::{Design, Experiment, FIRST_LOOK, Figures, Finding, MetricSpec, Rule};
use crate::stats::Draws;

/// The noise of a simulated machine (standard deviations of ln cost).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Each round's own spread.
    pub round: f64,
    /// The random walk of the whole machine per round (drift).
    pub drift: f64,
    /// The common weather of a round: moves every arm's cost and the control's.
    pub weather: f64,
    /// How much of the weather the flow's cost takes (the control takes all of it).
    pub weather_share: f64,
    /// The control's own spread.
    pub control: f64,
    /// A flow process's lasting bias, drawn anew each block (the flows restart).
    pub process: f64,
    /// The chance a round is caught by a burst, and the burst's mean size (ln).
    pub outlier_p: f64,
    pub outlier: f64,
    /// What the first round after the flows restart costs more (ln), the flow's and the
    /// control's: whatever the restart leaves behind (exiting processes, fresh connections)
    /// falls on the arm measured first in a block.
    pub restart: f64,
    pub restart_control: f64,
}

impl Noise {
    /// The spread measured on this machine in the A/B calibrations: rounds of 4,000
    /// messages spread by ~6 % of ln cost, blocks' means by ~3.5 %, weather r ≈ 0.6 with the
    /// driver, a slow drift of 10–20 % over an hour, a few rounds in a hundred caught by
    /// other work; and the first round after the flows restart dearer, by what one A/A
    /// compare showed between two identical arms when one of them always came first (the
    /// driver −2.0 %, the flow −0.7 % over blocks of four rounds an arm, so about 8 % and
    /// 3 % on that one round).
    pub fn measured() -> Noise {
        Noise {
            round: 0.04,
            drift: 0.005,
            weather: 0.04,
            weather_share: 0.8,
            control: 0.03,
            process: 0.02,
            outlier_p: 0.03,
            outlier: 0.4,
            restart: 0.03,
            restart_control: 0.08,
        }
    }

    /// The same without drift, bursts and the restart's cost.
    pub fn calm() -> Noise {
        Noise {
            drift: 0.0,
            outlier_p: 0.0,
            restart: 0.0,
            restart_control: 0.0,
            ..Noise::measured()
        }
    }
}

/// One configuration to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub arms: usize,
    /// The true change of arm i against arm 0 (a fraction; index 0 is 0).
    pub effects: Vec<f64>,
    pub noise: Noise,
    pub rule: Rule,
    pub cycles_per_block: usize,
    pub max_blocks: usize,
    pub alpha: f64,
    pub control: bool,
}

/// What one simulated run found for each contrast (arm i against arm 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub findings: Vec<Option<Finding>>,
    pub estimates: Vec<f64>,
    pub blocks: usize,
}

/// Simulate one run of `case` with `seed`.
pub fn run(case: &Case, seed: u64) -> Run {
    let mut rng = Draws::seeded(seed);
    let design = Design {
        arms: case.arms,
        contrasts: (1..case.arms).map(|i| (0, i)).collect(),
        metrics: vec![MetricSpec {
            name: "FLOW".into(),
            higher_is_worse: true,
            rule: case.rule,
            floor: 0.0,
            adjusted: true,
        }],
        control: case.control,
        cycles_per_block: case.cycles_per_block,
        alpha: case.alpha,
        max_blocks: case.max_blocks,
        precision: None,
        stop_on_worse: matches!(case.rule, Rule::Gate { .. }),
    };
    let Ok(mut e) = Experiment::new(design) else {
        return Run {
            findings: Vec::new(),
            estimates: Vec::new(),
            blocks: 0,
        };
    };
    e.plan(case.max_blocks);
    let n = case.noise;
    let mut drift = 0.0;
    let mut bias: Vec<f64> = (0..case.arms).map(|_| n.process * rng.normal()).collect();
    loop {
        let order = e.order().to_vec();
        let block_begins = e.cycles().is_multiple_of(case.cycles_per_block.max(1));
        let mut figures = vec![
            Figures {
                values: vec![None],
                control: None
            };
            case.arms
        ];
        for (k, arm) in order.into_iter().enumerate() {
            let first = block_begins && k == 0;
            drift += n.drift * rng.normal();
            let weather = n.weather * rng.normal();
            let burst = if rng.uniform() < n.outlier_p {
                n.outlier * rng.uniform() * 2.0
            } else {
                0.0
            };
            let cost = (100.0f64).ln()
                + case.effects.get(arm).copied().unwrap_or(0.0).ln_1p()
                + drift
                + bias[arm]
                + n.weather_share * weather
                + n.round * rng.normal()
                + burst
                + if first { n.restart } else { 0.0 };
            let control = (40.0f64).ln()
                + drift
                + weather
                + n.control * rng.normal()
                + burst
                + if first { n.restart_control } else { 0.0 };
            figures[arm] = Figures {
                values: vec![Some(cost.exp())],
                control: Some(control.exp()),
            };
        }
        let closed = e.record(figures).unwrap_or(false);
        if !closed {
            continue;
        }
        for b in bias.iter_mut() {
            *b = n.process * rng.normal();
        }
        if e.blocks() >= FIRST_LOOK {
            let last = e.blocks() >= case.max_blocks;
            e.look(last);
            if last || e.done() {
                break;
            }
        }
    }
    let outcomes = e.outcomes();
    Run {
        findings: outcomes.iter().map(|o| o.finding).collect(),
        estimates: outcomes
            .iter()
            .map(|o| o.interval.map_or(f64::NAN, |i| i.ratio - 1.0))
            .collect(),
        blocks: e.blocks(),
    }
}

/// How `runs` simulated runs of `case` ended, per contrast: worse, better, within,
/// undecided.
pub fn tally(case: &Case, runs: u64, seed: u64) -> Vec<[usize; 4]> {
    let mut t = vec![[0usize; 4]; case.arms.saturating_sub(1)];
    for r in 0..runs {
        let run = run(case, seed.wrapping_add(7919 * r));
        for (ci, f) in run.findings.iter().enumerate() {
            let k = match f {
                Some(Finding::Worse) => 0,
                Some(Finding::Better) => 1,
                Some(Finding::Within) => 2,
                None => 3,
            };
            if let Some(slot) = t.get_mut(ci) {
                slot[k] += 1;
            }
        }
    }
    t
}

/// How many of `runs` runs called any difference (worse or better, in any contrast): the
/// false verdicts of an A/A case.
pub fn false_verdicts(case: &Case, runs: u64, seed: u64) -> usize {
    (0..runs)
        .filter(|r| {
            run(case, seed.wrapping_add(7919 * r))
                .findings
                .iter()
                .any(|f| matches!(f, Some(Finding::Worse | Finding::Better)))
        })
        .count()
}
