//! The flow's AMQP 0-9-1 side (RabbitMQ): a consumer on the input queue with manual
//! acknowledgement, replies to `reply_to` with the request's correlation id.
//!
//! On a cluster's node list (`amqp://u:p@h1:5672/vhost,h2:5672`) it connects to the first
//! node that answers, and when its connection breaks it connects again, node by node, for at
//! most [`RECONNECT_FOR`]: the requests it had not acknowledged go back to the queue, and
//! their replies may come twice (oemputx counts the second as duplicated).

use super::engine::{FlowIo, FlowOptions, Incoming, Replied};
use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, BasicQosArguments, Channel,
    ConsumerMessage, QueueDeclareArguments,
};
use amqprs::connection::Connection;
use anyhow::Context;
use oemputx::transport::QueueType;
use oemputx::transport::amqp::url::AmqpEndpoint;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// How long a broken connection is tried again before the flow gives up.
const RECONNECT_FOR: Duration = Duration::from_secs(60);
/// One node's connect, at most.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// A delivery's properties and tag, and the connection it came on.
pub struct Meta {
    props: BasicProperties,
    tag: Option<u64>,
    link: u64,
}

/// One connection's channel and consumer.
struct Link {
    conn: Connection,
    ch: Channel,
    rx: UnboundedReceiver<ConsumerMessage>,
    node: String,
}

/// What a connection is opened with, kept to open it again.
struct Setup {
    i: usize,
    ep: AmqpEndpoint,
    queue: String,
    audit: Option<String>,
    queue_type: Option<QueueType>,
    prefetch: u16,
    /// SIGTERM or Ctrl-C: a reconnect under way ends at once.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// One instance's connection, channel and consumer, and how to open them again.
pub struct AmqpIo {
    setup: Setup,
    link: Link,
    /// Which connection this is (0 the first): a delivery's tag is only its own's.
    generation: u64,
}

impl AmqpIo {
    pub async fn open(i: usize, ep: &AmqpEndpoint, o: &FlowOptions) -> anyhow::Result<AmqpIo> {
        let setup = Setup {
            i,
            ep: ep.clone(),
            queue: o.input_queue.clone(),
            audit: o.audit_queue.clone(),
            queue_type: o.queue_type,
            prefetch: o.prefetch,
            stop: o.stop.clone(),
        };
        let link = setup.connect_any().await?;
        Ok(AmqpIo {
            setup,
            link,
            generation: 0,
        })
    }

    /// The connection broke: connect again, node by node, with a growing pause, for at most
    /// [`RECONNECT_FOR`]. A stop ends it at once, the old link kept: the loop then sees the
    /// stop and ends.
    async fn reconnect(&mut self) -> anyhow::Result<()> {
        let from = self.link.node.clone();
        let until = Instant::now() + RECONNECT_FOR;
        let mut pause = Duration::from_millis(100);
        loop {
            let attempt = tokio::select! {
                got = self.setup.connect_any() => got,
                () = self.setup.stopped() => return Ok(()),
            };
            match attempt {
                Ok(link) => {
                    eprintln!(
                        "sample-flow[{}]: the connection to {from} broke; connected again to {}",
                        self.setup.i, link.node
                    );
                    let old = std::mem::replace(&mut self.link, link);
                    self.generation += 1;
                    drop(old);
                    return Ok(());
                }
                // A refused login or queue: no retry cures it.
                Err(e) if !e.is::<Unreached>() => {
                    return Err(e.context(format!(
                        "the connection to {from} broke and a node refused a new one"
                    )));
                }
                Err(e) if Instant::now() + pause >= until => {
                    return Err(e.context(format!(
                        "the connection to {from} broke and no node took a new one within {} s",
                        RECONNECT_FOR.as_secs()
                    )));
                }
                Err(_) => {
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = self.setup.stopped() => return Ok(()),
                    }
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// Whether an error on the link was its connection breaking (not the broker refusing).
    fn broken(&self) -> bool {
        !self.link.conn.is_open()
    }
}

/// A node that did not answer (not reachable, or silent): the next is tried. Anything else
/// (a refused login, a queue of another kind) ends the search.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unreached(String);

impl Setup {
    /// Once the flow is asked to stop (looked at every 50 ms).
    async fn stopped(&self) {
        while !self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The first of the endpoint's nodes that takes a connection, channel and consumer.
    async fn connect_any(&self) -> anyhow::Result<Link> {
        let mut first = None;
        for node in &self.ep.nodes {
            match self.connect(&self.ep.at(node)).await {
                Ok(link) => return Ok(link),
                Err(e) if e.is::<Unreached>() => {
                    first.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(first.unwrap_or_else(|| anyhow::anyhow!("the URL names no node")))
    }

    /// One node: the port reached, then the login, channel and consumer, each bounded.
    async fn connect(&self, ep: &AmqpEndpoint) -> anyhow::Result<Link> {
        let node = if ep.host.contains(':') {
            format!("[{}]:{}", ep.host, ep.port)
        } else {
            format!("{}:{}", ep.host, ep.port)
        };
        let unreached = |why: String| {
            Unreached(format!(
                "cannot connect to {} (node {node}): {why}; check that the broker runs and --url is right",
                ep.redacted()
            ))
        };
        tokio::time::timeout(
            CONNECT_WITHIN,
            tokio::net::TcpStream::connect((ep.host.as_str(), ep.port)),
        )
        .await
        .map_err(|_| unreached("no answer within 5 s".into()))?
        .map_err(|e| unreached(e.to_string()))?;
        // The port answered: a broker that then stays silent is one not to wait on either.
        tokio::time::timeout(CONNECT_WITHIN * 2, self.open_link(ep, node.clone()))
            .await
            .map_err(|_| unreached("no login, channel or consumer within 10 s".into()))?
    }

    async fn open_link(&self, ep: &AmqpEndpoint, node: String) -> anyhow::Result<Link> {
        let target = ep.redacted();
        let i = self.i;
        let open = oemputx::transport::amqp::connection_args(ep, &format!("sample-flow-{i}"))
            .map_err(|e| anyhow::anyhow!("{target}: {e}"))?;
        let conn = match Connection::open(&open).await {
            Ok(conn) => conn,
            // A port that accepts and then closes looks like a refused login from inside the
            // client: a node whose port does not speak AMQP (a proxy cut, a node going down)
            // is one to pass, a broker that answers and closes is a refusal.
            Err(e) if !oemputx::transport::amqp::speaks_amqp(ep).await => {
                return Err(
                    Unreached(format!("cannot connect to {target} (node {node}): {e}")).into(),
                );
            }
            Err(e) => anyhow::bail!(
                "cannot connect to {target}: {e}; check the user and password in --url"
            ),
        };
        let ch = conn.open_channel(None).await.context("opening a channel")?;
        // Without a callback amqprs ignores the broker's Basic.Cancel (the input queue
        // deleted): the flow would keep running, consuming nothing. With it the consumer's
        // stream ends, and the loop exits with an error.
        ch.register_callback(CancelEndsTheConsumer)
            .await
            .context("registering the channel callback")?;
        let queue = self.queue.as_str();
        let kind = oemputx::transport::amqp::queue_arguments(self.queue_type);
        ch.queue_declare(
            QueueDeclareArguments::durable_client_named(queue)
                .arguments(kind)
                .finish(),
        )
        .await
        .with_context(|| match self.queue_type {
            Some(k) => format!(
                "declaring input queue '{queue}' as a {k} queue (the broker refuses it when a queue of that name is of another kind: delete it, or ask for its kind)"
            ),
            None => format!(
                "declaring input queue '{queue}' (a quorum or stream queue of that name needs --queue-type naming its kind)"
            ),
        })?;
        if let Some(audit) = &self.audit {
            ch.queue_declare(QueueDeclareArguments::durable_client_named(audit))
                .await
                .with_context(|| format!("declaring audit queue '{audit}'"))?;
        }
        ch.basic_qos(BasicQosArguments::new(0, self.prefetch, false))
            .await
            .context("setting prefetch")?;
        let consume = BasicConsumeArguments::new(queue, &format!("sample-flow-{i}"))
            .manual_ack(true)
            .finish();
        let (_tag, rx) = ch
            .basic_consume_rx(consume)
            .await
            .with_context(|| format!("consuming from '{queue}'"))?;
        Ok(Link { conn, ch, rx, node })
    }
}

impl AmqpIo {
    /// Publish on the link. `Ok(false)`: the connection broke under it (and a new one is
    /// open): the request it answers goes back to the queue and comes again, so its reply is
    /// not written on the new one (it would be the first of two).
    async fn publish(
        &mut self,
        props: BasicProperties,
        body: Vec<u8>,
        to: &str,
        what: &str,
    ) -> anyhow::Result<bool> {
        let args = BasicPublishArguments::new("", to);
        match self.link.ch.basic_publish(props, body, args).await {
            Ok(()) => Ok(true),
            Err(_) if self.broken() && self.setup.ep.nodes.len() > 1 => {
                self.reconnect().await.map(|()| false)
            }
            Err(e) => Err(e).context(what.to_string()),
        }
    }
}

impl FlowIo for AmqpIo {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Meta>>> {
        match tokio::time::timeout(wait, self.link.rx.recv()).await {
            Err(_) => Ok(None),
            // The connection broke: the broker puts what was not acknowledged back. Only on
            // a cluster's node list: on one node the error stands (a delivery the client
            // cannot decode also closes the connection, and would come again forever).
            Ok(None) if self.broken() && self.setup.ep.nodes.len() > 1 => {
                self.reconnect().await?;
                Ok(None)
            }
            // The receiver ends when the broker cancels the consumer or closes the channel,
            // and also when the client cannot read a delivery: RabbitMQ hands a message sent
            // over AMQP 1.0 to a 0-9-1 consumer with headers amqprs does not decode (seen
            // with oemputx --qmgr amqp10:// on this flow's queue), and the flow died with
            // only "the broker closed the consumer".
            Ok(None) => Err(anyhow::anyhow!(
                "the consumer on '{}' stopped: the broker cancelled it or closed the channel, or a message could not be read (a request sent over AMQP 1.0 reaches an AMQP 0-9-1 consumer with headers this client cannot decode: serve that queue with sample-flow --url amqp10://…, and give AMQP 1.0 runs a queue of their own)",
                self.setup.queue
            )),
            Ok(Some(msg)) => {
                let props = msg.basic_properties.unwrap_or_default();
                // The correlation id, or the message id (the MQ habit) when it has none.
                let correl = props.correlation_id().or(props.message_id()).cloned();
                Ok(Some(Incoming {
                    body: msg.content.unwrap_or_default(),
                    correl,
                    meta: Meta {
                        tag: msg.deliver.as_ref().map(|d| d.delivery_tag()),
                        props,
                        link: self.generation,
                    },
                }))
            }
        }
    }

    async fn reply(&mut self, req: &Incoming<Meta>, body: Vec<u8>) -> anyhow::Result<Replied> {
        let Some(reply_to) = req.meta.props.reply_to().cloned() else {
            return Ok(Replied::NoReplyTo);
        };
        let mut props = BasicProperties::default();
        if let Some(c) = &req.correl {
            props.with_correlation_id(c);
        }
        if let Some(mode) = req.meta.props.delivery_mode() {
            props.with_delivery_mode(mode);
        }
        // A request of a connection that broke comes again on the new one: answer it then.
        if req.meta.link != self.generation {
            return Ok(Replied::Dropped);
        }
        let sent = self
            .publish(props.finish(), body, &reply_to, "publishing a reply")
            .await?;
        Ok(if sent {
            Replied::Sent
        } else {
            Replied::Dropped
        })
    }

    async fn commit(&mut self, req: &Incoming<Meta>) -> anyhow::Result<()> {
        // A tag of a connection that broke is no longer anyone's: the broker has put that
        // request back already.
        let Some(tag) = req.meta.tag.filter(|_| req.meta.link == self.generation) else {
            return Ok(());
        };
        match self
            .link
            .ch
            .basic_ack(BasicAckArguments::new(tag, false))
            .await
        {
            Ok(()) => Ok(()),
            Err(_) if self.broken() && self.setup.ep.nodes.len() > 1 => self.reconnect().await,
            Err(e) => Err(e).context("acknowledging a request"),
        }
    }

    async fn audit(&mut self, req: &Incoming<Meta>, to: &str) -> anyhow::Result<()> {
        let what = format!("publishing the audit copy to '{to}'");
        // Not written when the connection broke: the request comes again, and so does its copy.
        self.publish(req.meta.props.clone(), req.body.clone(), to, &what)
            .await
            .map(|_| ())
    }

    fn stale(&self, req: &Incoming<Meta>) -> bool {
        req.meta.link != self.generation
    }

    async fn close(self) {
        let _ = self.link.ch.close().await;
        let _ = self.link.conn.close().await;
    }
}

/// The channel callback: accepts the broker's cancel of the consumer (so that its stream
/// ends) and otherwise behaves like amqprs's default.
struct CancelEndsTheConsumer;

#[async_trait::async_trait]
impl amqprs::callbacks::ChannelCallback for CancelEndsTheConsumer {
    async fn close(
        &mut self,
        _channel: &Channel,
        close: amqprs::CloseChannel,
    ) -> Result<(), amqprs::error::Error> {
        eprintln!("sample-flow: the broker closed the channel: {close}");
        Ok(())
    }
    async fn cancel(
        &mut self,
        _channel: &Channel,
        cancel: amqprs::Cancel,
    ) -> Result<(), amqprs::error::Error> {
        eprintln!(
            "sample-flow: the broker cancelled consumer {} (was the input queue deleted?)",
            cancel.consumer_tag()
        );
        Ok(())
    }
    async fn flow(
        &mut self,
        _channel: &Channel,
        active: bool,
    ) -> Result<bool, amqprs::error::Error> {
        Ok(active)
    }
    async fn publish_ack(&mut self, _channel: &Channel, _ack: amqprs::Ack) {}
    async fn publish_nack(&mut self, _channel: &Channel, _nack: amqprs::Nack) {}
    async fn publish_return(
        &mut self,
        _channel: &Channel,
        _ret: amqprs::Return,
        _basic_properties: BasicProperties,
        _content: Vec<u8>,
    ) {
    }
}
