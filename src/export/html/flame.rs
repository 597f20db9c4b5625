//! `--profile`'s flame graphs (inferno), as images inside the page: the SVG's own script
//! and ids stay out of the page (its policy runs no script), so several sit side by side.

use super::{esc, table};
use crate::profiling::diff::FunctionChange;
use crate::profiling::{GroupProfile, Profile};
use base64::Engine as _;
use std::collections::BTreeMap;

/// A flame graph of `lines` (`stack count`, or `stack before after` for a differential).
fn svg(title: &str, lines: &[String]) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut out).ok()?;
    String::from_utf8(out).ok()
}

/// An SVG as an image of the page.
fn image(id: &str, caption: &str, svg: &str) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(svg);
    format!(
        "<figure id=\"flame-{}\"><img style=\"width:100%\" alt=\"{}\" src=\"data:image/svg+xml;base64,{data}\"><figcaption>{}</figcaption></figure>",
        esc(id),
        esc(caption),
        esc(caption)
    )
}

fn folded_lines(g: &GroupProfile) -> Vec<String> {
    g.folded
        .iter()
        .map(|(s, n)| format!("{} {n}", crate::export::profile::folded_text(s)))
        .collect()
}

fn functions(g: &GroupProfile) -> String {
    let rows: Vec<Vec<String>> = g
        .functions
        .iter()
        .take(10)
        .map(|f| {
            vec![
                crate::export::profile::function_name(f) + crate::export::profile::lock_mark(f),
                format!("{:.2}", f.self_us_per_tran),
                format!("{:.2}", f.self_pm_us),
                format!("{:.2}", f.total_us_per_tran),
                f.samples.to_string(),
            ]
        })
        .collect();
    table(
        &["function", "self µs/msg", "±", "total µs/msg", "samples"],
        &rows,
    )
}

/// The run's profile: per group, its top functions and its flame graph.
pub fn section(p: &Profile) -> String {
    let mut o = format!(
        "<p class=\"note\">{} — {:.2} s sampled, {} of {} samples in the groups. {}.</p>",
        esc(&p.method),
        p.window_s,
        p.attributed_samples,
        p.samples,
        esc(&p.overhead)
    );
    for w in &p.warnings {
        o.push_str(&format!("<p class=\"warn\">{}</p>", esc(w)));
    }
    for g in &p.groups {
        o.push_str(&format!(
            "<h3>{} — {:.2} µs/msg, {} samples</h3>",
            esc(&g.name),
            g.us_per_tran,
            g.samples
        ));
        o.push_str(&functions(g));
        if let Some(svg) = svg(
            &format!("{} ({:.2} µs/msg)", g.name, g.us_per_tran),
            &folded_lines(g),
        ) {
            o.push_str(&image(
                &g.name,
                &format!(
                    "Flame graph of {}: width is the share of its CPU per message.",
                    g.name
                ),
                &svg,
            ));
        }
    }
    o
}

/// A differential profile's table: each function's change, its sides' figures and its
/// interval; with the setting it is for when `sides` names the base and the setting.
pub(crate) fn changes_table(
    changes: &[FunctionChange],
    sides: (&str, &str),
    with_setting: bool,
) -> String {
    let rows: Vec<Vec<String>> = changes
        .iter()
        .map(|c| {
            let mut row = vec![format!("{} ({}, {})", c.function, c.module, c.group)];
            if with_setting {
                row.push(c.versus.clone().unwrap_or_default());
            }
            row.extend([
                format!("{:.2}", c.a_us_per_tran),
                format!("{:.2}", c.b_us_per_tran),
                format!("{:+.2}", c.change_us_per_tran),
                c.interval().unwrap_or_else(|| "-".into()),
            ]);
            row
        })
        .collect();
    let (a, b) = (format!("{} µs/msg", sides.0), format!("{} µs/msg", sides.1));
    let mut header = vec!["function"];
    if with_setting {
        header.push("setting");
    }
    header.extend([a.as_str(), b.as_str(), "change", "95 % interval"]);
    table(&header, &rows)
}

/// A differential flame graph per group, from the folded stacks of A's and B's rounds:
/// the shape is B's, red where B took more samples than A, blue where fewer.
pub fn differential(
    a: &BTreeMap<String, BTreeMap<String, u64>>,
    b: &BTreeMap<String, BTreeMap<String, u64>>,
    names: (&str, &str),
) -> String {
    let mut o = String::new();
    for (group, before) in a {
        let Some(after) = b.get(group) else { continue };
        let mut stacks: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (s, n) in before {
            stacks.entry(s).or_default().0 += n;
        }
        for (s, n) in after {
            stacks.entry(s).or_default().1 += n;
        }
        // Each side scaled to the same total, as inferno-diff-folded --normalize does.
        let (ta, tb) = stacks
            .values()
            .fold((0u64, 0u64), |t, v| (t.0 + v.0, t.1 + v.1));
        let scale = if ta > 0 { tb as f64 / ta as f64 } else { 1.0 };
        let lines: Vec<String> = stacks
            .iter()
            .map(|(s, (x, y))| {
                format!(
                    "{} {} {y}",
                    crate::export::profile::folded_text(s),
                    (*x as f64 * scale).round() as u64
                )
            })
            .collect();
        let title = format!("{group}: {} → {}", names.0, names.1);
        if let Some(svg) = svg(&title, &lines) {
            let id = if names.0 == "A" && names.1 == "B" {
                format!("diff-{group}")
            } else {
                format!("diff-{group}-{}", names.1)
            };
            o.push_str(&image(
                &id,
                &format!(
                    "Differential flame graph of {group}: the stacks of {}, red where they took more samples than in {}, blue where fewer.",
                    names.1, names.0
                ),
                &svg,
            ));
        }
    }
    o
}
