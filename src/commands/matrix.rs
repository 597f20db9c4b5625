//! `oemputx matrix`: the CJMQ throughput table as one command. One sender sends `--count`
//! messages continuously to 1 or 5 receivers, 128 or 1024 bytes, non-persistent and
//! persistent; each cell reports messages received per second per receiver (the median
//! receiver) and the broker's CPU per message published and delivered. Each cell is an
//! `oemputx pubsub` run with one symbol that every receiver selects (the `topic` pattern:
//! every receiver gets every message).

use super::pubsub::{broker, measure};
use crate::config::tools::MatrixConfig;
use crate::exit::Exit;
use crate::export::write_atomic;
use crate::report::matrix::{Cell, Matrix, SCHEMA};
use anyhow::Context;
use std::fmt::Write as _;

/// Run one cell; a broker without persistence gives an empty cell, not an error.
fn run_cell(
    m: &MatrixConfig,
    persistent: bool,
    size: usize,
    receivers: usize,
) -> anyhow::Result<Cell> {
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
    };
    let b = match broker(&args) {
        Ok(b) => b,
        Err(e) if persistent => {
            cell.note = Some(format!("{e:#}"));
            return Ok(cell);
        }
        Err(e) => return Err(e),
    };
    b.prepare()?;
    let r = measure(&args, b, None)?;
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
    Ok(cell)
}

/// `oemputx matrix`.
pub fn matrix(m: &MatrixConfig) -> anyhow::Result<Exit> {
    let mut cells = Vec::new();
    for (persistent, size, receivers) in m.cells() {
        eprintln!(
            "oemputx matrix: {size} bytes, {receivers} receiver(s), {}",
            if persistent {
                "persistent"
            } else {
                "non-persistent"
            }
        );
        cells.push(run_cell(m, persistent, size, receivers)?);
    }
    let matrix = Matrix {
        schema: SCHEMA,
        broker: crate::secret::scrub(&m.options.qmgr),
        count: m.options.count,
        pattern: m.options.pattern.clone(),
        cells,
    };
    crate::export::print_stdout(&crate::export::matrix::text(&matrix))?;
    write_exports(m, &matrix)?;
    let lost: u64 = matrix.cells.iter().map(|c| c.lost).sum();
    Ok(if lost == 0 { Exit::Ok } else { Exit::Failure })
}

fn write_exports(mc: &MatrixConfig, matrix: &Matrix) -> anyhow::Result<()> {
    let m = &mc.options;
    let cells = &matrix.cells;
    if let Some(path) = &m.export_json {
        let json = serde_json::to_string_pretty(matrix)? + "\n";
        if path.as_os_str() == "-" {
            print!("{json}");
        } else {
            write_atomic(path, json.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if let Some(path) = &m.export_svg {
        let svg = crate::export::matrix::svg(matrix).context("drawing the matrix chart")?;
        write_atomic(path, svg.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &m.export_tsv {
        let mut t = String::from(
            "persistent\tmsg_size\treceivers\treceived_mps\tpublish_mps\tbroker_us_per_published\tbroker_us_per_delivered\tlost\n",
        );
        for c in cells {
            let _ = writeln!(
                t,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                c.persistent,
                c.msg_size,
                c.receivers,
                crate::export::matrix::fmt(c.received_mps),
                crate::export::matrix::fmt(c.publish_mps),
                crate::export::matrix::fmt(c.broker_us_per_published),
                crate::export::matrix::fmt(c.broker_us_per_delivered),
                c.lost
            );
        }
        write_atomic(path, t.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
