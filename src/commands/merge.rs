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

/// A JSON file read whole, as `T`, its schema checked first.
fn read<T: serde::de::DeserializeOwned>(
    path: &Path,
    schemas: &[&str],
) -> Result<T, ReportFileError> {
    let text = crate::files::read_text(path, crate::files::MAX_REPORT_BYTES, "saved report")
        .map_err(|e| ReportFileError::Unreadable {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ReportFileError::Corrupt {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    let found = value
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or("none");
    if !schemas.contains(&found) {
        return Err(ReportFileError::Corrupt {
            path: path.to_path_buf(),
            why: format!("its schema is '{found}', not {}", schemas.join(" or ")),
        });
    }
    serde_json::from_value(value).map_err(|e| ReportFileError::Corrupt {
        path: path.to_path_buf(),
        why: e.to_string(),
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
        .map(|p| {
            Ok(Shard {
                file: p.display().to_string(),
                report: read::<Report>(p, &[crate::report::SCHEMA])?,
            })
        })
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
