//! `oemputx gate --instructions --flow-a CMD --flow-b CMD -- RUN OPTIONS`: the deterministic
//! gate, on instruction counts instead of CPU time, counted under callgrind by
//! [`crate::orchestrate::gate_instr`] (the method is described there); the verdict written
//! and its exit code. Also `oemputx gate --rejudge VERDICT.json…`.

use crate::config::RunConfig;
use crate::config::gate::{GateConfig, InstrSides};
use crate::exit::Exit;
use crate::orchestrate::gate_instr::{self, Counted};
use crate::orchestrate::verdict::{verdict_exit, write_verdict};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx gate --instructions`: both flows now, flow A saved, or flow B against saved
/// counts.
pub(crate) fn gate_instructions(
    cfg: &GateConfig,
    sides: &InstrSides,
    base: &RunConfig,
    runs_count: (usize, u64),
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    match gate_instr::run(cfg, sides, base, runs_count, interrupt)? {
        Counted::Interrupted => Ok(Exit::Interrupted),
        Counted::Saved => Ok(Exit::Ok),
        Counted::Judged(outcome) => {
            crate::orchestrate::verdict::certain()?;
            write_verdict(cfg, &outcome)?;
            Ok(verdict_exit(cfg, &outcome))
        }
    }
}

/// `oemputx gate --rejudge VERDICT.json…`: each saved instruction gate judged again with
/// the current rule, as TSV on stdout.
pub fn rejudge(cfg: &GateConfig, files: &[PathBuf]) -> anyhow::Result<Exit> {
    let tsv = gate_instr::rejudge(cfg, files)?;
    crate::export::print_stdout(&tsv)?;
    Ok(Exit::Ok)
}
