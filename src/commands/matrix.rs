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
use anyhow::Context;
use serde::Serialize;
use std::fmt::Write as _;

/// One cell of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub persistent: bool,
    pub msg_size: usize,
    pub receivers: usize,
    /// Messages received per second per receiver (the median receiver); `None` where the
    /// broker has no such mode.
    pub received_mps: Option<f64>,
    pub publish_mps: Option<f64>,
    /// The first group's (the broker's) CPU per message published and per delivered, µs.
    pub broker_us_per_published: Option<f64>,
    pub broker_us_per_delivered: Option<f64>,
    pub lost: u64,
    /// Why a cell is empty.
    pub note: Option<String>,
}

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
    let text = render(m, &cells);
    crate::export::print_stdout(&text)?;
    write_exports(m, &cells)?;
    let lost: u64 = cells.iter().map(|c| c.lost).sum();
    Ok(if lost == 0 { Exit::Ok } else { Exit::Failure })
}

fn fmt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// The CJMQ layout: rows size × receivers, columns non-persistent / persistent.
fn render(mc: &MatrixConfig, cells: &[Cell]) -> String {
    let m = &mc.options;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Messages received per second per receiver (median), {} messages from one sender, {}",
        m.count,
        if m.pattern == "queue" {
            "receivers competing (each message to one)"
        } else {
            "every receiver gets every message"
        }
    );
    let _ = writeln!(
        o,
        "{:>6} {:>9} | {:>12} {:>14} {:>14} | {:>12} {:>14} {:>14}",
        "bytes",
        "receivers",
        "non-pers.",
        "broker µs/pub",
        "broker µs/dlv",
        "persistent",
        "broker µs/pub",
        "broker µs/dlv"
    );
    for size in [128, 1024] {
        for receivers in [1, 5] {
            let at = |p: bool| {
                cells
                    .iter()
                    .find(|c| c.persistent == p && c.msg_size == size && c.receivers == receivers)
            };
            let cols = |c: Option<&Cell>| match c {
                Some(c) => format!(
                    "{:>12} {:>14} {:>14}",
                    fmt(c.received_mps),
                    fmt(c.broker_us_per_published),
                    fmt(c.broker_us_per_delivered)
                ),
                None => format!("{:>12} {:>14} {:>14}", "-", "-", "-"),
            };
            let _ = writeln!(
                o,
                "{size:>6} {receivers:>9} | {} | {}",
                cols(at(false)),
                cols(at(true))
            );
        }
    }
    // The shape the paper reports: five receivers each got about a third of one receiver's
    // rate on CJMQ, not a fifth. Shapes compare across machines; absolute rates do not.
    let rate = |p: bool, size: usize, r: usize| {
        cells
            .iter()
            .find(|c| c.persistent == p && c.msg_size == size && c.receivers == r)
            .and_then(|c| c.received_mps)
    };
    let ratio = |p: bool, size: usize| match (rate(p, size, 5), rate(p, size, 1)) {
        (Some(five), Some(one)) if one > 0.0 => format!("{:.2}", five / one),
        _ => "-".into(),
    };
    for size in [128, 1024] {
        let _ = writeln!(
            o,
            "{size:>6} {:>9} | {:>12} {:>29} | {:>12}",
            "5 / 1",
            ratio(false, size),
            "",
            ratio(true, size)
        );
    }
    for c in cells.iter().filter(|c| c.note.is_some()) {
        let _ = writeln!(
            o,
            "note: {} bytes, {} receiver(s), persistent: {}",
            c.msg_size,
            c.receivers,
            c.note.as_deref().unwrap_or_default()
        );
    }
    o
}

fn write_exports(mc: &MatrixConfig, cells: &[Cell]) -> anyhow::Result<()> {
    let m = &mc.options;
    if let Some(path) = &m.export_json {
        let json = serde_json::to_string_pretty(&serde_json::json!({
            "schema": "oemputx.matrix/1",
            "broker": crate::secret::scrub(&m.qmgr),
            "count": m.count,
            "pattern": m.pattern,
            "cells": cells,
        }))? + "\n";
        if path.as_os_str() == "-" {
            print!("{json}");
        } else {
            write_atomic(path, json.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if let Some(path) = &m.export_svg {
        let svg = render_svg(mc, cells).context("drawing the matrix chart")?;
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
                fmt(c.received_mps),
                fmt(c.publish_mps),
                fmt(c.broker_us_per_published),
                fmt(c.broker_us_per_delivered),
                c.lost
            );
        }
        write_atomic(path, t.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Received msg/s per receiver, one bar per cell (blue non-persistent, red persistent).
pub fn render_svg(mc: &MatrixConfig, cells: &[Cell]) -> anyhow::Result<String> {
    let m = &mc.options;
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let top = cells
            .iter()
            .filter_map(|c| c.received_mps)
            .fold(0.0f64, f64::max)
            * 1.15;
        let label = |i: usize| {
            cells.get(i).map_or(String::new(), |c| {
                format!(
                    "{}B {}r {}",
                    c.msg_size,
                    c.receivers,
                    if c.persistent { "P" } else { "NP" }
                )
            })
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Messages received per second per receiver ({} messages a cell)",
                    m.count
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..cells.len() as f64, 0.0..top.max(1.0))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(cells.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.26 {
                    label(i)
                } else {
                    String::new()
                }
            })
            .draw()?;
        chart.draw_series(cells.iter().enumerate().filter_map(|(i, c)| {
            let v = c.received_mps?;
            let color = if c.persistent { RED } else { BLUE };
            Some(Rectangle::new(
                [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, v)],
                color.filled(),
            ))
        }))?;
        root.present()?;
    }
    Ok(svg)
}
