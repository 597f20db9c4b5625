//! The flow's NATS side, in one of two ways.
//!
//! Core NATS (the default): a queue-group subscription on the input subject (the instances
//! of all sample-flow processes on one subject share its requests, as consumers of one AMQP
//! queue do), replies published to each request's reply subject. Core NATS has no
//! acknowledgement: a request is done when its reply is published.
//!
//! JetStream (`--jetstream`, for oemputx's `--persistent`): the flow reads the stream that
//! captures its subject (created as oemputx's `--declare` would if missing) through one
//! durable pull consumer that every instance shares, replies to the subject in each
//! request's `Reply-To` header (a stored message loses its own reply subject), and
//! acknowledges the request after its reply, so that the work queue removes it only then.

use super::engine::{FlowIo, FlowOptions, Incoming, Replied};
use anyhow::Context;
use async_nats::jetstream::{self, consumer::pull, message::Acker};
use async_nats::{Client, Subscriber};
use futures_util::StreamExt;
use oemputx::transport::nats::{self, jetstream as js, url::NatsEndpoint};
use std::time::Duration;

/// The queue group every sample-flow instance joins, and the durable consumer they share.
pub const QUEUE_GROUP: &str = "sample-flow";

/// Where requests come from.
enum Source {
    Core(Subscriber),
    Stream(Box<pull::Stream>),
}

/// One instance's connection and subscription.
pub struct NatsIo {
    client: Client,
    source: Source,
    subject: String,
}

/// What a request carries for its reply and acknowledgement.
pub struct Meta {
    /// Where the reply goes: the reply subject, or a stored request's `Reply-To` header.
    reply: Option<String>,
    /// A stored request's acknowledgement, sent once its work is done.
    acker: Option<Acker>,
}

impl NatsIo {
    pub async fn open(i: usize, ep: &NatsEndpoint, o: &FlowOptions) -> anyhow::Result<NatsIo> {
        let target = ep.redacted();
        let client = nats::connect_options(ep, &format!("sample-flow-{i}"))
            .connect(ep.server())
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot connect to {target}: {}; check that nats-server runs and the user and password in --url",
                    oemputx::secret::scrub(&e.to_string())
                )
            })?;
        let subject = o.input_queue.clone();
        let source = if o.jetstream {
            Source::Stream(Box::new(
                stream_reader(&client, &subject, o, &target).await?,
            ))
        } else {
            Source::Core(
                client
                    .queue_subscribe(subject.clone(), QUEUE_GROUP.to_string())
                    .await
                    .with_context(|| format!("subscribing to '{subject}'"))?,
            )
        };
        // Subscribed once the server has seen it: a driver started right after this line
        // must not get "no responders".
        client.flush().await.context("flushing the subscription")?;
        Ok(NatsIo {
            client,
            source,
            subject,
        })
    }
}

/// Read the stream that captures `subject` (creating it if missing) through the shared
/// durable consumer, `prefetch` requests at most per pull.
async fn stream_reader(
    client: &Client,
    subject: &str,
    o: &FlowOptions,
    target: &str,
) -> anyhow::Result<pull::Stream> {
    let (prefetch, replicas) = (o.prefetch, o.replicas);
    let ctx = jetstream::new(client.clone());
    js::require(&ctx, target).await?;
    // A signal during the wait for the stream's placement ends it (the flow's own flag:
    // sample-flow handles its signals itself).
    let stop = || o.stop.load(std::sync::atomic::Ordering::Relaxed);
    let facts = js::find_or_create(&ctx, subject, true, replicas, target, &stop).await?;
    let stream = ctx
        .get_stream(&facts.name)
        .await
        .with_context(|| format!("opening JetStream stream {}", facts.name))?;
    let consumer = stream
        .get_or_create_consumer(
            QUEUE_GROUP,
            pull::Config {
                durable_name: Some(QUEUE_GROUP.to_string()),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ..Default::default()
            },
        )
        .await
        .with_context(|| format!("opening consumer {QUEUE_GROUP} on stream {}", facts.name))?;
    consumer
        .stream()
        .max_messages_per_batch(usize::from(prefetch.max(1)))
        .messages()
        .await
        .with_context(|| format!("pulling from stream {}", facts.name))
}

impl NatsIo {
    /// The next message and where its reply goes, whichever the source.
    async fn next_message(&mut self) -> Option<anyhow::Result<(async_nats::Message, Meta)>> {
        match &mut self.source {
            Source::Core(sub) => sub.next().await.map(|m| {
                let reply = m.reply.as_ref().map(|r| r.to_string());
                Ok((m, Meta { reply, acker: None }))
            }),
            Source::Stream(s) => s.next().await.map(|m| {
                let (m, acker) = m
                    .map_err(|e| anyhow::anyhow!("pulling a request from the stream: {e}"))?
                    .split();
                let reply = m
                    .headers
                    .as_ref()
                    .and_then(|h| h.get(js::REPLY_TO))
                    .map(|v| v.as_str().to_string());
                Ok((
                    m,
                    Meta {
                        reply,
                        acker: Some(acker),
                    },
                ))
            }),
        }
    }
}

impl FlowIo for NatsIo {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Self::Meta>>> {
        match tokio::time::timeout(wait, self.next_message()).await {
            Err(_) => Ok(None),
            Ok(None) => Err(anyhow::anyhow!(
                "the server ended the subscription to '{}' (the connection was lost)",
                self.subject
            )),
            Ok(Some(m)) => {
                let (m, meta) = m?;
                Ok(Some(Incoming {
                    body: m.payload.to_vec(),
                    // NATS correlates by reply subject; its last token is oemputx's id.
                    correl: meta
                        .reply
                        .as_deref()
                        .and_then(|r| r.rsplit('.').next())
                        .map(str::to_string),
                    meta,
                }))
            }
        }
    }

    async fn reply(
        &mut self,
        req: &Incoming<Self::Meta>,
        body: Vec<u8>,
    ) -> anyhow::Result<Replied> {
        let Some(reply) = &req.meta.reply else {
            return Ok(Replied::NoReplyTo);
        };
        self.client
            .publish(reply.clone(), body.into())
            .await
            .context("publishing a reply")?;
        Ok(Replied::Sent)
    }

    async fn commit(&mut self, req: &Incoming<Self::Meta>) -> anyhow::Result<()> {
        if let Some(acker) = &req.meta.acker {
            acker
                .ack()
                .await
                .map_err(|e| anyhow::anyhow!("acknowledging a stored request: {e}"))?;
        }
        Ok(())
    }

    async fn audit(&mut self, req: &Incoming<Self::Meta>, to: &str) -> anyhow::Result<()> {
        self.client
            .publish(to.to_string(), req.body.clone().into())
            .await
            .with_context(|| format!("publishing the audit copy to '{to}'"))
    }

    async fn close(self) {
        let _ = self.client.drain().await;
    }
}
