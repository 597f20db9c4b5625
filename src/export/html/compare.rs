//! compare as an HTML page: live, the paper's overhead table with every change's interval
//! and a chart of the changes against the minimum effect; of saved reports, their table and
//! each report's medians with their rounds' range.

use super::{charts, esc, facts, figure, section, table};
use crate::report::compare::Comparison;
use crate::report::saved::{Metric, Saved};

/// A live comparison's page.
pub fn live(c: &Comparison) -> String {
    let mut body = String::new();
    let r = &c.run_shape;
    let settings: Vec<(&str, String)> = c
        .settings
        .iter()
        .map(|s| (s.name.as_str(), s.command.clone()))
        .collect();
    section(
        &mut body,
        "Settings, measured in one window",
        &format!(
            "{}{}<p class=\"note\">{} blocks of {} cycles (every setting once a cycle, in a balanced order), {:.0} s, ended: {}; each change is the paired estimate against {} over the blocks{}.</p>",
            facts(&settings),
            c.partial.as_ref().map_or_else(String::new, |p| format!(
                "<p class=\"note\"><strong>{}</strong></p>",
                esc(&p.line())
            )),
            r.blocks,
            r.cycles_per_block,
            r.elapsed_s,
            esc(r.ended),
            esc(c.settings.first().map_or("", |s| s.name.as_str())),
            r.control
                .as_deref()
                .map(|g| format!(", each pair adjusted by {}'s change in it", esc(g)))
                .unwrap_or_default()
        ),
    );
    let rows = crate::export::compare::live_rows(c);
    let (header, rest) = rows
        .split_first()
        .map_or((Vec::new(), &[][..]), |(h, r)| (h.clone(), r));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut overhead = table(&header, rest);
    let bars: Vec<(String, f64, f64, f64)> = c
        .changes
        .iter()
        .filter_map(|ch| {
            Some((
                format!("{} {}", ch.setting, ch.metric),
                ch.change_pct?,
                ch.low_pct?,
                ch.high_pct?,
            ))
        })
        .collect();
    let band = c.changes.first().map(|ch| (0.0, ch.min_effect_pct));
    if let Ok(svg) = charts::interval_bars("Change against the base (%)", "%", &bars, band) {
        overhead.push_str(&figure(
            "changes",
            "Each setting's change against the base per group, with its interval; the dashed lines are the minimum effect: a change is reported only beyond them.",
            &svg,
        ));
    }
    let settings_bars: Vec<(String, f64, f64, f64)> = c
        .metrics
        .iter()
        .position(|m| m == crate::report::compare::TOTAL)
        .map(|mi| {
            c.arms
                .iter()
                .filter_map(|a| {
                    let f = a.figures.get(mi).copied().flatten()?;
                    Some((a.setting.clone(), f.median, f.low, f.high))
                })
                .collect()
        })
        .unwrap_or_default();
    if let Ok(svg) = charts::interval_bars(
        "Captured CPU per transaction by setting (µs)",
        "µs/tran",
        &settings_bars,
        None,
    ) {
        overhead.push_str(&figure(
            "settings",
            "Each setting's median captured CPU per transaction over its rounds, with the 95 % interval of the median.",
            &svg,
        ));
    }
    section(&mut body, "The overhead table", &overhead);
    if let Some(html) = profile_diff(c) {
        section(&mut body, "Where it changed (--profile)", &html);
    }
    let good = c.partial.is_none();
    super::page(
        "oemputx compare: what each setting costs",
        (
            match r.ended {
                _ if good => "measured in one window",
                "failed" => "PARTIAL: stopped by a fault",
                _ => "INTERRUPTED",
            },
            good,
        ),
        &body,
    )
}

/// Saved reports' page: separate runs, each with its rounds' range.
pub fn saved(runs: &[Saved], rows: &[Vec<String>]) -> String {
    let mut body = String::new();
    let (header, rest) = rows
        .split_first()
        .map_or((Vec::new(), &[][..]), |(h, r)| (h.clone(), r));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut content = format!(
        "<p class=\"note\">These are separate runs: what differs between them includes the machine's drift between their windows. To compare settings in one window, with intervals: oemputx compare --flow-cmd CMD --setting NAME=ARGS … -- RUN OPTIONS.</p>{}",
        table(&header, rest)
    );
    let bars: Vec<(String, f64, f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            let v = r.samples(&Metric::Captured);
            if v.is_empty() {
                return None;
            }
            let m = crate::gate::statistics::median(&v);
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            Some((r.name(), m, lo, hi))
        })
        .collect();
    if let Ok(svg) = charts::interval_bars(
        "Captured CPU per transaction by report (µs)",
        "µs/tran",
        &bars,
        None,
    ) {
        content.push_str(&figure(
            "reports",
            "Each report's median captured CPU per transaction over its rounds, with its rounds' range.",
            &svg,
        ));
    }
    section(&mut body, "Saved reports", &content);
    super::page(
        "oemputx compare: separate runs",
        ("separate runs", true),
        &body,
    )
}

/// With --profile: each setting's functions against the base's, and the differential flame
/// graphs.
fn profile_diff(c: &Comparison) -> Option<String> {
    if c.profile_diff.is_empty() {
        return None;
    }
    let mut html = super::flame::changes_table(&c.profile_diff, ("base", "setting"), true);
    if let Some(base) = c.profile_folded.first() {
        for (set, folded) in c.settings.iter().zip(&c.profile_folded).skip(1) {
            let first = c.settings.first().map_or("base", |s| s.name.as_str());
            html.push_str(&super::flame::differential(
                base,
                folded,
                (first, &set.name),
            ));
        }
    }
    Some(html)
}
