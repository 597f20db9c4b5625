//! The flow's MQTT 5 side (Mosquitto): a shared subscription (`$share/sample-flow/TOPIC`,
//! so that the instances of every sample-flow process on one topic share its requests, as
//! consumers of one queue do) at QoS 1; each reply published to the request's Response
//! Topic with its Correlation Data, at the request's QoS. rumqttc acknowledges a QoS 1
//! request as it arrives: MQTT keeps no request for redelivery once acknowledged, so a flow
//! that dies mid-message loses it (the driver counts it as timed out).

use super::engine::{FlowIo, FlowOptions, Incoming, Replied};
use anyhow::Context;
use oemputx::transport::mqtt::url::MqttEndpoint;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, EventLoop};
use std::time::Duration;

/// The shared subscription's group.
pub const SHARE_GROUP: &str = "sample-flow";

/// One instance's client.
pub struct MqttIo {
    client: AsyncClient,
    events: EventLoop,
    topic: String,
    /// Requests that arrived while a reply was being written: the event loop hands them out
    /// in whatever order the socket gives, so they wait here for the next `next`.
    early: std::collections::VecDeque<rumqttc::v5::mqttbytes::v5::Publish>,
}

/// What a request carries for its reply.
pub struct Meta {
    response_topic: Option<String>,
    correlation: Option<bytes::Bytes>,
    qos: QoS,
}

impl MqttIo {
    pub async fn open(i: usize, ep: &MqttEndpoint, o: &FlowOptions) -> anyhow::Result<MqttIo> {
        let target = ep.redacted();
        let options = ep.client_options(format!("sample-flow-{}-{i}", std::process::id()));
        let (client, mut events) = AsyncClient::new(options, 1000);
        let filter = format!("$share/{SHARE_GROUP}/{}", o.input_queue);
        let subscribed = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match events.poll().await? {
                    Event::Incoming(Packet::ConnAck(_)) => {
                        client.subscribe(filter.clone(), QoS::AtLeastOnce).await?;
                    }
                    Event::Incoming(Packet::SubAck(_)) => return anyhow::Ok(()),
                    _ => {}
                }
            }
        })
        .await;
        match subscribed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("cannot connect to {target}: {e}"),
            Err(_) => anyhow::bail!("cannot connect to {target}: no CONNACK or SUBACK within 5 s"),
        }
        Ok(MqttIo {
            client,
            events,
            topic: o.input_queue.clone(),
            early: std::collections::VecDeque::new(),
        })
    }
}

impl FlowIo for MqttIo {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Meta>>> {
        let (events, topic) = (&mut self.events, &self.topic);
        let early = self.early.pop_front();
        let got = tokio::time::timeout(wait, async {
            if let Some(p) = early {
                return Ok(p);
            }
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::Publish(p))) => return Ok(p),
                    Ok(_) => {}
                    Err(e) => {
                        return Err(anyhow::anyhow!(
                            "the connection for '{topic}' was lost: {e}"
                        ));
                    }
                }
            }
        })
        .await;
        let Ok(p) = got else { return Ok(None) };
        let p = p?;
        let props = p.properties.unwrap_or_default();
        let correl = props
            .correlation_data
            .as_ref()
            .map(|d| String::from_utf8_lossy(d).into_owned());
        Ok(Some(Incoming {
            body: p.payload.to_vec(),
            correl,
            meta: Meta {
                response_topic: props.response_topic,
                correlation: props.correlation_data,
                qos: p.qos,
            },
        }))
    }

    async fn reply(&mut self, req: &Incoming<Meta>, body: Vec<u8>) -> anyhow::Result<Replied> {
        let Some(to) = req.meta.response_topic.clone() else {
            return Ok(Replied::NoReplyTo);
        };
        let properties = PublishProperties {
            correlation_data: req.meta.correlation.clone(),
            ..PublishProperties::default()
        };
        self.client
            .publish_with_properties(to, req.meta.qos, false, body, properties)
            .await
            .context("publishing a reply")?;
        // The event loop writes it: run it until the publish is out.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            match tokio::time::timeout_at(deadline, self.events.poll()).await {
                Err(_) => anyhow::bail!("a reply was not written within 5 s"),
                Ok(Ok(Event::Outgoing(rumqttc::Outgoing::Publish(_)))) => return Ok(Replied::Sent),
                Ok(Ok(Event::Incoming(Packet::Publish(p)))) => self.early.push_back(p),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(anyhow::anyhow!("publishing a reply: {e}")),
            }
        }
    }

    async fn commit(&mut self, _req: &Incoming<Meta>) -> anyhow::Result<()> {
        // rumqttc acknowledged the request when it arrived.
        Ok(())
    }

    async fn audit(&mut self, req: &Incoming<Meta>, to: &str) -> anyhow::Result<()> {
        self.client
            .publish(to.to_string(), QoS::AtMostOnce, false, req.body.clone())
            .await
            .context("publishing the audit copy")
    }

    async fn close(mut self) {
        let _ = self.client.disconnect().await;
        let _ = tokio::time::timeout(Duration::from_millis(200), self.events.poll()).await;
    }
}
