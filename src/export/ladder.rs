//! A ladder's text, its rows for TSV, CSV and Markdown, and its capacity table: the answer
//! first, then a row per step (in the order measured), then the cores each group kept
//! busy at each rate that held.

use super::cells;
use super::identity::{self, Identity};
use crate::report::ladder::{Ladder, LadderEnd, Step, duration_us, rate};

/// The groups of a ladder, in the order the first step has them.
fn group_names(l: &Ladder) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for g in l.steps.iter().flat_map(|s| &s.groups) {
        if !names.contains(&g.name) {
            names.push(g.name.clone());
        }
    }
    names
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or(String::new(), |x| format!("{x:.decimals$}"))
}

fn offered(s: &Step) -> String {
    s.offered_tps.map_or("unpaced".into(), rate)
}

/// "yes", "no", or "-" for an unpaced step (it offers nothing to keep up with).
fn holds(s: &Step) -> &'static str {
    match (s.offered_tps, s.holds) {
        (None, true) => "-",
        (_, true) => "yes",
        (_, false) => "no",
    }
}

/// A figure and its interval: "455.2 [446.0, 464.4]".
fn with_interval(v: Option<f64>, low: Option<f64>, high: Option<f64>) -> String {
    match (v, low, high) {
        (Some(v), Some(l), Some(h)) => format!("{v:.1} [{l:.1}, {h:.1}]"),
        (Some(v), ..) => format!("{v:.1}"),
        _ => "-".into(),
    }
}

/// The step table a person reads (text, Markdown, HTML).
pub(crate) fn step_rows(l: &Ladder) -> Vec<Vec<String>> {
    let groups = group_names(l);
    let mut header: Vec<String> = [
        "step",
        "phase",
        "offered msg/s",
        "tasks",
        "achieved msg/s",
        "p50",
        "p99",
        "p99.9",
        "backlog/s",
        "corrected µs/msg [95 %]",
    ]
    .map(String::from)
    .to_vec();
    header.extend(groups.iter().map(|g| format!("{g} µs/msg")));
    header.extend(["capture".to_string(), "holds".to_string()]);
    let mut rows = vec![header];
    for s in &l.steps {
        let mut r = vec![
            s.step.to_string(),
            phase(s),
            offered(s),
            s.tasks.to_string(),
            format!("{:.1}", s.achieved_tps),
            duration_us(s.p50_us),
            duration_us(s.p99_us),
            duration_us(s.p999_us),
            if s.offered_tps.is_some() {
                format!("{:.1}", s.backlog_growth)
            } else {
                "-".into()
            },
            with_interval(
                s.cost(),
                s.corrected_low_us_per_tran,
                s.corrected_high_us_per_tran,
            ),
        ];
        for g in &groups {
            r.push(
                s.groups
                    .iter()
                    .find(|x| &x.name == g)
                    .map_or("-".into(), |x| format!("{:.1}", x.us_per_tran)),
            );
        }
        r.push(opt(s.capture_ratio, 3));
        r.push(holds(s).to_string());
        rows.push(r);
    }
    rows
}

fn phase(s: &Step) -> String {
    let word = serde_json::to_value(s.phase)
        .ok()
        .and_then(|v| v.as_str().map(|w| w.replace('_', " ")))
        .unwrap_or_default();
    match s.repeat_of {
        Some(n) => format!("{word} of {n}"),
        None => word,
    }
}

/// The columns of [`rows`], units in their names.
fn header(l: &Ladder, groups: &[String]) -> Vec<String> {
    let mut header: Vec<String> = [
        "step",
        "phase",
        "repeat_of",
        "offered_tps",
        "tasks",
        "achieved_tps",
        "holds",
        "why",
        "start_utc",
        "transactions",
        "mean_us",
        "p50_us",
        "p90_us",
        "p99_us",
        "p999_us",
        "backlog_growth",
        "backlog_end",
        "corrected_us_per_tran",
        "corrected_low_us_per_tran",
        "corrected_high_us_per_tran",
        "captured_us_per_tran",
        "capture_ratio",
    ]
    .map(String::from)
    .to_vec();
    for slo in &l.slo {
        header.push(format!(
            "slo_p{}_us",
            crate::stats::percentile_name(slo.percentile).replace('.', "_")
        ));
    }
    for g in groups {
        for suffix in [
            "us_per_tran",
            "low_us_per_tran",
            "high_us_per_tran",
            "cores",
        ] {
            header.push(format!("{g}_{suffix}"));
        }
    }
    header.extend(["host_idle_cpus".to_string(), "drift".to_string()]);
    header
}

/// One step's cells, in [`header`]'s order.
fn row(s: &Step, groups: &[String]) -> Vec<String> {
    let mut r = vec![
        s.step.to_string(),
        phase(s),
        s.repeat_of.map_or(String::new(), |n| n.to_string()),
        opt(s.offered_tps, 3),
        s.tasks.to_string(),
        format!("{:.3}", s.achieved_tps),
        s.holds.to_string(),
        s.why.join("; "),
        s.start_utc.clone(),
        s.transactions.to_string(),
        format!("{:.1}", s.mean_us),
        format!("{:.1}", s.p50_us),
        format!("{:.1}", s.p90_us),
        format!("{:.1}", s.p99_us),
        format!("{:.1}", s.p999_us),
        format!("{:.3}", s.backlog_growth),
        format!("{:.1}", s.backlog_end),
        opt(s.corrected_us_per_tran, 3),
        opt(s.corrected_low_us_per_tran, 3),
        opt(s.corrected_high_us_per_tran, 3),
        opt(s.captured_us_per_tran, 3),
        opt(s.capture_ratio, 4),
    ];
    r.extend(s.slo_us.iter().map(|v| opt(Some(*v), 1)));
    for g in groups {
        match s.groups.iter().find(|x| &x.name == g) {
            Some(x) => r.extend([
                format!("{:.3}", x.us_per_tran),
                opt(x.low_us_per_tran, 3),
                opt(x.high_us_per_tran, 3),
                format!("{:.4}", x.cores),
            ]),
            None => r.extend(std::iter::repeat_n(String::new(), 4)),
        }
    }
    r.extend([
        opt(s.host_idle_cpus, 3),
        s.drift.clone().unwrap_or_default(),
    ]);
    r
}

/// Every figure of every step, one row each, units in the column names, with the identity
/// columns (each row's tasks and rate its own): what TSV and CSV write.
pub fn rows(l: &Ladder) -> Vec<Vec<String>> {
    let groups = group_names(l);
    let mut out = vec![header(l, &groups)];
    out.extend(l.steps.iter().map(|s| row(s, &groups)));
    let commit = l.commit.clone().unwrap_or_default();
    let step_s = l.step_time_s / l.windows_per_step.max(1) as f64;
    identity::append(&mut out, |i| {
        let s = &l.steps[i];
        Identity {
            label: l.label.clone(),
            tasks: s.tasks.to_string(),
            rounds: l.windows_per_step.to_string(),
            count: String::new(),
            duration_s: format!("{step_s}"),
            rate_limit_tps: opt(s.offered_tps, 3),
            host_state: s.host_state.map_or(String::new(), |h| h.word().to_string()),
            commit: commit.clone(),
            ..Identity::of_settings(&l.settings)
        }
    });
    out
}

/// The capacity table: per rate that held, each group's cores and the corrected total.
pub(crate) fn capacity_rows(l: &Ladder) -> Vec<Vec<String>> {
    let groups = group_names(l);
    let mut header: Vec<String> = vec!["rate msg/s".into(), "achieved".into()];
    header.extend(groups.iter().map(|g| format!("{g} cores")));
    header.push("system cores (corrected)".into());
    if l.price_per_vcpu_hour.is_some() {
        header.push("per million msgs".into());
    }
    let mut rows = vec![header];
    for c in &l.capacity {
        let mut r = vec![rate(c.offered_tps), format!("{:.1}", c.achieved_tps)];
        for g in &groups {
            r.push(
                c.groups
                    .iter()
                    .find(|x| &x.name == g)
                    .map_or("-".into(), |x| format!("{:.3}", x.cores)),
            );
        }
        r.push(opt(c.corrected_cores, 3));
        if l.price_per_vcpu_hour.is_some() {
            r.push(opt(c.cost_per_million, 4));
        }
        rows.push(r);
    }
    rows
}

/// A line per `--capacity-at` rate: the interpolated cores, or why there are none.
pub(crate) fn capacity_at_lines(l: &Ladder) -> Vec<String> {
    l.capacity_at
        .iter()
        .map(|c| match (&c.row, &c.note) {
            (Some(r), _) => format!(
                "At {} msg/s (interpolated between the rates that held): {}; system {} cores (corrected){}",
                rate(c.rate),
                r.groups
                    .iter()
                    .map(|g| format!("{} {:.3}", g.name, g.cores))
                    .collect::<Vec<_>>()
                    .join(", "),
                opt(r.corrected_cores, 3),
                r.cost_per_million
                    .map_or(String::new(), |p| format!(", {p:.4} per million msgs"))
            ),
            (None, note) => format!(
                "At {} msg/s: {}",
                rate(c.rate),
                note.as_deref().unwrap_or("no figure")
            ),
        })
        .collect()
}

/// How the ladder ended, in words.
pub fn ended(l: &Ladder) -> String {
    let word = match l.end {
        LadderEnd::Completed => "completed",
        LadderEnd::Budget => "stopped at --max-time",
        LadderEnd::Interrupted => "INTERRUPTED",
        LadderEnd::Failed => "FAILED",
    };
    match &l.end_detail {
        Some(d) => format!("{word}: {d}"),
        None => word.to_string(),
    }
}

/// What the ladder was: where, what, how long.
pub fn about(l: &Ladder) -> String {
    let s = &l.settings;
    format!(
        "on {} ({}), queue {}, {}-byte message(s), {}; steps of {} s ({} windows after {} s at the step's rate); {} step(s) in {:.0} s; {}",
        s.qmgr,
        s.transport,
        s.request_queue,
        identity::msg_bytes(s),
        s.persistence(),
        l.step_time_s,
        l.windows_per_step,
        l.settle_s,
        l.steps.len(),
        l.elapsed_s,
        ended(l)
    )
}

/// The text for a person: the answer, the steps, the capacity, the warnings.
pub fn text(l: &Ladder) -> String {
    let mut o = format!("oemputx ladder: {}\n{}\n", l.answer, about(l));
    if let Some(why) = &l.limited_why {
        o.push_str(&format!(
            "Limited by the {}: {why}\n",
            l.limited_by.map_or("?", |b| b.word())
        ));
    }
    if let Some(k) = l.knee_tps {
        o.push_str(&format!(
            "Knee: {} msg/s (the most throughput per unit of round trip, Kleinrock's power)\n",
            rate(k)
        ));
    }
    o.push('\n');
    o.push_str(&cells::text(&step_rows(l)));
    for s in l
        .steps
        .iter()
        .filter(|s| !s.holds && s.offered_tps.is_some())
    {
        o.push_str(&format!(
            "  step {} ({} msg/s) does not hold: {}\n",
            s.step,
            offered(s),
            s.why.join("; ")
        ));
    }
    if !l.capacity.is_empty() {
        o.push_str(&format!(
            "\nCapacity: the cores each group kept busy at each rate that held (measured; between two rates interpolate, never past {} msg/s):\n",
            l.max_sustainable_tps.map_or("the top".into(), rate)
        ));
        o.push_str(&cells::text(&capacity_rows(l)));
    }
    for line in capacity_at_lines(l) {
        o.push_str(&format!("{line}\n"));
    }
    if !l.warnings.is_empty() {
        o.push_str("\nWarnings:\n");
        for w in &l.warnings {
            o.push_str(&format!("  - {w}\n"));
        }
    }
    o
}

/// The Markdown: the answer, the step table, the capacity table.
pub fn markdown(l: &Ladder) -> String {
    let mut o = format!(
        "### oemputx ladder\n\n**{}**\n\n{}\n\n{}",
        cells::markdown_text(&l.answer),
        cells::markdown_text(&about(l)),
        cells::markdown(&step_rows(l))
    );
    if !l.capacity.is_empty() {
        o.push_str("\n\n");
        o.push_str(&cells::markdown(&capacity_rows(l)));
    }
    for line in capacity_at_lines(l) {
        o.push_str(&format!("\n\n{}", cells::markdown_text(&line)));
    }
    for w in &l.warnings {
        o.push_str(&format!("\n- {}", cells::markdown_text(w)));
    }
    o.push('\n');
    o
}
