//! The options of a publish/subscribe run (`oemputx pubsub`, and each cell of `oemputx
//! matrix`), checked into a [`PubsubConfig`]: the plan of who sends and who must receive
//! what, the pacing, the accounting and where the report goes.

use super::formats::Exports;
use super::options::AccountingOptions;
use super::{ConfigError, bad, parse_ratio};
use crate::accounting::RatioMode;
use crate::accounting::pcp::PcpHost;
use crate::accounting::snapshot::CpuSource;
use crate::pubsub::engine::Pacing;
use crate::pubsub::plan::Plan;
use crate::pubsub::{Ack, SelectBy};
use std::path::PathBuf;
use std::time::Duration;

/// What a pub/sub run asks for. `Default` is the command line's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct PubsubOptions {
    /// The broker's URL: amqp://, nats:// or mqtt://.
    pub qmgr: String,
    pub topic: String,
    pub declare: bool,
    pub publishers: usize,
    pub subscribers: usize,
    pub symbols: u16,
    pub select: u16,
    pub seed: u64,
    pub count: u64,
    pub msg_size: usize,
    pub think: Duration,
    pub rate: Option<f64>,
    pub persistent: bool,
    pub ack: Ack,
    pub select_by: SelectBy,
    pub drain_timeout: Duration,
    pub accounting: AccountingOptions,
    /// The outputs asked for (pub/sub's formats; its rounds and capacity search: JSON).
    pub exports: Exports,
    pub no_save: bool,
    pub reports_dir: PathBuf,
    pub rounds: usize,
    pub compete: bool,
    pub find_capacity: bool,
    pub duration: Option<Duration>,
}

impl Default for PubsubOptions {
    fn default() -> Self {
        PubsubOptions {
            qmgr: String::new(),
            topic: "ticker".into(),
            declare: false,
            publishers: 1,
            subscribers: 10,
            symbols: 100,
            select: 25,
            seed: 1,
            count: 20_000,
            msg_size: 64,
            think: Duration::ZERO,
            rate: None,
            persistent: false,
            ack: Ack::None,
            select_by: SelectBy::Header,
            drain_timeout: Duration::from_secs(5),
            accounting: AccountingOptions::default(),
            exports: Exports::default(),
            no_save: false,
            reports_dir: PathBuf::from("reports"),
            rounds: 1,
            compete: false,
            find_capacity: false,
            duration: None,
        }
    }
}

/// A pub/sub run, checked.
#[derive(Debug, Clone)]
pub struct PubsubConfig {
    /// The broker's URL as given (a transport of its own parses it: pub/sub brokers are not
    /// put/get transports).
    pub qmgr: String,
    pub plan: Plan,
    pub pacing: Pacing,
    pub declare: bool,
    pub persistent: bool,
    pub ack: Ack,
    pub select_by: SelectBy,
    /// `NAME=SEL,...` as given; none means the broker's own default groups.
    pub groups: Vec<String>,
    pub hosts: Vec<PcpHost>,
    pub cpu_source: CpuSource,
    /// Count syncs per message (`--no-syncs`: off).
    pub count_syncs: bool,
    pub ratio: RatioMode,
    /// The outputs asked for (pub/sub's formats; its rounds and capacity search: JSON).
    pub exports: Exports,
    /// The reports folder, unless --no-save.
    pub save_dir: Option<PathBuf>,
    pub rounds: usize,
    pub find_capacity: bool,
}

/// The broker's URL: `--qmgr` as given when it is a URL, else the URL of the profile of that
/// name (a file's, or a built-in one): `pubsub --qmgr RABBIT` as a run takes it.
pub(crate) fn broker_url(qmgr: &str) -> Result<String, ConfigError> {
    if qmgr.is_empty() || qmgr.contains("://") {
        return Ok(qmgr.to_string());
    }
    match super::profile::find_profile(qmgr, &super::profile_paths(None), false) {
        Ok(p) if p.url.contains("://") => Ok(p.url),
        Ok(p) => Err(bad(
            "--qmgr",
            format!(
                "profile {qmgr} names {}, which has no publish/subscribe: pub/sub runs on RabbitMQ (amqp://), NATS (nats://) and MQTT (mqtt://); give one of those, or a profile naming one (oemputx profiles lists them)",
                crate::secret::scrub(&p.url)
            ),
        )),
        Err(ConfigError::UnknownProfile {
            searched, known, ..
        }) => Err(bad(
            "--qmgr",
            format!(
                "{qmgr} is neither a broker URL nor a profile (searched {searched}; known: {known}): give amqp://user:pass@host:5672/vhost, nats://host:4222 or mqtt://host:1883, or one of those profiles"
            ),
        )),
        Err(e) => Err(e),
    }
}

/// The most publishers and subscribers one run may have together.
pub const MAX_CLIENTS: usize = 1000;

impl PubsubOptions {
    /// Check the options, first one that makes no sense first.
    pub fn build(&self) -> Result<PubsubConfig, ConfigError> {
        self.check_shape()?;
        super::outputs::check(
            &self.exports.by_flag(),
            (!self.no_save).then_some(self.reports_dir.as_path()),
            &[],
        )?;
        if let Some(why) = crate::transport::subject::subject_problem(&self.topic) {
            return Err(bad("--topic", why));
        }
        // MQTT takes + and # as wildcards in a topic (a publish to one is refused, and the
        // run failed as a lost connection); RabbitMQ's topic bindings take # too.
        if self.topic.contains(['+', '#']) {
            return Err(bad(
                "--topic",
                format!(
                    "'{}' has a wildcard (+ or #): messages are published to one topic, and MQTT and RabbitMQ's topic bindings read these as wildcards; name it with letters, digits, '-' or '_'",
                    self.topic
                ),
            ));
        }
        let ratio = parse_ratio(&self.accounting.capture_ratio)?;
        let hosts = crate::accounting::pcp::parse_hosts(&self.accounting.hosts, None)?;
        // Checked now, not when the run is over.
        crate::accounting::selector::parse_groups(
            self.accounting.groups.iter().map(String::as_str),
        )?;
        Ok(PubsubConfig {
            qmgr: broker_url(&self.qmgr)?,
            plan: Plan {
                topic: self.topic.clone(),
                symbols: self.symbols,
                select: self.select,
                publishers: self.publishers,
                subscribers: self.subscribers,
                count: self.count,
                msg_size: self.msg_size,
                seed: self.seed,
                competing: self.compete,
                duration: self.duration,
            },
            pacing: Pacing {
                think: self.think,
                rate: self.rate,
                drain_timeout: self.drain_timeout,
            },
            declare: self.declare,
            persistent: self.persistent,
            ack: self.ack,
            select_by: self.select_by,
            groups: self.accounting.groups.clone(),
            hosts,
            cpu_source: self.accounting.cpu_source,
            count_syncs: self.accounting.count_syncs,
            ratio,
            exports: self.exports.clone(),
            save_dir: (!self.no_save).then(|| self.reports_dir.clone()),
            rounds: self.rounds,
            find_capacity: self.find_capacity,
        })
    }

    /// The run's shape: counts, blocks, rounds, pacing.
    fn check_shape(&self) -> Result<(), ConfigError> {
        if self.find_capacity && !self.think.is_zero() {
            return Err(bad(
                "--find-capacity",
                "it raises --rate step by step; leave --think out",
            ));
        }
        if self.duration.is_some() && self.find_capacity {
            return Err(bad(
                "--duration",
                "--find-capacity sizes its steps with --count",
            ));
        }
        if self.publishers == 0 || self.subscribers == 0 {
            return Err(bad("--publishers/--subscribers", "at least one of each"));
        }
        // Each is a thread and a connection of this process: past a few hundred the
        // driver measures itself, and past the machine's thread limit nothing runs.
        if self.publishers + self.subscribers > MAX_CLIENTS {
            return Err(bad(
                "--publishers/--subscribers",
                format!(
                    "at most {MAX_CLIENTS} together ({} given): each is a thread and a broker connection of this one process; drive more from several hosts",
                    self.publishers + self.subscribers
                ),
            ));
        }
        if self.symbols == 0 || self.select == 0 || self.select > self.symbols {
            return Err(bad(
                "--select",
                format!(
                    "a block of 1 to --symbols ({}) symbols; {} given",
                    self.symbols, self.select
                ),
            ));
        }
        if self.count == 0 {
            return Err(bad("--count", "at least 1"));
        }
        if self.rounds == 0 || (self.rounds > 1 && self.find_capacity) {
            return Err(bad(
                "--rounds",
                "at least 1, and not with --find-capacity (its steps are its rounds)",
            ));
        }
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(bad("--rate", "a positive number of messages a second"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_name_gives_its_broker_url_and_an_unknown_name_says_what_it_takes() {
        assert_eq!(
            broker_url("NATS").expect("built in"),
            "nats://127.0.0.1:4222"
        );
        assert_eq!(broker_url("mqtt://h:1883").expect("url"), "mqtt://h:1883");
        let e = broker_url("EMBEDDED").expect_err("no pub/sub").to_string();
        assert!(
            e.contains("no publish/subscribe") && e.contains("mqtt://"),
            "{e}"
        );
        let e = broker_url("NO_SUCH").expect_err("unknown").to_string();
        assert!(e.contains("neither a broker URL nor a profile"), "{e}");
        assert!(!e.contains("embedded:"), "{e}");
    }

    #[test]
    fn the_defaults_make_a_plan_and_nonsense_names_its_flag() {
        let ok = PubsubOptions {
            qmgr: "nats://127.0.0.1:4222".into(),
            ..PubsubOptions::default()
        }
        .build()
        .expect("defaults are valid");
        assert_eq!(
            (ok.plan.symbols, ok.plan.select, ok.plan.count),
            (100, 25, 20_000)
        );
        for (o, flag) in [
            (
                PubsubOptions {
                    select: 101,
                    ..Default::default()
                },
                "--select",
            ),
            (
                PubsubOptions {
                    subscribers: 0,
                    ..Default::default()
                },
                "--publishers/--subscribers",
            ),
            (
                PubsubOptions {
                    subscribers: 100_000,
                    ..Default::default()
                },
                "--publishers/--subscribers",
            ),
            (
                PubsubOptions {
                    rate: Some(-1.0),
                    ..Default::default()
                },
                "--rate",
            ),
            (
                PubsubOptions {
                    topic: "a b".into(),
                    ..Default::default()
                },
                "--topic",
            ),
            (
                PubsubOptions {
                    topic: "tick/+".into(),
                    ..Default::default()
                },
                "--topic",
            ),
            (
                PubsubOptions {
                    topic: "tick#".into(),
                    ..Default::default()
                },
                "--topic",
            ),
            (
                PubsubOptions {
                    find_capacity: true,
                    rounds: 2,
                    ..Default::default()
                },
                "--rounds",
            ),
        ] {
            match o.build() {
                Err(ConfigError::BadValue { flag: f, .. }) => assert_eq!(f, flag),
                other => panic!("{flag}: {other:?}"),
            }
        }
    }
}
