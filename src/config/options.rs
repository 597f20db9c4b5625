//! What a user asks of a run, before anything is checked: plain data with the command
//! line's defaults, made by the command line ([`crate::cli`]), by the commands that run
//! several configurations (sweep, the gate, compare, matrix) and by tests — never by
//! writing a command line. [`RunOptions::build`](super::RunOptions::build) checks it into a
//! [`RunConfig`](super::RunConfig).

use crate::accounting::snapshot::CpuSource;
use crate::transport::{MatchMode, QueueType};
use std::path::PathBuf;
use std::time::Duration;

/// By default a broken connection is tried again for --wait and this much more: long enough
/// for a replies' wait to pass and for a cluster to move a node's work to another.
pub const RECONNECT_BEYOND_WAIT: Duration = Duration::from_secs(5);

/// How CPU is accounted, as asked: the groups, the hosts they may be on, where process CPU
/// comes from and the capture ratio. Shared by every command that measures.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountingOptions {
    /// `NAME=SEL,...` or `NAME@HOST=SEL,...`, as `--group` takes them.
    pub groups: Vec<String>,
    /// `NAME=pcp://HOST[:PORT]`, as `--host` takes them.
    pub hosts: Vec<String>,
    /// No groups at all (only the driver's own CPU).
    pub no_groups: bool,
    pub cpu_source: CpuSource,
    /// Count syncs per message (syscall tracepoints); `--no-syncs` turns it off.
    pub count_syncs: bool,
    /// `measured`, or a fixed ratio such as `0.9`.
    pub capture_ratio: String,
}

impl Default for AccountingOptions {
    fn default() -> Self {
        AccountingOptions {
            groups: Vec::new(),
            hosts: Vec::new(),
            no_groups: false,
            cpu_source: CpuSource::Exact,
            count_syncs: true,
            capture_ratio: "measured".into(),
        }
    }
}

/// Where a command's reports go, as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputOptions {
    /// The `--export-*` outputs asked for, by format (the baseline and the reports folder
    /// apart): the one list of a run's output files the checks go through.
    pub exports: super::formats::Exports,
    /// Where to write the report as the gate's baseline.
    pub save_baseline: Option<PathBuf>,
    /// CSV field delimiter.
    pub delimiter: char,
    pub decimal_comma: bool,
    /// Do not save under the reports folder.
    pub no_save: bool,
    pub reports_dir: PathBuf,
    /// No text report on stdout.
    pub quiet: bool,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            exports: Default::default(),
            save_baseline: None,
            delimiter: ',',
            decimal_comma: false,
            no_save: false,
            reports_dir: PathBuf::from("reports"),
            quiet: false,
        }
    }
}

/// The options of a put/get run, as asked. `Default` is the command line's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// Nothing for the embedded queue manager, a URL, a profile name, or an IBM MQ queue
    /// manager name.
    pub qmgr: Option<String>,
    /// The profile file instead of the usual places.
    pub config: Option<PathBuf>,
    pub request_queue: Option<String>,
    pub reply_queue: Option<String>,
    /// Do not clear a named reply queue before the run.
    pub no_clear: bool,
    pub declare: bool,
    pub put1: bool,
    pub model_queue: Option<String>,
    /// Publisher confirms (AMQP 0-9-1): at most N requests unconfirmed; None: no confirms.
    pub confirm_window: Option<u32>,
    /// `--replicas N` (NATS JetStream streams --declare creates).
    pub replicas: Option<usize>,
    /// `--queue-type` (the RabbitMQ request queue --declare creates).
    pub queue_type: Option<QueueType>,
    pub msgfile: Vec<PathBuf>,
    /// Each line of the message files is one message.
    pub lines: bool,
    /// A generated body of this many bytes instead of a file.
    pub msg_size: Option<usize>,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    pub rounds: usize,
    /// Size each round to last about this long, from a probe of the rate.
    pub probe: Option<Duration>,
    pub tasks: usize,
    pub msgs_per_loop: usize,
    pub persistent: bool,
    pub syncpoint: bool,
    pub wait: Duration,
    /// How long a task tries to connect again after its connection broke (None: --wait
    /// and [`RECONNECT_BEYOND_WAIT`] more; zero: not at all).
    pub reconnect_for: Option<Duration>,
    pub max_timeouts: Option<u64>,
    pub match_mode: MatchMode,
    pub warmup: u64,
    /// Requests per second in all.
    pub rate: Option<f64>,
    pub accounting: AccountingOptions,
    pub outputs: OutputOptions,
    pub label: Option<String>,
    /// What one vCPU-hour costs, for the cost per million messages.
    pub price_per_vcpu_hour: Option<f64>,
    /// `--profile`: sample the stacks of every CPU over the measured window.
    pub sample_stacks: bool,
    pub stats_interval: Option<Duration>,
    pub no_progress: bool,
    /// The bar even under --quiet (still only on a terminal).
    pub progress: bool,
    /// One shard of a run driven from several hosts.
    pub shard: super::shard::ShardOptions,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            qmgr: None,
            config: None,
            request_queue: None,
            reply_queue: None,
            no_clear: false,
            declare: false,
            put1: false,
            model_queue: None,
            confirm_window: None,
            replicas: None,
            queue_type: None,
            msgfile: Vec::new(),
            lines: false,
            msg_size: None,
            count: None,
            duration: None,
            rounds: 1,
            probe: None,
            tasks: 1,
            msgs_per_loop: 1,
            persistent: false,
            syncpoint: false,
            wait: Duration::from_secs(60),
            reconnect_for: None,
            max_timeouts: None,
            match_mode: MatchMode::Correl,
            warmup: 0,
            rate: None,
            accounting: AccountingOptions::default(),
            outputs: OutputOptions::default(),
            label: None,
            price_per_vcpu_hour: None,
            sample_stacks: false,
            stats_interval: None,
            no_progress: false,
            progress: false,
            shard: super::shard::ShardOptions::default(),
        }
    }
}

impl RunOptions {
    /// A run against `qmgr` (a URL, a profile or a queue manager name).
    pub fn on(qmgr: &str) -> RunOptions {
        RunOptions {
            qmgr: Some(qmgr.to_string()),
            ..RunOptions::default()
        }
    }

    /// For a measurement inside another command: nothing printed, saved or shown as
    /// progress (that command reports).
    /// Refuse outputs given among the run options of a command whose rounds write none
    /// (a live compare, the A/B and instruction gates): `silent` would drop them without a
    /// word. `who` is the command, `writes` what its own `--export-*` write.
    pub(crate) fn refuse_round_outputs(
        &self,
        who: &str,
        writes: &str,
    ) -> Result<(), super::ConfigError> {
        let o = &self.outputs;
        let exports = o.exports.clone();
        let first = exports.given().map(|(f, _)| f.flag()).next();
        let baseline = o.save_baseline.as_ref().map(|_| "--save-baseline");
        match first.or(baseline) {
            None => Ok(()),
            Some(flag) => Err(super::bad(
                flag,
                format!(
                    "after -- it is an option of each round, and {who}'s rounds write no files: give {flag} before --, where it writes {writes}"
                ),
            )),
        }
    }

    /// One round of a command that runs the rounds itself (a live compare, the gates): no
    /// outputs of its own, one round, nothing printed or saved. `who` and `writes` as for
    /// [`Self::refuse_round_outputs`]; `sets` says how the command bounds its rounds,
    /// `whose` which run options these are.
    pub(crate) fn one_round(
        self,
        (who, writes): (&str, &str),
        sets: &str,
        whose: &str,
    ) -> Result<super::RunConfig, super::ConfigError> {
        self.refuse_round_outputs(who, writes)?;
        if self.rounds != 1 {
            return Err(super::bad(
                "--rounds",
                format!("{sets}: leave --rounds out of {whose}"),
            ));
        }
        self.silent().build()
    }

    pub fn silent(mut self) -> RunOptions {
        self.outputs = OutputOptions {
            no_save: true,
            quiet: true,
            ..OutputOptions::default()
        };
        self.no_progress = true;
        self.progress = false;
        self.stats_interval = None;
        self
    }
}
