//! Requests produced with `acks=1`: the partition's leader answers once it has written the
//! record itself, without waiting for its followers (a record is lost if the leader fails
//! before a follower copied it). That is Kafka's non-persistent produce, what a run without
//! `--persistent` asks for.
//!
//! rskafka's partition client produces with `acks=all` only. Its protocol layer (the
//! messenger, the message types; opened by its `unstable-fuzzing` feature, pinned to 0.6.0
//! so that it cannot move under this file) serves a connection of our own to the
//! partition's leader, with the same TLS and SASL as the client's.

use super::url::KafkaEndpoint;
use crate::transport::TransportError;
use rskafka::messenger::Messenger;
use rskafka::protocol::messages::{
    MetadataRequest, MetadataRequestTopic, ProduceRequest, ProduceRequestPartitionData,
    ProduceRequestTopicData,
};
use rskafka::protocol::primitives::{Int16, Int32, NullableString, Records, String_};
use rskafka::protocol::record::{
    ControlBatchOrRecords, Record as WireRecord, RecordBatch, RecordBatchCompression,
    RecordBatchTimestampType, RecordHeader,
};
use rskafka::record::Record;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// How long the leader may take to write a record before it answers with an error.
const PRODUCE_TIMEOUT_MS: i32 = 30_000;
/// How long one broker may take to connect, agree versions and authenticate.
const PER_BROKER: std::time::Duration = std::time::Duration::from_secs(3);

/// A plain or TLS stream to a broker.
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// One partition's leader, on a connection of its own.
pub struct LeaderProducer {
    messenger: Messenger<Box<dyn Stream>>,
    topic: String,
    partition: i32,
}

impl LeaderProducer {
    /// A connection to the leader of `partition` of `topic`, found through the first
    /// bootstrap broker that answers. Bounded by the caller (the connect bound).
    pub async fn open(
        ep: &KafkaEndpoint,
        topic: &str,
        partition: i32,
        name: &str,
    ) -> Result<LeaderProducer, TransportError> {
        let target = ep.redacted();
        let fail = |what: &str, why: String| TransportError::Broker {
            what: format!("{what} (the acks=1 producer)"),
            target: target.clone(),
            why: crate::secret::scrub(&why),
        };
        let mut last = String::from("no broker in the URL");
        let mut bootstrap = None;
        for (host, port) in &ep.brokers {
            // Each broker its own bound: one that accepts and then says nothing must not
            // use up the time the others would have had.
            match tokio::time::timeout(PER_BROKER, messenger(ep, host, *port, name)).await {
                Ok(Ok(m)) => {
                    bootstrap = Some((m, host.clone(), *port));
                    break;
                }
                Ok(Err(why)) => last = format!("{host}:{port}: {why}"),
                Err(_) => {
                    last = format!("{host}:{port}: no answer within {} s", PER_BROKER.as_secs());
                }
            }
        }
        let Some((m, host, port)) = bootstrap else {
            return Err(TransportError::Unreachable {
                target: target.clone(),
                why: crate::secret::scrub(&crate::terminal::for_terminal(&last)),
            });
        };
        // Just after --declare made the topic, or during an election, the partition has no
        // leader yet: asked again until it has one (the caller bounds the whole).
        let leader = loop {
            let metadata = m
                .request(MetadataRequest {
                    topics: Some(vec![MetadataRequestTopic {
                        name: String_(topic.to_string()),
                    }]),
                    allow_auto_topic_creation: None,
                })
                .await
                .map_err(|e| fail("asking for the partition's leader", e.to_string()))?;
            let leader = metadata
                .topics
                .iter()
                .find(|t| t.name.0 == topic)
                .and_then(|t| {
                    t.partitions
                        .iter()
                        .find(|p| p.partition_index.0 == partition)
                })
                .map(|p| p.leader_id.0)
                .and_then(|id| metadata.brokers.iter().find(|b| b.node_id.0 == id))
                .map(|b| (b.host.0.clone(), u16::try_from(b.port.0)));
            match leader {
                Some((host, Ok(port))) if port > 0 => break (host, port),
                Some((host, _)) => {
                    return Err(fail(
                        "asking for the partition's leader",
                        format!(
                            "the leader {} has no port a client can reach",
                            crate::terminal::for_terminal(&host)
                        ),
                    ));
                }
                None => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        };
        let messenger = if leader == (host, port) {
            m
        } else {
            messenger(ep, &leader.0, leader.1, name)
                .await
                .map_err(|why| {
                    fail(
                        &format!(
                            "connecting to the leader {}:{}",
                            crate::terminal::for_terminal(&leader.0),
                            leader.1
                        ),
                        why,
                    )
                })?
        };
        Ok(LeaderProducer {
            messenger,
            topic: topic.to_string(),
            partition,
        })
    }

    /// Produce `records` as one batch; the leader's answer, or why there is none.
    pub async fn produce(&self, records: Vec<Record>) -> Result<(), String> {
        if records.is_empty() {
            return Ok(());
        }
        let request = request(&self.topic, self.partition, records);
        let response = self
            .messenger
            .request(request)
            .await
            .map_err(|e| e.to_string())?;
        let answer = response
            .responses
            .iter()
            .filter(|t| t.name.0 == self.topic)
            .flat_map(|t| t.partition_responses.iter())
            .find(|p| p.index.0 == self.partition)
            .ok_or_else(|| "the leader's answer names no partition of ours".to_string())?;
        match &answer.error {
            None => Ok(()),
            Some(e) => Err(format!("the leader refused the request: {e}")),
        }
    }
}

/// A messenger to `host:port` with the endpoint's TLS and SASL, its API versions agreed.
pub(super) async fn messenger(
    ep: &KafkaEndpoint,
    host: &str,
    port: u16,
    name: &str,
) -> Result<Messenger<Box<dyn Stream>>, String> {
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Stream> = match &ep.tls {
        Some(tls) => {
            // The URL's server name (its first host's, or server_name_indication) is the
            // first broker's; any other broker is checked against its own host, as the
            // client does.
            let first = ep.brokers.first().is_some_and(|b| b.0 == host);
            let tls = if first {
                tls.clone()
            } else {
                crate::transport::tls::TlsOptions {
                    server_name: host.to_string(),
                    ..tls.clone()
                }
            };
            Box::new(crate::transport::tls::connect(&tls, tcp).await?)
        }
        None => Box::new(tcp),
    };
    let mut m = Messenger::new(stream, super::DEFAULT_MAX_MESSAGE * 4, Arc::from(name));
    m.sync_versions().await.map_err(|e| e.to_string())?;
    if let Some(s) = &ep.sasl {
        m.do_sasl(super::sasl_config(s))
            .await
            .map_err(|e| format!("SASL authentication: {e}"))?;
    }
    Ok(m)
}

/// A produce request of `records` for one partition, with `acks=1`: one uncompressed
/// batch (format v2), as the partition client builds it.
fn request(topic: &str, partition: i32, records: Vec<Record>) -> ProduceRequest {
    let first = records
        .iter()
        .map(|r| r.timestamp)
        .min()
        .unwrap_or_else(chrono::Utc::now);
    let last = records.iter().map(|r| r.timestamp).max().unwrap_or(first);
    let n = i32::try_from(records.len()).unwrap_or(i32::MAX);
    let wire = records
        .into_iter()
        .enumerate()
        .map(|(i, r)| WireRecord {
            key: r.key,
            value: r.value,
            timestamp_delta: (r.timestamp - first).num_milliseconds(),
            offset_delta: i32::try_from(i).unwrap_or(i32::MAX),
            headers: r
                .headers
                .into_iter()
                .map(|(key, value)| RecordHeader { key, value })
                .collect(),
        })
        .collect();
    let batch = RecordBatch {
        base_offset: 0,
        partition_leader_epoch: 0,
        last_offset_delta: n - 1,
        first_timestamp: first.timestamp_millis(),
        max_timestamp: last.timestamp_millis(),
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records: ControlBatchOrRecords::Records(wire),
        compression: RecordBatchCompression::NoCompression,
        is_transactional: false,
        timestamp_type: RecordBatchTimestampType::CreateTime,
    };
    ProduceRequest {
        transactional_id: NullableString(None),
        acks: Int16(1),
        timeout_ms: Int32(PRODUCE_TIMEOUT_MS),
        topic_data: vec![ProduceRequestTopicData {
            name: String_(topic.to_string()),
            partition_data: vec![ProduceRequestPartitionData {
                index: Int32(partition),
                records: Records(vec![batch]),
            }],
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rskafka::protocol::api_version::ApiVersion;
    use rskafka::protocol::messages::WriteVersionedType;

    #[test]
    fn the_request_goes_out_with_acks_1_and_every_record_its_headers() {
        let at = chrono::Utc::now();
        let record = |id: &[u8]| Record {
            key: None,
            value: Some(b"<request/>".to_vec()),
            headers: [("kafka_correlationId".to_string(), id.to_vec())].into(),
            timestamp: at,
        };
        let r = request("MQSI.IN", 2, vec![record(b"a"), record(b"b")]);
        let mut wire = Vec::new();
        r.write_versioned(&mut wire, ApiVersion(Int16(3)))
            .expect("encodes");
        // Produce v3: transactional id (null: -1), then acks.
        assert_eq!(&wire[..4], &[0xff, 0xff, 0, 1]);
        let batch = &r.topic_data[0].partition_data[0].records.0[0];
        assert_eq!(batch.last_offset_delta, 1);
        let ControlBatchOrRecords::Records(records) = &batch.records else {
            panic!("a batch of records");
        };
        assert_eq!(records[1].headers[0].value, b"b");
        assert_eq!(records[1].offset_delta, 1);
    }
}
