//! A run's report as its outputs see it: the formats a run is written in, each rendered
//! by its exporter.

use super::outputs::{Artifact, Style, unwritten};
use crate::config::formats::{Format, ResultKind};
use crate::report::Report;
use anyhow::Context as _;

impl Artifact for Report {
    const KIND: ResultKind = ResultKind::Run;
    const WHAT: &'static str = "the report";

    fn render(&self, format: Format, style: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => super::json::render(self).context("encoding the JSON report"),
            Format::Tsv => super::delimited::render(
                self,
                Style {
                    delimiter: b'\t',
                    ..*style
                },
            )
            .context("encoding the TSV report"),
            Format::Csv => {
                super::delimited::render(self, *style).context("encoding the CSV report")
            }
            Format::Markdown => Ok(super::markdown::render(self)),
            Format::OpenMetrics => Ok(super::openmetrics::run(self)),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::run::render(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}
