//! Profiles (`oemputx.toml`) and options, turned once into a validated [`Config`].
//!
//! Later code never re-reads raw flags: everything a run needs, checked, is here.

use crate::accounting::RatioMode;
use crate::accounting::selector::{self, GroupSpec, SelectorError};
use crate::accounting::snapshot::CpuSource;
use crate::cli::{MatchMode, RunArgs};
use crate::msgfile::{Messages, MsgFileError};
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
    #[error("--qmgr {url}: {why}")]
    BadUrl { url: String, why: String },
    #[error(
        "--qmgr {url}: the {scheme}:// transport is not yet supported; use embedded:, amqp://, amqps:// or ibmmq://"
    )]
    NotYet { url: String, scheme: String },
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

/// Where a run connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// The in-process queue manager with its built-in responder.
    Embedded,
    /// An AMQP 0-9-1 broker (RabbitMQ).
    Amqp(AmqpEndpoint),
    /// An IBM MQ queue manager, through the MQI.
    IbmMq(IbmMqEndpoint),
}

impl Endpoint {
    /// The transport's name in reports.
    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Embedded => "embedded",
            Endpoint::Amqp(_) => "amqp",
            Endpoint::IbmMq(_) => "ibmmq",
        }
    }

    /// A description safe to print: passwords are replaced by `***`.
    pub fn redacted(&self) -> String {
        match self {
            Endpoint::Embedded => "embedded: (in-process queue manager)".into(),
            Endpoint::Amqp(a) => a.redacted(),
            Endpoint::IbmMq(m) => m.redacted(),
        }
    }
}

/// The parts of an `amqp://` or `amqps://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpEndpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub vhost: String,
    /// Set for `amqps://`.
    pub tls: Option<TlsOptions>,
}

/// TLS settings of an `amqps://` URL (RabbitMQ's query parameters `cacertfile`, `certfile`,
/// `keyfile`, `server_name_indication`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// CA certificate (PEM) to trust; the built-in web roots when absent.
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Name the server's certificate must carry; the host by default.
    pub server_name: String,
}

impl std::fmt::Debug for AmqpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl AmqpEndpoint {
    /// `amqp://user:***@host:port/vhost`: the password never leaves this struct.
    pub fn redacted(&self) -> String {
        let vhost =
            percent_encoding::utf8_percent_encode(&self.vhost, percent_encoding::NON_ALPHANUMERIC);
        let scheme = if self.tls.is_some() { "amqps" } else { "amqp" };
        format!(
            "{scheme}://{}:***@{}:{}/{}",
            self.user, self.host, self.port, vhost
        )
    }
}

impl AmqpEndpoint {
    /// The full URL, password included, for handing to a child process (the flows `sweep`
    /// starts); never for printing.
    pub fn url_with_password(&self) -> String {
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode as enc};
        let scheme = if self.tls.is_some() { "amqps" } else { "amqp" };
        let mut url = format!(
            "{scheme}://{}:{}@{}:{}/{}",
            enc(&self.user, NON_ALPHANUMERIC),
            enc(&self.password, NON_ALPHANUMERIC),
            self.host,
            self.port,
            enc(&self.vhost, NON_ALPHANUMERIC)
        );
        if let Some(tls) = &self.tls {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
            for (k, v) in [
                ("cacertfile", path(&tls.ca_file)),
                ("certfile", path(&tls.cert_file)),
                ("keyfile", path(&tls.key_file)),
                ("server_name_indication", Some(tls.server_name.clone())),
            ] {
                if let Some(v) = v {
                    q.append_pair(k, &v);
                }
            }
            url.push('?');
            url.push_str(&q.finish());
        }
        url
    }
}

/// An IBM MQ queue manager: by name (MQ picks the way: MQSERVER, a CCDT, or bindings) or by
/// `ibmmq://[user@]QM1?conn=host(1414)&channel=DEV.APP.SVRCONN[&cipher=…&keyrepo=…]`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct IbmMqEndpoint {
    /// Queue manager name; empty for the default queue manager.
    pub qmgr: String,
    /// Client channel and connection name, when the URL gives them.
    pub channel: Option<(String, String)>,
    /// MQCSP user; the password comes from the URL (discouraged), OEMPUTX_MQ_PASSWORD or a
    /// prompt.
    pub user: Option<String>,
    pub password: Option<String>,
    /// TLS: (cipher spec, key repository).
    pub tls: Option<(String, String)>,
    /// Why a bare name was taken for a queue manager (no profile of that name), for errors.
    pub note: Option<String>,
}

impl std::fmt::Debug for IbmMqEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl IbmMqEndpoint {
    /// The endpoint as a URL with the password replaced by `***`, and how MQ will connect.
    pub fn redacted(&self) -> String {
        let user = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (Some(u), None) => format!("{u}@"),
            _ => String::new(),
        };
        let mut query = Vec::new();
        if let Some((channel, conn)) = &self.channel {
            query.push(format!("conn={conn}&channel={channel}"));
        }
        if let Some((cipher, repo)) = &self.tls {
            query.push(format!("cipher={cipher}&keyrepo={repo}"));
        }
        let how = if self.channel.is_some() {
            String::new()
        } else if let Ok(server) = std::env::var("MQSERVER") {
            format!(" (client: MQSERVER={server})")
        } else if let Ok(ccdt) = std::env::var("MQCCDTURL") {
            format!(" (client: MQCCDTURL={ccdt})")
        } else {
            " (bindings, or the client's CCDT)".into()
        };
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        format!("ibmmq://{user}{}{q}{how}", self.qmgr)
    }
}

/// Whether `name` can be an MQ object name: 1 to 48 of A-Z a-z 0-9 . _ / %.
pub fn is_mq_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 48
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%'))
}

fn parse_ibmmq(raw: &str) -> Result<Endpoint, ConfigError> {
    let bad = |why: String| ConfigError::BadUrl {
        url: redact_raw(raw),
        why,
    };
    let rest = raw.strip_prefix("ibmmq://").unwrap_or(raw);
    let (authority, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = authority.trim_end_matches('/');
    let (userinfo, qmgr) = match authority.rsplit_once('@') {
        Some((u, q)) => (Some(u), q),
        None => (None, authority),
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let qmgr = decode(qmgr);
    if !qmgr.is_empty() && !is_mq_name(&qmgr) {
        return Err(bad(format!(
            "'{qmgr}' is no queue manager name: at most 48 characters of A-Z a-z 0-9 . _ / %"
        )));
    }
    let (mut user, password) = match userinfo {
        None => (None, None),
        Some(u) => match u.split_once(':') {
            Some((u, p)) => (Some(decode(u)), Some(decode(p))),
            None => (Some(decode(u)), None),
        },
    };
    let (mut conn, mut channel, mut cipher, mut keyrepo) = (None, None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        let v = v.into_owned();
        match k.as_ref() {
            "conn" | "connname" => conn = Some(v),
            "channel" => channel = Some(v),
            "user" => user = Some(v),
            "cipher" | "cipherspec" => cipher = Some(v),
            "keyrepo" => keyrepo = Some(v),
            other => {
                return Err(bad(format!(
                    "unknown parameter '{other}'; known: conn, channel, user, cipher, keyrepo"
                )));
            }
        }
    }
    let channel = match (channel, conn) {
        (Some(ch), Some(conn)) => {
            if ch.is_empty() || ch.len() > 20 {
                return Err(bad(format!(
                    "channel '{ch}': MQ channel names are 1 to 20 characters"
                )));
            }
            if conn.is_empty() || conn.len() > 264 || conn.contains('/') {
                return Err(bad(format!(
                    "conn '{conn}': write host(port), e.g. conn=127.0.0.1(1414)"
                )));
            }
            Some((ch, conn))
        }
        (None, None) => None,
        (None, Some(_)) => {
            return Err(bad(
                "conn= needs channel= too, e.g. channel=DEV.APP.SVRCONN".into(),
            ));
        }
        (Some(_), None) => {
            return Err(bad(
                "channel= needs conn= too, e.g. conn=127.0.0.1(1414)".into()
            ));
        }
    };
    let tls = match (cipher, keyrepo.or_else(|| std::env::var("MQSSLKEYR").ok())) {
        (None, _) => None,
        (Some(_), _) if channel.is_none() => {
            return Err(bad(
                "cipher= applies to a client channel given by conn= and channel= (otherwise set it in the CCDT)".into(),
            ));
        }
        (Some(c), Some(repo)) => Some((c, repo)),
        (Some(_), None) => {
            return Err(bad(
                "cipher= needs a key repository: add keyrepo=/path/to/key (without .kdb) or set MQSSLKEYR".into(),
            ));
        }
    };
    Ok(Endpoint::IbmMq(IbmMqEndpoint {
        qmgr,
        channel,
        user,
        password,
        tls,
        note: None,
    }))
}

/// Parse `embedded:` or `amqp://user:pass@host:port/vhost` (RabbitMQ's URI spec: default
/// guest/guest, port 5672, vhost "/" when the path is absent, percent-decoded otherwise).
pub fn parse_url(raw: &str) -> Result<Endpoint, ConfigError> {
    if raw == "embedded:" || raw == "embedded" || raw.starts_with("embedded:") {
        return Ok(Endpoint::Embedded);
    }
    if raw.starts_with("ibmmq://") {
        return parse_ibmmq(raw);
    }
    let url = url::Url::parse(raw).map_err(|e| ConfigError::BadUrl {
        url: redact_raw(raw),
        why: format!("{e}; expected amqp://user:password@host:5672/vhost or embedded:"),
    })?;
    match url.scheme() {
        "amqp" | "amqps" => {}
        "nats" | "amqp1" => {
            return Err(ConfigError::NotYet {
                url: redact_raw(raw),
                scheme: url.scheme().into(),
            });
        }
        other => {
            return Err(ConfigError::BadUrl {
                url: redact_raw(raw),
                why: format!("unknown scheme {other}:; use embedded:, amqp:// or ibmmq://"),
            });
        }
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| ConfigError::BadUrl {
            url: redact_raw(raw),
            why: "no host; write amqp://user:password@HOST:5672/vhost".into(),
        })?;
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let user = if url.username().is_empty() {
        "guest".to_string()
    } else {
        decode(url.username())
    };
    let password = url
        .password()
        .map(decode)
        .unwrap_or_else(|| "guest".to_string());
    let vhost = match url.path() {
        "" | "/" => "/".to_string(),
        p => decode(&p[1..]),
    };
    if vhost.len() > MAX_QUEUE_NAME {
        return Err(ConfigError::BadUrl {
            url: redact_raw(raw),
            why: format!(
                "the virtual host name is {} bytes; AMQP allows at most {MAX_QUEUE_NAME}",
                vhost.len()
            ),
        });
    }
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tls = if url.scheme() == "amqps" {
        // RabbitMQ's URI query parameters for TLS.
        let mut t = TlsOptions {
            server_name: host.clone(),
            ..Default::default()
        };
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "cacertfile" => t.ca_file = Some(PathBuf::from(v.as_ref())),
                "certfile" => t.cert_file = Some(PathBuf::from(v.as_ref())),
                "keyfile" => t.key_file = Some(PathBuf::from(v.as_ref())),
                "server_name_indication" => t.server_name = v.into_owned(),
                _ => {}
            }
        }
        for f in [&t.ca_file, &t.cert_file, &t.key_file]
            .into_iter()
            .flatten()
        {
            if !f.is_file() {
                return Err(ConfigError::BadUrl {
                    url: redact_raw(raw),
                    why: format!("TLS file {} does not exist", f.display()),
                });
            }
        }
        if t.cert_file.is_some() != t.key_file.is_some() {
            return Err(ConfigError::BadUrl {
                url: redact_raw(raw),
                why: "a client certificate needs both certfile and keyfile".into(),
            });
        }
        Some(t)
    } else {
        None
    };
    Ok(Endpoint::Amqp(AmqpEndpoint {
        host,
        port: url
            .port()
            .unwrap_or(if tls.is_some() { 5671 } else { 5672 }),
        user,
        password,
        vhost,
        tls,
    }))
}

/// Best-effort redaction of a URL that may not parse: `scheme://user:***@rest`.
pub fn redact_raw(raw: &str) -> String {
    if let Some((scheme, rest)) = raw.split_once("://")
        && let Some((userinfo, host)) = rest.rsplit_once('@')
    {
        let user = userinfo.split(':').next().unwrap_or("");
        return format!("{scheme}://{user}:***@{host}");
    }
    raw.to_string()
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunLength {
    /// This many measured round trips in all.
    Count(u64),
    /// Until this much time has passed.
    Duration(Duration),
}

/// Where replies come back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyQueue {
    /// A temporary, exclusive queue per task, created by the broker and gone with the connection.
    Temporary,
    /// A named queue shared by all tasks; replies are matched by correlation id.
    Named(String),
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
    fn amqp_url_defaults_follow_rabbitmq_uri_spec() {
        let Endpoint::Amqp(a) = parse_url("amqp://localhost").unwrap() else {
            panic!("not amqp")
        };
        assert_eq!(
            (
                a.user.as_str(),
                a.password.as_str(),
                a.port,
                a.vhost.as_str()
            ),
            ("guest", "guest", 5672, "/")
        );
        let Endpoint::Amqp(a) = parse_url("amqp://u:p%40ss@h:5673/%2f").unwrap() else {
            panic!("not amqp")
        };
        assert_eq!(
            (a.password.as_str(), a.port, a.vhost.as_str()),
            ("p@ss", 5673, "/")
        );
        let Endpoint::Amqp(a) = parse_url("amqp://u:p@h/prod").unwrap() else {
            panic!("not amqp")
        };
        assert_eq!(a.vhost, "prod");
    }

    #[test]
    fn redaction_hides_the_password() {
        let e = parse_url("amqp://guest:secret@127.0.0.1:5672/%2f").unwrap();
        assert_eq!(e.redacted(), "amqp://guest:***@127.0.0.1:5672/%2F");
        assert!(!format!("{e:?}").contains("secret"));
        assert_eq!(redact_raw("amqp://bob:pw@h:x"), "amqp://bob:***@h:x");
    }

    #[test]
    fn ibmmq_urls_give_channel_user_and_tls_and_hide_the_password() {
        let Ok(Endpoint::IbmMq(m)) = parse_url(
            "ibmmq://app@QM1?conn=mq.example(1414)&channel=DEV.APP.SVRCONN&cipher=TLS_AES_128_GCM_SHA256&keyrepo=/var/mqm/key",
        ) else {
            panic!("not ibmmq")
        };
        assert_eq!(m.qmgr, "QM1");
        assert_eq!(
            m.channel,
            Some(("DEV.APP.SVRCONN".into(), "mq.example(1414)".into()))
        );
        assert_eq!(m.user.as_deref(), Some("app"));
        assert_eq!(
            m.tls,
            Some(("TLS_AES_128_GCM_SHA256".into(), "/var/mqm/key".into()))
        );
        assert_eq!(
            m.redacted(),
            "ibmmq://app@QM1?conn=mq.example(1414)&channel=DEV.APP.SVRCONN&cipher=TLS_AES_128_GCM_SHA256&keyrepo=/var/mqm/key"
        );
        let Ok(Endpoint::IbmMq(m)) = parse_url("ibmmq://app:pa55@QM1") else {
            panic!("not ibmmq")
        };
        assert_eq!(m.password.as_deref(), Some("pa55"));
        assert!(m.redacted().starts_with("ibmmq://app:***@QM1"));
        assert!(!format!("{m:?}").contains("pa55"));
        // The default queue manager: no name.
        let Ok(Endpoint::IbmMq(m)) = parse_url("ibmmq://") else {
            panic!("not ibmmq")
        };
        assert_eq!(m.qmgr, "");
    }

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

    #[test]
    fn unsupported_schemes_say_not_yet() {
        assert!(matches!(
            parse_url("nats://127.0.0.1:4222"),
            Err(ConfigError::NotYet { .. })
        ));
        let Endpoint::Amqp(a) =
            parse_url("amqps://u:p@broker/%2f?server_name_indication=mq.example").unwrap()
        else {
            panic!("not amqp")
        };
        assert_eq!(
            (a.port, a.tls.map(|t| t.server_name)),
            (5671, Some("mq.example".to_string()))
        );
        assert!(matches!(
            parse_url("amqps://h/?cacertfile=/no/such.pem"),
            Err(ConfigError::BadUrl { .. })
        ));
        assert!(matches!(
            parse_url("http://x"),
            Err(ConfigError::BadUrl { .. })
        ));
        let err = parse_url("amqp://u:hunter2@:5672").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn the_full_url_parses_back_to_the_same_endpoint() {
        let ca = tempfile::NamedTempFile::new().expect("temp file");
        let tls = format!(
            "amqps://a:b@h:5671/v?cacertfile={}&server_name_indication=broker",
            ca.path().display()
        );
        for raw in [
            "amqp://guest:guest@127.0.0.1:5672/%2f",
            "amqp://u%40x:p%3As%2Fw@host:5673/my%2Fvhost",
            tls.as_str(),
        ] {
            let Ok(Endpoint::Amqp(ep)) = parse_url(raw) else {
                panic!("{raw} parses")
            };
            let again = parse_url(&ep.url_with_password()).expect("parses again");
            assert_eq!(again, Endpoint::Amqp(ep), "{raw}");
        }
    }
}
