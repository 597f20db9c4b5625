//! Pub/sub on MQTT 5 (Mosquitto here) through rumqttc: a topic per symbol (`ticker/S07`);
//! a subscriber subscribes to each topic of its block, so the broker selects. The stamp
//! travels in MQTT 5 user properties (`symbol`, `seq`, `ts_ns`, `publisher`), MQTT's
//! headers. `--ack none` subscribes at QoS 0; `auto` and `client` at QoS 1 (the client
//! acknowledges each message as it arrives: MQTT has no batched acknowledgement).
//! `--persistent` publishes at QoS 1 (the broker acknowledges each publish).

use super::{Ack, Broker, Publisher, Stamp, Subscriber};
use crate::transport::mqtt::refusal::{check_puback, check_suback};
use crate::transport::mqtt::{lost, next_publish};
use crate::transport::{TransportError, client_runtime};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, EventLoop};
use std::ops::Range;
use std::time::Duration;
use tokio::runtime::Runtime;

pub use crate::transport::mqtt::url::{DEFAULT_PORT, MqttEndpoint};
/// Requests the client may queue before a publish waits.
const CLIENT_QUEUE: usize = 1000;

/// MQTT as a pub/sub broker.
pub struct MqttPubSub {
    pub endpoint: MqttEndpoint,
    pub plan: super::plan::Plan,
    pub ack: Ack,
    pub persistent: bool,
}

/// Pub/sub on an `mqtt://` endpoint (None for another transport's).
pub(super) fn broker(
    endpoint: &crate::transport::Endpoint,
    o: &super::BrokerOptions,
) -> Option<Result<std::sync::Arc<dyn Broker>, super::Unsupported>> {
    let endpoint = endpoint.downcast::<MqttEndpoint>()?;
    Some(Ok(std::sync::Arc::new(MqttPubSub {
        endpoint: endpoint.clone(),
        plan: o.plan.clone(),
        ack: o.ack,
        persistent: o.persistent,
    })))
}

impl MqttPubSub {
    /// A connected client: the event loop has seen the broker's CONNACK.
    fn connect(&self, rt: &Runtime, id: &str) -> Result<(AsyncClient, EventLoop), TransportError> {
        let ep = &self.endpoint;
        let target = ep.redacted();
        let options = ep.client_options(format!("{id}-{}", std::process::id()));
        let (client, mut events) = AsyncClient::new(options, CLIENT_QUEUE);
        rt.block_on(async {
            let connack = async {
                loop {
                    match events.poll().await {
                        Ok(Event::Incoming(Packet::ConnAck(_))) => return Ok(()),
                        Ok(_) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
            };
            let bound = crate::transport::mqtt::CONNECT_TIMEOUT;
            crate::transport::handshake(&target, bound, connack, || TransportError::Unreachable {
                target: target.clone(),
                why: format!("no CONNACK within {} s", bound.as_secs()),
            })
            .await?
            .map_err(|why| TransportError::Unreachable {
                target: target.clone(),
                why,
            })
        })?;
        Ok((client, events))
    }

    fn topic(&self, symbol: u16) -> String {
        format!("{}/{}", self.plan.topic, self.plan.symbol_name(symbol))
    }

    /// A subscriber to `topics`, subscribed (SUBACK seen) before this returns.
    fn open_subscriber(
        &self,
        i: usize,
        topics: Vec<String>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        let target = self.describe();
        let rt = client_runtime(&target, "MQTT")?;
        let (client, mut events) = self.connect(&rt, &format!("oemputx-subscriber-{i}"))?;
        let qos = match self.ack {
            Ack::None => QoS::AtMostOnce,
            Ack::Auto | Ack::Client => QoS::AtLeastOnce,
        };
        let filters: Vec<Filter> = topics.iter().map(|t| Filter::new(t, qos)).collect();
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        rt.block_on(async {
            client
                .subscribe_many(filters)
                .await
                .map_err(|e| lost(&target, format!("subscribing: {e}")))?;
            let suback = async {
                loop {
                    match events.poll().await {
                        Ok(Event::Incoming(Packet::SubAck(ack))) => {
                            return check_suback(&target, &names, &ack);
                        }
                        Ok(_) => {}
                        Err(e) => return Err(lost(&target, e)),
                    }
                }
            };
            let bound = crate::transport::mqtt::CONNECT_TIMEOUT;
            crate::transport::handshake(&target, bound, suback, || {
                lost(&target, format!("no SUBACK within {} s", bound.as_secs()))
            })
            .await?
        })?;
        Ok(Box::new(MqttSubscriber {
            rt,
            client,
            events,
            plan: self.plan.clone(),
            target,
        }))
    }
}

impl Broker for MqttPubSub {
    fn describe(&self) -> String {
        self.endpoint.redacted()
    }
    fn modes(&self) -> String {
        let ack = match self.ack {
            Ack::None => "none (subscriptions at QoS 0)",
            Ack::Auto | Ack::Client => {
                "QoS 1 subscriptions (each message acknowledged as it arrives; MQTT has no batched acknowledgement)"
            }
        };
        let publish = if self.persistent { "QoS 1" } else { "QoS 0" };
        format!(
            "ack {ack}; publishes at {publish}; selection by topic {}/SNN (a subscription per symbol)",
            self.plan.topic
        )
    }
    fn prepare(&self) -> Result<(), TransportError> {
        let rt = client_runtime(&self.describe(), "MQTT")?;
        let (client, mut events) = self.connect(&rt, "oemputx-pubsub-setup")?;
        rt.block_on(async {
            let _ = client.disconnect().await;
            let _ = tokio::time::timeout(Duration::from_secs(1), events.poll()).await;
        });
        Ok(())
    }
    fn publisher(&self, p: usize) -> Result<Box<dyn Publisher>, TransportError> {
        let target = self.describe();
        let rt = client_runtime(&target, "MQTT")?;
        let (client, events) = self.connect(&rt, &format!("oemputx-publisher-{p}"))?;
        Ok(Box::new(MqttPublisher {
            rt: std::sync::Arc::new(rt),
            client,
            events,
            topics: (0..self.plan.symbols).map(|s| self.topic(s)).collect(),
            names: (0..self.plan.symbols)
                .map(|s| self.plan.symbol_name(s))
                .collect(),
            qos: if self.persistent {
                QoS::AtLeastOnce
            } else {
                QoS::AtMostOnce
            },
            target,
        }))
    }
    fn subscriber(
        &self,
        i: usize,
        block: Range<u16>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        self.open_subscriber(i, block.map(|s| self.topic(s)).collect())
    }
    fn competitor(&self, i: usize) -> Result<Box<dyn Subscriber>, TransportError> {
        // MQTT 5 shared subscriptions: the group's members share the messages.
        let topics = (0..self.plan.symbols)
            .map(|s| format!("$share/oemputx/{}", self.topic(s)))
            .collect();
        self.open_subscriber(i, topics)
    }
    fn transport(&self) -> &'static str {
        "mqtt"
    }
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@mosquitto"]
    }
}

struct MqttPublisher {
    /// Shared so that a publish can borrow the publisher while the runtime runs it.
    rt: std::sync::Arc<Runtime>,
    client: AsyncClient,
    events: EventLoop,
    topics: Vec<String>,
    names: Vec<String>,
    qos: QoS,
    target: String,
}

impl MqttPublisher {
    /// Run the event loop until it has written publish packets out (and, at QoS 1, taken
    /// the broker's acknowledgements in), or `idle` passes with nothing to do. A PUBACK
    /// refusing the publish to `topic` is an error at once.
    async fn drive(&mut self, idle: Duration, topic: &str) -> Result<(), TransportError> {
        loop {
            match tokio::time::timeout(idle, self.events.poll()).await {
                Err(_) => return Ok(()),
                Ok(Ok(Event::Outgoing(rumqttc::Outgoing::Publish(_)))) => {
                    if self.qos == QoS::AtMostOnce {
                        return Ok(());
                    }
                }
                Ok(Ok(Event::Incoming(Packet::PubAck(ack)))) => {
                    return check_puback(&self.target, topic, &ack);
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(lost(&self.target, e)),
            }
        }
    }
}

impl Publisher for MqttPublisher {
    fn publish(&mut self, stamp: Stamp, body: &[u8]) -> Result<(), TransportError> {
        let i = usize::from(stamp.symbol);
        let properties = PublishProperties {
            user_properties: vec![
                ("symbol".into(), self.names[i].clone()),
                ("seq".into(), stamp.seq.to_string()),
                ("ts_ns".into(), stamp.ts_ns.to_string()),
                ("publisher".into(), stamp.publisher.to_string()),
            ],
            ..PublishProperties::default()
        };
        let (topic, payload, qos) = (self.topics[i].clone(), body.to_vec(), self.qos);
        let rt = self.rt.clone();
        rt.block_on(async {
            self.client
                .publish_with_properties(topic.clone(), qos, false, payload, properties)
                .await
                .map_err(|e| lost(&self.target, format!("publishing: {e}")))?;
            // The event loop is what writes it: run it until the publish is out.
            self.drive(Duration::from_secs(5), &topic).await
        })
    }
    fn pause(&mut self, d: Duration) {
        // The thread's sleep (tokio's timer rounds up to whole milliseconds). Nothing needs
        // the event loop meanwhile: the last publish is out, and what comes in (a QoS 1
        // acknowledgement, a ping's answer) is taken at the next publish.
        std::thread::sleep(d);
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let rt = self.rt.clone();
        rt.block_on(async {
            let _ = self.client.disconnect().await;
            let _ = self.drive(Duration::from_millis(200), "").await;
        });
        Ok(())
    }
}

struct MqttSubscriber {
    rt: Runtime,
    client: AsyncClient,
    events: EventLoop,
    plan: super::plan::Plan,
    target: String,
}

impl Subscriber for MqttSubscriber {
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError> {
        let (events, plan, target) = (&mut self.events, &self.plan, &self.target);
        self.rt.block_on(async {
            // A subscriber publishes nothing: no PUBACK is its own.
            let Some(p) = next_publish(events, wait, target, "").await? else {
                return Ok(None);
            };
            let props = p
                .properties
                .map(|pp| pp.user_properties)
                .unwrap_or_default();
            let prop = |k: &str| props.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            let num = |k: &str| prop(k).and_then(|v| v.parse::<u64>().ok());
            Ok(Some(Stamp {
                publisher: num("publisher").unwrap_or(0) as u32,
                seq: num("seq").unwrap_or(u64::MAX),
                symbol: prop("symbol")
                    .and_then(|s| plan.symbol_of(&s))
                    .unwrap_or(u16::MAX),
                ts_ns: num("ts_ns").unwrap_or(0),
            }))
        })
    }
    fn close(self: Box<Self>) {
        let MqttSubscriber {
            rt,
            client,
            mut events,
            ..
        } = *self;
        rt.block_on(async {
            let _ = client.disconnect().await;
            let _ = tokio::time::timeout(Duration::from_millis(200), events.poll()).await;
        });
    }
}
