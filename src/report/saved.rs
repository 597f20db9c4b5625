//! Saved reports read back, typed: the narrow view of a report's JSON that `compare` and the
//! gate use, and the one place that maps a metric's name to its field.
//!
//! Reading through serde rather than by string keys means a renamed or missing field is an
//! error naming the field (exit 2), never an empty sample that would make the gate
//! "inconclusive" and let CI pass.

use super::SCHEMA;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A report that cannot be used: the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReportFileError {
    #[error(
        "cannot read report {path}: {why}; give the JSON a run wrote (--export-json, or reports/latest.json)"
    )]
    Unreadable { path: PathBuf, why: String },
    #[error(
        "{path} is not a JSON report ({why}); give the JSON a run wrote (--export-json, or reports/latest.json)"
    )]
    Corrupt { path: PathBuf, why: String },
    #[error(
        "{path} has schema '{found}', not '{SCHEMA}' (or the older oemputx.report/1): it was written by another tool or an incompatible oemputx"
    )]
    Schema { path: PathBuf, found: String },
    #[error(
        "{path} has no figure for metric '{metric}' ({field}): name a metric both reports have (a group, captured, corrected, rate or p99)"
    )]
    MissingMetric {
        path: PathBuf,
        metric: String,
        field: String,
    },
    #[error(
        "{path} is the report of a run that did not complete ({status}{detail}): its figures cover only part of the run and do not compare; measure again, or give the report of a completed run"
    )]
    NotCompleted {
        path: PathBuf,
        status: String,
        detail: String,
    },
    #[error(
        "{path} holds {found} {what}, more than oemputx reads ({max}: {why}); give a file oemputx wrote, or keep only the newest {max}"
    )]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        found: usize,
        max: usize,
        why: &'static str,
    },
    #[error("the runs differ in what matters, so their costs do not compare:\n{}\nRun them with the same settings, or pass --force to compare anyway", .0.join("\n"))]
    Differs(Vec<String>),
    #[error("{path} holds main's runs of other settings than this run's:\n{}\nKeep one history per setting: give --save-baseline another file, or remove this one to start anew", .diffs.join("\n"))]
    HistoryDiffers { path: PathBuf, diffs: Vec<String> },
    /// A signal ended the reading or the search (the exit is then 130: `exit_for_now`).
    #[error(
        "reading {path} (or searching it for steps) was interrupted by a signal; nothing was judged"
    )]
    Interrupted { path: PathBuf },
}

// The user's input (exit 2).
crate::usage_error!(ReportFileError);

impl ReportFileError {
    /// The refusal of `path`, whose count stopped at `stop` (a bound, or a signal).
    pub(crate) fn past_bound(path: &Path, stop: super::bounds::Stop) -> ReportFileError {
        match stop {
            super::bounds::Stop::Over((what, found, max, why)) => ReportFileError::TooLarge {
                path: path.to_path_buf(),
                what,
                found,
                max,
                why,
            },
            super::bounds::Stop::Interrupted => ReportFileError::Interrupted {
                path: path.to_path_buf(),
            },
        }
    }
}

/// The most rounds a saved report may hold: the most a run makes (`--rounds`).
pub const MAX_SAVED_ROUNDS: usize = crate::config::MAX_ROUNDS;

/// The settings whose difference makes two runs' costs incomparable.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedSettings {
    pub transport: String,
    pub message_source: String,
    pub msg_bytes_max: u64,
    pub tasks: u64,
    pub persistent: bool,
    pub syncpoint: bool,
    pub msgs_per_loop: u64,
    /// What else identifies the run on a pasted row (not compared: a run of 1,000 and one
    /// of 10,000 messages cost alike); absent in reports made before they were read.
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub duration_s: Option<f64>,
    #[serde(default)]
    pub warmup: u64,
    #[serde(default)]
    pub rate_limit_tps: Option<f64>,
    /// The store's replication (compared: a quorum queue's message costs more than a
    /// classic one's); absent in reports made before it was asked.
    #[serde(default)]
    pub queue_type: Option<crate::transport::QueueType>,
    #[serde(default)]
    pub replicas: Option<usize>,
}

/// A group's total in the whole run or in one round.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SavedGroup {
    pub name: String,
    pub total_us_per_tran: f64,
    /// Its cost beyond CPU (null figures in reports made before oemputx measured it).
    #[serde(flatten, default)]
    pub cost: crate::accounting::resources::GroupCost,
}

/// The latency percentile the gate can judge.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SavedLatency {
    pub p99: f64,
}

/// The figures of one round, or of a whole run.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SavedFigures {
    pub rate_tps: f64,
    pub round_trip_us: SavedLatency,
    pub captured_us_per_tran: Option<f64>,
    pub corrected_us_per_tran: Option<f64>,
    pub groups: Vec<SavedGroup>,
}

impl From<&super::Report> for SavedFigures {
    /// A run's whole-run figures, as a saved report would give them back.
    fn from(r: &super::Report) -> Self {
        SavedFigures {
            rate_tps: r.rate_tps,
            round_trip_us: SavedLatency {
                p99: r.round_trip_us.p99,
            },
            captured_us_per_tran: r.captured_us_per_tran,
            corrected_us_per_tran: r.corrected_us_per_tran,
            groups: r
                .groups
                .iter()
                .map(|g| SavedGroup {
                    name: g.name.clone(),
                    total_us_per_tran: g.total_us_per_tran,
                    cost: g.cost.clone(),
                })
                .collect(),
        }
    }
}

/// The part of a report that compare and the gate read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedReport {
    pub schema: String,
    pub settings: SavedSettings,
    /// The whole run's figures (the report's top level).
    #[serde(flatten)]
    pub whole: SavedFigures,
    pub rounds: Vec<SavedFigures>,
    /// The host's state over the run (reports made before it was recorded have none).
    #[serde(default)]
    pub accounting: Option<SavedAccounting>,
    #[serde(default)]
    pub label: String,
    /// The commit the run measured, when it was known.
    #[serde(default)]
    pub commit: Option<String>,
}

/// The part of a report's accounting the gate reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedAccounting {
    #[serde(default)]
    pub host_load: Option<SavedHostLoad>,
}

/// How busy the host was with other work over the run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedHostLoad {
    pub state: crate::accounting::host_load::HostState,
}

/// The largest figure a report can hold (µs/tran, µs, transactions a second): 10^12 µs is
/// eleven days. Above it a report is damaged or hand-made; its figures would print as
/// hundreds of digits and compare as nonsense.
pub const MAX_FIGURE: f64 = 1e12;

impl SavedFigures {
    /// Each figure with its name, for checking.
    fn named(&self) -> Vec<(String, f64)> {
        let mut v = vec![
            ("rate_tps".to_string(), self.rate_tps),
            ("round_trip_us.p99".to_string(), self.round_trip_us.p99),
        ];
        v.extend(
            [
                ("captured_us_per_tran", self.captured_us_per_tran),
                ("corrected_us_per_tran", self.corrected_us_per_tran),
            ]
            .into_iter()
            .filter_map(|(n, x)| x.map(|x| (n.to_string(), x))),
        );
        v.extend(
            self.groups
                .iter()
                .map(|g| (format!("group {}", g.name), g.total_us_per_tran)),
        );
        v
    }
}

impl SavedReport {
    /// Why the report's figures cannot be a run's, if they cannot: a negative, infinite or
    /// absurdly large figure anywhere (the gate and compare read the same checks).
    fn implausible(&self) -> Option<String> {
        // Group names head table rows, TSV columns, Markdown cells and CI annotations: one
        // with a control character, a newline or a workflow command came from an edited file
        // (oemputx writes only plain names), and is refused before it reaches any of them.
        let names = std::iter::once(&self.whole)
            .chain(&self.rounds)
            .flat_map(|f| f.groups.iter().map(|g| g.name.as_str()));
        if let Some(why) = names.into_iter().find_map(not_a_group_name) {
            return Some(format!(
                "{why}: the report is damaged or hand-edited, make it again"
            ));
        }
        // The commit heads a history's steps and fills a TSV column: oemputx writes only
        // a hexadecimal name (one with a line break forged lines of `history`'s text).
        if let Some(c) = self.commit.as_deref().filter(|c| commit_name(c).is_none()) {
            return Some(format!(
                "its commit {c:?} is not a commit's hexadecimal name, as oemputx writes: the report is damaged or hand-edited, make it again"
            ));
        }
        let rounds = self
            .rounds
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("round {}", i + 1), r));
        std::iter::once(("the whole run".to_string(), &self.whole))
            .chain(rounds)
            .find_map(|(place, f)| {
                f.named()
                    .into_iter()
                    .find(|(_, x)| !(x.is_finite() && (0.0..=MAX_FIGURE).contains(x)))
                    .map(|(name, x)| {
                        format!(
                            "{name} is {x:e} in {place}: a run's figures are never negative, infinite or above {MAX_FIGURE:e}; the report is damaged or hand-edited, make it again"
                        )
                    })
            })
    }
}

/// A commit as a report or history records it: a hexadecimal object name (abbreviated or
/// full, SHA-1 or SHA-256); anything else (an empty variable, a ref name) is no commit.
pub fn commit_name(s: &str) -> Option<String> {
    let s = s.trim();
    ((4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| s.to_ascii_lowercase())
}

/// Why `name`, read from a file as a group's, is not one oemputx writes (`None` when it is):
/// the reason names it with its control characters escaped.
pub(crate) fn not_a_group_name(name: &str) -> Option<String> {
    (!crate::accounting::selector::plain_name(name)).then(|| {
        format!(
            "group name {name:?} is not one oemputx writes (1 to 64 letters, digits, '_', '-' or '.')"
        )
    })
}

/// What can be gated or compared: a figure per round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// A group's total µs per transaction.
    Group(String),
    /// The groups' captured total µs per transaction.
    Captured,
    /// The captured total corrected by the capture ratio.
    Corrected,
    /// Transactions per second (higher is better).
    Rate,
    /// The 99th percentile round trip, µs.
    P99,
    /// A group's figure beyond CPU, `GROUP:NAME` (`QMGR:syncs`): NAME one of
    /// [`crate::accounting::resources::METRICS`].
    Cost { group: String, name: &'static str },
}

impl Metric {
    /// A metric by the name the gate file and `--metric` use; anything else is a group.
    pub fn named(name: &str) -> Metric {
        match name {
            "captured" => Metric::Captured,
            "corrected" => Metric::Corrected,
            "rate" => Metric::Rate,
            "p99" => Metric::P99,
            g => match g
                .rsplit_once(':')
                .and_then(|(group, m)| Some((group, cost_metric(m)?)))
            {
                Some((group, m)) => Metric::Cost {
                    group: group.to_string(),
                    name: m.name,
                },
                None => Metric::Group(g.to_string()),
            },
        }
    }

    /// The name `named` reads back.
    pub fn name(&self) -> String {
        match self {
            Metric::Group(g) => g.clone(),
            Metric::Captured => "captured".into(),
            Metric::Corrected => "corrected".into(),
            Metric::Rate => "rate".into(),
            Metric::P99 => "p99".into(),
            Metric::Cost { group, name } => format!("{group}:{name}"),
        }
    }

    /// The report field the metric is read from, for messages.
    pub fn field(&self) -> String {
        match self {
            Metric::Group(g) => format!("groups[name = {g}].total_us_per_tran"),
            Metric::Captured => "captured_us_per_tran".into(),
            Metric::Corrected => "corrected_us_per_tran".into(),
            Metric::Rate => "rate_tps".into(),
            Metric::P99 => "round_trip_us.p99".into(),
            Metric::Cost { group, name } => {
                format!("groups[name = {group}].{}", cost_field(name))
            }
        }
    }

    /// The metric's unit, as the gate's tables and exports name it.
    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Group(_) | Metric::Captured | Metric::Corrected => "us/tran",
            Metric::Rate => "tps",
            Metric::P99 => "us",
            Metric::Cost { name, .. } => match cost_metric(name).map(|m| m.unit) {
                Some(crate::accounting::resources::Unit::Bytes) => "bytes",
                Some(crate::accounting::resources::Unit::BytesPerTran) => "bytes/tran",
                _ => "calls/tran",
            },
        }
    }

    /// Whether a higher value is worse (cost, latency) rather than better (rate).
    pub(crate) fn higher_is_worse(&self) -> bool {
        !matches!(self, Metric::Rate)
    }

    /// The metric's value in one set of figures.
    pub fn of(&self, f: &SavedFigures) -> Option<f64> {
        match self {
            Metric::Group(g) => f
                .groups
                .iter()
                .find(|x| &x.name == g)
                .map(|x| x.total_us_per_tran),
            Metric::Captured => f.captured_us_per_tran,
            Metric::Corrected => f.corrected_us_per_tran,
            Metric::Rate => Some(f.rate_tps),
            Metric::P99 => Some(f.round_trip_us.p99),
            Metric::Cost { group, name } => f
                .groups
                .iter()
                .find(|x| &x.name == group)
                .and_then(|x| (cost_metric(name)?.get)(&x.cost)),
        }
    }
}

/// A metric beyond CPU by its name (`syncs`, `disk_write_bytes`, …).
pub fn cost_metric(name: &str) -> Option<&'static crate::accounting::resources::Metric> {
    crate::accounting::resources::METRICS
        .iter()
        .find(|m| m.name == name)
}

/// The JSON field a metric beyond CPU is read from (`syncs` → `syncs_per_tran`).
fn cost_field(name: &str) -> String {
    match cost_metric(name).map(|m| m.unit) {
        Some(crate::accounting::resources::Unit::Bytes) => name.to_string(),
        _ => format!("{name}_per_tran"),
    }
}

/// One saved report and where it came from.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    pub report: SavedReport,
}

impl Saved {
    /// Read and check a report file.
    pub fn load(path: &Path) -> Result<Saved, ReportFileError> {
        let text = crate::files::read_text(path, crate::files::MAX_REPORT_BYTES, "saved report")
            .map_err(|e| ReportFileError::Unreadable {
                path: path.to_path_buf(),
                why: e.to_string(),
            })?;
        // Its rounds and groups counted before any of it is built.
        super::bounds::check(&text, super::bounds::MAX_RUNS)
            .map_err(|stop| ReportFileError::past_bound(path, stop))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ReportFileError::Corrupt {
                path: path.to_path_buf(),
                why: e.to_string(),
            })?;
        Saved::from_json(path.to_path_buf(), json)
    }

    /// Check a report already parsed as JSON (the gate's current run, say).
    pub fn from_json(path: PathBuf, json: serde_json::Value) -> Result<Saved, ReportFileError> {
        // The schema first: a report of another version is named as such, not as corrupt.
        let found = json
            .get("schema")
            .and_then(|s| s.as_str())
            .unwrap_or("none");
        if !super::READABLE.contains(&found) {
            return Err(ReportFileError::Schema {
                path,
                found: found.to_string(),
            });
        }
        // A run that failed, timed out or was interrupted has figures for part of its
        // messages only: gating or comparing them reads a partial run as a whole one.
        // (Reports before the status field are of completed runs: others were not saved.)
        let status = json.get("status").and_then(|s| s.as_str());
        if let Some(status) = status.filter(|s| *s != "completed") {
            let detail = json
                .get("status_detail")
                .and_then(|d| d.as_str())
                // The detail is the file's: one line, as it was when written.
                .map(|d| format!(": {}", crate::terminal::for_terminal(d)))
                .unwrap_or_default();
            return Err(ReportFileError::NotCompleted {
                path,
                status: crate::terminal::for_terminal(&status.replace('_', " ")),
                detail,
            });
        }
        // Bounded before anything grows with it: the gate's bootstrap resamples every round
        // 10,000 times (50,000 rounds kept it busy past a minute).
        let rounds = json
            .get("rounds")
            .and_then(|r| r.as_array())
            .map_or(0, Vec::len);
        if rounds > MAX_SAVED_ROUNDS {
            return Err(ReportFileError::TooLarge {
                path,
                what: "rounds",
                found: rounds,
                max: MAX_SAVED_ROUNDS,
                why: "the most rounds a run makes (--rounds)",
            });
        }
        match serde_json::from_value::<SavedReport>(json) {
            Ok(report) => match report.implausible() {
                Some(why) => Err(ReportFileError::Corrupt { path, why }),
                None => Ok(Saved { path, report }),
            },
            Err(e) => Err(ReportFileError::Corrupt {
                path,
                why: e.to_string(),
            }),
        }
    }

    /// The file name, as a column heading.
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// Group names in the report's order.
    pub fn group_names(&self) -> Vec<String> {
        self.report
            .whole
            .groups
            .iter()
            .map(|g| g.name.clone())
            .collect()
    }

    /// A metric's value in each round (one value for a report without rounds); empty when
    /// the report has no such figure.
    pub fn samples(&self, metric: &Metric) -> Vec<f64> {
        if self.report.rounds.is_empty() {
            return metric.of(&self.report.whole).into_iter().collect();
        }
        self.report
            .rounds
            .iter()
            .filter_map(|r| metric.of(r))
            .collect()
    }

    /// The host's state over the run: quiet, busy or contended; None in reports made before
    /// oemputx recorded it.
    pub fn host_state(&self) -> Option<crate::accounting::host_load::HostState> {
        self.report
            .accounting
            .as_ref()
            .and_then(|a| a.host_load.as_ref())
            .map(|h| h.state)
    }

    /// A metric's value in every round, or an error naming the missing field.
    pub fn require(&self, metric: &Metric) -> Result<Vec<f64>, ReportFileError> {
        let v = self.samples(metric);
        let expected = self.report.rounds.len().max(1);
        if v.len() == expected {
            return Ok(v);
        }
        let name = metric.name();
        Err(ReportFileError::MissingMetric {
            path: self.path.clone(),
            metric: name,
            field: if v.is_empty() {
                metric.field()
            } else {
                format!("{} in {} of {expected} rounds", metric.field(), v.len())
            },
        })
    }
}

/// The settings in which two runs (each named) differ, one line each: what makes their
/// figures no comparison. The gate asks it of the run it is about to measure, before the
/// first message.
pub(crate) fn settings_differences(
    (a, a_name): (&SavedSettings, &str),
    (b, b_name): (&SavedSettings, &str),
) -> Vec<String> {
    let quoted = |s: &str| format!("\"{s}\"");
    fn store<T: ToString>(v: Option<T>) -> String {
        v.map_or("not asked".to_string(), |v| v.to_string())
    }
    // The cost per message moves with the rate (2.7× between 100 msg/s and unpaced on the
    // reference flow, docs/ladder.md): runs at two rates measure two different things.
    let rate = |r: Option<f64>| r.map_or("unpaced".to_string(), |r| format!("{r} msg/s (--rate)"));
    let pairs = [
        ("rate", rate(a.rate_limit_tps), rate(b.rate_limit_tps)),
        ("transport", quoted(&a.transport), quoted(&b.transport)),
        (
            "message",
            quoted(&a.message_source),
            quoted(&b.message_source),
        ),
        (
            "message size",
            a.msg_bytes_max.to_string(),
            b.msg_bytes_max.to_string(),
        ),
        ("tasks", a.tasks.to_string(), b.tasks.to_string()),
        (
            "persistence",
            a.persistent.to_string(),
            b.persistent.to_string(),
        ),
        (
            "syncpoint",
            a.syncpoint.to_string(),
            b.syncpoint.to_string(),
        ),
        (
            "messages per loop",
            a.msgs_per_loop.to_string(),
            b.msgs_per_loop.to_string(),
        ),
        ("queue type", store(a.queue_type), store(b.queue_type)),
        ("replicas", store(a.replicas), store(b.replicas)),
    ];
    pairs
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(what, x, y)| format!("  {what}: {x} in {a_name} but {y} in {b_name}"))
        .collect()
}

impl SavedSettings {
    /// The settings a run of `cfg` will report, known before it runs.
    pub(crate) fn planned(cfg: &crate::config::RunConfig) -> SavedSettings {
        SavedSettings {
            transport: cfg.endpoint.transport().to_string(),
            message_source: cfg.messages.source.clone(),
            msg_bytes_max: cfg.messages.max_len() as u64,
            tasks: cfg.tasks as u64,
            persistent: cfg.persistent,
            syncpoint: cfg.syncpoint,
            msgs_per_loop: cfg.msgs_per_loop as u64,
            // The gate compares none of these; it reads them from the reports.
            count: None,
            duration_s: None,
            warmup: 0,
            // This one it does, before measuring: a baseline paced at one rate gates runs
            // at that rate only.
            rate_limit_tps: cfg.rate,
            queue_type: cfg.queue_type,
            replicas: cfg.replicas,
        }
    }
}

/// What differs between `base` and `other` in what matters, one line each; `groups` adds the
/// set of group names (the gate's rule).
pub(crate) fn differences(base: &Saved, other: &Saved, groups: bool) -> Vec<String> {
    let mut out = settings_differences(
        (&base.report.settings, &base.name()),
        (&other.report.settings, &other.name()),
    );
    if groups {
        let (mut a, mut b) = (base.group_names(), other.group_names());
        a.sort();
        b.sort();
        if a != b {
            out.push(format!(
                "  groups: {} in {} but {} in {}",
                a.join(","),
                base.name(),
                b.join(","),
                other.name()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(settings_tasks: u64) -> serde_json::Value {
        let figures = json!({
            "rate_tps": 100.0, "round_trip_us": {"p99": 10.0},
            "captured_us_per_tran": 5.0, "corrected_us_per_tran": null,
            "groups": [{"name": "FLOW", "total_us_per_tran": 4.0}]
        });
        let mut r = figures.clone();
        r["schema"] = json!(SCHEMA);
        r["settings"] = json!({"transport": "amqp", "message_source": "m", "msg_bytes_max": 630,
            "tasks": settings_tasks, "persistent": false, "syncpoint": false, "msgs_per_loop": 1});
        r["rounds"] = json!([figures.clone(), figures]);
        r
    }

    #[test]
    fn metrics_come_from_their_fields_per_round() {
        let s = Saved::from_json("r.json".into(), report(1)).expect("valid");
        assert_eq!(s.samples(&Metric::named("FLOW")), [4.0, 4.0]);
        assert_eq!(s.samples(&Metric::Captured), [5.0, 5.0]);
        assert_eq!(s.samples(&Metric::Rate), [100.0, 100.0]);
        assert_eq!(s.samples(&Metric::P99), [10.0, 10.0]);
        assert!(s.samples(&Metric::Corrected).is_empty());
    }

    #[test]
    fn a_renamed_field_is_an_error_naming_it_not_an_empty_sample() {
        let mut r = report(1);
        let groups = r["groups"].clone();
        r.as_object_mut().expect("object").remove("groups");
        r["process_groups"] = groups;
        let err = Saved::from_json("r.json".into(), r).expect_err("missing field");
        assert!(err.to_string().contains("groups"), "{err}");
    }

    #[test]
    fn a_metric_missing_from_a_report_is_named() {
        let s = Saved::from_json("r.json".into(), report(1)).expect("valid");
        let err = s.require(&Metric::Corrected).expect_err("no corrected");
        assert!(err.to_string().contains("corrected_us_per_tran"), "{err}");
        let err = s.require(&Metric::named("DB")).expect_err("no DB group");
        assert!(err.to_string().contains("DB"), "{err}");
    }

    #[test]
    fn another_schema_is_refused_by_name() {
        let mut r = report(1);
        r["schema"] = json!("oemputx.report/0");
        let err = Saved::from_json("r.json".into(), r).expect_err("schema");
        assert!(matches!(err, ReportFileError::Schema { .. }));
    }

    #[test]
    fn the_report_of_a_run_that_did_not_complete_is_refused() {
        let mut r = report(1);
        r["status"] = json!("completed");
        assert!(Saved::from_json("ok.json".into(), r.clone()).is_ok());
        r["status"] = json!("stopped_after_timeouts");
        r["status_detail"] = json!("5 timeouts in a row");
        let err = Saved::from_json("cut.json".into(), r).expect_err("not completed");
        assert!(matches!(err, ReportFileError::NotCompleted { .. }));
        let text = err.to_string();
        assert!(
            text.contains("cut.json")
                && text.contains("stopped after timeouts: 5 timeouts in a row"),
            "{text}"
        );
    }

    #[test]
    fn negative_infinite_or_absurd_figures_are_a_damaged_report_for_gate_and_compare_alike() {
        for (field, bad) in [
            ("/rounds/1/groups/0/total_us_per_tran", json!(-4.0)),
            ("/captured_us_per_tran", json!(1e308)),
            ("/rounds/0/rate_tps", json!(2e12)),
        ] {
            let mut r = report(1);
            *r.pointer_mut(field).expect("field") = bad.clone();
            let err = Saved::from_json("d.json".into(), r).expect_err(field);
            let text = err.to_string();
            assert!(matches!(err, ReportFileError::Corrupt { .. }), "{text}");
            assert!(
                text.contains("damaged") && text.len() < 400,
                "{field}: {text}"
            );
        }
        let mut r = report(1);
        r["rounds"][0]["groups"][0]["total_us_per_tran"] = json!(0.0);
        assert!(
            Saved::from_json("zero.json".into(), r).is_ok(),
            "0 is a figure"
        );
    }

    #[test]
    fn runs_that_differ_in_what_matters_are_listed() {
        let a = Saved::from_json("a.json".into(), report(1)).expect("valid");
        let b = Saved::from_json("b.json".into(), report(4)).expect("valid");
        assert_eq!(
            differences(&a, &b, false),
            ["  tasks: 1 in a.json but 4 in b.json"]
        );
        assert!(differences(&a, &a, true).is_empty());
        // Paced at 500 msg/s against unpaced: the cost per message moves with the rate.
        let mut paced = report(1);
        paced["settings"]["rate_limit_tps"] = json!(500.0);
        let c = Saved::from_json("c.json".into(), paced).expect("valid");
        assert_eq!(
            differences(&a, &c, false),
            ["  rate: unpaced in a.json but 500 msg/s (--rate) in c.json"]
        );
    }
}
