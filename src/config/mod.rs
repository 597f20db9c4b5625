//! Profiles (`oemputx.toml`) and options, turned once into a validated [`Config`].
//!
//! Later code never re-reads raw flags: everything a run needs, checked, is here.

use crate::accounting::RatioMode;
use crate::accounting::selector::{self, GroupSpec, SelectorError};
use crate::accounting::snapshot::CpuSource;
use crate::cli::RunArgs;
use crate::msgfile::{Messages, MsgFileError};
use crate::transport::ibmmq::url::{IbmMqEndpoint, is_mq_name};
use crate::transport::{Endpoint, EndpointError, MatchMode, QueueSetup, ReplyQueue, parse_url};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Request queue when neither the flag nor the profile names one.
pub const DEFAULT_REQUEST_QUEUE: &str = "MQSI.IN";
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
    #[error(transparent)]
    MsgFile(#[from] MsgFileError),
    #[error(transparent)]
    Selector(#[from] SelectorError),
}

fn bad(flag: &'static str, why: impl Into<String>) -> ConfigError {
    ConfigError::BadValue {
        flag,
        why: why.into(),
    }
}

/// One `[profile.NAME]` table of oemputx.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Transport URL (`embedded:`, `amqp://…`).
    pub url: String,
    pub request_queue: Option<String>,
    pub reply_queue: Option<String>,
    /// Label for saved reports; defaults to the profile name.
    pub label: Option<String>,
    /// Default process groups: NAME = [selectors].
    pub groups: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    profile: BTreeMap<String, Profile>,
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
pub struct Config {
    /// Where to connect.
    pub endpoint: Endpoint,
    /// The profile's name when one was used.
    pub profile: Option<String>,
    /// Label for saved reports.
    pub label: String,
    /// The flow's input queue.
    pub request_queue: String,
    /// Where replies come back.
    pub reply_queue: ReplyQueue,
    /// Clear a named reply queue before the run.
    pub clear_reply_queue: bool,
    /// Create missing queues.
    pub declare: bool,
    /// IBM MQ: MQPUT1 per request.
    pub put1: bool,
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
    /// Puts per loop before the gets.
    pub msgs_per_loop: usize,
    /// Persistent messages.
    pub persistent: bool,
    /// Puts and gets under syncpoint.
    pub syncpoint: bool,
    /// Wait for each reply.
    pub wait: Duration,
    /// Stop after this many timeouts.
    pub max_timeouts: Option<u64>,
    /// Reply matching.
    pub match_mode: MatchMode,
    /// Unmeasured messages before the window, in all.
    pub warmup: u64,
    /// Pacing, requests per second in all.
    pub rate: Option<f64>,
    /// JSON export path (`-` = stdout).
    pub export_json: Option<PathBuf>,
    /// Where to write the report as the gate's baseline.
    pub save_baseline: Option<PathBuf>,
    /// No text report on stdout.
    pub quiet: bool,
    /// Process groups to account.
    pub groups: Vec<GroupSpec>,
    /// Where the reports go.
    pub exports: Exports,
    /// Progress bar and interval statistics.
    pub progress_bar: bool,
    pub stats_interval: Option<Duration>,
    /// Where process CPU comes from.
    pub cpu_source: CpuSource,
    /// Measured or fixed capture ratio.
    pub capture_ratio: RatioMode,
}

impl Config {
    /// The queue and message settings every transport needs.
    pub fn queue_setup(&self) -> QueueSetup {
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
        }
    }
}

/// The profile files looked at, in order: an explicit --config, else ./oemputx.toml and
/// $XDG_CONFIG_HOME/oemputx/oemputx.toml (~/.config when XDG_CONFIG_HOME is unset).
pub fn profile_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit {
        return vec![p.to_path_buf()];
    }
    let mut paths = vec![PathBuf::from("oemputx.toml")];
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(dir) = xdg {
        paths.push(dir.join("oemputx").join("oemputx.toml"));
    }
    paths
}

/// Read the profiles of one file; a missing file has none.
pub fn read_profiles(path: &Path) -> Result<BTreeMap<String, Profile>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => {
            return Err(ConfigError::BadProfileFile {
                path: path.into(),
                why: format!("cannot read it: {e}"),
            });
        }
    };
    let file: ProfileFile = toml::from_str(&text).map_err(|e| ConfigError::BadProfileFile {
        path: path.into(),
        why: format!("{e}; see the oemputx.toml shipped with oemputx for the format"),
    })?;
    Ok(file.profile)
}

/// Find a profile by name in the profile files, first file first.
fn find_profile(name: &str, paths: &[PathBuf], explicit: bool) -> Result<Profile, ConfigError> {
    let mut known = Vec::new();
    for path in paths {
        if explicit && !path.exists() {
            return Err(ConfigError::BadProfileFile {
                path: path.clone(),
                why: "no such file (from --config)".into(),
            });
        }
        let mut profiles = read_profiles(path)?;
        if let Some(p) = profiles.remove(name) {
            return Ok(p);
        }
        known.extend(profiles.into_keys());
    }
    Err(ConfigError::UnknownProfile {
        name: name.into(),
        searched: paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        known: if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        },
    })
}

fn check_queue_name(flag: &'static str, name: &str) -> Result<(), ConfigError> {
    if name.is_empty() {
        return Err(bad(flag, "a queue name cannot be empty"));
    }
    if name.len() > MAX_QUEUE_NAME {
        return Err(bad(
            flag,
            format!(
                "queue name is {} bytes; AMQP allows at most {MAX_QUEUE_NAME}",
                name.len()
            ),
        ));
    }
    Ok(())
}

impl Config {
    /// Validate the options of a run, reading the profile and the message files.
    pub fn from_args(args: &RunArgs) -> Result<Config, ConfigError> {
        let (endpoint, profile_name, profile) = match args.qmgr.as_deref() {
            None | Some("") => (Endpoint::Embedded, None, None),
            Some(q) if q.contains("://") || q.starts_with("embedded") => {
                (parse_url(q)?, None, None)
            }
            Some(name) => {
                let paths = profile_paths(args.config.as_deref());
                match find_profile(name, &paths, args.config.is_some()) {
                    Ok(p) => (parse_url(&p.url)?, Some(name.to_string()), Some(p)),
                    // A name that is no profile is an IBM MQ queue manager, as with OEMPUTX.
                    Err(ConfigError::UnknownProfile {
                        searched, known, ..
                    }) if is_mq_name(name) => (
                        Endpoint::IbmMq(IbmMqEndpoint {
                            qmgr: name.to_string(),
                            user: std::env::var("OEMPUTX_MQ_USER").ok(),
                            note: Some(format!(
                                "--qmgr {name} is no profile in {searched} (known profiles: {known}), so it was taken as an IBM MQ queue manager"
                            )),
                            ..Default::default()
                        }),
                        None,
                        None,
                    ),
                    Err(e) => return Err(e),
                }
            }
        };
        let is_mq = matches!(endpoint, Endpoint::IbmMq(_));
        if args.put1 && !is_mq {
            return Err(bad(
                "--put1",
                "MQPUT1 is an IBM MQ call: use it with an IBM MQ queue manager",
            ));
        }
        if args.declare && is_mq {
            return Err(bad(
                "--declare",
                "oemputx does not define IBM MQ queues: define them with runmqsc (DEFINE QLOCAL(MQSI.IN)) and leave --declare out",
            ));
        }
        let profile = profile.as_ref();
        let request_queue = args
            .request_queue
            .clone()
            .or_else(|| profile.and_then(|p| p.request_queue.clone()))
            .unwrap_or_else(|| DEFAULT_REQUEST_QUEUE.to_string());
        check_queue_name("--request-queue", &request_queue)?;
        let reply_queue = match args
            .reply_queue
            .clone()
            .or_else(|| profile.and_then(|p| p.reply_queue.clone()))
        {
            Some(q) => {
                check_queue_name("--reply-queue", &q)?;
                if q == request_queue {
                    return Err(bad(
                        "--reply-queue",
                        "must differ from the request queue, or the driver would read its own requests",
                    ));
                }
                ReplyQueue::Named(q)
            }
            None => ReplyQueue::Temporary,
        };

        let length = match (args.count, args.duration) {
            (Some(0), _) => return Err(bad("--count", "must be at least 1")),
            (Some(n), _) => RunLength::Count(n),
            (None, Some(d)) if d.as_secs_f64() <= 0.0 => {
                return Err(bad("--duration", "must be longer than zero, e.g. 30s"));
            }
            (None, Some(d)) => RunLength::Duration(d.into()),
            (None, None) => RunLength::Count(DEFAULT_COUNT),
        };
        let tasks = match args.tasks.as_slice() {
            [t] => *t,
            _ => {
                return Err(bad(
                    "--tasks",
                    "takes one number for a run; a list such as 1,2,3,4 is for `oemputx sweep`",
                ));
            }
        };
        if tasks == 0 {
            return Err(bad("--tasks", "must be at least 1"));
        }
        if let RunLength::Count(n) = length
            && (tasks as u64) > n
        {
            return Err(bad(
                "--tasks",
                format!(
                    "{tasks} tasks for {n} messages leaves tasks idle: use at most --tasks {n}, or raise --count"
                ),
            ));
        }
        if args.rounds == 0 {
            return Err(bad("--rounds", "must be at least 1"));
        }
        if args.msgs_per_loop == 0 {
            return Err(bad("--msgs-per-loop", "must be at least 1"));
        }
        let wait: Duration = args.wait.into();
        if wait.is_zero() {
            return Err(bad("--wait", "must be longer than zero, e.g. 60s"));
        }
        if let Some(r) = args.rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(bad(
                "--rate",
                "must be a positive number of requests per second",
            ));
        }
        if args.max_timeouts == Some(0) {
            return Err(bad(
                "--max-timeouts",
                "must be at least 1 (leave it out for no limit)",
            ));
        }

        let messages = match (args.msg_size, args.msgfile.is_empty()) {
            (Some(n), _) => Messages::generated(n)?,
            (None, false) => Messages::from_files(&args.msgfile, args.lines)?,
            (None, true) => Messages::default_request()?,
        };

        let groups = if args.no_groups {
            Vec::new()
        } else if !args.groups.is_empty() {
            selector::parse_groups(args.groups.iter().map(String::as_str))?
        } else if let Some(g) = profile.and_then(|p| p.groups.as_ref()) {
            let specs: Vec<String> = g
                .iter()
                .map(|(name, sels)| format!("{name}={}", sels.join(",")))
                .collect();
            selector::parse_groups(specs.iter().map(String::as_str))?
        } else if endpoint == Endpoint::Embedded {
            // The embedded queue manager's flow runs as a thread of oemputx itself.
            selector::parse_groups(["EMBEDDED=thread:^oemputx-flow$"])?
        } else if is_mq {
            // OEMPUTX's address spaces: the queue manager, the broker (ACE), the database.
            selector::parse_groups(["QMGR=@ibmmq", "BROKER=@ace", "DB=@db2"])?
        } else {
            Vec::new()
        };
        let capture_ratio = parse_ratio(&args.capture_ratio)?;

        if !args.delimiter.is_ascii() || args.delimiter == '"' || args.delimiter == '\n' {
            return Err(bad(
                "--delimiter",
                "must be one ASCII character other than a quote or newline, e.g. ';'",
            ));
        }
        if args.decimal_comma && args.export_csv.is_some() && args.delimiter == ',' {
            return Err(bad(
                "--decimal-comma",
                "with CSV needs another delimiter: add --delimiter ';'",
            ));
        }
        let exports = Exports {
            tsv: args.export_tsv.clone(),
            csv: args.export_csv.clone(),
            markdown: args.export_markdown.clone(),
            delimiter: args.delimiter as u8,
            decimal_comma: args.decimal_comma,
            save_dir: (!args.no_save).then(|| args.reports_dir.clone()),
        };
        let label = args
            .label
            .clone()
            .or_else(|| profile.and_then(|p| p.label.clone()))
            .or_else(|| profile_name.clone())
            .unwrap_or_else(|| endpoint.transport().to_string());
        if label.is_empty() || label.contains(['/', '\\', '\0']) {
            return Err(bad(
                "--label",
                "must be non-empty and contain no slashes: it names files in the reports folder",
            ));
        }
        Ok(Config {
            endpoint,
            profile: profile_name,
            label,
            request_queue,
            reply_queue,
            clear_reply_queue: !args.no_clear,
            declare: args.declare,
            put1: args.put1,
            messages,
            length,
            tasks,
            rounds: args.rounds,
            probe: args.probe.map(Duration::from).filter(|d| !d.is_zero()),
            msgs_per_loop: args.msgs_per_loop,
            persistent: args.persistent,
            syncpoint: args.syncpoint,
            wait,
            max_timeouts: args.max_timeouts,
            match_mode: args.match_mode,
            warmup: args.warmup,
            rate: args.rate,
            export_json: args.export_json.clone(),
            save_baseline: args.save_baseline.clone(),
            quiet: args.quiet,
            groups,
            exports,
            progress_bar: !args.no_progress && !args.quiet,
            stats_interval: args
                .stats_interval
                .map(Duration::from)
                .filter(|d| !d.is_zero()),
            cpu_source: args.cpu_source,
            capture_ratio,
        })
    }
}

/// Report destinations and formats.
#[derive(Debug, Clone)]
pub struct Exports {
    pub tsv: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub delimiter: u8,
    pub decimal_comma: bool,
    /// The reports folder, unless --no-save.
    pub save_dir: Option<PathBuf>,
}

/// `measured`, or a fixed ratio in (0, 1].
pub fn parse_ratio(v: &str) -> Result<RatioMode, ConfigError> {
    if v.eq_ignore_ascii_case("measured") {
        return Ok(RatioMode::Measured);
    }
    match v.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(RatioMode::Fixed(r)),
        _ => Err(bad(
            "--capture-ratio",
            format!("'{v}' is neither 'measured' nor a ratio in (0, 1] such as 0.9"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_manager_by_name_accounts_the_queue_manager_broker_and_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("oemputx.toml");
        std::fs::write(&file, "[profile.RABBIT]\nurl = \"amqp://localhost\"\n").expect("write");
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from([
            "oemputx",
            "--config",
            file.to_str().expect("utf-8 path"),
            "--qmgr",
            "QM1",
        ])
        .expect("parse");
        let cfg = Config::from_args(&cli.run).expect("valid");
        let Endpoint::IbmMq(m) = &cfg.endpoint else {
            panic!("not ibmmq: {:?}", cfg.endpoint)
        };
        assert_eq!(m.qmgr, "QM1");
        assert!(m.note.as_deref().is_some_and(|n| n.contains("RABBIT")));
        let names: Vec<&str> = cfg.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["QMGR", "BROKER", "DB"]);
    }
}
