//! `oemputx sweep`: the sweep measured (`crate::orchestrate::sweep`), then its table, chart
//! and files.

use crate::config::RunConfig;
use crate::config::formats::{Exports, Format};
use crate::config::sweep::SweepConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Style, save_result};
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
        delimiter: cfg.exports.delimiter,
        decimal_comma: false,
    };
    let text = render_text(s);
    // Files first, each failure named without stopping the others: a full or closed stdout
    // cannot lose them. The chart's path is --chart or --export-svg.
    let mut exports: Vec<(Format, std::path::PathBuf)> = cfg
        .outputs()
        .given()
        .map(|(f, p)| (f, p.to_path_buf()))
        .collect();
    exports.extend(sc.chart.clone().map(|p| (Format::Svg, p)));
    let mut out = Outputs::new();
    out.artifact(s, &Exports::new(exports), &style);
    if let Some(dir) = &cfg.exports.save_dir {
        let formats = [
            ("tsv", Format::Tsv),
            ("json", Format::Json),
            ("svg", Format::Svg),
            #[cfg(feature = "html")]
            ("html", Format::Html),
        ];
        let text = ("the sweep text", text.as_str());
        match save_result(dir, (&s.start_utc, &s.label), text, s, &formats, &style) {
            Ok(base) if !cfg.quiet => {
                let kinds: Vec<&str> = std::iter::once("txt")
                    .chain(formats.iter().map(|(ext, _)| *ext))
                    .collect();
                crate::say!("sweep: saved {}.{{{}}}", base.display(), kinds.join(","));
            }
            Ok(_) => {}
            Err(e) => out.failed(format!("{e:#}")),
        }
    }
    out.finish((!cfg.quiet).then_some(text.as_str()))
}
