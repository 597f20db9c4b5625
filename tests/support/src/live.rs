//! Tests in layers: a live test (one that needs a real broker, database or tool) starts with
//! [`live!`](crate::live), naming what it needs. On a machine without it the test is
//! skipped and says so by name on the terminal (written past the test harness's capture,
//! so that `cargo test` shows every skip); under `CI=true` or `OEMPUTX_LIVE=require` (the
//! test command sets it) a missing service fails the test instead — never a silent pass.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::Duration;

/// What a live test can need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// RabbitMQ on $OEMPUTX_TEST_AMQP (127.0.0.1:5672).
    RabbitMq,
    /// RabbitMQ's AMQP 1.0 plugin on the same port.
    Amqp10,
    /// PostgreSQL on $OEMPUTX_TEST_PG (127.0.0.1:5432).
    PostgreSql,
    /// NATS with JetStream on 127.0.0.1:4222.
    Nats,
    /// The nats-server and openssl programs (tests start servers of their own).
    NatsServer,
    /// Mosquitto on 127.0.0.1:1883.
    Mosquitto,
    /// Performance Co-Pilot's pmproxy on 127.0.0.1:44322, with the tests' user.
    Pcp,
    /// valgrind, for the instruction gate.
    Valgrind,
    /// Python's prometheus_client, whose OpenMetrics parser checks oemputx's output.
    PromParser,
    /// Debian's Chromium, headless, for the HTML reports.
    Chromium,
    /// ActiveMQ Classic's STOMP connector on 127.0.0.1:61613.
    ActiveMq,
    /// Python's stomp.py, another STOMP client beside oemputx's own codec.
    StompPy,
    /// kubernetes-validate (PyPI): Kubernetes' own schemas, offline, for the docs' manifest.
    KubernetesValidate,
    /// The two-node Slurm lab of ci/slurm-lab.sh: its bridge up and both nodes idle.
    SlurmLab,
    /// Linux perf, allowed to sample every CPU (root, or perf_event_paranoid ≤ 0).
    Perf,
    /// gcc and librabbitmq's headers, to build the C hold-out responder.
    CAmqp,
    /// tracefs mounted with the syscall tracepoints, for syncs per message.
    Tracefs,
    /// A Kafka-protocol broker on $OEMPUTX_TEST_KAFKA (127.0.0.1:19092: ci/services.sh
    /// starts tansu there).
    Kafka,
    /// The tansu broker program (tests start brokers of their own), and python3 with
    /// confluent-kafka beside it (the hold-out responder): ci/services.sh installs both.
    Tansu,
}

impl Service {
    fn describe(self) -> &'static str {
        match self {
            Service::RabbitMq => "RabbitMQ on 127.0.0.1:5672 (or $OEMPUTX_TEST_AMQP)",
            Service::Amqp10 => {
                "RabbitMQ's AMQP 1.0 plugin (rabbitmq-plugins enable rabbitmq_amqp1_0)"
            }
            Service::PostgreSql => "PostgreSQL on 127.0.0.1:5432 (or $OEMPUTX_TEST_PG)",
            Service::Nats => "NATS with JetStream on 127.0.0.1:4222",
            Service::NatsServer => "the nats-server and openssl programs",
            Service::Mosquitto => "Mosquitto (MQTT) on 127.0.0.1:1883",
            Service::Pcp => "Performance Co-Pilot's pmproxy on 127.0.0.1:44322",
            Service::Valgrind => "valgrind",
            Service::PromParser => "python3 with prometheus_client (pip install prometheus_client)",
            Service::Chromium => "Debian's chromium (apt-get install chromium)",
            Service::ActiveMq => "ActiveMQ's STOMP connector on 127.0.0.1:61613",
            Service::StompPy => "python3 with stomp.py (pip install stomp.py)",
            Service::KubernetesValidate => "kubernetes-validate (pip install kubernetes-validate)",
            Service::SlurmLab => "the two-node Slurm lab (as root: bash ci/slurm-lab.sh up)",
            Service::Perf => "Linux perf, as root (apt-get install linux-perf)",
            Service::CAmqp => "gcc and librabbitmq's headers (apt-get install gcc librabbitmq-dev)",
            Service::Tracefs => {
                "tracefs with the syscall tracepoints, as root (mount -t tracefs nodev /sys/kernel/tracing)"
            }
            Service::Kafka => {
                "a Kafka broker on 127.0.0.1:19092 or $OEMPUTX_TEST_KAFKA (bash ci/services.sh starts tansu)"
            }
            Service::Tansu => {
                "the tansu program and confluent-kafka in /opt/oemputx-kafka (bash ci/services.sh)"
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn probe(self) -> bool {
        match self {
            Service::RabbitMq => listening(&address("OEMPUTX_TEST_AMQP", "127.0.0.1:5672")),
            Service::Amqp10 => speaks_amqp10(&address("OEMPUTX_TEST_AMQP", "127.0.0.1:5672")),
            Service::PostgreSql => listening(&address("OEMPUTX_TEST_PG", "127.0.0.1:5432")),
            Service::Nats => listening("127.0.0.1:4222"),
            Service::NatsServer => runs("nats-server", "--version") && runs("openssl", "version"),
            Service::Mosquitto => listening("127.0.0.1:1883"),
            Service::Pcp => listening("127.0.0.1:44322"),
            Service::Valgrind => runs("valgrind", "--version"),
            Service::PromParser => runs_args("python3", &["-c", "import prometheus_client"]),
            Service::Chromium => runs("chromium", "--version"),
            Service::ActiveMq => listening("127.0.0.1:61613"),
            Service::StompPy => runs_args("python3", &["-c", "import stomp"]),
            Service::KubernetesValidate => runs("kubernetes-validate", "--version"),
            Service::SlurmLab => slurm_lab().is_some(),
            Service::Perf => {
                // Trying is the one test: root in a container may still lack CAP_PERFMON.
                let out =
                    std::env::temp_dir().join(format!("oemputx-perf-probe-{}", std::process::id()));
                let out_s = out.to_string_lossy().into_owned();
                let ok = runs_args(
                    "perf",
                    &[
                        "record",
                        "-a",
                        "-e",
                        "cpu-clock",
                        "-q",
                        "-B",
                        "-o",
                        &out_s,
                        "--",
                        "true",
                    ],
                );
                let _ = std::fs::remove_file(&out);
                ok
            }
            Service::CAmqp => {
                runs("gcc", "--version") && std::path::Path::new("/usr/include/amqp.h").exists()
            }
            Service::Tracefs => ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
                .iter()
                .any(|r| {
                    std::path::Path::new(r)
                        .join("events/syscalls/sys_enter_fsync/id")
                        .exists()
                }),
            Service::Kafka => listening(&crate::kafka::address()),
            Service::Tansu => {
                runs("tansu", "--version")
                    && runs_args(crate::kafka::PYTHON, &["-c", "import confluent_kafka"])
            }
        }
    }

    /// Whether it is there, probed once per test process.
    pub fn available(self) -> bool {
        static SEEN: [OnceLock<bool>; 19] = [const { OnceLock::new() }; 19];
        *SEEN[self.index()].get_or_init(|| self.probe_patiently())
    }

    /// The answer is kept for the whole test binary, so it is not taken from one try: on a
    /// loaded host (the test command's builds beside four test threads) RabbitMQ once took
    /// longer than the probe's second to answer AMQP 1.0's header, and every AMQP 1.0 test
    /// of that run failed as if the plugin were missing.
    fn probe_patiently(self) -> bool {
        for attempt in 0..3 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_secs(1));
            }
            if self.probe() {
                return true;
            }
        }
        false
    }
}

/// The Slurm lab's settings (`SLURM_CONF`, `OEMPUTX_LAB_AMQP`, …) from the file
/// ci/slurm-lab.sh writes, when its bridge is up and both its nodes answer. The bridge is
/// checked first: a lab address is never called without it (the route would lead out).
pub fn slurm_lab() -> Option<Vec<(String, String)>> {
    let dir =
        std::env::var("OEMPUTX_LAB_DIR").unwrap_or_else(|_| "/var/tmp/oemputx-slurm-lab".into());
    let state = std::fs::read_to_string("/sys/class/net/oemx-sbr/operstate").ok()?;
    if state.trim() != "up" {
        return None;
    }
    let vars: Vec<(String, String)> = std::fs::read_to_string(format!("{dir}/env"))
        .ok()?
        .lines()
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let conf = vars.iter().find(|(k, _)| k == "SLURM_CONF")?.1.clone();
    let out = std::process::Command::new("sinfo")
        .args(["-h", "-N", "-o", "%t"])
        .env("SLURM_CONF", conf)
        .output()
        .ok()?;
    let up = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| ["idle", "mix", "alloc"].contains(&l.trim()))
        .count();
    (up == 2).then_some(vars)
}

/// Whether a missing service must fail its tests rather than skip them.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("OEMPUTX_LIVE").is_ok_and(|v| v == "require")
}

/// Whether the running test can go on: every one of `needs` is there. A missing one skips
/// the test with a line naming it and what it needs, or fails it when services are
/// [`required`].
pub fn can_run(needs: &[Service]) -> bool {
    let test = std::thread::current()
        .name()
        .unwrap_or("a live test")
        .to_string();
    can_run_named(&test, needs)
}

/// [`can_run`] for `what` (a benchmark's smoke run, whose thread has no test's name).
pub fn can_run_named(what: &str, needs: &[Service]) -> bool {
    let test = what;
    let missing: Vec<&str> = needs
        .iter()
        .filter(|s| !s.available())
        .map(|s| s.describe())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let what = missing.join(" and ");
    assert!(
        !required(),
        "{test} needs {what}, which is not there (bash ci/services.sh installs and starts it; CI=true or OEMPUTX_LIVE=require makes this a failure, not a skip)"
    );
    // Past the harness's capture: every skip shows in `cargo test`'s output.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: needs {what} (bash ci/services.sh starts it)"
    );
    false
}

/// Start a live test: `live!(RabbitMq, PostgreSql);` returns from the test (skipping it)
/// when a service it needs is missing, or fails it under CI.
#[macro_export]
macro_rules! live {
    ($($s:ident),+ $(,)?) => {
        if !$crate::live::can_run(&[$($crate::live::Service::$s),+]) {
            return;
        }
    };
}

/// host:port of a URL in `var`, else `default`.
fn address(var: &str, default: &str) -> String {
    let url = std::env::var(var).unwrap_or_default();
    let authority = url
        .split_once("://")
        .map_or("", |(_, rest)| rest)
        .split(['/', '?'])
        .next()
        .unwrap_or("")
        .rsplit('@')
        .next()
        .unwrap_or("");
    if authority.contains(':') {
        authority.to_string()
    } else {
        default.to_string()
    }
}

fn connect(addr: &str) -> Option<TcpStream> {
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs().ok()?.collect();
    addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).ok())
}

fn listening(addr: &str) -> bool {
    connect(addr).is_some()
}

/// Whether the broker at `addr` answers an AMQP 1.0 SASL header with its own (RabbitMQ's
/// plugin does; without it RabbitMQ answers with its 0-9-1 header).
fn speaks_amqp10(addr: &str) -> bool {
    let Some(mut s) = connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut answer = [0u8; 8];
    s.write_all(b"AMQP\x03\x01\x00\x00").is_ok()
        && s.read_exact(&mut answer).is_ok()
        && &answer == b"AMQP\x03\x01\x00\x00"
}

fn runs(program: &str, arg: &str) -> bool {
    runs_args(program, &[arg])
}

fn runs_args(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
