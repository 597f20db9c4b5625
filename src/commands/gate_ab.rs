//! `oemputx gate --flow-a CMD --flow-b CMD -- RUN OPTIONS`: A/B in one run, measured by
//! [`crate::orchestrate::ab`]; the verdict written and its exit code.

use crate::config::gate::{FlowPair, GateConfig};
use crate::exit::Exit;
use crate::interleave::End;
use crate::orchestrate::verdict::{verdict_exit, write_verdict};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx gate --flow-a … --flow-b … -- RUN OPTIONS`.
pub(crate) fn gate_ab(
    cfg: &GateConfig,
    pair: &FlowPair,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let Some((outcome, end)) = crate::orchestrate::ab::run(cfg, pair, interrupt)? else {
        return Ok(Exit::Interrupted);
    };
    write_verdict(cfg, &outcome)?;
    if end == End::Interrupted {
        return Ok(Exit::Interrupted);
    }
    Ok(verdict_exit(cfg, &outcome))
}
