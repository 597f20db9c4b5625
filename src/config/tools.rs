//! The options of the smaller commands, checked: `oemputx matrix` (its cells are pub/sub
//! runs), `cpu` and `account`.

use super::formats::Exports;
use super::options::AccountingOptions;
use super::pubsub::{PubsubConfig, PubsubOptions};
use super::{ConfigError, bad, parse_ratio};
use crate::accounting::RatioMode;
use crate::accounting::pcp::PcpHost;
use crate::accounting::selector::{self, GroupSpec, PRESETS};
use crate::accounting::snapshot::CpuSource;
use crate::pubsub::{Ack, SelectBy};
use std::path::PathBuf;
use std::time::Duration;

/// What `oemputx matrix` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixOptions {
    pub qmgr: String,
    pub count: u64,
    /// Times every cell is measured, in a balanced order each round.
    pub rounds: usize,
    pub topic: String,
    pub declare: bool,
    /// `topic` or `queue`.
    pub pattern: String,
    pub accounting: AccountingOptions,
    /// The outputs asked for (the matrix's formats: JSON, TSV, SVG, HTML).
    pub exports: Exports,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        MatrixOptions {
            qmgr: String::new(),
            count: 500,
            rounds: 1,
            topic: "matrix".into(),
            declare: false,
            pattern: "topic".into(),
            accounting: AccountingOptions::default(),
            exports: Exports::default(),
        }
    }
}

/// The matrix, checked: the options every cell shares.
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    pub options: MatrixOptions,
    /// Receivers compete for one queue (`--pattern queue`).
    pub compete: bool,
}

impl MatrixOptions {
    pub fn build(&self) -> Result<MatrixConfig, ConfigError> {
        super::outputs::check(&self.exports.by_flag(), None, &[])?;
        let compete = match self.pattern.as_str() {
            "topic" => false,
            "queue" => true,
            other => {
                return Err(bad(
                    "--pattern",
                    format!(
                        "'{other}': `topic` (every receiver gets every message) or `queue` (receivers compete, each message to one)"
                    ),
                ));
            }
        };
        let config = MatrixConfig {
            options: self.clone(),
            compete,
        };
        // Every cell's settings are checked now, before the first is measured.
        for (persistent, size, receivers) in config.cells() {
            config.cell(persistent, size, receivers)?;
        }
        Ok(config)
    }
}

impl MatrixConfig {
    /// The CJMQ table's cells: (persistent, message size, receivers), in the order run.
    pub fn cells(&self) -> Vec<(bool, usize, usize)> {
        let mut out = Vec::new();
        for persistent in [false, true] {
            for size in [128, 1024] {
                for receivers in [1, 5] {
                    out.push((persistent, size, receivers));
                }
            }
        }
        out
    }

    /// One cell as a pub/sub run: one sender, one symbol every receiver selects.
    pub fn cell(
        &self,
        persistent: bool,
        msg_size: usize,
        receivers: usize,
    ) -> Result<PubsubConfig, ConfigError> {
        let m = &self.options;
        PubsubOptions {
            qmgr: m.qmgr.clone(),
            topic: m.topic.clone(),
            declare: m.declare,
            publishers: 1,
            subscribers: receivers,
            symbols: 1,
            select: 1,
            count: m.count,
            msg_size,
            persistent,
            ack: if persistent { Ack::Auto } else { Ack::None },
            select_by: SelectBy::Topic,
            accounting: m.accounting.clone(),
            no_save: true,
            compete: self.compete,
            ..PubsubOptions::default()
        }
        .build()
    }
}

/// What `oemputx cpu` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuOptions {
    pub groups: Vec<String>,
    pub hosts: Vec<String>,
    pub interval: Option<Duration>,
    pub count: Option<u64>,
    pub tsv: bool,
    pub openmetrics: Option<PathBuf>,
    /// --from and --until, as given.
    pub window: Option<(String, String)>,
    pub window_json: Option<PathBuf>,
    pub cpu_source: CpuSource,
}

/// `oemputx cpu`, checked.
#[derive(Debug, Clone)]
pub struct CpuConfig {
    /// The groups, or one per preset when none were named.
    pub groups: Vec<GroupSpec>,
    pub hosts: Vec<PcpHost>,
    pub interval: Option<Duration>,
    pub count: Option<u64>,
    pub tsv: bool,
    /// Rewritten after every interval.
    pub openmetrics: Option<PathBuf>,
    /// One window's edges (--from, --until), and where its JSON goes.
    pub window: Option<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)>,
    pub window_json: Option<PathBuf>,
    pub cpu_source: CpuSource,
}

impl CpuOptions {
    pub fn build(&self) -> Result<CpuConfig, ConfigError> {
        if self.interval.is_some_and(|i| i.is_zero()) {
            return Err(bad("--interval", "must be longer than zero, e.g. 1s"));
        }
        // Each of cpu's two outputs belongs to one of its modes: the watch rewrites the
        // OpenMetrics file every interval, the window writes its JSON once.
        if self.openmetrics.is_some() && self.interval.is_none() {
            return Err(bad(
                "--export-openmetrics",
                "is rewritten after every --interval: give --interval, e.g. --interval 10s",
            ));
        }
        if self.window_json.is_some() && self.window.is_none() {
            return Err(bad(
                "--export-json",
                "writes one measured window: give --from and --until, e.g. --from +0s --until +60s",
            ));
        }
        if self
            .openmetrics
            .as_deref()
            .is_some_and(|p| p.as_os_str() == "-" || crate::files::is_fifo(p))
        {
            return Err(bad(
                "--export-openmetrics",
                "is rewritten after every interval, which stdout and a FIFO cannot be: give a regular file (node_exporter's textfile collector reads one)",
            ));
        }
        super::outputs::check(
            &[
                ("--export-openmetrics", self.openmetrics.as_deref()),
                ("--export-json", self.window_json.as_deref()),
            ],
            None,
            &[],
        )?;
        let now = chrono::Utc::now();
        let window = match &self.window {
            Some((from, until)) => {
                let from = super::shard::instant("--from", from, now)?;
                let until = super::shard::instant("--until", until, now)?;
                if until <= from {
                    return Err(bad("--until", "must come after --from"));
                }
                // The counters are read at the window's edges as they pass: a window that
                // began in the past cannot be measured, and measuring "now" instead would
                // pass for it (a second of slack for `--from "$(date ...)"` in scripts).
                if now - from > chrono::Duration::seconds(1) {
                    return Err(bad(
                        "--from",
                        format!(
                            "{} is in the past (it is now {}): oemputx cpu reads the counters as the window's edges pass, so give a --from still to come, e.g. +5s",
                            from.to_rfc3339(),
                            now.to_rfc3339()
                        ),
                    ));
                }
                Some((from, until))
            }
            None => None,
        };
        Ok(CpuConfig {
            groups: groups_or_presets(&self.groups)?,
            hosts: crate::accounting::pcp::parse_hosts(&self.hosts, None)?,
            interval: self.interval,
            count: self.count,
            tsv: self.tsv,
            openmetrics: self.openmetrics.clone(),
            window,
            window_json: self.window_json.clone(),
            cpu_source: self.cpu_source,
        })
    }
}

/// The groups named, or one group per preset.
pub(crate) fn groups_or_presets(specs: &[String]) -> Result<Vec<GroupSpec>, ConfigError> {
    if specs.is_empty() {
        let all: Vec<String> = PRESETS.iter().map(|(n, _)| format!("{n}=@{n}")).collect();
        return Ok(selector::parse_groups(all.iter().map(String::as_str))?);
    }
    Ok(selector::parse_groups(specs.iter().map(String::as_str))?)
}

/// What `oemputx account` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountOptions {
    pub messages: u64,
    pub accounting: AccountingOptions,
    /// The outputs asked for (JSON).
    pub exports: Exports,
    /// The load driver and its arguments.
    pub command: Vec<String>,
}

/// `oemputx account`, checked.
#[derive(Debug, Clone)]
pub struct AccountConfig {
    pub messages: u64,
    pub groups: Vec<GroupSpec>,
    pub hosts: Vec<PcpHost>,
    pub cpu_source: CpuSource,
    /// Count syncs per message (`--no-syncs`: off).
    pub count_syncs: bool,
    pub ratio: RatioMode,
    pub exports: Exports,
    pub program: String,
    pub args: Vec<String>,
}

impl AccountOptions {
    pub fn build(&self) -> Result<AccountConfig, ConfigError> {
        if self.messages == 0 {
            return Err(bad("--messages", "must be at least 1"));
        }
        if self.accounting.groups.is_empty() {
            return Err(bad(
                "--group",
                "name at least one group to account, e.g. --group QMGR=@rabbitmq",
            ));
        }
        let (program, args) = self.command.split_first().ok_or_else(|| {
            bad(
                "account",
                "give the command to run after --, e.g. oemputx account --messages 1000 --group Q=@rabbitmq -- perf-test ...",
            )
        })?;
        super::outputs::check(&self.exports.by_flag(), None, &[])?;
        Ok(AccountConfig {
            messages: self.messages,
            groups: selector::parse_groups(self.accounting.groups.iter().map(String::as_str))?,
            hosts: crate::accounting::pcp::parse_hosts(&self.accounting.hosts, None)?,
            cpu_source: self.accounting.cpu_source,
            count_syncs: self.accounting.count_syncs,
            ratio: parse_ratio(&self.accounting.capture_ratio)?,
            exports: self.exports.clone(),
            program: program.clone(),
            args: args.to_vec(),
        })
    }
}
