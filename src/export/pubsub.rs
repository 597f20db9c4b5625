//! The pub/sub report rendered: the text report, the per-subscriber rows (TSV/CSV) and
//! Markdown.

use crate::export::text::{CpuSection, cpu_table};
use crate::pubsub::report::PubSubReport;
use std::fmt::Write as _;

/// The per-subscriber rows, a header first: for TSV/CSV and Markdown.
pub fn rows(r: &PubSubReport) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "subscriber",
            "block",
            "expected",
            "received",
            "lost",
            "duplicates",
            "strays",
            "msg_per_s",
            "pace_pct",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in &r.subscribers {
        rows.push(vec![
            r.index.to_string(),
            r.block.clone(),
            r.expected.to_string(),
            r.received.to_string(),
            r.lost.to_string(),
            r.duplicates.to_string(),
            r.strays.to_string(),
            format!("{:.1}", r.mps),
            format!("{:.1}", r.pace_pct),
        ]);
    }
    rows
}

/// Markdown: the summary as a list, the subscribers as a table.
pub fn markdown(r: &PubSubReport) -> String {
    let mut o = String::new();
    let s = &r.settings;
    let _ = writeln!(o, "### oemputx pubsub on {}\n", s.broker);
    let _ = writeln!(o, "- modes: {}", s.modes);
    let _ = writeln!(
        o,
        "- published {} at {:.1} msg/s; delivered {} of {} expected, lost {}, duplicated {}",
        r.published, r.publish_mps, r.delivered, r.expected, r.lost, r.duplicates
    );
    let _ = writeln!(
        o,
        "- subscriber msg/s min {:.1} / median {:.1} / max {:.1}; backlog max {}, drained {:.3} s",
        r.subscriber_mps.min,
        r.subscriber_mps.median,
        r.subscriber_mps.max,
        r.backlog.max,
        r.drain_s
    );
    if let (Some(p), Some(d)) = (&r.cpu_per_published, &r.cpu_per_delivered) {
        let _ = writeln!(
            o,
            "- captured CPU µs per message published {:.2}, per message delivered {:.2}",
            p.captured_us, d.captured_us
        );
    }
    let _ = writeln!(o);
    o.push_str(&crate::export::cells::markdown(&rows(r)));
    o
}

/// The text report.
pub fn text(r: &PubSubReport) -> String {
    let mut o = String::new();
    let s = &r.settings;
    let _ = writeln!(
        o,
        "oemputx {} - publish/subscribe",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(o, "Broker            : {}", s.broker);
    let _ = writeln!(o, "Modes             : {}", s.modes);
    let _ = writeln!(
        o,
        "Stream            : '{}', {} symbols, {} per subscriber (seed {}), {} bytes, {}",
        s.topic,
        s.symbols,
        s.select,
        s.seed,
        s.msg_size,
        if s.persistent {
            "persistent"
        } else {
            "non-persistent"
        }
    );
    let pace = match (s.think_ms, s.rate_limit) {
        (t, Some(r)) if t > 0.0 => format!("think {t} ms, at most {r} msg/s"),
        (t, None) if t > 0.0 => format!("think {t} ms before each publish"),
        (_, Some(r)) => format!("at most {r} msg/s"),
        _ => "unpaced".into(),
    };
    let size = match s.duration_s {
        Some(d) => format!("for {d} s"),
        None => format!("{} messages", s.count),
    };
    let _ = writeln!(
        o,
        "Publishers        : {} sending {size}, {pace}",
        s.publishers
    );
    let _ = writeln!(o, "Subscribers       : {}", s.subscribers);
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Published         : {:>10}  at {:>10.1} msg/s over {:.3} s",
        r.published, r.publish_mps, r.publishing_s
    );
    let _ = writeln!(
        o,
        "Delivered         : {:>10}  of {} expected; lost {}, duplicated {}",
        r.delivered, r.expected, r.lost, r.duplicates
    );
    let m = &r.subscriber_mps;
    let _ = writeln!(
        o,
        "Subscriber msg/s  : min {:.1}  median {:.1}  max {:.1}",
        m.min, m.median, m.max
    );
    let p = &r.subscriber_pace_pct;
    let _ = writeln!(
        o,
        "Subscriber pace   : min {:.1}%  median {:.1}%  max {:.1}% of their shares of the publish rate",
        p.min, p.median, p.max
    );
    let _ = writeln!(
        o,
        "Backlog           : max {} behind, growing {:.1} msg/s while publishing; drained {:.3} s after the publishers stopped",
        r.backlog.max, r.backlog.growth_per_s, r.drain_s
    );
    if let Some(q) = r.backlog.broker_queue_max {
        let _ = writeln!(
            o,
            "Broker queues     : max {q} messages waiting in the subscribers' queues (the broker's own count)"
        );
    }
    let l = &r.latency_us;
    let _ = writeln!(
        o,
        "\nLatency (us)         min      p50      p90      p99    p99.9      max"
    );
    let _ = writeln!(
        o,
        "              {:>10.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
        l.min, l.p50, l.p90, l.p99, l.p999, l.max
    );
    subscriber_table(r, &mut o);
    cpu_text(r, &mut o);
    if let Some(e) = &r.error {
        let _ = writeln!(o, "\nError             : {e}");
    }
    if r.interrupted {
        let _ = writeln!(
            o,
            "\nINTERRUPTED       : publishing stopped and the subscribers did not drain, so the figures cover the run up to then"
        );
    }
    o
}

fn subscriber_table(r: &PubSubReport, o: &mut String) {
    let _ = writeln!(
        o,
        "\n Sub  Block       Expected   Received   Lost  Dup  Stray      msg/s   pace"
    );
    for r in &r.subscribers {
        let _ = writeln!(
            o,
            " {:>3}  {:<10} {:>9} {:>10} {:>6} {:>4} {:>6} {:>10.1} {:>5.1}%",
            r.index,
            r.block,
            r.expected,
            r.received,
            r.lost,
            r.duplicates,
            r.strays,
            r.mps,
            r.pace_pct
        );
    }
}

fn cpu_text(r: &PubSubReport, o: &mut String) {
    let (Some(t), Some(p), Some(d)) = (&r.table, &r.cpu_per_published, &r.cpu_per_delivered) else {
        return;
    };
    let _ = writeln!(o, "\nCPU per message published ({}):", p.messages);
    cpu_table(
        o,
        &CpuSection {
            processes: &t.processes,
            groups: &t.groups,
            captured_us_per_tran: Some(t.captured_us_per_tran),
            capture_ratio: t.capture_ratio.as_ref(),
            corrected_us_per_tran: t.corrected_us_per_tran,
            other_cpu: Some(&t.other_cpu),
            accounting: Some(&t.info),
        },
    );
    let _ = writeln!(o, "\nCPU per message delivered ({}), µs:", d.messages);
    for g in &d.groups {
        let _ = writeln!(o, " {:<24} {:>10.2}", g.name, g.total_us_per_tran);
    }
    let _ = writeln!(o, " {:<24} {:>10.2}", "Captured total", d.captured_us);
    if let Some(c) = d.corrected_us {
        let _ = writeln!(o, " {:<24} {:>10.2}", "Corrected total", c);
    }
}
