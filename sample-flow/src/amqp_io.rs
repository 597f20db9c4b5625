//! The flow's AMQP 0-9-1 side (RabbitMQ): a consumer on the input queue with manual
//! acknowledgement, replies to `reply_to` with the request's correlation id.

use super::engine::{FlowIo, FlowOptions, Incoming};
use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, BasicQosArguments, Channel,
    ConsumerMessage, QueueDeclareArguments,
};
use amqprs::connection::Connection;
use anyhow::Context;
use oemputx::transport::amqp::url::AmqpEndpoint;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// A delivery's properties and tag.
pub struct Meta {
    props: BasicProperties,
    tag: Option<u64>,
}

/// One instance's connection, channel and consumer.
pub struct AmqpIo {
    conn: Connection,
    ch: Channel,
    rx: UnboundedReceiver<ConsumerMessage>,
    queue: String,
}

impl AmqpIo {
    pub async fn open(i: usize, ep: &AmqpEndpoint, o: &FlowOptions) -> anyhow::Result<AmqpIo> {
        let target = ep.redacted();
        let open = oemputx::transport::amqp::connection_args(ep, &format!("sample-flow-{i}"))
            .map_err(|e| anyhow::anyhow!("{target}: {e}"))?;
        let conn = tokio::time::timeout(Duration::from_secs(5), Connection::open(&open))
            .await
            .map_err(|_| anyhow::anyhow!("cannot reach {target}: no answer within 5 s; check that the broker runs and --url is right"))?
            .map_err(|e| anyhow::anyhow!("cannot connect to {target}: {e}; check that the broker runs and the user and password in --url"))?;
        let ch = conn.open_channel(None).await.context("opening a channel")?;
        // Without a callback amqprs ignores the broker's Basic.Cancel (the input queue
        // deleted): the flow would keep running, consuming nothing. With it the consumer's
        // stream ends, and the loop exits with an error.
        ch.register_callback(CancelEndsTheConsumer)
            .await
            .context("registering the channel callback")?;
        let queue = o.input_queue.as_str();
        ch.queue_declare(QueueDeclareArguments::durable_client_named(queue))
            .await
            .with_context(|| format!("declaring input queue '{queue}'"))?;
        if let Some(audit) = &o.audit_queue {
            ch.queue_declare(QueueDeclareArguments::durable_client_named(audit))
                .await
                .with_context(|| format!("declaring audit queue '{audit}'"))?;
        }
        ch.basic_qos(BasicQosArguments::new(0, o.prefetch, false))
            .await
            .context("setting prefetch")?;
        let consume = BasicConsumeArguments::new(queue, &format!("sample-flow-{i}"))
            .manual_ack(true)
            .finish();
        let (_tag, rx) = ch
            .basic_consume_rx(consume)
            .await
            .with_context(|| format!("consuming from '{queue}'"))?;
        Ok(AmqpIo {
            conn,
            ch,
            rx,
            queue: queue.to_string(),
        })
    }
}

impl FlowIo for AmqpIo {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Meta>>> {
        match tokio::time::timeout(wait, self.rx.recv()).await {
            Err(_) => Ok(None),
            // The receiver ends when the broker cancels the consumer or closes the channel,
            // and also when the client cannot read a delivery: RabbitMQ hands a message sent
            // over AMQP 1.0 to a 0-9-1 consumer with headers amqprs does not decode (seen
            // with oemputx --qmgr amqp10:// on this flow's queue), and the flow died with
            // only "the broker closed the consumer".
            Ok(None) => Err(anyhow::anyhow!(
                "the consumer on '{}' stopped: the broker cancelled it or closed the channel, or a message could not be read (a request sent over AMQP 1.0 reaches an AMQP 0-9-1 consumer with headers this client cannot decode: serve that queue with sample-flow --url amqp10://…, and give AMQP 1.0 runs a queue of their own)",
                self.queue
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
                    },
                }))
            }
        }
    }

    async fn reply(&mut self, req: &Incoming<Meta>, body: Vec<u8>) -> anyhow::Result<bool> {
        let Some(reply_to) = req.meta.props.reply_to() else {
            return Ok(false);
        };
        let mut props = BasicProperties::default();
        if let Some(c) = &req.correl {
            props.with_correlation_id(c);
        }
        if let Some(mode) = req.meta.props.delivery_mode() {
            props.with_delivery_mode(mode);
        }
        self.ch
            .basic_publish(
                props.finish(),
                body,
                BasicPublishArguments::new("", reply_to),
            )
            .await
            .context("publishing a reply")?;
        Ok(true)
    }

    async fn commit(&mut self, req: &Incoming<Meta>) -> anyhow::Result<()> {
        if let Some(tag) = req.meta.tag {
            self.ch
                .basic_ack(BasicAckArguments::new(tag, false))
                .await
                .context("acknowledging a request")?;
        }
        Ok(())
    }

    async fn audit(&mut self, req: &Incoming<Meta>, to: &str) -> anyhow::Result<()> {
        self.ch
            .basic_publish(
                req.meta.props.clone(),
                req.body.clone(),
                BasicPublishArguments::new("", to),
            )
            .await
            .with_context(|| format!("publishing the audit copy to '{to}'"))
    }

    async fn close(self) {
        let _ = self.ch.close().await;
        let _ = self.conn.close().await;
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
