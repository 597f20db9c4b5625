//! `oemputx sweep`: the broker paper's scaling experiment. For each task count N, run the
//! driver with N tasks against (a) one flow process with N threads and (b) N flow processes
//! of one thread each (execution groups), starting and stopping the flows itself, and tabulate
//! rate and CPU per transaction per group; with a chart of both against N.

use crate::accounting::selector::{GroupSpec, Selector};
use crate::config::RunConfig;
use crate::config::sweep::{SweepConfig, SweepMode};
use crate::export;
use crate::export::sweep::{render_svg, render_text, rows};
use crate::flows::Flows;
use crate::report::Report;
use crate::report::sweep::{Point, SCHEMA, Sweep};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
