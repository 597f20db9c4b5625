//! `oemputx gate --baseline FILE [--current REPORT | -- RUN OPTIONS]`: the CI regression
//! gate on cost per message against main's stored runs. [`crate::orchestrate::gate_stored`]
//! reads the baseline (and the current report, or measures one now) and judges each metric;
//! this writes the verdict in the formats asked for and exits with its code.

use crate::config::gate::{Current, GateConfig};
use crate::exit::Exit;
use crate::orchestrate::gate_stored::{self, Stored, WriteReports};
use crate::orchestrate::verdict::{certain, no_baseline, verdict_exit, write_verdict};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The stored-baseline gate: this run against main's history of runs (or, with fewer than
/// three, against the newest run's rounds, never calling a regression). `write` writes the
/// reports of a run measured now (the put/get run's own writing).
pub fn stored(
    cfg: &GateConfig,
    (baseline, current): (&Path, &Current),
    interrupt: Arc<AtomicBool>,
    write: WriteReports,
) -> anyhow::Result<Exit> {
    let judged = match gate_stored::run(cfg, baseline, current, interrupt, write)? {
        Stored::NoBaseline(msg) => return Ok(no_baseline(cfg, &msg)),
        Stored::Judged(j) => j,
    };
    certain()?;
    write_verdict(cfg, &judged.outcome)?;
    judged.print_after()?;
    Ok(verdict_exit(cfg, &judged.outcome))
}
