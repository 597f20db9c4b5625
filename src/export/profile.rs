//! `--profile`'s figures for a person (text, Markdown), for flame graph tools (folded
//! stacks) and for the verdicts (a differential's top changes). Function names come from
//! binaries on the machine: each sink escapes them with its own function.

use super::cells::markdown_text as md;
use crate::profiling::diff::FunctionChange;
use crate::profiling::{FunctionRow, GroupProfile, Profile};
use std::fmt::Write;

/// Functions a person reads per group (the JSON has more).
const SHOWN: usize = 8;

/// A function as a row names it: `parse_request (burn_responder)`, at most 70 characters.
pub(crate) fn function_name(f: &FunctionRow) -> String {
    let name: String = f.name.chars().take(60).collect();
    let cut = if name.len() < f.name.len() { "…" } else { "" };
    if f.module.is_empty() {
        format!("{name}{cut}")
    } else {
        format!("{name}{cut} ({})", f.module)
    }
}

/// What a row whose samples came in step with the flow carries beside its name.
pub(crate) fn lock_mark(f: &FunctionRow) -> &'static str {
    if f.lock_in.is_some() {
        " (lock-in?)"
    } else {
        ""
    }
}

fn group_line(g: &GroupProfile) -> String {
    let seen = g
        .coverage
        .map(|c| format!(", samples stand for {:.0} % of its CPU", 100.0 * c))
        .unwrap_or_default();
    format!(
        "{} ({:.2} µs/msg, {} samples{seen}, {:.0} % unresolved)",
        g.name, g.us_per_tran, g.samples, g.unresolved_pct
    )
}

/// The profile as text, after the CPU table.
pub fn text(o: &mut String, p: &Profile) {
    let t = super::for_terminal;
    let _ = writeln!(
        o,
        "\nWhere the CPU goes (--profile: {}; {:.2} s sampled, {} of {} samples in the groups)",
        p.method, p.window_s, p.attributed_samples, p.samples
    );
    for g in &p.groups {
        let _ = writeln!(o, "  {}", t(&group_line(g)));
        if g.functions.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "    {:>10} {:>7} {:>10} {:>8}  function",
            "self µs", "±", "total µs", "samples"
        );
        for f in g.functions.iter().take(SHOWN) {
            let _ = writeln!(
                o,
                "    {:>10.2} {:>7.2} {:>10.2} {:>8}  {}{}",
                f.self_us_per_tran,
                f.self_pm_us,
                f.total_us_per_tran,
                f.samples,
                t(&function_name(f)),
                lock_mark(f)
            );
        }
    }
    let _ = writeln!(o, "  Cost: {}", t(&p.overhead));
    for w in &p.warnings {
        let _ = writeln!(o, "  Warning: {}", t(w));
    }
}

/// The profile as Markdown: a table per group.
pub fn markdown(o: &mut String, p: &Profile) {
    let _ = writeln!(o, "\n### Where the CPU goes (--profile)\n");
    for g in &p.groups {
        let _ = writeln!(o, "**{}**\n", md(&group_line(g)));
        let _ = writeln!(
            o,
            "| function | self µs/msg | ± | total µs/msg | samples |\n|---|---:|---:|---:|---:|"
        );
        for f in g.functions.iter().take(SHOWN) {
            let _ = writeln!(
                o,
                "| {}{} | {:.2} | {:.2} | {:.2} | {} |",
                md(&function_name(f)),
                lock_mark(f),
                f.self_us_per_tran,
                f.self_pm_us,
                f.total_us_per_tran,
                f.samples
            );
        }
        let _ = writeln!(o);
    }
    for w in &p.warnings {
        let _ = writeln!(o, "> ⚠️ {}\n", md(w));
    }
}

/// Folded stacks, one `GROUP;comm;frame;…;leaf COUNT` line per stack: what
/// inferno-flamegraph, flamegraph.pl and speedscope read.
pub fn folded(p: &Profile) -> String {
    let mut o = String::new();
    for g in &p.groups {
        for (stack, n) in &g.folded {
            let _ = writeln!(o, "{};{} {n}", g.name, folded_text(stack));
        }
    }
    o
}

/// A folded line is split at `;` and its last space: neither may come from a name, and no
/// line break either.
pub(crate) fn folded_text(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// The top changes of a differential profile, one line each (the verdict's and the CI
/// annotation's words).
pub(crate) fn top_changes(changes: &[FunctionChange], n: usize) -> Vec<String> {
    changes
        .iter()
        .take(n)
        .map(|c| super::for_terminal(&c.line()))
        .collect()
}

/// A differential profile as text.
pub(crate) fn diff_text(o: &mut String, changes: &[FunctionChange], a: &str, b: &str) {
    if changes.is_empty() {
        return;
    }
    let t = super::for_terminal;
    let _ = writeln!(
        o,
        "\nWhere it changed (--profile: self µs/msg, mean of each side's rounds, 95 % interval of {} − {} from the rounds)",
        t(b),
        t(a)
    );
    let _ = writeln!(
        o,
        "  {:>10} {:>10} {:>9} {:>21}  function (group)",
        t(a),
        t(b),
        "change",
        "interval"
    );
    for c in changes.iter().take(SHOWN + 2) {
        let interval = c.interval().unwrap_or_else(|| "(one round a side)".into());
        let _ = writeln!(
            o,
            "  {:>10.2} {:>10.2} {:>+9.2} {:>21}  {} ({}, {})",
            c.a_us_per_tran,
            c.b_us_per_tran,
            c.change_us_per_tran,
            interval,
            t(&c.function),
            t(&c.module),
            t(&c.group)
        );
    }
}
