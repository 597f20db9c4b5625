//! The sweep rendered: its points as a table of medians with their intervals (one value per
//! cell for TSV/CSV), each N's processes ÷ threads, and the chart (SVG) with error bars.

use crate::config::sweep::SweepMode;
use crate::experiment::ArmSummary;
use crate::export;
use crate::report::sweep::{Point, Sweep};

/// Group names across the points, in first-seen order.
fn group_names(s: &Sweep) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in &s.points {
        for g in &p.groups {
            if !names.contains(&g.name) {
                names.push(g.name.clone());
            }
        }
    }
    names
}

fn group<'a>(p: &'a Point, name: &str) -> Option<&'a ArmSummary> {
    p.groups
        .iter()
        .find(|g| g.name == name)
        .and_then(|g| g.us_per_tran.as_ref())
}

/// The table as rows of cells, header first, one value per cell: each figure's median and
/// its interval's ends in columns of their own.
pub fn rows(s: &Sweep) -> Vec<Vec<String>> {
    let names = group_names(s);
    // `ended` on every row: a pasted row of an interrupted sweep must not pass for a whole
    // one (decided, budget or interrupted).
    let mut header: Vec<String> = [
        "tasks",
        "mode",
        "flow_processes",
        "flow_threads",
        "rounds",
        "ended",
    ]
    .map(String::from)
    .to_vec();
    let mut figures: Vec<String> = vec!["rate_tps".into(), "round_trip_us".into()];
    figures.extend(names.iter().map(|g| format!("{g}_us_per_tran")));
    figures.extend([
        "captured_us_per_tran".into(),
        "corrected_us_per_tran".into(),
    ]);
    for f in &figures {
        header.push(f.clone());
        header.push(format!("{f}_low"));
        header.push(format!("{f}_high"));
    }
    let mut out = vec![header];
    for p in &s.points {
        let mut row = vec![
            p.tasks.to_string(),
            p.mode.as_str().to_string(),
            p.flow_processes.to_string(),
            p.flow_threads_each.to_string(),
            p.rounds.to_string(),
            s.run_shape.ended.to_string(),
        ];
        let mut cells: Vec<Option<&ArmSummary>> =
            vec![p.rate_tps.as_ref(), p.round_trip_mean_us.as_ref()];
        cells.extend(names.iter().map(|g| group(p, g)));
        cells.extend([
            p.captured_us_per_tran.as_ref(),
            p.corrected_us_per_tran.as_ref(),
        ]);
        for c in cells {
            match c {
                Some(a) => row.extend([a.median, a.low, a.high].map(|v| format!("{v:.2}"))),
                None => row.extend([String::new(), String::new(), String::new()]),
            }
        }
        out.push(row);
    }
    out
}

/// The points for a person: each figure as `median [low-high]`.
fn text_rows(s: &Sweep) -> Vec<Vec<String>> {
    let names = group_names(s);
    let cell = |a: Option<&ArmSummary>| {
        a.map_or("-".into(), |a| {
            format!("{:.1} [{:.1}-{:.1}]", a.median, a.low, a.high)
        })
    };
    let mut header: Vec<String> = [
        "tasks",
        "mode",
        "processes",
        "threads",
        "rounds",
        "rate tps",
    ]
    .map(String::from)
    .to_vec();
    header.extend(names.iter().map(|g| format!("{g} us/tran")));
    header.push("captured us/tran".into());
    let mut out = vec![header];
    for p in &s.points {
        let mut row = vec![
            p.tasks.to_string(),
            p.mode.as_str().to_string(),
            p.flow_processes.to_string(),
            p.flow_threads_each.to_string(),
            p.rounds.to_string(),
            cell(p.rate_tps.as_ref()),
        ];
        row.extend(names.iter().map(|g| cell(group(p, g))));
        row.push(cell(p.captured_us_per_tran.as_ref()));
        out.push(row);
    }
    out
}

/// The sweep as text: how it was measured, the points with their intervals, and each N's
/// processes ÷ threads.
pub(crate) fn render_text(s: &Sweep) -> String {
    let r = &s.run_shape;
    let mut o = format!(
        "oemputx sweep on {}
flow: {}
message: {} ({} bytes), {} messages a round; every point a flow of its own, in interleaved rounds: {} blocks of {} cycles in {:.0} s ({})
figures: median [95% interval] of each point's rounds

{}
processes ÷ threads at each N (paired, each block on fresh flows; interval at the last look's level):
",
        s.settings.qmgr,
        s.flow_cmd,
        s.settings.message_source,
        s.settings.msg_bytes_max,
        s.settings
            .count
            .map_or_else(|| "timed".into(), |c| c.to_string()),
        r.blocks,
        r.cycles_per_block,
        r.elapsed_s,
        match r.ended {
            "decided" => format!("every ratio decided or within ±{:.1}%", r.precision_pct),
            "interrupted" => "interrupted".into(),
            "failed" => "stopped by a fault".into(),
            _ => "stopped at --max-time".into(),
        },
        export::cells::text(&text_rows(s))
    );
    if let Some(p) = &s.partial {
        o = format!("{}\n{o}", p.line());
    }
    for m in &s.ratios {
        let fmt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
        let plain = if m.adjusted_by.is_none() && m.ratio.is_some() {
            format!(
                " (unadjusted: {}'s own cost differed between the two points)",
                r.control
            )
        } else {
            String::new()
        };
        o.push_str(&format!(
            "  N={} {}: {} [{}, {}] — {}{plain}\n",
            m.tasks,
            m.metric,
            fmt(m.ratio),
            fmt(m.low),
            fmt(m.high),
            m.reading
        ));
    }
    o
}

/// Rate and the flow's (else the captured) CPU per transaction against N, threads and
/// processes, each point its median with an error bar for its interval.
pub(crate) fn render_svg(s: &Sweep) -> anyhow::Result<String> {
    use plotters::prelude::*;
    fn rate(p: &Point) -> Option<ArmSummary> {
        p.rate_tps
    }
    fn cpu(p: &Point) -> Option<ArmSummary> {
        group(p, "FLOW").copied().or(p.captured_us_per_tran)
    }
    type Value = fn(&Point) -> Option<ArmSummary>;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 440)).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(480);
        let max_n = s.points.iter().map(|p| p.tasks).max().unwrap_or(1);
        let panels: [(_, &str, Value); 2] = [
            (&left, "Transaction rate (per s)", rate),
            (&right, "FLOW CPU per transaction (us)", cpu),
        ];
        // A chart pasted alone must not pass for a whole sweep either.
        let cut = match s.run_shape.ended {
            "interrupted" => ", INTERRUPTED",
            "failed" => ", PARTIAL (a fault)",
            _ => "",
        };
        for (area, title, value) in panels {
            let title = format!("{title}{cut}");
            // Headroom above the highest bar keeps the legend off the data.
            let top = s
                .points
                .iter()
                .filter_map(value)
                .map(|a| a.high)
                .fold(0.0f64, f64::max)
                * 1.45;
            let mut chart = ChartBuilder::on(area)
                .caption(&title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(60)
                .build_cartesian_2d(0.5..max_n as f64 + 0.5, 0.0..top.max(1.0))?;
            chart
                .configure_mesh()
                .x_desc("driver tasks N")
                .x_labels(max_n * 2 + 1)
                // Integer ticks only: N is a count.
                .x_label_formatter(&|x| {
                    if (x - x.round()).abs() < 1e-6 && *x >= 1.0 {
                        format!("{}", x.round() as i64)
                    } else {
                        String::new()
                    }
                })
                .draw()?;
            for (mode, color, shift) in [
                (SweepMode::Threads, BLUE, -0.06),
                (SweepMode::Processes, RED, 0.06),
            ] {
                let series: Vec<(f64, ArmSummary)> = s
                    .points
                    .iter()
                    .filter(|p| p.mode == mode)
                    .filter_map(|p| value(p).map(|v| (p.tasks as f64 + shift, v)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(
                        series.iter().map(|(x, v)| (*x, v.median)),
                        color.stroke_width(2),
                    ))?
                    .label(mode.describe())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
                chart.draw_series(series.iter().map(|(x, v)| {
                    ErrorBar::new_vertical(*x, v.low, v.median, v.high, color.filled(), 8)
                }))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperMiddle)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.9))
                .draw()?;
        }
        root.present()?;
    }
    Ok(svg)
}
