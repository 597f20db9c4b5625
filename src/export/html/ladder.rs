//! A ladder as an HTML page: the answer, two charts against the offered rate (each group's
//! µs per message; the round trip's p99 with the SLO and the highest rate that held), the
//! steps, the capacity along the curve, the warnings.

use super::charts::rate_plot;
use super::{esc, facts, figure, section, table};
use crate::export::ladder::{about, capacity_at_lines, capacity_rows, step_rows};
use crate::report::ladder::verdict::curve;
use crate::report::ladder::{Ladder, LadderEnd, rate};

/// Each group's µs per message, and the corrected total, against the rate: one point a
/// rate (`verdict::curve`).
fn cost_series(l: &Ladder) -> Vec<(String, Vec<(f64, f64)>)> {
    let paced = curve(&l.steps);
    let mut names: Vec<String> = Vec::new();
    for g in paced.iter().flat_map(|s| &s.groups) {
        if !names.contains(&g.name) {
            names.push(g.name.clone());
        }
    }
    let mut out: Vec<(String, Vec<(f64, f64)>)> = names
        .iter()
        .map(|n| {
            let pts = paced
                .iter()
                .filter_map(|s| {
                    let g = s.groups.iter().find(|g| &g.name == n)?;
                    Some((s.offered_tps?, g.us_per_tran))
                })
                .collect();
            (n.clone(), pts)
        })
        .collect();
    let total: Vec<(f64, f64)> = paced
        .iter()
        .filter_map(|s| Some((s.offered_tps?, s.corrected_us_per_tran?)))
        .collect();
    if !total.is_empty() {
        out.push(("corrected total".into(), total));
    }
    out
}

/// p99 against the rate, one point a rate.
fn p99_series(l: &Ladder) -> Vec<(String, Vec<(f64, f64)>)> {
    let pts = curve(&l.steps)
        .iter()
        .filter_map(|s| Some((s.offered_tps?, s.p99_us / 1000.0)))
        .collect();
    vec![("p99 round trip".into(), pts)]
}

/// The two charts against the offered rate.
fn figures(l: &Ladder) -> String {
    let mut figures = String::new();
    let top: Vec<(String, f64)> = l
        .max_sustainable_tps
        .map(|t| (format!("sustains {} msg/s", rate(t)), t))
        .into_iter()
        .collect();
    let cost = (
        "CPU per message by group against the offered rate",
        "µs per message",
    );
    if let Ok(svg) = rate_plot(cost, &cost_series(l), &[], &top, false) {
        figures.push_str(&figure(
            "cost-by-rate",
            "Each group's CPU µs per message (and the corrected total) at each offered rate: the cost per message moves with the rate.",
            &svg,
        ));
    }
    let slo: Vec<(String, f64)> = l
        .slo
        .iter()
        .filter(|s| s.percentile == 99.0)
        .map(|s| (format!("SLO {}", s.describe()), s.limit_us / 1000.0))
        .collect();
    let p99 = (
        "p99 round trip against the offered rate",
        "p99 ms (log scale)",
    );
    if let Ok(svg) = rate_plot(p99, &p99_series(l), &slo, &top, true) {
        figures.push_str(&figure(
            "p99-by-rate",
            "The p99 round trip (from each request's intended send time) at each offered rate, with the SLO and the highest rate that held.",
            &svg,
        ));
    }
    figures
}

/// The answer's figures as a table of facts.
fn summary(l: &Ladder) -> String {
    let mut rows = vec![
        (
            "max sustainable",
            l.max_sustainable_tps
                .map_or("none".into(), |m| format!("{} msg/s", rate(m))),
        ),
        (
            "interval",
            format!(
                "[{}, {}]",
                l.max_sustainable_low_tps.map_or("-".into(), rate),
                l.max_sustainable_high_tps
                    .map_or("not reached".into(), rate)
            ),
        ),
        (
            "limited by",
            l.limited_by.map_or("-".into(), |b| b.word().to_string()),
        ),
        ("why", l.limited_why.clone().unwrap_or_default()),
        (
            "knee",
            l.knee_tps.map_or("-".into(), |k| {
                format!("{} msg/s (Kleinrock's power)", rate(k))
            }),
        ),
    ];
    if !l.slo.is_empty() {
        let slo = l.slo.iter().map(|s| s.describe()).collect::<Vec<_>>();
        rows.push(("SLO", slo.join(", ")));
    }
    facts(&rows)
}

/// A table from rows whose first is the header.
fn table_of(rows: &[Vec<String>]) -> String {
    rows.split_first().map_or(String::new(), |(h, rest)| {
        let h: Vec<&str> = h.iter().map(String::as_str).collect();
        table(&h, rest)
    })
}

/// The ladder's page.
pub fn render(l: &Ladder) -> String {
    let mut body = format!(
        "<p class=\"headline\">{}</p><p class=\"note\">{}</p>",
        esc(&l.answer),
        esc(&about(l))
    );
    section(&mut body, "The curve", &figures(l));
    section(&mut body, "The answer", &summary(l));
    let mut steps = table_of(&step_rows(l));
    for s in l
        .steps
        .iter()
        .filter(|s| !s.holds && s.offered_tps.is_some())
    {
        steps.push_str(&format!(
            "<p class=\"note\">Step {} does not hold: {}</p>",
            s.step,
            esc(&s.why.join("; "))
        ));
    }
    section(&mut body, "Steps", &steps);
    if !l.capacity.is_empty() {
        let at: String = capacity_at_lines(l)
            .iter()
            .map(|line| format!("<p class=\"note\">{}</p>", esc(line)))
            .collect();
        section(
            &mut body,
            "Capacity along the curve (cores kept busy, measured)",
            &(table_of(&capacity_rows(l)) + &at),
        );
    }
    if !l.warnings.is_empty() {
        let w: String = l
            .warnings
            .iter()
            .map(|w| format!("<p class=\"warn\">{}</p>", esc(w)))
            .collect();
        section(&mut body, "Warnings", &w);
    }
    let status = match l.end {
        LadderEnd::Completed => "completed",
        LadderEnd::Budget => "stopped at --max-time",
        LadderEnd::Interrupted => "INTERRUPTED",
        LadderEnd::Failed => "FAILED",
    };
    let good = matches!(l.end, LadderEnd::Completed | LadderEnd::Budget);
    super::page(
        "oemputx ladder: cost and latency against offered load",
        (status, good),
        &body,
    )
}
