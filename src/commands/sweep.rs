//! `oemputx sweep`: the broker paper's scaling experiment. For each task count N, run the
//! driver with N tasks against (a) one flow process with N threads and (b) N flow processes
//! of one thread each (execution groups), starting and stopping the flows itself, and tabulate
//! rate and CPU per transaction per group; with a chart of both against N.

use crate::accounting::selector::{GroupSpec, Selector};
use crate::config::RunConfig;
use crate::config::sweep::{SweepConfig, SweepMode};
use crate::export;
use crate::flows::Flows;
use crate::report::{self, Report};
use anyhow::Context;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The JSON schema tag of a sweep.
pub const SCHEMA: &str = "oemputx.sweep/1";

/// One point of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub tasks: usize,
    pub mode: SweepMode,
    pub flow_processes: usize,
    pub flow_threads_each: usize,
    pub transactions: u64,
    pub rate_tps: f64,
    pub round_trip_mean_us: f64,
    /// Each group's total µs per transaction (the driver as DRIVER).
    pub groups: Vec<(String, f64)>,
    pub captured_us_per_tran: Option<f64>,
    pub capture_ratio: Option<f64>,
    pub corrected_us_per_tran: Option<f64>,
    pub status: crate::driver::Status,
}

/// A whole sweep, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub schema: &'static str,
    pub label: String,
    pub start_utc: String,
    pub flow_cmd: String,
    pub settings: report::Settings,
    pub points: Vec<Point>,
    pub host: report::Host,
}

fn point(tasks: usize, mode: SweepMode, processes: usize, threads: usize, r: &Report) -> Point {
    Point {
        tasks,
        mode,
        flow_processes: processes,
        flow_threads_each: threads,
        transactions: r.transactions,
        rate_tps: r.rate_tps,
        round_trip_mean_us: r.round_trip_us.mean,
        groups: r
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.total_us_per_tran))
            .collect(),
        captured_us_per_tran: r.captured_us_per_tran,
        capture_ratio: r.capture_ratio.as_ref().map(|c| c.value),
        corrected_us_per_tran: r.corrected_us_per_tran,
        status: r.status,
    }
}

/// Run the sweep.
pub fn sweep(sc: &SweepConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<crate::exit::Exit> {
    let mut cfg = sc.run.clone();
    let flow_cmd = &sc.flow;
    // Without a FLOW group of the user's, the flows are accounted by their process ids.
    let own_flow_group = !cfg.groups.iter().any(|g| g.name == "FLOW");
    let base_groups = cfg.groups.clone();
    let quiet = cfg.quiet;
    cfg.quiet = true;
    let start_utc = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut points = Vec::new();
    let mut template = None;
    'outer: for &n in &sc.task_counts {
        for &mode in &sc.modes {
            if interrupt.load(Ordering::Relaxed) {
                break 'outer;
            }
            let (processes, threads) = match mode {
                SweepMode::Threads => (1, n),
                SweepMode::Processes => (n, 1),
            };
            if !quiet {
                eprintln!(
                    "sweep: {n} task(s) against {processes} flow process(es) of {threads} thread(s)"
                );
            }
            let threads_arg = ["--threads".to_string(), threads.to_string()];
            let mut flows = Flows::start(
                flow_cmd,
                &cfg.endpoint,
                &cfg.request_queue,
                processes,
                &threads_arg,
            )?;
            flows.wait_ready(processes * threads)?;
            cfg = cfg.with_tasks(n)?;
            cfg.groups = base_groups.clone();
            if own_flow_group {
                cfg.groups.push(GroupSpec {
                    name: "FLOW".into(),
                    selectors: flows.pids().into_iter().map(Selector::Pid).collect(),
                    host: None,
                });
            }
            let report = crate::measure::measure(&cfg, interrupt.clone())?;
            drop(flows);
            points.push(point(n, mode, processes, threads, &report));
            template.get_or_insert(report);
        }
    }
    let Some(first) = template else {
        return Ok(crate::exit::Exit::Interrupted);
    };
    let sweep = Sweep {
        schema: SCHEMA,
        label: format!("{}-sweep", cfg.label),
        start_utc,
        // The command as recorded: a password in it (a database URL) never reaches a report.
        flow_cmd: sc.shown_cmd.clone(),
        settings: first.settings.clone(),
        points,
        host: first.host.clone(),
    };
    cfg.quiet = quiet;
    write_reports(&cfg, sc, &sweep)?;
    Ok(if interrupt.load(Ordering::Relaxed) {
        crate::exit::Exit::Interrupted
    } else {
        crate::exit::Exit::Ok
    })
}

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

fn write_reports(cfg: &RunConfig, sc: &SweepConfig, s: &Sweep) -> anyhow::Result<()> {
    let text = render_text(s);
    let json = serde_json::to_string_pretty(s).context("encoding the sweep as JSON")?;
    let tsv = export::cells::delimited(&rows(s), b'\t')?;
    let svg = render_svg(s).context("drawing the sweep chart")?;
    let write = |path: &Path, what: &str, body: &str| {
        export::write_output(path, &format!("the sweep {what}"), body)
    };
    let e = &cfg.exports;
    let json_to_stdout = cfg
        .export_json
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    if !cfg.quiet {
        if json_to_stdout {
            eprint!("{text}");
        } else {
            crate::export::print_stdout(&text)?;
        }
    }
    if let Some(p) = &cfg.export_json {
        write(p, "JSON", &json)?;
    }
    if let Some(p) = &e.tsv {
        write(p, "TSV", &tsv)?;
    }
    if let Some(p) = &e.csv {
        write(p, "CSV", &export::cells::delimited(&rows(s), e.delimiter)?)?;
    }
    if let Some(p) = &e.markdown {
        let md = format!(
            "### oemputx sweep: {}\n\n{}",
            s.flow_cmd,
            export::cells::markdown(&rows(s))
        );
        write(p, "Markdown", &md)?;
    }
    if let Some(p) = &sc.chart {
        write(p, "chart", &svg)?;
    }
    if let Some(dir) = &e.save_dir {
        let files = [
            ("txt", "the sweep text", text.as_str()),
            ("tsv", "the sweep TSV", tsv.as_str()),
            ("json", "the sweep JSON", json.as_str()),
            ("svg", "the sweep chart", svg.as_str()),
        ];
        let base = export::save_in_folder(dir, &s.start_utc, &s.label, &files)?;
        if !cfg.quiet {
            eprintln!("sweep: saved {}.{{txt,tsv,json,svg}}", base.display());
        }
    }
    Ok(())
}
