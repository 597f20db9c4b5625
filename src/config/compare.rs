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
    /// `NAME=ARGS`: a setting, its arguments added to `flow_cmd`.
    pub settings: Vec<String>,
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
    /// The control group of the pairs, or `none`.
    pub control: String,
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
            flows: Vec::new(),
            run: None,
            max_time: Duration::from_secs(300),
            max_rounds: None,
            min_effect: None,
            floor_us: FLOOR_US,
            control: "DRIVER".into(),
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

/// One arm of a live compare: a setting's name and its flow.
#[derive(Debug, Clone)]
pub struct Setting {
    pub name: String,
    pub flow: FlowCommand,
    /// Arguments added to the flow's command.
    pub extra: Vec<String>,
    /// The whole command as recorded: its passwords masked.
    pub shown: String,
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
        let run = self.run.clone().unwrap_or_default();
        run.refuse_round_outputs("a live compare", "the comparison")?;
        if run.rounds != 1 {
            return Err(bad(
                "--rounds",
                "compare sets the rounds itself (--max-rounds, --max-time): leave --rounds out of the run options",
            ));
        }
        let run = run.silent().build()?;
        if run.endpoint.kind().url_for_flow().is_none() {
            return Err(bad(
                "--qmgr",
                "compare starts each setting's flow on a broker: give, after --, an amqp:// URL or a profile such as RABBIT",
            ));
        }
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
            control: (!self.control.eq_ignore_ascii_case("none")).then(|| self.control.clone()),
            outputs,
        })
    }

    /// The arms: `--setting NAME=ARGS` on `--flow-cmd`, or `--flow NAME=COMMAND`.
    fn settings(&self) -> Result<Vec<Setting>, ConfigError> {
        let split = |flag: &'static str, spec: &str| -> Result<(String, String), ConfigError> {
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
        };
        let mut out = Vec::new();
        match (&self.flow_cmd, self.flows.is_empty()) {
            (Some(cmd), true) => {
                let flow = FlowCommand::parse("--flow-cmd", cmd)?;
                for spec in &self.settings {
                    let (name, args) = split("--setting", spec)?;
                    let extra = shell_words::split(&args)
                        .map_err(|e| bad("--setting", format!("{name}: {e}")))?;
                    crate::config::flow_command::without_secrets(&extra)
                        .map_err(|why| bad("--setting", why))?;
                    out.push(Setting {
                        shown: crate::secret::scrub(&format!("{cmd} {args}")),
                        name,
                        flow: flow.clone(),
                        extra,
                    });
                }
            }
            (None, false) if self.settings.is_empty() => {
                for spec in &self.flows {
                    let (name, cmd) = split("--flow", spec)?;
                    out.push(Setting {
                        flow: FlowCommand::parse("--flow", &cmd)?,
                        shown: crate::secret::scrub(&cmd),
                        name,
                        extra: Vec::new(),
                    });
                }
            }
            (None, true) => {
                return Err(bad(
                    "--setting",
                    "settings add arguments to a flow: give --flow-cmd CMD too (or --flow NAME=COMMAND per arm)",
                ));
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
        let no_cmd = CompareOptions {
            settings: vec!["a=--x".into(), "b=--y".into()],
            ..Default::default()
        };
        assert_eq!(flag(no_cmd), "--setting");
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
}
