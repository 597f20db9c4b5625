//! From the options of a run to a validated [`RunConfig`], in named steps: where to connect,
//! the queues, the run's shape, the messages, the process groups, the exports and the label.
//! Each step checks what it reads and says which flag is wrong and how to fix it.

use super::options::RunOptions;
use super::profile::{Profile, find_profile, profile_paths};
use super::{
    ConfigError, DEFAULT_COUNT, MAX_QUEUE_NAME, RunConfig, RunLength, RunOutputs, bad, parse_ratio,
};
use crate::accounting::selector::{self, GroupSpec};
use crate::msgfile::Messages;
use crate::transport::{Endpoint, QueueSetup, ReplyQueue, parse_url, registry};
use std::time::Duration;

/// How often a run prints its progress line on stderr unless told otherwise.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

impl RunOptions {
    /// Check the options of a run into its config, reading the profile and the message
    /// files.
    pub fn build(&self) -> Result<RunConfig, ConfigError> {
        let args = self;
        let (endpoint, profile_name, profile) = endpoint(args)?;
        let profile = profile.as_ref();
        let (request_queue, reply_queue) = queues(args, profile, &endpoint)?;
        check_transport_options(args, &endpoint, &request_queue, &reply_queue)?;
        let mut shape = RunShape::of(args)?;
        let messages = match (args.msg_size, args.msgfile.is_empty()) {
            (Some(n), _) => Messages::generated(n)?,
            (None, false) => Messages::from_files(&args.msgfile, args.lines)?,
            (None, true) => Messages::default_request()?,
        };
        let mut rate = args.rate;
        let (shard, start_at) = shard_plan(
            args,
            (&endpoint, &request_queue, &reply_queue, &messages),
            &mut shape,
            &mut rate,
        )?;
        let (groups, groups_note) = groups(args, profile, &endpoint)?;
        let hosts = crate::accounting::pcp::parse_hosts(
            &args.accounting.hosts,
            profile.and_then(|p| p.hosts.as_ref()),
        )?;
        let capture_ratio = parse_ratio(&args.accounting.capture_ratio)?;
        let outputs = outputs(args)?;
        let label = label(args, profile, profile_name.as_deref(), &endpoint)?;
        let price_per_vcpu_hour = price(args.price_per_vcpu_hour)?;
        if args
            .outputs
            .exports
            .get(super::formats::Format::Folded)
            .is_some()
            && !args.sample_stacks
        {
            return Err(bad(
                "--export-folded",
                "writes the stacks --profile samples: add --profile",
            ));
        }
        if args.sample_stacks {
            crate::profiling::recorder::check().map_err(|e| bad("--profile", e.to_string()))?;
        }
        Ok(RunConfig {
            endpoint,
            profile: profile_name,
            label,
            price_per_vcpu_hour,
            sample_stacks: args.sample_stacks,
            request_queue,
            check_serving: true,
            shard,
            start_at,
            reply_queue,
            clear_reply_queue: !args.no_clear,
            declare: args.declare,
            put1: args.put1,
            model_queue: args.model_queue.clone(),
            confirm_window: args.confirm_window,
            replicas: args.replicas,
            queue_type: args.queue_type,
            messages,
            length: shape.length,
            tasks: shape.tasks,
            rounds: args.rounds,
            probe: args.probe.filter(|d| !d.is_zero()),
            settle: None,
            msgs_per_loop: args.msgs_per_loop,
            persistent: args.persistent,
            syncpoint: args.syncpoint,
            wait: shape.wait,
            reconnect_for: shape.reconnect_for,
            max_timeouts: args.max_timeouts,
            match_mode: args.match_mode,
            warmup: args.warmup,
            rate,
            quiet: args.outputs.quiet,
            groups,
            groups_note,
            hosts,
            outputs,
            progress_bar: args.progress || (!args.no_progress && !args.outputs.quiet),
            stats_interval: match args.stats_interval {
                Some(every) => (!every.is_zero()).then_some(every),
                // Long runs say how they go where nobody sees a bar (a CI log); --quiet
                // asks for silence, --progress for progress anyway.
                None => (!args.outputs.quiet || args.progress).then_some(PROGRESS_EVERY),
            },
            cpu_source: args.accounting.cpu_source,
            count_syncs: args.accounting.count_syncs,
            capture_ratio,
        })
    }
}

/// The hash of what every shard of a run must share: the whole run's settings, before the
/// shard takes its share.
fn shared_settings_hash(
    args: &RunOptions,
    (endpoint, request_queue, messages): (&Endpoint, &str, &Messages),
    shape: &RunShape,
    rate: Option<f64>,
    of: usize,
) -> String {
    let length = match shape.length {
        RunLength::Count(n) => format!("count {n}"),
        RunLength::Duration(d) => format!("duration {d:?}"),
    };
    super::shard::settings_hash(&[
        ("transport", endpoint.transport().to_string()),
        ("qmgr", endpoint.redacted()),
        ("request_queue", request_queue.to_string()),
        (
            "message",
            format!(
                "{} {}..{}",
                messages.source,
                messages.min_len(),
                messages.max_len()
            ),
        ),
        ("persistent", args.persistent.to_string()),
        ("syncpoint", args.syncpoint.to_string()),
        ("queue_type", format!("{:?}", args.queue_type)),
        ("replicas", format!("{:?}", args.replicas)),
        ("msgs_per_loop", args.msgs_per_loop.to_string()),
        ("length", length),
        ("tasks", shape.tasks.to_string()),
        ("rate", format!("{rate:?}")),
        ("shards", of.to_string()),
        ("start_at", args.shard.start_at.clone().unwrap_or_default()),
    ])
}

/// A shard's share of the run (count, tasks, rate) and its plan, and the common start.
fn shard_plan(
    args: &RunOptions,
    (endpoint, request_queue, reply_queue, messages): (&Endpoint, &str, &ReplyQueue, &Messages),
    shape: &mut RunShape,
    rate: &mut Option<f64>,
) -> Result<
    (
        Option<super::shard::ShardPlan>,
        Option<chrono::DateTime<chrono::Utc>>,
    ),
    ConfigError,
> {
    use super::shard::{self, ShardPlan};
    let o = &args.shard;
    let start_at = o
        .start_at
        .as_deref()
        .map(|s| shard::start_at(s, chrono::Utc::now()))
        .transpose()?;
    let env = |var: &str| std::env::var(var).ok();
    let Some(placed) = shard::index_of(o, &env)? else {
        if o.run_id.is_some() || o.measure {
            return Err(bad(
                if o.measure { "--measure" } else { "--run-id" },
                "belongs to a run driven from several hosts: add --shard I/N (or --shards N in a Kubernetes Indexed Job, --shards auto under Slurm)",
            ));
        }
        return Ok((None, start_at));
    };
    let (index, of) = (placed.index, placed.of);
    // Under Slurm the job names the run (every task of one step or array shares it).
    let run_id = o.run_id.clone().or(placed.run_id).ok_or_else(|| {
        bad("--run-id", "a shard needs the run's id, the same on every shard (e.g. --run-id nightly-42): merge takes only shards of one run")
    })?;
    shard::check_run_id(&run_id)?;
    if let ReplyQueue::Named(q) = reply_queue
        && endpoint.transport() != "ibmmq"
    {
        return Err(bad(
            "--reply-queue",
            format!(
                "'{q}' would be read by every shard, each taking the others' replies; leave --reply-queue out (temporary queues are per task), or give each shard its own"
            ),
        ));
    }
    let settings_hash =
        shared_settings_hash(args, (endpoint, request_queue, messages), shape, *rate, of);
    let tasks = shard::share(shape.tasks as u64, index, of) as usize;
    if tasks == 0 {
        return Err(bad(
            "--tasks",
            format!(
                "{} task(s) among {of} shards leaves shard {index} none: give --tasks {of} or more (each shard runs its share)",
                shape.tasks
            ),
        ));
    }
    shape.tasks = tasks;
    if let RunLength::Count(n) = shape.length {
        let mine = shard::share(n, index, of);
        if mine < tasks as u64 {
            return Err(bad(
                "--count",
                format!(
                    "{n} messages among {of} shards leave shard {index} {mine}, fewer than its {tasks} task(s)"
                ),
            ));
        }
        shape.length = RunLength::Count(mine);
    }
    *rate = rate.map(|r| r / of as f64);
    Ok((
        Some(ShardPlan {
            run_id,
            index,
            of,
            measure: o.measure,
            settings_hash,
            node: placed.node,
        }),
        start_at,
    ))
}

/// Where to connect: nothing for the embedded queue manager, a URL, a profile, or else the
/// name of an IBM MQ queue manager (as with OEMPUTX). Returns the profile's name and table
/// when one was used.
fn endpoint(args: &RunOptions) -> Result<(Endpoint, Option<String>, Option<Profile>), ConfigError> {
    let name = match args.qmgr.as_deref() {
        None | Some("") => return Ok((registry::embedded(), None, None)),
        Some(q) if q.contains("://") || q.starts_with("embedded") => {
            return Ok((parse_url(q)?, None, None));
        }
        Some(name) => name,
    };
    if let Some(url) = url_typo(name) {
        return Err(bad(
            "--qmgr",
            format!("{name} looks like a URL with a typo: did you mean {url}?"),
        ));
    }
    let paths = profile_paths(args.config.as_deref());
    match find_profile(name, &paths, args.config.is_some()) {
        Ok(p) => Ok((parse_url(&p.url)?, Some(name.to_string()), Some(p))),
        Err(ConfigError::UnknownProfile {
            name: n,
            searched,
            known,
        }) => {
            let note = format!(
                "--qmgr {name} is no profile in {searched} (known profiles: {known}), so it was taken as an IBM MQ queue manager"
            );
            registry::bare_name(name, note)?
                .map(|e| (e, None, None))
                .ok_or(ConfigError::UnknownProfile {
                    name: n,
                    searched,
                    known,
                })
        }
        Err(e) => Err(e),
    }
}

/// A URL whose `://` came out wrong (`amqp//host`, `amqp:/host`, `amqp:host`): IBM MQ names
/// may contain `/`, so without this it would be tried as a queue manager, with a long error
/// about the MQ client library. The URL it was probably meant to be.
fn url_typo(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    // Longest first: amqps before amqp.
    let mut schemes: Vec<&str> = registry::schemes().collect();
    schemes.sort_by_key(|s| std::cmp::Reverse(s.len()));
    schemes.into_iter().find_map(|scheme| {
        let rest = lower.strip_prefix(scheme)?;
        let host = rest
            .strip_prefix("//")
            .or_else(|| rest.strip_prefix(":/"))
            .or_else(|| rest.strip_prefix(':'))?;
        let host = host.trim_start_matches('/');
        let original = &name[name.len() - host.len()..];
        Some(format!("{scheme}://{original}"))
    })
}

/// What the transport refuses of these options (each transport states its own rules), for
/// every task count asked (a sweep's list too).
fn check_transport_options(
    args: &RunOptions,
    endpoint: &Endpoint,
    request_queue: &str,
    reply_queue: &ReplyQueue,
) -> Result<(), ConfigError> {
    {
        let tasks = args.tasks;
        let setup = QueueSetup {
            request_queue: request_queue.to_string(),
            reply_queue: reply_queue.clone(),
            clear_reply_queue: !args.no_clear,
            declare: args.declare,
            persistent: args.persistent,
            syncpoint: args.syncpoint,
            tasks,
            match_mode: args.match_mode,
            put1: args.put1,
            model_queue: args.model_queue.clone(),
            confirm_window: args.confirm_window,
            replicas: args.replicas,
            queue_type: args.queue_type,
            wait: args.wait,
            interrupt: Default::default(),
        };
        if args.replicas.is_some() && !endpoint.kind().replicates() {
            return Err(bad(
                "--replicas",
                format!(
                    "sets the replicas of a NATS JetStream stream (nats:// with --persistent --declare); on {} it is not built yet: leave it out",
                    endpoint.transport()
                ),
            ));
        }
        if args.queue_type.is_some() && !endpoint.kind().has_queue_types() {
            return Err(bad(
                "--queue-type",
                format!(
                    "sets the kind of RabbitMQ queue --declare creates (amqp://); on {} it is not built yet: leave it out",
                    endpoint.transport()
                ),
            ));
        }
        endpoint
            .kind()
            .refuse(&setup)
            .map_err(|r| ConfigError::BadValue {
                flag: r.flag,
                why: r.why,
            })?;
    }
    Ok(())
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

/// The request queue and where replies come back: flag, else profile, else the default.
fn queues(
    args: &RunOptions,
    profile: Option<&Profile>,
    endpoint: &Endpoint,
) -> Result<(String, ReplyQueue), ConfigError> {
    // The transport's own default, the one sample-flow consumes on the same URL.
    let request_queue = args
        .request_queue
        .clone()
        .or_else(|| profile.and_then(|p| p.request_queue.clone()))
        .unwrap_or_else(|| endpoint.kind().default_request_queue().to_string());
    check_queue_name("--request-queue", &request_queue)?;
    let reply = args
        .reply_queue
        .clone()
        .or_else(|| profile.and_then(|p| p.reply_queue.clone()));
    let Some(q) = reply else {
        return Ok((request_queue, ReplyQueue::Temporary));
    };
    // The reply paths that are no queue of their own: their names are reserved words.
    match q.as_str() {
        "per-task" => return Ok((request_queue, ReplyQueue::Temporary)),
        "per-request" => return Ok((request_queue, ReplyQueue::PerRequest)),
        crate::transport::DIRECT_REPLY_TO => return Ok((request_queue, ReplyQueue::Direct)),
        _ => {}
    }
    check_queue_name("--reply-queue", &q)?;
    if q == request_queue {
        return Err(bad(
            "--reply-queue",
            "must differ from the request queue, or the driver would read its own requests",
        ));
    }
    Ok((request_queue, ReplyQueue::Named(q)))
}

/// How long the run lasts, over how many tasks, and how long each reply is waited for.
struct RunShape {
    length: RunLength,
    tasks: usize,
    wait: Duration,
    reconnect_for: Duration,
}

/// The longest --wait: beyond a day a lost reply is better counted than waited for, and
/// far beyond it the deadline would not fit the clock.
const MAX_WAIT: Duration = Duration::from_secs(86_400);
/// The longest --duration.
const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// The lowest --rate: one request a day (the pause between requests must fit the clock).
const MIN_RATE: f64 = 1.0 / 86_400.0;

impl RunShape {
    fn of(args: &RunOptions) -> Result<RunShape, ConfigError> {
        let length = match (args.count, args.duration) {
            (Some(0), _) => return Err(bad("--count", "must be at least 1")),
            (Some(n), _) => RunLength::Count(n),
            (None, Some(d)) if d.is_zero() => {
                return Err(bad("--duration", "must be longer than zero, e.g. 30s"));
            }
            (None, Some(d)) => RunLength::Duration(d),
            (None, None) => RunLength::Count(DEFAULT_COUNT),
        };
        let tasks = args.tasks;
        check_tasks(tasks, length)?;
        if args.rounds == 0 || args.rounds > super::MAX_ROUNDS {
            return Err(bad(
                "--rounds",
                format!(
                    "must be from 1 to {} (the most rounds a saved report may hold)",
                    super::MAX_ROUNDS
                ),
            ));
        }
        if args.msgs_per_loop == 0 {
            return Err(bad("--msgs-per-loop", "must be at least 1"));
        }
        let wait = args.wait;
        if wait.is_zero() {
            return Err(bad("--wait", "must be longer than zero, e.g. 60s"));
        }
        if wait > MAX_WAIT {
            return Err(bad(
                "--wait",
                "is longer than a day: no reply is worth waiting for longer (give e.g. 60s or 10m)",
            ));
        }
        if let RunLength::Duration(d) = length
            && d > MAX_DURATION
        {
            return Err(bad(
                "--duration",
                "is longer than 30 days: give a shorter run (e.g. 10m), or several",
            ));
        }
        if let Some(r) = args.rate
            && !(r.is_finite() && r >= MIN_RATE)
        {
            return Err(bad(
                "--rate",
                format!(
                    "must be a number of requests per second of at least {MIN_RATE:.7} (one a day), e.g. 100"
                ),
            ));
        }
        if args.max_timeouts == Some(0) {
            return Err(bad(
                "--max-timeouts",
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        let reconnect_for = match args.reconnect_for {
            Some(d) if d > MAX_WAIT => {
                return Err(bad(
                    "--reconnect-for",
                    "is longer than a day: a cluster that takes no connection for that long is down (give e.g. 30s, or 0s to end the run at a broken connection)",
                ));
            }
            Some(d) => d,
            None => wait + super::options::RECONNECT_BEYOND_WAIT,
        };
        Ok(RunShape {
            length,
            tasks,
            wait,
            reconnect_for,
        })
    }
}

/// A task count a run of this length can use.
fn check_tasks(tasks: usize, length: RunLength) -> Result<(), ConfigError> {
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
    Ok(())
}

impl RunConfig {
    /// The same run with `tasks` tasks, checked as the options were (a sweep's points).
    pub(crate) fn with_tasks(&self, tasks: usize) -> Result<RunConfig, ConfigError> {
        check_tasks(tasks, self.length)?;
        let mut c = self.clone();
        c.tasks = tasks;
        c.check_transport()?;
        Ok(c)
    }

    /// The same run on request queue `queue` (a gate's sides, each on its own), created
    /// when missing.
    pub(crate) fn on_own_queue(&self, queue: &str) -> Result<RunConfig, ConfigError> {
        check_queue_name("--request-queue", queue)?;
        let mut c = self.clone();
        c.request_queue = queue.to_string();
        c.declare = true;
        c.check_serving = false;
        c.check_transport()?;
        Ok(c)
    }

    /// The same run measuring quietly for another command, which reports: nothing printed,
    /// exported or saved, no progress bar.
    pub fn silent(&self) -> RunConfig {
        let mut c = self.clone();
        c.quiet = true;
        c.progress_bar = false;
        c.stats_interval = None;
        c.outputs = RunOutputs {
            delimiter: c.outputs.delimiter,
            decimal_comma: c.outputs.decimal_comma,
            ..RunOutputs::default()
        };
        c
    }

    /// What the transport refuses of these settings.
    fn check_transport(&self) -> Result<(), ConfigError> {
        self.endpoint
            .kind()
            .refuse(&self.queue_setup())
            .map_err(|r| ConfigError::BadValue {
                flag: r.flag,
                why: r.why,
            })
    }
}

/// The process groups: --group, else the profile's, else the transport's usual ones; with
/// a note when --group left out some of those it replaced.
fn groups(
    args: &RunOptions,
    profile: Option<&Profile>,
    endpoint: &Endpoint,
) -> Result<(Vec<GroupSpec>, Option<String>), ConfigError> {
    let asked = &args.accounting;
    if asked.no_groups {
        return Ok((Vec::new(), None));
    }
    let (usual, whose) = match profile.and_then(|p| p.groups.as_ref()) {
        Some(g) => {
            let specs: Vec<String> = g
                .iter()
                .map(|(name, sels)| format!("{name}={}", sels.join(",")))
                .collect();
            let parsed = selector::parse_groups(specs.iter().map(String::as_str))?;
            (parsed, "profile's".to_string())
        }
        None => (
            selector::parse_groups(endpoint.kind().default_groups())?,
            format!("{} transport's usual", endpoint.transport()),
        ),
    };
    if asked.groups.is_empty() {
        return Ok((usual, None));
    }
    let given = selector::parse_groups(asked.groups.iter().map(String::as_str))?;
    let dropped: Vec<&str> = usual
        .iter()
        .filter(|u| !given.iter().any(|g| g.name == u.name))
        .map(|u| u.name.as_str())
        .collect();
    let note = (!dropped.is_empty()).then(|| {
        format!(
            "--group replaces the {whose} groups: {} not measured; give {} with --group too to keep {}",
            dropped.join(", "),
            if dropped.len() == 1 { "it" } else { "them" },
            if dropped.len() == 1 { "it" } else { "them" },
        )
    });
    Ok((given, note))
}

/// The smallest price per vCPU-hour: a millionth of a unit, what the reports still print
/// (to 12 decimal places); below it a price read as zero (1e-320 was accepted so).
const MIN_PRICE: f64 = 1e-6;

/// A price per vCPU-hour: at least [`MIN_PRICE`], below a million (a typo's guard).
fn price(p: Option<f64>) -> Result<Option<f64>, ConfigError> {
    match p {
        Some(p) if !(p.is_finite() && (MIN_PRICE..1e6).contains(&p)) => Err(bad(
            "--price-per-vcpu-hour",
            "must be an amount of at least 0.000001 and below 1,000,000, e.g. 0.0425 for 4.25 cents a vCPU-hour",
        )),
        _ => Ok(p),
    }
}

/// Report destinations and formats.
fn outputs(o: &RunOptions) -> Result<RunOutputs, ConfigError> {
    let args = &o.outputs;
    if !args.delimiter.is_ascii() || args.delimiter == '"' || args.delimiter == '\n' {
        return Err(bad(
            "--delimiter",
            "must be one ASCII character other than a quote or newline, e.g. ';'",
        ));
    }
    if args.decimal_comma
        && args.exports.get(super::formats::Format::Csv).is_some()
        && args.delimiter == ','
    {
        return Err(bad(
            "--decimal-comma",
            "with CSV needs another delimiter: add --delimiter ';'",
        ));
    }
    // The history is read before the run is appended: stdout, a FIFO or a device holds none.
    if let Some(p) = &args.save_baseline
        && (p.as_os_str() == "-" || std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()))
    {
        return Err(bad(
            "--save-baseline",
            format!(
                "{}: the run is appended to main's history there, which is read first: give a regular file (where a CI keeps it: docs/gate.md)",
                p.display()
            ),
        ));
    }
    let exports = args.exports.clone();
    let mut flags = exports.by_flag();
    flags.push(("--save-baseline", args.save_baseline.as_deref()));
    super::outputs::check(
        &flags,
        (!args.no_save).then_some(args.reports_dir.as_path()),
        &o.msgfile
            .iter()
            .map(std::path::PathBuf::as_path)
            .collect::<Vec<_>>(),
    )?;
    Ok(RunOutputs {
        files: exports,
        delimiter: args.delimiter as u8,
        decimal_comma: args.decimal_comma,
        save_dir: (!args.no_save).then(|| args.reports_dir.clone()),
        save_baseline: args.save_baseline.clone(),
    })
}

/// The label that names saved reports: flag, profile's label, profile's name, transport.
fn label(
    args: &RunOptions,
    profile: Option<&Profile>,
    profile_name: Option<&str>,
    endpoint: &Endpoint,
) -> Result<String, ConfigError> {
    let label = args
        .label
        .clone()
        .or_else(|| profile.and_then(|p| p.label.clone()))
        .or_else(|| profile_name.map(String::from))
        .unwrap_or_else(|| endpoint.transport().to_string());
    if label.is_empty() || label.contains(['/', '\\', '\0']) {
        return Err(bad(
            "--label",
            "must be non-empty and contain no slashes: it names files in the reports folder",
        ));
    }
    // A file name is at most 255 bytes; the saved report's is a 23-byte time stamp, the
    // label and an extension. Found here, not after the measurement.
    if label.len() > MAX_LABEL {
        return Err(bad(
            "--label",
            format!(
                "is {} bytes; at most {MAX_LABEL}: it names the files in the reports folder",
                label.len()
            ),
        ));
    }
    Ok(label)
}

/// The longest --label: 255-byte file names less the time stamp and the extension.
const MAX_LABEL: usize = 200;
