//! The pub/sub report: rates of publishers and subscribers kept apart (throughput is a
//! measure of capacity, not speed), each subscriber's expected / received / lost /
//! duplicated, the backlog and the drain, latency from publish to receipt, and the groups'
//! CPU per message published and per message delivered.

use super::engine::Outcome;
use super::plan::Plan;
use crate::accounting::CpuTable;
use crate::stats::Latency;
use serde::Serialize;

/// Schema of the JSON report.
pub const SCHEMA: &str = "oemputx.pubsub/1";
/// Schema of `--rounds N`'s JSON.
pub const ROUNDS_SCHEMA: &str = "oemputx.pubsub-rounds/1";
/// Schema of `--find-capacity`'s JSON.
pub const CAPACITY_SCHEMA: &str = "oemputx.pubsub-capacity/1";

/// `--rounds N`: every round's report, and the spread of the captured CPU per message
/// published over them.
#[derive(Debug, Serialize)]
pub struct PubSubRounds {
    pub schema: &'static str,
    pub captured_us_per_published: BestMedianWorst,
    pub rounds: Vec<PubSubReport>,
}

/// Best, median and worst of the rounds (None without a CPU figure).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BestMedianWorst {
    pub best: Option<f64>,
    pub median: Option<f64>,
    pub worst: Option<f64>,
}

/// `--find-capacity`: each step's asked rate and report, and the highest that kept up.
#[derive(Debug, Serialize)]
pub struct PubSubCapacity {
    pub schema: &'static str,
    pub capacity_mps: Option<f64>,
    pub steps: Vec<CapacityStep>,
}

/// One step of `--find-capacity`.
#[derive(Debug, Serialize)]
pub struct CapacityStep {
    pub rate_asked: f64,
    pub sustained: bool,
    pub report: PubSubReport,
}

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
    /// Ctrl-C or SIGTERM stopped the run; its figures cover it up to then.
    pub interrupted: bool,
}

/// The accounting verdict speaks of transactions and round trips; a pub/sub window counts
/// messages published, and its "round trip" is the window's time per message published.
fn per_message_wording(mut t: CpuTable) -> CpuTable {
    t.info.verdict = t
        .info
        .verdict
        .replace(
            "more than a round trip takes (",
            "more than the window takes per message published (",
        )
        .replace(
            "a round trip takes",
            "the window takes, per message published,",
        )
        .replace("each transaction's CPU", "each message's CPU")
        .replace("on each transaction", "on each message")
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
            interrupted: out.interrupted,
        }
    }

    /// Whether every subscriber got exactly its messages.
    pub fn complete(&self) -> bool {
        self.error.is_none()
            && !self.interrupted
            && self.lost == 0
            && self.duplicates == 0
            && self
                .subscribers
                .iter()
                .all(|r| r.lost == 0 && r.duplicates == 0 && r.strays == 0)
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
