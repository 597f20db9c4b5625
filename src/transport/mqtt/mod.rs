//! MQTT 5 for put/get (Mosquitto here) through rumqttc: request/reply is in the protocol.
//!
//! **The loop.** Each task has its own client and event loop on its own current-thread
//! runtime, subscribed to a reply topic of its own (`oemputx/reply/PID/TASK/NONCE`). Each
//! request is published to the request topic (`--request-queue`) with MQTT 5's Response
//! Topic (the task's reply topic) and Correlation Data (the correlation id); a responder
//! publishes its reply to the Response Topic with the same Correlation Data, which the
//! driver matches. QoS 0, or QoS 1 under `--persistent` (the broker acknowledges each
//! publish: PUBACK; the reply subscription is QoS 1 too). A request is queued by `put` and
//! written by the event loop while `get` waits, as every async transport here does.
//!
//! **Queues.** MQTT has topics, not queues: a request published while no responder is
//! subscribed is lost (there is no --declare; a responder subscribes first). Several
//! responders share requests through a shared subscription (`$share/GROUP/TOPIC`, MQTT 5),
//! as sample-flow's instances do.

pub mod refusal;
pub mod url;

use super::endpoint::{EndpointKind, OptionRefused, nagle_hint, refuse_mq_calls};
use super::{
    Prepared, QueueSetup, Reply, ReplyQueue, SessionFuture, TaskSession, Transport, TransportError,
    client_runtime,
};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, EventLoop};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Runtime;
use url::MqttEndpoint;

/// Mosquitto's default largest message is 256 MB; MQTT's limit is 256 MB too.
pub const MAX_MESSAGE: usize = 256 * 1024 * 1024 - 1024;
/// Requests the client may queue before a publish waits.
const CLIENT_QUEUE: usize = 10_000;

pub(crate) fn lost(target: &str, why: impl std::fmt::Display) -> TransportError {
    TransportError::ConnectionLost {
        target: target.to_string(),
        why: why.to_string(),
    }
}

/// The next PUBLISH the event loop delivers within `wait` (None when none came), driving
/// the loop through every other packet; for put/get replies and pub/sub subscribers alike.
/// A PUBACK refusing one of this client's publishes (to `publishes_to`) is an error at once.
pub(crate) async fn next_publish(
    events: &mut EventLoop,
    wait: Duration,
    target: &str,
    publishes_to: &str,
) -> Result<Option<rumqttc::v5::mqttbytes::v5::Publish>, TransportError> {
    let got = tokio::time::timeout(wait, async {
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::Publish(p))) => return Ok(p),
                Ok(Event::Incoming(Packet::PubAck(ack))) => {
                    refusal::check_puback(target, publishes_to, &ack)?;
                }
                Ok(_) => {}
                Err(e) => return Err(lost(target, e)),
            }
        }
    })
    .await;
    match got {
        Ok(p) => p.map(Some),
        Err(_) => Ok(None),
    }
}

/// The longest the broker may take to answer CONNECT (and SUBSCRIBE).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connected client on the first of the endpoint's nodes that answers, in order, and the
/// node (`host:port`): the event loop has seen the broker's CONNACK, and, when `subscribe`
/// names a topic, its SUBACK. A refused login or subscription ends the search.
pub fn connect(
    ep: &MqttEndpoint,
    rt: &Runtime,
    id: &str,
    subscribe: Option<(&str, QoS)>,
) -> Result<(AsyncClient, EventLoop, String), TransportError> {
    let ((client, events), node) = super::first_answering(
        ep.nodes(),
        |n| (n.host.as_str(), n.port),
        |n| connect_node(n, rt, id, subscribe),
        || lost(&ep.redacted(), "the URL names no node"),
    )?;
    Ok((client, events, node))
}

/// [`connect`] to one node.
fn connect_node(
    ep: &MqttEndpoint,
    rt: &Runtime,
    id: &str,
    subscribe: Option<(&str, QoS)>,
) -> Result<(AsyncClient, EventLoop), TransportError> {
    let target = ep.redacted();
    let mut options = ep.client_options(id.to_string());
    options.set_max_packet_size(Some(MAX_MESSAGE as u32 + 1024));
    let (client, mut events) = AsyncClient::new(options, CLIENT_QUEUE);
    rt.block_on(async {
        let handshake = async {
            let mut connected = false;
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                        use rumqttc::v5::mqttbytes::v5::ConnectReturnCode as Code;
                        match ack.code {
                            Code::Success => {}
                            Code::BadUserNamePassword | Code::NotAuthorized => {
                                return Err(TransportError::AuthRefused {
                                    target: target.clone(),
                                    user: ep.user.clone().unwrap_or_else(|| "(none)".into()),
                                });
                            }
                            other => {
                                return Err(TransportError::broker(
                                    &target,
                                    "connecting",
                                    format!("{other:?}"),
                                ));
                            }
                        }
                        connected = true;
                        let Some((topic, qos)) = subscribe else {
                            return Ok(());
                        };
                        client
                            .subscribe(topic, qos)
                            .await
                            .map_err(|e| lost(&target, format!("subscribing: {e}")))?;
                    }
                    Ok(Event::Incoming(Packet::SubAck(ack))) if connected => {
                        let topics: Vec<&str> = subscribe.iter().map(|(t, _)| *t).collect();
                        return refusal::check_suback(&target, &topics, &ack);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        // The client's own bound on the handshake is ours too.
                        let why = match e {
                            rumqttc::v5::ConnectionError::Timeout(_) => {
                                format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())
                            }
                            _ => crate::secret::scrub(&e.to_string()),
                        };
                        return Err(TransportError::Unreachable {
                            target: target.clone(),
                            why,
                        }
                        .caused_by(&e));
                    }
                }
            }
        };
        super::handshake(&target, CONNECT_TIMEOUT, handshake, || {
            TransportError::Unreachable {
                target: target.clone(),
                why: format!(
                    "no CONNACK (or SUBACK) within {} s",
                    CONNECT_TIMEOUT.as_secs()
                ),
            }
        })
        .await?
    })?;
    Ok((client, events))
}

/// MQTT put/get, opened once per run.
pub struct Mqtt {
    endpoint: MqttEndpoint,
    setup: QueueSetup,
}

impl Transport for Mqtt {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        // Connecting once says whether the broker is there and takes the login.
        let rt = client_runtime(&self.endpoint.redacted(), "MQTT")?;
        let (client, mut events, _) = connect(
            &self.endpoint,
            &rt,
            &format!("oemputx-setup-{}", std::process::id()),
            None,
        )?;
        rt.block_on(async {
            let _ = client.disconnect().await;
            let _ = tokio::time::timeout(Duration::from_millis(200), events.poll()).await;
        });
        Ok(Prepared::default())
    }

    fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
        let target = self.endpoint.redacted();
        let rt = Arc::new(client_runtime(&target, "MQTT")?);
        let qos = if self.setup.persistent {
            QoS::AtLeastOnce
        } else {
            QoS::AtMostOnce
        };
        let reply_topic = format!(
            "oemputx/reply/{}/{task}/{}",
            std::process::id(),
            super::correl::new_run_id()
        );
        let (client, events, node) = connect(
            &self.endpoint,
            &rt,
            &format!(
                "oemputx-{}-{task}-{}",
                std::process::id(),
                super::correl::new_run_id()
            ),
            Some((&reply_topic, qos)),
        )?;
        Ok(TaskSession::Async(Box::new(MqttSession {
            rt,
            client: Some(client),
            events,
            request_topic: self.setup.request_queue.clone(),
            reply_topic: bytes::Bytes::from(reply_topic),
            qos,
            target,
            node,
        })))
    }

    fn max_message_size(&self) -> usize {
        MAX_MESSAGE
    }
}

/// One task's client.
struct MqttSession {
    rt: Arc<Runtime>,
    client: Option<AsyncClient>,
    events: EventLoop,
    request_topic: String,
    reply_topic: bytes::Bytes,
    qos: QoS,
    target: String,
    /// The node the connection went to (`host:port`).
    node: String,
}

impl MqttSession {
    async fn next_reply(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        let Some(p) =
            next_publish(&mut self.events, wait, &self.target, &self.request_topic).await?
        else {
            return Ok(None);
        };
        let correl_id = p
            .properties
            .and_then(|pp| pp.correlation_data)
            .map(|d| String::from_utf8_lossy(&d).into_owned());
        Ok(Some(Reply {
            correl_id,
            len: p.payload.len(),
        }))
    }
}

impl super::AsyncSession for MqttSession {
    fn runtime(&self) -> Arc<Runtime> {
        self.rt.clone()
    }
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        let Some(client) = &self.client else {
            return Err(lost(&self.target, "session already closed"));
        };
        let properties = PublishProperties {
            response_topic: Some(String::from_utf8_lossy(&self.reply_topic).into_owned()),
            correlation_data: Some(bytes::Bytes::copy_from_slice(correl_id.as_bytes())),
            ..PublishProperties::default()
        };
        client
            .try_publish_with_properties(
                self.request_topic.clone(),
                self.qos,
                false,
                body.to_vec(),
                properties,
            )
            .map_err(|e| lost(&self.target, format!("publishing: {e}")))
    }
    fn get(&mut self, wait: Duration) -> SessionFuture<'_, Result<Option<Reply>, TransportError>> {
        Box::pin(self.next_reply(wait))
    }
    fn commit(&mut self) -> SessionFuture<'_, Result<(), TransportError>> {
        // --syncpoint is refused for MQTT before a run.
        Box::pin(async { Ok(()) })
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let rt = self.rt.clone();
        if let Some(client) = self.client.take() {
            rt.block_on(async {
                let _ = client.disconnect().await;
                let _ = tokio::time::timeout(Duration::from_millis(200), self.events.poll()).await;
            });
        }
        Ok(())
    }
    fn node(&self) -> Option<String> {
        Some(self.node.clone())
    }
}

impl EndpointKind for MqttEndpoint {
    fn transport(&self) -> &'static str {
        "mqtt"
    }
    /// A topic in MQTT's levels, the MQTT profile's.
    fn default_request_queue(&self) -> &'static str {
        "MQSI/IN"
    }
    fn redacted(&self) -> String {
        MqttEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(Mqtt {
            endpoint: self.clone(),
            setup,
        }))
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    fn broker_address(&self) -> Option<(String, u16)> {
        Some((self.host.clone(), self.port))
    }
    /// Mosquitto, the MQTT broker here.
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@mosquitto"]
    }
    /// Measured here: QoS 1 round trips of 44.6 ms on Mosquitto's default listener, 0.91 ms
    /// with `set_tcp_nodelay true`. The broker writes a PUBACK and the next PUBLISH to a
    /// responder as two small packets; Nagle holds the second until the responder's
    /// delayed ACK (40 ms) releases it.
    fn slow_round_trip_hint(&self, persistent: bool, p50_us: f64) -> Option<String> {
        nagle_hint(
            persistent,
            p50_us,
            "at QoS 1",
            "Mosquitto leaves TCP_NODELAY off unless its listener says `set_tcp_nodelay true` (in mosquitto.conf; measured here: 44.6 ms -> 0.91 ms per round trip)",
        )
    }
    fn refuse(&self, setup: &QueueSetup) -> Result<(), OptionRefused> {
        refuse_mq_calls(setup)?;
        super::endpoint::refuse_rabbitmq_paths(setup, "mqtt")?;
        if setup.syncpoint {
            return Err(OptionRefused::new(
                "--syncpoint",
                "MQTT has no transactions: leave --syncpoint out",
            ));
        }
        if let ReplyQueue::Named(_) = setup.reply_queue {
            return Err(OptionRefused::new(
                "--reply-queue",
                "MQTT replies come to each task's own response topic: leave --reply-queue out",
            ));
        }
        if setup.request_queue.contains(['+', '#']) {
            return Err(OptionRefused::new(
                "--request-queue",
                format!(
                    "'{}' has an MQTT wildcard (+ or #): requests are published to one topic",
                    setup.request_queue
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// One MQTT packet from `s`: its first byte and its body (none when the client went).
    fn packet(s: &mut std::net::TcpStream) -> Option<(u8, Vec<u8>)> {
        let mut one = [0u8; 1];
        s.read_exact(&mut one).ok()?;
        let kind = one[0];
        let (mut len, mut shift) = (0usize, 0);
        loop {
            s.read_exact(&mut one).ok()?;
            len |= usize::from(one[0] & 0x7f) << shift;
            shift += 7;
            if one[0] & 0x80 == 0 || shift > 21 {
                break;
            }
        }
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).ok()?;
        Some((kind, body))
    }

    /// A fake MQTT 5 broker on 127.0.0.1 speaking just enough: CONNACK to CONNECT, a
    /// SUBACK with `suback` for every SUBSCRIBE, a PUBACK with `puback` for every QoS 1
    /// PUBLISH. One connection, served until the client goes.
    fn fake_broker(suback: u8, puback: u8) -> MqttEndpoint {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let port = listener.local_addr().expect("its address").port();
        std::thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            while let Some((kind, body)) = packet(&mut s) {
                let answer = match kind >> 4 {
                    1 => vec![0x20, 3, 0, 0, 0],
                    8 if body.len() >= 2 => vec![0x90, 4, body[0], body[1], 0, suback],
                    3 if kind & 0x06 == 0x02 && body.len() >= 2 => {
                        let topic = usize::from(u16::from_be_bytes([body[0], body[1]]));
                        match body.get(2 + topic..4 + topic) {
                            Some(id) => vec![0x40, 4, id[0], id[1], puback, 0],
                            None => return,
                        }
                    }
                    12 => vec![0xd0, 0],
                    _ => continue,
                };
                if s.write_all(&answer).is_err() {
                    return;
                }
            }
        });
        MqttEndpoint::parse(&format!("mqtt://127.0.0.1:{port}")).expect("an MQTT URL")
    }

    fn persistent(ep: &MqttEndpoint) -> Result<TaskSession, TransportError> {
        let mut setup = QueueSetup::for_queue("oemputx/test/requests");
        setup.persistent = true;
        Mqtt {
            endpoint: ep.clone(),
            setup,
        }
        .session(0)
    }

    #[test]
    fn a_refused_subscription_is_an_error_at_once_naming_topic_reason_and_fix() {
        // Issue 48, item 17: a SUBACK of 0x87 passed for a subscription; the run then
        // timed out five times and said the flow was most likely gone.
        let ep = fake_broker(0x87, 0x00);
        let started = std::time::Instant::now();
        let Err(e) = persistent(&ep) else {
            panic!("a refused subscription must not open a session");
        };
        let text = e.to_string();
        assert!(
            text.contains("the broker refused the subscription to 'oemputx/reply/")
                && text.contains("not authorised (reason code 0x87); check the broker's ACL"),
            "{text}"
        );
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn a_refused_publish_is_an_error_at_once_naming_topic_reason_and_fix() {
        let ep = fake_broker(0x01, 0x87);
        let Ok(TaskSession::Async(mut session)) = persistent(&ep) else {
            panic!("the session opens");
        };
        session.put(b"request", "c1").expect("queued");
        let rt = session.runtime();
        let started = std::time::Instant::now();
        let got = rt.block_on(session.get(Duration::from_secs(10)));
        let text = got.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("the broker refused the publish to 'oemputx/test/requests': not authorised (reason code 0x87)"),
            "{text}"
        );
        assert!(started.elapsed() < Duration::from_secs(4));
    }
}
