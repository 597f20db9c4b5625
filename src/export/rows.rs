//! The lines the text and Markdown exporters both lay out, in the order both show them:
//! each group's members then its total row, and the figures that have a spread across
//! rounds. Each exporter only chooses its cells and its units.

use crate::report::rounds::BestMedianWorst;
use crate::report::{GroupRow, ProcessRow, RoundsSummary};

/// One line of the CPU table.
pub enum CpuLine<'a> {
    /// A process (thread, cgroup) of a group.
    Member(&'a ProcessRow),
    /// A group's total, after its members.
    Total(&'a GroupRow),
}

/// Each group's member rows, then its total row, group by group.
pub(crate) fn cpu_lines<'a>(
    processes: &'a [ProcessRow],
    groups: &'a [GroupRow],
) -> Vec<CpuLine<'a>> {
    let mut lines = Vec::with_capacity(processes.len() + groups.len());
    for g in groups {
        lines.extend(
            processes
                .iter()
                .filter(|p| p.group == g.name)
                .map(CpuLine::Member),
        );
        lines.push(CpuLine::Total(g));
    }
    lines
}

/// What a spread line is about.
pub enum SpreadOf<'a> {
    Rate,
    RoundTripMean,
    AppCpu,
    Captured,
    Group(&'a str),
}

impl SpreadOf<'_> {
    /// Its label with the micro unit written `us` (text) or `µs` (Markdown), and the group
    /// name followed by `star` (a `*`, escaped as Markdown needs).
    pub fn label(&self, micro: &str, star: &str) -> String {
        match self {
            SpreadOf::Rate => "Rate (trans/s)".into(),
            SpreadOf::RoundTripMean => format!("Round trip mean ({micro})"),
            SpreadOf::AppCpu => format!("App CPU ({micro}/tran)"),
            SpreadOf::Captured => format!("Captured ({micro}/tran)"),
            SpreadOf::Group(g) => format!("{g}{star} ({micro}/tran)"),
        }
    }
}

/// The figures with a best/median/worst across rounds, whole-run figures first.
pub(crate) fn spread_lines(sum: &RoundsSummary) -> Vec<(SpreadOf<'_>, BestMedianWorst)> {
    [
        (SpreadOf::Rate, sum.rate_tps),
        (SpreadOf::RoundTripMean, sum.round_trip_mean_us),
        (SpreadOf::AppCpu, sum.app_cpu_us_per_tran),
        (SpreadOf::Captured, sum.captured_us_per_tran),
    ]
    .into_iter()
    .filter_map(|(of, b)| b.map(|b| (of, b)))
    .chain(
        sum.groups
            .iter()
            .map(|g| (SpreadOf::Group(&g.name), g.total_us_per_tran)),
    )
    .collect()
}
