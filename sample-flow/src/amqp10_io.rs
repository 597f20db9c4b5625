//! The flow's AMQP 1.0 side: a receiver on the input queue's address (created durable when
//! missing, as the AMQP 0-9-1 side declares it), replies sent to each request's `reply-to`
//! with its `correlation-id` (or its `message-id`) as the reply's `correlation-id`, and the
//! request accepted only after its reply. AMQP 1.0 has no anonymous relay on RabbitMQ's
//! plugin, so the flow keeps one sender link per reply address it has seen.

use super::engine::{FlowIo, FlowOptions, Incoming, Replied};
use anyhow::Context;
use fe2o3_amqp::link::delivery::Delivery;
use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::types::definitions::{ReceiverSettleMode, SenderSettleMode};
use fe2o3_amqp::types::messaging::{
    Body, Header, Message, MessageId, Properties, Source, Target, TerminusDurability,
};
use fe2o3_amqp::types::primitives::{Binary, Value};
use fe2o3_amqp::{Receiver, Sender};
use oemputx::transport::amqp10::{self, Opened, url::Amqp10Endpoint};
use std::collections::HashMap;
use std::time::Duration;

/// Reply senders kept at most; beyond, the oldest is closed (a reply address per driver
/// task, so a flow serving many short runs would otherwise collect links).
const MAX_REPLY_LINKS: usize = 256;

/// What a request carries for its reply and acceptance.
pub struct Meta {
    delivery: Delivery<Body<Value>>,
    reply_to: Option<String>,
    /// The id the reply carries as its correlation id, in the request's own type.
    correl: Option<MessageId>,
    durable: bool,
}

/// One instance's connection, input receiver and reply senders.
pub struct Amqp10Io {
    opened: Opened,
    input: Receiver,
    queue: String,
    senders: HashMap<String, Sender>,
    style: oemputx::transport::amqp10::url::AddressStyle,
    next_link: u64,
}

impl Amqp10Io {
    pub async fn open(i: usize, ep: &Amqp10Endpoint, o: &FlowOptions) -> anyhow::Result<Amqp10Io> {
        let mut opened = amqp10::open(ep, &format!("sample-flow-{i}-{}", std::process::id()))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let queue = o.input_queue.clone();
        let address = ep.style.declaring(&queue);
        let input = Receiver::builder()
            .name(format!("sample-flow-{i}-{}-in", std::process::id()))
            .source(
                Source::builder()
                    .address(address.as_str())
                    .durable(TerminusDurability::Configuration)
                    .build(),
            )
            .sender_settle_mode(SenderSettleMode::Unsettled)
            .receiver_settle_mode(ReceiverSettleMode::First)
            .credit_mode(CreditMode::Auto(u32::from(o.prefetch.max(1))))
            .attach(&mut opened.session)
            .await
            .with_context(|| format!("receiving from '{address}'"))?;
        Ok(Amqp10Io {
            opened,
            input,
            queue,
            senders: HashMap::new(),
            style: ep.style,
            next_link: 0,
        })
    }

    /// The sender to `address`, attached on first use; its terminus durable for a queue
    /// of the flow's own (the audit queue), not for a reply address: RabbitMQ declares
    /// the queue a target names and refuses a declare that differs in durability, and
    /// reply queues are not durable.
    async fn sender(&mut self, address: &str, durable: bool) -> anyhow::Result<&mut Sender> {
        if !self.senders.contains_key(address) {
            // Dropped, not closed: see close() below.
            if self.senders.len() >= MAX_REPLY_LINKS
                && let Some(old) = self.senders.keys().next().cloned()
            {
                self.senders.remove(&old);
            }
            self.next_link += 1;
            let sender = Sender::builder()
                .name(format!(
                    "sample-flow-{}-out-{}",
                    std::process::id(),
                    self.next_link
                ))
                .target(if durable {
                    amqp10::durable_target(address)
                } else {
                    Target::builder().address(address).build()
                })
                .sender_settle_mode(SenderSettleMode::Settled)
                .attach(&mut self.opened.session)
                .await
                .with_context(|| format!("sending to '{address}'"))?;
            self.senders.insert(address.to_string(), sender);
        }
        self.senders
            .get_mut(address)
            .ok_or_else(|| anyhow::anyhow!("no sender to '{address}'"))
    }

    /// Send `body` to `to`; `own`: the flow's own queue (durable), not a reply address.
    async fn send(
        &mut self,
        to: &str,
        own: bool,
        body: Vec<u8>,
        correl: Option<MessageId>,
        durable: bool,
    ) -> anyhow::Result<()> {
        let properties = Properties {
            correlation_id: correl,
            ..Properties::default()
        };
        let message = Message::builder()
            .properties(properties)
            .header(durable.then(|| Header::builder().durable(true).build()))
            .data(Binary::from(body))
            .build();
        self.sender(to, own)
            .await?
            .send(message)
            .await
            .with_context(|| format!("sending to '{to}'"))?;
        Ok(())
    }
}

impl FlowIo for Amqp10Io {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Meta>>> {
        let delivery = match tokio::time::timeout(wait, self.input.recv::<Body<Value>>()).await {
            Err(_) => return Ok(None),
            Ok(got) => got.with_context(|| format!("receiving from '{}'", self.queue))?,
        };
        let message = delivery.message();
        let props = message.properties.as_ref();
        // The correlation id, or the message id (the JMS habit) when it has none.
        let correl = props.and_then(|p| p.correlation_id.clone().or(p.message_id.clone()));
        let reply_to = props.and_then(|p| p.reply_to.clone());
        let durable = message.header.as_ref().is_some_and(|h| h.durable);
        Ok(Some(Incoming {
            body: amqp10::body_bytes(&message.body),
            correl: correl.as_ref().map(amqp10::id_text),
            meta: Meta {
                delivery,
                reply_to,
                correl,
                durable,
            },
        }))
    }

    async fn reply(&mut self, req: &Incoming<Meta>, body: Vec<u8>) -> anyhow::Result<Replied> {
        let Some(to) = req.meta.reply_to.clone() else {
            return Ok(Replied::NoReplyTo);
        };
        self.send(&to, false, body, req.meta.correl.clone(), req.meta.durable)
            .await?;
        Ok(Replied::Sent)
    }

    async fn commit(&mut self, req: &Incoming<Meta>) -> anyhow::Result<()> {
        self.input
            .accept(&req.meta.delivery)
            .await
            .context("accepting a request")
    }

    async fn audit(&mut self, req: &Incoming<Meta>, to: &str) -> anyhow::Result<()> {
        let address = self.style.declaring(to);
        self.send(&address, true, req.body.clone(), None, req.meta.durable)
            .await
    }

    async fn close(mut self) {
        // The reply senders are not detached one by one: RabbitMQ's plugin declares a
        // link's queue again when the link detaches, which brought back reply queues the
        // driver had deleted. Ending the session takes them down with it.
        self.senders.clear();
        let _ = self.input.close().await;
        let _ = self.opened.session.end().await;
        let _ = self.opened.connection.close().await;
    }
}
