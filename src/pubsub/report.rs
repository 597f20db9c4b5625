//! The pub/sub report: rates of publishers and subscribers kept apart (throughput is a
//! measure of capacity, not speed), each subscriber's expected / received / lost /
//! duplicated, the backlog and the drain, latency from publish to receipt, and the groups'
//! CPU per message published and per message delivered.

use super::engine::Outcome;
use super::plan::Plan;
use crate::accounting::CpuTable;
use crate::export::text::{CpuSection, cpu_table};
use crate::report::Latency;
use serde::Serialize;
use std::fmt::Write as _;

/// Schema of the JSON report.
pub const SCHEMA: &str = "oemputx.pubsub/1";

/// Echo of the run's settings.
#[derive(Debug, Clone, Serialize)]
pub struct PubSubSettings {
    pub broker: String,
    pub transport: &'static str,
    /// What --ack and --select-by became on this broker.
    pub modes: String,
    pub topic: String,
    pub publishers: usize,
    pub subscribers: usize,
    pub symbols: u16,
    pub select: u16,
    pub count: u64,
    /// Set when the run was sized by time (then `count` is not used).
    pub duration_s: Option<f64>,
    pub msg_size: usize,
    pub think_ms: f64,
    pub rate_limit: Option<f64>,
    pub persistent: bool,
    pub seed: u64,
}

/// One subscriber's line.
#[derive(Debug, Clone, Serialize)]
pub struct SubscriberRow {
    pub index: usize,
    /// First and last symbol of its block, e.g. `S03..S27`.
    pub block: String,
    pub expected: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    /// Messages outside its block.
    pub strays: u64,
    /// Messages a second from the window's start to its last message.
    pub mps: f64,
    /// Its rate against its share of the publish rate (expected ÷ published × publish
    /// msg/s), %: 100 keeps up with the publishers, below falls behind.
    pub pace_pct: f64,
}

/// Min, median and max over subscribers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            v.get(((v.len() as f64 - 1.0) * q).round() as usize)
                .copied()
        };
        Spread {
            min: at(0.0).unwrap_or(0.0),
            median: at(0.5).unwrap_or(0.0),
            max: at(1.0).unwrap_or(0.0),
        }
    }
}

/// Messages subscribers were behind (published into their blocks, not yet received).
#[derive(Debug, Clone, Serialize)]
pub struct Backlog {
    pub max: u64,
    /// Growth while publishing, messages a second (least squares over the samples).
    pub growth_per_s: f64,
    /// (seconds since start, messages behind), every 100 ms.
    pub samples: Vec<(f64, u64)>,
    /// The most messages waiting in the subscribers' queues at the broker, and its samples,
    /// where the broker tells (RabbitMQ: each subscriber's queue depth; JetStream: its consumers'
    /// pending counts); `null` elsewhere.
    pub broker_queue_max: Option<u64>,
    pub broker_queue_samples: Vec<(f64, u64)>,
}

/// The groups' CPU per message, one way of counting messages.
#[derive(Debug, Clone, Serialize)]
pub struct PerMessage {
    pub messages: u64,
    pub groups: Vec<crate::accounting::GroupRow>,
    pub captured_us: f64,
    pub corrected_us: Option<f64>,
}

impl PerMessage {
    fn of(t: &CpuTable, messages: u64) -> PerMessage {
        PerMessage {
            messages,
            groups: t.groups.clone(),
            captured_us: t.captured_us_per_tran,
            corrected_us: t.corrected_us_per_tran,
        }
    }
}

/// What `oemputx pubsub` reports.
#[derive(Debug, Serialize)]
pub struct PubSubReport {
    pub schema: &'static str,
    pub settings: PubSubSettings,
    pub published: u64,
    pub expected: u64,
    pub delivered: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub publisher_mps: Vec<f64>,
    pub publish_mps: f64,
    pub subscriber_mps: Spread,
    /// Subscribers' rates against their shares of the publish rate, %.
    pub subscriber_pace_pct: Spread,
    pub subscribers: Vec<SubscriberRow>,
    pub backlog: Backlog,
    pub publishing_s: f64,
    pub drain_s: f64,
    pub elapsed_s: f64,
    /// Publish to receipt, µs, all subscribers.
    pub latency_us: Latency,
    pub cpu_per_published: Option<PerMessage>,
    pub cpu_per_delivered: Option<PerMessage>,
    /// The table the CPU figures come from (per message published), for the text report.
    #[serde(skip)]
    pub table: Option<CpuTable>,
    pub error: Option<String>,
}

/// The accounting verdict speaks of transactions and round trips; a pub/sub window counts
/// messages published, and its "round trip" is the window's time per message published.
fn per_message_wording(mut t: CpuTable) -> CpuTable {
    t.info.verdict = t
        .info
        .verdict
        .replace(
            "a round trip takes",
            "the window takes, per message published,",
        )
        .replace("each transaction's CPU", "each message's CPU")
        .replace("its request streams can use", "the run can use")
        .replace("no transaction completed", "no message was published");
    t
}

/// Least-squares slope of `(t, n)`.
fn slope(points: &[(f64, u64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mt, mn) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(t, v)| (a + t / n, b + v as f64 / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), &(t, v)| {
        (a + (t - mt) * (v as f64 - mn), b + (t - mt) * (t - mt))
    });
    if den > 0.0 { num / den } else { 0.0 }
}

impl PubSubReport {
    /// Put the run's outcome and CPU tables together.
    pub fn build(
        settings: PubSubSettings,
        plan: &Plan,
        out: &Outcome,
        per_published: Option<&CpuTable>,
        per_delivered: Option<&CpuTable>,
    ) -> PubSubReport {
        let published: u64 = out.published.iter().map(|p| p.sent).sum();
        let rows: Vec<SubscriberRow> = out
            .delivered
            .iter()
            .enumerate()
            .map(|(i, d)| SubscriberRow {
                index: i,
                block: format!(
                    "{}..{}",
                    plan.symbol_name(d.block.start),
                    plan.symbol_name(d.block.end.saturating_sub(1))
                ),
                expected: d.expected,
                received: d.received,
                lost: d.expected.saturating_sub(d.received),
                duplicates: d.duplicates,
                strays: d.strays,
                mps: d.received as f64 / d.active.as_secs_f64().max(1e-9),
                pace_pct: 0.0,
            })
            .collect();
        let publish_mps = published as f64 / out.publishing.as_secs_f64().max(1e-9);
        let mut rows = rows;
        for r in &mut rows {
            let share = if plan.competing {
                1.0 / plan.subscribers.max(1) as f64
            } else {
                r.expected as f64 / (published.max(1)) as f64
            };
            r.pace_pct = 100.0 * r.mps / (publish_mps * share).max(1e-9);
        }
        let mut latency = hdrhistogram::Histogram::<u64>::new(3).ok();
        for d in &out.delivered {
            if let Some(h) = latency.as_mut() {
                let _ = h.add(&d.latency_ns);
            }
        }
        let during: Vec<(f64, u64)> = out
            .backlog
            .iter()
            .copied()
            .filter(|&(t, _)| t <= out.publishing.as_secs_f64())
            .collect();
        let delivered: u64 = rows.iter().map(|r| r.received).sum();
        PubSubReport {
            schema: SCHEMA,
            settings,
            published,
            expected: if plan.competing {
                published
            } else {
                rows.iter().map(|r| r.expected).sum()
            },
            delivered,
            lost: if plan.competing {
                published.saturating_sub(delivered)
            } else {
                rows.iter().map(|r| r.lost).sum()
            },
            duplicates: rows.iter().map(|r| r.duplicates).sum(),
            publisher_mps: out
                .published
                .iter()
                .map(|p| p.sent as f64 / p.elapsed.as_secs_f64().max(1e-9))
                .collect(),
            publish_mps,
            subscriber_mps: Spread::of(rows.iter().map(|r| r.mps).collect()),
            subscriber_pace_pct: Spread::of(rows.iter().map(|r| r.pace_pct).collect()),
            subscribers: rows,
            backlog: Backlog {
                max: out.backlog.iter().map(|&(_, n)| n).max().unwrap_or(0),
                growth_per_s: slope(&during),
                samples: out.backlog.clone(),
                broker_queue_max: out.broker_depth.iter().map(|&(_, n)| n).max(),
                broker_queue_samples: out.broker_depth.clone(),
            },
            publishing_s: out.publishing.as_secs_f64(),
            drain_s: out.drain.as_secs_f64(),
            elapsed_s: out.elapsed.as_secs_f64(),
            latency_us: latency.as_ref().map(Latency::of).unwrap_or_default(),
            cpu_per_published: per_published.map(|t| PerMessage::of(t, published)),
            cpu_per_delivered: per_delivered.map(|t| PerMessage::of(t, delivered)),
            table: per_published.cloned().map(per_message_wording),
            error: out.error.clone(),
        }
    }

    /// Whether every subscriber got exactly its messages.
    pub fn complete(&self) -> bool {
        self.error.is_none()
            && self.lost == 0
            && self.duplicates == 0
            && self
                .subscribers
                .iter()
                .all(|r| r.lost == 0 && r.duplicates == 0 && r.strays == 0)
    }

    /// The per-subscriber rows, a header first: for TSV/CSV and Markdown.
    pub fn rows(&self) -> Vec<Vec<String>> {
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
        for r in &self.subscribers {
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
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        let s = &self.settings;
        let _ = writeln!(o, "### oemputx pubsub on {}\n", s.broker);
        let _ = writeln!(o, "- modes: {}", s.modes);
        let _ = writeln!(
            o,
            "- published {} at {:.1} msg/s; delivered {} of {} expected, lost {}, duplicated {}",
            self.published,
            self.publish_mps,
            self.delivered,
            self.expected,
            self.lost,
            self.duplicates
        );
        let _ = writeln!(
            o,
            "- subscriber msg/s min {:.1} / median {:.1} / max {:.1}; backlog max {}, drained {:.3} s",
            self.subscriber_mps.min,
            self.subscriber_mps.median,
            self.subscriber_mps.max,
            self.backlog.max,
            self.drain_s
        );
        if let (Some(p), Some(d)) = (&self.cpu_per_published, &self.cpu_per_delivered) {
            let _ = writeln!(
                o,
                "- captured CPU µs per message published {:.2}, per message delivered {:.2}",
                p.captured_us, d.captured_us
            );
        }
        let _ = writeln!(o);
        o.push_str(&crate::export::cells::markdown(&self.rows()));
        o
    }

    /// The text report.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let s = &self.settings;
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
            self.published, self.publish_mps, self.publishing_s
        );
        let _ = writeln!(
            o,
            "Delivered         : {:>10}  of {} expected; lost {}, duplicated {}",
            self.delivered, self.expected, self.lost, self.duplicates
        );
        let m = &self.subscriber_mps;
        let _ = writeln!(
            o,
            "Subscriber msg/s  : min {:.1}  median {:.1}  max {:.1}",
            m.min, m.median, m.max
        );
        let p = &self.subscriber_pace_pct;
        let _ = writeln!(
            o,
            "Subscriber pace   : min {:.1}%  median {:.1}%  max {:.1}% of their shares of the publish rate",
            p.min, p.median, p.max
        );
        let _ = writeln!(
            o,
            "Backlog           : max {} behind, growing {:.1} msg/s while publishing; drained {:.3} s after the publishers stopped",
            self.backlog.max, self.backlog.growth_per_s, self.drain_s
        );
        if let Some(q) = self.backlog.broker_queue_max {
            let _ = writeln!(
                o,
                "Broker queues     : max {q} messages waiting in the subscribers' queues (the broker's own count)"
            );
        }
        let l = &self.latency_us;
        let _ = writeln!(
            o,
            "\nLatency (us)         min      p50      p90      p99    p99.9      max"
        );
        let _ = writeln!(
            o,
            "              {:>10.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            l.min, l.p50, l.p90, l.p99, l.p999, l.max
        );
        self.subscriber_table(&mut o);
        self.cpu_text(&mut o);
        if let Some(e) = &self.error {
            let _ = writeln!(o, "\nError             : {e}");
        }
        o
    }

    fn subscriber_table(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "\n Sub  Block       Expected   Received   Lost  Dup  Stray      msg/s   pace"
        );
        for r in &self.subscribers {
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

    fn cpu_text(&self, o: &mut String) {
        let (Some(t), Some(p), Some(d)) = (
            &self.table,
            &self.cpu_per_published,
            &self.cpu_per_delivered,
        ) else {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_growth_is_the_least_squares_slope() {
        assert_eq!(slope(&[(0.0, 0), (1.0, 100), (2.0, 200)]), 100.0);
        assert_eq!(slope(&[(0.0, 5)]), 0.0);
        let flat = slope(&[(0.0, 10), (1.0, 10), (2.0, 10)]);
        assert!(flat.abs() < 1e-9);
    }

    #[test]
    fn the_spread_is_min_median_max() {
        let s = Spread::of(vec![3.0, 1.0, 2.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
    }
}
