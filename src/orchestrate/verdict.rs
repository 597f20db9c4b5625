//! The gate's verdict written, for all three gate modes (stored baseline, A/B, instruction
//! counts): the verdict on stdout and in every file asked for, the exit code it maps to,
//! and what a gate without a verdict (no baseline, an error, Ctrl-C) still writes. It lives
//! below the commands so that each gate command uses it without importing another.

use crate::config::formats::Format;
use crate::config::gate::{GateConfig, GateOutputs};
use crate::exit::Exit;
use crate::export;
use crate::export::gate::{render_github, render_text};
use crate::export::outputs::{Outputs, Style};
use crate::gate::{Outcome, Verdict};

/// The verdict on stdout (and as GitHub annotations), and in every file asked for.
pub(crate) fn write_verdict(cfg: &GateConfig, outcome: &Outcome) -> anyhow::Result<()> {
    // Files first, each failure named without stopping the others; stdout last, so that a
    // full or closed stdout loses none of them.
    let mut out = Outputs::new();
    out.artifact(outcome, &cfg.outputs.exports, &Style::default());
    // The text is defused where it is printed (a `::` that opens a line is broken); the
    // annotations are the workflow commands the gate means, printed after it as they are.
    let written = out.finish(Some(&render_text(outcome)));
    if cfg.outputs.github {
        crate::out!("{}", render_github(outcome));
    }
    written
}

/// A verdict is written only when it is certain: a signal that came while it was being
/// computed (a bootstrap cut short, say) leaves "no verdict" files (exit 130), never a pass
/// read from half a computation.
pub(crate) fn certain() -> anyhow::Result<()> {
    if crate::signals::interrupted() {
        anyhow::bail!(
            "interrupted ({}) before the verdict was certain: no verdict written",
            crate::signals::interrupted_by()
        );
    }
    Ok(())
}

/// The exit code of the gate's verdict, with a warning when an inconclusive gate passes.
pub(crate) fn verdict_exit(args: &GateConfig, outcome: &Outcome) -> Exit {
    if outcome.verdict == Verdict::Inconclusive {
        crate::say!(
            "Warning: the gate is inconclusive (see the notes above){}",
            if args.strict {
                ""
            } else {
                "; passing (use --strict to fail)"
            }
        );
    }
    exit_of(outcome.verdict, args.strict)
}

/// No baseline: under --strict a gate without a verdict (exit 4), else a pass that says
/// so; either way the step summary, JUnit file and annotation asked for say why.
pub(crate) fn no_baseline(cfg: &GateConfig, msg: &str) -> Exit {
    if cfg.strict {
        crate::say!("Error: {msg}");
        write_failure(&cfg.outputs, Exit::Inconclusive, msg);
        return Exit::Inconclusive;
    }
    let msg = format!("{msg}; the gate passes without one (use --strict to fail)");
    crate::say!("Warning: {msg}");
    let o = &cfg.outputs;
    let mut out = Outputs::new();
    out.write(
        o.exports.get(Format::Markdown),
        "the gate's Markdown",
        || Ok(export::gate::render_skipped_markdown(&msg)),
    );
    out.write(o.exports.get(Format::Junit), "the gate's JUnit XML", || {
        Ok(export::gate::render_skipped_junit(&msg))
    });
    if o.github {
        crate::out!("{}", export::gate::render_skipped_github(&msg));
    }
    if let Err(e) = out.finish(None) {
        crate::say!("Warning: {e:#}");
    }
    Exit::Ok
}

/// A gate that ends without a verdict (exit 1, 2 or 130) still writes the step summary,
/// the JUnit file and the annotation asked for, naming why: a CI page never shows a red
/// step and nothing else. Best effort: the gate's own error is what the exit reports.
pub fn write_failure(outputs: &GateOutputs, exit: Exit, why: &str) {
    let code = exit as i32;
    let mut out = Outputs::new();
    out.write(
        outputs.exports.get(Format::Markdown),
        "the gate's Markdown",
        || Ok(export::gate::render_failure_markdown(code, why)),
    );
    out.write(
        outputs.exports.get(Format::Junit),
        "the gate's JUnit XML",
        || Ok(export::gate::render_failure_junit(code, why)),
    );
    if outputs.github {
        crate::out!("{}", export::gate::render_failure_github(code, why));
    }
    if let Err(e) = out.finish(None) {
        crate::say!("Warning: {e:#}");
    }
}

/// The exit code of a verdict.
pub(crate) fn exit_of(v: Verdict, strict: bool) -> Exit {
    match v {
        Verdict::Pass | Verdict::Improvement => Exit::Ok,
        Verdict::Regression => Exit::Regression,
        Verdict::Inconclusive if strict => Exit::Inconclusive,
        Verdict::Inconclusive => Exit::Ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_map_to_exit_codes_and_strict_fails_the_inconclusive() {
        for strict in [false, true] {
            assert_eq!(exit_of(Verdict::Pass, strict), Exit::Ok);
            assert_eq!(exit_of(Verdict::Improvement, strict), Exit::Ok);
            assert_eq!(exit_of(Verdict::Regression, strict), Exit::Regression);
        }
        assert_eq!(exit_of(Verdict::Inconclusive, false), Exit::Ok);
        assert_eq!(exit_of(Verdict::Inconclusive, true), Exit::Inconclusive);
    }

    fn outputs(dir: &std::path::Path) -> GateOutputs {
        GateOutputs {
            github: false,
            exports: crate::config::formats::Exports::new([
                (Format::Markdown, dir.join("summary.md")),
                (Format::Junit, dir.join("gate.xml")),
            ]),
        }
    }

    fn read(path: std::path::PathBuf) -> String {
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn a_gate_without_a_verdict_writes_its_summary_and_junit_naming_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_failure(
            &outputs(dir.path()),
            Exit::Usage,
            "--tolerance: not a number",
        );
        let md = read(dir.path().join("summary.md"));
        assert!(md.contains("no verdict (exit 2)"), "{md}");
        assert!(md.contains("--tolerance: not a number"), "{md}");
        let xml = read(dir.path().join("gate.xml"));
        assert!(xml.contains(r#"type="usage""#), "{xml}");
    }

    #[test]
    fn no_baseline_passes_saying_so_and_fails_under_strict() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = |strict| GateConfig {
            mode: crate::config::gate::GateMode::Rejudge(Vec::new()),
            tolerances: crate::config::gate::Tolerances::uniform(0.02),
            metrics: Vec::new(),
            strict,
            force: false,
            outputs: outputs(dir.path()),
        };
        assert_eq!(no_baseline(&cfg(false), "no baseline at b.json"), Exit::Ok);
        let md = read(dir.path().join("summary.md"));
        assert!(md.contains("no baseline yet, passing"), "{md}");
        assert!(md.contains("the gate passes without one"), "{md}");
        assert!(read(dir.path().join("gate.xml")).contains("<skipped"));
        assert_eq!(
            no_baseline(&cfg(true), "no baseline at b.json"),
            Exit::Inconclusive
        );
        let md = read(dir.path().join("summary.md"));
        assert!(md.contains("no verdict (exit 4)"), "{md}");
    }
}
