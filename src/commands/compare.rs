//! `oemputx compare`: the broker paper's overhead table — each group's CPU µs per
//! transaction in each setting, and the Total Overhead % of each against the first (IBM's
//! WebSphere Message Broker for z/OS performance report measured the cost of accounting and
//! statistics this way). Live, the settings are flows measured in one window, in
//! interleaved rounds, and every change comes with its interval (the experiment engine
//! decides, [`crate::report::compare`] tabulates); saved reports are separate runs, shown
//! with each run's own spread.

use crate::config::compare::{CompareConfig, CompareOutputs, LiveCompare};
use crate::exit::Exit;
use crate::experiment::{Experiment, Figures, Look};
use crate::export::compare::SavedComparison;
use crate::export::outputs::{Outputs, Style};
use crate::export::{self, cells};
use crate::interleave::flow_arm::{FlowArm, FlowGroup};
use crate::interleave::{Budget, End, Interleave};
use crate::report::Report;
use crate::report::compare::{self as model, Comparison, SettingRow, TOTAL};
use crate::report::saved::{Metric, ReportFileError, Saved, SavedFigures, differences};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx compare`: saved reports, or settings measured now.
pub fn compare(cfg: &CompareConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    match cfg {
        CompareConfig::Saved {
            reports,
            force,
            outputs,
        } => saved(reports, *force, outputs),
        CompareConfig::Live(live) => measure_live(live, interrupt),
    }
}

/// `oemputx compare BASE.json OTHER.json…`: separate runs, each with its own spread.
fn saved(reports: &[PathBuf], force: bool, args: &CompareOutputs) -> anyhow::Result<Exit> {
    let runs: Vec<Saved> = reports
        .iter()
        .map(|p| Saved::load(p))
        .collect::<Result<_, _>>()?;
    let Some((base, others)) = runs.split_first() else {
        return Ok(Exit::Usage);
    };
    let diffs: Vec<String> = others
        .iter()
        .flat_map(|o| differences(base, o, false))
        .collect();
    if !diffs.is_empty() && !force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let rows = crate::export::compare::rows(&runs);
    let mut text = String::from(
        "oemputx compare: CPU per transaction, each saved run against the first. These are separate runs: what differs between them includes the machine's drift between their windows; each shows its own rounds' spread [min-max]. To compare settings in one window, with intervals: oemputx compare --flow-cmd CMD --setting NAME=ARGS … -- RUN OPTIONS\n\n",
    );
    text.push_str(&cells::text(&rows));
    if !diffs.is_empty() {
        text.push_str("\nCompared with --force although the runs differ:\n");
        text.push_str(&diffs.join("\n"));
        text.push('\n');
    }
    let mut out = Outputs::new();
    let comparison = SavedComparison {
        runs: &runs,
        forced_differences: &diffs,
    };
    out.artifact(&comparison, args, &Style::default());
    out.finish(Some(&text))?;
    Ok(Exit::Ok)
}

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

/// Every setting's flow, each on its own queue.
fn start_arms(l: &LiveCompare, queues: &[String]) -> anyhow::Result<Vec<FlowArm>> {
    l.settings
        .iter()
        .zip(queues)
        .map(|(s, q)| {
            let mut run = l.run.on_own_queue(q)?;
            run.label = format!("{}-{}", l.run.label, s.name);
            FlowArm::start(
                s.name.clone(),
                &s.flow,
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

/// `oemputx compare --flow-cmd CMD --setting NAME=ARGS … -- RUN OPTIONS`.
fn measure_live(l: &LiveCompare, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
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
    crate::say!(
        "compare: {k} settings in interleaved rounds, blocks of {per_block} cycles on fresh flow processes, until every change is decided or {} / {} rounds pass",
        humantime::format_duration(l.max_time),
        max_rounds
    );
    let start_utc = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut run = Interleave::new(
        &mut arms,
        Budget {
            max_time: l.max_time,
            max_blocks,
        },
    );
    let first_order = crate::experiment::order::williams(k)[0].clone();
    if !run.cycle(&first_order, &interrupt)? {
        crate::say!("compare: interrupted before the first cycle");
        return Ok(Exit::Interrupted);
    }
    let firsts: Vec<&Report> = run.rounds.iter().filter_map(|r| r.last()).collect();
    let metrics = metrics_of(&firsts);
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
    drop(arms);
    let comparison = Comparison {
        schema: model::SCHEMA,
        start_utc,
        settings: l
            .settings
            .iter()
            .map(|s| SettingRow {
                name: s.name.clone(),
                command: s.shown.clone(),
            })
            .collect(),
        run: run_settings,
        arms: model::arms(&engine, &names),
        changes: model::changes(&engine, &names, control),
        metrics,
        run_shape: shape,
        partial,
        host,
    };
    write_live(&comparison, &l.outputs)?;
    Ok(match end {
        End::Interrupted => Exit::Interrupted,
        End::Failed => Exit::Failure,
        End::Decided | End::Budget => Exit::Ok,
    })
}

/// The live comparison: the files asked for first, then stdout.
fn write_live(c: &Comparison, o: &CompareOutputs) -> anyhow::Result<()> {
    let mut out = Outputs::new();
    out.artifact(c, o, &Style::default());
    out.finish(Some(&export::compare::live_text(c)))
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
