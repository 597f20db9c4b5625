//! The one place where parsed command-line options become [`crate::config`]'s plain
//! options (ripgrep's low-level arguments becoming its high-level ones): a field for a
//! field, and the few checks only the command line's shape needs (a task list where a run
//! takes one number; the run options after `gate --`, parsed here, once).

use super::{
    AccountArgs, CompareArgs, CpuArgs, GateArgs, GroupArgs, LadderArgs, MatrixArgs, MergeArgs,
    PubsubArgs, RatioArgs, RunArgs, SourceArgs, SweepArgs, TaskCount,
};
use crate::config::compare::CompareOptions;
use crate::config::gate::{GateOptions, GateOutputs};
use crate::config::ladder::LadderOptions;
use crate::config::merge::MergeOptions;
use crate::config::pubsub::PubsubOptions;
use crate::config::sweep::SweepOptions;
use crate::config::tools::{AccountOptions, CpuOptions, MatrixOptions};
use crate::config::{AccountingOptions, ConfigError, OutputOptions, RunOptions, bad};
use std::time::Duration;

fn accounting(g: &GroupArgs, s: &SourceArgs, r: &RatioArgs, no_groups: bool) -> AccountingOptions {
    AccountingOptions {
        groups: g.groups.clone(),
        hosts: g.hosts.clone(),
        no_groups,
        cpu_source: s.cpu_source,
        count_syncs: !s.no_syncs,
        capture_ratio: r.capture_ratio.clone(),
    }
}

impl RunArgs {
    /// A run's options; its task list must be one number.
    pub fn options(&self) -> Result<RunOptions, ConfigError> {
        let tasks = match self.tasks.as_slice() {
            [] => 1,
            [TaskCount::N(n)] => *n,
            [TaskCount::Auto] => {
                return Err(bad(
                    "--tasks",
                    "auto is for `oemputx ladder`, which raises its tasks while the driver limits; a run takes a number",
                ));
            }
            _ => {
                return Err(bad(
                    "--tasks",
                    "takes one number for a run; a list such as 1,2,3,4 is for `oemputx sweep`",
                ));
            }
        };
        Ok(self.options_with_tasks(tasks))
    }

    /// The task counts of a list (sweep): numbers only, 1 when none is given.
    fn task_list(&self, command: &str) -> Result<Vec<usize>, ConfigError> {
        if self.tasks.is_empty() {
            return Ok(vec![1]);
        }
        self.tasks
            .iter()
            .map(|t| match t {
                TaskCount::N(n) => Ok(*n),
                TaskCount::Auto => Err(bad(
                    "--tasks",
                    format!("auto is for `oemputx ladder`; {command} takes task counts, e.g. --tasks 1,2,4"),
                )),
            })
            .collect()
    }

    fn options_with_tasks(&self, tasks: usize) -> RunOptions {
        RunOptions {
            qmgr: self.qmgr.clone(),
            config: self.config.clone(),
            request_queue: self.request_queue.clone(),
            reply_queue: self.reply_queue.clone(),
            no_clear: self.no_clear,
            declare: self.declare,
            put1: self.put1,
            model_queue: self.model_queue.clone(),
            confirm_window: self.confirm_window,
            replicas: self.replicas.map(usize::from),
            queue_type: self.queue_type,
            msgfile: self.msgfile.clone(),
            lines: self.lines,
            msg_size: self.msg_size,
            count: self.count,
            duration: self.duration.map(Duration::from),
            rounds: self.rounds,
            probe: self.probe.map(Duration::from),
            tasks,
            msgs_per_loop: self.msgs_per_loop,
            persistent: self.persistent,
            syncpoint: self.syncpoint,
            wait: self.wait.into(),
            reconnect_for: self.reconnect_for.map(Duration::from),
            max_timeouts: self.max_timeouts,
            match_mode: self.match_mode,
            warmup: self.warmup,
            rate: self.rate,
            accounting: accounting(&self.groups, &self.source, &self.ratio, self.no_groups),
            outputs: OutputOptions {
                // A run's formats: a sweep's or ladder's own (the chart) stay theirs.
                exports: self.outputs.exports_of(super::ResultKind::Run),
                save_baseline: self.save_baseline.clone(),
                delimiter: self.delimiter,
                decimal_comma: self.decimal_comma,
                no_save: self.save.no_save,
                reports_dir: self.save.reports_dir.clone(),
                quiet: self.quiet,
            },
            label: self.label.clone(),
            price_per_vcpu_hour: self.price_per_vcpu_hour,
            sample_stacks: self.profile,
            stats_interval: self.progress_every.map(Duration::from),
            no_progress: self.no_progress,
            progress: self.progress,
            shard: crate::config::shard::ShardOptions {
                shard: self.shard.clone(),
                shards: self.shards.clone(),
                run_id: self.run_id.clone(),
                start_at: self.start_at.clone(),
                measure: self.measure,
            },
        }
    }
}

impl SweepArgs {
    pub fn options(&self) -> Result<SweepOptions, ConfigError> {
        let tasks = self.run.task_list("sweep")?;
        Ok(SweepOptions {
            flow_cmd: self.flow_cmd.clone(),
            modes: self.modes.clone(),
            chart: self
                .chart
                .clone()
                .or_else(|| self.run.outputs.export_svg.clone()),
            run: self
                .run
                .options_with_tasks(tasks.first().copied().unwrap_or(1)),
            tasks,
            max_time: self.max_time.into(),
            precision: self.precision.clone(),
            min_effect: self.min_effect.clone(),
        })
    }
}

impl LadderArgs {
    pub fn options(&self) -> Result<LadderOptions, ConfigError> {
        let tasks = match self.run.tasks.as_slice() {
            [] | [TaskCount::Auto] => None,
            [TaskCount::N(n)] => Some(*n),
            _ => {
                return Err(bad(
                    "--tasks",
                    "a ladder takes one task count, or auto (the default)",
                ));
            }
        };
        Ok(LadderOptions {
            rates: self.rates.clone(),
            step_time: self.step_time.map(Duration::from),
            slo: self.slo.clone(),
            max_time: self.max_time.map(Duration::from),
            repeat: !self.no_repeat,
            capacity_at: self.capacity_at.clone(),
            tasks,
            run: self.run.options_with_tasks(tasks.unwrap_or(1)),
        })
    }
}

impl GateArgs {
    /// The gate's outputs as given: also what a gate whose options are refused writes its
    /// reason to (JUnit, step summary, annotations), so that a CI page says why.
    pub fn outputs(&self) -> GateOutputs {
        GateOutputs {
            github: self.github,
            exports: self.outputs.exports(),
        }
    }

    /// The gate's options, with the run options after `--` parsed as a run's, and each
    /// side's own on top of them.
    pub fn options(&self) -> Result<GateOptions, anyhow::Error> {
        let run = trailing_run(&self.run)?;
        let side =
            |name: &str, words: &Option<String>| -> Result<Option<RunOptions>, anyhow::Error> {
                let Some(words) = words else {
                    return Ok(None);
                };
                let words = shell_words::split(words).map_err(|e| {
                    bad(
                        if name == "A" { "--run-a" } else { "--run-b" },
                        e.to_string(),
                    )
                })?;
                own_run(&self.run, &format!("side {name}"), &words)
            };
        let (run_a, run_b) = (side("A", &self.run_a)?, side("B", &self.run_b)?);
        Ok(GateOptions {
            baseline: self.baseline.clone(),
            current: self.current.clone(),
            flow_a: self.flow_a.clone(),
            flow_b: self.flow_b.clone(),
            max_rounds: self.max_rounds,
            max_time: self.max_time.into(),
            control: self.control.clone(),
            run_a,
            run_b,
            instructions: self.instructions,
            runs: self.runs,
            tolerance: self.tolerance.clone(),
            gate_file: self.gate_file.clone(),
            metric: self.metric.clone(),
            strict: self.strict,
            force: self.force,
            outputs: self.outputs(),
            run,
            rejudge: self.rejudge.clone(),
            save_baseline: self.save_baseline.clone(),
        })
    }
}

impl PubsubArgs {
    pub fn options(&self) -> PubsubOptions {
        PubsubOptions {
            qmgr: self.qmgr.clone(),
            topic: self.topic.clone(),
            declare: self.declare,
            publishers: self.publishers,
            subscribers: self.subscribers,
            symbols: self.symbols,
            select: self.select,
            seed: self.seed,
            count: self.count,
            msg_size: self.msg_size,
            think: self.think.into(),
            rate: self.rate,
            persistent: self.persistent,
            ack: self.ack,
            select_by: self.select_by,
            drain_timeout: self.drain_timeout.into(),
            accounting: accounting(&self.groups, &self.source, &self.ratio, false),
            exports: self.outputs.exports(),
            no_save: self.save.no_save,
            reports_dir: self.save.reports_dir.clone(),
            rounds: self.rounds,
            compete: self.compete,
            find_capacity: self.find_capacity,
            duration: self.duration.map(Duration::from),
        }
    }
}

impl MatrixArgs {
    pub fn options(&self) -> MatrixOptions {
        MatrixOptions {
            qmgr: self.qmgr.clone(),
            count: self.count,
            rounds: self.rounds as usize,
            topic: self.topic.clone(),
            declare: self.declare,
            pattern: self.pattern.clone(),
            accounting: accounting(&self.groups, &self.source, &self.ratio, false),
            exports: self.outputs.exports(),
        }
    }
}

impl CpuArgs {
    pub fn options(&self) -> CpuOptions {
        CpuOptions {
            groups: self.groups.groups.clone(),
            hosts: self.groups.hosts.clone(),
            interval: self.interval.map(Duration::from),
            count: self.count,
            tsv: self.tsv,
            openmetrics: self.outputs.export_openmetrics.clone(),
            window: self.from.clone().zip(self.until.clone()),
            window_json: self.outputs.export_json.clone(),
            cpu_source: self.source.cpu_source,
        }
    }
}

impl AccountArgs {
    pub fn options(&self) -> AccountOptions {
        AccountOptions {
            messages: self.messages,
            accounting: accounting(&self.groups, &self.source, &self.ratio, false),
            exports: self.outputs.exports(),
            command: self.command.clone(),
        }
    }
}

impl MergeArgs {
    pub fn options(&self) -> MergeOptions {
        MergeOptions {
            reports: self.reports.clone(),
            cpu: self.cpu.clone(),
            exports: self.outputs.exports(),
            quiet: self.quiet,
        }
    }
}

impl CompareArgs {
    /// The comparison's options, with the run options after `--` parsed as a run's.
    pub fn options(&self) -> Result<CompareOptions, anyhow::Error> {
        Ok(CompareOptions {
            reports: self.reports.clone(),
            flow_cmd: self.flow_cmd.clone(),
            settings: self.settings.clone(),
            setting_runs: self.setting_runs()?,
            flows: self.flows.clone(),
            run: trailing_run(&self.run)?,
            max_time: self.max_time.into(),
            max_rounds: self.max_rounds,
            min_effect: self.min_effect.clone(),
            floor_us: self.floor_us,
            control: self.control.clone(),
            force: self.force,
            exports: self.outputs.exports(),
        })
    }
}

impl CompareArgs {
    /// Each setting's own run options, parsed on top of the run options after `--` (a
    /// setting's word wins where both give one); only the driver's options
    /// ([`SETTING_OPTIONS`]) are taken, the first other one refused by its flag.
    fn setting_runs(&self) -> Result<Vec<(String, RunOptions)>, anyhow::Error> {
        use crate::config::compare::setting_words;
        let mut out = Vec::new();
        for spec in &self.settings {
            let w = setting_words(self.flow_cmd.is_some(), spec)?;
            if w.run.is_empty() {
                continue;
            }
            if let Some(run) = own_run(&self.run, &w.name, &w.run)? {
                out.push((w.name, run));
            }
        }
        Ok(out)
    }
}

/// One arm's own run options (`words`, the driver's only) on top of the shared ones after
/// `--`; None when it has none.
fn own_run(
    shared: &[String],
    name: &str,
    words: &[String],
) -> Result<Option<RunOptions>, anyhow::Error> {
    if words.is_empty() {
        return Ok(None);
    }
    refuse_non_driver_options(name, words)?;
    let all: Vec<String> = shared.iter().chain(words).cloned().collect();
    parse_run(&all, true)
}

/// A setting's run words that are not the driver's own options: refused by flag, before
/// anything runs.
fn refuse_non_driver_options(name: &str, words: &[String]) -> Result<(), anyhow::Error> {
    use crate::config::compare::SETTING_OPTIONS;
    let cmd = <super::Cli as clap::CommandFactory>::command();
    let m = cmd.clone().try_get_matches_from(
        std::iter::once("oemputx".to_string()).chain(words.iter().cloned()),
    )?;
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
            || SETTING_OPTIONS.contains(&id)
        {
            continue;
        }
        let flag = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .unwrap_or_else(|| id.to_string());
        return Err(bad(
            "--setting",
            format!(
                "{name}: {flag} is not a driver setting: it changes what is measured or where it goes (the groups, the window, the outputs), which must be the same for every setting. Give it once after -- for all settings; a setting may carry --persistent, --msg-size, --msgfile, --reply-queue, --msgs-per-loop, --syncpoint, --rate, --tasks, --confirm-window, --wait, --warmup and the like"
            ),
        )
        .into());
    }
    Ok(())
}

/// Run options given after `--`, parsed as a run's (once, here); None when there are none.
fn trailing_run(run: &[String]) -> Result<Option<RunOptions>, anyhow::Error> {
    parse_run(run, false)
}

/// Run options parsed as a run's; with `later_wins`, an option given twice takes its last
/// value (a setting's on top of the shared ones) rather than being refused.
fn parse_run(run: &[String], later_wins: bool) -> Result<Option<RunOptions>, anyhow::Error> {
    use clap::{CommandFactory, FromArgMatches};
    if run.is_empty() {
        return Ok(None);
    }
    let m = super::Cli::command()
        .args_override_self(later_wins)
        .try_get_matches_from(std::iter::once("oemputx".to_string()).chain(run.iter().cloned()))?;
    let cli = super::Cli::from_arg_matches(&m)?;
    // A round's outputs are a run's: a format a run has not (an SVG, say) is refused here,
    // before anything runs, as it is for a run.
    cli.run.outputs.check(super::ResultKind::Run)?;
    Ok(Some(cli.run.options()?))
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use clap::Parser;

    fn cli(args: &[&str]) -> Cli {
        // The environment's OEMPUTX_NO_SAVE / OEMPUTX_REPORTS_DIR would set two fields.
        let mut argv = vec!["oemputx"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).expect("parses")
    }

    #[test]
    fn the_command_line_defaults_are_the_options_defaults() {
        let mut o = cli(&[]).run.options().expect("one task");
        o.outputs.no_save = false;
        o.outputs.reports_dir = "reports".into();
        assert_eq!(o, crate::config::RunOptions::default());
        let Some(Command::Pubsub(p)) = cli(&["pubsub", "--qmgr", "nats://h"]).command else {
            panic!("pubsub")
        };
        let mut p = p.options();
        p.no_save = false;
        p.reports_dir = "reports".into();
        assert_eq!(
            p,
            crate::config::pubsub::PubsubOptions {
                qmgr: "nats://h".into(),
                ..Default::default()
            }
        );
        let Some(Command::Matrix(m)) = cli(&["matrix", "--qmgr", "nats://h"]).command else {
            panic!("matrix")
        };
        assert_eq!(
            m.options(),
            crate::config::tools::MatrixOptions {
                qmgr: "nats://h".into(),
                ..Default::default()
            }
        );
        let Some(Command::Gate(g)) = cli(&["gate", "--baseline", "b.json"]).command else {
            panic!("gate")
        };
        assert_eq!(
            g.options().expect("no run options"),
            crate::config::gate::GateOptions {
                baseline: Some("b.json".into()),
                ..Default::default()
            }
        );
    }

    #[test]
    fn a_run_takes_one_task_count_and_the_gate_parses_its_run_options_once() {
        assert!(cli(&["--tasks", "1,2"]).run.options().is_err());
        let Some(Command::Gate(g)) = cli(&[
            "gate",
            "--baseline",
            "b.json",
            "--",
            "--count",
            "7",
            "--tasks",
            "2",
        ])
        .command
        else {
            panic!("gate")
        };
        let run = g.options().expect("parses").run.expect("run options");
        assert_eq!((run.count, run.tasks), (Some(7), 2));
    }

    #[test]
    fn a_setting_s_run_options_go_on_top_of_the_shared_ones_and_others_are_refused() {
        let compare = |setting: &str| {
            let Some(Command::Compare(c)) = cli(&[
                "compare",
                "--setting",
                "base=",
                "--setting",
                setting,
                "--",
                "--msg-size",
                "50",
                "--count",
                "10",
            ])
            .command
            else {
                panic!("compare")
            };
            c.options()
        };
        let o = compare("big=--msg-size 3000 --persistent").expect("a driver setting");
        let [(name, run)] = o.setting_runs.as_slice() else {
            panic!("{:?}", o.setting_runs)
        };
        assert_eq!(name, "big");
        assert_eq!(
            (run.msg_size, run.persistent, run.count),
            (Some(3000), true, Some(10))
        );
        for (words, flag) in [
            ("g=--group FLOW=pid:1", "--group"),
            ("c=--count 5", "--count"),
            ("q=--qmgr amqp://h", "--qmgr"),
        ] {
            let e = compare(words).expect_err("not a driver setting");
            assert!(
                e.to_string()
                    .contains(&format!("{flag} is not a driver setting")),
                "{e}"
            );
        }
    }
}
