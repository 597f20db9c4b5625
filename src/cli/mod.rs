//! Command-line types (clap derive): every option declared once (the options several
//! commands share are flattened structs), and [`convert`], the one place where parsed
//! options become the plain [`crate::config`] options that are then checked.

pub mod convert;

pub use crate::accounting::snapshot::CpuSource;
pub use crate::config::formats::{Format, ResultKind};
pub use crate::config::sweep::SweepMode;
pub use crate::transport::MatchMode;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// What does one message cost? Puts request messages to a message flow's input queue, waits
/// for each reply, and reports the round trip and the CPU spent per transaction.
#[derive(Debug, Parser)]
#[command(name = "oemputx", version, about, long_about = None)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
}

impl Cli {
    /// The result the command line asks for and its outputs (`None`: profiles, init).
    pub fn outputs(&self) -> Option<(ResultKind, &OutputArgs)> {
        Some(match &self.command {
            None => (ResultKind::Run, &self.run.outputs),
            Some(Command::Cpu(a)) => (ResultKind::Cpu, &a.outputs),
            Some(Command::Account(a)) => (ResultKind::Account, &a.outputs),
            Some(Command::Sweep(a)) => (ResultKind::Sweep, &a.run.outputs),
            Some(Command::Ladder(a)) => (ResultKind::Ladder, &a.run.outputs),
            Some(Command::Compare(a)) => (ResultKind::Compare, &a.outputs),
            Some(Command::Gate(a)) => (ResultKind::Gate, &a.outputs),
            Some(Command::Pubsub(a)) if a.find_capacity => (ResultKind::PubsubCapacity, &a.outputs),
            Some(Command::Pubsub(a)) if a.rounds > 1 => (ResultKind::PubsubRounds, &a.outputs),
            Some(Command::Pubsub(a)) => (ResultKind::Pubsub, &a.outputs),
            Some(Command::Matrix(a)) => (ResultKind::Matrix, &a.outputs),
            Some(Command::Merge(a)) => (ResultKind::Merge, &a.outputs),
            Some(Command::History(a)) => (ResultKind::History, &a.outputs),
            Some(Command::Profiles(_) | Command::Init(_)) => return None,
        })
    }
}

/// The `--export-*` options given `-` (stdout), by their flag names, from the command
/// line as clap matched it (the subcommand's and, for a gate that measures, the run options
/// after `--`). At most one may be given; when one is, stdout carries that output alone and
/// everything said to a person goes to stderr.
pub fn stdout_exports(matches: &clap::ArgMatches) -> Vec<String> {
    let mut found = Vec::new();
    let mut m = Some(matches);
    while let Some(here) = m {
        for id in here.ids() {
            let id = id.as_str();
            let to_stdout = here
                .try_get_raw(id)
                .ok()
                .flatten()
                .is_some_and(|mut v| v.any(|v| v == "-"));
            // The outputs by another name: sweep's chart, a run's baseline history.
            let output = id.starts_with("export_") || id == "chart" || id == "save_baseline";
            if output && to_stdout {
                found.push(format!("--{}", id.replace('_', "-")));
            }
            if id == "run" {
                // A gate's run options after `--`, parsed as a run's.
                let trailing: Vec<String> = here
                    .try_get_raw(id)
                    .ok()
                    .flatten()
                    .map(|v| v.map(|s| s.to_string_lossy().into_owned()).collect())
                    .unwrap_or_default();
                let argv = std::iter::once("oemputx".to_string()).chain(trailing);
                if let Ok(t) = <Cli as clap::CommandFactory>::command().try_get_matches_from(argv) {
                    found.extend(stdout_exports(&t));
                }
            }
        }
        m = here.subcommand().map(|(_, sub)| sub);
    }
    found
}

/// Subcommands besides the default put/get run.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Snapshot of process groups' CPU now (seconds since each process started), or with
    /// --interval their CPU per interval, like taking before/after readings by hand.
    Cpu(CpuArgs),
    /// Run another load driver (executed directly, no shell) and report the groups' CPU per
    /// message over its run, with the capture ratio.
    Account(AccountArgs),
    /// The paper's scaling experiment: for each task count N, one flow process with N threads
    /// against N flow processes, every point a flow of its own measured in interleaved rounds
    /// until each N's processes ÷ threads ratio is known; a table with intervals and an SVG
    /// chart. Takes a round's options (--qmgr, --count, --group…), --tasks as a list.
    Sweep(Box<SweepArgs>),
    /// The curve, not a point: cost per group, round trip and capacity against offered
    /// load, each rate a step (--rates 100,300,1000, or auto: up through saturation and a
    /// bisection), with the highest rate that holds (keeps up, no growing backlog, --slo
    /// met), what limited it (flow, driver or host), the knee, and the cores each group
    /// needs along the curve. Takes a run's options (--qmgr, --group, --msgfile…).
    Ladder(Box<LadderArgs>),
    /// The paper's overhead table: each group's CPU µs per transaction per setting and the
    /// Total Overhead % against the first. Live (--flow-cmd, --setting … -- RUN OPTIONS):
    /// every setting measured in one window, each change with its interval; or of saved JSON
    /// reports (separate runs).
    Compare(CompareArgs),
    /// The CI regression gate: compare the rounds of a run with a baseline's, per group
    /// CPU µs/tran and corrected total; exit 3 on a regression. Give --current REPORT.json,
    /// or the run options after `--` to measure now.
    Gate(Box<GateArgs>),
    /// Publish/subscribe (the JMS stock-ticker study): publishers send symbols' trades in
    /// order, each subscriber has the broker select a block of symbols; publisher and
    /// subscriber rates apart, lost/duplicated per subscriber, backlog, drain, latency, and
    /// the groups' CPU per message published and delivered. RabbitMQ, NATS (and JetStream),
    /// MQTT and ActiveMQ (STOMP).
    Pubsub(Box<PubsubArgs>),
    /// The CJMQ throughput table: one sender, 1 or 5 receivers, 128 or 1024 bytes,
    /// non-persistent or persistent; messages received per second per receiver and the
    /// broker's CPU per message, cell by cell.
    Matrix(MatrixArgs),
    /// The profiles `--qmgr NAME` takes: each one's URL (password masked), request queue,
    /// and where it comes from (./oemputx.toml, ~/.config/oemputx/oemputx.toml, or built
    /// in), with what it overrides.
    Profiles(ProfilesArgs),
    /// Write the shipped profiles to ~/.config/oemputx/oemputx.toml (or --path) to edit for
    /// your own brokers; an existing file is kept unless --force.
    Init(InitArgs),
    /// One report from the shards of a run driven from several hosts (each run with --shard
    /// I/N --run-id ID): histograms and counters added, the shared processes' CPU from one
    /// measurement (a shard with --measure, or --cpu) over every shard's messages.
    Merge(MergeArgs),
    /// Where main's runs stepped: per gated metric, the runs of a history (the file
    /// --save-baseline appends to) at which the series changed level, by e-divisive means,
    /// each with its commit, the medians either side and the step in %; with a sparkline of
    /// the series.
    History(HistoryArgs),
}

/// Options of `oemputx history`.
#[derive(Debug, Args, Clone)]
pub struct HistoryArgs {
    /// The history (what --save-baseline FILE wrote), or one saved report.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Search this metric too (a group such as DRIVER, captured, corrected, rate or p99);
    /// by default what the gate gates: every group but DRIVER, and the CPU total.
    #[arg(long, value_name = "NAME")]
    pub metric: Vec<String>,
    #[command(flatten)]
    pub outputs: OutputArgs,
}

/// Options of `oemputx merge`.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// The shards' JSON reports, or folders that hold them (every *.json but latest.json).
    #[arg(required = true, value_name = "REPORT.json|DIR")]
    pub reports: Vec<PathBuf>,
    /// The shared processes' CPU over the run's window, from `oemputx cpu --from START
    /// --until END --export-json FILE`, instead of a shard run with --measure.
    #[arg(long, value_name = "FILE")]
    pub cpu: Option<PathBuf>,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Do not print the text report.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Options of `oemputx profiles`.
#[derive(Debug, Args, Clone)]
pub struct ProfilesArgs {
    /// Read profiles from this file only (and the built-in ones), as --config does for a run.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Options of `oemputx init`.
#[derive(Debug, Args, Clone)]
pub struct InitArgs {
    /// The file to write. [default: $XDG_CONFIG_HOME/oemputx/oemputx.toml, else
    /// ~/.config/oemputx/oemputx.toml]
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Replace the file when it exists.
    #[arg(long)]
    pub force: bool,
}

/// Process groups and the hosts they may be on: every command that accounts CPU.
#[derive(Debug, Args, Clone, Default)]
pub struct GroupArgs {
    /// A process group to account: NAME=SEL[,SEL…] with selectors comm:NAME, cmd:REGEX, pid:N,
    /// pidfile:PATH, user:NAME, tree:PID, cgroup:PATH, thread:REGEX, or a preset @rabbitmq,
    /// @postgresql, @nats, @mosquitto, @ibmmq, @ace, @db2, @activemq, @kafka, @sample-flow; NAME@HOST=… places it
    /// on a --host. Repeatable. [default: a run's profile groups, else its transport's; pubsub
    /// and matrix: the broker; cpu: one group per preset]
    #[arg(long = "group", value_name = "NAME=SEL,...")]
    pub groups: Vec<String>,

    /// A host whose processes groups may be placed on: NAME=pcp://HOST[:PORT] (pmproxy's
    /// REST port, 44322 by default; password in OEMPUTX_PCP_PASSWORD). Repeatable; place a
    /// group there with --group NAME@HOST=SEL,...
    #[arg(long = "host", value_name = "NAME=pcp://HOST[:PORT]")]
    pub hosts: Vec<String>,
}

/// Where process CPU comes from.
#[derive(Debug, Args, Clone)]
pub struct SourceArgs {
    /// Where process CPU comes from: exact CPU clocks, or /proc ticks for comparison.
    #[arg(long, value_enum, default_value_t = CpuSource::Exact)]
    pub cpu_source: CpuSource,
    /// Count no syncs per message. Counting them turns on the kernel's syscall tracepoints,
    /// which make every system call on the host about 35 ns slower while the run lasts.
    #[arg(long)]
    pub no_syncs: bool,
}

/// The capture ratio.
#[derive(Debug, Args, Clone)]
pub struct RatioArgs {
    /// Capture ratio: `measured` from /proc over the window, or a fixed value such as 0.9.
    #[arg(long, value_name = "measured|RATIO", default_value = "measured")]
    pub capture_ratio: String,
}

/// The reports folder every measured run is saved in.
#[derive(Debug, Args, Clone)]
pub struct SaveArgs {
    /// Do not save the run under the reports folder.
    #[arg(long, env = "OEMPUTX_NO_SAVE", value_parser = boolish_or_empty)]
    pub no_save: bool,

    /// Folder where every run is saved as <UTC time>-<label>.{txt,tsv,json}, with latest.json
    /// (pub/sub: <UTC time>-pubsub.{txt,tsv,json,md}).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "reports",
        env = "OEMPUTX_REPORTS_DIR"
    )]
    pub reports_dir: PathBuf,
}

/// The outputs, the same flags for every command: each command writes the formats its
/// result has ([`ResultKind::formats`]); a format it has not is refused before anything
/// runs, naming those it has. `-` is stdout (one output at most), which then carries that
/// output alone. Help shows each command the flags it takes.
#[derive(Debug, Args, Clone, Default)]
pub struct OutputArgs {
    /// Write the result as JSON to PATH (`-` for stdout); the file names its schema.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write the result as tab-separated values for a spreadsheet (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub export_tsv: Option<PathBuf>,
    /// Write the result as CSV, RFC 4180 (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<PathBuf>,
    /// Write the summary and tables as Markdown, e.g. for a CI job summary
    /// ($GITHUB_STEP_SUMMARY; `-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,
    /// Write OpenMetrics text (Prometheus; node_exporter's textfile collector reads it):
    /// CPU seconds as counters, µs/tran or CPUs busy as gauges (`-` for stdout). `cpu`
    /// rewrites the file after every --interval.
    #[arg(long, value_name = "PATH")]
    pub export_openmetrics: Option<PathBuf>,
    /// Write the result as one self-contained HTML file with its charts, to send (no
    /// network needed to open it).
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
    /// Write the result's chart as SVG (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub export_svg: Option<PathBuf>,
    /// Write JUnit XML: one test case per metric, a failure per regression.
    #[arg(long, value_name = "PATH")]
    pub export_junit: Option<PathBuf>,
    /// Write the current medians in Bencher Metric Format.
    #[arg(long, value_name = "PATH")]
    pub export_bmf: Option<PathBuf>,
    /// Write github-action-benchmark's customSmallerIsBetter JSON.
    #[arg(long, value_name = "PATH")]
    pub export_gha: Option<PathBuf>,
    /// Write the stacks --profile sampled as folded stacks, `GROUP;process;frame;…;leaf
    /// COUNT` per line, for inferno-flamegraph, flamegraph.pl or speedscope (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub export_folded: Option<PathBuf>,
}

impl OutputArgs {
    /// The path given for `format`, if any.
    pub fn path(&self, format: Format) -> Option<&PathBuf> {
        match format {
            Format::Json => self.export_json.as_ref(),
            Format::Tsv => self.export_tsv.as_ref(),
            Format::Csv => self.export_csv.as_ref(),
            Format::Markdown => self.export_markdown.as_ref(),
            Format::OpenMetrics => self.export_openmetrics.as_ref(),
            Format::Html => self.export_html.as_ref(),
            Format::Svg => self.export_svg.as_ref(),
            Format::Junit => self.export_junit.as_ref(),
            Format::Bmf => self.export_bmf.as_ref(),
            Format::Gha => self.export_gha.as_ref(),
            Format::Folded => self.export_folded.as_ref(),
        }
    }

    /// Every output asked for, with its path.
    pub fn given(&self) -> Vec<(Format, &std::path::Path)> {
        Format::ALL
            .iter()
            .filter_map(|&f| self.path(f).map(|p| (f, p.as_path())))
            .collect()
    }

    /// The outputs asked for, by format.
    pub fn exports(&self) -> crate::config::formats::Exports {
        crate::config::formats::Exports::new(
            self.given().into_iter().map(|(f, p)| (f, p.to_path_buf())),
        )
    }

    /// The outputs asked for in the formats `kind` is written in: a run's files, say, under a
    /// sweep that writes its chart (`--export-svg`) itself.
    pub fn exports_of(&self, kind: ResultKind) -> crate::config::formats::Exports {
        crate::config::formats::Exports::new(
            self.given()
                .into_iter()
                .filter(|(f, _)| kind.formats().contains(f))
                .map(|(f, p)| (f, p.to_path_buf())),
        )
    }

    /// Refuse a format `kind` is not written in, naming those it is (before anything runs).
    pub fn check(&self, kind: ResultKind) -> Result<(), crate::config::ConfigError> {
        kind.check(&self.given())
    }
}

/// The command line with each subcommand's help showing only the `--export-*` flags its
/// result writes (the others still parse, to be refused by [`OutputArgs::check`] with the
/// formats that command has, rather than by clap's bare "unexpected argument").
pub fn command() -> clap::Command {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    for kind in ResultKind::ALL.into_iter().filter(|k| !k.is_variant()) {
        let hide = |mut c: clap::Command| {
            for f in Format::ALL {
                if !kind.formats().contains(&f) {
                    c = c.mut_arg(f.id(), |a| a.hide(true));
                }
            }
            c
        };
        cmd = match kind.subcommand() {
            "" => hide(cmd),
            sub => cmd.mut_subcommand(sub, hide),
        };
    }
    cmd
}

/// Options of `oemputx matrix`.
#[derive(Debug, Args, Clone)]
pub struct MatrixArgs {
    /// The broker: amqp://… (RabbitMQ), nats://…, mqtt://… or stomp://… (ActiveMQ), or a
    /// profile naming one. Also from OEMPUTX_QMGR (a password then stays off the command line).
    #[arg(
        long,
        value_name = "URL|PROFILE",
        env = "OEMPUTX_QMGR",
        hide_env_values = true
    )]
    pub qmgr: String,
    /// Messages the sender sends in each cell.
    #[arg(long, default_value_t = 500)]
    pub count: u64,
    /// Measure every cell this many times, the cells in a balanced order each round
    /// (Williams): each cell is then the median of its rounds with its interval.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub rounds: u64,
    /// The stream's name (RabbitMQ exchange, NATS subject prefix, MQTT topic prefix).
    #[arg(long, default_value = "matrix")]
    pub topic: String,
    /// RabbitMQ: create the exchange (durable) when missing.
    #[arg(long)]
    pub declare: bool,
    /// `topic`: every receiver gets every message; `queue`: receivers compete, each message
    /// to one of them.
    #[arg(long, default_value = "topic")]
    pub pattern: String,
    #[command(flatten)]
    pub groups: GroupArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub ratio: RatioArgs,
    #[command(flatten)]
    pub outputs: OutputArgs,
}

/// Options of `oemputx pubsub`.
#[derive(Debug, Args, Clone)]
pub struct PubsubArgs {
    /// The broker: amqp://user:pass@host:5672/vhost (RabbitMQ), nats://host:4222 (NATS),
    /// mqtt://[user:pass@]host:1883 (MQTT 5), stomp://user:pass@host:61613 (ActiveMQ), or a
    /// profile naming one (oemputx profiles). Also from OEMPUTX_QMGR (a password then stays
    /// off the command line).
    #[arg(
        long,
        value_name = "URL|PROFILE",
        env = "OEMPUTX_QMGR",
        hide_env_values = true
    )]
    pub qmgr: String,
    /// The stream's name: RabbitMQ exchange, NATS subject prefix (ticker.S07), MQTT topic
    /// prefix (ticker/S07).
    #[arg(long, default_value = "ticker")]
    pub topic: String,
    /// Create what the stream needs when missing, and leave it at the end: RabbitMQ the
    /// exchange (durable); NATS with --persistent the JetStream stream. (MQTT needs none.)
    #[arg(long)]
    pub declare: bool,
    #[arg(long, default_value_t = 1)]
    pub publishers: usize,
    #[arg(long, default_value_t = 10)]
    pub subscribers: usize,
    /// Symbols S00..S99 the publishers cycle through, in order.
    #[arg(long, default_value_t = 100)]
    pub symbols: u16,
    /// Contiguous symbols each subscriber selects, from a start drawn from --seed.
    #[arg(long, default_value_t = 25)]
    pub select: u16,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Messages all publishers send together.
    #[arg(long, default_value_t = 20_000)]
    pub count: u64,
    /// Body size, bytes.
    #[arg(long, default_value_t = 64)]
    pub msg_size: usize,
    /// Publisher sleep before each publish (the study's think time), e.g. 2ms.
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub think: humantime::Duration,
    /// All publishers together at most this many messages a second.
    #[arg(long, value_name = "MSG_PER_S")]
    pub rate: Option<f64>,
    /// Persistent messages: RabbitMQ delivery mode 2; NATS JetStream (each publish stored
    /// and acknowledged); MQTT QoS 1.
    #[arg(long)]
    pub persistent: bool,
    /// Subscriber acknowledgement, mapped to the broker's nearest mode (the report says which).
    #[arg(long, value_enum, default_value_t = crate::pubsub::Ack::None)]
    pub ack: crate::pubsub::Ack,
    /// How the broker selects symbols (RabbitMQ: headers or topic exchange; NATS and MQTT:
    /// always by subject or topic).
    #[arg(long, value_enum, default_value_t = crate::pubsub::SelectBy::Header)]
    pub select_by: crate::pubsub::SelectBy,
    /// Subscribers stop waiting when nothing has come for this long after publishing ended.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub drain_timeout: humantime::Duration,
    #[command(flatten)]
    pub groups: GroupArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub ratio: RatioArgs,
    #[command(flatten)]
    pub outputs: OutputArgs,
    #[command(flatten)]
    pub save: SaveArgs,
    /// Run the same window this many times and report each round and the spread of the CPU
    /// per message published (best/median/worst), as a run's --rounds does.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Point-to-point: the subscribers compete for one queue of every symbol, each message
    /// going to one of them (RabbitMQ one shared queue, NATS a queue group, MQTT a shared
    /// subscription); lost and duplicated are counted over all of them.
    #[arg(long)]
    pub compete: bool,
    /// Raise the publish rate by half each step (from --rate, or 500/s), --count messages a
    /// step, until subscribers fall behind (pace under 95 %) or the backlog does not drain;
    /// report the highest rate that kept up and its CPU per message.
    #[arg(long)]
    pub find_capacity: bool,
    /// Publish for this long instead of --count messages (what each subscriber must receive
    /// is then known when the publishers stop).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<humantime::Duration>,
}

/// Options of `oemputx gate`.
#[derive(Debug, Args, Clone)]
pub struct GateArgs {
    /// The baseline report (made on main with --save-baseline PATH). Not with --flow-a.
    #[arg(long, value_name = "PATH", required_unless_present_any = ["flow_a", "rejudge"])]
    pub baseline: Option<PathBuf>,
    /// The report to judge, e.g. reports/latest.json (or give run options after --).
    #[arg(long, value_name = "PATH", conflicts_with = "flow_a")]
    pub current: Option<PathBuf>,
    /// A/B in one run: the command of flow A (the baseline build), executed directly (no
    /// shell), given its own request queue and the URL as --input-queue Q --url U and as
    /// OEMPUTX_QUEUE and OEMPUTX_URL. Rounds alternate A B B A … against both flows.
    #[arg(long, value_name = "COMMAND", conflicts_with = "baseline")]
    pub flow_a: Option<String>,
    /// A/B in one run: the command of flow B (the build to judge); with --instructions and
    /// --baseline, alone.
    #[arg(long, value_name = "COMMAND")]
    pub flow_b: Option<String>,
    /// A/B: run options of side A's own, on top of those after -- (the driver's settings
    /// only: --persistent, --msg-size, --reply-queue, --confirm-window, --rate, --tasks…),
    /// e.g. --run-a "--reply-queue per-task" --run-b "--reply-queue amq.rabbitmq.reply-to"
    /// with the same flow on both sides. Not with --instructions.
    #[arg(
        long,
        value_name = "RUN OPTIONS",
        requires = "flow_a",
        allow_hyphen_values = true
    )]
    pub run_a: Option<String>,
    /// A/B: run options of side B's own (see --run-a).
    #[arg(
        long,
        value_name = "RUN OPTIONS",
        requires = "flow_a",
        allow_hyphen_values = true
    )]
    pub run_b: Option<String>,
    /// A/B: stop adding rounds after this many (A and B rounds counted together).
    /// [default: as many as fit in --max-time]
    #[arg(long, value_name = "N", requires = "flow_a")]
    pub max_rounds: Option<usize>,
    /// A/B: the time the gate may take: it adds rounds until every gated metric is
    /// decided or the next block would not fit; what is still undecided then is
    /// inconclusive (passing, or failing under --strict).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        requires = "flow_a"
    )]
    pub max_time: humantime::Duration,
    /// A/B: adjust every pair by this group's change in the same pair (a control variate:
    /// the machine's round-to-round weather moves every process's cost together). The
    /// group must run the same code on both sides; `none` judges the pairs as measured.
    /// [default: DRIVER, or none with --run-a/--run-b: the driver's cost is then compared]
    #[arg(long, value_name = "GROUP", requires = "flow_a")]
    pub control: Option<String>,
    /// Gate on instruction counts under valgrind's callgrind (over 1, N and 2N messages,
    /// N = --count) instead of CPU time; deterministic, flow only. With --flow-a and
    /// --flow-b both now; with --flow-a and --save-baseline, A's counts saved; with --flow-b
    /// and --baseline, B against saved counts.
    #[arg(long)]
    pub instructions: bool,
    /// --instructions: count each flow this many times; each size's least-disturbed count
    /// is used, and must be confirmed by a second run.
    #[arg(long, value_name = "N", default_value_t = 5, requires = "instructions")]
    pub runs: usize,
    /// Largest slowdown that still passes, e.g. 2% (default 5% against a baseline, 2.5% A/B,
    /// or the gate file's).
    #[arg(long, value_name = "PERCENT")]
    pub tolerance: Option<String>,
    /// TOML with `tolerance = "5%"` and a [metrics] table of per-metric tolerances
    /// (FLOW = "3%", rate = "10%", p99 = "20%"; naming rate or p99 gates them too).
    #[arg(long, value_name = "PATH")]
    pub gate_file: Option<PathBuf>,
    /// Also gate this metric: rate, p99, captured, corrected or a group name (repeatable).
    #[arg(long, value_name = "METRIC")]
    pub metric: Vec<String>,
    /// Exit 4 when the verdict is inconclusive or the baseline is missing.
    #[arg(long)]
    pub strict: bool,
    /// Gate even when the runs differ in message, tasks, persistence, transport or groups.
    #[arg(long)]
    pub force: bool,
    /// Print GitHub Actions annotations (::error / ::warning, at most ten).
    #[arg(long)]
    pub github: bool,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// --instructions: save flow A's counts here as the baseline of later gates (on main);
    /// a branch then gives --flow-b and --baseline PATH, and only its flow is counted.
    #[arg(long, value_name = "PATH", requires = "instructions")]
    pub save_baseline: Option<PathBuf>,
    /// Judge saved instruction-gate verdicts (--export-json of `gate --instructions`) again
    /// with the current rule and --tolerance, one line each: how calibration runs made by
    /// an earlier build read today.
    #[arg(long, value_name = "VERDICT.json", num_args = 1.., conflicts_with_all = ["baseline", "flow_a", "current"])]
    pub rejudge: Vec<PathBuf>,
    /// Run options (after --) to measure now and gate that run.
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run: Vec<String>,
}

/// Options of `oemputx sweep`: its own, and a run's (with `--tasks` as a list).
#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    /// The flow to start, without --threads (sweep adds it, and --input-queue and --url when
    /// absent), e.g. "sample-flow --db postgres://postgres@127.0.0.1:5432/test".
    #[arg(long, value_name = "COMMAND")]
    pub flow_cmd: String,
    /// Which ways of running N instances to measure.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "threads,processes"
    )]
    pub modes: Vec<SweepMode>,
    /// Also write the SVG chart here, as --export-svg does (it is always saved in the
    /// reports folder unless --no-save).
    #[arg(long, value_name = "PATH", conflicts_with = "export_svg")]
    pub chart: Option<PathBuf>,
    /// Stop adding rounds after this long; each N's ratio is then reported with the
    /// interval it has.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub max_time: humantime::Duration,
    /// Stop once every N's processes ÷ threads interval is within ± this. [default: 3%]
    #[arg(long, value_name = "PERCENT")]
    pub precision: Option<String>,
    /// The smallest difference between the modes reported. [default: 2%]
    #[arg(long, value_name = "PERCENT")]
    pub min_effect: Option<String>,
    /// The run options; --tasks takes the list of task counts, e.g. --tasks 1,2,3,4.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Options of `oemputx ladder`: its own, and a run's.
#[derive(Debug, Args, Clone)]
pub struct LadderArgs {
    /// The offered rates, messages a second in all: a list such as 100,300,1000 (unpaced:
    /// a step as fast as the tasks go), or auto: an unpaced step, then steps ×2 from a
    /// sixteenth of its rate up to the first that does not hold, then a bisection until the
    /// top is known to ±5 %.
    #[arg(long, value_name = "auto|R1,R2,…", default_value = "auto")]
    pub rates: String,
    /// How long each step is measured (five windows, after a settling second at its
    /// rate). [default: 10s with auto; with a list, what fits it in about 2.5 minutes,
    /// 3s to 20s]
    #[arg(long, value_name = "DURATION")]
    pub step_time: Option<humantime::Duration>,
    /// A latency objective every step must meet to hold, pNN=DURATION (e.g. p99=50ms,
    /// p99.9=200ms; the round trip from each request's intended send time). Repeatable.
    /// [default: none: a step holds when it keeps up]
    #[arg(long, value_name = "pNN=DURATION")]
    pub slo: Vec<String>,
    /// Start no step that would end after this long. [default: 3m with auto; with a list,
    /// its steps, two repeats and five with more tasks]
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<humantime::Duration>,
    /// Measure no step again at the end (by default the lowest and the highest rate that
    /// held are, and a repeat that disagrees is flagged as drift).
    #[arg(long)]
    pub no_repeat: bool,
    /// Also give the cores each group needs (and the money per million messages) at these
    /// rates, e.g. 2500,5000: interpolated between the two rates that held around each,
    /// never extrapolated past the highest.
    #[arg(long, value_name = "R1,R2,…")]
    pub capacity_at: Option<String>,
    /// The run options; --tasks N drives every step with N tasks, --tasks auto (the
    /// default) starts with 2 and doubles them (to 64) while the driver is what limits.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Options of `oemputx compare`: saved reports of separate runs, or settings measured now.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Saved JSON reports (--export-json or reports/*.json) of separate runs; the first is
    /// the base. Not with --setting or --flow.
    #[arg(num_args = 0.., value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
    /// Live: the flow every --setting adds its arguments to, e.g. "sample-flow --db …".
    #[arg(long, value_name = "COMMAND")]
    pub flow_cmd: Option<String>,
    /// Live: a setting (repeatable; the first is the base): NAME=ARGS added to --flow-cmd,
    /// e.g. --setting off="--stats off", then after a lone -- run options of its own
    /// (--setting p="--stats off -- --persistent"); without --flow-cmd, run options alone
    /// for the responder the run options after -- name, e.g. --setting 1k="--msg-size 1000".
    /// A setting's run options are the driver's (persistence, size, reply path, rate, tasks,
    /// confirms…); --group, --count and the like are refused.
    #[arg(long = "setting", value_name = "NAME=ARGS")]
    pub settings: Vec<String>,
    /// Live: an arm with a flow command of its own, NAME=COMMAND (repeatable; the first is
    /// the base); instead of --flow-cmd and --setting.
    #[arg(long = "flow", value_name = "NAME=COMMAND")]
    pub flows: Vec<String>,
    /// Live: stop adding rounds after this long; what is not decided by then is reported
    /// with its interval as "inconclusive", saying why.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub max_time: humantime::Duration,
    /// Live: stop adding rounds after this many (all settings together). [default: 400, or
    /// the first look's blocks where more settings need more]
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<usize>,
    /// Live: the smallest change reported, as a share of the base setting's cost (a
    /// difference smaller than this is not reported however sure). [default: 1%]
    #[arg(long, value_name = "PERCENT")]
    pub min_effect: Option<String>,
    /// Live: the smallest change reported in µs/tran, whatever its share (a group that
    /// costs nearly nothing reports no large relative change of nearly nothing).
    #[arg(long = "floor", value_name = "US", default_value_t = crate::config::compare::FLOOR_US)]
    pub floor_us: f64,
    /// Live: adjust every pair by this group's change in the same pair (the driver runs the
    /// same code for every setting); `none` judges pairs as measured. [default: DRIVER, or
    /// none when a setting has run options of its own: the driver's cost is then compared]
    #[arg(long, value_name = "GROUP")]
    pub control: Option<String>,
    /// Saved reports: compare even when the runs differ in message, tasks, persistence or
    /// transport.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Live: the run options (after --) of one round, e.g. -- --qmgr RABBIT --count 2000.
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run: Vec<String>,
}

/// Options of `oemputx cpu`.
#[derive(Debug, Args, Clone)]
pub struct CpuArgs {
    #[command(flatten)]
    pub groups: GroupArgs,
    /// Print the CPU used in each interval instead of totals so far.
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<humantime::Duration>,
    /// Stop after this many intervals. [default: until Ctrl-C]
    #[arg(long, value_name = "N", requires = "interval")]
    pub count: Option<u64>,
    /// Tab-separated values (units in the column names) instead of a table.
    #[arg(long)]
    pub tsv: bool,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Measure one window: snapshot the groups at this instant (RFC 3339, or +DURATION from
    /// now) and again at --until; the CPU of each group in between, for `oemputx merge --cpu`
    /// (the run's shared processes measured once for all shards).
    #[arg(
        long,
        value_name = "TIME",
        requires = "until",
        conflicts_with = "interval"
    )]
    pub from: Option<String>,
    /// The window's end (RFC 3339, or +DURATION from now).
    #[arg(long, value_name = "TIME", requires = "from")]
    pub until: Option<String>,
    #[command(flatten)]
    pub source: SourceArgs,
}

/// Options of `oemputx account`.
#[derive(Debug, Args, Clone)]
pub struct AccountArgs {
    /// Messages the command sends; the figures are per message.
    #[arg(long, value_name = "N")]
    pub messages: u64,
    /// At least one group (`--group`) is needed: the command's own CPU is reported anyway.
    #[command(flatten)]
    pub groups: GroupArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub ratio: RatioArgs,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// The load driver and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The options of a put/get run.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Queue manager: nothing for the embedded one, a URL (`embedded:`,
    /// `amqp://user:pass@host:port/vhost` or `amqps://…`, `amqp10://user:pass@host:5672` or
    /// `amqps10://…`, `nats://host:4222` or `tls://…`, `stomp://user:pass@host:61613` or
    /// `stomp+ssl://…`, `mqtt://host:1883`, `kafka://user:pass@host:9092,host:9092` or
    /// `kafka+ssl://…`, `ibmmq://QM1?conn=host(1414)&channel=DEV.APP.SVRCONN`), a profile
    /// (`oemputx profiles` lists them; RABBIT, NATS, AMQP10 and EMBEDDED are built in), or
    /// else the name of an IBM MQ queue manager (client through MQSERVER or MQCCDTURL,
    /// bindings when local). Also from OEMPUTX_QMGR, which keeps a password off the command
    /// line (where any user of the machine reads it in `ps`).
    #[arg(
        long,
        value_name = "NAME|URL",
        env = "OEMPUTX_QMGR",
        hide_env_values = true
    )]
    pub qmgr: Option<String>,

    /// Profile file to read instead of ./oemputx.toml and $XDG_CONFIG_HOME/oemputx/oemputx.toml.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Queue the requests are put to (the flow's input queue). [default: the profile's, else
    /// sample-flow's on the transport: MQSI.IN; MQSI.IN.AMQP10 over amqp10://, MQSI.IN.STOMP
    /// over stomp://, MQSI/IN over mqtt://]
    #[arg(long, value_name = "QUEUE")]
    pub request_queue: Option<String>,

    /// Where replies come back: a named, shared queue (e.g. MQSI.OUT), matched by
    /// correlation id and cleared at start; `per-task` (the default: a temporary exclusive
    /// queue per task); on amqp:// also `amq.rabbitmq.reply-to` (RabbitMQ's direct reply-to:
    /// no queue) and `per-request` (a temporary queue declared for each request).
    #[arg(long, value_name = "QUEUE")]
    pub reply_queue: Option<String>,

    /// Do not clear a named reply queue before the run.
    #[arg(long)]
    pub no_clear: bool,

    /// Create missing queues (otherwise a missing request queue is an error); on NATS with
    /// --persistent, the JetStream stream. Not for IBM MQ, whose queues are defined by its
    /// administrator (runmqsc DEFINE QLOCAL).
    #[arg(long)]
    pub declare: bool,

    /// IBM MQ: put each request with MQPUT1 (open, put, close in one call) rather than
    /// MQPUT to a queue opened once.
    #[arg(long)]
    pub put1: bool,

    /// IBM MQ: the model queue each task's temporary reply queue is made from, e.g.
    /// DEV.APP.MODEL.QUEUE on IBM's developer container. [default: SYSTEM.DEFAULT.MODEL.QUEUE]
    #[arg(long, value_name = "QUEUE")]
    pub model_queue: Option<String>,

    /// AMQP 0-9-1: publisher confirms, with at most N requests unconfirmed (a put waits for
    /// confirms beyond that; 1 = each put waits for its own). The round trip still waits
    /// for the reply. Not with --syncpoint (a channel is transactional or confirming).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub confirm_window: Option<u32>,

    /// Copies a cluster keeps of each stored request. NATS: the replicas of the JetStream
    /// stream --persistent --declare creates (1 to 5; a stream found with another number is
    /// refused). [default: the store's own, 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub replicas: Option<u8>,

    /// RabbitMQ: the kind of request queue --declare creates (classic, quorum, stream); a
    /// queue found of another kind is refused. The flow's consumers must take it as it is
    /// (sample-flow --queue-type). [default: the broker's, classic]
    #[arg(long, value_name = "KIND")]
    pub queue_type: Option<crate::transport::QueueType>,

    /// Message file(s) to send; several are sent in turn. [default: msgfiles/request-630.xml]
    #[arg(long, value_name = "PATH")]
    pub msgfile: Vec<PathBuf>,

    /// Each line of the message file(s) is one message (OEMPUT's -crlf).
    #[arg(long)]
    pub lines: bool,

    /// Send a generated body of N bytes instead of a file.
    #[arg(long, value_name = "BYTES", conflicts_with = "msgfile")]
    pub msg_size: Option<usize>,

    /// Total measured messages (round trips), shared across tasks. [default: 1000]
    #[arg(long, short = 'n', value_name = "N", conflicts_with = "duration")]
    pub count: Option<u64>,

    /// Run for this long instead of a count (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<humantime::Duration>,

    /// Repeat the measured window N times on the same connections (warmup once); the report
    /// shows each round and best/median/worst.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub rounds: usize,

    /// Size each round to last about this long (default 5s), from a 1 s unmeasured
    /// probe of the rate after the warmup; never fewer messages than --count.
    #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "5s", conflicts_with = "duration")]
    pub probe: Option<humantime::Duration>,

    /// Parallel driver tasks, each with its own connection, started together. (`oemputx
    /// sweep` takes a list, e.g. 1,2,3,4; `oemputx ladder` takes auto.) [default: 1; ladder:
    /// auto]
    #[arg(long, short = 't', value_name = "N", value_delimiter = ',')]
    pub tasks: Vec<TaskCount>,

    /// Put K messages, then get their K replies, per loop.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub msgs_per_loop: usize,

    /// Send persistent messages (AMQP delivery mode 2; IBM MQ MQPER_PERSISTENT; NATS: into
    /// the JetStream stream that captures the subject, waiting for its acknowledgement; the
    /// embedded queue manager only marks them).
    #[arg(long)]
    pub persistent: bool,

    /// Put and get under syncpoint. AMQP: each loop's puts are published in a transaction
    /// (tx.select/tx.commit) and its replies are acknowledged and committed the same way.
    /// IBM MQ: MQPUT with MQPMO_SYNCPOINT, MQCMIT after the loop's puts, MQGET with
    /// MQGMO_SYNCPOINT and MQCMIT after its gets. Embedded: puts become visible at commit.
    #[arg(long)]
    pub syncpoint: bool,

    /// How long to wait for each reply (MQGET wait) before counting a timeout.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub wait: humantime::Duration,

    /// After a task's connection breaks, try for this long to connect again (to the next
    /// node of a cluster named in --qmgr, or the same broker), then go on; the report counts
    /// the interruption. 0s: a broken connection ends the run. [default: --wait + 5s]
    #[arg(long, value_name = "DURATION")]
    pub reconnect_for: Option<humantime::Duration>,

    /// Stop the run after this many timed-out replies. [default: stop after 5 in a row with
    /// no reply between them: the flow is most likely gone]
    #[arg(long, value_name = "N")]
    pub max_timeouts: Option<u64>,

    /// How a reply is paired with its request.
    #[arg(long = "match", value_enum, default_value_t = MatchMode::Correl)]
    pub match_mode: MatchMode,

    /// Messages sent before the measured window (shared across tasks), not counted.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup: u64,

    /// Pace requests at N per second in total; latency is measured from each request's
    /// intended send time, so queueing delay counts.
    #[arg(long, value_name = "PER_SEC")]
    pub rate: Option<f64>,

    #[command(flatten)]
    pub groups: GroupArgs,

    /// Account no process groups (only the driver's own CPU).
    #[arg(long, conflicts_with = "groups")]
    pub no_groups: bool,

    #[command(flatten)]
    pub source: SourceArgs,

    #[command(flatten)]
    pub ratio: RatioArgs,

    #[command(flatten)]
    pub outputs: OutputArgs,

    /// Write the report as JSON to PATH as the gate's baseline (run it with --rounds 5 or
    /// more: the gate compares rounds).
    #[arg(long, value_name = "PATH")]
    pub save_baseline: Option<PathBuf>,

    /// CSV field delimiter, e.g. ';' for spreadsheets that use decimal commas.
    #[arg(long, value_name = "CHAR", default_value = ",")]
    pub delimiter: char,

    /// Write decimal commas in TSV and CSV (e.g. 41,20 instead of 41.20).
    #[arg(long)]
    pub decimal_comma: bool,

    #[command(flatten)]
    pub save: SaveArgs,

    /// Label of the saved reports. [default: the profile's label, or the transport]
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    /// What one vCPU-hour costs (e.g. 0.0425): each group's cost per million messages,
    /// beside its cores per 1,000 msg/s, in every format.
    #[arg(long, value_name = "PRICE")]
    pub price_per_vcpu_hour: Option<f64>,

    /// Where the CPU goes: sample every CPU's stacks with Linux perf while the measured
    /// window is open and report each group's top functions in µs per message (and, for
    /// compare and the A/B gate, what changed between the arms). Needs perf and root or
    /// CAP_PERFMON; --export-folded writes the stacks.
    #[arg(long)]
    pub profile: bool,

    /// Print a progress line on stderr this often, on a terminal and in CI logs alike:
    /// messages and share done, rate, round trip, oemputx's CPU per message, time left.
    /// 0 turns it off. [default: 10s; off under --quiet unless given or --progress]
    #[arg(long, value_name = "DURATION", alias = "stats-interval")]
    pub progress_every: Option<humantime::Duration>,

    /// No progress bar (it shows only on a terminal, for runs longer than two seconds).
    #[arg(long, conflicts_with = "progress")]
    pub no_progress: bool,

    /// The progress bar even with --quiet (which otherwise hides it with the report): on a
    /// terminal, on stderr, for runs longer than two seconds.
    #[arg(long)]
    pub progress: bool,

    /// One shard of a run driven from several hosts: shard I (0-based) of N takes its share
    /// of --count, --rate and --tasks; `oemputx merge` combines the shards' reports.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// N shards, this one's index from the job runner: JOB_COMPLETION_INDEX (a Kubernetes
    /// Indexed Job), SLURM_PROCID (an srun step) or SLURM_ARRAY_TASK_ID (a Slurm array job);
    /// `auto` takes N from Slurm too, and under Slurm the run id defaults to the job's.
    #[arg(long, value_name = "N|auto")]
    pub shards: Option<String>,

    /// The run's id, the same on every shard (recorded in each report; merge takes one run).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,

    /// Open the measured window at this instant, after connecting and warming up: RFC 3339
    /// (2026-12-03T10:00:00Z, the same for every shard), or +DURATION from now.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,

    /// This shard's groups are the run's one measurement of the shared processes (the
    /// broker, the queue manager, the database) for merge.
    #[arg(long)]
    pub measure: bool,

    /// Do not print the text report on stdout.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// A task count as `--tasks` takes it: a number, or `auto` (a ladder raises its tasks
/// while the driver is what limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCount {
    N(usize),
    Auto,
}

impl std::str::FromStr for TaskCount {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(TaskCount::Auto);
        }
        s.parse().map(TaskCount::N).map_err(|_| {
            format!(
                "'{s}' is not a task count: give a number such as 4 (or auto, for oemputx ladder)"
            )
        })
    }
}

/// A yes/no value from the environment, where an empty variable (`OEMPUTX_NO_SAVE=`, as CI
/// templates leave one they do not set) means no, as if it were unset.
fn boolish_or_empty(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "no" | "n" | "off" | "f" => Ok(false),
        "1" | "true" | "yes" | "y" | "on" | "t" => Ok(true),
        other => Err(format!(
            "'{other}' is not yes or no: give 1 or 0 (or true/false, yes/no, on/off), or leave it empty"
        )),
    }
}
