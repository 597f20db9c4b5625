//! `oemputx merge`: the shards of a run driven from several hosts, read back
//! ([`crate::report::shard_files`]) and merged ([`crate::report::merge`]) into one report,
//! written as a run's is (text, JSON, TSV, HTML).

use crate::config::merge::MergeConfig;
use crate::exit::Exit;
use crate::report::merge::{CPU_WINDOW_SCHEMA, CpuWindow, merge as merge_shards};
use crate::report::saved::ReportFileError;
use crate::report::shard_files::{read, read_shard};

/// `oemputx merge REPORT…`.
pub fn merge(cfg: &MergeConfig) -> anyhow::Result<Exit> {
    let shards = cfg
        .shards
        .iter()
        .map(|p| read_shard(p))
        .collect::<Result<Vec<_>, ReportFileError>>()?;
    let cpu = cfg
        .cpu
        .as_deref()
        .map(|p| read::<CpuWindow>(p, &[CPU_WINDOW_SCHEMA]))
        .transpose()?;
    let merged = merge_shards(shards, cpu)?;
    crate::export::run_reports::write_reports(&merged, &cfg.outputs, cfg.quiet)?;
    Ok(Exit::Ok)
}
