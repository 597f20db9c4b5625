//! The Kafka side of the tests: the shared broker's address (tansu, started by
//! ci/services.sh), topics made and deleted, a responder whose misbehaviour a test chooses,
//! and brokers of a test's own that it may kill.

use rskafka::client::partition::{Compression, OffsetAt, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::Record;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The python with confluent-kafka that ci/services.sh installs (the hold-out responder's).
pub const PYTHON: &str = "/opt/oemputx-kafka/bin/python";

/// The shared broker: $OEMPUTX_TEST_KAFKA (host:port), else tansu's port here.
pub fn address() -> String {
    std::env::var("OEMPUTX_TEST_KAFKA").unwrap_or_else(|_| "127.0.0.1:19092".into())
}

/// The shared broker's URL.
pub fn kafka_url() -> String {
    format!("kafka://{}", address())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn client(address: &str) -> Client {
    // A deadline on the client's retries: a broker a test killed must not hold a
    // responder's thread (and the test dropping it) for ever.
    ClientBuilder::new(vec![address.to_string()])
        .backoff_config(rskafka::BackoffConfig {
            deadline: Some(Duration::from_secs(3)),
            ..Default::default()
        })
        .build()
        .await
        .expect("the Kafka broker answers")
}

/// The topics on the broker at `address`.
pub fn topics_at(address: &str) -> Vec<String> {
    runtime().block_on(async {
        client(address)
            .await
            .list_topics()
            .await
            .expect("topics")
            .into_iter()
            .map(|t| t.name)
            .collect()
    })
}

/// Make `topic` on the shared broker with `partitions` partitions.
pub fn create_topic(topic: &str, partitions: i32) {
    runtime().block_on(async {
        let c = client(&address()).await;
        c.controller_client()
            .expect("controller")
            .create_topic(topic, partitions, 1, 5_000)
            .await
            .expect("topic made");
    })
}

/// A topic of the test's own on the shared broker, deleted when dropped (if it is there).
pub struct TopicGuard(pub String);

impl Drop for TopicGuard {
    fn drop(&mut self) {
        let name = self.0.clone();
        runtime().block_on(async {
            let c = client(&address()).await;
            if let Ok(controller) = c.controller_client() {
                let _ = controller.delete_topic(&name, 5_000).await;
            }
        });
    }
}

/// How a [`KafkaResponder`] answers.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// Every request at once, by the convention.
    Echo,
    /// Every `n`th request with a correlation id of its own making (a reply to nothing).
    WrongIdEvery(u64),
    /// Each request after this delay.
    After(Duration),
}

/// A responder on a thread of its own, by Spring Kafka's convention, reading partition 0 of
/// its topic from its end; stopped when dropped.
pub struct KafkaResponder {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KafkaResponder {
    pub fn start(topic: &str, how: Answer) -> KafkaResponder {
        KafkaResponder::start_at(&address(), topic, how)
    }

    /// [`KafkaResponder::start`] on the broker at `address`.
    pub fn start_at(address: &str, topic: &str, how: Answer) -> KafkaResponder {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (at, topic, stopped) = (address.to_string(), topic.to_string(), stop.clone());
        let thread = std::thread::spawn(move || {
            runtime().block_on(serve(&at, &topic, how, &stopped, ready_tx));
        });
        ready_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the responder reads its topic");
        KafkaResponder {
            stop,
            thread: Some(thread),
        }
    }
}

async fn serve(
    address: &str,
    topic: &str,
    how: Answer,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) {
    let c = client(address).await;
    let input = c
        .partition_client(topic, 0, UnknownTopicHandling::Retry)
        .await
        .expect("the request partition");
    let mut offset = input.get_offset(OffsetAt::Latest).await.expect("its end");
    let _ = ready.send(());
    let mut seen = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Ok((records, _)) = input.fetch_records(offset, 1..1 << 20, 5).await else {
            // The broker went away (a test killed it): look again, not in a busy loop.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        for r in records {
            offset = r.offset + 1;
            seen += 1;
            let h = &r.record.headers;
            let (Some(to), Some(p)) = (h.get("kafka_replyTopic"), h.get("kafka_replyPartition"))
            else {
                continue;
            };
            let mut correl = h.get("kafka_correlationId").cloned().unwrap_or_default();
            match how {
                Answer::WrongIdEvery(n) if seen.is_multiple_of(n) => correl = b"nobody's".to_vec(),
                Answer::After(d) => tokio::time::sleep(d).await,
                _ => {}
            }
            let partition = i32::from_be_bytes(p.as_slice().try_into().unwrap_or([0; 4]));
            let Ok(out) = c
                .partition_client(
                    String::from_utf8_lossy(to).into_owned(),
                    partition,
                    UnknownTopicHandling::Error,
                )
                .await
            else {
                continue;
            };
            let reply = Record {
                key: None,
                value: r.record.value.clone(),
                headers: BTreeMap::from([("kafka_correlationId".to_string(), correl)]),
                timestamp: chrono::Utc::now(),
            };
            let _ = out.produce(vec![reply], Compression::NoCompression).await;
        }
    }
}

impl Drop for KafkaResponder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A tansu broker of the test's own on a free port of 127.0.0.1 (memory storage), killed
/// when dropped or by [`OwnBroker::kill`].
pub struct OwnBroker {
    pub port: u16,
    child: std::process::Child,
}

impl OwnBroker {
    pub fn start() -> OwnBroker {
        OwnBroker::start_at(free_port(), None)
    }

    /// A broker listening on `port` that tells its clients to come back through
    /// `advertised` (`host:port`: a TLS proxy in front of it) when given.
    pub fn start_at(port: u16, advertised: Option<&str>) -> OwnBroker {
        let url = format!("tcp://127.0.0.1:{port}");
        let advertised = match advertised {
            Some(a) => format!("tcp://{a}"),
            None => url.clone(),
        };
        let child = std::process::Command::new("tansu")
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &advertised,
            ])
            .args(["--storage-engine", "memory://tansu/"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("tansu starts");
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < until, "tansu never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        OwnBroker { port, child }
    }

    /// The broker's address.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILL: the broker goes away at once, its connections with it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        self.kill();
    }
}
