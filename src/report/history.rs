//! A stored CPU-time baseline as a *history* of main's runs (`oemputx.history/1`): each run
//! of main with `--save-baseline FILE` appends its report, the oldest dropped beyond
//! [`MAX_RUNS`], so that a branch is judged against how far main's own runs spread —
//! their drift from run to run included — rather than against one run's rounds
//! ([`crate::gate::history`] has the rule). A plain saved report (`oemputx.report/2`) reads
//! as a history of one run, and appending to one turns it into a history.
//!
//! Each run appended records the commit it measured and when it was saved (`commit`,
//! `saved_utc` beside its report's fields; [`stamp`]), so that a step in the history
//! names the commit that made it. Histories saved before have neither: their commits read
//! as unknown.

use super::saved::{Metric, ReportFileError, Saved, differences};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The JSON schema tag of a history file.
pub const HISTORY_SCHEMA: &str = "oemputx.history/1";
/// The most runs a history keeps: a month of daily runs on main; older runs describe a
/// machine and a code base that may have moved on.
pub const MAX_RUNS: usize = super::bounds::MAX_RUNS;

/// The file as written.
#[derive(Debug, Serialize)]
struct HistoryFile {
    schema: String,
    /// Main's runs' reports, oldest first.
    runs: Vec<serde_json::Value>,
}

/// What tells a history from one saved report, and a history's runs; anything else in
/// the file is skipped unbuilt.
#[derive(Deserialize)]
struct Probe {
    schema: Option<serde_json::Value>,
    runs: Option<serde_json::Value>,
}

/// Main's runs, read back.
#[derive(Debug, Clone)]
pub struct History {
    pub path: PathBuf,
    /// Oldest first; never empty.
    pub runs: Vec<Saved>,
    /// Each run's start (UTC), as its report gives it.
    pub started: Vec<String>,
    /// Each run's commit, when it was recorded.
    pub commits: Vec<Option<String>>,
    raw: Vec<serde_json::Value>,
}

impl History {
    /// Read a history, or a single saved report as a history of one run.
    pub fn load(path: &Path) -> Result<History, ReportFileError> {
        let text = crate::files::read_text(path, crate::files::MAX_REPORT_BYTES, "saved report")
            .map_err(|e| ReportFileError::Unreadable {
                path: path.to_path_buf(),
                why: e.to_string(),
            })?;
        // Its runs, rounds and groups counted before any of it is built.
        super::bounds::check(&text, MAX_RUNS)
            .map_err(|stop| ReportFileError::past_bound(path, stop))?;
        let corrupt = |e: serde_json::Error| ReportFileError::Corrupt {
            path: path.to_path_buf(),
            why: e.to_string(),
        };
        // A history's runs parsed straight from the text, in one pass: parsed as a whole
        // first and then converted, a history of thousands of groups spent a third of a
        // second where no signal could end it (over a second at load 4).
        let probe: Probe = serde_json::from_str(&text).map_err(corrupt)?;
        let raw = match probe {
            Probe {
                schema: Some(serde_json::Value::String(s)),
                runs: Some(serde_json::Value::Array(runs)),
            } if s == HISTORY_SCHEMA => runs,
            _ if crate::signals::interrupted() => {
                return Err(ReportFileError::Interrupted {
                    path: path.to_path_buf(),
                });
            }
            // One saved report stands for a history of one run.
            _ => vec![serde_json::from_str(&text).map_err(corrupt)?],
        };
        History::of(path, raw)
    }

    fn of(path: &Path, raw: Vec<serde_json::Value>) -> Result<History, ReportFileError> {
        if raw.is_empty() {
            return Err(ReportFileError::Corrupt {
                path: path.to_path_buf(),
                why: "the history holds no runs".into(),
            });
        }
        // Bounded before anything grows with it: the change-point search is cubic in the
        // runs and its matrices quadratic (16,000 runs aborted the gate, 1,000 kept it busy
        // past 100 s); oemputx itself never keeps more.
        if raw.len() > MAX_RUNS {
            return Err(ReportFileError::TooLarge {
                path: path.to_path_buf(),
                what: "runs",
                found: raw.len(),
                max: MAX_RUNS,
                why: "the most a history keeps",
            });
        }
        let n = raw.len();
        let mut runs = Vec::with_capacity(n);
        let mut started = Vec::with_capacity(n);
        let mut commits = Vec::with_capacity(n);
        for (i, j) in raw.iter().enumerate() {
            // Each run's report is built whole: a history of thousands of groups takes a
            // second and more at load, and a signal must end it (issue 61).
            if crate::signals::interrupted() {
                return Err(ReportFileError::Interrupted {
                    path: path.to_path_buf(),
                });
            }
            // Each run is named FILE#i in errors, FILE alone when it is the only one.
            let name = if n == 1 {
                path.to_path_buf()
            } else {
                PathBuf::from(format!("{}#{}", path.display(), i + 1))
            };
            commits.push(match j.get("commit") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(c)) => Some(c.clone()),
                Some(other) => {
                    return Err(ReportFileError::Corrupt {
                        path: name,
                        why: format!("its commit is {other}, not a string or null"),
                    });
                }
            });
            // The start is printed beside each step: only a time oemputx wrote (an edited
            // one with a line break forged lines of the history's text and the gate's).
            let start = j.get("start_utc").and_then(|s| s.as_str());
            if let Some(s) = start.filter(|s| chrono::DateTime::parse_from_rfc3339(s).is_err()) {
                return Err(ReportFileError::Corrupt {
                    path: name,
                    why: format!("its start_utc {s:?} is not an RFC 3339 time, as oemputx writes"),
                });
            }
            runs.push(Saved::from_json(name, j.clone())?);
            started.push(start.unwrap_or("?").to_string());
        }
        Ok(History {
            path: path.to_path_buf(),
            runs,
            started,
            commits,
            raw,
        })
    }

    /// Each run's figure for a metric, oldest first: the median of its rounds.
    pub fn figures(&self, metric: &Metric) -> Result<Vec<f64>, ReportFileError> {
        self.runs
            .iter()
            .map(|r| Ok(crate::stats::median(&r.require(metric)?).unwrap_or(f64::NAN)))
            .collect()
    }

    /// The newest run: the one whose settings and groups a run is checked against.
    pub fn latest(&self) -> &Saved {
        // `of` refuses an empty history.
        &self.runs[self.runs.len() - 1]
    }

    /// This history with `report` appended (the oldest dropped beyond [`MAX_RUNS`]), as the
    /// JSON to write; a report of other settings or groups than the newest run's is refused.
    pub fn appended(&self, report: serde_json::Value) -> Result<String, ReportFileError> {
        let new = Saved::from_json(PathBuf::from("this run"), report.clone())?;
        let diffs = differences(self.latest(), &new, true);
        if !diffs.is_empty() {
            return Err(ReportFileError::HistoryDiffers {
                path: self.path.clone(),
                diffs,
            });
        }
        let mut runs = self.raw.clone();
        runs.push(report);
        let drop = runs.len().saturating_sub(MAX_RUNS);
        runs.drain(..drop);
        encode(runs)
    }

    /// A new history of one run.
    pub fn first(report: serde_json::Value) -> Result<String, ReportFileError> {
        Saved::from_json(PathBuf::from("this run"), report.clone())?;
        encode(vec![report])
    }

    /// How the baseline is named in a verdict.
    pub fn name(&self) -> String {
        let file = self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match self.runs.len() {
            1 => format!("{file} (1 run of main, {})", self.started[0]),
            n => format!(
                "{file} ({n} runs of main, {} to {})",
                self.started[0],
                self.started[n - 1]
            ),
        }
    }
}

/// Where a run's commit comes from, first found first: CI's own variables, then the
/// checkout the run was made in.
pub const COMMIT_VARIABLES: [&str; 2] = ["GITHUB_SHA", "CI_COMMIT_SHA"];

pub use super::saved::commit_name;

/// The commit a run measured: the first of [`COMMIT_VARIABLES`] that names one (`var`
/// reads the environment), else what `git` gives (`git rev-parse HEAD` in the run's
/// directory), else None.
pub(crate) fn commit_of(
    var: impl Fn(&str) -> Option<String>,
    git: impl FnOnce() -> Option<String>,
) -> Option<String> {
    COMMIT_VARIABLES
        .iter()
        .find_map(|v| var(v).as_deref().and_then(commit_name))
        .or_else(|| git().as_deref().and_then(commit_name))
}

/// The commit a run measured: CI's variable, else the checkout's HEAD (`git rev-parse HEAD`
/// in the current directory), else None — no git, or not a repository. Asked once per
/// process (it does not change while oemputx runs), so that a run's report — built after
/// a Ctrl-C too — waits for no `git` on a loaded host: `commands::run` asks before the run.
pub(crate) fn this_commit() -> Option<String> {
    static COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    COMMIT.get_or_init(ask_commit).clone()
}

fn ask_commit() -> Option<String> {
    commit_of(
        |k| std::env::var(k).ok(),
        || {
            let out = std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        },
    )
}

/// A run's report as a history keeps it: with the commit it measured (null when unknown)
/// and when it was saved.
pub fn stamp(
    mut report: serde_json::Value,
    commit: Option<String>,
    saved_utc: &str,
) -> serde_json::Value {
    if let Some(o) = report.as_object_mut() {
        o.insert("commit".into(), commit.into());
        o.insert("saved_utc".into(), saved_utc.into());
    }
    report
}

fn encode(runs: Vec<serde_json::Value>) -> Result<String, ReportFileError> {
    let file = HistoryFile {
        schema: HISTORY_SCHEMA.to_string(),
        runs,
    };
    serde_json::to_string_pretty(&file)
        .map(|s| s + "\n")
        .map_err(|e| ReportFileError::Corrupt {
            path: PathBuf::from("this run"),
            why: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(flow: f64, tasks: u64) -> serde_json::Value {
        let figures = serde_json::json!({
            "rate_tps": 1000.0,
            "round_trip_us": {"p99": 900.0},
            "captured_us_per_tran": flow + 40.0,
            "corrected_us_per_tran": null,
            "groups": [{"name": "FLOW", "total_us_per_tran": flow},
                       {"name": "DRIVER", "total_us_per_tran": 40.0}],
        });
        let mut j = figures.clone();
        j["schema"] = "oemputx.report/2".into();
        j["start_utc"] = format!("2026-12-02T0{}:00:00Z", flow as u64 % 10).into();
        j["settings"] = serde_json::json!({
            "transport": "amqp", "message_source": "default", "msg_bytes_max": 630,
            "tasks": tasks, "persistent": false, "syncpoint": false, "msgs_per_loop": 1,
        });
        j["rounds"] = serde_json::json!([figures.clone(), figures]);
        j
    }

    #[test]
    fn a_report_reads_as_one_run_and_appending_makes_a_bounded_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("base.json");
        std::fs::write(&path, report(101.0, 2).to_string()).expect("write");
        let h = History::load(&path).expect("a report is a history of one");
        assert_eq!(h.runs.len(), 1);
        assert!(h.name().contains("1 run of main"), "{}", h.name());
        let mut text = h.appended(report(102.0, 2)).expect("append");
        for i in 0..MAX_RUNS + 5 {
            std::fs::write(&path, &text).expect("write");
            let h = History::load(&path).expect("history");
            assert_eq!(h.runs.len(), (i + 2).min(MAX_RUNS));
            text = h.appended(report(103.0 + i as f64, 2)).expect("append");
        }
        let h = History::load(&path).expect("history");
        assert_eq!(h.runs.len(), MAX_RUNS);
        // The oldest went first: the newest is the last appended before the final one.
        let flow = h
            .latest()
            .samples(&crate::report::saved::Metric::named("FLOW"));
        assert_eq!(flow, [103.0 + (MAX_RUNS + 3) as f64; 2]);
        assert!(h.runs[1].path.display().to_string().ends_with("#2"));
    }

    #[test]
    fn each_run_records_its_commit_and_an_old_history_reads_without_them() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let git = || Some("0123456789abcdef0123456789abcdef01234567\n".to_string());
        assert_eq!(
            commit_of(
                env(&[("GITHUB_SHA", "AbC1234def"), ("CI_COMMIT_SHA", "fff0")]),
                git
            ),
            Some("abc1234def".into())
        );
        assert_eq!(
            commit_of(env(&[("GITHUB_SHA", ""), ("CI_COMMIT_SHA", "fff0")]), git),
            Some("fff0".into())
        );
        assert_eq!(
            commit_of(env(&[]), git).as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
        assert_eq!(commit_of(env(&[("GITHUB_SHA", "main")]), || None), None);

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("base.json");
        // Saved before commits were recorded: no commit field at all.
        std::fs::write(&path, History::first(report(101.0, 2)).expect("first")).expect("write");
        let old = History::load(&path).expect("an old history");
        assert_eq!(old.commits, [None]);
        let run = stamp(
            report(102.0, 2),
            Some("abc1234".into()),
            "2026-12-03T10:00:00Z",
        );
        std::fs::write(&path, old.appended(run).expect("append")).expect("write");
        let h = History::load(&path).expect("history");
        assert_eq!(h.commits, [None, Some("abc1234".to_string())]);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.contains("\"saved_utc\": \"2026-12-03T10:00:00Z\""),
            "{text}"
        );
        // A commit that is not a string is a damaged file, named.
        let bad = text.replace("\"commit\": \"abc1234\"", "\"commit\": 7");
        std::fs::write(&path, bad).expect("write");
        let err = History::load(&path).expect_err("commit 7");
        assert!(
            err.to_string().contains("#2") && err.to_string().contains("commit is 7"),
            "{err}"
        );
    }

    #[test]
    fn a_run_of_other_settings_is_not_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("base.json");
        std::fs::write(&path, History::first(report(101.0, 2)).expect("first")).expect("write");
        let h = History::load(&path).expect("history");
        match h.appended(report(101.0, 4)) {
            Err(ReportFileError::HistoryDiffers { diffs, .. }) => {
                assert!(diffs.iter().any(|d| d.contains("tasks")), "{diffs:?}");
            }
            other => panic!("{other:?}"),
        }
        // An empty history is damaged, not a pass.
        std::fs::write(&path, r#"{"schema":"oemputx.history/1","runs":[]}"#).expect("write");
        assert!(matches!(
            History::load(&path),
            Err(ReportFileError::Corrupt { .. })
        ));
    }
}
