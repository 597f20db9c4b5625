//! The run: subscribers subscribe first, then the window opens, the publishers send their
//! shares (paced by `--think` or `--rate`), and the subscribers drain until each has what
//! it must receive or nothing has come for `--drain-timeout`. Meanwhile the backlog — what
//! subscribers should have by what was published, less what they have — is sampled.

use super::plan::Plan;
use super::{Broker, Publisher, Stamp, Subscriber, now_ns};
use crate::transport::TransportError;
use hdrhistogram::Histogram;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How publishers pace and how long subscribers wait at the end.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    /// Sleep before each publish (the study's think time).
    pub think: Duration,
    /// All publishers together at most this many messages a second.
    pub rate: Option<f64>,
    /// Subscribers give up when nothing has come for this long after publishing ended.
    pub drain_timeout: Duration,
}

/// One publisher's result.
#[derive(Debug, Clone)]
pub struct Published {
    pub sent: u64,
    pub elapsed: Duration,
}

/// One subscriber's result.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub block: Range<u16>,
    pub expected: u64,
    /// Distinct messages received.
    pub received: u64,
    pub duplicates: u64,
    /// Messages outside its block (the broker's selection failed).
    pub strays: u64,
    /// From the window's start to its last message: its rate is over the same span as
    /// the publishers', so that keeping up reads as the same rate (a span from its own first
    /// message would leave out the messages published before its block came round).
    pub active: Duration,
    /// Publish to receipt, ns.
    pub latency_ns: Histogram<u64>,
}

/// What the run measured.
#[derive(Debug)]
pub struct Outcome {
    pub published: Vec<Published>,
    pub delivered: Vec<Delivered>,
    /// (seconds since the window opened, messages behind over all subscribers).
    pub backlog: Vec<(f64, u64)>,
    /// (seconds, messages in the subscribers' queues at the broker), where it tells.
    pub broker_depth: Vec<(f64, u64)>,
    /// Publishing, from the window's start to the last publisher's end.
    pub publishing: Duration,
    /// From the publishers' end until every subscriber had all (or gave up).
    pub drain: Duration,
    /// The whole window.
    pub elapsed: Duration,
    /// The first failure of a publisher or subscriber.
    pub error: Option<String>,
    /// Ctrl-C or SIGTERM stopped the run: publishers stopped, subscribers did not drain.
    pub interrupted: bool,
}

/// What the threads share.
struct Shared {
    plan: Plan,
    sent: Vec<AtomicU64>,
    received: Vec<AtomicU64>,
    publishing_done: AtomicBool,
    /// Competing subscribers: what any of them has received, and how many that is.
    seen_by_any: std::sync::Mutex<Vec<Vec<u64>>>,
    distinct: AtomicU64,
    /// Each subscriber's queue depth at the broker, last sampled (`u64::MAX`: not told).
    depth: Vec<AtomicU64>,
    /// Set by Ctrl-C or SIGTERM.
    interrupt: Arc<AtomicBool>,
    /// Set by the run itself when nothing moved for too long (a stalled connection).
    stop: AtomicBool,
}

/// The longest a publisher paces or a subscriber waits before it looks at the interrupt
/// and the deadline again: a stop takes effect within about this.
const LOOK_EVERY: Duration = Duration::from_millis(50);

impl Shared {
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }
    /// Publishers and subscribers stop: interrupted, or the run found itself stalled.
    fn stopping(&self) -> bool {
        self.interrupted() || self.stop.load(Ordering::Relaxed)
    }
    /// Messages published and received so far: what moves while the run is alive.
    fn moved(&self) -> u64 {
        let sum = |v: &[AtomicU64]| v.iter().map(|a| a.load(Ordering::Relaxed)).sum::<u64>();
        sum(&self.sent) + sum(&self.received) + self.distinct.load(Ordering::Relaxed)
    }
}

/// How long the threads get to end after the run stops them; one that has not (blocked in
/// a write to a connection that passes nothing) is left behind and named.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How long nothing may be published or received before the run takes its connections for
/// stalled: well past any pause the pacing makes, and once publishing is over, past the
/// subscribers' own drain timeout.
fn stall_limit(plan: &Plan, pacing: &Pacing, draining: bool) -> Duration {
    let interval = pacing
        .rate
        .map(|r| Duration::from_secs_f64((plan.publishers as f64 / r.max(1e-9)).min(86_400.0)))
        .unwrap_or_default();
    [
        Duration::from_secs(20),
        pacing.think * 3,
        interval * 3,
        if draining {
            pacing.drain_timeout + Duration::from_secs(10)
        } else {
            Duration::ZERO
        },
    ]
    .into_iter()
    .max()
    .unwrap_or_default()
}

/// Run `plan` on `broker`; `window(true)` when the measured window opens, `window(false)`
/// when it closes (the caller takes its CPU snapshots there).
pub fn run(
    broker: Arc<dyn Broker>,
    (plan, pacing): (&Plan, Pacing),
    interrupt: Arc<AtomicBool>,
    window: &mut dyn FnMut(bool),
) -> Result<Outcome, TransportError> {
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        sent: (0..plan.publishers).map(|_| AtomicU64::new(0)).collect(),
        received: (0..plan.subscribers).map(|_| AtomicU64::new(0)).collect(),
        publishing_done: AtomicBool::new(false),
        seen_by_any: std::sync::Mutex::new(bitsets(plan)),
        distinct: AtomicU64::new(0),
        depth: (0..plan.subscribers)
            .map(|_| AtomicU64::new(u64::MAX))
            .collect(),
        interrupt,
        stop: AtomicBool::new(false),
    });
    // Everyone connected (and subscribed) before the window opens; the main thread is the
    // last party, so that it opens the window between the two barriers.
    let ready = Arc::new(Barrier::new(plan.publishers + plan.subscribers + 1));
    let go = Arc::new(Barrier::new(plan.publishers + plan.subscribers + 1));
    let subs = (0..plan.subscribers)
        .map(|i| {
            let (b, s, r, g) = (broker.clone(), shared.clone(), ready.clone(), go.clone());
            spawn(format!("subscriber {i}"), move || {
                subscribe(&*b, i, &s, &r, &g, pacing.drain_timeout)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let pubs = (0..plan.publishers)
        .map(|p| {
            let (b, s, r, g) = (broker.clone(), shared.clone(), ready.clone(), go.clone());
            spawn(format!("publisher {p}"), move || {
                publish(&*b, p, &s, &r, &g, pacing)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    ready.wait();
    window(true);
    let start = Instant::now();
    go.wait();
    let (mut backlog, mut broker_depth) = (Vec::new(), Vec::new());
    let (mut moved, mut last_move) = (shared.moved(), Instant::now());
    let mut stopped_at: Option<Instant> = None;
    let mut stalled = None;
    while !pubs.iter().all(|h| h.is_finished()) || !subs.iter().all(|h| h.is_finished()) {
        if shared.moved() != moved {
            (moved, last_move) = (shared.moved(), Instant::now());
        } else if let limit = stall_limit(
            plan,
            &pacing,
            shared.publishing_done.load(Ordering::Relaxed),
        ) && stalled.is_none()
            && last_move.elapsed() > limit
        {
            stalled = Some(format!(
                "nothing was published or received for {} s: the broker connection looks stalled; the run was stopped",
                limit.as_secs()
            ));
            shared.stop.store(true, Ordering::Relaxed);
        }
        if shared.stopping() {
            let at = *stopped_at.get_or_insert_with(Instant::now);
            if at.elapsed() > STOP_GRACE {
                break;
            }
        }
        if !shared.publishing_done.load(Ordering::Relaxed) && pubs.iter().all(|h| h.is_finished()) {
            shared.publishing_done.store(true, Ordering::Relaxed);
        }
        let t = start.elapsed().as_secs_f64();
        backlog.push((t, behind(&shared)));
        if let Some(q) = queued(&shared) {
            broker_depth.push((t, q));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // One last sample of the brokers' queues, for a run shorter than the sampling period.
    if let Some(q) = queued(&shared) {
        broker_depth.push((start.elapsed().as_secs_f64(), q));
    }
    window(false);
    let elapsed = start.elapsed();
    let mut out = collect(pubs, subs, (backlog, elapsed), &shared)?;
    out.broker_depth = broker_depth;
    out.interrupted = shared.interrupted();
    if let Some(why) = stalled {
        out.error = Some(match out.error.take() {
            Some(e) => format!("{why}; {e}"),
            None => why,
        });
    }
    Ok(out)
}

/// A publisher's or subscriber's thread; the machine's refusal (its thread or memory limit)
/// is an error naming it, not a panic. The threads already started wait at the first
/// barrier and end with the process.
fn spawn<T: Send + 'static>(
    name: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, TransportError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .map_err(|e| TransportError::Broker {
            what: format!("starting {name}'s thread"),
            target: "this machine".into(),
            why: format!(
                "{e}: the machine refused another thread; run fewer publishers and subscribers"
            ),
        })
}

/// Join the threads and put their results together.
fn collect(
    pubs: Vec<std::thread::JoinHandle<Result<(Published, Instant), TransportError>>>,
    subs: Vec<std::thread::JoinHandle<Result<(Delivered, Instant), TransportError>>>,
    (backlog, elapsed): (Vec<(f64, u64)>, Duration),
    s: &Shared,
) -> Result<Outcome, TransportError> {
    let anything_moved = s.moved() > 0;
    let mut error = None;
    let (mut published, mut delivered) = (Vec::new(), Vec::new());
    let (mut pub_end, mut sub_end) = (None::<Instant>, None::<Instant>);
    // A thread still blocked after the stop is left behind (it ends with the process);
    // what it counted is read from the shared counters.
    let stuck = pubs.iter().filter(|h| !h.is_finished()).count()
        + subs.iter().filter(|h| !h.is_finished()).count();
    if stuck > 0 {
        error = Some(format!(
            "{stuck} publisher(s) or subscriber(s) did not end within {} s of the stop: their connections are stalled (their counts are as far as they got)",
            STOP_GRACE.as_secs()
        ));
    }
    for (p, h) in pubs.into_iter().enumerate() {
        if !h.is_finished() {
            published.push(Published {
                sent: s.sent[p].load(Ordering::Relaxed),
                elapsed,
            });
            continue;
        }
        match h.join() {
            Ok(Ok((p, end))) => {
                pub_end = Some(pub_end.map_or(end, |e| e.max(end)));
                published.push(p);
            }
            Ok(Err(e)) => {
                error.get_or_insert(e.to_string());
            }
            Err(_) => {
                error.get_or_insert("a publisher thread panicked".into());
            }
        }
    }
    for (i, h) in subs.into_iter().enumerate() {
        if !h.is_finished() {
            let expected = if s.plan.competing || s.plan.duration.is_some() {
                0
            } else {
                s.plan.expected(i)
            };
            let mut d = Delivered::new(s.plan.selection(i), expected)?;
            d.received = s.received[i].load(Ordering::Relaxed);
            d.active = elapsed;
            delivered.push(d);
            continue;
        }
        match h.join() {
            Ok(Ok((d, end))) => {
                sub_end = Some(sub_end.map_or(end, |e| e.max(end)));
                delivered.push(d);
            }
            Ok(Err(e)) => {
                error.get_or_insert(e.to_string());
            }
            Err(_) => {
                error.get_or_insert("a subscriber thread panicked".into());
            }
        }
    }
    // Nothing ever moved: the run did not start (a refused connection, say), and that is
    // the error. Once messages moved, a failure mid-run is reported with what was counted.
    if (published.is_empty() || delivered.is_empty()) && !anything_moved {
        return Err(TransportError::Broker {
            what: "the pub/sub run".into(),
            target: "the broker".into(),
            why: error.unwrap_or_else(|| "no publisher or subscriber finished".into()),
        });
    }
    let publishing = published
        .iter()
        .map(|p| p.elapsed)
        .max()
        .unwrap_or_default();
    let drain = match (pub_end, sub_end) {
        (Some(p), Some(s)) => s.saturating_duration_since(p),
        _ => Duration::ZERO,
    };
    Ok(Outcome {
        published,
        delivered,
        backlog,
        broker_depth: Vec::new(),
        publishing,
        drain,
        elapsed,
        error,
        interrupted: false,
    })
}

/// One bit per message each publisher will send (grown as messages come when the run is
/// sized by time).
fn bitsets(plan: &Plan) -> Vec<Vec<u64>> {
    (0..plan.publishers)
        .map(|p| {
            let n = if plan.duration.is_some() {
                0
            } else {
                plan.share(p)
            };
            vec![0u64; n.div_ceil(64) as usize]
        })
        .collect()
}

/// Set the bit of `stamp` in `bits`: `Some(true)` when it was new, `Some(false)` for a
/// duplicate, `None` when no publisher sent such a message.
fn mark(bits: &mut [Vec<u64>], stamp: &Stamp, grow: bool) -> Option<bool> {
    let row = bits.get_mut(stamp.publisher as usize)?;
    let word = (stamp.seq / 64) as usize;
    if grow && word >= row.len() && stamp.seq < u64::MAX / 2 {
        row.resize(word + 1, 0);
    }
    let w = row.get_mut(word)?;
    let bit = 1u64 << (stamp.seq % 64);
    let new = *w & bit == 0;
    *w |= bit;
    Some(new)
}

/// Messages in the subscribers' queues at the broker, summed over those whose broker tells.
/// Competitors all read one queue (RabbitMQ's shared queue, JetStream's shared consumer):
/// its depth once, the latest any of them saw, not once per competitor.
fn queued(s: &Shared) -> Option<u64> {
    let told: Vec<u64> = s
        .depth
        .iter()
        .map(|d| d.load(Ordering::Relaxed))
        .filter(|&d| d != u64::MAX)
        .collect();
    if s.plan.competing {
        return told.iter().max().copied();
    }
    (!told.is_empty()).then(|| told.iter().sum())
}

/// Messages all subscribers are behind now: what their blocks hold of what was published,
/// less what they received.
fn behind(s: &Shared) -> u64 {
    let sent: Vec<u64> = s.sent.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    if s.plan.competing {
        let total: u64 = sent.iter().sum();
        return total.saturating_sub(s.distinct.load(Ordering::Relaxed));
    }
    (0..s.plan.subscribers)
        .map(|i| {
            let block = s.plan.selection(i);
            let due: u64 = sent.iter().map(|&n| s.plan.in_block(n, &block)).sum();
            due.saturating_sub(s.received[i].load(Ordering::Relaxed))
        })
        .sum()
}

fn publish(
    broker: &dyn Broker,
    p: usize,
    s: &Shared,
    ready: &Barrier,
    go: &Barrier,
    pacing: Pacing,
) -> Result<(Published, Instant), TransportError> {
    let publisher = broker.publisher(p);
    ready.wait();
    go.wait();
    let mut publisher: Box<dyn Publisher> = publisher?;
    let share = match s.plan.duration {
        Some(_) => u64::MAX,
        None => s.plan.share(p),
    };
    let body = vec![b'x'; s.plan.msg_size];
    let interval = pacing
        .rate
        .map(|r| Duration::from_secs_f64(s.plan.publishers as f64 / r.max(f64::MIN_POSITIVE)));
    let start = Instant::now();
    let deadline = s.plan.duration.map(|d| start + d);
    let mut sent = 0;
    for seq in 0..share {
        if s.stopping() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if !pacing.think.is_zero()
            && !pace(&mut *publisher, s, Instant::now() + pacing.think, deadline)
        {
            break;
        }
        if let Some(every) = interval
            && !pace(
                &mut *publisher,
                s,
                start + every.mul_f64(seq as f64),
                deadline,
            )
        {
            break;
        }
        let stamp = Stamp {
            publisher: p as u32,
            seq,
            symbol: (seq % u64::from(s.plan.symbols)) as u16,
            ts_ns: now_ns(),
        };
        publisher.publish(stamp, &body)?;
        s.sent[p].store(seq + 1, Ordering::Relaxed);
        sent = seq + 1;
    }
    // Publishing ends with the last publish; closing (the flush and the channel's close
    // handshake) is not part of the publish rate.
    let end = Instant::now();
    publisher.close()?;
    Ok((
        Published {
            sent,
            elapsed: end - start,
        },
        end,
    ))
}

/// Pause until `until`, in steps of at most [`LOOK_EVERY`]; false when the run must stop
/// first (interrupted, or the `--duration` deadline falls before `until`), so that neither
/// a long think time nor a slow rate outlives the run.
fn pace(
    publisher: &mut dyn Publisher,
    s: &Shared,
    until: Instant,
    deadline: Option<Instant>,
) -> bool {
    loop {
        if s.stopping() {
            return false;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return false;
        }
        if now >= until {
            return true;
        }
        let mut step = (until - now).min(LOOK_EVERY);
        if let Some(d) = deadline {
            step = step.min(d - now);
        }
        publisher.pause(step);
    }
}

impl Delivered {
    fn new(block: Range<u16>, expected: u64) -> Result<Delivered, TransportError> {
        Ok(Delivered {
            block,
            expected,
            received: 0,
            duplicates: 0,
            strays: 0,
            active: Duration::ZERO,
            latency_ns: Histogram::new(3).map_err(|e| TransportError::Broker {
                what: "making a latency histogram".into(),
                target: String::new(),
                why: e.to_string(),
            })?,
        })
    }
}

/// What a subscriber (`all`: the competitors together) must receive, when it is known:
/// from the plan for a run sized by count, else once the publishers have stopped, from
/// what they sent (into `block`).
fn target(s: &Shared, block: &Range<u16>, expected: u64, all: bool) -> Option<u64> {
    if s.plan.duration.is_none() {
        return Some(if all { s.plan.count } else { expected });
    }
    if !s.publishing_done.load(Ordering::Relaxed) {
        return None;
    }
    let sent = s.sent.iter().map(|a| a.load(Ordering::Relaxed));
    Some(if all {
        sent.sum()
    } else {
        sent.map(|n| s.plan.in_block(n, block)).sum()
    })
}

fn subscribe(
    broker: &dyn Broker,
    i: usize,
    s: &Shared,
    ready: &Barrier,
    go: &Barrier,
    drain_timeout: Duration,
) -> Result<(Delivered, Instant), TransportError> {
    let block = s.plan.selection(i);
    let sub = if s.plan.competing {
        broker.competitor(i)
    } else {
        broker.subscriber(i, block.clone())
    };
    ready.wait();
    go.wait();
    let start = Instant::now();
    let mut sub: Box<dyn Subscriber> = sub?;
    // Competing subscribers share one target: every message, received by any of them.
    let sized_by_time = s.plan.duration.is_some();
    let expected = if s.plan.competing || sized_by_time {
        0
    } else {
        s.plan.expected(i)
    };
    let mut seen = bitsets(&s.plan);
    let mut d = Delivered::new(block.clone(), expected)?;
    let mut last = start;
    let done = |d: &Delivered| {
        if s.plan.competing {
            target(s, &block, expected, true)
                .is_some_and(|t| s.distinct.load(Ordering::Relaxed) >= t)
        } else {
            target(s, &block, expected, false).is_some_and(|t| d.received >= t)
        }
    };
    // Competitors look at the shared count between messages: a short wait, so that the
    // last of them sees the end soon after another took the last message.
    let wait = Duration::from_millis(if s.plan.competing { 5 } else { 100 });
    // Sampled at once, then every 100 ms: a short run still has a figure.
    let mut sampled: Option<Instant> = None;
    while !done(&d) && !s.stopping() {
        if sampled.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            sampled = Some(Instant::now());
            if let Some(depth) = sub.broker_depth() {
                s.depth[i].store(depth, Ordering::Relaxed);
            }
        }
        let Some(stamp) = sub.next(wait)? else {
            if s.publishing_done.load(Ordering::Relaxed) && last.elapsed() >= drain_timeout {
                break;
            }
            continue;
        };
        last = Instant::now();
        let _ = d
            .latency_ns
            .record(now_ns().saturating_sub(stamp.ts_ns).max(1));
        if !block.contains(&stamp.symbol) {
            d.strays += 1;
            continue;
        }
        let fresh = if s.plan.competing {
            let mut any = s.seen_by_any.lock().map_err(|_| TransportError::Broker {
                what: "counting deliveries".into(),
                target: String::new(),
                why: "a subscriber thread panicked".into(),
            })?;
            let fresh = mark(&mut any, &stamp, s.plan.duration.is_some());
            if fresh == Some(true) {
                s.distinct.fetch_add(1, Ordering::Relaxed);
            }
            fresh
        } else {
            mark(&mut seen, &stamp, s.plan.duration.is_some())
        };
        match fresh {
            Some(true) => {
                d.received += 1;
                s.received[i].store(d.received, Ordering::Relaxed);
            }
            Some(false) => d.duplicates += 1,
            None => d.strays += 1,
        }
    }
    if sized_by_time && !s.plan.competing {
        d.expected = target(s, &block, expected, false).unwrap_or(d.received);
    }
    d.active = last - start;
    // The broker's last word, for a run shorter than the sampling period.
    if let Some(depth) = sub.broker_depth() {
        s.depth[i].store(depth, Ordering::Relaxed);
    }
    sub.close();
    Ok((d, Instant::now()))
}
