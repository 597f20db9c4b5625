//! A pub/sub run as an HTML page: what was published and delivered, the publishers' and
//! subscribers' rates side by side, the backlog over time, the subscribers' table and the
//! groups' CPU per message published and delivered.

use super::{charts, facts, figure, num, section, table};
use crate::pubsub::report::{PerMessage, PubSubReport};

fn settings(r: &PubSubReport) -> String {
    let s = &r.settings;
    let persistence = if s.persistent {
        "persistent"
    } else {
        "non-persistent"
    };
    facts(&[
        ("Broker", s.broker.clone()),
        ("Modes", s.modes.clone()),
        ("Topic", s.topic.clone()),
        (
            "Publishers / subscribers",
            format!("{} / {}", s.publishers, s.subscribers),
        ),
        (
            "Symbols (each subscriber's block)",
            format!("{} ({})", s.symbols, s.select),
        ),
        ("Message", format!("{} bytes, {persistence}", s.msg_size)),
    ])
}

fn figures(r: &PubSubReport) -> String {
    let m = &r.subscriber_mps;
    facts(&[
        ("Published", r.published.to_string()),
        (
            "Delivered (expected)",
            format!("{} ({})", r.delivered, r.expected),
        ),
        (
            "Lost / duplicated",
            format!("{} / {}", r.lost, r.duplicates),
        ),
        ("Publish rate", format!("{:.1} msgs/s", r.publish_mps)),
        (
            "Subscriber rate (min / median / max)",
            format!("{:.1} / {:.1} / {:.1} msgs/s", m.min, m.median, m.max),
        ),
        (
            "Latency, publish to receipt (p50 / p99)",
            format!("{:.1} / {:.1} µs", r.latency_us.p50, r.latency_us.p99),
        ),
        ("Backlog, most behind", r.backlog.max.to_string()),
        (
            "Elapsed (publishing, drain)",
            format!(
                "{:.2} s ({:.2} s, {:.2} s)",
                r.elapsed_s, r.publishing_s, r.drain_s
            ),
        ),
    ])
}

/// The publishers' and subscribers' rates side by side, and the backlog over time.
fn rates(r: &PubSubReport) -> String {
    let mut bars: Vec<(String, f64, f64, f64)> = r
        .publisher_mps
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("pub {i}"), *m, *m, *m))
        .collect();
    bars.extend(
        r.subscribers
            .iter()
            .map(|x| (format!("sub {}", x.index), x.mps, x.mps, x.mps)),
    );
    let mut out = String::new();
    if let Ok(svg) = charts::interval_bars(
        "Messages a second by publisher and subscriber",
        "msgs/s",
        &bars,
        None,
    ) {
        out.push_str(&figure(
            "rates",
            "Each publisher's and each subscriber's own rate, side by side.",
            &svg,
        ));
    }
    let points = |v: &[(f64, u64)]| v.iter().map(|(t, n)| (*t, *n as f64)).collect::<Vec<_>>();
    let mut series = vec![(
        "behind (published, not yet received)".to_string(),
        points(&r.backlog.samples),
    )];
    if !r.backlog.broker_queue_samples.is_empty() {
        series.push((
            "in the broker's queues".into(),
            points(&r.backlog.broker_queue_samples),
        ));
    }
    if let Ok(svg) = charts::time_plot("Backlog over time (messages)", "messages", &series) {
        out.push_str(&figure(
            "backlog",
            "Messages the subscribers were behind, sampled every 100 ms.",
            &svg,
        ));
    }
    out
}

fn subscribers(r: &PubSubReport) -> String {
    let rows: Vec<Vec<String>> = r
        .subscribers
        .iter()
        .map(|x| {
            vec![
                x.index.to_string(),
                x.block.clone(),
                x.expected.to_string(),
                x.received.to_string(),
                x.lost.to_string(),
                x.duplicates.to_string(),
                format!("{:.1}", x.mps),
                format!("{:.1}", x.pace_pct),
            ]
        })
        .collect();
    table(
        &[
            "subscriber",
            "block",
            "expected",
            "received",
            "lost",
            "dup",
            "msgs/s",
            "pace %",
        ],
        &rows,
    )
}

fn per_message(what: &str, p: &PerMessage) -> String {
    let rows: Vec<Vec<String>> = p
        .groups
        .iter()
        .map(|g| {
            vec![
                format!("{}*", g.name),
                format!("{:.2}", g.user_us_per_tran),
                format!("{:.2}", g.sys_us_per_tran),
                format!("{:.2}", g.total_us_per_tran),
            ]
        })
        .collect();
    format!(
        "<p>Per message {what} ({} messages): captured {:.2} us, corrected {} us</p>{}",
        p.messages,
        p.captured_us,
        num(p.corrected_us, 2),
        table(&["group", "USR µs", "SYS µs", "Tot µs"], &rows)
    )
}

fn cpu(r: &PubSubReport) -> String {
    let mut out = String::new();
    if let Some(p) = &r.cpu_per_published {
        out.push_str(&per_message("published", p));
    }
    if let Some(p) = &r.cpu_per_delivered {
        out.push_str(&per_message("delivered", p));
    }
    if let Some(p) = &r.cpu_per_published {
        let groups: Vec<(String, f64, f64)> = p
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.user_us_per_tran, g.sys_us_per_tran))
            .collect();
        if let Ok(svg) = charts::cpu_bars(&groups) {
            out.push_str(&figure(
                "cpu",
                "CPU per message published by group: user (dark) and system (light).",
                &svg,
            ));
        }
    }
    out
}

fn status(r: &PubSubReport) -> (String, bool) {
    let complete = r.lost == 0 && r.duplicates == 0 && !r.interrupted && r.error.is_none();
    let text = if r.interrupted {
        "INTERRUPTED".to_string()
    } else if let Some(e) = &r.error {
        format!("failed: {e}")
    } else if complete {
        "every subscriber got exactly its messages".into()
    } else {
        format!("{} lost, {} duplicated", r.lost, r.duplicates)
    };
    (text, complete)
}

/// The pub/sub run's page.
pub fn render(r: &PubSubReport) -> String {
    let mut body = String::new();
    section(&mut body, "Settings", &settings(r));
    section(&mut body, "Figures", &figures(r));
    section(&mut body, "Rates and backlog", &rates(r));
    section(&mut body, "Subscribers", &subscribers(r));
    let cpu = cpu(r);
    if !cpu.is_empty() {
        section(&mut body, "CPU per message", &cpu);
    }
    let (text, good) = status(r);
    super::page(
        &format!("oemputx pubsub: {}", r.settings.topic),
        (&text, good),
        &body,
    )
}
