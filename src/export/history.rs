//! `oemputx history`'s change points as text: a line per metric with a sparkline of its
//! series and each step under it; and the gate's line for a step among main's latest runs.

use crate::gate::change_points::outcome::{ChangePoint, Outcome, Series};

/// A history's change points with the history's name, as its outputs see them.
pub struct ChangePoints<'a> {
    pub outcome: &'a Outcome,
    pub name: &'a str,
}

/// The eight heights of a sparkline, lowest first.
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The series as block characters, its lowest figure ▁ and its highest █; a series whose
/// figures are all the same is a flat line of ▄.
pub(crate) fn sparkline(values: &[f64]) -> String {
    let finite = values.iter().copied().filter(|x| x.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|&x| {
            if !x.is_finite() {
                ' '
            } else if hi - lo <= f64::EPSILON * hi.abs() {
                BLOCKS[3]
            } else {
                let level = ((x - lo) / (hi - lo) * 7.0).round() as usize;
                BLOCKS[level.min(7)]
            }
        })
        .collect()
}

/// A commit as people read it: its first seven characters.
pub(crate) fn short_commit(c: Option<&str>) -> String {
    c.map_or_else(
        || "commit unknown".to_string(),
        // By characters: a hand-edited file's commit need not be ASCII.
        |c| format!("commit {}", c.chars().take(7).collect::<String>()),
    )
}

/// Where a step is, in words: its index and its run counted from 1, its commit and start.
fn at(c: &ChangePoint, runs: usize) -> String {
    format!(
        "index {} (run {} of {runs}, {}, {})",
        c.index,
        c.index + 1,
        short_commit(c.commit.as_deref()),
        c.start_utc
    )
}

fn pct(p: Option<f64>) -> String {
    p.map_or_else(|| "from 0".to_string(), |p| format!("{p:+.1}%"))
}

/// One metric: its sparkline and range, then its steps (or why there are none).
fn metric_lines(o: &Outcome, s: &Series, width: usize) -> String {
    let finite = || s.values.iter().copied().filter(|x| x.is_finite());
    let (lo, hi) = (
        finite().fold(f64::INFINITY, f64::min),
        finite().fold(f64::NEG_INFINITY, f64::max),
    );
    let steps: Vec<&ChangePoint> = o.of_metric(&s.metric).collect();
    let tail = match (&s.note, steps.len()) {
        (Some(why), _) => format!("no change point can be told: {why}"),
        (None, 0) => "no change point".to_string(),
        (None, 1) => "1 change point".to_string(),
        (None, n) => format!("{n} change points"),
    };
    let mut out = format!(
        "{:width$}  {}  {lo:.2}-{hi:.2} {}  {tail}\n",
        s.metric,
        sparkline(&s.values),
        s.unit
    );
    for c in steps {
        out.push_str(&format!(
            "  step at {}: {:.2} -> {:.2} {} ({}, p = {:.3})\n",
            at(c, o.runs),
            c.before,
            c.after,
            s.unit,
            pct(c.change_pct),
            c.p_value
        ));
    }
    out
}

/// The change points as text.
pub(crate) fn render_text(o: &Outcome, name: &str) -> String {
    let m = &o.method;
    let mut out = format!(
        "oemputx history: {name}\nChange points by {} (Matteson & James 2014): a permutation test per step, p <= {} over {} shuffles with a fixed seed, {} runs either side at least; a figure per run is the median of its rounds; runs oldest first, indexed from 0.\n\n",
        m.name, m.alpha, m.permutations, m.min_segment
    );
    let width = o.series.iter().map(|s| s.metric.len()).max().unwrap_or(0);
    for s in &o.series {
        out.push_str(&metric_lines(o, s, width));
    }
    out
}

/// The gate's line for a step among the latest `recent` of main's runs: the baseline's
/// runs straddle two levels, so their median and their drift describe neither.
pub(crate) fn recent_step_line(c: &ChangePoint, runs: usize, file: &str) -> String {
    format!(
        "{}: main's history stepped {} at run {} of {runs} (index {}, {}): the baseline spans it, so its median and drift mix the levels before and after; `oemputx history {file}` shows the series\n",
        super::for_terminal(&c.metric),
        pct(c.change_pct),
        c.index + 1,
        c.index,
        short_commit(c.commit.as_deref()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sparkline_spans_the_eight_blocks_and_a_flat_series_is_level() {
        assert_eq!(sparkline(&[1.0, 8.0, 4.5, 1.0]), "▁█▅▁");
        assert_eq!(sparkline(&[3.0; 4]), "▄▄▄▄");
        assert_eq!(sparkline(&[]), "");
    }

    #[test]
    fn a_commit_is_shortened_and_an_unknown_one_said() {
        assert_eq!(short_commit(Some("abc1234def")), "commit abc1234");
        assert_eq!(short_commit(Some("abc")), "commit abc");
        assert_eq!(short_commit(None), "commit unknown");
        assert_eq!(short_commit(Some("ééééééééé")), "commit ééééééé");
    }
}
