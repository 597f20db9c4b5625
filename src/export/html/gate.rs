//! The gate's verdict as an HTML page: the verdict table and each metric's change with its
//! interval against the tolerance.

use super::{charts, esc, figure, section, table};
use crate::gate::{Outcome, Verdict};

/// The gate's page.
pub fn render(o: &Outcome) -> String {
    let mut body = String::new();
    let rows = crate::export::gate::rows(o);
    let (header, rest) = rows
        .split_first()
        .map_or((Vec::new(), &[][..]), |(h, r)| (h.clone(), r));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut content = format!(
        "<p class=\"note\">{} against baseline {} ({} mode). Change is oriented so that + is worse.</p>{}",
        esc(&o.current),
        esc(&o.baseline),
        esc(o.mode),
        table(&header, rest)
    );
    let pct = |x: f64| 100.0 * (x - 1.0);
    let bars: Vec<(String, f64, f64, f64)> = o
        .decisions
        .iter()
        .filter(|d| d.ratio.is_finite())
        .map(|d| {
            let (lo, hi) = if d.ci_low.is_finite() && d.ci_high.is_finite() {
                (pct(d.ci_low), pct(d.ci_high))
            } else {
                (pct(d.ratio), pct(d.ratio))
            };
            (d.metric.clone(), pct(d.ratio), lo, hi)
        })
        .collect();
    let tolerances: Vec<f64> = o.decisions.iter().map(|d| d.tolerance).collect();
    let same = tolerances.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-12);
    let band = tolerances
        .first()
        .filter(|_| same)
        .map(|t| (0.0, 100.0 * t));
    if let Ok(svg) = charts::interval_bars("Change of each metric (%)", "%", &bars, band) {
        content.push_str(&figure(
            "verdict",
            "Each gated metric's change with its interval; the dashed lines are ± the tolerance: a regression is an interval wholly above the upper one.",
            &svg,
        ));
    }
    for d in o.decisions.iter().filter(|d| d.note.is_some()) {
        content.push_str(&format!(
            "<p class=\"note\"><b>{}</b>: {}</p>",
            esc(&d.metric),
            esc(d.note.as_deref().unwrap_or(""))
        ));
    }
    section(&mut body, "Verdict by metric", &content);
    if !o.profile.profile_diff.is_empty() {
        let mut html = format!(
            "<p class=\"headline\">Most changed: {}</p>{}",
            esc(&crate::export::gate::where_changed(o)),
            super::flame::changes_table(&o.profile.profile_diff, ("A", "B"), false)
        );
        if let Some(f) = &o.profile.folded {
            html.push_str(&super::flame::differential(&f.0, &f.1, ("A", "B")));
        }
        section(&mut body, "Where it changed (--profile)", &html);
    }
    let good = matches!(o.verdict, Verdict::Pass | Verdict::Improvement);
    super::page(
        "oemputx gate",
        (&format!("verdict: {}", o.verdict.as_str()), good),
        &body,
    )
}
