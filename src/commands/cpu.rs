//! `oemputx cpu`: the groups' CPU without the put/get driver — readings taken before and
//! after a run, over one window, or watched per interval (the OEMPUTX report's first
//! method: RMF readings around a run). Measured by `crate::orchestrate::cpu`; each result's
//! files go through [`Outputs`], then its table on stdout.

use crate::config::formats::{Exports, Format};
use crate::config::tools::CpuConfig;
use crate::exit::Exit;
use crate::export::cpu::{self as show, finish};
use crate::export::outputs::{Outputs, Style};
use crate::orchestrate;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// `oemputx cpu`.
pub fn cpu(args: &CpuConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    if let Some(edges) = args.window {
        return window(args, edges, &interrupt);
    }
    let Some(interval) = args.interval else {
        let rows = orchestrate::cpu::readings(args)?;
        finish(
            Outputs::new(),
            Some(&show::table(&rows, args.tsv, true, None)?),
        )?;
        return Ok(Exit::Ok);
    };
    // The OpenMetrics file rewritten after every interval, then the interval's rows.
    let exports = exports(Format::OpenMetrics, &args.openmetrics);
    let interrupted = orchestrate::cpu::watch(args, interval, &interrupt, |i| {
        let mut out = Outputs::new();
        out.artifact(i, &exports, &Style::default());
        let rows = show::table(&i.rows, args.tsv, i.index == 0, Some(&i.stamp))?;
        finish(out, Some(&rows))
    })?;
    Ok(if interrupted {
        Exit::Interrupted
    } else {
        Exit::Ok
    })
}

/// `cpu --from T --until T`: the groups' CPU over one window, its JSON (with
/// --export-json, for `oemputx merge --cpu`) and its table, unless the JSON holds stdout.
fn window(
    args: &CpuConfig,
    edges: (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    interrupt: &AtomicBool,
) -> anyhow::Result<Exit> {
    let Some(w) = orchestrate::cpu::window(args, edges, interrupt)? else {
        return Ok(Exit::Interrupted);
    };
    let exports = exports(Format::Json, &args.window_json);
    let mut out = Outputs::new();
    out.artifact(&w, &exports, &Style::default());
    let rows = if exports.to_stdout() {
        None
    } else {
        Some(show::window_table(&w, args.tsv)?)
    };
    finish(out, rows.as_ref())?;
    Ok(Exit::Ok)
}

/// The one file a mode of `cpu` writes, as its outputs.
fn exports(format: Format, path: &Option<PathBuf>) -> Exports {
    Exports::new(path.clone().map(|p| (format, p)))
}
