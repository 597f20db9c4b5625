//! `oemputx matrix`: the CJMQ throughput table measured. One sender sends `--count`
//! messages continuously to 1 or 5 receivers, 128 or 1024 bytes, non-persistent and
//! persistent; each cell reports messages received per second per receiver (the median
//! receiver) and the broker's CPU per message published and delivered. Each cell is an
//! `oemputx pubsub` window ([`super::pubsub::measure`]) with one symbol that every receiver
//! selects (the `topic` pattern: every receiver gets every message). With `--rounds N` every
//! cell is measured N times, the cells in a balanced order each round, and reported as the
//! median of its rounds with its interval.

use super::pubsub::measure;
use crate::config::pubsub::PubsubConfig;
use crate::config::tools::MatrixConfig;
use crate::pubsub::Broker;
use crate::report::matrix::{Cell, Matrix, MatrixPartial, SCHEMA};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Builds a cell's broker: the one its URL names ([`super::pubsub::broker`]); a test hands
/// in the in-memory double.
type MakeBroker<'a> = &'a dyn Fn(&PubsubConfig) -> anyhow::Result<Arc<dyn Broker>>;

/// The matrix measured on the broker `--qmgr` names: checked before any cell, then every
/// cell, round by round. An error before the first cell was measured is the run's; one
/// after it leaves a partial matrix of the cells measured.
pub fn run(m: &MatrixConfig, interrupt: &Arc<AtomicBool>) -> anyhow::Result<Matrix> {
    run_with(m, interrupt, &super::pubsub::broker)
}

/// [`run`], each cell's broker built by `make`.
fn run_with(
    m: &MatrixConfig,
    interrupt: &Arc<AtomicBool>,
    make: MakeBroker,
) -> anyhow::Result<Matrix> {
    let plan = m.cells();
    preflight(m, &plan, make)?;
    let rounds = m.options.rounds.max(1);
    let mut measured = measure_cells(m, (&plan, rounds), interrupt, make);
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
    let cells = measured
        .cells
        .iter()
        .filter_map(|rounds| Cell::of_rounds(rounds))
        .collect();
    Ok(Matrix {
        schema: SCHEMA,
        broker: crate::secret::scrub(&m.options.qmgr),
        count: m.options.count,
        rounds,
        pattern: m.options.pattern.clone(),
        interrupted: interrupt.load(Ordering::Relaxed),
        partial,
        cells,
    })
}

/// Run one cell; a broker without persistence gives an empty cell, not an error.
/// `None` when the cell was interrupted.
fn run_cell(
    m: &MatrixConfig,
    (persistent, size, receivers): (bool, usize, usize),
    interrupt: &Arc<AtomicBool>,
    make: MakeBroker,
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
    let b = match make(&args) {
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
fn preflight(
    m: &MatrixConfig,
    plan: &[(bool, usize, usize)],
    make: MakeBroker,
) -> anyhow::Result<()> {
    for persistent in [false, true] {
        let Some(&(p, size, receivers)) = plan.iter().find(|c| c.0 == persistent) else {
            continue;
        };
        let args = m.cell(p, size, receivers)?;
        let b = match make(&args) {
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

/// What the progress line calls a cell: `round 2 of 3: 128 bytes, 5 receiver(s), persistent`.
fn cell_kind(
    (persistent, size, receivers): (bool, usize, usize),
    round: usize,
    rounds: usize,
) -> String {
    format!(
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
    )
}

/// Every cell of `plan`, `rounds` times, until done, interrupted, or an error that is not
/// the cell's own (a broker that stops answering, say): a cell that fails alone is a note
/// in its place and the matrix goes on.
fn measure_cells(
    m: &MatrixConfig,
    (plan, rounds): (&[(bool, usize, usize)], usize),
    interrupt: &Arc<AtomicBool>,
    make: MakeBroker,
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
            let kind = cell_kind(plan[i], round, rounds);
            crate::say!("oemputx matrix: {kind}");
            if interrupt.load(Ordering::Relaxed) {
                return out;
            }
            let cell = match run_cell(m, plan[i], interrupt, make) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tools::MatrixOptions;
    use crate::pubsub::memory::{Memory, MemoryBroker};

    /// A small matrix. Its URL, the embedded queue manager's, names no broker (the double
    /// is handed in, and names its transport itself).
    fn config(rounds: usize) -> MatrixConfig {
        MatrixOptions {
            qmgr: "embedded://".into(),
            count: 100,
            rounds,
            ..MatrixOptions::default()
        }
        .build()
        .expect("valid options")
    }

    /// The in-memory double for the non-persistent cells; the persistent ones refused, as a
    /// broker without persistence refuses them.
    fn memory(args: &PubsubConfig) -> anyhow::Result<Arc<dyn Broker>> {
        anyhow::ensure!(!args.persistent, "no persistence here");
        Ok(Arc::new(MemoryBroker(Arc::new(Memory::default()))))
    }

    #[test]
    fn a_progress_line_names_the_round_only_when_there_are_several() {
        assert_eq!(
            cell_kind((false, 128, 1), 0, 1),
            "128 bytes, 1 receiver(s), non-persistent"
        );
        assert_eq!(
            cell_kind((true, 1024, 5), 1, 3),
            "round 2 of 3: 1024 bytes, 5 receiver(s), persistent"
        );
    }

    #[test]
    fn a_matrix_on_the_in_memory_broker_measures_each_cell_and_leaves_the_persistent_empty() {
        let matrix = run_with(&config(2), &Arc::default(), &memory).expect("a matrix");
        assert_eq!((matrix.rounds, matrix.cells.len()), (2, 8));
        assert!(!matrix.interrupted && matrix.partial.is_none());
        for c in &matrix.cells {
            if c.persistent {
                assert!(c.received_mps.is_none(), "{c:?}");
                assert_eq!(c.note.as_deref(), Some("no persistence here"));
            } else {
                assert!(c.received_mps.is_some_and(|r| r > 0.0), "{c:?}");
                assert_eq!(c.lost, 0, "{c:?}");
                assert_eq!(c.spread.as_ref().map(|s| s.rounds), Some(2));
            }
        }
    }

    #[test]
    fn an_interrupted_matrix_measures_no_cell_and_says_so() {
        let matrix =
            run_with(&config(1), &Arc::new(AtomicBool::new(true)), &memory).expect("a matrix");
        assert!(matrix.interrupted);
        assert!(matrix.cells.is_empty());
    }
}
