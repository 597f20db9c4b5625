//! The flow's NATS side: a queue-group subscription on the input subject (the instances of
//! all sample-flow processes on one subject share its requests, as consumers of one AMQP
//! queue do), replies published to each request's reply subject. Core NATS has no
//! acknowledgement: a request is done when its reply is published.

use super::engine::{FlowIo, FlowOptions, Incoming};
use anyhow::Context;
use async_nats::{Client, Subscriber};
use futures_util::StreamExt;
use oemputx::transport::nats::{self, url::NatsEndpoint};
use std::time::Duration;

/// The queue group every sample-flow instance joins.
pub const QUEUE_GROUP: &str = "sample-flow";

/// One instance's connection and subscription.
pub struct NatsIo {
    client: Client,
    sub: Subscriber,
    subject: String,
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
                    nats::scrub(&e.to_string(), ep)
                )
            })?;
        let subject = o.input_queue.clone();
        let sub = client
            .queue_subscribe(subject.clone(), QUEUE_GROUP.to_string())
            .await
            .with_context(|| format!("subscribing to '{subject}'"))?;
        // Subscribed once the server has seen it: a driver started right after this line
        // must not get "no responders".
        client.flush().await.context("flushing the subscription")?;
        Ok(NatsIo {
            client,
            sub,
            subject,
        })
    }
}

impl FlowIo for NatsIo {
    /// The request's reply subject.
    type Meta = Option<String>;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Self::Meta>>> {
        match tokio::time::timeout(wait, self.sub.next()).await {
            Err(_) => Ok(None),
            Ok(None) => Err(anyhow::anyhow!(
                "the server ended the subscription to '{}' (the connection was lost)",
                self.subject
            )),
            Ok(Some(m)) => {
                let reply = m.reply.map(|r| r.to_string());
                Ok(Some(Incoming {
                    body: m.payload.to_vec(),
                    // NATS correlates by reply subject; its last token is oemputx's id.
                    correl: reply
                        .as_deref()
                        .and_then(|r| r.rsplit('.').next())
                        .map(str::to_string),
                    meta: reply,
                }))
            }
        }
    }

    async fn reply(&mut self, req: &Incoming<Self::Meta>, body: Vec<u8>) -> anyhow::Result<bool> {
        let Some(reply) = &req.meta else {
            return Ok(false);
        };
        self.client
            .publish(reply.clone(), body.into())
            .await
            .context("publishing a reply")?;
        Ok(true)
    }

    async fn commit(&mut self, _req: &Incoming<Self::Meta>) -> anyhow::Result<()> {
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
