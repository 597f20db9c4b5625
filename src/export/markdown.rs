//! The Markdown exporter: the summary and the CPU table, for a wiki page or a CI job summary.

use super::cells::markdown_text as md;
use super::rows::{CpuLine, cpu_lines, spread_lines};
use crate::report::Report;
use std::fmt::Write;

fn two_places(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:.2}"))
}

/// Render the report as Markdown.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    summary(&mut o, r);
    cpu_table(&mut o, r);
    super::beyond::markdown(
        &mut o,
        &r.groups,
        r.accounting.as_ref().and_then(|a| a.beyond_cpu.as_ref()),
    );
    cost_table(&mut o, r);
    if let Some(p) = &r.profile {
        super::profile::markdown(&mut o, p);
    }
    rounds_table(&mut o, r);
    if let Some(t) = &r.trend {
        let _ = writeln!(
            o,
            "\n**Trend over {} rounds**: {}",
            t.rounds,
            md(&t.verdict)
        );
    }
    if let Some(acc) = &r.accounting
        && !acc.verdict.is_empty()
    {
        let _ = writeln!(o, "\n{}", md(&acc.verdict));
    }
    o
}

/// The run in a sentence, then its figures.
fn summary(o: &mut String, r: &Report) {
    let s = &r.settings;
    let _ = writeln!(o, "## oemputx: {} ({})\n", md(&r.label), md(&s.qmgr));
    let h = crate::report::headline::Headline::of(r);
    let _ = writeln!(o, "**{}**\n", md(&h.text));
    if let Some(w) = &h.warning {
        let _ = writeln!(o, "> ⚠️ {}\n", md(w));
    }
    let _ = writeln!(
        o,
        "{} × {} bytes from {}, {} task(s), {} per loop, {}{}; {} to {}.\n",
        r.transactions,
        s.msg_bytes_max,
        md(&s.message_source),
        s.tasks,
        s.msgs_per_loop,
        s.persistence(),
        if s.syncpoint { ", syncpoint" } else { "" },
        r.start_utc,
        r.end_utc
    );
    let _ = writeln!(o, "| figure | value |\n|---|---:|");
    let _ = writeln!(o, "| Total transactions | {} |", r.transactions);
    let _ = writeln!(o, "| Elapsed (s) | {:.6} |", r.elapsed_s);
    let _ = writeln!(o, "| Rate (trans/s) | {:.2} |", r.rate_tps);
    let _ = writeln!(
        o,
        "| Round trip mean / p99 (µs) | {:.2} / {:.2} |",
        r.round_trip_us.mean, r.round_trip_us.p99
    );
    let _ = writeln!(
        o,
        "| App CPU per msg (µs) | {} |",
        two_places(r.app_cpu.us_per_tran)
    );
    if let Some(c) = r.captured_us_per_tran {
        let _ = writeln!(o, "| Captured CPU per msg (µs) | {c:.2} |");
    }
    if let (Some(ratio), Some(corr)) = (&r.capture_ratio, r.corrected_us_per_tran) {
        let _ = writeln!(o, "| {} | {} |", ratio.label(), ratio.shown());
        let _ = writeln!(o, "| Corrected CPU per msg (µs) | {corr:.2} |");
    }
    if let Some(h) = r.accounting.as_ref().and_then(|a| a.host_load.as_ref()) {
        let _ = writeln!(o, "| Host load | {}: {} |", h.state.word(), md(&h.summary));
    }
    let i = &r.integrity;
    let _ = writeln!(
        o,
        "| Integrity | sent {}, matched {}, timed out {}, unmatched {}, duplicates {}, late {} |",
        i.sent, i.matched, i.timed_out, i.unmatched, i.duplicates, i.late
    );
}

/// A row per process, a bold total row per group.
fn cpu_table(o: &mut String, r: &Report) {
    if r.groups.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\n| Jobname.PID | USR µs/tran | SYS µs/tran | Tot µs/tran | % |\n|---|---:|---:|---:|---:|"
    );
    for line in cpu_lines(&r.processes, &r.groups) {
        let _ = match line {
            CpuLine::Member(p) => writeln!(
                o,
                "| {} | {:.2} | {:.2} | {:.2} | {:.1} |",
                md(&p.name),
                p.user_us_per_tran,
                p.sys_us_per_tran,
                p.total_us_per_tran,
                p.pct
            ),
            CpuLine::Total(g) => writeln!(
                o,
                "| **{}\\*** | **{:.2}** | **{:.2}** | **{:.2}** | **{:.1}** |",
                g.name, g.user_us_per_tran, g.sys_us_per_tran, g.total_us_per_tran, g.pct
            ),
        };
    }
}

/// Each group's cores per 1,000 msg/s and cost per million messages, when a price was given.
fn cost_table(o: &mut String, r: &Report) {
    let Some(c) = r.capacity.as_ref() else { return };
    let Some(price) = c.price_per_vcpu_hour else {
        return;
    };
    let _ = writeln!(
        o,
        "\n| group | cores per 1,000 msg/s | cost per 1M msgs at {} per vCPU-hour |\n|---|---:|---:|",
        super::text::money(price)
    );
    for g in &c.groups {
        let _ = writeln!(
            o,
            "| {}@{} | {:.4} | {} |",
            md(&g.name),
            md(&g.host),
            g.corrected_cores_per_1000_tps
                .unwrap_or(g.cores_per_1000_tps),
            g.cost_per_million.map_or("-".into(), super::text::money)
        );
    }
}

/// Best / median / worst across rounds, and the noise verdict.
fn rounds_table(o: &mut String, r: &Report) {
    let Some(sum) = &r.rounds_summary else { return };
    let _ = writeln!(
        o,
        "\n| across {} rounds | best | median | worst | spread |\n|---|---:|---:|---:|---:|",
        sum.rounds
    );
    for (of, b) in spread_lines(sum) {
        let _ = writeln!(
            o,
            "| {} | {:.2} | {:.2} | {:.2} | {:.1}% |",
            of.label("µs", "\\*"),
            b.best,
            b.median,
            b.worst,
            b.spread_pct
        );
    }
    if let Some(n) = &sum.noisy {
        let _ = writeln!(o, "\n**Noisy:** {}", md(n));
    }
}
