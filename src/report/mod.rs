//! The one report model that every exporter reads.
//!
//! Built once from the config and the driver's outcome; exporters (text, JSON) only read it.
//! Units are in the field names (`elapsed_s`, `us_per_tran`). Per-process and per-group CPU
//! rows (`processes`, `groups`) are part of the model from the start and stay empty until
//! process accounting is asked for.

pub mod account;
pub mod bounds;
pub mod capacity;
pub mod compare;
pub mod cpu;
pub mod headline;
pub mod history;
pub mod ladder;
pub mod matrix;
pub mod merge;
pub mod partial;
pub mod rounds;
pub mod saved;
pub mod serving;
pub mod shard_files;
pub mod sweep;
pub mod trend;

pub use crate::accounting::{
    AccountingInfo, CaptureRatio, CpuTable, GroupRow, OtherCpu, ProcessRow,
};
use crate::config::{RunConfig, RunLength};
use crate::driver::{Integrity, Outcome, Status};
use crate::transport::MatchMode;
use crate::transport::ReplyQueue;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::Duration;

/// What a measured run made, for [`Report::build`]: its outcome and CPU, and everything
/// said about it, so that the report is whole when it is built.
pub struct Measured<'a> {
    pub outcome: &'a Outcome,
    /// The driver's own CPU over the window, and where it was read.
    pub app_cpu: Option<Duration>,
    pub app_cpu_source: String,
    pub table: Option<CpuTable>,
    /// Why part of the accounting failed.
    pub accounting_error: Option<String>,
    /// Each round's figures (none for a run of one round).
    pub rounds: Vec<RoundRow>,
    /// What `--profile` sampled, or why there is none.
    pub profile: Option<Result<crate::profiling::Profile, String>>,
    /// Who served the request queue, and what is wrong with the FLOW group.
    pub serving: Option<(serving::Serving, Vec<String>)>,
    /// Why consumers the broker counted answered nothing, added to the status.
    pub silence: Option<String>,
}

/// The JSON schema tag; bump the number on any incompatible change.
/// 2: every process and group names its host (`local`, or a `--host` name), and
/// `accounting.hosts` gives each host's figures when groups are on other hosts.
pub const SCHEMA: &str = "oemputx.report/2";
/// Schemas a saved report may have and still be read: version 1 lacks only the hosts,
/// which a reader takes as `local`.
pub const READABLE: [&str; 2] = ["oemputx.report/1", SCHEMA];

/// A run's report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema: Cow<'static, str>,
    pub tool: Tool,
    pub label: String,
    pub status: Status,
    /// Why the run stopped early, when it did.
    pub status_detail: Option<String>,
    pub settings: Settings,
    /// Messages deleted from a named reply queue before the run.
    pub reply_queue_cleared: u64,
    /// The commit the run measured (CI's variable, else the checkout's HEAD), when known: a
    /// pasted row says which code it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Window start and end, UTC, RFC 3339 with microseconds.
    pub start_utc: String,
    pub end_utc: String,
    /// Matched round trips in the window.
    pub transactions: u64,
    pub elapsed_s: f64,
    pub rate_tps: f64,
    pub round_trip_us: Latency,
    /// The round trip's distribution at fixed percentiles, for the latency plot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_trip_percentiles: Vec<Percentile>,
    /// The whole round-trip histogram (ns), lossless: HdrHistogram's V2 + DEFLATE encoding
    /// in base64, as HdrHistogram's other implementations read it; merge adds shards' up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_histogram: Option<String>,
    pub app_cpu: AppCpu,
    pub integrity: Integrity,
    /// Matched round trips per task.
    pub per_task_transactions: Vec<u64>,
    /// Each break of a task's connection in the window, and what it cost (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interruptions: Vec<crate::driver::Interruption>,
    /// Their totals (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interruptions_total: Option<crate::driver::InterruptionTotals>,
    /// Per-process CPU rows, µs per transaction (empty without process groups).
    pub processes: Vec<ProcessRow>,
    /// Per-group CPU rows, µs per transaction, with the driver as group DRIVER.
    pub groups: Vec<GroupRow>,
    /// Sum of the groups' CPU per transaction (driver included).
    pub captured_us_per_tran: Option<f64>,
    pub capture_ratio: Option<CaptureRatio>,
    /// Captured ÷ capture ratio.
    pub corrected_us_per_tran: Option<f64>,
    /// CPU outside the groups and the driver during the window.
    pub other_cpu: Option<OtherCpu>,
    /// How the CPU table was measured, its verdict and warnings.
    pub accounting: Option<AccountingInfo>,
    /// Each measured window (one unless --rounds).
    pub rounds: Vec<RoundRow>,
    /// Best / median / worst across rounds, with --rounds 2 or more.
    pub rounds_summary: Option<RoundsSummary>,
    /// Five rounds or more: each group's cost per message and resident set against time,
    /// and whether the system is steady.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<trend::Trend>,
    /// What --probe measured and how it sized the rounds.
    pub probe: Option<crate::driver::Probe>,
    /// Who served the request queue: the broker's consumers and the local processes
    /// connected to it, set against FLOW (absent where not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<serving::Serving>,
    /// Cores per 1,000 transactions a second per group, and the rate that would fill the
    /// busiest host's cores: an estimate from this one rate (absent without groups).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<capacity::Capacity>,
    /// `--profile`: where each group's CPU went, function by function, in µs per message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profiling::Profile>,
    /// A shard of a run driven from several hosts: what merge checks and needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// A report merged from shards: the shards and where the shared groups' CPU comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<merge::MergeInfo>,
    pub host: Host,
}

/// A shard's place in its run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardInfo {
    pub run_id: String,
    pub index: usize,
    pub of: usize,
    /// This shard's groups are the run's measurement of the shared processes.
    pub measure: bool,
    /// A hash of the settings every shard of the run shares.
    pub settings_hash: String,
    /// The common start asked for (--start-at), and how late this shard was ready for it.
    pub start_at: Option<String>,
    pub late_for_start_s: Option<f64>,
    /// The node it ran on: the launcher's name for it (Slurm's `SLURMD_NODENAME`), else the
    /// hostname. Absent in shards of builds before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// A histogram as the report carries it: V2 + DEFLATE, base64.
pub(crate) fn encode_histogram(h: &hdrhistogram::Histogram<u64>) -> Option<String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The largest decoded histogram accepted, in bytes: a 3-significant-figure histogram of
/// any range encodes its counts in well under this (about 54,000 counts of at most 9 bytes).
const MAX_HISTOGRAM_BYTES: u64 = 1 << 20;

/// A histogram back from [`encode_histogram`]'s text. The text comes from files other
/// hosts wrote, so nothing is sized by what its header claims: the deflated counts are
/// inflated through a reader bounded by [`MAX_HISTOGRAM_BYTES`], and the V2 header's
/// length, precision and range are checked against what follows before the decoder
/// allocates by them.
pub(crate) fn decode_histogram(text: &str) -> Result<hdrhistogram::Histogram<u64>, String> {
    use base64::Engine as _;
    use std::io::Read as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    // The cookie's second-lowest nibble carries a word size (0x10 as hdrhistogram writes
    // it), which the base values leave out.
    const V2: u32 = 0x1c84_9303;
    const V2_DEFLATE: u32 = 0x1c84_9304;
    let plain = match be_bytes::<4>(&bytes, 0).map(|c| u32::from_be_bytes(c) & 0xffff_ff0f) {
        Some(V2_DEFLATE) => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(bytes.get(8..).unwrap_or_default())
                .take(MAX_HISTOGRAM_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("its deflated counts do not inflate: {e}"))?;
            if out.len() as u64 > MAX_HISTOGRAM_BYTES {
                return Err(format!(
                    "it inflates to more than {MAX_HISTOGRAM_BYTES} bytes, more than any run's histogram"
                ));
            }
            out
        }
        Some(V2) => bytes,
        other => {
            return Err(format!(
                "not an HdrHistogram V2 encoding (cookie {:#x})",
                other.unwrap_or(0)
            ));
        }
    };
    check_v2_header(&plain)?;
    let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(plain))
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e:?}"))?;
    // Counts past any run's (2^53 round trips) would overflow the sums that percentiles and
    // merges make of them: hdrhistogram adds them unchecked and panicked on three buckets of
    // i64::MAX (issue 61, hostile pass).
    const MOST: u64 = 1 << 53;
    let total = h
        .iter_recorded()
        .try_fold(0u64, |sum, v| sum.checked_add(v.count_at_value()));
    match total {
        Some(n) if n <= MOST => Ok(h),
        _ => Err(format!(
            "its counts add up to more than {MOST} round trips, more than any run makes"
        )),
    }
}

/// `N` bytes of `b` from `at`, for a big-endian number (None past the end).
fn be_bytes<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

/// An uncompressed V2 header's claims, against the bytes that follow it: the counts'
/// length, at most 3 significant figures (what oemputx writes; it bounds the counts array
/// below half a megabyte whatever the range) and a range with 1 ≤ lowest and 2 × lowest ≤
/// highest.
fn check_v2_header(b: &[u8]) -> Result<(), String> {
    const HEADER: usize = 40;
    if b.len() < HEADER {
        return Err(format!(
            "shorter than an HdrHistogram V2 header ({HEADER} bytes)"
        ));
    }
    let u32_at = |at| be_bytes::<4>(b, at).map_or(0, u32::from_be_bytes);
    let i64_at = |at| be_bytes::<8>(b, at).map_or(0, i64::from_be_bytes);
    if u32_at(0) & 0xffff_ff0f != 0x1c84_9303 {
        return Err("its inflated counts are not an HdrHistogram V2 encoding".into());
    }
    let payload = u32_at(4) as usize;
    let follows = b.len().saturating_sub(HEADER);
    if payload > follows {
        return Err(format!(
            "its header claims {payload} bytes of counts, but {follows} follow"
        ));
    }
    let figures = u32_at(12);
    if figures > 3 {
        return Err(format!(
            "its header claims {figures} significant figures; oemputx writes 3"
        ));
    }
    let (low, high) = (i64_at(16), i64_at(24));
    if low < 1 || high < low.saturating_mul(2) {
        return Err(format!(
            "its header's range [{low}, {high}] is not a histogram's"
        ));
    }
    Ok(())
}

/// Name and version of the tool that wrote the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    pub name: Cow<'static, str>,
    pub version: Cow<'static, str>,
}

/// The settings of the run, echoed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub transport: Cow<'static, str>,
    /// The queue manager, with any password replaced by `***`.
    pub qmgr: String,
    pub profile: Option<String>,
    pub request_queue: String,
    /// `null` for temporary per-task and per-request reply queues.
    pub reply_queue: Option<String>,
    /// Where replies came back ([`crate::transport::ReplyQueue::path`]): per-task, named,
    /// direct or per-request; empty in a report written before it was recorded.
    #[serde(default)]
    pub reply_path: String,
    /// `--confirm-window`: publisher confirms with at most this many requests unconfirmed.
    #[serde(default)]
    pub confirm_window: Option<u32>,
    /// `--replicas`: the copies a cluster keeps of each stored request, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<usize>,
    /// `--queue-type`: the kind of request queue, when asked (RabbitMQ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_type: Option<crate::transport::QueueType>,
    /// Whether a named reply queue was cleared before the run (false under --no-clear).
    pub clear_reply_queue: bool,
    pub message_source: String,
    pub messages_in_rotation: usize,
    pub msg_bytes_min: usize,
    pub msg_bytes_max: usize,
    pub persistent: bool,
    /// Where persistent requests were stored, when the transport says more than
    /// `persistent` (NATS: "JetStream stream MQSI_IN (workqueue retention, file storage, 1 replica)");
    /// on a broker that stores every request (Kafka), also when the run was not persistent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_store: Option<String>,
    /// What the broker said of itself before the run, when the transport asks (Kafka: its
    /// cluster id, brokers, controller and the API versions it serves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker: Option<String>,
    pub syncpoint: bool,
    pub msgs_per_loop: usize,
    pub tasks: usize,
    /// Requested count, when the run was sized by count.
    pub count: Option<u64>,
    /// Requested duration, when the run was sized by time.
    pub duration_s: Option<f64>,
    pub wait_s: f64,
    #[serde(rename = "match")]
    pub match_mode: MatchMode,
    pub warmup: u64,
    pub rate_limit_tps: Option<f64>,
    pub max_timeouts: Option<u64>,
    /// --reconnect-for: how long a broken connection was tried again (0: not at all).
    #[serde(default)]
    pub reconnect_for_s: f64,
}

pub use crate::stats::Latency;

/// The driver's own CPU over the window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppCpu {
    /// `null` when the CPU clock could not be read (see `source`).
    pub total_s: Option<f64>,
    pub us_per_tran: Option<f64>,
    pub pct_of_elapsed: Option<f64>,
    pub source: String,
}

/// Facts about the machine a reader needs to trust a figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpus: usize,
    /// /proc/cpuinfo's model name.
    pub cpu_model: Option<String>,
    pub kernel: String,
    /// USER_HZ: the unit of /proc's CPU times.
    pub clk_tck: Option<i64>,
    /// CONFIG_HZ: the scheduler tick that samples user/system time.
    pub kernel_hz: Option<u32>,
    /// CONFIG_IRQ_TIME_ACCOUNTING: whether interrupt time is kept out of task CPU.
    pub irq_time_accounting: Option<bool>,
}

impl Host {
    /// Read this machine's facts; what cannot be read is left empty.
    pub fn current() -> Self {
        let uts = nix::sys::utsname::uname().ok();
        let config = procfs::kernel_config().ok();
        let setting = |k: &str| config.as_ref().and_then(|c| c.get(k).cloned());
        Host {
            hostname: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_default(),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model: {
                use procfs::Current;
                procfs::CpuInfo::current()
                    .ok()
                    .and_then(|i| i.model_name(0).map(str::to_string))
            },
            kernel: uts
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
            clk_tck: nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
                .ok()
                .flatten(),
            kernel_hz: match setting("CONFIG_HZ") {
                Some(procfs::ConfigSetting::Value(v)) => v.parse().ok(),
                _ => None,
            },
            // Absent from a readable config means "not set".
            irq_time_accounting: config.as_ref().map(|c| {
                matches!(
                    c.get("CONFIG_IRQ_TIME_ACCOUNTING"),
                    Some(procfs::ConfigSetting::Yes)
                )
            }),
        }
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Percentiles of the round trip the latency plot draws: dense where the tail is.
pub const PLOTTED_PERCENTILES: [f64; 14] = [
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999, 100.0,
];

/// One point of the round trip's distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    pub pct: f64,
    pub us: f64,
}

/// The round trip at [`PLOTTED_PERCENTILES`] (none for an empty histogram).
pub(crate) fn percentiles(h: &hdrhistogram::Histogram<u64>) -> Vec<Percentile> {
    if h.is_empty() {
        return Vec::new();
    }
    PLOTTED_PERCENTILES
        .iter()
        .map(|&pct| Percentile {
            pct,
            // pct / 100 is one ulp off for some (99.9 / 100 = 0.9990000000000001), which
            // moved the rank ceil(q·n) one sample up whenever q·n was whole: the plotted
            // p99.9 then differed from the table's. Exact integers divided are not off.
            us: us(h.value_at_quantile((pct * 1000.0).round() / 100_000.0)),
        })
        .collect()
}

/// One round's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundRow {
    pub round: usize,
    pub transactions: u64,
    pub elapsed_s: f64,
    pub rate_tps: f64,
    pub round_trip_us: Latency,
    pub app_cpu_us_per_tran: Option<f64>,
    pub captured_us_per_tran: Option<f64>,
    pub corrected_us_per_tran: Option<f64>,
    /// Each group's total µs per transaction in this round.
    pub groups: Vec<RoundGroup>,
}

/// A group's figure in one round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundGroup {
    pub name: String,
    pub total_us_per_tran: f64,
    /// The group's cost beyond CPU in this round (the gate reads it by round).
    #[serde(flatten)]
    pub cost: crate::accounting::resources::GroupCost,
}

/// Best / median / worst across rounds (two rounds or more).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundsSummary {
    pub rounds: usize,
    pub rate_tps: Option<rounds::BestMedianWorst>,
    pub round_trip_mean_us: Option<rounds::BestMedianWorst>,
    pub app_cpu_us_per_tran: Option<rounds::BestMedianWorst>,
    pub captured_us_per_tran: Option<rounds::BestMedianWorst>,
    pub groups: Vec<GroupSpread>,
    /// Set when the CPU per transaction varies by more than 5% across rounds.
    pub noisy: Option<String>,
}

/// One group's CPU per transaction across rounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupSpread {
    pub name: String,
    pub total_us_per_tran: rounds::BestMedianWorst,
}

impl RoundsSummary {
    /// Summarise the rounds of a run.
    pub fn of(rows: &[RoundRow]) -> Option<RoundsSummary> {
        if rows.len() < 2 {
            return None;
        }
        let col = |f: &dyn Fn(&RoundRow) -> Option<f64>| -> Vec<f64> {
            rows.iter().filter_map(f).collect()
        };
        let mut groups = Vec::new();
        for g in rows[0].groups.iter().map(|g| g.name.clone()) {
            let v = col(&|r| {
                r.groups
                    .iter()
                    .find(|x| x.name == g)
                    .map(|x| x.total_us_per_tran)
            });
            if let Some(b) = rounds::best_median_worst(&v, false) {
                groups.push(GroupSpread {
                    name: g,
                    total_us_per_tran: b,
                });
            }
        }
        let captured = rounds::best_median_worst(&col(&|r| r.captured_us_per_tran), false);
        let worst = groups
            .iter()
            .map(|g| (g.name.as_str(), g.total_us_per_tran))
            .chain(captured.map(|c| ("captured total", c)))
            .filter(|(_, b)| b.worst - b.best >= rounds::NOISY_FLOOR_US)
            .map(|(name, b)| (name, b.spread_pct))
            .fold(None, |acc: Option<(&str, f64)>, x| match acc {
                Some(a) if a.1 >= x.1 => Some(a),
                _ => Some(x),
            });
        let noisy = worst.filter(|w| w.1 > rounds::NOISY_SPREAD_PCT).map(|(name, spread)| {
            format!(
                "the measurement is noisy: {name} CPU per transaction spreads {spread:.1}% across rounds (more than {:.0}%); a difference smaller than that between two runs is not to be trusted. More rounds, longer rounds (--probe) or a quieter machine help",
                rounds::NOISY_SPREAD_PCT
            )
        });
        Some(RoundsSummary {
            rounds: rows.len(),
            rate_tps: rounds::best_median_worst(&col(&|r| Some(r.rate_tps)), true),
            round_trip_mean_us: rounds::best_median_worst(
                &col(&|r| Some(r.round_trip_us.mean)),
                false,
            ),
            app_cpu_us_per_tran: rounds::best_median_worst(&col(&|r| r.app_cpu_us_per_tran), false),
            captured_us_per_tran: captured,
            groups,
            noisy,
        })
    }
}

impl Settings {
    /// "persistent" or "non-persistent", with where persistent requests were stored when
    /// the transport said.
    pub fn persistence(&self) -> String {
        match (self.persistent, &self.persistent_store) {
            (false, None) => "non-persistent".into(),
            // A broker that stores every message whatever the run asks (Kafka).
            (false, Some(store)) => format!("non-persistent asked; stored all the same: {store}"),
            (true, None) => "persistent".into(),
            (true, Some(store)) => format!("persistent, in {store}"),
        }
    }

    /// The run's settings echoed, with the queue manager's password replaced by `***`.
    fn of(cfg: &RunConfig, out: &Outcome) -> Settings {
        let (count, duration_s) = match cfg.length {
            RunLength::Count(n) => (Some(n), None),
            RunLength::Duration(d) => (None, Some(d.as_secs_f64())),
        };
        Settings {
            transport: cfg.endpoint.transport().into(),
            qmgr: cfg.endpoint.redacted(),
            profile: cfg.profile.clone(),
            request_queue: cfg.request_queue.clone(),
            reply_queue: match &cfg.reply_queue {
                ReplyQueue::Named(q) => Some(q.clone()),
                ReplyQueue::Direct => Some(crate::transport::DIRECT_REPLY_TO.to_string()),
                ReplyQueue::Temporary | ReplyQueue::PerRequest => None,
            },
            reply_path: cfg.reply_queue.path().to_string(),
            confirm_window: cfg.confirm_window,
            replicas: cfg.replicas,
            queue_type: cfg.queue_type,
            clear_reply_queue: cfg.clear_reply_queue,
            message_source: cfg.messages.source.clone(),
            messages_in_rotation: cfg.messages.bodies.len(),
            msg_bytes_min: cfg.messages.min_len(),
            msg_bytes_max: cfg.messages.max_len(),
            persistent: cfg.persistent,
            persistent_store: out.store.clone(),
            broker: out.broker.clone(),
            syncpoint: cfg.syncpoint,
            msgs_per_loop: cfg.msgs_per_loop,
            tasks: cfg.tasks,
            count,
            duration_s,
            wait_s: cfg.wait.as_secs_f64(),
            match_mode: cfg.match_mode,
            warmup: cfg.warmup,
            rate_limit_tps: cfg.rate,
            max_timeouts: cfg.max_timeouts,
            reconnect_for_s: cfg.reconnect_for.as_secs_f64(),
        }
    }
}

/// Why the run stopped early, when it did.
fn status_detail(cfg: &RunConfig, out: &Outcome) -> Option<String> {
    match out.status {
        Status::Completed => None,
        Status::TimedOut => Some(format!(
            "{} request(s) got no reply within {:?}",
            out.integrity.timed_out, cfg.wait
        )),
        Status::StoppedAfterTimeouts => Some(match cfg.max_timeouts {
            Some(_) => format!(
                "stopped after {} timeouts (--max-timeouts)",
                out.integrity.timed_out
            ),
            None => format!(
                "stopped after {} requests in a row got no reply within {:?}: is the flow running and consuming the request queue? (--max-timeouts N sets another limit)",
                crate::driver::TIMEOUTS_IN_A_ROW,
                cfg.wait
            ),
        }),
        Status::Interrupted => Some(format!(
            "interrupted by {}; figures cover the run up to then",
            crate::signals::interrupted_by()
        )),
        Status::Failed => out.error.clone(),
    }
}

fn format_utc(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

impl Report {
    /// The report of a run, whole: its figures with its CPU table (or the reason it is
    /// missing), its rounds, profile, and what is said of who served it.
    pub fn build(cfg: &RunConfig, m: Measured) -> Report {
        let mut r = Report::figures(
            cfg,
            m.outcome,
            m.app_cpu,
            m.app_cpu_source,
            m.table,
            m.accounting_error,
        );
        r.rounds_summary = RoundsSummary::of(&m.rounds);
        r.trend = trend::Trend::of(&m.rounds);
        r.rounds = m.rounds;
        match m.profile {
            Some(Ok(p)) => r.profile = Some(p),
            Some(Err(e)) => r.warn(format!("--profile: no profile: {e}")),
            None => {}
        }
        if let Some(why) = m.silence {
            let detail = r.status_detail.take().unwrap_or_default();
            r.status_detail = Some(format!("{detail}; {why}"));
        }
        r.hint_slow_round_trips(cfg);
        if let Some((serving, warnings)) = m.serving {
            for w in warnings {
                r.warn(w);
            }
            r.serving = Some(serving);
        }
        r
    }

    /// A warning of the run's, beside the accounting's.
    fn warn(&mut self, warning: String) {
        self.accounting
            .get_or_insert_with(Default::default)
            .warnings
            .push(warning);
    }

    /// The transport's word on a run whose round trips the measured CPU does not explain.
    fn hint_slow_round_trips(&mut self, cfg: &RunConfig) {
        let Some(p50) = self.round_trip_percentiles.iter().find(|p| p.pct == 50.0) else {
            return;
        };
        if let Some(hint) = cfg
            .endpoint
            .kind()
            .slow_round_trip_hint(cfg.persistent, p50.us)
        {
            self.warn(hint);
        }
    }

    /// The run's own figures from its outcome and CPU table, its warnings and capacity.
    fn figures(
        cfg: &RunConfig,
        out: &Outcome,
        app_cpu: Option<Duration>,
        app_cpu_source: String,
        table: Option<CpuTable>,
        accounting_error: Option<String>,
    ) -> Report {
        let transactions = out.integrity.matched;
        let elapsed_s = out.elapsed.as_secs_f64();
        let round_trip_us = Latency::of(&out.round_trip_ns);
        let per = |x: f64| (transactions > 0).then(|| x / transactions as f64);
        let app_s = app_cpu.map(|d| d.as_secs_f64());
        let status_detail = status_detail(cfg, out);
        Report {
            schema: SCHEMA.into(),
            tool: Tool {
                name: "oemputx".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            label: cfg.label.clone(),
            commit: history::this_commit(),
            status: out.status,
            status_detail,
            settings: Settings::of(cfg, out),
            reply_queue_cleared: out.cleared,
            start_utc: format_utc(&out.start),
            end_utc: format_utc(&out.end),
            transactions,
            elapsed_s,
            rate_tps: if elapsed_s > 0.0 {
                transactions as f64 / elapsed_s
            } else {
                0.0
            },
            round_trip_us,
            round_trip_percentiles: percentiles(&out.round_trip_ns),
            round_trip_histogram: encode_histogram(&out.round_trip_ns),
            app_cpu: AppCpu {
                total_s: app_s,
                us_per_tran: app_s.and_then(|s| per(s * 1e6)),
                pct_of_elapsed: app_s
                    .filter(|_| elapsed_s > 0.0)
                    .map(|s| 100.0 * s / elapsed_s),
                source: app_cpu_source,
            },
            integrity: out.integrity,
            per_task_transactions: out.per_task_matched.clone(),
            interruptions: out.interruptions.clone(),
            interruptions_total: crate::driver::InterruptionTotals::of(&out.interruptions),
            captured_us_per_tran: table.as_ref().map(|t| t.captured_us_per_tran),
            corrected_us_per_tran: table.as_ref().and_then(|t| t.corrected_us_per_tran),
            capture_ratio: table.as_ref().and_then(|t| t.capture_ratio.clone()),
            other_cpu: table.as_ref().map(|t| t.other_cpu.clone()),
            accounting: match (&table, accounting_error) {
                (Some(t), error) => Some(AccountingInfo {
                    error,
                    ..t.info.clone()
                }),
                (None, Some(error)) => Some(AccountingInfo {
                    error: Some(error),
                    ..Default::default()
                }),
                (None, None) => None,
            },
            processes: table
                .as_ref()
                .map(|t| t.processes.clone())
                .unwrap_or_default(),
            groups: table.map(|t| t.groups).unwrap_or_default(),
            rounds: Vec::new(),
            rounds_summary: None,
            trend: None,
            probe: out.probed,
            serving: None,
            capacity: None,
            profile: None,
            shard: cfg.shard.as_ref().map(|s| ShardInfo {
                run_id: s.run_id.clone(),
                index: s.index,
                of: s.of,
                measure: s.measure,
                settings_hash: s.settings_hash.clone(),
                start_at: cfg.start_at.map(|t| format_utc(&t)),
                late_for_start_s: out.late_for_start_s,
                // The hostname stands in only when it is a plain host name, as merge
                // requires of a shard's node (any bytes can be a machine's hostname).
                node: s.node.clone().or_else(|| {
                    Some(Host::current().hostname)
                        .filter(|h| crate::accounting::selector::plain_host_name(h))
                }),
            }),
            merged: None,
            host: Host::current(),
        }
        .with_run_warnings(cfg, out)
        .with_capacity()
        .priced(cfg.price_per_vcpu_hour)
    }

    /// Each group's cost per million messages at `price` per vCPU-hour, in the capacity.
    pub(crate) fn priced(mut self, price: Option<f64>) -> Report {
        self.capacity = self.capacity.map(|c| c.priced(price));
        self
    }

    /// The capacity estimate from the groups and the hosts' cores (a run with transactions).
    pub(crate) fn with_capacity(mut self) -> Report {
        if self.transactions == 0 {
            return self;
        }
        let groups: Vec<capacity::GroupCost> = self
            .groups
            .iter()
            .map(|g| capacity::GroupCost {
                name: g.name.clone(),
                host: g.host.clone(),
                us_per_tran: g.total_us_per_tran,
            })
            .collect();
        let ratio = |captured: f64, corrected: Option<f64>| {
            corrected.filter(|_| captured > 0.0).map(|c| c / captured)
        };
        let remote = self.accounting.as_ref().map_or(&[][..], |a| &a.hosts[..]);
        let hosts: Vec<capacity::HostFacts> = if remote.is_empty() {
            vec![capacity::HostFacts {
                name: "local".into(),
                cpus: if self.settings.transport == crate::transport::embedded::NAME {
                    crate::transport::embedded::FLOW_CPUS
                } else {
                    self.host.cpus
                },
                correction: self
                    .captured_us_per_tran
                    .and_then(|c| ratio(c, self.corrected_us_per_tran)),
            }]
        } else {
            remote
                .iter()
                .map(|h| capacity::HostFacts {
                    name: h.name.clone(),
                    cpus: h.cpus.unwrap_or(self.host.cpus),
                    correction: ratio(h.captured_us_per_tran, h.corrected_us_per_tran),
                })
                .collect()
        };
        let host_load = self.accounting.as_ref().and_then(|a| a.host_load.clone());
        let paced = self.settings.rate_limit_tps.is_some();
        self.capacity = capacity::estimate(&groups, &hosts, (self.rate_tps, paced))
            .map(|c| c.on_host(host_load.as_ref()));
        self
    }

    /// Warnings about the run itself, with the accounting's: a --rate it could not keep,
    /// replies that were all duplicates or strays (issue 19: both passed in silence).
    fn with_run_warnings(mut self, cfg: &RunConfig, out: &Outcome) -> Report {
        let mut warnings = Vec::new();
        if let (Some(at), Some(late)) = (cfg.start_at, out.late_for_start_s)
            && late > 0.0
        {
            warnings.push(format!(
                "the run was ready {late:.3} s after the start asked for ({}): its window began late, so it shares less of the common window with the other shards; give them more time with a later --start-at",
                format_utc(&at)
            ));
        }
        if let Some(asked) = cfg.rate
            && self.transactions > 0
            && self.rate_tps < 0.95 * asked
        {
            warnings.push(format!(
                "the run kept {:.0} of the {asked} requests/s asked (--rate): the flow or the driver could not go faster, so the round trips are measured from the intended send times and include the queueing",
                self.rate_tps
            ));
        }
        let i = &self.integrity;
        if i.received > 0 && i.matched == 0 {
            warnings.push(format!(
                "none of the {} replies received answered a request of this run ({} duplicates, {} unmatched, {} late): is the flow replying to another run, or echoing the wrong correlation id?",
                i.received, i.duplicates, i.unmatched, i.late
            ));
        } else if i.duplicates > 0 {
            warnings.push(format!(
                "{} duplicate replies for {} matched: the flow answered {} more than once, so the CPU per transaction includes work done twice (the run exits 1)",
                i.duplicates,
                i.matched,
                if i.duplicates >= i.matched {
                    "each request"
                } else {
                    "some requests"
                }
            ));
        }
        if !warnings.is_empty() {
            self.accounting
                .get_or_insert_with(AccountingInfo::default)
                .warnings
                .extend(warnings);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V2 encoding whose header says `payload`, `figures`, [low, high], with `body` after
    /// it; deflated as encode_histogram writes it when `deflate`.
    fn forged(
        payload: u32,
        figures: u32,
        (low, high): (i64, i64),
        body: &[u8],
        deflate: bool,
    ) -> String {
        use base64::Engine as _;
        use std::io::Write as _;
        let mut v2 = Vec::new();
        v2.extend(0x1c84_9303u32.to_be_bytes());
        v2.extend(payload.to_be_bytes());
        v2.extend(0u32.to_be_bytes());
        v2.extend(figures.to_be_bytes());
        v2.extend(low.to_be_bytes());
        v2.extend(high.to_be_bytes());
        v2.extend(1.0f64.to_be_bytes());
        v2.extend(body);
        let bytes = if deflate {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(&v2).expect("deflate");
            let packed = z.finish().expect("deflate");
            let mut out = 0x1c84_9304u32.to_be_bytes().to_vec();
            out.extend((packed.len() as u32).to_be_bytes());
            out.extend(packed);
            out
        } else {
            v2
        };
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn a_histogram_whose_counts_overflow_their_sum_is_refused_not_a_panic() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
            .expect("a histogram");
        for v in [1_000u64, 2_000, 3_000, 4_000, 5_000] {
            h.record_n(v, 1 << 62).expect("recorded");
        }
        let text = encode_histogram(&h).expect("encoded");
        let err = decode_histogram(&text).expect_err("refused");
        assert!(err.contains("more than any run makes"), "{err}");
        let mut fine = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
            .expect("a histogram");
        fine.record_n(1_000, 200).expect("recorded");
        let back = decode_histogram(&encode_histogram(&fine).expect("encoded")).expect("read");
        assert_eq!(back.len(), 200);
    }

    #[test]
    fn a_histogram_whose_header_lies_is_refused_before_anything_is_sized_by_it() {
        // What oemputx writes comes back.
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
            .expect("histogram");
        for v in [1_000u64, 2_000, 50_000, 7_000_000] {
            h.record(v).expect("record");
        }
        let back = decode_histogram(&encode_histogram(&h).expect("encode")).expect("decode");
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), h.max());
        // A header claiming 4 GB of counts, with none after it: refused, nothing allocated.
        for deflate in [false, true] {
            let e = decode_histogram(&forged(u32::MAX, 3, (1, 1 << 40), &[], deflate))
                .expect_err("lying length");
            assert!(e.contains("claims 4294967295 bytes"), "{e}");
        }
        // Five significant figures over the widest range would size ~100 MB of counts.
        let e = decode_histogram(&forged(0, 5, (1, i64::MAX / 2), &[], true)).expect_err("figures");
        assert!(e.contains("significant figures"), "{e}");
        let e = decode_histogram(&forged(0, 3, (0, 10), &[], false)).expect_err("range");
        assert!(e.contains("range"), "{e}");
        // A deflate bomb stops at the bound.
        let e = decode_histogram(&forged(0, 3, (1, 1 << 40), &vec![0u8; 4 << 20], true))
            .expect_err("bomb");
        assert!(e.contains("inflates to more than"), "{e}");
        assert!(decode_histogram("AAAA").is_err());
    }

    fn round(round: usize, flow: f64, db: f64) -> RoundRow {
        RoundRow {
            round,
            transactions: 1000,
            elapsed_s: 1.0,
            rate_tps: 1000.0,
            round_trip_us: Latency::default(),
            app_cpu_us_per_tran: None,
            captured_us_per_tran: Some(flow + db),
            corrected_us_per_tran: None,
            groups: vec![
                RoundGroup {
                    name: "FLOW".into(),
                    total_us_per_tran: flow,
                    cost: Default::default(),
                },
                RoundGroup {
                    name: "DB".into(),
                    total_us_per_tran: db,
                    cost: Default::default(),
                },
            ],
        }
    }

    #[test]
    fn noise_is_called_above_a_share_and_an_absolute_floor_both() {
        // DB at 0.01–0.02 µs/tran spreads 67 % and is nothing; FLOW within 1 %.
        let quiet = [
            round(1, 100.0, 0.01),
            round(2, 100.5, 0.02),
            round(3, 100.2, 0.015),
        ];
        let s = RoundsSummary::of(&quiet).expect("summary");
        assert!(s.noisy.is_none(), "{:?}", s.noisy);
        // FLOW 100 → 110 µs/tran: 10 %, and 10 µs.
        let loud = [
            round(1, 100.0, 0.01),
            round(2, 110.0, 0.02),
            round(3, 105.0, 0.015),
        ];
        let s = RoundsSummary::of(&loud).expect("summary");
        let n = s.noisy.expect("noisy");
        assert!(n.contains("spreads 9.5%"), "{n}");
    }

    /// Each plotted percentile is the sample of rank ceil(p/100 · n), the rank the table's
    /// p50 … p99.9 use: 20,000 samples 1 … 20,000 µs put p99.9 at 19,980, not 19,981.
    #[test]
    fn the_plotted_percentiles_agree_with_the_table_s() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("histogram");
        for v in 1..=20_000u64 {
            h.record(v * 1000).expect("record");
        }
        let table = Latency::of(&h);
        let plotted = |p: f64| {
            percentiles(&h)
                .iter()
                .find(|x| x.pct == p)
                .map(|x| x.us)
                .expect("plotted")
        };
        assert_eq!(plotted(99.9), table.p999);
        assert_eq!(plotted(99.0), table.p99);
        assert_eq!(plotted(50.0), table.p50);
        assert!(
            (table.p999 - 19_980.0).abs() <= 19_980.0 * 1e-3,
            "{}",
            table.p999
        );
    }
}
