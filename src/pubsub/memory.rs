//! An in-memory broker: the test double of [`super::Broker`], so that the engine's counting
//! (lost, duplicated, strays, backlog, drain) is tested without a real broker. Each
//! subscriber has a queue of its own and gets every message whose symbol is in its block;
//! competitors share one queue. Faults can be planted: every n-th message a subscriber
//! should get is lost, or delivered twice, or a message of another block comes along.

use super::{Broker, Publisher, Stamp, Subscriber};
use crate::transport::TransportError;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// What the double does wrong, to check that the engine counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Lose every n-th message subscriber 0 should get (0: none).
    pub lose_every: u64,
    /// Deliver every n-th message of subscriber 0 twice (0: none).
    pub duplicate_every: u64,
    /// Hand subscriber 0 every n-th message of a symbol outside its block (0: none).
    pub stray_every: u64,
    /// How long each delivery waits before it is visible (a slow broker: backlog).
    pub delay: Duration,
}

#[derive(Default)]
struct Queue {
    items: Mutex<VecDeque<Stamp>>,
    ready: Condvar,
}

impl Queue {
    fn push(&self, s: Stamp) {
        if let Ok(mut q) = self.items.lock() {
            q.push_back(s);
        }
        self.ready.notify_one();
    }

    fn pop(&self, wait: Duration) -> Option<Stamp> {
        let q = self.items.lock().ok()?;
        let (mut q, _) = self
            .ready
            .wait_timeout_while(q, wait, |q| q.is_empty())
            .ok()?;
        q.pop_front()
    }
}

/// One subscription: its block (None: a competitor, every symbol) and its queue.
struct Subscription {
    block: Option<Range<u16>>,
    queue: Arc<Queue>,
}

/// The in-memory broker.
#[derive(Default)]
pub struct Memory {
    subs: Mutex<Vec<(usize, Subscription)>>,
    shared: Arc<Queue>,
    faults: Faults,
    /// Messages subscriber 0 should have got, counted for the planted faults.
    seen0: Mutex<u64>,
}

impl Memory {
    #[cfg(test)]
    pub(crate) fn with_faults(faults: Faults) -> Memory {
        Memory {
            faults,
            ..Memory::default()
        }
    }

    fn deliver(&self, stamp: Stamp) {
        if !self.faults.delay.is_zero() {
            std::thread::sleep(self.faults.delay);
        }
        let Ok(subs) = self.subs.lock() else {
            return;
        };
        let mut shared_done = false;
        for (i, s) in subs.iter() {
            match &s.block {
                None if !shared_done => {
                    self.shared.push(stamp);
                    shared_done = true;
                }
                None => {}
                Some(b) if b.contains(&stamp.symbol) => {
                    if *i == 0 && self.fault(stamp, &s.queue) {
                        continue;
                    }
                    s.queue.push(stamp);
                }
                Some(_) => {}
            }
        }
    }

    /// Apply the planted faults to a message of subscriber 0; true when it is lost.
    fn fault(&self, stamp: Stamp, queue: &Queue) -> bool {
        let Ok(mut n) = self.seen0.lock() else {
            return false;
        };
        *n += 1;
        let every = |k: u64| k > 0 && (*n).is_multiple_of(k);
        if every(self.faults.stray_every) {
            queue.push(Stamp {
                symbol: u16::MAX,
                ..stamp
            });
        }
        if every(self.faults.lose_every) {
            return true;
        }
        if every(self.faults.duplicate_every) {
            queue.push(stamp);
        }
        false
    }
}

struct MemoryPublisher {
    broker: Arc<Memory>,
}

impl Publisher for MemoryPublisher {
    fn publish(&mut self, stamp: Stamp, _body: &[u8]) -> Result<(), TransportError> {
        self.broker.deliver(stamp);
        Ok(())
    }
    fn pause(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
    fn close(self: Box<Self>) -> Result<(), TransportError> {
        Ok(())
    }
}

struct MemorySubscriber {
    queue: Arc<Queue>,
}

impl Subscriber for MemorySubscriber {
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError> {
        Ok(self.queue.pop(wait))
    }
    fn broker_depth(&mut self) -> Option<u64> {
        self.queue.items.lock().ok().map(|q| q.len() as u64)
    }
    fn close(self: Box<Self>) {}
}

/// The double behind an `Arc`, as the engine holds brokers.
#[derive(Clone)]
pub struct MemoryBroker(pub Arc<Memory>);

impl Broker for MemoryBroker {
    fn describe(&self) -> String {
        "memory: (the in-memory test broker)".into()
    }
    fn modes(&self) -> String {
        "in memory".into()
    }
    fn prepare(&self) -> Result<(), TransportError> {
        Ok(())
    }
    fn publisher(&self, _p: usize) -> Result<Box<dyn Publisher>, TransportError> {
        Ok(Box::new(MemoryPublisher {
            broker: self.0.clone(),
        }))
    }
    fn subscriber(
        &self,
        i: usize,
        block: Range<u16>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        let queue = Arc::new(Queue::default());
        if let Ok(mut subs) = self.0.subs.lock() {
            subs.push((
                i,
                Subscription {
                    block: Some(block),
                    queue: queue.clone(),
                },
            ));
        }
        Ok(Box::new(MemorySubscriber { queue }))
    }
    fn competitor(&self, i: usize) -> Result<Box<dyn Subscriber>, TransportError> {
        if let Ok(mut subs) = self.0.subs.lock() {
            subs.push((
                i,
                Subscription {
                    block: None,
                    queue: self.0.shared.clone(),
                },
            ));
        }
        Ok(Box::new(MemorySubscriber {
            queue: self.0.shared.clone(),
        }))
    }
    fn transport(&self) -> &'static str {
        "memory"
    }
    fn default_groups(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::super::engine::{Pacing, run};
    use super::super::plan::Plan;
    use super::*;
    use std::time::Instant;

    fn plan(subscribers: usize, count: u64) -> Plan {
        Plan {
            topic: "t".into(),
            symbols: 10,
            select: 3,
            publishers: 2,
            subscribers,
            count,
            duration: None,
            msg_size: 16,
            seed: 7,
            competing: false,
        }
    }

    fn pacing() -> Pacing {
        Pacing {
            think: Duration::ZERO,
            rate: None,
            drain_timeout: Duration::from_millis(300),
        }
    }

    fn go(broker: Memory, plan: &Plan) -> super::super::engine::Outcome {
        go_paced(broker, plan, pacing(), Arc::default())
    }

    fn go_paced(
        broker: Memory,
        plan: &Plan,
        pacing: Pacing,
        interrupt: Arc<std::sync::atomic::AtomicBool>,
    ) -> super::super::engine::Outcome {
        let mut windows = Vec::new();
        let out = run(
            Arc::new(MemoryBroker(Arc::new(broker))),
            (plan, pacing),
            interrupt,
            &mut |open| windows.push(open),
        )
        .expect("the run");
        assert_eq!(windows, [true, false], "one window, opened then closed");
        out
    }

    #[test]
    fn duration_ends_publishing_on_time_whatever_the_pacing() {
        let timed = Plan {
            duration: Some(Duration::from_millis(500)),
            ..plan(2, 1_000_000)
        };
        for pacing in [
            // One message a day, and a think time ten times the duration.
            Pacing {
                rate: Some(1.0 / 86_400.0),
                ..pacing()
            },
            Pacing {
                think: Duration::from_secs(5),
                ..pacing()
            },
        ] {
            let started = Instant::now();
            let out = go_paced(Memory::default(), &timed, pacing, Arc::default());
            // Publishing stops at the deadline; the drain waits its 300 ms at most.
            assert!(started.elapsed() < Duration::from_secs(2), "{pacing:?}");
            assert!(!out.interrupted);
        }
    }

    #[test]
    fn an_interrupt_stops_publishers_and_subscribers_at_once() {
        let interrupt = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = interrupt.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let slow = Pacing {
            think: Duration::from_secs(20),
            drain_timeout: Duration::from_secs(60),
            ..pacing()
        };
        let started = Instant::now();
        let out = go_paced(Memory::default(), &plan(3, 1000), slow, interrupt);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(out.interrupted);
    }

    #[test]
    fn every_subscriber_gets_exactly_its_block_when_nothing_goes_wrong() {
        let p = plan(4, 1000);
        let out = go(Memory::default(), &p);
        assert_eq!(out.published.iter().map(|x| x.sent).sum::<u64>(), 1000);
        for (i, d) in out.delivered.iter().enumerate() {
            let want = p.expected(i);
            assert!(want > 0);
            assert_eq!(
                (d.received, d.duplicates, d.strays),
                (want, 0, 0),
                "sub {i}"
            );
            assert_eq!(d.expected, want);
        }
        assert!(out.error.is_none());
    }

    #[test]
    fn lost_duplicated_and_stray_messages_are_counted_apart() {
        let p = plan(2, 600);
        let out = go(
            Memory::with_faults(Faults {
                lose_every: 10,
                duplicate_every: 7,
                stray_every: 13,
                ..Faults::default()
            }),
            &p,
        );
        let want = p.expected(0);
        let d = out
            .delivered
            .iter()
            .find(|d| d.block == p.selection(0))
            .expect("subscriber 0");
        let lost = want / 10;
        assert_eq!(d.received, want - lost, "{d:?}");
        // Every 7th delivered twice, but not those of them that were lost (every 70th).
        assert_eq!(d.duplicates, want / 7 - want / 70, "{d:?}");
        assert_eq!(d.strays, want / 13, "{d:?}");
        // The others were not touched.
        let other = out
            .delivered
            .iter()
            .find(|d| d.block == p.selection(1))
            .expect("subscriber 1");
        assert_eq!((other.received, other.duplicates), (p.expected(1), 0));
    }

    #[test]
    fn a_slow_broker_shows_as_backlog_and_its_queue_depth_is_sampled() {
        let p = plan(2, 80);
        let out = go(
            Memory::with_faults(Faults {
                delay: Duration::from_millis(3),
                ..Faults::default()
            }),
            &p,
        );
        assert!(!out.backlog.is_empty());
        assert!(!out.broker_depth.is_empty(), "the double tells its depth");
        let received: u64 = out.delivered.iter().map(|d| d.received).sum();
        assert_eq!(received, p.expected(0) + p.expected(1));
    }

    #[test]
    fn the_report_of_a_run_matches_the_committed_schema() {
        let p = plan(3, 300);
        let out = go(Memory::default(), &p);
        let settings = super::super::report::PubSubSettings {
            broker: "memory:".into(),
            transport: "memory",
            modes: "in memory".into(),
            topic: p.topic.clone(),
            publishers: p.publishers,
            subscribers: p.subscribers,
            symbols: p.symbols,
            select: p.select,
            count: p.count,
            duration_s: None,
            msg_size: p.msg_size,
            think_ms: 0.0,
            rate_limit: None,
            persistent: false,
            seed: p.seed,
        };
        let report = super::super::report::PubSubReport::build(settings, &p, &out, None, None);
        let json = serde_json::to_value(&report).expect("serialises");
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schemas/oemputx.pubsub-1.schema.json"))
                .expect("schema");
        let v = jsonschema::validator_for(&schema).expect("a schema");
        let errors: Vec<String> = v.iter_errors(&json).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert!(report.complete());
    }

    #[test]
    fn competitors_share_one_queue_and_each_message_is_delivered_once() {
        let p = Plan {
            competing: true,
            ..plan(3, 900)
        };
        let out = go(Memory::default(), &p);
        let received: u64 = out.delivered.iter().map(|d| d.received).sum();
        assert_eq!(received, 900);
        assert!(out.delivered.iter().all(|d| d.duplicates == 0));
    }
}
