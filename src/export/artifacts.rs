//! Every result as its outputs see it ([`Artifact`]): which result it is — its formats are
//! that kind's in the one table, `config::formats::ResultKind::formats` — and the exporter
//! that renders it in each. Kept apart from the exporters so that the HTML pages, which use
//! the text exporters' helpers, and the exporters themselves import no circle.

use super::identity::{self, Identity};
use super::outputs::{Artifact, Style, unwritten};
use super::{cells, compare, gate, history, matrix, pubsub, sweep};
use crate::config::formats::{Format, ResultKind};
use crate::gate::Outcome;
use crate::pubsub::report::{PubSubCapacity, PubSubReport, PubSubRounds};
use crate::report::Report;
use crate::report::account::AccountReport;
use crate::report::compare::Comparison;
use anyhow::Context as _;

/// JSON as every result writes it: pretty, one newline at the end.
/// A result made now, from one round's settings: the commit is this checkout's.
fn live_identity(label: &str, settings: &crate::report::Settings) -> Identity {
    Identity {
        label: label.to_string(),
        commit: crate::report::history::this_commit().unwrap_or_default(),
        ..Identity::of_settings(settings)
    }
}

fn json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

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
            // A run whose profile failed, or was interrupted, has no stacks: the file is
            // empty and the report's warnings say why; the run's exit code stands.
            Format::Folded => Ok(self
                .profile
                .as_ref()
                .map(super::profile::folded)
                .unwrap_or_default()),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for crate::report::sweep::Sweep {
    const KIND: ResultKind = ResultKind::Sweep;
    const WHAT: &'static str = "the sweep";

    fn render(&self, format: Format, style: &Style) -> anyhow::Result<String> {
        match format {
            // The sweep's JSON has always ended without a newline; kept, files compare equal.
            Format::Json => {
                Ok(serde_json::to_string_pretty(self).context("encoding the sweep as JSON")?)
            }
            Format::Tsv | Format::Csv => {
                let mut rows = sweep::rows(self);
                let id = live_identity(&self.label, &self.settings);
                identity::append(&mut rows, |_| id.clone());
                let delimiter = if format == Format::Tsv {
                    b'\t'
                } else {
                    style.delimiter
                };
                Ok(cells::delimited(&rows, delimiter)?)
            }
            Format::Markdown => Ok(format!(
                "### oemputx sweep: {}\n\n{}{}",
                self.flow_cmd,
                self.partial
                    .as_ref()
                    .map_or_else(String::new, |p| format!("**{}**\n\n", p.line())),
                cells::markdown(&sweep::rows(self))
            )),
            Format::Svg => sweep::render_svg(self).context("drawing the sweep chart"),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::sweep::render(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for crate::report::ladder::Ladder {
    const KIND: ResultKind = ResultKind::Ladder;
    const WHAT: &'static str = "the ladder";

    fn render(&self, format: Format, style: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            Format::Tsv | Format::Csv => {
                let delimiter = if format == Format::Tsv {
                    b'\t'
                } else {
                    style.delimiter
                };
                Ok(cells::delimited(&super::ladder::rows(self), delimiter)?)
            }
            Format::Markdown => Ok(super::ladder::markdown(self)),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::ladder::render(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for Comparison {
    const KIND: ResultKind = ResultKind::Compare;
    const WHAT: &'static str = "the comparison";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            Format::Tsv => {
                let mut rows = compare::live_tsv_rows(self);
                let id = live_identity("", &self.run);
                identity::append(&mut rows, |_| id.clone());
                Ok(cells::delimited(&rows, b'\t')?)
            }
            Format::Markdown => {
                let mut md = cells::markdown(&compare::live_rows(self));
                for line in super::profile::top_changes(&self.profile_diff, 10) {
                    md.push_str(&format!("\n- {}", cells::markdown_text(&line)));
                }
                Ok(match &self.partial {
                    Some(p) => format!("**{}**\n\n{md}", p.line()),
                    None => md,
                })
            }
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::compare::live(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for compare::SavedComparison<'_> {
    const KIND: ResultKind = ResultKind::Compare;
    const WHAT: &'static str = "the comparison";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => Ok(format!(
                "{:#}\n",
                compare::saved_json(self.runs, self.forced_differences)
            )),
            Format::Tsv => Ok(cells::delimited(
                &compare::saved_tsv_rows_identified(self.runs),
                b'\t',
            )?),
            Format::Markdown => Ok(cells::markdown(&compare::rows(self.runs))),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::compare::saved(
                self.runs,
                &compare::rows(self.runs),
            )),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for Outcome {
    const KIND: ResultKind = ResultKind::Gate;
    const WHAT: &'static str = "the gate's verdict";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            // The verdict's JSON has always ended without a newline; kept.
            Format::Json => Ok(serde_json::to_string_pretty(self)?),
            Format::Markdown => Ok(gate::render_markdown(self)),
            Format::Junit => Ok(gate::render_junit(self)),
            Format::Bmf => gate::render_bmf(self),
            Format::Gha => gate::render_gha(self),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::gate::render(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for PubSubReport {
    const KIND: ResultKind = ResultKind::Pubsub;
    const WHAT: &'static str = "the pub/sub report";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            Format::Tsv => {
                let mut rows = pubsub::rows(self);
                let s = &self.settings;
                let id = Identity {
                    transport: s.transport.to_string(),
                    tasks: s.publishers.to_string(),
                    msg_bytes: s.msg_size.to_string(),
                    persistent: s.persistent.to_string(),
                    rounds: "1".into(),
                    count: s.count.to_string(),
                    duration_s: s.duration_s.map(|d| d.to_string()).unwrap_or_default(),
                    rate_limit_tps: s.rate_limit.map(|r| r.to_string()).unwrap_or_default(),
                    commit: crate::report::history::this_commit().unwrap_or_default(),
                    ..Identity::default()
                };
                identity::append(&mut rows, |_| id.clone());
                Ok(cells::delimited(&rows, b'\t')?)
            }
            Format::Markdown => Ok(pubsub::markdown(self)),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::pubsub::render(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for PubSubRounds {
    const KIND: ResultKind = ResultKind::PubsubRounds;
    const WHAT: &'static str = "the pub/sub rounds";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for PubSubCapacity {
    const KIND: ResultKind = ResultKind::PubsubCapacity;
    const WHAT: &'static str = "the capacity search";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for crate::report::matrix::Matrix {
    const KIND: ResultKind = ResultKind::Matrix;
    const WHAT: &'static str = "the matrix";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            Format::Tsv => {
                // Each cell's own persistence and size lead its row; the rest identifies the run.
                let mut rows: Vec<Vec<String>> = matrix::tsv(self)
                    .lines()
                    .map(|l| l.split('\t').map(String::from).collect())
                    .collect();
                let id = Identity {
                    transport: self
                        .broker
                        .split("://")
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    rounds: self.rounds.to_string(),
                    count: self.count.to_string(),
                    commit: crate::report::history::this_commit().unwrap_or_default(),
                    ..Identity::default()
                };
                identity::append(&mut rows, |_| id.clone());
                Ok(cells::delimited(&rows, b'\t')?)
            }
            Format::Svg => matrix::svg(self).context("drawing the matrix chart"),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::matrix::render(self)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for history::ChangePoints<'_> {
    const KIND: ResultKind = ResultKind::History;
    const WHAT: &'static str = "the change points";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self.outcome),
            #[cfg(feature = "html")]
            Format::Html => Ok(super::html::history::render(self.outcome, self.name)),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for AccountReport {
    const KIND: ResultKind = ResultKind::Account;
    const WHAT: &'static str = "the account report";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for crate::report::merge::CpuWindow {
    const KIND: ResultKind = ResultKind::Cpu;
    const WHAT: &'static str = "the CPU window";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::Json => json(self),
            // Refused before the run (config::tools): the watch's file, not a window's.
            Format::OpenMetrics => Err(anyhow::anyhow!(
                "{} is not written as OpenMetrics: that is the watch's file (--interval), rewritten every interval",
                Self::WHAT
            )),
            other => Err(unwritten::<Self>(other)),
        }
    }
}

impl Artifact for crate::report::cpu::CpuInterval {
    const KIND: ResultKind = ResultKind::Cpu;
    const WHAT: &'static str = "the CPU watch";

    fn render(&self, format: Format, _: &Style) -> anyhow::Result<String> {
        match format {
            Format::OpenMetrics => Ok(super::openmetrics::watch(
                &self.total,
                &self.last,
                self.interval_s,
            )),
            // Refused before the run (config::tools): one window's file (--from, --until).
            Format::Json => Err(anyhow::anyhow!(
                "{} is not written as JSON: that is one window's (--from, --until)",
                Self::WHAT
            )),
            other => Err(unwritten::<Self>(other)),
        }
    }
}
