//! One way to write a result's outputs, whatever the command: every file asked for is
//! written atomically and each failure is named without stopping the others; the output
//! named `-` and the text for a person come last, so that a full or closed stdout loses no
//! file. With an output on stdout, `main` has already sent everything said to a person to
//! stderr ([`crate::terminal::STDOUT_TAKEN`]), so stdout carries that output alone.

use crate::config::formats::{Exports, Format, ResultKind};
use std::path::{Path, PathBuf};

/// How delimited outputs are written (the CSV delimiter, decimal commas): the one style
/// option some formats take.
pub use super::delimited::Format as Style;

/// A result as its outputs see it: which result it is (its formats are that kind's, in
/// [`ResultKind::formats`], the table the command line was checked against) and how it
/// renders in each.
pub trait Artifact {
    /// Which result: the formats it is written in.
    const KIND: ResultKind;
    /// What messages call it ("the matrix").
    const WHAT: &'static str;
    /// The result in `format`, one of `KIND`'s.
    fn render(&self, format: Format, style: &Style) -> anyhow::Result<String>;
}

/// The error of a format `A` is not written in (or, for HTML, not in this build).
pub(crate) fn unwritten<A: Artifact>(format: Format) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is not written as {}: {} writes {}",
        A::WHAT,
        format.name(),
        A::WHAT,
        A::KIND
            .formats()
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The outputs of one result, written as they are offered, stdout kept for the end.
#[derive(Debug, Default)]
pub struct Outputs {
    failed: Vec<String>,
    stdout: Option<String>,
}

impl Outputs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Write `what` (rendered by `body`, only when asked for) to `path`; `-` is kept for
    /// stdout, written by [`Outputs::finish`].
    pub fn write(
        &mut self,
        path: Option<&Path>,
        what: &str,
        body: impl FnOnce() -> anyhow::Result<String>,
    ) {
        let Some(path) = path else { return };
        let rendered = body();
        match rendered {
            Ok(b) if path.as_os_str() == "-" => self.stdout = Some(b),
            Ok(b) => {
                if let Err(e) = super::write_output(path, what, &b) {
                    self.failed.push(format!("{e:#}"));
                }
            }
            Err(e) => self.failed.push(format!("rendering {what}: {e:#}")),
        }
    }

    /// Every output of `result` that `exports` asks for, each rendered only when asked.
    pub fn artifact<A: Artifact>(&mut self, result: &A, exports: &Exports, style: &Style) {
        for (format, path) in exports.given() {
            let what = format!("{} as {}", A::WHAT, format.name());
            if !A::KIND.formats().contains(&format) {
                // The command line was checked against the same table before the run; a
                // result reaching here without the format is named, never skipped.
                self.failed(format!(
                    "{what}: not written: {} has no such format",
                    A::WHAT
                ));
                continue;
            }
            self.write(Some(path), &what, || result.render(format, style));
        }
    }

    /// A failure met beside the outputs (a folder of saved reports, say), named with them.
    pub fn failed(&mut self, why: String) {
        self.failed.push(why);
    }

    /// The text for a person (`None` under --quiet), then the output on stdout; an error
    /// naming every output that failed, once the others are written.
    pub fn finish(self, text: Option<&str>) -> anyhow::Result<()> {
        super::all_written(self.finish_failures(text))
    }

    /// [`Outputs::finish`], with the failures as they are, for a caller that says more.
    pub(crate) fn finish_failures(mut self, text: Option<&str>) -> Vec<String> {
        if let Some(t) = text
            && let Err(e) = super::print_stdout(t)
        {
            self.failed.push(format!("{e:#}"));
        }
        if let Some(body) = self.stdout.take()
            && let Err(e) = super::print_output(&body)
        {
            self.failed.push(format!("{e:#}"));
        }
        self.failed
    }
}

/// Where a result is saved in the reports folder, and under what name.
#[derive(Debug, Clone, Copy)]
pub struct Saving<'a> {
    /// The reports folder (made when missing).
    pub dir: &'a Path,
    /// The result's start (UTC) and label: its files are `STAMP-LABEL.EXT`.
    pub start_utc: &'a str,
    pub label: &'a str,
    /// Its JSON also as `latest.json`, what tools read (a run's report).
    pub latest_json: bool,
    /// Say where it was saved, as this command ("sweep: saved …"); `None` is silent.
    pub announce: Option<&'a str>,
}

impl Outputs {
    /// Save `result` in the reports folder as `STAMP-LABEL.EXT` ([`super::save_in_folder`]):
    /// `text` (what a person reads: its name and body), when it has one, as `.txt`, then each
    /// of `formats` as its extension, rendered here; with `latest_json`, the JSON also as `latest.json`,
    /// written even when a stamped file failed. A failure is named with the other outputs;
    /// the common path without the extension is returned when every file was written.
    pub fn save<A: Artifact>(
        &mut self,
        to: &Saving,
        text: Option<(&str, &str)>,
        result: &A,
        formats: &[(&str, Format)],
        style: &Style,
    ) -> Option<PathBuf> {
        let failed_before = self.failed.len();
        let mut rendered = Vec::new();
        for (ext, format) in formats {
            match result.render(*format, style) {
                Ok(body) => rendered.push((*ext, *format, body)),
                Err(e) => self.failed(format!("rendering {} as {}: {e:#}", A::WHAT, format.name())),
            }
        }
        let whats: Vec<String> = rendered
            .iter()
            .map(|(_, f, _)| format!("{} as {}", A::WHAT, f.name()))
            .collect();
        let mut named: Vec<(&str, &str, &str)> = text
            .map(|(what, body)| ("txt", what, body))
            .into_iter()
            .collect();
        named.extend(
            rendered
                .iter()
                .zip(&whats)
                .map(|((ext, _, b), what)| (*ext, what.as_str(), b.as_str())),
        );
        let saved = super::save_in_folder(to.dir, to.start_utc, to.label, &named);
        let base = match saved {
            // Every stamped file, each format rendered.
            Ok(base) if self.failed.len() == failed_before => {
                if let Some(command) = to.announce {
                    let kinds: Vec<&str> = named.iter().map(|(ext, _, _)| *ext).collect();
                    crate::say!(
                        "{command}: saved {}.{{{}}}",
                        base.display(),
                        kinds.join(",")
                    );
                }
                Some(base)
            }
            Ok(_) => None,
            Err(e) => {
                self.failed(format!("{e:#}"));
                None
            }
        };
        if to.latest_json && to.dir.is_dir() {
            let latest = to.dir.join("latest.json");
            match rendered.iter().find(|(_, f, _)| *f == Format::Json) {
                Some((_, _, json)) => {
                    self.write(Some(&latest), "the JSON report", || Ok(json.clone()))
                }
                None => self.write(Some(&latest), "the JSON report", || {
                    result.render(Format::Json, style)
                }),
            }
        }
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_written_and_each_failure_named_without_stopping_the_others() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (good, bad) = (dir.path().join("a.json"), dir.path().join("no/such/b.tsv"));
        let mut o = Outputs::new();
        o.write(Some(&bad), "the TSV", || Ok("x\ty\n".into()));
        o.write(Some(&good), "the JSON", || Ok("{}\n".into()));
        o.write(None, "the HTML", || panic!("not asked for, not rendered"));
        o.write(Some(&dir.path().join("c")), "the chart", || {
            anyhow::bail!("no data")
        });
        let err = o.finish(None).expect_err("two failed").to_string();
        assert_eq!(std::fs::read_to_string(&good).ok().as_deref(), Some("{}\n"));
        assert!(err.contains("the TSV") && err.contains("b.tsv"), "{err}");
        assert!(err.contains("rendering the chart: no data"), "{err}");
        assert!(err.ends_with("every other output was written"), "{err}");
    }
}
