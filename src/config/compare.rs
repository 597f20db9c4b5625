//! The options of `oemputx compare`, checked into a [`CompareConfig`]: saved reports of
//! separate runs tabulated as they are, or — live — each setting of a flow measured as an
//! arm in one window, in interleaved rounds, by the experiment engine.

use super::flow_command::FlowCommand;
use super::formats::Exports;
use super::gate::parse_tolerance;
use super::options::RunOptions;
use super::{ConfigError, RunConfig, bad};
use std::path::PathBuf;
use std::time::Duration;

/// A live compare's smallest change reported, when not given: below it a difference is not
/// reported however sure (a fraction of the first setting's cost).
pub const MIN_EFFECT: f64 = 0.01;
/// A live compare's smallest change reported in µs/tran, when not given: a group that costs
/// almost nothing does not report a large relative change of nearly nothing.
pub const FLOOR_US: f64 = 0.5;
/// Rounds at most of a live compare, all settings together, unless `--max-rounds` says.
pub const MAX_ROUNDS: usize = 400;

/// What `oemputx compare` asks for, as given. `Default` is the command line's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Saved reports (separate runs).
    pub reports: Vec<PathBuf>,
    /// The flow every `--setting` adds its arguments to.
    pub flow_cmd: Option<String>,
    /// `NAME=ARGS`: a setting: without `flow_cmd`, run options; with it, arguments added to
    /// the flow's command, then after a `--` run options of the setting's own.
    pub settings: Vec<String>,
    /// Each setting's run options (by name), parsed on top of those after `--`: what the
    /// command line parsed of the settings' run words ([`setting_words`]).
    pub setting_runs: Vec<(String, RunOptions)>,
    /// `NAME=COMMAND`: an arm with a flow command of its own.
    pub flows: Vec<String>,
    /// The run options given after `--` (live).
    pub run: Option<RunOptions>,
    pub max_time: Duration,
    /// None: [`MAX_ROUNDS`], or what the first look needs when that is more.
    pub max_rounds: Option<usize>,
    /// The smallest change reported, e.g. `1%`.
    pub min_effect: Option<String>,
    /// The smallest change reported in µs/tran.
    pub floor_us: f64,
    /// The control group of the pairs, or `none`; None: DRIVER, unless a setting has run
    /// options of its own (the driver's cost then differs by setting: none).
    pub control: Option<String>,
    pub force: bool,
    /// The outputs asked for (a comparison's formats: JSON, TSV, Markdown, HTML).
    pub exports: Exports,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            reports: Vec::new(),
            flow_cmd: None,
            settings: Vec::new(),
            setting_runs: Vec::new(),
            flows: Vec::new(),
            run: None,
            max_time: Duration::from_secs(300),
            max_rounds: None,
            min_effect: None,
            floor_us: FLOOR_US,
            control: None,
            force: false,
            exports: Exports::default(),
        }
    }
}

/// Where a comparison's tables go besides stdout.
pub type CompareOutputs = Exports;

/// A comparison, checked.
#[derive(Debug, Clone)]
pub enum CompareConfig {
    /// Saved reports of separate runs.
    Saved {
        reports: Vec<PathBuf>,
        force: bool,
        outputs: CompareOutputs,
    },
    /// Settings measured in one window.
    Live(Box<LiveCompare>),
}

/// One arm of a live compare: a setting's name, its flow, and its run.
#[derive(Debug, Clone)]
pub struct Setting {
    pub name: String,
    /// The flow oemputx starts for it; None: the run options' own responder serves every
    /// setting (a setting of run options only).
    pub flow: Option<FlowCommand>,
    /// Arguments added to the flow's command.
    pub extra: Vec<String>,
    /// The whole command as recorded: its passwords masked.
    pub shown: String,
    /// The setting's own run (its run options on top of those after `--`); None: the
    /// comparison's run.
    pub run: Option<Box<RunConfig>>,
}

/// The run options a setting may carry: the driver's own settings, which change how a
/// request is sent and answered but not what is measured (the groups, the window, the
/// outputs). Clap's ids of [`crate::cli`]'s run arguments.
pub const SETTING_OPTIONS: &[&str] = &[
    "persistent",
    "msg_size",
    "msgfile",
    "lines",
    "reply_queue",
    "no_clear",
    "declare",
    "put1",
    "model_queue",
    "msgs_per_loop",
    "syncpoint",
    "rate",
    "tasks",
    "confirm_window",
    "replicas",
    "queue_type",
    "match_mode",
    "wait",
    "reconnect_for",
    "max_timeouts",
    "warmup",
];

/// A `--setting NAME=ARGS` taken apart: its name, the words for its flow command and its
/// own run options. Without `--flow-cmd` every word is a run option; with it, the words
/// after a lone `--` are.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingWords {
    pub name: String,
    pub flow: Vec<String>,
    pub run: Vec<String>,
    /// ARGS as given.
    pub args: String,
}

/// Take `NAME=ARGS` apart (see [`SettingWords`]).
pub fn setting_words(with_flow_cmd: bool, spec: &str) -> Result<SettingWords, ConfigError> {
    let (name, args) = split_named("--setting", spec)?;
    let words = shell_words::split(&args).map_err(|e| bad("--setting", format!("{name}: {e}")))?;
    let (flow, run) = if with_flow_cmd {
        match words.iter().position(|w| w == "--") {
            Some(at) => (words[..at].to_vec(), words[at + 1..].to_vec()),
            None => (words, Vec::new()),
        }
    } else {
        (Vec::new(), words)
    };
    Ok(SettingWords {
        name,
        flow,
        run,
        args,
    })
}

/// `NAME=…`: the name checked (letters, digits, `_ - .`) and the rest.
fn split_named(flag: &'static str, spec: &str) -> Result<(String, String), ConfigError> {
    let (name, rest) = spec.split_once('=').ok_or_else(|| {
        bad(
            flag,
            format!("'{spec}': write NAME=…, e.g. off=\"--stats off\""),
        )
    })?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(bad(
            flag,
            format!("'{name}' names no setting: letters, digits, _ - . only"),
        ));
    }
    Ok((name.to_string(), rest.to_string()))
}

/// A live compare, checked.
#[derive(Debug, Clone)]
pub struct LiveCompare {
    pub settings: Vec<Setting>,
    /// One round's settings (quiet, unsaved).
    pub run: RunConfig,
    pub max_time: Duration,
    /// As given (None: the default, [`MAX_ROUNDS`] or the first look's need).
    pub max_rounds: Option<usize>,
    pub min_effect: f64,
    pub floor_us: f64,
    pub control: Option<String>,
    pub outputs: CompareOutputs,
}

impl CompareOptions {
    pub fn build(&self) -> Result<CompareConfig, ConfigError> {
        super::outputs::check(
            &self.exports.by_flag(),
            None,
            &self
                .reports
                .iter()
                .map(PathBuf::as_path)
                .collect::<Vec<_>>(),
        )?;
        let outputs = self.exports.clone();
        let live = self.flow_cmd.is_some() || !self.settings.is_empty() || !self.flows.is_empty();
        if !live {
            if self.reports.len() < 2 {
                return Err(bad(
                    "compare",
                    "give two or more saved JSON reports (the first is the base), or settings to measure now: --flow-cmd CMD --setting NAME=ARGS … -- RUN OPTIONS",
                ));
            }
            if self.run.is_some() {
                return Err(bad(
                    "compare",
                    "run options after -- measure settings now: give --flow-cmd and --setting (or --flow), or leave them out to compare saved reports",
                ));
            }
            return Ok(CompareConfig::Saved {
                reports: self.reports.clone(),
                force: self.force,
                outputs,
            });
        }
        if !self.reports.is_empty() {
            return Err(bad(
                "compare",
                "saved reports and settings measured now do not mix: compare one or the other",
            ));
        }
        Ok(CompareConfig::Live(Box::new(self.live(outputs)?)))
    }

    fn live(&self, outputs: CompareOutputs) -> Result<LiveCompare, ConfigError> {
        let settings = self.settings()?;
        if settings.len() < 2 {
            return Err(bad(
                "--setting",
                "compare needs two settings or more (the first is the base), e.g. --setting off=\"--stats off\" --setting node=\"--stats node\"",
            ));
        }
        let mut settings = settings;
        let run = round_run(self.run.clone().unwrap_or_default(), "the run options")?;
        for s in &mut settings {
            if let Some((_, o)) = self.setting_runs.iter().find(|(n, _)| *n == s.name) {
                let own = round_run(o.clone(), &format!("setting {}", s.name))?;
                s.run = Some(Box::new(own));
            }
        }
        let flows = settings.iter().any(|s| s.flow.is_some());
        if flows && run.endpoint.kind().url_for_flow().is_none() {
            return Err(bad(
                "--qmgr",
                "compare starts each setting's flow on a broker: give, after --, an amqp:// URL or a profile such as RABBIT",
            ));
        }
        // The driver's cost is the same in every setting only when no setting changes the
        // driver's options; otherwise its change is part of what is compared.
        let own_runs = settings.iter().any(|s| s.run.is_some());
        let control = match &self.control {
            Some(c) if c.eq_ignore_ascii_case("none") => None,
            Some(c) => Some(c.clone()),
            None if own_runs => None,
            None => Some("DRIVER".to_string()),
        };
        let min_effect = match &self.min_effect {
            Some(t) => parse_tolerance("--min-effect", t)?,
            None => MIN_EFFECT,
        };
        if !(self.floor_us.is_finite() && self.floor_us >= 0.0) {
            return Err(bad("--floor", "a number of µs/tran, 0 or more, e.g. 0.5"));
        }
        Ok(LiveCompare {
            settings,
            run,
            max_time: self.max_time,
            max_rounds: self.max_rounds,
            min_effect,
            floor_us: self.floor_us,
            control,
            outputs,
        })
    }

    /// The arms: `--setting NAME=ARGS` on `--flow-cmd` (flow arguments, then run options
    /// after `--`), run options alone without it, or `--flow NAME=COMMAND`.
    fn settings(&self) -> Result<Vec<Setting>, ConfigError> {
        let mut out = Vec::new();
        match (&self.flow_cmd, self.flows.is_empty()) {
            (cmd, true) => {
                let flow = cmd
                    .as_deref()
                    .map(|c| FlowCommand::parse("--flow-cmd", c))
                    .transpose()?;
                for spec in &self.settings {
                    let w = setting_words(cmd.is_some(), spec)?;
                    crate::config::flow_command::without_secrets(&w.flow)
                        .map_err(|why| bad("--setting", why))?;
                    let shown = match cmd {
                        Some(c) => format!("{c} {}", w.args),
                        None => format!("-- {}", w.args),
                    };
                    out.push(Setting {
                        shown: crate::secret::scrub(shown.trim_end()),
                        name: w.name,
                        flow: flow.clone(),
                        extra: w.flow,
                        run: None,
                    });
                }
            }
            (None, false) if self.settings.is_empty() => {
                for spec in &self.flows {
                    let (name, cmd) = split_named("--flow", spec)?;
                    out.push(Setting {
                        flow: Some(FlowCommand::parse("--flow", &cmd)?),
                        shown: crate::secret::scrub(&cmd),
                        name,
                        extra: Vec::new(),
                        run: None,
                    });
                }
            }
            _ => {
                return Err(bad(
                    "--flow",
                    "give either --flow-cmd with --setting NAME=ARGS, or --flow NAME=COMMAND per arm, not both",
                ));
            }
        }
        let mut names: Vec<&str> = out.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(bad(
                "--setting",
                format!(
                    "'{}' is given twice: give each setting a name of its own",
                    w[0]
                ),
            ));
        }
        Ok(out)
    }
}

/// A live round's run: quiet and unsaved, one round, no outputs of its own.
fn round_run(run: RunOptions, whose: &str) -> Result<RunConfig, ConfigError> {
    run.one_round(
        ("a live compare", "the comparison"),
        "compare sets the rounds itself (--max-rounds, --max-time)",
        whose,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(o: CompareOptions) -> &'static str {
        match o.build() {
            Err(ConfigError::BadValue { flag, .. }) => flag,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn saved_reports_or_settings_each_say_what_they_need() {
        assert!(matches!(
            CompareOptions {
                reports: vec!["a.json".into(), "b.json".into()],
                ..Default::default()
            }
            .build(),
            Ok(CompareConfig::Saved { .. })
        ));
        assert_eq!(flag(CompareOptions::default()), "compare");
        let one = CompareOptions {
            flow_cmd: Some("sample-flow".into()),
            settings: vec!["off=--stats off".into()],
            ..Default::default()
        };
        assert_eq!(flag(one), "--setting");
        let twice = CompareOptions {
            flow_cmd: Some("sample-flow".into()),
            settings: vec!["a=--x".into(), "a=--y".into()],
            ..Default::default()
        };
        assert_eq!(flag(twice), "--setting");
        // Without --flow-cmd a setting is run options alone: no flow to start, so the
        // embedded queue manager serves it too.
        let no_cmd = CompareOptions {
            settings: vec!["a=--msg-size 100".into(), "b=--msg-size 1000".into()],
            ..Default::default()
        }
        .build();
        let Ok(CompareConfig::Live(l)) = no_cmd else {
            panic!("{no_cmd:?}")
        };
        assert!(l.settings.iter().all(|s| s.flow.is_none()));
        assert_eq!(l.settings[1].shown, "-- --msg-size 1000");
        // Two settings on the embedded queue manager: no flow to start.
        let embedded = CompareOptions {
            flow_cmd: Some("sample-flow".into()),
            settings: vec!["a=--x".into(), "b=--y".into()],
            ..Default::default()
        };
        assert_eq!(flag(embedded), "--qmgr");
        // A live comparison on RabbitMQ.
        #[cfg(feature = "rabbitmq")]
        {
            let live = CompareOptions {
                flow_cmd: Some("sample-flow --echo".into()),
                settings: vec!["off=--stats off".into(), "node=--stats node".into()],
                run: Some(RunOptions::on("amqp://guest:guest@127.0.0.1:5672/%2f")),
                min_effect: Some("2%".into()),
                ..Default::default()
            }
            .build()
            .expect("live");
            let CompareConfig::Live(l) = live else {
                panic!("live")
            };
            assert_eq!(l.settings[1].extra, ["--stats", "node"]);
            assert_eq!(l.min_effect, 0.02);
            assert_eq!(l.control.as_deref(), Some("DRIVER"));
        }
    }

    #[test]
    fn a_setting_s_words_go_to_its_flow_then_after_a_lone_dash_dash_to_its_run() {
        let w = setting_words(true, "p=--stats off -- --persistent").expect("words");
        assert_eq!(w.name, "p");
        assert_eq!(w.flow, ["--stats", "off"]);
        assert_eq!(w.run, ["--persistent"]);
        let w = setting_words(false, "big=--msg-size 3000").expect("words");
        assert!(w.flow.is_empty());
        assert_eq!(w.run, ["--msg-size", "3000"]);
        assert!(setting_words(false, "no name").is_err());
    }

    #[test]
    fn the_control_is_the_driver_unless_a_setting_changes_the_driver() {
        let base = CompareOptions {
            settings: vec!["a=".into(), "b=".into()],
            ..Default::default()
        };
        let control = |o: CompareOptions| match o.build() {
            Ok(CompareConfig::Live(l)) => l.control,
            other => panic!("{other:?}"),
        };
        assert_eq!(control(base.clone()).as_deref(), Some("DRIVER"));
        let own = CompareOptions {
            setting_runs: vec![("b".into(), RunOptions::default())],
            ..base.clone()
        };
        assert_eq!(control(own.clone()), None);
        let asked = CompareOptions {
            control: Some("QMGR".into()),
            ..own
        };
        assert_eq!(control(asked).as_deref(), Some("QMGR"));
    }
}
