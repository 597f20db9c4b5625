//! What `oemputx history` reports (`oemputx.change-points/1`): each metric's series of
//! main's runs and the steps found in it, each step with the run's commit and start. Built
//! from plain figures, so that the command only reads the file and the exports only render.

use super::{ALPHA, MIN_SEGMENT, PERMUTATIONS, Unsearchable, steps};
use serde::Serialize;

/// The JSON schema tag of the change points' report.
pub const SCHEMA: &str = "oemputx.change-points/1";

/// The method, as the report states it.
#[derive(Debug, Clone, Serialize)]
pub struct Method {
    pub name: &'static str,
    pub reference: &'static str,
    pub alpha: f64,
    pub permutations: usize,
    pub min_segment: usize,
}

impl Method {
    pub fn used() -> Method {
        Method {
            name: "e-divisive means",
            reference: "Matteson & James, A Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data, JASA 109(505), 2014",
            alpha: ALPHA,
            permutations: PERMUTATIONS,
            min_segment: MIN_SEGMENT,
        }
    }
}

/// One metric's series: a figure per run (the median of its rounds), oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub metric: String,
    pub unit: &'static str,
    pub values: Vec<f64>,
    /// Why the series was not searched (too few runs), else None.
    pub note: Option<String>,
}

/// A step in one metric's series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    /// The first run after the step (0-based, oldest first).
    pub index: usize,
    /// That run's commit, when the history recorded it.
    pub commit: Option<String>,
    /// That run's start (UTC), as its report gives it.
    pub start_utc: String,
    pub metric: String,
    /// The medians of the runs either side, up to the neighbouring steps.
    pub before: f64,
    pub after: f64,
    pub change_pct: Option<f64>,
    pub p_value: f64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub schema: &'static str,
    /// The history file, as named.
    pub history: String,
    pub runs: usize,
    pub method: Method,
    pub series: Vec<Series>,
    /// Every metric's steps, by metric (in the series' order) then by index.
    pub change_points: Vec<ChangePoint>,
}

/// The runs of a history, as the report names them.
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    pub commits: &'a [Option<String>],
    pub started: &'a [String],
}

impl Outcome {
    /// Search each metric's series (name, unit, a figure per run) for steps.
    pub fn of(
        history: &str,
        runs: Runs<'_>,
        metrics: Vec<(String, &'static str, Vec<f64>)>,
    ) -> Result<Outcome, Unsearchable> {
        let mut series = Vec::new();
        let mut change_points = Vec::new();
        for (metric, unit, values) in metrics {
            let note = match steps(&values) {
                Ok(found) => {
                    change_points.extend(found.into_iter().map(|s| ChangePoint {
                        index: s.index,
                        commit: runs.commits.get(s.index).cloned().flatten(),
                        start_utc: runs.started.get(s.index).cloned().unwrap_or_default(),
                        metric: metric.clone(),
                        before: s.before,
                        after: s.after,
                        change_pct: s.change_pct,
                        p_value: s.p_value,
                    }));
                    None
                }
                Err(e @ Unsearchable::TooShort { .. }) => Some(e.to_string()),
                Err(e) => return Err(e),
            };
            series.push(Series {
                metric,
                unit,
                values,
                note,
            });
        }
        Ok(Outcome {
            schema: SCHEMA,
            history: history.to_string(),
            runs: runs.started.len(),
            method: Method::used(),
            series,
            change_points,
        })
    }

    /// The steps of one metric.
    pub(crate) fn of_metric<'a>(
        &'a self,
        metric: &'a str,
    ) -> impl Iterator<Item = &'a ChangePoint> {
        self.change_points
            .iter()
            .filter(move |c| c.metric == metric)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_in_one_metric_is_reported_for_that_metric_only() {
        let flow = super::super::tests::series(0x5eed_0101, 30, 0.025, 15, 0.10);
        let total = super::super::tests::series(0x5eed_0103, 30, 0.025, 30, 0.0);
        let commits: Vec<Option<String>> = (0..30).map(|i| Some(format!("c{i:03}"))).collect();
        let started: Vec<String> = (0..30).map(|i| format!("day {i}")).collect();
        let o = Outcome::of(
            "h.json",
            Runs {
                commits: &commits,
                started: &started,
            },
            vec![
                ("FLOW".into(), "us/tran", flow),
                ("captured".into(), "us/tran", total),
            ],
        )
        .expect("finite");
        assert_eq!(o.runs, 30);
        let flow: Vec<&ChangePoint> = o.of_metric("FLOW").collect();
        assert_eq!(flow.len(), 1, "{o:?}");
        assert!(flow[0].index.abs_diff(15) <= 1, "{o:?}");
        assert_eq!(
            flow[0].commit.as_deref(),
            Some(format!("c{:03}", flow[0].index).as_str())
        );
        assert_eq!(o.of_metric("captured").count(), 0, "{o:?}");
        assert!(o.series.iter().all(|s| s.note.is_none()));
    }

    #[test]
    fn fewer_than_six_runs_give_no_steps_and_say_why_and_missing_commits_are_null() {
        let started: Vec<String> = (0..5).map(|i| format!("day {i}")).collect();
        let o = Outcome::of(
            "h.json",
            Runs {
                commits: &[None, None, None, None, None],
                started: &started,
            },
            vec![("FLOW".into(), "us/tran", vec![1.0, 1.0, 1.0, 2.0, 2.0])],
        )
        .expect("finite");
        assert!(o.change_points.is_empty());
        let note = o.series[0].note.as_deref().expect("a note");
        assert!(
            note.contains("5 runs") && note.contains("6 or more"),
            "{note}"
        );
    }
}
