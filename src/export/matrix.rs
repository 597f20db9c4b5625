//! The matrix rendered: the CJMQ layout as text, and its bar chart (SVG).

use crate::report::matrix::{Cell, Matrix, Spread};
use std::fmt::Write as _;

pub(crate) fn fmt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// A figure with its spread over the rounds: "1234.5 ±3%".
fn with_spread(v: Option<f64>, s: Option<&Spread>) -> String {
    match (v, s) {
        (Some(v), Some(s)) => format!("{v:.1} ±{:.0}%", 100.0 * s.relative_half(v)),
        _ => fmt(v),
    }
}

/// The matrix as TSV, one value per cell: with rounds, each figure's interval and range in
/// columns of their own.
pub fn tsv(matrix: &Matrix) -> String {
    let mut t = String::from(
        "persistent\tmsg_size\treceivers\trounds\treceived_mps\treceived_mps_low\treceived_mps_high\tpublish_mps\tbroker_us_per_published\tbroker_us_per_published_low\tbroker_us_per_published_high\tbroker_us_per_delivered\tbroker_us_per_delivered_low\tbroker_us_per_delivered_high\tlost\n",
    );
    for c in &matrix.cells {
        let sp = c.spread.as_ref();
        let ends = |s: Option<&Spread>, v: Option<f64>| match s {
            Some(s) => (fmt(Some(s.low)), fmt(Some(s.high))),
            None => (fmt(v), fmt(v)),
        };
        let (rl, rh) = ends(sp.and_then(|s| s.received_mps.as_ref()), c.received_mps);
        let (pl, ph) = ends(
            sp.and_then(|s| s.broker_us_per_published.as_ref()),
            c.broker_us_per_published,
        );
        let (dl, dh) = ends(
            sp.and_then(|s| s.broker_us_per_delivered.as_ref()),
            c.broker_us_per_delivered,
        );
        let _ = writeln!(
            t,
            "{}\t{}\t{}\t{}\t{}\t{rl}\t{rh}\t{}\t{}\t{pl}\t{ph}\t{}\t{dl}\t{dh}\t{}",
            c.persistent,
            c.msg_size,
            c.receivers,
            sp.map_or(1, |s| s.rounds),
            fmt(c.received_mps),
            fmt(c.publish_mps),
            fmt(c.broker_us_per_published),
            fmt(c.broker_us_per_delivered),
            c.lost
        );
    }
    t
}

/// The CJMQ layout: rows size × receivers, columns non-persistent / persistent.
pub fn text(matrix: &Matrix) -> String {
    let (m, cells) = (matrix, &matrix.cells);
    let mut o = String::new();
    if m.interrupted {
        let _ = writeln!(
            o,
            "INTERRUPTED: the cells not reached are missing, and the cell it stopped in is left out"
        );
    }
    if let Some(p) = &m.partial {
        let _ = writeln!(o, "{}", p.line());
    }
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
    // Wider columns when each figure carries its spread.
    let (w, v) = if m.rounds > 1 { (17, 16) } else { (12, 14) };
    if m.rounds > 1 {
        let _ = writeln!(
            o,
            "Each cell: the median of {} rounds ± the larger half of its 95% interval (with under 9 rounds, their range); the cells in a balanced order each round",
            m.rounds
        );
    }
    let _ = writeln!(
        o,
        "{:>6} {:>9} | {:>w$} {:>v$} {:>v$} | {:>w$} {:>v$} {:>v$}",
        "bytes",
        "receivers",
        "non-pers.",
        "broker µs/pub",
        "broker µs/dlv",
        "persistent",
        "broker µs/pub",
        "broker µs/dlv",
        w = w,
        v = v
    );
    for size in [128, 1024] {
        for receivers in [1, 5] {
            let at = |p: bool| {
                cells
                    .iter()
                    .find(|c| c.persistent == p && c.msg_size == size && c.receivers == receivers)
            };
            let cols = |c: Option<&Cell>| match c {
                Some(c) => {
                    let sp = c.spread.as_ref();
                    format!(
                        "{:>w$} {:>v$} {:>v$}",
                        with_spread(c.received_mps, sp.and_then(|s| s.received_mps.as_ref())),
                        with_spread(
                            c.broker_us_per_published,
                            sp.and_then(|s| s.broker_us_per_published.as_ref())
                        ),
                        with_spread(
                            c.broker_us_per_delivered,
                            sp.and_then(|s| s.broker_us_per_delivered.as_ref())
                        ),
                        w = w,
                        v = v
                    )
                }
                None => format!("{:>w$} {:>v$} {:>v$}", "-", "-", "-", w = w, v = v),
            };
            let _ = writeln!(
                o,
                "{size:>6} {receivers:>9} | {} | {}",
                cols(at(false)),
                cols(at(true))
            );
        }
    }
    ratios(&mut o, cells, (w, v));
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

/// The shape the paper reports: five receivers each got about a third of one receiver's
/// rate on CJMQ, not a fifth. Shapes compare across machines; absolute rates do not.
fn ratios(o: &mut String, cells: &[Cell], (w, v): (usize, usize)) {
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
            "{size:>6} {:>9} | {:>w$} {:>gap$} | {:>w$}",
            "5 / 1",
            ratio(false, size),
            "",
            ratio(true, size),
            w = w,
            gap = 2 * v + 1
        );
    }
}

/// Received msg/s per receiver, one bar per cell (blue non-persistent, red persistent).
pub fn svg(matrix: &Matrix) -> anyhow::Result<String> {
    let (m, cells) = (matrix, &matrix.cells);
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
