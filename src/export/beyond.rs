//! Cost beyond CPU in the text and Markdown reports: a row per metric, a column per group
//! that has any figure (the driver has none), then where syncs and network bytes came from
//! or why they are missing; and a soak's trend (each group's slopes and the verdict).

use crate::accounting::resources::{BeyondInfo, METRICS};
use crate::report::GroupRow;
use std::fmt::Write;

/// Groups per block of the text table: 80 columns hold a label and four groups.
const TEXT_COLUMNS: usize = 4;

/// The groups with a figure beyond CPU.
fn measured(groups: &[GroupRow]) -> Vec<&GroupRow> {
    groups.iter().filter(|g| g.cost.any()).collect()
}

/// The text table, under the CPU table.
pub fn text(o: &mut String, groups: &[GroupRow], info: Option<&BeyondInfo>) {
    let shown = measured(groups);
    if shown.is_empty() {
        return;
    }
    for block in shown.chunks(TEXT_COLUMNS) {
        let _ = writeln!(o);
        let _ = write!(o, " {:<28}", "Beyond CPU, per tran");
        for g in block {
            let _ = write!(o, " {:>11}", super::for_terminal(&format!("{}*", g.name)));
        }
        let _ = writeln!(o);
        for m in &METRICS {
            let _ = write!(o, " {:<28}", m.label);
            for g in block {
                let _ = write!(o, " {:>11}", m.shown(&g.cost));
            }
            let _ = writeln!(o);
        }
    }
    if let Some(i) = info {
        let _ = writeln!(
            o,
            "Syncs from            : {}",
            super::for_terminal(&i.syncs)
        );
        let _ = writeln!(
            o,
            "Network bytes from    : {}",
            super::for_terminal(&i.network)
        );
        for n in &i.notes {
            let _ = writeln!(o, "Beyond CPU note       : {}", super::for_terminal(n));
        }
    }
}

/// The Markdown table.
pub fn markdown(o: &mut String, groups: &[GroupRow], info: Option<&BeyondInfo>) {
    let shown = measured(groups);
    if shown.is_empty() {
        return;
    }
    let md = super::cells::markdown_text;
    let _ = write!(o, "\n| Beyond CPU, per tran |");
    for g in &shown {
        let _ = write!(o, " {} |", md(&g.name));
    }
    let _ = write!(o, "\n|---|");
    for _ in &shown {
        let _ = write!(o, "---:|");
    }
    let _ = writeln!(o);
    for m in &METRICS {
        let _ = write!(o, "| {} |", m.label);
        for g in &shown {
            let _ = write!(o, " {} |", m.shown(&g.cost));
        }
        let _ = writeln!(o);
    }
    if let Some(i) = info {
        let _ = writeln!(o, "\nSyncs: {}. Network: {}.", md(&i.syncs), md(&i.network));
    }
}

/// A slope with its interval, `+1.2 [-0.4, +2.8]`.
fn slope(s: &crate::report::trend::Slope, unit: &str) -> String {
    format!("{:+.1}{unit} [{:+.1}, {:+.1}]", s.per_hour, s.low, s.high)
}

/// The trend of a run of five rounds or more, in the text report.
pub fn trend_text(o: &mut String, t: &crate::report::trend::Trend) {
    use crate::report::trend::per_hour_bytes;
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        " {:<12} {:>28} {:>30} {:>6}",
        "Trend", "cost/msg %/h [95 %]", "resident per hour [95 %]", "steady"
    );
    for g in &t.groups {
        let rss = g.rss_bytes_per_hour.map_or("n/a".to_string(), |s| {
            format!(
                "{} [{}, {}]",
                per_hour_bytes(s.per_hour),
                per_hour_bytes(s.low).trim_end_matches("/h"),
                per_hour_bytes(s.high).trim_end_matches("/h")
            )
        });
        let _ = writeln!(
            o,
            " {:<12} {:>28} {:>30} {:>6}",
            super::for_terminal(&g.name),
            g.us_per_tran_pct_per_hour
                .as_ref()
                .map_or("n/a".to_string(), |s| slope(s, "")),
            rss,
            if g.steady { "yes" } else { "no" }
        );
    }
    let _ = writeln!(
        o,
        "Trend                 : {} ({} rounds, {:.3} h)",
        super::for_terminal(&t.verdict),
        t.rounds,
        t.hours
    );
}
