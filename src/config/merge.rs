//! The options of `oemputx merge`, checked before any shard is read: the report files named
//! (a folder's `*.json` but latest.json), and outputs that can be written and that replace
//! none of them.

use super::formats::Exports;
use super::{ConfigError, RunOutputs, bad};
use std::path::{Path, PathBuf};

/// What `oemputx merge` asks for.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// The shards' reports, or folders that hold them.
    pub reports: Vec<PathBuf>,
    /// The shared processes' CPU window (`oemputx cpu --from … --until … --export-json`).
    pub cpu: Option<PathBuf>,
    /// The outputs asked for (a run's: JSON, TSV, HTML).
    pub exports: Exports,
    pub quiet: bool,
}

/// `merge`, checked: the files to read, where the merged report goes.
#[derive(Debug, Clone)]
pub struct MergeConfig {
    /// Every shard's report, in the order named (a folder's sorted by name).
    pub shards: Vec<PathBuf>,
    pub cpu: Option<PathBuf>,
    /// The merged report is written as a run's, never into the reports folder.
    pub outputs: RunOutputs,
    pub quiet: bool,
}

impl MergeOptions {
    pub fn build(&self) -> Result<MergeConfig, ConfigError> {
        let shards = files(&self.reports)?;
        // The shards in merge's own words; the CPU window with every other check.
        refuse_overwriting_inputs(&self.exports, &shards)?;
        let cpu: Vec<&Path> = self.cpu.as_deref().into_iter().collect();
        super::outputs::check(&self.exports.by_flag(), None, &cpu)?;
        Ok(MergeConfig {
            shards,
            cpu: self.cpu.clone(),
            outputs: RunOutputs {
                files: self.exports.clone(),
                delimiter: b',',
                ..RunOutputs::default()
            },
            quiet: self.quiet,
        })
    }
}

/// The report files named: each file, and every `*.json` of each folder (but latest.json,
/// the reports folder's copy of its newest).
fn files(named: &[PathBuf]) -> Result<Vec<PathBuf>, ConfigError> {
    let mut out = Vec::new();
    for p in named {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(p).map_err(|e| {
            bad(
                "REPORT",
                format!(
                    "{}: {e}; give readable shard reports or folders",
                    p.display()
                ),
            )
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
    }
    Ok(out)
}

/// An output that names one of the shards would replace it with the merged report: refused
/// before anything is read, in merge's own words.
fn refuse_overwriting_inputs(exports: &Exports, inputs: &[PathBuf]) -> Result<(), ConfigError> {
    let inputs: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    for (format, path) in exports.given() {
        if path == Path::new("-") {
            continue;
        }
        if std::fs::canonicalize(path).is_ok_and(|c| inputs.contains(&c)) {
            return Err(bad(
                format.flag(),
                format!(
                    "{} is one of the shards being merged: write the merged report to another file",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}
