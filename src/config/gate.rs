//! The options of `oemputx gate`, checked into a [`GateConfig`] whose [`GateMode`] says
//! which gate runs: against a stored baseline, A/B in one run, or on instruction counts.
//! The tolerances (a gate file's per metric, `--tolerance`, or the mode's default) are
//! settled here too; [`crate::gate`] decides, [`crate::commands`] runs and prints.

use super::flow_command::FlowCommand;
use super::formats::Exports;
use super::options::RunOptions;
use super::{ConfigError, RunConfig, RunLength, bad};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The stored-baseline gate's tolerance when neither --tolerance nor a gate file gives one.
pub const STORED_TOLERANCE: f64 = 0.05;
/// The A/B gate's: it must sit well below the change to be caught, and above what no change
/// can be told from in the minutes a gate has (docs/gate.md has the calibration).
pub const AB_TOLERANCE: f64 = 0.025;
/// The instruction gate's: a +2 % change is caught, a change within 1 % passes (a tolerance
/// equal to the change to catch would catch it half the time, whatever the method).
pub const INSTRUCTION_TOLERANCE: f64 = 0.01;
/// A flow under valgrind waits this long at least for its first replies (its code is
/// being translated).
const MIN_INSTRUCTION_WAIT: Duration = Duration::from_secs(60);

/// The A/B gate's rounds at most when `--max-rounds` is not given: `--max-time` bounds the
/// run, and this only keeps a very long one's intervals cheap to compute (each look ranks
/// every pair of blocks: 250 blocks of 4 pairs).
pub const MAX_AB_ROUNDS: usize = 2000;

/// What `oemputx gate` asks for, as given. `Default` is the command line's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOptions {
    pub baseline: Option<PathBuf>,
    pub current: Option<PathBuf>,
    pub flow_a: Option<String>,
    pub flow_b: Option<String>,
    /// None: as many as fit in `max_time` (up to [`MAX_AB_ROUNDS`]).
    pub max_rounds: Option<usize>,
    pub max_time: Duration,
    /// The control group of A/B pairs, or `none`; None: DRIVER, or none when a side has
    /// run options of its own.
    pub control: Option<String>,
    /// A/B: each side's own run options (the driver's), on top of `run`.
    pub run_a: Option<RunOptions>,
    pub run_b: Option<RunOptions>,
    pub instructions: bool,
    pub runs: usize,
    pub tolerance: Option<String>,
    pub gate_file: Option<PathBuf>,
    pub metric: Vec<String>,
    pub strict: bool,
    pub force: bool,
    pub outputs: GateOutputs,
    /// The run options given after `--`.
    pub run: Option<RunOptions>,
    /// Instruction gates' saved verdicts to judge again with the current rule.
    pub rejudge: Vec<PathBuf>,
    /// The instruction gate: save flow A's counts here as a baseline.
    pub save_baseline: Option<PathBuf>,
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            baseline: None,
            current: None,
            flow_a: None,
            flow_b: None,
            max_rounds: None,
            max_time: Duration::from_secs(300),
            control: None,
            run_a: None,
            run_b: None,
            instructions: false,
            runs: 5,
            tolerance: None,
            gate_file: None,
            metric: Vec::new(),
            strict: false,
            force: false,
            outputs: GateOutputs::default(),
            run: None,
            rejudge: Vec::new(),
            save_baseline: None,
        }
    }
}

/// Where the verdict goes besides stdout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateOutputs {
    /// GitHub Actions annotations on stdout.
    pub github: bool,
    /// The files asked for (the gate's formats: JSON, Markdown, HTML, JUnit XML, Bencher
    /// Metric Format, github-action-benchmark JSON).
    pub exports: Exports,
}

/// A gate, checked.
#[derive(Debug, Clone)]
pub struct GateConfig {
    pub mode: GateMode,
    pub tolerances: Tolerances,
    /// Metrics named with --metric (gated besides the mode's own).
    pub metrics: Vec<String>,
    /// Exit 4 when inconclusive or without a baseline.
    pub strict: bool,
    /// Gate runs whose settings differ.
    pub force: bool,
    pub outputs: GateOutputs,
}

/// Which gate.
#[derive(Debug, Clone)]
pub enum GateMode {
    /// The current run's rounds against a stored report's.
    Stored { baseline: PathBuf, current: Current },
    /// Both flows measured in alternating rounds.
    Ab(FlowPair),
    /// Instruction counts under callgrind: both flows now, or one stored, or one saved.
    Instructions {
        sides: InstrSides,
        /// One count's settings (quiet, unsaved, every message counted).
        run: RunConfig,
        runs: usize,
        count: u64,
    },
    /// Saved instruction-gate verdicts judged again with today's rule.
    Rejudge(Vec<PathBuf>),
}

/// The run a stored-baseline gate judges.
#[derive(Debug, Clone)]
pub enum Current {
    /// A saved report.
    Report(PathBuf),
    /// Measured now with these settings.
    Measure(Box<RunConfig>),
}

/// A flow of a gate and its command as recorded (its passwords masked).
#[derive(Debug, Clone)]
pub struct OneFlow {
    pub flow: FlowCommand,
    pub shown: String,
}

/// Which flows an instruction gate counts.
#[derive(Debug, Clone)]
pub enum InstrSides {
    /// Both, now, alternating.
    Both([OneFlow; 2]),
    /// Flow A only, its counts saved as the baseline of later gates (on main).
    Save { a: OneFlow, path: PathBuf },
    /// Flow B only, judged against the counts a baseline holds (on a branch).
    Stored { baseline: PathBuf, b: OneFlow },
}

/// The two flows of an A/B or instruction gate, and the run that measures them.
#[derive(Debug, Clone)]
pub struct FlowPair {
    pub flows: [FlowCommand; 2],
    /// The commands as printed and recorded: their passwords masked.
    pub shown: [String; 2],
    /// One round's settings (quiet, unsaved: the gate reports).
    pub run: RunConfig,
    /// Each side's own run (`--run-a`, `--run-b`); None: `run`.
    pub own_runs: [Option<Box<RunConfig>>; 2],
    /// The rounds at most: `--max-rounds`, else [`MAX_AB_ROUNDS`].
    pub max_rounds: usize,
    /// Whether `--max-rounds` was given (else the time alone bounds the run).
    pub rounds_given: bool,
    pub max_time: Duration,
    /// The control group pairs are adjusted by; `None` judges pairs as measured.
    pub control: Option<String>,
}

/// A gate file: the default tolerance and per-metric ones (a metric named here is gated even
/// when it is not gated by default, e.g. `rate` or `p99`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GateFile {
    pub tolerance: Option<String>,
    #[serde(default)]
    pub metrics: BTreeMap<String, String>,
}

/// The tolerance of each metric: the gate file's for it, else --tolerance, else the file's
/// default, else the mode's.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerances {
    per_metric: BTreeMap<String, f64>,
    default: f64,
}

impl Tolerances {
    #[cfg(test)]
    /// One tolerance for every metric.
    pub(crate) fn uniform(default: f64) -> Tolerances {
        Tolerances {
            per_metric: BTreeMap::new(),
            default,
        }
    }

    fn of(o: &GateOptions, fallback: f64) -> Result<Tolerances, ConfigError> {
        let file = gate_file(o)?;
        let default = match (&o.tolerance, &file.tolerance) {
            (Some(t), _) => parse_tolerance("--tolerance", t)?,
            (None, Some(t)) => parse_tolerance("--gate-file tolerance", t)?,
            (None, None) => fallback,
        };
        let per_metric = file
            .metrics
            .iter()
            .map(|(m, t)| Ok((m.clone(), parse_tolerance("--gate-file metrics", t)?)))
            .collect::<Result<_, ConfigError>>()?;
        Ok(Tolerances {
            per_metric,
            default,
        })
    }

    /// A metric's tolerance: its own, or for a figure beyond CPU (`QMGR:syncs`) its bare
    /// name's (`syncs`), or the default.
    pub(crate) fn for_metric(&self, metric: &str) -> f64 {
        self.per_metric
            .get(metric)
            .or_else(|| {
                let (_, bare) = metric.rsplit_once(':')?;
                self.per_metric.get(bare)
            })
            .copied()
            .unwrap_or(self.default)
    }

    /// The metrics the gate file names (gated even when not by default).
    pub(crate) fn named_metrics(&self) -> impl Iterator<Item = &String> {
        self.per_metric.keys()
    }
}

/// `5%`, `0.05` or `5` (percent) → 0.05.
pub(crate) fn parse_tolerance(flag: &'static str, v: &str) -> Result<f64, ConfigError> {
    let t = v.trim();
    let (num, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let x: f64 = num.parse().map_err(|_| ConfigError::BadValue {
        flag,
        why: format!("'{v}' is not a tolerance; write e.g. 5% or 0.05"),
    })?;
    let x = if percent || x >= 1.0 { x / 100.0 } else { x };
    if !(0.0..1.0).contains(&x) {
        return Err(ConfigError::BadValue {
            flag,
            why: format!("'{v}' must be at least 0% and below 100%"),
        });
    }
    Ok(x)
}

/// The gate file, if one is given.
fn gate_file(o: &GateOptions) -> Result<GateFile, ConfigError> {
    let Some(p) = &o.gate_file else {
        return Ok(GateFile::default());
    };
    let text = crate::files::read_text(p, crate::files::MAX_CONFIG_BYTES, "gate file")
        .map_err(|e| bad("--gate-file", e.to_string()))?;
    toml::from_str(&text).map_err(|e| {
        bad(
            "--gate-file",
            format!("{}: {}", p.display(), super::profile::toml_error(&text, &e)),
        )
    })
}

impl GateOptions {
    /// Check the options into the gate they ask for.
    pub fn build(&self) -> Result<GateConfig, ConfigError> {
        let profiled = self.run.as_ref().is_some_and(|r| r.sample_stacks);
        if profiled && (self.instructions || (self.flow_a.is_none() && self.flow_b.is_none())) {
            // Not accepted and ignored: only the A/B gate has two sides' stacks to set apart.
            return Err(bad(
                "--profile",
                "only the A/B gate profiles (--flow-a and --flow-b, each round profiled): the stored gate compares with saved runs, which keep no stacks, and the instruction gate counts under valgrind; profile a run instead",
            ));
        }
        let o = &self.outputs;
        let inputs: Vec<&std::path::Path> = [&self.baseline, &self.current, &self.gate_file]
            .into_iter()
            .flatten()
            .chain(&self.rejudge)
            .map(PathBuf::as_path)
            .collect();
        let mut outputs = o.exports.by_flag();
        outputs.push(("--save-baseline", self.save_baseline.as_deref()));
        super::outputs::check(&outputs, None, &inputs)?;
        let (mode, fallback) = if !self.rejudge.is_empty() {
            (
                GateMode::Rejudge(self.rejudge.clone()),
                INSTRUCTION_TOLERANCE,
            )
        } else if self.instructions {
            (self.instruction_mode()?, INSTRUCTION_TOLERANCE)
        } else if self.flow_a.is_some() || self.flow_b.is_some() {
            (
                GateMode::Ab(self.flow_pair("--flow-a", "A/B needs both --flow-a and --flow-b")?),
                AB_TOLERANCE,
            )
        } else {
            (self.stored_mode()?, STORED_TOLERANCE)
        };
        Ok(GateConfig {
            mode,
            tolerances: Tolerances::of(self, fallback)?,
            metrics: self.metric.clone(),
            strict: self.strict,
            force: self.force,
            outputs: self.outputs.clone(),
        })
    }

    fn stored_mode(&self) -> Result<GateMode, ConfigError> {
        let Some(baseline) = &self.baseline else {
            return Err(bad(
                "--baseline",
                "give the baseline report, or two flows to compare with --flow-a and --flow-b",
            ));
        };
        let current = match (&self.current, &self.run) {
            (Some(p), None) => Current::Report(p.clone()),
            (None, Some(run)) => Current::Measure(Box::new(run.build()?)),
            _ => {
                return Err(bad(
                    "--current",
                    "give either --current REPORT.json or, after --, the run options to measure now",
                ));
            }
        };
        Ok(GateMode::Stored {
            baseline: baseline.clone(),
            current,
        })
    }

    /// One round's settings for a gate that starts flows: quiet, on a broker.
    fn gate_run(&self) -> Result<RunConfig, ConfigError> {
        let run = Self::one_round(self.run.clone().unwrap_or_default(), "the run options")?;
        if run.endpoint.kind().url_for_flow().is_none() {
            return Err(bad(
                "--qmgr",
                "the gate starts its flows on a broker: give, after --, an amqp:// URL or a profile such as RABBIT",
            ));
        }
        Ok(run)
    }

    /// One round's run options (the shared ones or a side's own), checked as a round.
    fn one_round(run: RunOptions, whose: &str) -> Result<RunConfig, ConfigError> {
        run.one_round(
            ("this gate", "the verdict"),
            "the gate sets the rounds itself (--max-rounds, --max-time, --runs)",
            whose,
        )
    }

    fn one_flow(flag: &'static str, cmd: &str) -> Result<OneFlow, ConfigError> {
        Ok(OneFlow {
            flow: FlowCommand::parse(flag, cmd)?,
            shown: crate::secret::scrub(cmd),
        })
    }

    /// The two flows and one round's settings; `why` when a flow is missing.
    fn flow_pair(&self, flag: &'static str, why: &str) -> Result<FlowPair, ConfigError> {
        let (Some(a), Some(b)) = (&self.flow_a, &self.flow_b) else {
            return Err(bad(flag, why));
        };
        let run = self.gate_run()?;
        let own = |o: &Option<RunOptions>| -> Result<Option<Box<RunConfig>>, ConfigError> {
            o.as_ref()
                .map(|o| Self::one_round(o.clone(), "--run-a and --run-b").map(Box::new))
                .transpose()
        };
        let own_runs = [own(&self.run_a)?, own(&self.run_b)?];
        // The driver's cost is the same on both sides only when neither changes its options.
        let control = match &self.control {
            Some(c) if c.eq_ignore_ascii_case("none") => None,
            Some(c) => Some(c.clone()),
            None if own_runs.iter().any(Option::is_some) => None,
            None => Some("DRIVER".to_string()),
        };
        Ok(FlowPair {
            own_runs,
            flows: [
                FlowCommand::parse("--flow-a", a)?,
                FlowCommand::parse("--flow-b", b)?,
            ],
            shown: [a, b].map(|c| crate::secret::scrub(c)),
            run,
            max_rounds: self.max_rounds.unwrap_or(MAX_AB_ROUNDS),
            rounds_given: self.max_rounds.is_some(),
            max_time: self.max_time,
            control,
        })
    }

    /// Which flows to count: both; A, saved (--save-baseline); or B against a baseline.
    fn instr_sides(&self) -> Result<InstrSides, ConfigError> {
        match (
            &self.flow_a,
            &self.flow_b,
            &self.baseline,
            &self.save_baseline,
        ) {
            (Some(a), Some(b), None, None) => Ok(InstrSides::Both([
                Self::one_flow("--flow-a", a)?,
                Self::one_flow("--flow-b", b)?,
            ])),
            (Some(a), None, None, Some(path)) => Ok(InstrSides::Save {
                a: Self::one_flow("--flow-a", a)?,
                path: path.clone(),
            }),
            (None, Some(b), Some(baseline), None) => Ok(InstrSides::Stored {
                baseline: baseline.clone(),
                b: Self::one_flow("--flow-b", b)?,
            }),
            _ => Err(bad(
                "--instructions",
                "counts instructions of two flows now (--flow-a and --flow-b), of the baseline build to save (--flow-a with --save-baseline PATH, on main), or of the build to judge against a saved one (--flow-b with --baseline PATH); and, after --, the run options",
            )),
        }
    }

    fn instruction_mode(&self) -> Result<GateMode, ConfigError> {
        if self.run_a.is_some() || self.run_b.is_some() {
            return Err(bad(
                if self.run_a.is_some() {
                    "--run-a"
                } else {
                    "--run-b"
                },
                "a side's own run options are not yet supported with --instructions (the counts are the flow's alone): gate them on CPU time (leave --instructions out)",
            ));
        }
        let sides = self.instr_sides()?;
        let mut run = self.gate_run()?;
        let RunLength::Count(count) = run.length else {
            return Err(bad(
                "--duration",
                "the instruction gate counts a fixed number of messages: give --count N (the steady cost comes from N and 2N), not a duration",
            ));
        };
        if count < 10 {
            return Err(bad(
                "--count",
                format!(
                    "{count} messages are too few to see a message's cost past the start-up's: give --count 1000 or more"
                ),
            ));
        }
        if self.runs < 2 {
            return Err(bad(
                "--runs",
                format!(
                    "{}: each side needs 2 runs or more, so that a second run confirms the least-disturbed count",
                    self.runs
                ),
            ));
        }
        // Every message is counted; the first replies wait for valgrind's translation.
        run.warmup = 0;
        run.wait = run.wait.max(MIN_INSTRUCTION_WAIT);
        run.declare = true;
        Ok(GateMode::Instructions {
            sides,
            run,
            runs: self.runs,
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_beyond_cpu_takes_its_own_tolerance_else_its_bare_name_s() {
        let t = Tolerances {
            per_metric: [
                ("syncs".to_string(), 0.01),
                ("QMGR:syncs".to_string(), 0.03),
            ]
            .into_iter()
            .collect(),
            default: 0.05,
        };
        assert_eq!(t.for_metric("FLOW:syncs"), 0.01);
        assert_eq!(t.for_metric("QMGR:syncs"), 0.03);
        assert_eq!(t.for_metric("FLOW:write_calls"), 0.05);
        assert_eq!(t.for_metric("FLOW"), 0.05);
    }

    #[test]
    fn tolerances_parse_as_percent_or_fraction() {
        assert_eq!(parse_tolerance("--tolerance", "5%").ok(), Some(0.05));
        assert_eq!(parse_tolerance("--tolerance", "0.05").ok(), Some(0.05));
        assert_eq!(parse_tolerance("--tolerance", "5").ok(), Some(0.05));
        assert!(parse_tolerance("--tolerance", "x").is_err());
        assert!(parse_tolerance("--tolerance", "150%").is_err());
    }

    #[test]
    fn each_mode_has_its_own_default_tolerance_and_a_gate_file_overrides_per_metric() {
        let stored = GateOptions {
            baseline: Some("b.json".into()),
            current: Some("c.json".into()),
            ..GateOptions::default()
        }
        .build()
        .expect("stored");
        assert!(matches!(stored.mode, GateMode::Stored { .. }));
        assert_eq!(stored.tolerances.for_metric("FLOW"), STORED_TOLERANCE);
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("gate.toml");
        std::fs::write(&file, "tolerance = \"4%\"\n[metrics]\nFLOW = \"3%\"\n").expect("write");
        let t = GateOptions {
            baseline: Some("b.json".into()),
            current: Some("c.json".into()),
            gate_file: Some(file),
            ..GateOptions::default()
        }
        .build()
        .expect("with file")
        .tolerances;
        assert_eq!((t.for_metric("FLOW"), t.for_metric("DB")), (0.03, 0.04));
        assert_eq!(t.named_metrics().collect::<Vec<_>>(), ["FLOW"]);
    }

    #[test]
    fn a_gate_without_its_inputs_says_what_to_give() {
        let flag = |o: GateOptions| match o.build() {
            Err(ConfigError::BadValue { flag, .. }) => flag,
            other => panic!("{other:?}"),
        };
        assert_eq!(flag(GateOptions::default()), "--baseline");
        assert_eq!(
            flag(GateOptions {
                baseline: Some("b.json".into()),
                ..GateOptions::default()
            }),
            "--current"
        );
        assert_eq!(
            flag(GateOptions {
                flow_a: Some("sample-flow".into()),
                ..GateOptions::default()
            }),
            "--flow-a"
        );
        // The embedded queue manager has no flows to start.
        assert_eq!(
            flag(GateOptions {
                flow_a: Some("sample-flow".into()),
                flow_b: Some("sample-flow".into()),
                ..GateOptions::default()
            }),
            "--qmgr"
        );
    }

    // Its run is on RabbitMQ.
    #[cfg(feature = "rabbitmq")]
    #[test]
    fn the_instruction_gate_counts_both_flows_or_saves_one_or_judges_one_against_a_file() {
        let with = |a: Option<&str>, b: Option<&str>, base: Option<&str>, save: Option<&str>| {
            GateOptions {
                instructions: true,
                flow_a: a.map(str::to_string),
                flow_b: b.map(str::to_string),
                baseline: base.map(PathBuf::from),
                save_baseline: save.map(PathBuf::from),
                run: Some(RunOptions {
                    qmgr: Some("amqp://guest:guest@127.0.0.1:5672/%2f".into()),
                    ..RunOptions::default()
                }),
                ..GateOptions::default()
            }
            .build()
            .map(|c| c.mode)
        };
        let sides = |m: Result<GateMode, ConfigError>| match m {
            Ok(GateMode::Instructions { sides, .. }) => Ok(sides),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        let (a, b) = (
            Some("sample-flow --echo"),
            Some("sample-flow --echo --extra-work 9"),
        );
        assert!(matches!(
            sides(with(a, b, None, None)),
            Ok(InstrSides::Both(_))
        ));
        assert!(matches!(
            sides(with(a, None, None, Some("i.json"))),
            Ok(InstrSides::Save { .. })
        ));
        match sides(with(None, b, Some("i.json"), None)) {
            Ok(InstrSides::Stored { baseline, b }) => {
                assert_eq!(baseline, PathBuf::from("i.json"));
                assert!(b.shown.contains("--extra-work 9"));
            }
            other => panic!("{other:?}"),
        }
        // Anything else says which combinations there are.
        for bad in [
            with(a, None, None, None),
            with(None, b, None, None),
            with(a, b, Some("i.json"), None),
            with(None, b, None, Some("i.json")),
        ] {
            match sides(bad) {
                Err(e) => assert!(e.to_string().contains("--save-baseline"), "{e}"),
                Ok(s) => panic!("{s:?}"),
            }
        }
    }

    /// A side with run options of its own: the driver's cost is compared, not a control;
    /// the instruction gate refuses them (not yet).
    #[cfg(feature = "rabbitmq")]
    #[test]
    fn a_side_s_own_run_options_make_the_control_none_and_are_not_yet_counted() {
        let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
        let ab =
            |run_b: Option<RunOptions>, control: Option<&str>, instructions: bool| GateOptions {
                flow_a: Some("sample-flow".into()),
                flow_b: Some("sample-flow".into()),
                run: Some(RunOptions::on(url)),
                run_b,
                control: control.map(str::to_string),
                instructions,
                ..GateOptions::default()
            };
        let bigger = RunOptions {
            msg_size: Some(3000),
            ..RunOptions::on(url)
        };
        let control = |o: GateOptions| match o.build().map(|g| g.mode) {
            Ok(GateMode::Ab(p)) => (p.control, p.own_runs[1].is_some()),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            control(ab(None, None, false)),
            (Some("DRIVER".into()), false)
        );
        assert_eq!(control(ab(Some(bigger.clone()), None, false)), (None, true));
        assert_eq!(
            control(ab(Some(bigger.clone()), Some("QMGR"), false)),
            (Some("QMGR".into()), true)
        );
        match ab(Some(bigger), None, true).build() {
            Err(ConfigError::BadValue { flag, .. }) => assert_eq!(flag, "--run-b"),
            other => panic!("{other:?}"),
        }
    }
}
