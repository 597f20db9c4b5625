//! The A/B gate's decisions: flow A (the baseline build) and flow B (the build to judge)
//! measured in interleaved rounds, ABBA, and judged by the experiment engine
//! ([`crate::experiment`]) as its two-arm use: pairs of rounds adjusted by the driver's
//! change in the same pair (a control variate), blocks of four pairs on fresh flow
//! processes, repeated confidence intervals from the eighth block on. Pure code:
//! [`crate::orchestrate::ab`] starts the flows and measures.

use super::{AbRounds, Adjustment, Decision, GateError, Outcome, Sequential, Verdict, overall};
use crate::experiment::sequential::{PairedInterval, detectable_change, pairs_to_decide};
use crate::experiment::{self, Design, Experiment, Figures, Finding, Look, MetricSpec, Rule};
use crate::report::saved::{Metric, SavedFigures};
use std::time::Duration;

/// The overall two-sided error level of the repeated intervals: each one-sided error (a
/// false regression, a false pass) is at most half of it.
pub const ALPHA: f64 = 0.10;
/// Pairs per block: A B, B A, A B, B A on the same two flow processes, then both restart.
/// Four pairs keep the restarts' cost (about a second each) small against the rounds.
pub const PAIRS_PER_BLOCK: usize = 4;

/// What an A/B gate judges: FLOW and the captured total, then the metrics named, each
/// checked against the first rounds (a metric neither side has is a typo, not a pass).
///
/// The captured total, not the corrected one: both sides run on the same machine in the
/// same stretch of time, so the capture ratio corrects nothing between them, and it adds
/// the machine's unattributed CPU as noise (an A/A run here saw it fall to 0.54–0.68 in 12
/// of 128 rounds, when processes came and went).
pub fn metrics(
    named: impl Iterator<Item = String>,
    tolerance: impl Fn(&str) -> f64,
    first: &[SavedFigures],
    control: Option<&str>,
) -> Result<Vec<MetricSpec>, GateError> {
    let has = |m: &Metric| first.iter().all(|r| m.of(r).is_some());
    if let Some(c) = control
        && !has(&Metric::named(c))
    {
        return Err(GateError::input(
            "--control",
            format!(
                "the first rounds have no figure for '{c}' ({}): name a group both sides run the same code in (DRIVER, the default), or none",
                Metric::named(c).field()
            ),
        ));
    }
    let mut names = vec!["FLOW".to_string(), "captured".to_string()];
    let groups: Vec<String> = first
        .first()
        .map(|r| r.groups.iter().map(|g| g.name.clone()).collect())
        .unwrap_or_default();
    for named in named {
        let each = super::expand_metric(&named, &groups, |metric| {
            first.iter().filter_map(|r| metric.of(r)).collect()
        })?;
        for m in each {
            if !names.contains(&m) {
                names.push(m);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let metric = Metric::named(&name);
            if !has(&metric) {
                return Err(GateError::input(
                    "--metric",
                    format!(
                        "the first rounds have no figure for '{name}' ({}): name a group of the run options, captured, corrected, rate or p99",
                        metric.field()
                    ),
                ));
            }
            Ok(MetricSpec {
                rule: Rule::Gate {
                    tolerance: tolerance(&name),
                },
                higher_is_worse: metric.higher_is_worse(),
                floor: 0.0,
                adjusted: control.is_some_and(|c| c != name),
                name,
            })
        })
        .collect()
}

/// The A/B gate's design: B against A, blocks of four pairs, at most `max_blocks`.
pub(crate) fn design(metrics: Vec<MetricSpec>, control: bool, max_blocks: usize) -> Design {
    Design {
        arms: 2,
        contrasts: vec![(0, 1)],
        metrics,
        control,
        cycles_per_block: PAIRS_PER_BLOCK,
        alpha: ALPHA,
        max_blocks,
        precision: None,
        stop_on_worse: true,
    }
}

/// A round's figures for the engine: each metric's, and the control's.
pub fn figures(specs: &[MetricSpec], control: Option<&str>, r: &SavedFigures) -> Figures {
    Figures {
        values: specs.iter().map(|s| Metric::named(&s.name).of(r)).collect(),
        control: control.and_then(|c| Metric::named(c).of(r)),
    }
}

/// The verdict a finding gives under the gate's rule.
pub(crate) fn verdict_of(f: Finding) -> Verdict {
    match f {
        Finding::Worse => Verdict::Regression,
        Finding::Better => Verdict::Improvement,
        Finding::Within => Verdict::Pass,
    }
}

fn pct(x: f64) -> f64 {
    100.0 * (x - 1.0)
}

/// The progress line of a look.
pub(crate) fn look_line(look: &Look, specs: &[MetricSpec], elapsed: Duration) -> String {
    let mut line = format!(
        "gate A/B: look {} after {} of {} planned blocks ({:.0} s, {:.1}% interval):",
        look.boundary.look,
        look.blocks,
        look.planned,
        elapsed.as_secs_f64(),
        100.0 * (1.0 - look.boundary.level)
    );
    for (_, c) in &look.control_moved {
        line.push_str(&format!(
            " (the control itself moved {:+.1}% [{:+.1}%, {:+.1}%]: judged unadjusted)",
            pct(c.ratio),
            pct(c.low),
            pct(c.high)
        ));
    }
    for item in &look.items {
        let name = &specs[item.metric].name;
        let Some(i) = item.interval else {
            continue;
        };
        let state = match item.decided {
            Some(Some(f)) => verdict_of(f).as_str(),
            _ => "undecided",
        };
        let slope = item
            .slope
            .map(|b| format!(" (β {b:.2})"))
            .unwrap_or_default();
        line.push_str(&format!(
            " {name} {:+.1}% [{:+.1}%, {:+.1}%] {state}{slope};",
            pct(i.ratio),
            pct(i.low),
            pct(i.high)
        ));
    }
    line.trim_end_matches(';').to_string()
}

/// The method of the A/B gate's intervals, as the JSON's `sequential.method` gives it.
pub const METHOD: &str = "repeated confidence intervals (Jennison & Turnbull, JRSS B 51:305-361, 1989) from the Wilcoxon signed-rank interval of the blocks' log ratios; the error level spent over the looks by the Lan-DeMets O'Brien-Fleming-type function (Biometrika 70:659-663, 1983) of the information fraction blocks / plan, the plan made again from the pace before every look (Lan & DeMets, Biometrics 45:1017-1020, 1989), the fraction never going back and the last look spending all that is left";

/// The gate's outcome: a decision per metric, from its deciding look, or from the last
/// look when it was not decided (with what more would take, at the run's pace when
/// `sequential` says it).
pub fn outcome(
    engine: &Experiment,
    rounds: [&[SavedFigures]; 2],
    a_first: Vec<bool>,
    control: Option<&str>,
    (a, b): (String, String),
    sequential: Option<Sequential>,
) -> Outcome {
    let specs = &engine.design().metrics;
    let decisions: Vec<Decision> = engine
        .outcomes()
        .iter()
        .map(|o| decision(o, &specs[o.metric], rounds, control, sequential.as_ref()))
        .collect();
    Outcome {
        schema: super::SCHEMA,
        mode: "ab",
        baseline: a,
        current: b,
        verdict: if decisions.is_empty() {
            Verdict::Inconclusive
        } else {
            overall(&decisions)
        },
        decisions,
        ab_rounds: Some(AbRounds {
            a_first,
            a: rounds[0].to_vec(),
            b: rounds[1].to_vec(),
        }),
        sequential,
        baseline_runs: None,
        instruction_counts: None,
        profile: Default::default(),
    }
}

fn decision(
    o: &experiment::Outcome,
    spec: &MetricSpec,
    rounds: [&[SavedFigures]; 2],
    control: Option<&str>,
    sequential: Option<&Sequential>,
) -> Decision {
    let metric = Metric::named(&spec.name);
    let values =
        |r: &[SavedFigures]| -> Vec<f64> { r.iter().filter_map(|f| metric.of(f)).collect() };
    let tolerance = spec.rule.threshold();
    let adjusted_for = o.slope.zip(control).map(|(slope, c)| Adjustment {
        group: c.to_string(),
        slope,
    });
    let adjusted = adjusted_for.as_ref().map_or_else(String::new, |a| {
        format!("; each pair adjusted by {}'s (β {:.2})", a.group, a.slope)
    });
    let (verdict, note) = match (o.finding, o.interval) {
        (Some(f), _) => (
            verdict_of(f),
            format!(
                "decided after {} blocks of {PAIRS_PER_BLOCK} pairs (A/B, ABBA order){adjusted}",
                o.decided_after.unwrap_or(o.blocks)
            ),
        ),
        (None, Some(i)) => (
            Verdict::Inconclusive,
            undecided_note(o, &i, tolerance, sequential) + &adjusted,
        ),
        (None, None) => (
            Verdict::Inconclusive,
            format!(
                "only {} finished blocks: raise --max-rounds or --max-time",
                o.blocks
            ),
        ),
    };
    let (ratio, low, high) = o
        .interval
        .map_or((f64::NAN, f64::NAN, f64::NAN), |i| (i.ratio, i.low, i.high));
    let mut d = Decision::of(
        &spec.name,
        metric.unit(),
        &values(rounds[0]),
        &values(rounds[1]),
        tolerance,
    )
    .interval(ratio, (low, high), o.level)
    .p(o.p_value)
    .judged(verdict, Some(note));
    d.adjusted_for = adjusted_for;
    d
}

/// Why a metric is undecided, the smallest change these blocks could have caught, what
/// ended the run before it was decided, and about how many blocks (and how long, at the
/// run's pace) would decide it at this spread.
fn undecided_note(
    o: &experiment::Outcome,
    i: &PairedInterval,
    tolerance: f64,
    sequential: Option<&Sequential>,
) -> String {
    let reach = detectable_change(i.sd_log, i.pairs, i.z, tolerance);
    let ended = sequential.map_or_else(String::new, ended_before);
    let pace = sequential.map_or(0.0, |s| s.seconds_per_block);
    // What to raise: what stopped the run.
    let raise = match sequential.map(|s| s.stopped) {
        Some("rounds") => "raise --max-rounds (or leave it out)",
        Some("cap") => "make rounds longer (--count)",
        _ => "raise --max-time",
    };
    let more = match pairs_to_decide(i, tolerance) {
        Some(n) if n > o.blocks => format!(
            "about {n} blocks ({} rounds{}) would decide it at this spread: {raise}, or make rounds longer (--count)",
            2 * PAIRS_PER_BLOCK * n,
            time_for(n, pace)
        ),
        Some(_) => format!(
            "a few more blocks would probably decide it{}: {raise}",
            time_for(o.blocks + o.blocks.div_ceil(4), pace)
        ),
        None => "the estimate sits on the tolerance's edge: no number of rounds will decide it; a tolerance further from the change would".into(),
    };
    let skipped = if o.skipped > 0 {
        format!(" ({} pairs had no figure for it)", o.skipped)
    } else {
        String::new()
    };
    format!(
        "the interval [{:+.1}%, {:+.1}%] straddles +{:.1}% after {} blocks{skipped}{ended}; these blocks could catch +{:.1}% or more; {more}",
        pct(i.low),
        pct(i.high),
        100.0 * tolerance,
        i.pairs,
        100.0 * reach
    )
}

/// What ended a run before a metric was decided, as a clause: ", not decided within the
/// time given (--max-time 5m; 298 s used)".
fn ended_before(s: &Sequential) -> String {
    let given = humantime::format_duration(Duration::from_secs_f64(s.max_time_s.round()));
    match s.stopped {
        "time" => format!(
            ", not decided within the time given (--max-time {given}; {:.0} s used, the next block would not have fitted)",
            s.elapsed_s
        ),
        "rounds" => format!(
            ", not decided within --max-rounds {}",
            s.max_rounds.unwrap_or(2 * PAIRS_PER_BLOCK * s.blocks)
        ),
        "cap" => format!(
            ", not decided within the {} rounds the gate takes at most",
            crate::config::gate::MAX_AB_ROUNDS
        ),
        "interrupted" => ", interrupted before it was decided".to_string(),
        _ => String::new(),
    }
}

/// " in about 7 min in all", the time `blocks` blocks take at `pace` seconds a block; empty
/// without a pace.
fn time_for(blocks: usize, pace: f64) -> String {
    if pace <= 0.0 || !pace.is_finite() {
        return String::new();
    }
    let secs = (blocks as f64 * pace).round();
    format!(
        ", about {} in all at {pace:.1} s a block",
        humantime::format_duration(Duration::from_secs_f64(secs))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::saved::{SavedGroup, SavedLatency};

    fn round(flow: f64, driver: f64) -> SavedFigures {
        SavedFigures {
            rate_tps: 1000.0,
            round_trip_us: SavedLatency { p99: 900.0 },
            captured_us_per_tran: Some(flow + driver),
            corrected_us_per_tran: None,
            groups: vec![
                SavedGroup {
                    name: "FLOW".into(),
                    total_us_per_tran: flow,
                    cost: crate::accounting::resources::GroupCost {
                        syncs_per_tran: Some(1.0),
                        disk_read_bytes_per_tran: Some(0.0),
                        ..Default::default()
                    },
                },
                SavedGroup {
                    name: "DRIVER".into(),
                    total_us_per_tran: driver,
                    cost: Default::default(),
                },
            ],
        }
    }

    /// An A/B run fed synthetic rounds: B costs `change` more than A; every round's
    /// weather moves FLOW and DRIVER together.
    fn gate(change: f64) -> Outcome {
        let max_blocks = 40;
        let first = [round(100.0, 40.0), round(100.0 * (1.0 + change), 40.0)];
        let specs =
            metrics(std::iter::empty(), |_| 0.025, &first, Some("DRIVER")).expect("metrics");
        let mut e = Experiment::new(design(specs.clone(), true, max_blocks)).expect("design");
        e.plan(max_blocks);
        let mut rounds: [Vec<SavedFigures>; 2] = [Vec::new(), Vec::new()];
        let mut a_first = Vec::new();
        for c in 0..(max_blocks * PAIRS_PER_BLOCK) {
            let order = e.order().to_vec();
            a_first.push(order[0] == 0);
            let mut figs = vec![
                Figures {
                    values: vec![],
                    control: None
                };
                2
            ];
            for (k, &arm) in order.iter().enumerate() {
                let weather = 1.0 + 0.04 * (((c * 7 + k * 3) % 11) as f64 - 5.0) / 5.0;
                let cost = 100.0 * if arm == 1 { 1.0 + change } else { 1.0 };
                let r = round(cost * weather, 40.0 * weather);
                figs[arm] = figures(&specs, Some("DRIVER"), &r);
                rounds[arm].push(r);
            }
            if e.record(figs).expect("cycle") && e.look_due() {
                e.look(e.blocks() >= max_blocks);
                if e.done() {
                    break;
                }
            }
        }
        outcome(
            &e,
            [&rounds[0], &rounds[1]],
            a_first,
            Some("DRIVER"),
            ("A: a".into(), "B: b".into()),
            None,
        )
    }

    #[test]
    fn undecided_when_the_time_ran_out_says_so_with_the_time_it_would_need() {
        // +3 % [+1 %, +5 %] against a 2.5 % tolerance after the eight blocks the time held.
        let i = PairedInterval {
            ratio: 1.03,
            low: 1.01,
            high: 1.05,
            sd_log: 0.03,
            pairs: 8,
            z: 2.5,
        };
        let o = experiment::Outcome {
            contrast: 0,
            metric: 0,
            finding: None,
            rule: Rule::Gate { tolerance: 0.025 },
            interval: Some(i),
            level: 0.95,
            decided_after: None,
            precise: false,
            looked: true,
            unadjusted_ratio: Some(1.03),
            slope: None,
            blocks: 8,
            skipped: 0,
            p_value: 0.01,
        };
        let seq = Sequential {
            method: METHOD,
            alpha: ALPHA,
            max_time_s: 300.0,
            max_rounds: None,
            pairs_per_block: PAIRS_PER_BLOCK,
            blocks: 8,
            elapsed_s: 296.0,
            seconds_per_block: 37.0,
            stopped: "time",
            looks: Vec::new(),
        };
        let note = undecided_note(&o, &i, 0.025, Some(&seq));
        assert!(
            note.contains("not decided within the time given (--max-time 5m; 296 s used"),
            "{note}"
        );
        assert!(note.contains("in all at 37.0 s a block"), "{note}");
    }

    #[test]
    fn a_regression_beyond_the_tolerance_is_called_and_no_change_passes() {
        let bad = gate(0.10);
        assert_eq!(bad.verdict, Verdict::Regression, "{:?}", bad.decisions);
        let flow = &bad.decisions[0];
        assert_eq!((flow.metric.as_str(), flow.unit), ("FLOW", "us/tran"));
        assert!(flow.ratio > 1.08 && flow.ratio < 1.12, "{flow:?}");
        assert!(flow.adjusted_for.is_some(), "the driver adjusts FLOW");
        let same = gate(0.0);
        assert_eq!(same.verdict, Verdict::Pass, "{:?}", same.decisions);
        assert_eq!(same.mode, "ab");
    }

    #[test]
    fn a_metric_or_control_the_rounds_lack_is_refused() {
        let first = [round(100.0, 40.0), round(100.0, 40.0)];
        let e = metrics(["DB".to_string()].into_iter(), |_| 0.02, &first, None).expect_err("no DB");
        assert!(e.to_string().contains("'DB'"), "{e}");
        assert!(metrics(std::iter::empty(), |_| 0.02, &first, Some("QMGR")).is_err());
        let specs = metrics(std::iter::empty(), |_| 0.02, &first, Some("DRIVER")).expect("ok");
        assert_eq!(
            specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["FLOW", "captured"]
        );
    }

    #[test]
    fn a_figure_beyond_cpu_named_bare_is_each_group_s_that_has_it_above_zero() {
        let first = [round(100.0, 40.0), round(100.0, 40.0)];
        let names = |named: &[&str]| {
            metrics(named.iter().map(|s| s.to_string()), |_| 0.02, &first, None)
                .map(|specs| specs.into_iter().map(|s| s.name).collect::<Vec<_>>())
        };
        // FLOW syncs once a message; DRIVER is never gated unless named.
        assert_eq!(
            names(&["syncs"]).expect("syncs"),
            ["FLOW", "captured", "FLOW:syncs"]
        );
        assert_eq!(
            names(&["FLOW:syncs"]).expect("one group's"),
            ["FLOW", "captured", "FLOW:syncs"]
        );
        // Read nothing: zero in every round, or null, is nothing to gate.
        for none in ["disk_read_bytes", "net_sent_bytes"] {
            let e = names(&[none]).expect_err(none);
            assert!(e.to_string().contains("no group of the runs"), "{e}");
        }
        // A growth changes sign: no ratio of it.
        let e = names(&["rss_growth_bytes"]).expect_err("growth");
        assert!(e.to_string().contains("changes sign"), "{e}");
        let m = crate::report::saved::Metric::named("FLOW:syncs");
        assert_eq!(
            (m.name(), m.unit()),
            ("FLOW:syncs".to_string(), "calls/tran")
        );
        assert_eq!(m.field(), "groups[name = FLOW].syncs_per_tran");
    }
}
