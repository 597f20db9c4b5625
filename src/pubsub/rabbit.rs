//! Pub/sub on RabbitMQ (AMQP 0-9-1): one exchange named by `--topic`. With `--select-by
//! header` it is a headers exchange and each subscriber's queue is bound once per symbol of
//! its block on `symbol = SNN` (the JMS selector's analogue, done by the broker); with
//! `--select-by topic` a topic exchange, routing key `ticker.SNN`, one binding per symbol.
//! Each subscriber has its own exclusive, server-named queue. The stamp travels in the
//! message's headers (`symbol`, `seq`, `ts_ns`, `publisher`).
//!
//! `--ack none` consumes without acknowledgement; `auto` acknowledges each message on
//! receipt; `client` every [`super::CLIENT_ACK_BATCH`] messages (multiple). `--persistent`
//! sends delivery mode 2.

use super::{Ack, Broker, CLIENT_ACK_BATCH, Publisher, SelectBy, Stamp, Subscriber};
use crate::transport::amqp::{self as transport, url::AmqpEndpoint};
use crate::transport::{TransportError, client_runtime};
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, BasicQosArguments, Channel,
    ConsumerMessage, ExchangeDeclareArguments, QueueBindArguments, QueueDeclareArguments,
};
use amqprs::connection::Connection;
use amqprs::{BasicProperties, FieldTable, FieldValue};
use std::ops::Range;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::sync::mpsc::UnboundedReceiver;

/// RabbitMQ as a pub/sub broker.
pub struct RabbitPubSub {
    pub endpoint: AmqpEndpoint,
    pub plan: super::plan::Plan,
    pub ack: Ack,
    pub select_by: SelectBy,
    pub persistent: bool,
    pub declare: bool,
}

/// Pub/sub on an `amqp://` endpoint (None for another transport's).
pub(super) fn broker(
    endpoint: &crate::transport::Endpoint,
    o: &super::BrokerOptions,
) -> Option<Result<std::sync::Arc<dyn Broker>, super::Unsupported>> {
    let endpoint = endpoint.downcast::<AmqpEndpoint>()?;
    Some(Ok(std::sync::Arc::new(RabbitPubSub {
        endpoint: endpoint.clone(),
        plan: o.plan.clone(),
        ack: o.ack,
        select_by: o.select_by,
        persistent: o.persistent,
        declare: o.declare,
    })))
}

fn field(table: &mut FieldTable, k: &str, v: &str) {
    if let Ok(name) = k.try_into() {
        table.insert(name, FieldValue::from(v));
    }
}

impl RabbitPubSub {
    fn target(&self) -> String {
        self.endpoint.redacted()
    }

    fn open(&self, rt: &Runtime, name: &str) -> Result<(Connection, Channel), TransportError> {
        let target = self.target();
        let args = transport::connection_args(&self.endpoint, name).map_err(|why| {
            TransportError::Unreachable {
                target: target.clone(),
                why,
            }
        })?;
        rt.block_on(async {
            let conn = crate::transport::handshake(
                &target,
                transport::CONNECT_TIMEOUT,
                Connection::open(&args),
                || TransportError::Unreachable {
                    target: target.clone(),
                    why: format!(
                        "no answer within {} s",
                        transport::CONNECT_TIMEOUT.as_secs()
                    ),
                },
            )
            .await?
            .map_err(|e| {
                TransportError::Unreachable {
                    target: target.clone(),
                    why: crate::secret::scrub(&e.to_string()),
                }
                .caused_by(&e)
            })?;
            let ch = conn
                .open_channel(None)
                .await
                .map_err(|e| TransportError::broker(&target, "opening a channel", e))?;
            Ok((conn, ch))
        })
    }

    fn exchange_type(&self) -> &'static str {
        match self.select_by {
            SelectBy::Header => "headers",
            SelectBy::Topic => "topic",
        }
    }

    fn routing_key(&self, symbol: u16) -> String {
        match self.select_by {
            SelectBy::Header => String::new(),
            SelectBy::Topic => format!("{}.{}", self.plan.topic, self.plan.symbol_name(symbol)),
        }
    }
}

impl Broker for RabbitPubSub {
    fn describe(&self) -> String {
        self.target()
    }
    fn modes(&self) -> String {
        let ack = match self.ack {
            Ack::None => "none (no-ack consumers)".to_string(),
            Ack::Auto => "auto (each message acknowledged on receipt)".to_string(),
            Ack::Client => format!("client (acknowledged every {CLIENT_ACK_BATCH}, multiple)"),
        };
        let select = match self.select_by {
            SelectBy::Header => format!(
                "headers exchange '{}', a binding per symbol on header symbol",
                self.plan.topic
            ),
            SelectBy::Topic => format!(
                "topic exchange '{}', a binding per symbol on {}.SNN",
                self.plan.topic, self.plan.topic
            ),
        };
        format!("ack {ack}; selection by the broker: {select}")
    }
    fn prepare(&self) -> Result<(), TransportError> {
        let target = self.target();
        let rt = client_runtime(&target, "AMQP")?;
        let (conn, ch) = self.open(&rt, "oemputx-pubsub-setup")?;
        rt.block_on(async move {
            let args = |passive: bool| {
                let mut a = ExchangeDeclareArguments::new(&self.plan.topic, self.exchange_type());
                a.durable = true;
                a.passive = passive;
                a
            };
            // Without --declare, first whether it exists: a passive declare of a missing
            // exchange closes the channel, the one thing it can mean.
            if !self.declare && ch.exchange_declare(args(true)).await.is_err() {
                let _ = conn.close().await;
                return Err(TransportError::MissingExchange {
                    exchange: self.plan.topic.clone(),
                    kind: self.exchange_type(),
                    target: target.clone(),
                });
            }
            // Then as the run needs it: a passive declare takes an exchange of any type, and
            // a headers selection on a topic exchange delivered nothing (the run failed on
            // its integrity, exit 1). Declaring it as it is changes nothing; declaring it
            // otherwise is refused by the broker: the user's choice of name (exit 2).
            let declared = ch.exchange_declare(args(false)).await;
            let _ = ch.close().await;
            let _ = conn.close().await;
            declared.map_err(|_| TransportError::ExchangeClash {
                exchange: self.plan.topic.clone(),
                kind: self.exchange_type(),
                select_by: match self.select_by {
                    SelectBy::Header => "header",
                    SelectBy::Topic => "topic",
                },
                target: target.clone(),
            })
        })
    }
    fn publisher(&self, p: usize) -> Result<Box<dyn Publisher>, TransportError> {
        let rt = client_runtime(&self.target(), "AMQP")?;
        let (conn, ch) = self.open(&rt, &format!("oemputx-publisher-{p}"))?;
        let keys = (0..self.plan.symbols)
            .map(|s| self.routing_key(s))
            .collect();
        let names = (0..self.plan.symbols)
            .map(|s| self.plan.symbol_name(s))
            .collect();
        Ok(Box::new(RabbitPublisher {
            rt,
            conn: Some(conn),
            ch: Some(ch),
            exchange: self.plan.topic.clone(),
            keys,
            names,
            persistent: self.persistent,
            target: self.target(),
        }))
    }
    fn subscriber(
        &self,
        i: usize,
        block: Range<u16>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        self.open_subscriber(i, block, QueueDeclareArguments::exclusive_server_named())
    }
    fn competitor(&self, i: usize) -> Result<Box<dyn Subscriber>, TransportError> {
        // One queue all competitors consume from, gone with the last of them.
        let mut shared = QueueDeclareArguments::new(&format!("{}.competing", self.plan.topic));
        shared.auto_delete(true);
        self.open_subscriber(i, 0..self.plan.symbols, shared.finish())
    }
    fn transport(&self) -> &'static str {
        "amqp"
    }
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@rabbitmq"]
    }
}

impl RabbitPubSub {
    /// A subscriber on the queue `queue` declares, bound to each symbol of `block`.
    fn open_subscriber(
        &self,
        i: usize,
        block: Range<u16>,
        queue: QueueDeclareArguments,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        let target = self.target();
        let rt = client_runtime(&target, "AMQP")?;
        let (conn, ch) = self.open(&rt, &format!("oemputx-subscriber-{i}"))?;
        let (queue, rx) = match rt.block_on(self.bind_and_consume(&ch, i, block, queue, &target)) {
            Ok(got) => got,
            Err(e) => {
                // amqprs spawns on drop: inside the runtime.
                let _inside = rt.enter();
                drop((ch, conn));
                return Err(e);
            }
        };
        Ok(Box::new(RabbitSubscriber {
            rt: std::sync::Arc::new(rt),
            conn: Some(conn),
            ch: Some(ch),
            rx,
            queue,
            ack: self.ack,
            unacked: None,
            since_ack: 0,
            plan: self.plan.clone(),
            target,
        }))
    }

    /// The queue `queue` declares, bound to each symbol of `block`, consumed.
    async fn bind_and_consume(
        &self,
        ch: &Channel,
        i: usize,
        block: Range<u16>,
        queue: QueueDeclareArguments,
        target: &str,
    ) -> Result<(String, UnboundedReceiver<ConsumerMessage>), TransportError> {
        let err = |what: &str, e: amqprs::error::Error| TransportError::broker(target, what, e);
        let (queue, _, _) = ch
            .queue_declare(queue)
            .await
            .map_err(|e| err("declaring a subscriber queue", e))?
            .ok_or_else(|| {
                TransportError::broker(target, "declaring a subscriber queue", "no reply")
            })?;
        for s in block {
            let mut bind = QueueBindArguments::new(&queue, &self.plan.topic, &self.routing_key(s));
            if self.select_by == SelectBy::Header {
                let mut args = FieldTable::new();
                field(&mut args, "x-match", "all");
                field(&mut args, "symbol", &self.plan.symbol_name(s));
                bind.arguments = args;
            }
            ch.queue_bind(bind)
                .await
                .map_err(|e| err("binding a subscriber queue", e))?;
        }
        if self.ack != Ack::None {
            ch.basic_qos(BasicQosArguments::new(0, 1000, false))
                .await
                .map_err(|e| err("setting prefetch", e))?;
        }
        let consume = BasicConsumeArguments::new(&queue, &format!("oemputx-subscriber-{i}"))
            .manual_ack(self.ack != Ack::None)
            .finish();
        let (_, rx) = ch
            .basic_consume_rx(consume)
            .await
            .map_err(|e| err("consuming", e))?;
        Ok((queue, rx))
    }
}

struct RabbitPublisher {
    rt: Runtime,
    /// `None` only after close; dropped inside the runtime (amqprs spawns on drop).
    conn: Option<Connection>,
    ch: Option<Channel>,
    exchange: String,
    keys: Vec<String>,
    names: Vec<String>,
    persistent: bool,
    target: String,
}

impl Publisher for RabbitPublisher {
    fn publish(&mut self, stamp: Stamp, body: &[u8]) -> Result<(), TransportError> {
        let i = usize::from(stamp.symbol);
        let mut headers = FieldTable::new();
        field(&mut headers, "symbol", &self.names[i]);
        field(&mut headers, "seq", &stamp.seq.to_string());
        field(&mut headers, "ts_ns", &stamp.ts_ns.to_string());
        field(&mut headers, "publisher", &stamp.publisher.to_string());
        let mut props = BasicProperties::default();
        props.with_headers(headers);
        if self.persistent {
            props.with_delivery_mode(amqprs::DELIVERY_MODE_PERSISTENT);
        }
        let args = BasicPublishArguments::new(&self.exchange, &self.keys[i]);
        let Some(ch) = &self.ch else {
            return Err(TransportError::ConnectionLost {
                target: self.target.clone(),
                why: "the publisher is closed".into(),
            });
        };
        self.rt
            .block_on(async {
                let sent = ch.basic_publish(props.finish(), body.to_vec(), args).await;
                // Let the connection's writer send it now, not at the next wait.
                tokio::task::yield_now().await;
                sent
            })
            .map_err(|e| TransportError::ConnectionLost {
                target: self.target.clone(),
                why: format!("publishing: {e}"),
            })
    }
    fn pause(&mut self, d: Duration) {
        super::pause_then_drive(&self.rt, d);
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let (ch, conn) = (self.ch.take(), self.conn.take());
        self.rt.block_on(async {
            // Closing the channel waits for what was published on it to be sent.
            if let Some(ch) = ch {
                let _ = ch.close().await;
            }
            if let Some(conn) = conn {
                let _ = conn.close().await;
            }
        });
        Ok(())
    }
}

impl Drop for RabbitPublisher {
    fn drop(&mut self) {
        let _inside = self.rt.enter();
        self.ch.take();
        self.conn.take();
    }
}

struct RabbitSubscriber {
    /// Shared so that a get can borrow the subscriber while the runtime runs it.
    rt: std::sync::Arc<Runtime>,
    /// `None` only after close; dropped inside the runtime (amqprs spawns on drop).
    conn: Option<Connection>,
    ch: Option<Channel>,
    rx: UnboundedReceiver<ConsumerMessage>,
    /// The queue it consumes (server-named, exclusive: only this connection may ask its
    /// depth).
    queue: String,
    ack: Ack,
    /// The last delivery tag not yet acknowledged (client mode).
    unacked: Option<u64>,
    since_ack: u64,
    plan: super::plan::Plan,
    target: String,
}

impl RabbitSubscriber {
    async fn ack_up_to(&mut self, tag: u64) -> Result<(), TransportError> {
        let Some(ch) = &self.ch else {
            return Ok(());
        };
        ch.basic_ack(BasicAckArguments::new(tag, true))
            .await
            .map_err(|e| TransportError::ConnectionLost {
                target: self.target.clone(),
                why: format!("acknowledging: {e}"),
            })
    }
}

impl Drop for RabbitSubscriber {
    fn drop(&mut self) {
        let _inside = self.rt.enter();
        self.ch.take();
        self.conn.take();
    }
}

/// A header's text, if it has one.
fn text(h: Option<&FieldTable>, k: &str) -> Option<String> {
    let name = k.try_into().ok()?;
    match h?.get(&name)? {
        FieldValue::S(s) => Some(s.to_string()),
        other => Some(other.to_string()),
    }
}

impl Subscriber for RabbitSubscriber {
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError> {
        let rt = self.rt.clone();
        rt.block_on(async {
            let Ok(m) = tokio::time::timeout(wait, self.rx.recv()).await else {
                return Ok(None);
            };
            let m = m.ok_or_else(|| TransportError::ConnectionLost {
                target: self.target.clone(),
                why: "the broker ended the consumer".into(),
            })?;
            let tag = m.deliver.as_ref().map(|d| d.delivery_tag());
            match (self.ack, tag) {
                (Ack::Auto, Some(t)) => self.ack_up_to(t).await?,
                (Ack::Client, Some(t)) => {
                    self.since_ack += 1;
                    self.unacked = Some(t);
                    if self.since_ack >= CLIENT_ACK_BATCH {
                        self.ack_up_to(t).await?;
                        (self.since_ack, self.unacked) = (0, None);
                    }
                }
                _ => {}
            }
            let h = m.basic_properties.as_ref().and_then(|p| p.headers());
            let num = |k: &str| text(h, k).and_then(|v| v.parse::<u64>().ok());
            Ok(Some(Stamp {
                publisher: num("publisher").unwrap_or(0) as u32,
                seq: num("seq").unwrap_or(u64::MAX),
                symbol: text(h, "symbol")
                    .and_then(|s| self.plan.symbol_of(&s))
                    .unwrap_or(u16::MAX),
                ts_ns: num("ts_ns").unwrap_or(0),
            }))
        })
    }
    fn broker_depth(&mut self) -> Option<u64> {
        let ch = self.ch.as_ref()?;
        let passive = QueueDeclareArguments::new(&self.queue)
            .passive(true)
            .finish();
        let declared = self.rt.block_on(ch.queue_declare(passive)).ok()??;
        Some(u64::from(declared.1))
    }
    fn close(mut self: Box<Self>) {
        let rt = self.rt.clone();
        rt.block_on(async {
            if let Some(t) = self.unacked.take() {
                let _ = self.ack_up_to(t).await;
            }
            if let Some(ch) = self.ch.take() {
                let _ = ch.close().await;
            }
            if let Some(conn) = self.conn.take() {
                let _ = conn.close().await;
            }
        });
    }
}
