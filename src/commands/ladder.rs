//! `oemputx ladder`: the ladder measured (`crate::orchestrate::ladder`), then its text and
//! files.

use crate::config::formats::Format;
use crate::config::ladder::LadderConfig;
use crate::exit::Exit;
use crate::export;
use crate::export::outputs::{Outputs, Saving, Style};
use crate::report::ladder::{Ladder, LadderEnd};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Measure the ladder and write what it found.
pub fn ladder(cfg: &LadderConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    // Known before the steps, so that the ladder's files wait for no git after them.
    let _ = crate::report::history::this_commit();
    let Some(l) = crate::orchestrate::ladder::run(cfg, interrupt)? else {
        crate::say!(
            "ladder: interrupted by {} before its first step was measured: nothing to report",
            crate::signals::interrupted_by()
        );
        return Ok(Exit::Interrupted);
    };
    write(cfg, &l)?;
    Ok(match l.end {
        LadderEnd::Completed | LadderEnd::Budget => Exit::Ok,
        LadderEnd::Interrupted => Exit::Interrupted,
        LadderEnd::Failed => Exit::Failure,
    })
}

/// The files asked for, the ladder saved in the reports folder (unless --no-save), then the
/// text and the output on stdout.
fn write(cfg: &LadderConfig, l: &Ladder) -> anyhow::Result<()> {
    let style = Style {
        delimiter: cfg.delimiter,
        decimal_comma: false,
    };
    let text = export::ladder::text(l);
    let mut out = Outputs::new();
    out.artifact(l, &cfg.outputs, &style);
    if let Some(dir) = &cfg.save_dir {
        let formats = [
            ("tsv", Format::Tsv),
            ("json", Format::Json),
            #[cfg(feature = "html")]
            ("html", Format::Html),
        ];
        let label = format!("ladder-{}", l.label);
        let to = Saving {
            dir,
            start_utc: &l.start_utc,
            label: &label,
            latest_json: false,
            announce: (!cfg.quiet).then_some("ladder"),
        };
        out.save(&to, Some(("the ladder text", &text)), l, &formats, &style);
    }
    out.finish((!cfg.quiet).then_some(text.as_str()))
}
