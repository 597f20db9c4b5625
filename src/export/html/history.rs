//! `oemputx history`'s change points as an HTML page: each metric's series of main's runs
//! charted with its change points marked, and a table of the steps.

use super::{charts, esc, facts, figure, section, table};
use crate::export::history::short_commit;
use crate::gate::change_points::outcome::Outcome;

/// The page.
pub fn render(o: &Outcome, name: &str) -> String {
    let m = &o.method;
    let mut body = String::new();
    section(
        &mut body,
        "History",
        &facts(&[
            ("history", name.to_string()),
            ("runs", o.runs.to_string()),
            (
                "method",
                format!(
                    "{} ({}); permutation test, p <= {} over {} shuffles with a fixed seed; {} runs either side at least",
                    m.name, m.reference, m.alpha, m.permutations, m.min_segment
                ),
            ),
        ]),
    );
    for s in &o.series {
        let steps: Vec<(usize, f64, f64)> = o
            .of_metric(&s.metric)
            .map(|c| (c.index, c.before, c.after))
            .collect();
        let mut content = match charts::history_plot(&s.metric, s.unit, &s.values, &steps) {
            Ok(svg) => figure(
                &s.metric,
                &format!(
                    "{} of each of main's runs (the median of its rounds); a vertical line before each run where the series stepped, the dashed levels the medians between them.",
                    s.metric
                ),
                &svg,
            ),
            Err(e) => format!(
                "<p class=\"note\">The chart could not be drawn: {}</p>",
                esc(&e.to_string())
            ),
        };
        let rows: Vec<Vec<String>> = o
            .of_metric(&s.metric)
            .map(|c| {
                vec![
                    c.index.to_string(),
                    short_commit(c.commit.as_deref()),
                    c.start_utc.clone(),
                    format!("{:.2}", c.before),
                    format!("{:.2}", c.after),
                    c.change_pct.map_or("-".into(), |p| format!("{p:+.1}%")),
                    format!("{:.3}", c.p_value),
                ]
            })
            .collect();
        if let Some(why) = &s.note {
            content.push_str(&format!(
                "<p class=\"note\">No change point can be told: {}</p>",
                esc(why)
            ));
        } else if rows.is_empty() {
            content.push_str("<p class=\"note\">No change point.</p>");
        } else {
            content.push_str(&table(
                &[
                    "index",
                    "commit",
                    "run started",
                    "before",
                    "after",
                    "step",
                    "p",
                ],
                &rows,
            ));
        }
        section(&mut body, &format!("{} ({})", s.metric, s.unit), &content);
    }
    let n = o.change_points.len();
    super::page(
        "oemputx history",
        (
            &match n {
                0 => "no change point".to_string(),
                1 => "1 change point".to_string(),
                n => format!("{n} change points"),
            },
            n == 0,
        ),
        &body,
    )
}
