//! A live comparison (`oemputx compare --flow-cmd … --setting …`): every setting a flow of
//! its own on its own queue, measured in interleaved rounds by the experiment engine until
//! every change is decided or the budget is spent; the result is the comparison the
//! command hands to its outputs.

use crate::config::compare::LiveCompare;
use crate::experiment::{Experiment, Figures, Look};
use crate::export;
use crate::interleave::flow_arm::{Arms, FlowArm, FlowGroup};
use crate::interleave::{Budget, End, Interleave};
use crate::report::Report;
use crate::report::compare::{self as model, Comparison, SettingRow, TOTAL};
use crate::report::saved::{Metric, SavedFigures};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The metrics every setting's first round has: each group, then the captured total.
fn metrics_of(first: &[&Report]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let Some(r) = first.first() {
        for g in &r.groups {
            if first
                .iter()
                .all(|o| o.groups.iter().any(|x| x.name == g.name))
            {
                names.push(g.name.clone());
            }
        }
    }
    if first.iter().all(|r| r.captured_us_per_tran.is_some()) {
        names.push(TOTAL.to_string());
    }
    names
}

fn figures(metrics: &[String], control: Option<&str>, r: &Report) -> Figures {
    let f = SavedFigures::from(r);
    Figures {
        values: metrics.iter().map(|m| Metric::named(m).of(&f)).collect(),
        control: control.and_then(|c| Metric::named(c).of(&f)),
    }
}

/// The progress line of a look: each change's estimate and interval so far.
fn look_line(look: &Look, names: &[String], metrics: &[String], elapsed: f64) -> String {
    let mut line = format!(
        "compare: look {} after {} of {} planned blocks ({elapsed:.0} s, {:.1}% intervals):",
        look.boundary.look,
        look.blocks,
        look.planned,
        100.0 * (1.0 - look.boundary.level)
    );
    for item in &look.items {
        if let Some(i) = item.interval {
            let state = match item.decided {
                Some(f) => export::compare::short(f),
                None => "undecided",
            };
            line.push_str(&format!(
                " {} {} {:+.1}% [{:+.1}%, {:+.1}%] {state};",
                names[item.contrast + 1],
                metrics[item.metric],
                100.0 * (i.ratio - 1.0),
                100.0 * (i.low - 1.0),
                100.0 * (i.high - 1.0),
            ));
        }
    }
    line.trim_end_matches(';').to_string()
}

/// Every setting's flow, each on its own queue, with the setting's own run; a setting of
/// run options alone on the run's queue, served by the responder the run options name.
fn start_arms(l: &LiveCompare, queues: &[String]) -> anyhow::Result<Arms> {
    l.settings
        .iter()
        .zip(queues)
        .map(|(s, q)| {
            let own = s.run.as_deref().unwrap_or(&l.run);
            let mut run = match &s.flow {
                Some(_) => own.on_own_queue(q)?,
                None => own.clone(),
            };
            run.label = format!("{}-{}", l.run.label, s.name);
            let Some(flow) = &s.flow else {
                return Ok(FlowArm::run_only(s.name.clone(), run));
            };
            FlowArm::start(
                s.name.clone(),
                flow,
                s.extra.clone(),
                (1, 1),
                FlowGroup::Tree,
                run,
            )
        })
        .collect()
}

/// The rounds a live compare may take: as given, or the default (raised to what the first
/// look needs with many settings). As the gate's, a bound below the first look would be
/// overridden without a word, so it is refused, naming the least.
fn max_rounds(given: Option<usize>, k: usize, per_block: usize) -> anyhow::Result<usize> {
    let first_look = crate::experiment::FIRST_LOOK;
    let least = k * per_block * first_look;
    let max_rounds = given.unwrap_or(crate::config::compare::MAX_ROUNDS.max(least));
    if max_rounds < least {
        return Err(crate::config::bad(
            "--max-rounds",
            format!(
                "{max_rounds} rounds cannot decide anything: with {k} settings the first look comes after {first_look} blocks of {} rounds, so give {least} or more (default 400), or bound the run with --max-time",
                k * per_block
            ),
        )
        .into());
    }
    Ok(max_rounds)
}

/// `oemputx compare --flow-cmd CMD --setting NAME=ARGS … -- RUN OPTIONS`: every setting's
/// flow measured in interleaved rounds until every change is decided or the budget is
/// spent; the comparison and how it ended, or `None` when interrupted before the first
/// cycle (nothing to report).
pub fn live(
    l: &LiveCompare,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Option<(Comparison, End)>> {
    let k = l.settings.len();
    let names: Vec<String> = l.settings.iter().map(|s| s.name.clone()).collect();
    let pid = std::process::id();
    let queues: Vec<String> = (0..k)
        .map(|i| format!("{}.C{i}.{pid}", l.run.request_queue))
        .collect();
    let per_block = model::cycles_per_block(k);
    let max_rounds = max_rounds(l.max_rounds, k, per_block)?;
    let max_blocks = max_rounds / (k * per_block);
    let mut arms = start_arms(l, &queues)?;
    announce(l, per_block, max_rounds);
    let start_utc = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut run = Interleave::new(
        arms.as_mut_slice(),
        Budget {
            max_time: l.max_time,
            max_blocks,
        },
    );
    let first_order = crate::experiment::order::williams(k)[0].clone();
    if !run.cycle(&first_order, &interrupt)? {
        crate::say!("compare: interrupted before the first cycle");
        return Ok(None);
    }
    let firsts: Vec<&Report> = run.rounds.iter().filter_map(|r| r.last()).collect();
    let metrics = metrics_of(&firsts);
    let control = control_of(l, &firsts);
    let (run_settings, host) = (firsts[0].settings.clone(), firsts[0].host.clone());
    let design = model::design(&metrics, k, (l.min_effect, l.floor_us), control, max_blocks);
    let mut engine = Experiment::new(design)?;
    let end = run.drive(
        &mut engine,
        |r| figures(&metrics, control, r),
        &interrupt,
        |look, elapsed| {
            crate::say!(
                "{}",
                look_line(look, &names, &metrics, elapsed.as_secs_f64())
            )
        },
    );
    let partial = run.partial(&engine, end);
    if let Some(p) = partial.as_ref().filter(|_| end == End::Failed) {
        crate::say!(
            "compare: {}; the report covers the blocks measured",
            p.line()
        );
    }
    let shape = model::RunShape {
        blocks: engine.blocks(),
        cycles: engine.cycles(),
        cycles_per_block: per_block,
        elapsed_s: run.elapsed().as_secs_f64(),
        ended: end.as_str(),
        control: control.map(String::from),
        floor_us: l.floor_us,
        orders: std::mem::take(&mut run.orders),
    };
    let (profile_diff, profile_folded) = profiles(&run.rounds, &names);
    drop(arms);
    let comparison = Comparison {
        profile_diff,
        profile_folded,
        schema: model::SCHEMA,
        start_utc,
        settings: setting_rows(l),
        run: run_settings,
        arms: model::arms(&engine, &names),
        changes: model::changes(&engine, &names, control),
        metrics,
        run_shape: shape,
        partial,
        host,
    };
    Ok(Some((comparison, end)))
}

/// The control group the pairs are adjusted by: the one asked for, where every first round
/// has it (said when they do not: the pairs are then judged as measured).
fn control_of<'a>(l: &'a LiveCompare, firsts: &[&Report]) -> Option<&'a str> {
    let control = l
        .control
        .as_deref()
        .filter(|c| firsts.iter().all(|r| r.groups.iter().any(|g| g.name == *c)));
    if l.control.is_some() && control.is_none() {
        crate::say!(
            "compare: the rounds have no group {} to adjust the pairs by: judged as measured",
            l.control.as_deref().unwrap_or_default()
        );
    }
    control
}

/// What the comparison is about to do.
fn announce(l: &LiveCompare, per_block: usize, max_rounds: usize) {
    let on = if l.settings.iter().any(|s| s.flow.is_some()) {
        "on fresh flow processes"
    } else {
        "on the run options' responder"
    };
    crate::say!(
        "compare: {} settings in interleaved rounds, blocks of {per_block} cycles {on}, until every change is decided or {} / {} rounds pass",
        l.settings.len(),
        humantime::format_duration(l.max_time),
        max_rounds
    );
}

/// Each setting as the comparison names it: its name and the command it ran.
fn setting_rows(l: &LiveCompare) -> Vec<SettingRow> {
    l.settings
        .iter()
        .map(|s| SettingRow {
            name: s.name.clone(),
            command: s.shown.clone(),
        })
        .collect()
}

/// With --profile: every setting's functions against the base's, and each setting's stacks.
fn profiles(
    rounds: &[Vec<Report>],
    names: &[String],
) -> (
    Vec<crate::profiling::diff::FunctionChange>,
    Vec<crate::profiling::diff::Folded>,
) {
    use crate::profiling::diff::{Differential, folded_by_group};
    let Some(base) = rounds.first() else {
        return Default::default();
    };
    let mut changes = Vec::new();
    for (arm, name) in rounds.iter().zip(names).skip(1) {
        let d = Differential::of(
            base.iter().map(|r| &r.profile),
            arm.iter().map(|r| &r.profile),
            Some(name),
        );
        changes.extend(d.profile_diff);
    }
    changes.sort_by(|x, y| {
        y.change_us_per_tran
            .abs()
            .total_cmp(&x.change_us_per_tran.abs())
    });
    let folded = rounds
        .iter()
        .map(|arm| {
            let profiles: Vec<&crate::profiling::Profile> =
                arm.iter().filter_map(|r| r.profile.as_ref()).collect();
            folded_by_group(&profiles)
        })
        .collect();
    (changes, folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_bound_below_the_first_look_is_refused_naming_the_least() {
        let first = crate::experiment::FIRST_LOOK;
        // Two settings, one round each a block: the first look needs 2 × FIRST_LOOK rounds.
        assert_eq!(max_rounds(Some(2 * first), 2, 1).ok(), Some(2 * first));
        let e = max_rounds(Some(2 * first - 1), 2, 1).expect_err("below the first look");
        assert!(
            e.to_string().contains(&format!("give {}", 2 * first)),
            "{e}"
        );
        // Without a bound, the default, raised to what many settings need.
        let many = max_rounds(None, 50, 2).expect("default");
        assert!(many >= 50 * 2 * first, "{many}");
        assert_eq!(
            max_rounds(None, 2, 1).ok(),
            Some(crate::config::compare::MAX_ROUNDS.max(2 * first))
        );
    }
}
