//! The formats a result can be written in, and the one table of which formats each
//! command's result writes. Every command takes the same `--export-*` flags; a flag whose
//! format its result does not have is refused before anything runs, naming the formats it
//! has, so that no output is ever silently not written.

use super::{ConfigError, bad};
use std::path::{Path, PathBuf};

/// A format of an output file (`--export-FORMAT PATH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    Json,
    Tsv,
    Csv,
    Markdown,
    OpenMetrics,
    Html,
    Svg,
    Junit,
    Bmf,
    Gha,
    Folded,
}

impl Format {
    /// Every format, in the order help and errors list them.
    pub const ALL: [Format; 11] = [
        Format::Json,
        Format::Tsv,
        Format::Csv,
        Format::Markdown,
        Format::OpenMetrics,
        Format::Html,
        Format::Svg,
        Format::Junit,
        Format::Bmf,
        Format::Gha,
        Format::Folded,
    ];

    /// The flag that asks for it.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Json => "--export-json",
            Format::Tsv => "--export-tsv",
            Format::Csv => "--export-csv",
            Format::Markdown => "--export-markdown",
            Format::OpenMetrics => "--export-openmetrics",
            Format::Html => "--export-html",
            Format::Svg => "--export-svg",
            Format::Junit => "--export-junit",
            Format::Bmf => "--export-bmf",
            Format::Gha => "--export-gha",
            Format::Folded => "--export-folded",
        }
    }

    /// The clap id of its flag (the field name).
    pub fn id(self) -> &'static str {
        match self {
            Format::Json => "export_json",
            Format::Tsv => "export_tsv",
            Format::Csv => "export_csv",
            Format::Markdown => "export_markdown",
            Format::OpenMetrics => "export_openmetrics",
            Format::Html => "export_html",
            Format::Svg => "export_svg",
            Format::Junit => "export_junit",
            Format::Bmf => "export_bmf",
            Format::Gha => "export_gha",
            Format::Folded => "export_folded",
        }
    }

    /// What a person calls it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Tsv => "TSV",
            Format::Csv => "CSV",
            Format::Markdown => "Markdown",
            Format::OpenMetrics => "OpenMetrics",
            Format::Html => "HTML",
            Format::Svg => "SVG",
            Format::Junit => "JUnit XML",
            Format::Bmf => "Bencher Metric Format",
            Format::Gha => "github-action-benchmark JSON",
            Format::Folded => "folded stacks",
        }
    }
}

/// What a command produces: each kind writes the formats [`ResultKind::formats`] lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultKind {
    Run,
    Cpu,
    Account,
    Sweep,
    /// `oemputx ladder`: cost, latency and capacity against offered load.
    Ladder,
    Compare,
    Gate,
    Pubsub,
    /// `pubsub --rounds N` (N > 1): each round and the spread.
    PubsubRounds,
    /// `pubsub --find-capacity`: each step and the capacity.
    PubsubCapacity,
    Matrix,
    Merge,
    History,
}

impl ResultKind {
    pub const ALL: [ResultKind; 13] = [
        ResultKind::Run,
        ResultKind::Cpu,
        ResultKind::Account,
        ResultKind::Sweep,
        ResultKind::Ladder,
        ResultKind::Compare,
        ResultKind::Gate,
        ResultKind::Pubsub,
        ResultKind::PubsubRounds,
        ResultKind::PubsubCapacity,
        ResultKind::Matrix,
        ResultKind::Merge,
        ResultKind::History,
    ];

    /// The formats this result is written in: the one table every command's
    /// `--export-*` flags are checked against.
    pub fn formats(self) -> &'static [Format] {
        use Format::*;
        match self {
            ResultKind::Run => &[Json, Tsv, Csv, Markdown, OpenMetrics, Html, Folded],
            ResultKind::Cpu => &[Json, OpenMetrics],
            ResultKind::Account => &[Json],
            ResultKind::Sweep => &[Json, Tsv, Csv, Markdown, Html, Svg],
            ResultKind::Ladder => &[Json, Tsv, Csv, Markdown, Html],
            ResultKind::Compare => &[Json, Tsv, Markdown, Html],
            ResultKind::Gate => &[Json, Markdown, Html, Junit, Bmf, Gha],
            ResultKind::Pubsub => &[Json, Tsv, Markdown, Html],
            ResultKind::PubsubRounds | ResultKind::PubsubCapacity => &[Json],
            ResultKind::Matrix => &[Json, Tsv, Html, Svg],
            ResultKind::Merge => &[Json, Tsv, Html],
            ResultKind::History => &[Json, Html],
        }
    }

    /// The subcommand that produces it ("" for the put/get run).
    pub fn subcommand(self) -> &'static str {
        match self {
            ResultKind::Run => "",
            ResultKind::Cpu => "cpu",
            ResultKind::Account => "account",
            ResultKind::Sweep => "sweep",
            ResultKind::Ladder => "ladder",
            ResultKind::Compare => "compare",
            ResultKind::Gate => "gate",
            ResultKind::Pubsub | ResultKind::PubsubRounds | ResultKind::PubsubCapacity => "pubsub",
            ResultKind::Matrix => "matrix",
            ResultKind::Merge => "merge",
            ResultKind::History => "history",
        }
    }

    /// The kind a subcommand's help shows the flags of: a variant of a command's result
    /// (pub/sub's rounds and capacity search) is not.
    pub(crate) fn is_variant(self) -> bool {
        matches!(self, ResultKind::PubsubRounds | ResultKind::PubsubCapacity)
    }

    fn command(self) -> String {
        match self {
            ResultKind::Run => "a run (oemputx without a subcommand)".to_string(),
            ResultKind::PubsubRounds => "oemputx pubsub --rounds N".to_string(),
            ResultKind::PubsubCapacity => "oemputx pubsub --find-capacity".to_string(),
            k => format!("oemputx {}", k.subcommand()),
        }
    }

    /// Refuse an output this result has no format for, naming the ones it has: `asked` is
    /// each `--export-*` given, with its path.
    pub fn check(self, asked: &[(Format, &Path)]) -> Result<(), ConfigError> {
        let has = self.formats();
        match asked.iter().find(|(f, _)| !has.contains(f)) {
            None => Ok(()),
            Some((f, _)) => Err(bad(
                f.flag(),
                format!(
                    "{} writes no {}: it writes {} ({})",
                    self.command(),
                    f.name(),
                    list(has.iter().map(|f| f.name())),
                    has.iter().map(|f| f.flag()).collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }
}

/// The outputs asked for: one path per format (`-` is stdout), in the order of
/// [`Format::ALL`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exports(Vec<(Format, PathBuf)>);

impl Exports {
    pub fn new(given: impl IntoIterator<Item = (Format, PathBuf)>) -> Self {
        let mut v: Vec<(Format, PathBuf)> = given.into_iter().collect();
        v.sort_by_key(|(f, _)| *f);
        v.dedup_by_key(|(f, _)| *f);
        Exports(v)
    }

    /// The path asked for `format`.
    pub fn get(&self, format: Format) -> Option<&Path> {
        self.0
            .iter()
            .find(|(f, _)| *f == format)
            .map(|(_, p)| p.as_path())
    }

    /// Every output asked for.
    pub fn given(&self) -> impl Iterator<Item = (Format, &Path)> {
        self.0.iter().map(|(f, p)| (*f, p.as_path()))
    }

    /// Each output by its flag, as [`super::outputs::check`] takes them.
    pub(crate) fn by_flag(&self) -> Vec<(&'static str, Option<&Path>)> {
        self.given().map(|(f, p)| (f.flag(), Some(p))).collect()
    }

    /// Whether one of them is stdout.
    pub(crate) fn to_stdout(&self) -> bool {
        self.given().any(|(_, p)| p.as_os_str() == "-")
    }
}

/// "a, b and c".
fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_the_result_lacks_is_refused_naming_the_ones_it_has() {
        let p = Path::new("x.csv");
        let err = ResultKind::Compare
            .check(&[(Format::Json, p), (Format::Csv, p)])
            .expect_err("compare writes no CSV")
            .to_string();
        assert!(err.contains("--export-csv"), "{err}");
        assert!(err.contains("oemputx compare writes no CSV"), "{err}");
        assert!(err.contains("JSON, TSV, Markdown and HTML"), "{err}");
        assert!(ResultKind::Compare.check(&[(Format::Json, p)]).is_ok());
    }

    #[test]
    fn every_result_writes_json_and_flags_and_ids_agree() {
        for k in ResultKind::ALL {
            assert!(k.formats().contains(&Format::Json), "{k:?}");
        }
        for f in Format::ALL {
            assert_eq!(f.flag(), format!("--{}", f.id().replace('_', "-")));
        }
    }
}
