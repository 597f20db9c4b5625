//! The flow's Kafka side, by Spring Kafka's request/reply convention (the one oemputx's
//! Kafka transport follows): each reply is produced to the topic in the request's
//! `kafka_replyTopic` header, on the partition in `kafka_replyPartition` (4-byte big-endian),
//! with the request's `kafka_correlationId` copied.
//!
//! Partitions are assigned, not joined through a consumer group (whose join takes seconds on
//! some brokers): instance `i` of `--threads N` reads the input topic's partitions `p` with
//! `p mod N = i`. Several sample-flow *processes* on one topic would each answer every
//! request, so run one process with threads. A flow that finds its input topic missing
//! creates it (one partition, as an AMQP flow declares its queue) and reads it from the
//! start; an existing topic is read from its end, so another run's requests are not
//! answered. Offsets are not committed: Kafka keeps the requests, and the flow's position
//! is its own.
//!
//! A fetch whose records start past the next offset (a gap) is not taken at once: tansu
//! 0.6 (the tests' broker) raises a partition's high watermark before it stores the
//! record, so with two writers on one partition a fetch can return offset N+1 while N is
//! still being written. Only the records up to the first gap are taken, and a gap that
//! stays `GAP_WAIT` is passed (compaction and transaction markers make lasting ones).

use super::engine::{FlowIo, FlowOptions, Incoming, Replied};
use anyhow::Context;
use oemputx::transport::kafka::{self, url::KafkaEndpoint};
use rskafka::client::Client;
use rskafka::client::partition::{Compression, OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::record::Record;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;
use tokio::time::Instant;

/// The most reply partitions kept open: a run's reply topic is its own, so a long-lived
/// flow meets new ones run after run.
const KEEP_REPLY_PARTITIONS: usize = 64;

/// How long a gap before a fetch's records is fetched again before it is passed: a record
/// being stored shows within milliseconds; a compacted one never does.
const GAP_WAIT: Duration = Duration::from_secs(1);

/// The pause between fetches while a gap is waited for: the broker answers at once, as it
/// has records past the gap, and those are fetched again (about 50 fetches at most).
const GAP_PAUSE: Duration = Duration::from_millis(20);

/// One partition this instance reads, and the next offset to fetch.
struct Input {
    client: PartitionClient,
    offset: i64,
    /// Since when a fetch has found a gap at `offset`.
    gap_since: Option<Instant>,
}

/// One instance's client and partitions.
pub struct KafkaIo {
    client: Client,
    target: String,
    inputs: Vec<Input>,
    /// The partition whose turn it is.
    turn: usize,
    /// How long one fetch may wait at the broker before the next partition's turn (the
    /// URL's `fetch_wait_ms`).
    fetch_wait: Duration,
    early: VecDeque<Record>,
    replies: HashMap<(String, i32), PartitionClient>,
    /// The audit topic once it is known to be there (looked up or made once).
    audit_ready: Option<String>,
}

/// What a request carries for its reply.
pub struct Meta {
    headers: BTreeMap<String, Vec<u8>>,
}

impl KafkaIo {
    pub async fn open(i: usize, ep: &KafkaEndpoint, o: &FlowOptions) -> anyhow::Result<KafkaIo> {
        let target = ep.redacted();
        let name = format!("sample-flow-{}-{i}", std::process::id());
        let client = kafka::connect(ep, &name).await?;
        let topic = &o.input_queue;
        let (partitions, made) = match kafka::partitions(&client, topic, &target).await? {
            Some(n) => (n, false),
            None => {
                // Another instance may have made it first: then it is there to read.
                let made = kafka::create_topic(&client, topic, 1, &target)
                    .await
                    .is_ok();
                let n = kafka::partitions(&client, topic, &target)
                    .await?
                    .with_context(|| format!("topic '{topic}' on {target} could not be made"))?;
                (n, made)
            }
        };
        let threads = o.threads.max(1);
        let mut inputs = Vec::new();
        for p in (0..partitions).filter(|p| *p as usize % threads == i) {
            let pc = client
                .partition_client(topic.clone(), p, UnknownTopicHandling::Retry)
                .await
                .with_context(|| format!("opening partition {p} of '{topic}' on {target}"))?;
            let offset = if made {
                0
            } else {
                pc.get_offset(OffsetAt::Latest)
                    .await
                    .with_context(|| format!("reading the end of partition {p} of '{topic}'"))?
            };
            inputs.push(Input {
                client: pc,
                offset,
                gap_since: None,
            });
        }
        Ok(KafkaIo {
            client,
            target,
            inputs,
            turn: 0,
            fetch_wait: Duration::from_millis(u64::from(ep.fetch_wait_ms)),
            early: VecDeque::new(),
            replies: HashMap::new(),
            audit_ready: None,
        })
    }

    /// Fetch from the partition whose turn it is; what came waits in `early`.
    async fn fetch(&mut self, slice: Duration) -> anyhow::Result<()> {
        if self.inputs.is_empty() {
            // More threads than partitions: this one has none to read.
            tokio::time::sleep(slice).await;
            return Ok(());
        }
        self.turn = (self.turn + 1) % self.inputs.len();
        let input = &mut self.inputs[self.turn];
        let wait_ms = i32::try_from(slice.as_millis()).unwrap_or(50).max(1);
        let (records, _) = input
            .client
            .fetch_records(input.offset, 1..4 << 20, wait_ms)
            .await
            .with_context(|| format!("fetching requests on {}", self.target))?;
        let mut records: Vec<_> = records.into_iter().collect();
        records.sort_by_key(|r| r.offset);
        let offsets: Vec<i64> = records.iter().map(|r| r.offset).collect();
        let mut take = contiguous(input.offset, &offsets);
        if take == 0 && !records.is_empty() {
            let since = *input.gap_since.get_or_insert_with(Instant::now);
            if since.elapsed() < GAP_WAIT {
                tokio::time::sleep(GAP_PAUSE.min(slice)).await;
                return Ok(());
            }
            // The gap stayed: a record that is not there (compacted, a marker). Only this
            // gap is passed; a later one in the same fetch is waited for in its turn.
            let first = offsets.first().copied().unwrap_or(input.offset);
            take = contiguous(first, &offsets);
            eprintln!(
                "sample-flow: offset {} of '{}' did not come within {} s: going on from offset {first}",
                input.offset,
                input.client.topic(),
                GAP_WAIT.as_secs(),
            );
        }
        // Whatever was taken (or a fetch with no gap) ends the wait for a gap at this offset.
        input.gap_since = None;
        for r in records.into_iter().take(take) {
            input.offset = input.offset.max(r.offset + 1);
            self.early.push_back(r.record);
        }
        Ok(())
    }

    /// The client of the partition a reply goes to, opened once and kept.
    async fn reply_partition(&mut self, topic: &str, p: i32) -> anyhow::Result<&PartitionClient> {
        let key = (topic.to_string(), p);
        if !self.replies.contains_key(&key) {
            if self.replies.len() >= KEEP_REPLY_PARTITIONS {
                self.replies.clear();
            }
            let pc = self
                .client
                .partition_client(topic.to_string(), p, UnknownTopicHandling::Error)
                .await
                .with_context(|| format!("opening reply partition {p} of '{topic}'"))?;
            self.replies.insert(key.clone(), pc);
        }
        self.replies
            .get(&key)
            .context("the reply partition just opened")
    }
}

impl FlowIo for KafkaIo {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Meta>>> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(r) = self.early.pop_front() {
                let correl = r
                    .headers
                    .get(kafka::CORRELATION_ID)
                    .map(|c| String::from_utf8_lossy(c).into_owned());
                return Ok(Some(Incoming {
                    body: r.value.unwrap_or_default(),
                    correl,
                    meta: Meta { headers: r.headers },
                }));
            }
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.fetch(left.min(self.fetch_wait)).await?;
        }
    }

    async fn reply(&mut self, req: &Incoming<Meta>, body: Vec<u8>) -> anyhow::Result<Replied> {
        let Some(topic) = req.meta.headers.get(kafka::REPLY_TOPIC) else {
            return Ok(Replied::NoReplyTo);
        };
        let topic = String::from_utf8_lossy(topic).into_owned();
        let partition = req
            .meta
            .headers
            .get(kafka::REPLY_PARTITION)
            .and_then(|p| <[u8; 4]>::try_from(p.as_slice()).ok())
            .map_or(0, i32::from_be_bytes);
        let mut headers = BTreeMap::new();
        if let Some(c) = req.meta.headers.get(kafka::CORRELATION_ID) {
            headers.insert(kafka::CORRELATION_ID.to_string(), c.clone());
        }
        let record = Record {
            key: None,
            value: Some(body),
            headers,
            timestamp: chrono::Utc::now(),
        };
        let pc = self.reply_partition(&topic, partition).await?;
        if let Err(e) = pc.produce(vec![record], Compression::NoCompression).await {
            // A run that ended deletes its reply topic: its late requests have nowhere to
            // go, which is no reason to stop serving.
            self.replies.remove(&(topic.clone(), partition));
            eprintln!(
                "sample-flow: a reply to '{topic}' partition {partition} was not written: {e}"
            );
            return Ok(Replied::Dropped);
        }
        Ok(Replied::Sent)
    }

    async fn commit(&mut self, _req: &Incoming<Meta>) -> anyhow::Result<()> {
        // No consumer group: the flow's position is its own, kept in memory.
        Ok(())
    }

    async fn audit(&mut self, req: &Incoming<Meta>, to: &str) -> anyhow::Result<()> {
        if self.audit_ready.as_deref() != Some(to) {
            if kafka::partitions(&self.client, to, &self.target)
                .await?
                .is_none()
            {
                let _ = kafka::create_topic(&self.client, to, 1, &self.target).await;
            }
            self.audit_ready = Some(to.to_string());
        }
        let record = Record {
            key: None,
            value: Some(req.body.clone()),
            headers: BTreeMap::new(),
            timestamp: chrono::Utc::now(),
        };
        let pc = self.reply_partition(to, 0).await?;
        pc.produce(vec![record], Compression::NoCompression)
            .await
            .context("producing the audit copy")?;
        Ok(())
    }

    async fn close(self) {}
}

/// How many of `offsets` (ascending, none below `next`: rskafka leaves out a batch's records
/// before the offset asked for) follow on from `next` without a gap.
fn contiguous(mut next: i64, offsets: &[i64]) -> usize {
    let mut n = 0;
    for &o in offsets {
        if o > next {
            break;
        }
        next = next.max(o + 1);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::contiguous;

    #[test]
    fn records_are_taken_up_to_the_first_gap_only() {
        assert_eq!(contiguous(5, &[5, 6, 7]), 3);
        // Offset 5 not stored yet when 6 and 7 were: nothing is taken.
        assert_eq!(contiguous(5, &[6, 7]), 0);
        // A gap in the middle: the records before it.
        assert_eq!(contiguous(5, &[5, 7, 8]), 1);
        // A lasting gap is passed from the first record after it, up to the next gap.
        assert_eq!(contiguous(6, &[6, 7, 9]), 2);
        assert_eq!(contiguous(5, &[]), 0);
    }
}
