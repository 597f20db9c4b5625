//! Pub/sub on NATS with `--persistent`: JetStream. The stream captures `TOPIC.>` (created
//! with `--declare`: limits retention, file storage, messages kept 10 minutes, so that a
//! ticker left running does not fill the disk); each publish waits for the stream's
//! acknowledgement. A subscriber reads its block through one pull consumer per symbol
//! (nats-server 2.9 takes one filter subject per consumer), from the messages published
//! after it subscribed; competitors share one durable consumer over the whole stream.
//! `--ack none` makes the consumers ack-none; `auto` and `client` acknowledge each message.
//! The backlog the broker tells is each consumer's pending count, which JetStream writes
//! into every delivered message's reply subject: free to read, exact as of that delivery.

use super::{Ack, Stamp, Subscriber};
use crate::transport::TransportError;
use crate::transport::nats::jetstream as js;
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::stream::{Config, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, Context};
use futures_util::StreamExt;
use futures_util::stream::SelectAll;
use std::collections::HashMap;
use std::time::Duration;
use tokio::runtime::Runtime;

/// How long the stream oemputx declares keeps a message.
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// A consumer nobody pulls from goes after this long.
const INACTIVE: Duration = Duration::from_secs(30);

/// The stream's name for `topic`.
pub fn stream_of(topic: &str) -> String {
    js::stream_name(topic)
}

/// Check JetStream and the stream capturing `topic.>`; create it with `declare`.
pub async fn prepare(
    ctx: &Context,
    topic: &str,
    declare: bool,
    target: &str,
) -> Result<(), TransportError> {
    js::require(ctx, target).await?;
    let probe = format!("{topic}.S0");
    if js::capturing(ctx, &probe).await.is_some() {
        return Ok(());
    }
    if !declare {
        return Err(TransportError::NoStream {
            subject: format!("{topic}.>"),
            target: target.to_string(),
        });
    }
    let config = Config {
        name: stream_of(topic),
        subjects: vec![format!("{topic}.>")],
        retention: RetentionPolicy::Limits,
        storage: StorageType::File,
        max_age: MAX_AGE,
        ..Default::default()
    };
    ctx.create_stream(config)
        .await
        .map(|_| ())
        .map_err(|e| TransportError::broker(target, "creating the JetStream stream", e))
}

/// A subscriber's pull consumers: one per subject, or (`durable`) one shared by name.
pub async fn consumers(
    ctx: &Context,
    topic: &str,
    subjects: Vec<String>,
    durable: Option<&str>,
    ack: Ack,
    target: &str,
) -> Result<SelectAll<pull::Stream>, TransportError> {
    let stream = ctx
        .get_stream(stream_of(topic))
        .await
        .map_err(|e| TransportError::broker(target, "opening the JetStream stream", e))?;
    let mut all = SelectAll::new();
    for subject in subjects {
        let config = pull::Config {
            durable_name: durable.map(str::to_string),
            filter_subject: subject,
            deliver_policy: DeliverPolicy::New,
            ack_policy: match ack {
                Ack::None => AckPolicy::None,
                Ack::Auto | Ack::Client => AckPolicy::Explicit,
            },
            inactive_threshold: INACTIVE,
            ..Default::default()
        };
        let consumer = match durable {
            Some(name) => stream.get_or_create_consumer(name, config).await,
            None => stream.create_consumer(config).await,
        }
        .map_err(|e| TransportError::broker(target, "creating a JetStream consumer", e))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|e| TransportError::broker(target, "pulling from the stream", e))?;
        all.push(messages);
    }
    Ok(all)
}

/// A message's stamp, from its headers (core NATS and JetStream alike).
pub(crate) fn stamp_of(m: &async_nats::Message, plan: &super::plan::Plan) -> Stamp {
    let header = |k: &str| {
        m.headers
            .as_ref()
            .and_then(|h| h.get(k))
            .map(|v| v.as_str().to_string())
    };
    let num = |k: &str| header(k).and_then(|v| v.parse::<u64>().ok());
    Stamp {
        publisher: num("publisher").unwrap_or(0) as u32,
        seq: num("seq").unwrap_or(u64::MAX),
        symbol: header("symbol")
            .and_then(|s| plan.symbol_of(&s))
            .unwrap_or(u16::MAX),
        ts_ns: num("ts_ns").unwrap_or(0),
    }
}

/// A subscriber reading JetStream consumers.
pub struct JsSubscriber {
    pub rt: Runtime,
    pub client: async_nats::Client,
    pub messages: SelectAll<pull::Stream>,
    pub plan: super::plan::Plan,
    pub ack: Ack,
    pub target: String,
    /// Each consumer's pending count as of its latest delivered message.
    pub pending: HashMap<String, u64>,
}

impl Subscriber for JsSubscriber {
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError> {
        let (messages, target, pending) = (&mut self.messages, &self.target, &mut self.pending);
        let ack = self.ack;
        let got = self.rt.block_on(async {
            let Ok(next) = tokio::time::timeout(wait, messages.next()).await else {
                return Ok(None);
            };
            let m: jetstream::Message = next
                .ok_or_else(|| TransportError::ConnectionLost {
                    target: target.clone(),
                    why: "the stream's consumers ended".into(),
                })?
                .map_err(|e| TransportError::broker(target, "pulling a message", e))?;
            if ack != Ack::None {
                m.ack()
                    .await
                    .map_err(|e| TransportError::broker(target, "acknowledging", e))?;
            }
            if let Ok(info) = m.info() {
                // Only a new consumer name allocates; the rest overwrite in place.
                match pending.get_mut(info.consumer) {
                    Some(n) => *n = info.pending,
                    None => {
                        pending.insert(info.consumer.to_string(), info.pending);
                    }
                }
            }
            Ok(Some(m.message))
        })?;
        Ok(got.map(|m| stamp_of(&m, &self.plan)))
    }
    fn broker_depth(&mut self) -> Option<u64> {
        (!self.pending.is_empty()).then(|| self.pending.values().sum())
    }
    fn close(self: Box<Self>) {
        let JsSubscriber { rt, client, .. } = *self;
        rt.block_on(async {
            let _ = client.drain().await;
        });
    }
}
