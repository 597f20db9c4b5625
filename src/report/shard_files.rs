//! Reading a run's shards and CPU windows back for `oemputx merge`: each file parsed
//! straight from its bytes into its type in one pass, its schema tag checked, what the
//! merged report makes again dropped at once.

use super::Report;
use super::merge::{CpuWindow, Shard};
use super::saved::ReportFileError;
use std::path::Path;

/// A file read back typed, whose schema tag says what it is.
pub trait Tagged: serde::de::DeserializeOwned {
    fn schema(&self) -> &str;
}

impl Tagged for Report {
    fn schema(&self) -> &str {
        &self.schema
    }
}

impl Tagged for CpuWindow {
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// What a JSON file says it is, its other fields skipped unbuilt.
#[derive(serde::Deserialize)]
struct Tag {
    #[serde(default)]
    schema: Option<String>,
}

/// A JSON file as `T`, parsed straight from its bytes in one pass, and its schema checked.
/// Its bytes are dropped on return: merge holds one file's bytes at a time, beside the
/// typed shards. (A `serde_json::Value` of the whole file first, then converted, held
/// about 17 times the files' size.)
pub fn read<T: Tagged>(path: &Path, schemas: &[&str]) -> Result<T, ReportFileError> {
    let bytes = crate::files::read_regular(path, crate::files::MAX_REPORT_BYTES, "saved report")
        .map_err(|e| ReportFileError::Unreadable {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    // Its rounds and groups counted before any of it is built (a shard of 50,000 rounds was
    // read whole, where every other reader refuses past 1,000).
    if let Ok(text) = std::str::from_utf8(&bytes) {
        super::bounds::check(text, super::bounds::MAX_RUNS)
            .map_err(|stop| ReportFileError::past_bound(path, stop))?;
    }
    let corrupt = |why: String| ReportFileError::Corrupt {
        path: path.to_path_buf(),
        why,
    };
    let other_kind = |found: &str| {
        corrupt(format!(
            "its schema is '{found}', not {}",
            schemas.join(" or ")
        ))
    };
    match serde_json::from_slice::<T>(&bytes) {
        Ok(v) if schemas.contains(&v.schema()) => Ok(v),
        Ok(v) => Err(other_kind(v.schema())),
        // A file of another kind is named by its schema, not by the first field it lacks:
        // only then is its tag looked at, its other fields skipped unbuilt.
        Err(e) => match serde_json::from_slice::<Tag>(&bytes) {
            Ok(tag) if !tag.schema.as_deref().is_some_and(|f| schemas.contains(&f)) => {
                Err(other_kind(tag.schema.as_deref().unwrap_or("none")))
            }
            _ => Err(corrupt(e.to_string())),
        },
    }
}

/// A shard read for merging, without what the merged report makes again or leaves out (its
/// rounds, probe, serving and other CPU, its percentiles): dropped before the next shard is
/// read. The settings that may name a broker or a file are masked as a run masks them: a
/// shard edited by hand (or written by another tool) may carry a password, and merge
/// prints them in every output.
pub fn read_shard(path: &Path) -> Result<Shard, ReportFileError> {
    let mut report = read::<Report>(path, &[crate::report::SCHEMA])?;
    report.rounds = Vec::new();
    report.rounds_summary = None;
    report.probe = None;
    report.serving = None;
    report.other_cpu = None;
    report.capacity = None;
    report.round_trip_percentiles = Vec::new();
    let report = masked(report).map_err(|why| ReportFileError::Corrupt {
        path: path.to_path_buf(),
        why,
    })?;
    Ok(Shard {
        file: path.display().to_string(),
        report,
    })
}

/// `report` with every secret in any of its text masked: not only the settings that name a
/// broker — a password written into a queue name, a host name, a process name, a warning or
/// the status came out of merge unmasked in every output (issue 61, hostile pass). Every
/// string is walked once, through the report's own JSON form; the process rows, which can
/// be most of a shard, are masked in place instead, so that merge's memory stays a small
/// multiple of one shard's.
fn masked(mut report: Report) -> Result<Report, String> {
    let mut processes = std::mem::take(&mut report.processes);
    for p in &mut processes {
        for text in [&mut p.group, &mut p.host, &mut p.name] {
            let clean = crate::secret::scrub(text);
            if clean != *text {
                *text = clean;
            }
        }
    }
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                let clean = crate::secret::scrub(s);
                if clean != *s {
                    *s = clean;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            serde_json::Value::Object(o) => o.values_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(&report).map_err(|e| e.to_string())?;
    walk(&mut v);
    let mut report: Report = serde_json::from_value(v).map_err(|e| e.to_string())?;
    report.processes = processes;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed reader names a file of another kind by its schema, as the reader through a
    /// `serde_json::Value` did, not by the first field it lacks.
    #[test]
    fn a_file_of_another_kind_is_named_by_its_schema_and_broken_json_by_its_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |name: &str, body: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, body).expect("write");
            p
        };
        let why = |p: &Path| match read_shard(p) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{} was read as a shard", p.display()),
        };
        let window = write(
            "w.json",
            r#"{"schema":"oemputx.cpu-window/1","from_utc":"x","until_utc":"y","groups":[]}"#,
        );
        assert!(
            why(&window).contains("its schema is 'oemputx.cpu-window/1', not oemputx.report/"),
            "{}",
            why(&window)
        );
        let none = write("n.json", r#"{"transactions": 3}"#);
        assert!(
            why(&none).contains("its schema is 'none'"),
            "{}",
            why(&none)
        );
        let broken = write("b.json", r#"{"schema": "#);
        assert!(why(&broken).contains("EOF"), "{}", why(&broken));
    }
}
