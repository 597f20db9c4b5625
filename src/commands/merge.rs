//! `oemputx merge`: the shards of a run driven from several hosts, read back and merged
//! ([`crate::report::merge`]) into one report, written as a run's is (text, JSON, TSV,
//! HTML).

use crate::cli::MergeArgs;
use crate::exit::Exit;
use crate::report::Report;
use crate::report::merge::{CPU_WINDOW_SCHEMA, CpuWindow, Shard, merge as merge_shards};
use crate::report::saved::ReportFileError;
use std::path::{Path, PathBuf};

/// The report files named: each file, and every `*.json` of each folder (but latest.json,
/// the reports folder's copy of its newest).
fn files(named: &[PathBuf]) -> Result<Vec<PathBuf>, ReportFileError> {
    let mut out = Vec::new();
    for p in named {
        if p.is_dir() {
            let entries = std::fs::read_dir(p).map_err(|e| ReportFileError::Unreadable {
                path: p.clone(),
                why: e.to_string(),
            })?;
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|f| {
                    f.extension().is_some_and(|x| x == "json")
                        && f.file_name().is_some_and(|n| n != "latest.json")
                })
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

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
/// read.
pub fn read_shard(path: &Path) -> Result<Shard, ReportFileError> {
    let mut report = read::<Report>(path, &[crate::report::SCHEMA])?;
    report.rounds = Vec::new();
    report.rounds_summary = None;
    report.probe = None;
    report.serving = None;
    report.other_cpu = None;
    report.capacity = None;
    report.round_trip_percentiles = Vec::new();
    Ok(Shard {
        file: path.display().to_string(),
        report,
    })
}

/// An output that names one of the inputs would replace a shard with the merged report:
/// refused before anything is read (exit 2).
fn refuse_overwriting_inputs(
    args: &MergeArgs,
    inputs: &[PathBuf],
) -> Result<(), crate::config::ConfigError> {
    let inputs: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let exports = args.outputs.exports();
    for (format, path) in exports.given() {
        let flag = format.flag();
        if path == Path::new("-") {
            continue;
        }
        if std::fs::canonicalize(path).is_ok_and(|c| inputs.contains(&c)) {
            return Err(crate::config::ConfigError::BadValue {
                flag,
                why: format!(
                    "{} is one of the shards being merged: write the merged report to another file",
                    path.display()
                ),
            });
        }
    }
    Ok(())
}

/// `oemputx merge REPORT…`.
pub fn merge(args: &MergeArgs) -> anyhow::Result<Exit> {
    let paths = files(&args.reports)?;
    refuse_overwriting_inputs(args, &paths)?;
    let shards = paths
        .iter()
        .map(|p| read_shard(p))
        .collect::<Result<Vec<_>, ReportFileError>>()?;
    let cpu = args
        .cpu
        .as_deref()
        .map(|p| read::<CpuWindow>(p, &[CPU_WINDOW_SCHEMA]))
        .transpose()?;
    let merged = merge_shards(shards, cpu)?;
    let options = crate::config::RunOptions {
        outputs: crate::config::OutputOptions {
            export_json: args.outputs.export_json.clone(),
            export_tsv: args.outputs.export_tsv.clone(),
            export_html: args.outputs.export_html.clone(),
            no_save: true,
            quiet: args.quiet,
            ..crate::config::OutputOptions::default()
        },
        no_progress: true,
        ..crate::config::RunOptions::default()
    };
    super::run::write_reports(&options.build()?, &merged)?;
    Ok(Exit::Ok)
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
