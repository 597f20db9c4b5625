//! `oemputx matrix`: the CJMQ throughput table as one command. One sender sends `--count`
//! messages continuously to 1 or 5 receivers, 128 or 1024 bytes, non-persistent and
//! persistent; each cell reports messages received per second per receiver (the median
//! receiver) and the broker's CPU per message published and delivered. Each cell is an
//! `oemputx pubsub` run with one symbol that every receiver selects (the `topic` pattern:
//! every receiver gets every message). With `--rounds N` every cell is measured N times,
//! the cells in a balanced order each round, and reported as the median of its rounds with
//! its interval.

use crate::config::tools::MatrixConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Style};
use crate::orchestrate::pubsub::{broker, measure};
use crate::report::matrix::{Cell, Matrix, MatrixPartial, SCHEMA};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Run one cell; a broker without persistence gives an empty cell, not an error.
/// `None` when the cell was interrupted.
fn run_cell(
    m: &MatrixConfig,
    (persistent, size, receivers): (bool, usize, usize),
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<Option<Cell>> {
    let args = m.cell(persistent, size, receivers)?;
    let mut cell = Cell {
        persistent,
        msg_size: size,
        receivers,
        received_mps: None,
        publish_mps: None,
        broker_us_per_published: None,
        broker_us_per_delivered: None,
        lost: 0,
        note: None,
        spread: None,
    };
    let b = match broker(&args) {
        Ok(b) => b,
        Err(e) if persistent => {
            cell.note = Some(format!("{e:#}"));
            return Ok(Some(cell));
        }
        Err(e) => return Err(e),
    };
    b.prepare()?;
    // A cell that fails mid-matrix is a note in its place: the cells measured are kept.
    let r = match measure(&args, b, None, interrupt.clone()) {
        Ok(r) => r,
        Err(e) => {
            cell.note = Some(format!("failed: {e:#}"));
            return Ok(Some(cell));
        }
    };
    if r.interrupted {
        return Ok(None);
    }
    let first = |c: &Option<crate::pubsub::report::PerMessage>| {
        c.as_ref()
            .and_then(|c| c.groups.first())
            .map(|g| g.total_us_per_tran)
    };
    cell.received_mps = Some(r.subscriber_mps.median);
    cell.publish_mps = Some(r.publish_mps);
    cell.broker_us_per_published = first(&r.cpu_per_published);
    cell.broker_us_per_delivered = first(&r.cpu_per_delivered);
    cell.lost = r.lost + r.duplicates;
    Ok(Some(cell))
}

/// Every kind of cell prepared once before any is measured, so that what would fail at
/// the persistent cells (a missing JetStream stream, a missing exchange) is found before
/// minutes of measuring. A broker that has no persistence at all is no error: its
/// persistent cells stay empty.
fn preflight(m: &MatrixConfig, plan: &[(bool, usize, usize)]) -> anyhow::Result<()> {
    for persistent in [false, true] {
        let Some(&(p, size, receivers)) = plan.iter().find(|c| c.0 == persistent) else {
            continue;
        };
        let args = m.cell(p, size, receivers)?;
        let b = match broker(&args) {
            Ok(b) => b,
            Err(_) if p => continue,
            Err(e) => return Err(e),
        };
        b.prepare().map_err(|e| {
            anyhow::Error::new(e).context(format!(
                "the matrix's {} cells cannot run (checked before any cell is measured)",
                if p { "persistent" } else { "non-persistent" }
            ))
        })?;
    }
    Ok(())
}

/// The cells measured, round by round, and what stopped them early.
struct Measured {
    /// Each cell's rounds.
    cells: Vec<Vec<Cell>>,
    /// Cell measurements done (a cell in a round is one) and planned.
    done: usize,
    planned: usize,
    /// An error after which no cell was measured: the cells measured before it are kept.
    fault: Option<anyhow::Error>,
}

/// Every cell, `rounds` times, until done, interrupted, or an error that is not the cell's
/// own (a broker that stops answering, say): a cell that fails alone is a note in its place
/// and the matrix goes on.
fn measure_cells(
    m: &MatrixConfig,
    plan: &[(bool, usize, usize)],
    rounds: usize,
    interrupt: &Arc<AtomicBool>,
) -> Measured {
    // Each round runs the cells in a row of a Williams design: every cell follows every
    // other equally often, so the machine's drift and what one cell leaves behind (a
    // broker's queues, its page cache) fall on all of them alike.
    let orders = crate::experiment::order::williams(plan.len());
    let mut out = Measured {
        cells: vec![Vec::new(); plan.len()],
        done: 0,
        planned: plan.len() * rounds,
        fault: None,
    };
    let mut empty = vec![false; plan.len()];
    for round in 0..rounds {
        let order: Vec<usize> = if rounds == 1 {
            (0..plan.len()).collect()
        } else {
            orders[round % orders.len()].clone()
        };
        for i in order {
            // A mode the broker lacks (persistence) stays empty after its first try.
            if empty[i] {
                continue;
            }
            let (persistent, size, receivers) = plan[i];
            let kind = format!(
                "{}{size} bytes, {receivers} receiver(s), {}",
                if rounds > 1 {
                    format!("round {} of {rounds}: ", round + 1)
                } else {
                    String::new()
                },
                if persistent {
                    "persistent"
                } else {
                    "non-persistent"
                }
            );
            crate::say!("oemputx matrix: {kind}");
            if interrupt.load(Ordering::Relaxed) {
                return out;
            }
            let cell = match run_cell(m, plan[i], interrupt) {
                Ok(Some(cell)) => cell,
                Ok(None) => {
                    crate::say!(
                        "oemputx matrix: interrupted; that cell is left out, the cells measured are reported"
                    );
                    return out;
                }
                Err(e) => {
                    out.fault = Some(e.context(format!("measuring the cell {kind}")));
                    return out;
                }
            };
            empty[i] = cell.received_mps.is_none() && cell.note.is_some();
            out.cells[i].push(cell);
            out.done += 1;
        }
    }
    out
}

/// `oemputx matrix`.
pub fn matrix(m: &MatrixConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let plan = m.cells();
    preflight(m, &plan)?;
    let rounds = m.options.rounds.max(1);
    let mut measured = measure_cells(m, &plan, rounds, &interrupt);
    let partial = match measured.fault.take() {
        // Not one cell measured: nothing to keep, only what stopped it.
        Some(e) if measured.done == 0 => return Err(e),
        Some(e) => Some(MatrixPartial {
            cells_done: measured.done,
            cells_planned: measured.planned,
            // An error may quote a URL: no password goes into a report.
            reason: crate::secret::scrub(&format!("{e:#}")),
        }),
        None => None,
    };
    if let Some(p) = &partial {
        crate::say!(
            "oemputx matrix: {}; the report covers the cells measured",
            p.line()
        );
    }
    let interrupted = interrupt.load(Ordering::Relaxed);
    let cells = measured
        .cells
        .iter()
        .filter_map(|rounds| Cell::of_rounds(rounds))
        .collect();
    let matrix = Matrix {
        schema: SCHEMA,
        broker: crate::secret::scrub(&m.options.qmgr),
        count: m.options.count,
        rounds,
        pattern: m.options.pattern.clone(),
        interrupted,
        partial,
        cells,
    };
    // Files first: a full or closed stdout cannot lose them.
    write_exports(m, &matrix).finish(Some(&crate::export::matrix::text(&matrix)))?;
    let lost: u64 = matrix.cells.iter().map(|c| c.lost).sum();
    let failed = matrix
        .cells
        .iter()
        .any(|c| c.note.as_deref().is_some_and(|n| n.starts_with("failed")));
    Ok(if interrupted {
        Exit::Interrupted
    } else if lost == 0 && !failed && matrix.partial.is_none() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

/// Every file asked for; returns the failures, each named (one does not stop the others).
fn write_exports(mc: &MatrixConfig, matrix: &Matrix) -> Outputs {
    let mut out = Outputs::new();
    out.artifact(matrix, &mc.options.exports, &Style::default());
    out
}
