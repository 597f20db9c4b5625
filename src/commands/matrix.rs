//! `oemputx matrix`: the CJMQ throughput table measured ([`crate::orchestrate::matrix`]),
//! then its files and text. A lost message, a failed cell or a matrix cut short fails it.

use crate::config::tools::MatrixConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Style};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx matrix`.
pub fn matrix(m: &MatrixConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let matrix = crate::orchestrate::matrix::run(m, &interrupt)?;
    // Files first: a full or closed stdout cannot lose them.
    let mut out = Outputs::new();
    out.artifact(&matrix, &m.options.exports, &Style::default());
    out.finish(Some(&crate::export::matrix::text(&matrix)))?;
    let lost: u64 = matrix.cells.iter().map(|c| c.lost).sum();
    let failed = matrix
        .cells
        .iter()
        .any(|c| c.note.as_deref().is_some_and(|n| n.starts_with("failed")));
    Ok(if matrix.interrupted {
        Exit::Interrupted
    } else if lost == 0 && !failed && matrix.partial.is_none() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}
