//! JetStream for `--persistent`: the stream that stores the requests, and the header that
//! carries their reply subject.
//!
//! A message stored in a stream loses the reply subject it was published with (a consumer
//! sees the stream's ack subject there instead), so a persistent request names its reply
//! subject in the `Reply-To` header — the convention the NATS maintainers advise for
//! request/reply through JetStream ("use a header of your own choosing and respond to the
//! subject in it"). Correlation stays by reply subject, as in core NATS.
//!
//! The stream oemputx declares (`--declare`, or `sample-flow --jetstream`) is a work queue
//! kept in files: a request is stored on disk before the driver's publish is acknowledged
//! and removed once the flow acknowledges it, the nearest NATS has to a persistent MQ put
//! to a local queue. A stream the user made is used as it is; the report names its
//! retention and storage.

use super::super::TransportError;
use async_nats::RequestErrorKind;
use async_nats::jetstream::{
    self, Context,
    stream::{Config, RetentionPolicy, StorageType},
};
use futures_util::StreamExt;

/// The header a persistent request names its reply subject in.
pub const REPLY_TO: &str = "Reply-To";

/// The stream oemputx declares for a subject: its dots become underscores (stream names
/// may not hold dots), `MQSI.IN` → `MQSI_IN`.
pub fn stream_name(subject: &str) -> String {
    subject.replace('.', "_")
}

/// What the report says of a stream: its name, retention and storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFacts {
    pub name: String,
    pub retention: &'static str,
    pub storage: &'static str,
    /// Consumers somebody is reading from now: a pull consumer with a pull request
    /// waiting, or a push consumer with a subscriber. A durable consumer outlives its flow,
    /// so merely having consumers would not say that a flow runs.
    pub readers: usize,
    /// The copies the cluster keeps of each message (1 on a single server).
    pub replicas: usize,
}

impl StreamFacts {
    fn of(info: &jetstream::stream::Info, readers: usize) -> StreamFacts {
        StreamFacts {
            name: info.config.name.clone(),
            retention: match info.config.retention {
                RetentionPolicy::Limits => "limits",
                RetentionPolicy::Interest => "interest",
                RetentionPolicy::WorkQueue => "workqueue",
            },
            storage: match info.config.storage {
                StorageType::File => "file",
                StorageType::Memory => "memory",
            },
            readers,
            replicas: info.config.num_replicas.max(1),
        }
    }

    /// One line for the report's settings.
    pub fn describe(&self) -> String {
        format!(
            "JetStream stream {} ({} retention, {} storage, {} replica{})",
            self.name,
            self.retention,
            self.storage,
            self.replicas,
            if self.replicas == 1 { "" } else { "s" }
        )
    }
}

/// Check that the server has JetStream; a one-line error naming the fix when it has not.
/// Asked with a plain request to its API (a server without JetStream has nobody on that
/// subject) rather than the client's account query, whose reply format differs between
/// server versions (2.9's did not parse).
pub async fn require(js: &Context, target: &str) -> Result<(), TransportError> {
    let asked = js
        .client()
        .request("$JS.API.INFO", bytes::Bytes::new())
        .await;
    match asked {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), RequestErrorKind::NoResponders) => {
            Err(TransportError::JetStreamDisabled {
                target: target.to_string(),
            })
        }
        Err(e) => Err(TransportError::Broker {
            what: "asking whether JetStream is on".into(),
            target: target.to_string(),
            why: e.to_string(),
        }),
    }
}

/// The stream that captures `subject`, if one does. Any failure to ask (JetStream off, no
/// permission for its API) counts as none: this is for telling a user of core NATS that a
/// stream would answer in their flow's place.
pub(crate) async fn capturing(js: &Context, subject: &str) -> Option<StreamFacts> {
    let name = js.stream_by_subject(subject).await.ok()?;
    let mut stream = js.get_stream(name).await.ok()?;
    let readers = readers(&stream).await;
    let info = stream.info().await.ok()?;
    Some(StreamFacts::of(info, readers))
}

/// How many of the stream's consumers somebody reads from now.
async fn readers(stream: &jetstream::stream::Stream) -> usize {
    let mut consumers = stream.consumers();
    let mut n = 0;
    while let Some(Ok(c)) = consumers.next().await {
        if c.num_waiting > 0 || c.push_bound {
            n += 1;
        }
    }
    n
}

/// The stream that captures `subject`, created as a file-backed work queue when there is
/// none and `create` is set, with `replicas` copies of each message (1 when None). A stream
/// found with another number of replicas than `replicas` asks for is refused: a run would
/// measure another replication than the one asked for. JetStream must be on (see
/// [`require`]). `stop` says whether a signal has asked to stop (oemputx's
/// [`crate::signals::interrupted`], or the caller's own flag): it ends a wait for placement.
pub async fn find_or_create(
    js: &Context,
    subject: &str,
    create: bool,
    replicas: Option<usize>,
    target: &str,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<StreamFacts, TransportError> {
    if let Some(found) = capturing(js, subject).await {
        return match replicas {
            Some(r) if r != found.replicas => Err(TransportError::Broker {
                what: format!("checking JetStream stream {}", found.name),
                target: target.to_string(),
                why: format!(
                    "it keeps {} replica(s) of each message and --replicas asks for {r}: delete it (nats stream rm {}) for the run to create it again, or ask for {}",
                    found.replicas, found.name, found.replicas
                ),
            }),
            _ => Ok(found),
        };
    }
    if !create {
        return Err(TransportError::NoStream {
            subject: subject.to_string(),
            target: target.to_string(),
        });
    }
    let config = Config {
        name: stream_name(subject),
        subjects: vec![subject.to_string()],
        retention: RetentionPolicy::WorkQueue,
        storage: StorageType::File,
        num_replicas: replicas.unwrap_or(1),
        ..Default::default()
    };
    let mut stream = create_when_placed(js, config, subject, target, stop).await?;
    let info = stream.info().await.map_err(|e| TransportError::Broker {
        what: "reading the new stream's configuration".into(),
        target: target.to_string(),
        why: e.to_string(),
    })?;
    Ok(StreamFacts::of(info, 0))
}

/// How long a stream's creation is asked again while the cluster has no peers to place its
/// replicas on (JetStream's 10005, "no suitable peers for placement"): the nodes of a
/// cluster that has just formed, or one that has just come back, report to the metadata
/// leader within seconds. A test's three-node lab with its leader elected found too few
/// peers for its first R3 stream once, in CI beside the other tests.
const PLACEMENT_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// `create_stream`, asked again with a pause growing from 100 ms to 1 s while the cluster
/// has no peers for it, for up to [`PLACEMENT_WAIT`] in all (each attempt's own wait
/// included); `stop` ends the wait.
async fn create_when_placed(
    js: &Context,
    config: Config,
    subject: &str,
    target: &str,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<jetstream::stream::Stream, TransportError> {
    use crate::signals::{Stopped, within_watching};
    let name = stream_name(subject);
    let interrupted = || TransportError::Interrupted {
        what: format!("waiting to create JetStream stream {name}"),
    };
    let started = tokio::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(100);
    loop {
        let left = PLACEMENT_WAIT.saturating_sub(started.elapsed());
        let asked = within_watching(left, stop, js.create_stream(config.clone())).await;
        let failed = |why: String| TransportError::Broker {
            what: format!("creating JetStream stream {name}"),
            target: target.to_string(),
            why,
        };
        let e = match asked {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => e,
            Err(Stopped::Interrupted) => return Err(interrupted()),
            Err(Stopped::Elapsed) => {
                return Err(failed(format!(
                    "no answer within {} s; check that the cluster's nodes run and are joined (nats server report jetstream)",
                    PLACEMENT_WAIT.as_secs()
                )));
            }
        };
        let placing = matches!(
            e.kind(),
            jetstream::context::CreateStreamErrorKind::JetStream(j)
                if j.error_code() == jetstream::ErrorCode::CLUSTER_NO_PEERS
        );
        if !placing || started.elapsed() + pause > PLACEMENT_WAIT {
            return Err(failed(if placing {
                format!(
                    "{e} (asked for {} s): the cluster has fewer JetStream nodes up, joined and with storage to spare than --replicas asks for (nats server report jetstream)",
                    started.elapsed().as_secs()
                )
            } else {
                format!(
                    "{e}; another stream may already capture an overlapping subject (nats stream ls)"
                )
            }));
        }
        if let Err(Stopped::Interrupted) =
            within_watching(pause, stop, std::future::pending::<()>()).await
        {
            return Err(interrupted());
        }
        pause = (pause * 2).min(std::time::Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_named_after_its_subject_without_dots() {
        assert_eq!(stream_name("MQSI.IN"), "MQSI_IN");
        assert_eq!(stream_name("orders"), "orders");
    }

    #[test]
    fn the_report_names_retention_and_storage() {
        let f = StreamFacts {
            name: "MQSI_IN".into(),
            retention: "workqueue",
            storage: "file",
            readers: 1,
            replicas: 1,
        };
        assert_eq!(
            f.describe(),
            "JetStream stream MQSI_IN (workqueue retention, file storage, 1 replica)"
        );
    }
}
