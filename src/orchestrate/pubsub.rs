//! One publish/subscribe window (`oemputx pubsub`, `oemputx matrix`): the broker the URL
//! names built by its transport, the engine's publishers and subscribers run between two
//! CPU snapshots, and the report of that window. [`super::pubsub_rounds`] repeats it
//! (rounds, the capacity search) and [`super::matrix`] (the matrix's cells).

use crate::accounting::selector;
use crate::accounting::{Accounting, DriverRow, Traffic};
use crate::config::ConfigError;
use crate::config::pubsub::PubsubConfig;
use crate::pubsub::Broker;
use crate::pubsub::engine::{self, Pacing};
use crate::pubsub::report::{PubSubReport, PubSubSettings};
use crate::transport::parse_url;
use crate::window::Window as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn bad(flag: &'static str, why: impl Into<String>) -> anyhow::Error {
    ConfigError::BadValue {
        flag,
        why: why.into(),
    }
    .into()
}

/// The broker the URL names, built by its transport (`crate::pubsub::broker`).
pub fn broker(args: &PubsubConfig) -> anyhow::Result<Arc<dyn Broker>> {
    let endpoint = parse_url(&args.qmgr)?;
    let options = crate::pubsub::BrokerOptions {
        plan: args.plan.clone(),
        ack: args.ack,
        select_by: args.select_by,
        persistent: args.persistent,
        declare: args.declare,
    };
    crate::pubsub::broker(&endpoint, &options).map_err(|u| bad(u.flag, u.why))
}

/// One run at `rate`, between two CPU snapshots.
pub fn measure(
    args: &PubsubConfig,
    broker: Arc<dyn Broker>,
    rate: Option<f64>,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<PubSubReport> {
    let plan = &args.plan;
    let transport = broker.transport();
    let groups = if args.groups.is_empty() {
        selector::parse_groups(broker.default_groups())?
    } else {
        selector::parse_groups(args.groups.iter().map(String::as_str))?
    };
    let mut acc = Accounting::new(groups, args.cpu_source, args.ratio)
        .counting_syncs(args.count_syncs)
        .with_hosts(&args.hosts)
        .map_err(crate::config::ConfigError::from)?;
    let mut own = (Duration::ZERO, Duration::ZERO);
    let pacing = Pacing {
        rate,
        ..args.pacing
    };
    let out = engine::run(broker.clone(), (plan, pacing), interrupt, &mut |open| {
        let cpu = crate::accounting::clock::self_process().unwrap_or_default();
        if open {
            own.0 = cpu;
            acc.start();
        } else {
            acc.end();
            own.1 = cpu;
        }
    })?;
    let me = DriverRow::oemputx(own.1.saturating_sub(own.0));
    let published: u64 = out.published.iter().map(|p| p.sent).sum();
    let delivered: u64 = out.delivered.iter().map(|d| d.received).sum();
    let table = |n: u64| {
        acc.table(Traffic {
            transactions: n.max(1),
            driver: Some(&me),
            concurrency: None,
            round_trip_us: out.elapsed.as_secs_f64() * 1e6 / n.max(1) as f64,
            rate_tps: n as f64 / out.elapsed.as_secs_f64().max(1e-9),
        })
    };
    let settings = PubSubSettings {
        broker: broker.describe(),
        transport,
        modes: broker.modes(),
        topic: plan.topic.clone(),
        publishers: plan.publishers,
        subscribers: plan.subscribers,
        symbols: plan.symbols,
        select: plan.select,
        count: plan.count,
        duration_s: plan.duration.map(|d| d.as_secs_f64()),
        msg_size: plan.msg_size,
        think_ms: pacing.think.as_secs_f64() * 1e3,
        rate_limit: rate,
        persistent: args.persistent,
        seed: plan.seed,
    };
    Ok(PubSubReport::build(
        settings,
        plan,
        &out,
        table(published).as_ref(),
        table(delivered).as_ref(),
    ))
}
