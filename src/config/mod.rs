//! Profiles (`oemputx.toml`) and options, turned once into a validated [`RunConfig`].
//!
//! Later code never re-reads raw flags: everything a run needs, checked, is here.

mod build;
pub mod compare;
pub mod flow_command;
pub mod formats;
pub mod gate;
pub mod ladder;
pub mod merge;
pub mod options;
pub mod outputs;
pub mod profile;
pub mod pubsub;
pub mod shard;
pub mod sweep;
pub mod tools;

pub use options::{AccountingOptions, OutputOptions, RunOptions};
pub use profile::{Profile, profile_paths, read_profiles};

use crate::accounting::RatioMode;
use crate::accounting::selector::{GroupSpec, SelectorError};
use crate::accounting::snapshot::CpuSource;
use crate::msgfile::{Messages, MsgFileError};
use crate::transport::{Endpoint, EndpointError, MatchMode, QueueSetup, QueueType, ReplyQueue};
use std::path::PathBuf;
use std::time::Duration;

/// Request queue when neither the flag nor the profile names one, on a transport without a
/// name of its own (see `EndpointKind::default_request_queue`).
pub use crate::transport::endpoint::DEFAULT_REQUEST_QUEUE;

/// The most rounds a run makes (`--rounds`), and so the most a saved report may hold
/// (`report::saved::MAX_SAVED_ROUNDS`): what a reader of reports bounds before it computes
/// anything that grows with them.
pub const MAX_ROUNDS: usize = 1000;
/// Round trips when neither --count nor --duration is given.
pub const DEFAULT_COUNT: u64 = 1000;
/// AMQP 0-9-1 queue and virtual host names are short strings: at most 255 bytes.
const MAX_QUEUE_NAME: usize = 255;

/// A wrong option, profile or URL: the user's input, exit 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "--qmgr {name}: no profile of that name in {searched} (known profiles: {known}), and it cannot be an IBM MQ queue manager name (at most 48 characters of A-Z a-z 0-9 . _ / %). Give a URL such as amqp://guest:guest@127.0.0.1:5672/%2f, or add [profile.{name}] to oemputx.toml"
    )]
    UnknownProfile {
        name: String,
        searched: String,
        known: String,
    },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error("profile file {path}: {why}")]
    BadProfileFile { path: PathBuf, why: String },
    #[error("{flag}: {why}")]
    BadValue { flag: &'static str, why: String },
    /// An output a build without `feature` cannot write (`--export-html` without `html`).
    #[error("{flag} {}", crate::features::needs(.feature))]
    NotBuilt {
        flag: &'static str,
        feature: &'static str,
    },
    #[error(transparent)]
    MsgFile(#[from] MsgFileError),
    #[error(transparent)]
    Selector(#[from] SelectorError),
    #[error(transparent)]
    Host(#[from] crate::accounting::pcp::PcpError),
}

// The user's input (exit 2).
crate::usage_error!(ConfigError);

/// A usage error of `flag`, saying why.
pub fn bad(flag: &'static str, why: impl Into<String>) -> ConfigError {
    ConfigError::BadValue {
        flag,
        why: why.into(),
    }
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunLength {
    /// This many measured round trips in all.
    Count(u64),
    /// Until this much time has passed.
    Duration(Duration),
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Where to connect.
    pub endpoint: Endpoint,
    /// The profile's name when one was used.
    pub profile: Option<String>,
    /// Label for saved reports.
    pub label: String,
    /// What one vCPU-hour costs (`--price-per-vcpu-hour`): the groups' cost per million
    /// messages.
    pub price_per_vcpu_hour: Option<f64>,
    /// `--profile`: sample every CPU's stacks with perf over the measured window.
    pub sample_stacks: bool,
    /// The flow's input queue.
    pub request_queue: String,
    /// Check after the run who served the request queue (src/serving.rs): not on a queue
    /// oemputx made for flows it started (no one else knows its name).
    pub check_serving: bool,
    /// This run's place among the shards of a run driven from several hosts.
    pub shard: Option<shard::ShardPlan>,
    /// Open the measured window at this instant (after connecting and warming up).
    pub start_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Where replies come back.
    pub reply_queue: ReplyQueue,
    /// Clear a named reply queue before the run.
    pub clear_reply_queue: bool,
    /// Create missing queues.
    pub declare: bool,
    /// IBM MQ: MQPUT1 per request.
    pub put1: bool,
    /// IBM MQ: the model queue of temporary reply queues, when not the default.
    pub model_queue: Option<String>,
    /// `--confirm-window`: publisher confirms, at most this many requests unconfirmed.
    pub confirm_window: Option<u32>,
    /// `--replicas N`: the stored requests' copies in a cluster (NATS JetStream).
    pub replicas: Option<usize>,
    /// `--queue-type`: the kind of request queue (RabbitMQ), when asked.
    pub queue_type: Option<QueueType>,
    /// The request bodies.
    pub messages: Messages,
    /// Count or duration.
    pub length: RunLength,
    /// Parallel tasks, each with its own connection.
    pub tasks: usize,
    /// Measured windows, each with the full count or duration.
    pub rounds: usize,
    /// Size each round to last this long, from a probe of the rate.
    pub probe: Option<Duration>,
    /// An unmeasured phase this long at the run's --rate right before the first window, so
    /// that the window opens on a flow warmed at that rate (a ladder's steps): the warmup is
    /// sent as fast as it goes, which leaves a burst behind it. Its replies are collected
    /// before the window opens, and the window's schedule starts anew.
    pub settle: Option<Duration>,
    /// Puts per loop before the gets.
    pub msgs_per_loop: usize,
    /// Persistent messages.
    pub persistent: bool,
    /// Puts and gets under syncpoint.
    pub syncpoint: bool,
    /// Wait for each reply.
    pub wait: Duration,
    /// How long a task tries to connect again after its connection broke (zero: never).
    pub reconnect_for: Duration,
    /// Stop after this many timeouts.
    pub max_timeouts: Option<u64>,
    /// Reply matching.
    pub match_mode: MatchMode,
    /// Unmeasured messages before the window, in all.
    pub warmup: u64,
    /// Pacing, requests per second in all.
    pub rate: Option<f64>,
    /// No text report on stdout.
    pub quiet: bool,
    /// Process groups to account.
    pub groups: Vec<GroupSpec>,
    /// Said before the run when `--group` replaced the groups the profile or transport would
    /// have measured: people expect it to add.
    pub groups_note: Option<String>,
    /// Hosts (`--host`, a profile's `[profile.NAME.hosts]`) groups may be placed on.
    pub hosts: Vec<crate::accounting::pcp::PcpHost>,
    /// Where the reports go.
    pub outputs: RunOutputs,
    /// Progress bar and interval statistics.
    pub progress_bar: bool,
    pub stats_interval: Option<Duration>,
    /// Where process CPU comes from.
    pub cpu_source: CpuSource,
    /// Count syncs per message (`--no-syncs`: off).
    pub count_syncs: bool,
    /// Measured or fixed capture ratio.
    pub capture_ratio: RatioMode,
}

impl RunConfig {
    /// The queue and message settings every transport needs.
    pub(crate) fn queue_setup(&self) -> QueueSetup {
        QueueSetup {
            request_queue: self.request_queue.clone(),
            reply_queue: self.reply_queue.clone(),
            clear_reply_queue: self.clear_reply_queue,
            declare: self.declare,
            persistent: self.persistent,
            syncpoint: self.syncpoint,
            tasks: self.tasks,
            match_mode: self.match_mode,
            put1: self.put1,
            model_queue: self.model_queue.clone(),
            confirm_window: self.confirm_window,
            replicas: self.replicas,
            queue_type: self.queue_type,
            wait: self.wait,
            // The run's own flag is set by `measure` (QueueSetup::interrupted_by).
            interrupt: Default::default(),
        }
    }
}

/// Where a run's report goes: the files asked for by format (`-` is stdout), the reports
/// folder (unless --no-save), main's history it is appended to (`--save-baseline`), and
/// how delimited files are written.
#[derive(Debug, Clone, Default)]
pub struct RunOutputs {
    pub files: formats::Exports,
    pub delimiter: u8,
    pub decimal_comma: bool,
    /// The reports folder, unless --no-save.
    pub save_dir: Option<PathBuf>,
    /// The baseline history this run is appended to (read first, then written whole).
    pub save_baseline: Option<PathBuf>,
}

/// The smallest fixed capture ratio taken: below it the correction would multiply every
/// figure by more than 100 (a ratio of 1e-300 printed 300-digit totals); measured ratios
/// on real hosts lie between about 0.5 and 1.
pub const MIN_CAPTURE_RATIO: f64 = 0.01;

/// `measured`, or a fixed ratio in [0.01, 1].
pub(crate) fn parse_ratio(v: &str) -> Result<RatioMode, ConfigError> {
    if v.eq_ignore_ascii_case("measured") {
        return Ok(RatioMode::Measured);
    }
    match v.parse::<f64>() {
        Ok(r) if (MIN_CAPTURE_RATIO..=1.0).contains(&r) => Ok(RatioMode::Fixed(r)),
        _ => Err(bad(
            "--capture-ratio",
            format!(
                "'{v}' is neither 'measured' nor a ratio from {MIN_CAPTURE_RATIO} to 1 such as 0.9 (the share of the host's CPU the groups' processes account for)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_capture_ratio_is_a_share_from_a_hundredth_to_one() {
        assert_eq!(parse_ratio("0.9").ok(), Some(RatioMode::Fixed(0.9)));
        assert_eq!(parse_ratio("Measured").ok(), Some(RatioMode::Measured));
        for bad in ["1e-300", "0", "-0.5", "1.01", "NaN", "inf", "x"] {
            let e = parse_ratio(bad).expect_err(bad).to_string();
            assert!(e.contains("--capture-ratio") && e.contains("0.01"), "{e}");
        }
    }

    #[cfg(feature = "ibmmq")]
    #[test]
    fn a_queue_manager_by_name_accounts_the_queue_manager_broker_and_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("oemputx.toml");
        std::fs::write(&file, "[profile.RABBIT]\nurl = \"amqp://localhost\"\n").expect("write");
        let cfg = RunOptions {
            config: Some(file),
            ..RunOptions::on("QM1")
        }
        .build()
        .expect("valid");
        let Some(m) = cfg
            .endpoint
            .downcast::<crate::transport::ibmmq::url::IbmMqEndpoint>()
        else {
            panic!("not ibmmq: {:?}", cfg.endpoint)
        };
        assert_eq!(m.qmgr, "QM1");
        assert!(m.note.as_deref().is_some_and(|n| n.contains("RABBIT")));
        let names: Vec<&str> = cfg.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["QMGR", "BROKER", "DB"]);
    }
}
