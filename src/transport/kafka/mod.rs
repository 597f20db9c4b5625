//! Kafka through rskafka, a pure-Rust client of the Kafka protocol (InfluxData's).
//!
//! Request/reply follows Spring Kafka's convention (`ReplyingKafkaTemplate` with a
//! `@KafkaListener` + `@SendTo` flow), so such a flow answers oemputx unchanged: each request
//! carries the headers `kafka_replyTopic` (the reply topic), `kafka_replyPartition` (a 4-byte
//! big-endian int: the partition this task reads) and `kafka_correlationId` (bytes); the flow
//! produces its reply to that topic and partition with `kafka_correlationId` copied.
//!
//! Partitions are assigned, never joined through a consumer group: a group's join and
//! rebalance take seconds on some brokers and would sit inside the measured window. Task `t`
//! produces to partition `t mod P` of the request topic and reads partition `t` of the reply
//! topic, from the offset the reply partition had when the task started. The reply topic is
//! the run's own (`oemputx.reply.PID.NANOS`, one partition per task, deleted at the end)
//! unless `--reply-queue` names one, which must have a partition per task.
//!
//! `--persistent` produces each request with `acks=all` (the leader answers once every
//! in-sync replica has it: rskafka's partition client); a run without it with `acks=1` (the
//! leader answers once it has written the request itself: [`acks1`]). The report says which
//! (`settings.persistent_store`).
//!
//! Each session is one client (its own connection) on a current-thread runtime on the task's
//! thread: a put is queued and produced by the next get, which then fetches the reply, so
//! one entry into the runtime sends the request and waits for its reply.

pub mod acks1;
pub mod describe;
pub mod url;

use super::client_runtime;
use super::endpoint::{EndpointKind, OptionRefused, refuse_mq_calls};
use super::{
    AsyncSession, Prepared, QueueSetup, Reply, ReplyQueue, SessionFuture, TaskSession, Transport,
    TransportError,
};
use rskafka::client::partition::{Compression, OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder, SaslConfig};
use rskafka::record::Record;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::runtime::Runtime;
use url::{KafkaEndpoint, Mechanism};

/// The header naming the topic a reply goes to (Spring Kafka's `KafkaHeaders.REPLY_TOPIC`).
pub const REPLY_TOPIC: &str = "kafka_replyTopic";
/// The header naming the reply partition, a 4-byte big-endian int
/// (`KafkaHeaders.REPLY_PARTITION`).
pub const REPLY_PARTITION: &str = "kafka_replyPartition";
/// The header a reply copies from its request (`KafkaHeaders.CORRELATION_ID`).
pub const CORRELATION_ID: &str = "kafka_correlationId";

/// How long reaching the brokers may take before they count as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most a fetch asks for: replies are small, and a broker answers with what it has.
const FETCH_BYTES: i32 = 4 << 20;
/// Kafka's default `message.max.bytes` (1 MB and a little); the broker may allow more.
pub const DEFAULT_MAX_MESSAGE: usize = 1_048_588;

/// The Kafka transport: the brokers, the run's topics and the reply topic it made.
pub struct Kafka {
    endpoint: KafkaEndpoint,
    setup: QueueSetup,
    /// The reply topic: the named one, or the run's own (made in prepare, deleted on drop).
    reply_topic: String,
    /// Partitions of the request topic, learnt in prepare.
    request_partitions: Mutex<i32>,
    /// Topics this run created, deleted when the transport is dropped.
    made: Mutex<Vec<String>>,
}

impl Kafka {
    pub fn new(endpoint: KafkaEndpoint, setup: QueueSetup) -> Kafka {
        let reply_topic = match &setup.reply_queue {
            ReplyQueue::Named(name) => name.clone(),
            _ => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0);
                format!("oemputx.reply.{}.{nanos}", std::process::id())
            }
        };
        Kafka {
            endpoint,
            setup,
            reply_topic,
            request_partitions: Mutex::new(1),
            made: Mutex::new(Vec::new()),
        }
    }

    fn target(&self) -> String {
        self.endpoint.redacted()
    }

    fn tasks(&self) -> i32 {
        i32::try_from(self.setup.tasks).unwrap_or(i32::MAX)
    }
}

/// A client of the endpoint's brokers, named `name` (Kafka's `client.id`): bounded by
/// [`CONNECT_TIMEOUT`] and ended at once by a signal. Shared with sample-flow, so that a
/// flow connects as the driver does.
pub async fn connect(ep: &KafkaEndpoint, name: &str) -> Result<Client, TransportError> {
    let target = ep.redacted();
    let mut builder = ClientBuilder::new(ep.bootstrap())
        .client_id(name)
        .backoff_config(rskafka::BackoffConfig {
            deadline: Some(CONNECT_TIMEOUT),
            ..Default::default()
        });
    if let Some(s) = &ep.sasl {
        builder = builder.sasl_config(sasl_config(s));
    }
    if let Some(tls) = &ep.tls {
        let (config, _) =
            super::tls::client_config(tls).map_err(|why| TransportError::Unreachable {
                target: target.clone(),
                why: format!("TLS settings: {why}"),
            })?;
        builder = builder.tls_config(config);
    }
    let built = super::handshake(&target, CONNECT_TIMEOUT, builder.build(), || {
        TransportError::Unreachable {
            target: target.clone(),
            why: format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
        }
    })
    .await?;
    built.map_err(|e| refused(&target, ep, &e))
}

/// The client's SASL settings for the URL's user, password and mechanism: the client's and
/// the acks=1 producer's connections log in alike.
pub(super) fn sasl_config(s: &url::Sasl) -> SaslConfig {
    let credentials =
        rskafka::client::Credentials::new(s.user.clone(), s.password.expose().to_string());
    match s.mechanism {
        Mechanism::Plain => SaslConfig::Plain(credentials),
        Mechanism::ScramSha256 => SaslConfig::ScramSha256(credentials),
        Mechanism::ScramSha512 => SaslConfig::ScramSha512(credentials),
    }
}

/// What a failed connect means: a refused login, or brokers out of reach.
fn refused(target: &str, ep: &KafkaEndpoint, e: &rskafka::client::error::Error) -> TransportError {
    let why = crate::secret::scrub(&e.to_string());
    let err = match &ep.sasl {
        Some(s)
            if why.contains("SASL") || why.contains("Sasl") || why.contains("authentication") =>
        {
            TransportError::AuthRefused {
                target: target.to_string(),
                user: s.user.clone(),
            }
        }
        // A refused handshake is no silent broker: say what would make it trusted.
        _ if ep.tls.is_some() && why.contains("certificate") => TransportError::Unreachable {
            target: target.to_string(),
            why: format!(
                "{why}: the broker's TLS certificate is not trusted here; give its CA with ?cacertfile=PATH (or the name it carries with ?server_name_indication=NAME)"
            ),
        },
        _ => TransportError::Unreachable {
            target: target.to_string(),
            why: format!("{why} (no answer within {} s)", CONNECT_TIMEOUT.as_secs()),
        },
    };
    err.caused_by(e)
}

/// The partitions of `topic`, or `None` when the cluster has no such topic.
pub async fn partitions(
    client: &Client,
    topic: &str,
    target: &str,
) -> Result<Option<i32>, TransportError> {
    let topics = client
        .list_topics()
        .await
        .map_err(|e| TransportError::broker(target, "listing the topics", e))?;
    Ok(topics
        .into_iter()
        .find(|t| t.name == topic)
        .map(|t| i32::try_from(t.partitions.len()).unwrap_or(i32::MAX)))
}

/// Create `topic` with `partitions` partitions and one replica.
pub async fn create_topic(
    client: &Client,
    topic: &str,
    partitions: i32,
    target: &str,
) -> Result<(), TransportError> {
    let controller = client
        .controller_client()
        .map_err(|e| TransportError::broker(target, "finding the controller", e))?;
    controller
        .create_topic(topic, partitions, 1, 5_000)
        .await
        .map_err(|e| TransportError::broker(target, &format!("creating topic '{topic}'"), e))
}

/// Delete `topic` (a topic this run made).
pub async fn delete_topic(
    client: &Client,
    topic: &str,
    target: &str,
) -> Result<(), TransportError> {
    let controller = client
        .controller_client()
        .map_err(|e| TransportError::broker(target, "finding the controller", e))?;
    controller
        .delete_topic(topic, 5_000)
        .await
        .map_err(|e| TransportError::broker(target, &format!("deleting topic '{topic}'"), e))
}

impl Kafka {
    /// The request topic: there (or made, with --declare, with a partition per task).
    async fn prepare_requests(&self, client: &Client, target: &str) -> Result<(), TransportError> {
        let topic = &self.setup.request_queue;
        let have = match partitions(client, topic, target).await? {
            Some(n) => n,
            None if self.setup.declare => {
                create_topic(client, topic, self.tasks(), target).await?;
                self.tasks()
            }
            None => {
                return Err(TransportError::MissingQueue {
                    queue: topic.clone(),
                    target: target.to_string(),
                });
            }
        };
        if let Ok(mut p) = self.request_partitions.lock() {
            *p = have.max(1);
        }
        Ok(())
    }

    /// The reply topic: the run's own, made with a partition per task; or the named one,
    /// which must have one per task (each task reads its own).
    async fn prepare_replies(&self, client: &Client, target: &str) -> Result<(), TransportError> {
        let topic = &self.reply_topic;
        match partitions(client, topic, target).await? {
            Some(n) if n >= self.tasks() => Ok(()),
            Some(n) => Err(TransportError::Broker {
                what: format!("checking reply topic '{topic}'"),
                target: target.to_string(),
                why: format!(
                    "it has {n} partition(s) and each of the {} tasks reads one of its own: give a topic with at least {} partitions, or leave --reply-queue out (oemputx then makes one for the run)",
                    self.tasks(),
                    self.tasks()
                ),
            }),
            None => {
                create_topic(client, topic, self.tasks(), target).await?;
                if let Ok(mut made) = self.made.lock() {
                    made.push(topic.clone());
                }
                Ok(())
            }
        }
    }
}

/// Where the requests go and what the leader's answer to each meant.
fn store(setup: &QueueSetup) -> String {
    let acks = if setup.persistent {
        "acks=all: the leader answered once every in-sync replica had each request"
    } else {
        "acks=1: the leader answered once it had written each request itself, before its followers copied it (--persistent for acks=all)"
    };
    format!("topic {}, {acks}", setup.request_queue)
}

impl Transport for Kafka {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        let target = self.target();
        client_runtime(&target, "Kafka")?.block_on(async {
            let client = connect(&self.endpoint, "oemputx-setup").await?;
            self.prepare_requests(&client, &target).await?;
            self.prepare_replies(&client, &target).await?;
            let broker = Some(describe::describe(&self.endpoint).await);
            Ok(Prepared {
                cleared: 0,
                broker,
                store: Some(store(&self.setup)),
            })
        })
    }

    fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
        let target = self.target();
        let rt = Arc::new(client_runtime(&target, "Kafka")?);
        let task_i = i32::try_from(task).unwrap_or(i32::MAX);
        let request_partitions = self.request_partitions.lock().map(|p| *p).unwrap_or(1);
        let (requests, replies, offset) = rt.block_on(async {
            let client = connect(&self.endpoint, &format!("oemputx-task-{task}")).await?;
            let open = |topic: String, partition: i32| {
                let client = &client;
                let target = &target;
                async move {
                    client
                        .partition_client(topic.clone(), partition, UnknownTopicHandling::Error)
                        .await
                        .map_err(|e| {
                            TransportError::broker(
                                target,
                                &format!("opening partition {partition} of topic '{topic}'"),
                                e,
                            )
                        })
                }
            };
            let partition = task_i % request_partitions.max(1);
            let requests = if self.setup.persistent {
                Producer::All(open(self.setup.request_queue.clone(), partition).await?)
            } else {
                let name = format!("oemputx-task-{task}-acks1");
                let leader = acks1::LeaderProducer::open(
                    &self.endpoint,
                    &self.setup.request_queue,
                    partition,
                    &name,
                );
                // A signal ends the wait at once; each broker has its own share of it.
                let leader = super::handshake(&target, 2 * CONNECT_TIMEOUT, leader, || {
                    TransportError::Unreachable {
                        target: target.clone(),
                        why: format!(
                            "the request partition's leader did not answer within {} s",
                            2 * CONNECT_TIMEOUT.as_secs()
                        ),
                    }
                });
                Producer::Leader(leader.await??)
            };
            let replies = open(self.reply_topic.clone(), task_i).await?;
            // Replies from here on: what the partition held before is another run's.
            let offset = replies.get_offset(OffsetAt::Latest).await.map_err(|e| {
                TransportError::broker(&target, "reading the reply partition's end", e)
            })?;
            Ok::<_, TransportError>((requests, replies, offset))
        })?;
        let mut headers = BTreeMap::new();
        headers.insert(
            REPLY_TOPIC.to_string(),
            self.reply_topic.as_bytes().to_vec(),
        );
        headers.insert(REPLY_PARTITION.to_string(), task_i.to_be_bytes().to_vec());
        Ok(TaskSession::Async(Box::new(KafkaSession {
            rt,
            requests,
            replies,
            offset,
            fetch_wait_ms: i32::try_from(self.endpoint.fetch_wait_ms).unwrap_or(i32::MAX),
            bound: self.setup.wait.min(Duration::from_secs(60)) + CONNECT_TIMEOUT,
            headers,
            target,
            unsent: Vec::new(),
            fetched: VecDeque::new(),
        })))
    }

    fn max_message_size(&self) -> usize {
        DEFAULT_MAX_MESSAGE
    }
}

impl Drop for Kafka {
    /// The topics the run made go with it, also after an error or a signal.
    fn drop(&mut self) {
        let made = self.made.lock().map(|m| m.clone()).unwrap_or_default();
        if made.is_empty() {
            return;
        }
        let target = self.target();
        let deleted = crate::signals::finishing(|| {
            client_runtime(&target, "Kafka")?.block_on(async {
                let client = connect(&self.endpoint, "oemputx-cleanup").await?;
                for topic in &made {
                    delete_topic(&client, topic, &target).await?;
                }
                Ok::<(), TransportError>(())
            })
        });
        if let Err(e) = deleted {
            crate::say!("Warning: could not delete the reply topic oemputx made: {e}");
        }
    }
}

/// What produces a task's requests: rskafka's partition client (`acks=all`), or a
/// connection of our own to the partition's leader (`acks=1`).
enum Producer {
    All(PartitionClient),
    Leader(acks1::LeaderProducer),
}

/// One task's client: the request partition it produces to and the reply partition it reads.
pub struct KafkaSession {
    rt: Arc<Runtime>,
    requests: Producer,
    replies: PartitionClient,
    /// The next reply offset to fetch.
    offset: i64,
    /// How long a fetch waits at the broker, in ms.
    fetch_wait_ms: i32,
    /// The longest one produce or fetch may take, retries included: the run's wait and the
    /// connect bound.
    bound: Duration,
    /// The reply headers every request carries; the correlation id is added per request.
    headers: BTreeMap<String, Vec<u8>>,
    target: String,
    /// Requests `put` left to produce in the next get.
    unsent: Vec<Record>,
    /// Replies fetched and not yet handed out.
    fetched: VecDeque<Reply>,
}

impl KafkaSession {
    fn lost(&self, what: &str, e: &dyn std::fmt::Display) -> TransportError {
        TransportError::ConnectionLost {
            target: self.target.clone(),
            why: format!("{what}: {}", crate::secret::scrub(&e.to_string())),
        }
    }

    /// The broker did not answer one request within [`KafkaSession::bound`]: the client
    /// retries a broker that went away with a backoff of its own, for far longer than a run
    /// may wait.
    fn silent(&self, what: &str) -> TransportError {
        TransportError::ConnectionLost {
            target: self.target.clone(),
            why: format!(
                "{what}: no answer within {:.1} s (the run's --wait and the {} s a broker has to answer)",
                self.bound.as_secs_f64(),
                CONNECT_TIMEOUT.as_secs()
            ),
        }
    }

    async fn send_all(&mut self) -> Result<(), TransportError> {
        if self.unsent.is_empty() {
            return Ok(());
        }
        let records = std::mem::take(&mut self.unsent);
        let produced = async {
            match &self.requests {
                Producer::All(p) => p
                    .produce(records, Compression::NoCompression)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Producer::Leader(p) => p.produce(records).await,
            }
        };
        // A signal ends the wait for the broker's answer at once: a silent leader would
        // hold it for the whole bound (the run's --wait and the connect bound).
        match crate::signals::within(self.bound, produced).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(self.lost("producing a request", &why)),
            Err(crate::signals::Stopped::Elapsed) => Err(self.silent("producing a request")),
            Err(crate::signals::Stopped::Interrupted) => Err(TransportError::Interrupted {
                what: format!("waiting for {} to take a request", self.target),
            }),
        }
    }

    async fn next_reply(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        self.send_all().await?;
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(r) = self.fetched.pop_front() {
                return Ok(Some(r));
            }
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || crate::signals::interrupted() {
                return Ok(None);
            }
            // A fetch waits at most the endpoint's fetch wait: a get ends near its own bound
            // and sees a signal between fetches.
            let slice = i32::try_from(left.as_millis())
                .unwrap_or(i32::MAX)
                .min(self.fetch_wait_ms);
            let fetched = self
                .replies
                .fetch_records(self.offset, 1..FETCH_BYTES, slice.max(1));
            let (records, _) = match crate::signals::within(self.bound, fetched).await {
                Ok(Ok(got)) => got,
                Ok(Err(e)) => return Err(self.lost("fetching replies", &e)),
                Err(crate::signals::Stopped::Elapsed) => {
                    return Err(self.silent("fetching replies"));
                }
                // A signal ends the wait; the get ends as one that saw no reply.
                Err(crate::signals::Stopped::Interrupted) => return Ok(None),
            };
            for r in records {
                self.offset = self.offset.max(r.offset + 1);
                let correl_id = r
                    .record
                    .headers
                    .get(CORRELATION_ID)
                    .map(|c| String::from_utf8_lossy(c).into_owned());
                self.fetched.push_back(Reply {
                    correl_id,
                    len: r.record.value.as_ref().map_or(0, Vec::len),
                });
            }
        }
    }
}

impl AsyncSession for KafkaSession {
    fn runtime(&self) -> Arc<Runtime> {
        self.rt.clone()
    }
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        let mut headers = self.headers.clone();
        headers.insert(CORRELATION_ID.to_string(), correl_id.as_bytes().to_vec());
        self.unsent.push(Record {
            key: None,
            value: Some(body.to_vec()),
            headers,
            timestamp: chrono::Utc::now(),
        });
        Ok(())
    }
    fn get(&mut self, wait: Duration) -> SessionFuture<'_, Result<Option<Reply>, TransportError>> {
        Box::pin(self.next_reply(wait))
    }
    fn commit(&mut self) -> SessionFuture<'_, Result<(), TransportError>> {
        // --syncpoint is refused for Kafka before a run.
        Box::pin(async { Ok(()) })
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let rt = self.rt.clone();
        rt.block_on(self.send_all())
    }
}

impl EndpointKind for KafkaEndpoint {
    fn transport(&self) -> &'static str {
        "kafka"
    }
    fn redacted(&self) -> String {
        KafkaEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(Kafka::new(self.clone(), setup)))
    }
    fn broker_address(&self) -> Option<(String, u16)> {
        self.brokers.first().cloned()
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    /// Kafka counts no reader of an assigned partition. A flow oemputx starts makes its
    /// topic (a fresh one per block) and reads it from the start, so a topic that is there
    /// is served: nothing put to it is missed. `Some(0)` while it is not there yet.
    fn consumers(&self, queue: &str) -> Result<Option<u32>, TransportError> {
        let target = self.redacted();
        client_runtime(&target, "Kafka")?.block_on(async {
            let client = connect(self, "oemputx-probe").await?;
            Ok(match partitions(&client, queue, &target).await? {
                Some(_) => None,
                None => Some(0),
            })
        })
    }
    fn delete_queue(&self, queue: &str) -> Result<(), TransportError> {
        let target = self.redacted();
        crate::signals::finishing(|| {
            client_runtime(&target, "Kafka")?.block_on(async {
                let client = connect(self, "oemputx-cleanup").await?;
                if partitions(&client, queue, &target).await?.is_some() {
                    delete_topic(&client, queue, &target).await?;
                }
                Ok(())
            })
        })
    }
    /// The broker is what a Kafka run is about; its flows are the user's own processes.
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@kafka"]
    }
    /// What Kafka cannot do, or not yet: each refused with the way out.
    fn refuse(&self, setup: &QueueSetup) -> Result<(), OptionRefused> {
        refuse_mq_calls(setup)?;
        super::endpoint::refuse_rabbitmq_paths(setup, "kafka")?;
        if setup.syncpoint {
            return Err(OptionRefused::new(
                "--syncpoint",
                "Kafka has no unit of work spanning a produce and a fetch here (Kafka transactions are not yet driven): leave --syncpoint out for kafka://",
            ));
        }
        if let Some(why) = topic_problem(&setup.request_queue) {
            return Err(OptionRefused::new("--request-queue", why));
        }
        if let ReplyQueue::Named(name) = &setup.reply_queue
            && let Some(why) = topic_problem(name)
        {
            return Err(OptionRefused::new("--reply-queue", why));
        }
        Ok(())
    }
}

/// Why `name` cannot be a Kafka topic (Kafka's rule: 1–249 of `[a-zA-Z0-9._-]`, not `.`
/// or `..`), if it cannot.
pub fn topic_problem(name: &str) -> Option<String> {
    let legal = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if name.is_empty()
        || name.len() > 249
        || name == "."
        || name == ".."
        || !name.chars().all(legal)
    {
        Some(format!(
            "'{}' is not a Kafka topic name: 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-'",
            crate::terminal::for_terminal(name)
        ))
    } else {
        None
    }
}
