//! `oemputx sweep`: the sweep measured (`crate::orchestrate::sweep`), then its table, chart
//! and files.

use crate::config::RunConfig;
use crate::config::formats::{Exports, Format};
use crate::config::sweep::SweepConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Saving, Style};
use crate::export::sweep::render_text;
use crate::interleave::End;
use crate::report::sweep::Sweep;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run the sweep and write what it found.
pub fn sweep(sc: &SweepConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let Some((sweep, end)) = crate::orchestrate::sweep::run(sc, interrupt)? else {
        return Ok(Exit::Interrupted);
    };
    write_reports(&sc.run, sc, &sweep)?;
    Ok(match end {
        End::Interrupted => Exit::Interrupted,
        End::Failed => Exit::Failure,
        End::Decided | End::Budget => Exit::Ok,
    })
}

fn write_reports(cfg: &RunConfig, sc: &SweepConfig, s: &Sweep) -> anyhow::Result<()> {
    let style = Style {
        delimiter: cfg.outputs.delimiter,
        decimal_comma: false,
    };
    let text = render_text(s);
    // Files first, each failure named without stopping the others: a full or closed stdout
    // cannot lose them. The chart's path is --chart or --export-svg.
    let mut exports: Vec<(Format, std::path::PathBuf)> = cfg
        .outputs
        .files
        .given()
        .map(|(f, p)| (f, p.to_path_buf()))
        .collect();
    exports.extend(sc.chart.clone().map(|p| (Format::Svg, p)));
    let mut out = Outputs::new();
    out.artifact(s, &Exports::new(exports), &style);
    if let Some(dir) = &cfg.outputs.save_dir {
        let formats = [
            ("tsv", Format::Tsv),
            ("json", Format::Json),
            ("svg", Format::Svg),
            #[cfg(feature = "html")]
            ("html", Format::Html),
        ];
        let to = Saving {
            dir,
            start_utc: &s.start_utc,
            label: &s.label,
            latest_json: false,
            announce: (!cfg.quiet).then_some("sweep"),
        };
        out.save(&to, Some(("the sweep text", &text)), s, &formats, &style);
    }
    out.finish((!cfg.quiet).then_some(text.as_str()))
}
