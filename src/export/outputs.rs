//! One way to write a result's outputs, whatever the command: every file asked for is
//! written atomically and each failure is named without stopping the others; the output
//! named `-` and the text for a person come last, so that a full or closed stdout loses no
//! file. With an output on stdout, `main` has already sent everything said to a person to
//! stderr ([`crate::exit::STDOUT_TAKEN`]), so stdout carries that output alone.

use std::path::{Path, PathBuf};

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

    /// [`Outputs::write`] for an `Option<PathBuf>` as the options hold it.
    pub fn write_opt(
        &mut self,
        path: &Option<PathBuf>,
        what: &str,
        body: impl FnOnce() -> anyhow::Result<String>,
    ) {
        self.write(path.as_deref(), what, body)
    }

    /// A failure met beside the outputs (a folder of saved reports, say), named with them.
    pub fn failed(&mut self, why: String) {
        self.failed.push(why);
    }

    /// The text for a person (`None` under --quiet), then the output on stdout; an error
    /// naming every output that failed, once the others are written.
    pub fn finish(mut self, text: Option<&str>) -> anyhow::Result<()> {
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
        super::all_written(self.failed)
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
