//! The sweep rendered: its table as cells, as text, and its SVG chart.

use crate::config::sweep::SweepMode;
use crate::export;
use crate::report::sweep::{Point, Sweep};

/// Group names across the points, in first-seen order.
fn group_names(s: &Sweep) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in &s.points {
        for (g, _) in &p.groups {
            if !names.contains(g) {
                names.push(g.clone());
            }
        }
    }
    names
}

/// The table as rows of cells, header first: the one shape every format renders.
pub fn rows(s: &Sweep) -> Vec<Vec<String>> {
    let names = group_names(s);
    let mut header: Vec<String> = [
        "tasks",
        "mode",
        "flow_processes",
        "flow_threads",
        "rate_tps",
        "round_trip_us",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    header.extend(names.iter().map(|g| format!("{g}_us_per_tran")));
    header.extend(
        [
            "captured_us_per_tran",
            "capture_ratio",
            "corrected_us_per_tran",
        ]
        .map(String::from),
    );
    let opt = |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
    let mut out = vec![header];
    for p in &s.points {
        let mut row = vec![
            p.tasks.to_string(),
            p.mode.as_str().to_string(),
            p.flow_processes.to_string(),
            p.flow_threads_each.to_string(),
            format!("{:.1}", p.rate_tps),
            format!("{:.1}", p.round_trip_mean_us),
        ];
        for g in &names {
            row.push(opt(
                p.groups.iter().find(|(n, _)| n == g).map(|(_, v)| *v),
                2,
            ));
        }
        row.push(opt(p.captured_us_per_tran, 2));
        row.push(opt(p.capture_ratio, 3));
        row.push(opt(p.corrected_us_per_tran, 2));
        out.push(row);
    }
    out
}

/// The table as aligned text, with the settings it was measured under.
pub fn render_text(s: &Sweep) -> String {
    let mut rows = rows(s);
    if let Some(header) = rows.first_mut() {
        for h in header.iter_mut() {
            *h = h.replace("_us_per_tran", " us/tran").replace('_', " ");
        }
    }
    format!(
        "oemputx sweep on {}
flow: {}
message: {} ({} bytes), {} messages per point

{}",
        s.settings.qmgr,
        s.flow_cmd,
        s.settings.message_source,
        s.settings.msg_bytes_max,
        s.settings
            .count
            .map_or_else(|| "timed".into(), |c| c.to_string()),
        export::cells::text(&rows)
    )
}

/// Rate and corrected (else captured) CPU per transaction against N, threads vs processes.
pub fn render_svg(s: &Sweep) -> anyhow::Result<String> {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(480);
        let max_n = s.points.iter().map(|p| p.tasks).max().unwrap_or(1) as f64;
        fn rate(p: &Point) -> Option<f64> {
            Some(p.rate_tps)
        }
        fn cpu(p: &Point) -> Option<f64> {
            p.corrected_us_per_tran.or(p.captured_us_per_tran)
        }
        type Value = fn(&Point) -> Option<f64>;
        let panels: [(_, &str, Value); 2] = [
            (&left, "Transaction rate (per s)", rate),
            (&right, "CPU per transaction (us, corrected)", cpu),
        ];
        for (area, title, value) in panels {
            let top = s.points.iter().filter_map(value).fold(0.0f64, f64::max) * 1.15;
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(60)
                .build_cartesian_2d(0.5..max_n + 0.5, 0.0..top.max(1.0))?;
            chart
                .configure_mesh()
                .x_desc("driver tasks N")
                .x_labels(max_n as usize + 1)
                .draw()?;
            for (mode, color) in [(SweepMode::Threads, BLUE), (SweepMode::Processes, RED)] {
                let series: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .filter(|p| p.mode == mode)
                    .filter_map(|p| value(p).map(|v| (p.tasks as f64, v)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(series.clone(), color.stroke_width(2)))?
                    .label(mode.describe())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
                chart.draw_series(series.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()?;
        }
        root.present()?;
    }
    Ok(svg)
}
