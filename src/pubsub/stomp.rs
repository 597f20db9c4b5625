//! Pub/sub on a JMS broker over STOMP (ActiveMQ Classic here), the broker kind the stock
//! ticker study ran on. Each message goes to a topic with its stamp in STOMP headers, which
//! ActiveMQ turns into JMS message properties (`symbol`, `seq`, `ts_ns`, `publisher`:
//! underscores, since a property name with a hyphen never matches a selector, AMQ-3355).
//!
//! **Selection.** `--select-by header` (the study's case): every message goes to one topic,
//! `/topic/TOPIC`, and each subscriber subscribes once with a **JMS message selector**,
//! `symbol IN ('S00','S01',…)` over its block; the broker evaluates the selector for every
//! message and every subscriber, and that work is what the run measures. `--select-by topic`
//! (the study's other variant): a topic per symbol, `/topic/TOPIC.S07`, and a subscription
//! per symbol of the block; the broker routes by name, no selector runs.
//!
//! **Acknowledgement.** `--ack none`: `ack:auto` (the broker counts a message delivered as
//! it sends it; STOMP has nothing lighter). `auto`: `ack:client-individual` and an ACK
//! frame per message (JMS AUTO_ACKNOWLEDGE). `client`: `ack:client` and one cumulative ACK
//! every [`CLIENT_ACK_BATCH`] messages (JMS CLIENT_ACKNOWLEDGE). `--persistent` sends
//! `persistent:true` and waits for the broker's receipt of each message, as MQTT QoS 1
//! waits for its PUBACK (ActiveMQ stores a persistent topic message only for durable
//! subscribers; these are not, so it is the receipt's round trip that persistence costs).
//!
//! Subscribers competing for the messages (`--compete`) are not run on STOMP yet: ActiveMQ
//! does that with virtual topics, whose consumer queues outlive the run and STOMP cannot
//! delete.

use super::{Ack, Broker, CLIENT_ACK_BATCH, Publisher, SelectBy, Stamp, Subscriber};
use crate::transport::TransportError;
use crate::transport::stomp::frame::Frame;
use crate::transport::stomp::url::StompEndpoint;
use crate::transport::stomp::{Conn, error_frame};
use std::ops::Range;
use std::time::{Duration, Instant};

/// How long a SUBSCRIBE's or a persistent SEND's receipt is waited for.
const RECEIPT_WAIT: Duration = Duration::from_secs(10);

/// ActiveMQ over STOMP as a pub/sub broker.
pub struct StompPubSub {
    pub endpoint: StompEndpoint,
    pub plan: super::plan::Plan,
    pub ack: Ack,
    pub select_by: SelectBy,
    pub persistent: bool,
}

/// Pub/sub on a `stomp://` endpoint (None for another transport's): ActiveMQ, which runs no
/// competing subscribers yet.
pub(super) fn broker(
    endpoint: &crate::transport::Endpoint,
    o: &super::BrokerOptions,
) -> Option<Result<std::sync::Arc<dyn Broker>, super::Unsupported>> {
    let endpoint = endpoint.downcast::<StompEndpoint>()?;
    if o.plan.competing {
        return Some(Err(super::Unsupported {
            flag: "--compete",
            why: "competing subscribers are not yet run on ActiveMQ over STOMP (it does that with virtual topics, whose queues outlive the run and STOMP cannot delete): leave --compete out".into(),
        }));
    }
    Some(Ok(std::sync::Arc::new(StompPubSub {
        endpoint: endpoint.clone(),
        plan: o.plan.clone(),
        ack: o.ack,
        select_by: o.select_by,
        persistent: o.persistent,
    })))
}

impl StompPubSub {
    fn connect(&self, what: &str) -> Result<Conn, TransportError> {
        Conn::open(
            &self.endpoint,
            &format!("oemputx-{what}-{}", std::process::id()),
        )
    }

    /// The one topic of `--select-by header`.
    fn topic(&self) -> String {
        format!("/topic/{}", self.plan.topic)
    }

    /// A symbol's own topic under `--select-by topic`.
    fn symbol_topic(&self, s: u16) -> String {
        format!("/topic/{}.{}", self.plan.topic, self.plan.symbol_name(s))
    }

    /// The JMS selector that takes `block`'s symbols.
    pub fn selector(&self, block: Range<u16>) -> String {
        let names: Vec<String> = block
            .map(|s| format!("'{}'", self.plan.symbol_name(s)))
            .collect();
        format!("symbol IN ({})", names.join(","))
    }

    fn ack_header(&self) -> &'static str {
        match self.ack {
            Ack::None => "auto",
            Ack::Auto => "client-individual",
            Ack::Client => "client",
        }
    }
}

/// Send `f` with a receipt and wait for it; MESSAGE frames that come first are kept.
fn with_receipt(
    conn: &mut Conn,
    f: Frame,
    id: &str,
    what: &str,
    target: &str,
    early: &mut Vec<Frame>,
) -> Result<(), TransportError> {
    conn.send(&f.header("receipt", id))?;
    let deadline = Instant::now() + RECEIPT_WAIT;
    loop {
        match conn.answer_within(deadline.saturating_duration_since(Instant::now())) {
            // A signal ends the wait without an error: the run is stopping, and its report
            // (exit 130) says so; a wait that held Ctrl-C for 10 s was issue 48's class (d).
            Err(TransportError::Interrupted { .. }) => return Ok(()),
            Err(e) => return Err(e),
            Ok(None) => {
                return Err(TransportError::broker(
                    target,
                    what,
                    format!("no receipt within {} s", RECEIPT_WAIT.as_secs()),
                ));
            }
            Ok(Some(r)) if r.command == "RECEIPT" && r.get("receipt-id") == Some(id) => {
                return Ok(());
            }
            Ok(Some(e)) if e.command == "ERROR" => return Err(error_frame(target, what, &e)),
            Ok(Some(m)) => early.push(m),
        }
    }
}

impl Broker for StompPubSub {
    fn describe(&self) -> String {
        self.endpoint.redacted()
    }
    fn modes(&self) -> String {
        let ack = match self.ack {
            Ack::None => "none (ack:auto)",
            Ack::Auto => "client-individual (an ACK per message)",
            Ack::Client => "client (a cumulative ACK every 100)",
        };
        let publish = if self.persistent {
            "persistent, each with a receipt"
        } else {
            "non-persistent"
        };
        let selection = match self.select_by {
            SelectBy::Header => format!(
                "a JMS selector symbol IN (...) per subscriber on {}",
                self.topic()
            ),
            SelectBy::Topic => format!(
                "topic {}.SNN (a subscription per symbol, no selector)",
                self.topic()
            ),
        };
        format!("ack {ack}; publishes {publish}; selection by {selection}")
    }
    fn prepare(&self) -> Result<(), TransportError> {
        // Topics need nothing made: connecting says the connector is there and the login
        // is taken.
        self.connect("pubsub-setup")?.close();
        Ok(())
    }
    fn publisher(&self, p: usize) -> Result<Box<dyn Publisher>, TransportError> {
        let conn = self.connect(&format!("publisher-{p}"))?;
        let destinations = match self.select_by {
            SelectBy::Header => vec![self.topic(); usize::from(self.plan.symbols)],
            SelectBy::Topic => (0..self.plan.symbols)
                .map(|s| self.symbol_topic(s))
                .collect(),
        };
        Ok(Box::new(StompPublisher {
            conn: Some(conn),
            destinations,
            names: (0..self.plan.symbols)
                .map(|s| self.plan.symbol_name(s))
                .collect(),
            persistent: self.persistent,
            receipts: 0,
            headers: Vec::with_capacity(8),
            target: self.describe(),
        }))
    }
    fn subscriber(
        &self,
        i: usize,
        block: Range<u16>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        let target = self.describe();
        let mut conn = self.connect(&format!("subscriber-{i}"))?;
        let mut early = Vec::new();
        let subscriptions: Vec<Frame> = match self.select_by {
            SelectBy::Header => vec![
                Frame::new("SUBSCRIBE")
                    .header("destination", self.topic())
                    .header("selector", self.selector(block.clone())),
            ],
            SelectBy::Topic => block
                .clone()
                .map(|s| Frame::new("SUBSCRIBE").header("destination", self.symbol_topic(s)))
                .collect(),
        };
        for (n, f) in subscriptions.into_iter().enumerate() {
            let f = f
                .header("id", n.to_string())
                .header("ack", self.ack_header());
            with_receipt(
                &mut conn,
                f,
                &format!("sub-{n}"),
                "subscribing",
                &target,
                &mut early,
            )?;
        }
        Ok(Box::new(StompSubscriber {
            conn: Some(conn),
            early: early.into(),
            plan: self.plan.clone(),
            ack: self.ack,
            unacked: 0,
            last_ack: None,
            target,
        }))
    }
    fn competitor(&self, _i: usize) -> Result<Box<dyn Subscriber>, TransportError> {
        // Refused before the run (orchestrate::pubsub::broker); this is the seam's answer.
        Err(TransportError::broker(
            &self.describe(),
            "--compete",
            "competing subscribers are not yet run on STOMP",
        ))
    }
    fn transport(&self) -> &'static str {
        "stomp"
    }
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@activemq"]
    }
}

struct StompPublisher {
    conn: Option<Conn>,
    /// Where each symbol's messages go.
    destinations: Vec<String>,
    names: Vec<String>,
    persistent: bool,
    receipts: u64,
    /// SEND's headers, reused.
    headers: Vec<(String, String)>,
    target: String,
}

impl Publisher for StompPublisher {
    fn publish(&mut self, stamp: Stamp, body: &[u8]) -> Result<(), TransportError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(TransportError::ConnectionLost {
                target: self.target.clone(),
                why: "the publisher is closed".into(),
            });
        };
        let i = usize::from(stamp.symbol);
        self.headers.clear();
        self.headers.extend([
            ("destination".to_string(), self.destinations[i].clone()),
            ("symbol".to_string(), self.names[i].clone()),
            ("seq".to_string(), stamp.seq.to_string()),
            ("ts_ns".to_string(), stamp.ts_ns.to_string()),
            ("publisher".to_string(), stamp.publisher.to_string()),
            ("persistent".to_string(), self.persistent.to_string()),
        ]);
        if !self.persistent {
            return conn.send_parts("SEND", &self.headers, body);
        }
        self.receipts += 1;
        let id = self.receipts.to_string();
        self.headers.push(("receipt".to_string(), id.clone()));
        conn.send_parts("SEND", &self.headers, body)?;
        let deadline = Instant::now() + RECEIPT_WAIT;
        loop {
            match conn.next_frame(deadline)? {
                None => {
                    return Err(TransportError::broker(
                        &self.target,
                        "a persistent publish",
                        "no receipt within 10 s",
                    ));
                }
                Some(r) if r.command == "RECEIPT" && r.get("receipt-id") == Some(id.as_str()) => {
                    return Ok(());
                }
                Some(e) if e.command == "ERROR" => {
                    return Err(error_frame(&self.target, "publishing", &e));
                }
                Some(_) => {}
            }
        }
    }
    fn pause(&mut self, d: Duration) {
        // Nothing comes to a publisher but receipts, which it waits for as it sends.
        std::thread::sleep(d);
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        if let Some(c) = self.conn.take() {
            c.close();
        }
        Ok(())
    }
}

struct StompSubscriber {
    conn: Option<Conn>,
    /// Messages that came before the last subscription's receipt.
    early: std::collections::VecDeque<Frame>,
    plan: super::plan::Plan,
    ack: Ack,
    /// Messages since the last cumulative ACK (`--ack client`), and the last one's ack id.
    unacked: u64,
    last_ack: Option<String>,
    target: String,
}

impl StompSubscriber {
    /// The acknowledgement `--ack` asks for after message `f`.
    fn acknowledge(&mut self, f: &Frame) -> Result<(), TransportError> {
        let due = match self.ack {
            Ack::None => false,
            Ack::Auto => true,
            Ack::Client => {
                self.unacked += 1;
                self.unacked >= CLIENT_ACK_BATCH
            }
        };
        let (Some(id), Some(conn)) = (f.get("ack"), self.conn.as_mut()) else {
            return Ok(());
        };
        if due {
            self.unacked = 0;
            self.last_ack = None;
            conn.send(&Frame::new("ACK").header("id", id))?;
        } else if self.ack == Ack::Client {
            self.last_ack = Some(id.to_string());
        }
        Ok(())
    }

    fn stamp(&self, f: &Frame) -> Stamp {
        let num = |k: &str| f.get(k).and_then(|v| v.parse::<u64>().ok());
        Stamp {
            publisher: num("publisher").unwrap_or(0) as u32,
            seq: num("seq").unwrap_or(u64::MAX),
            symbol: f
                .get("symbol")
                .and_then(|s| self.plan.symbol_of(s))
                .unwrap_or(u16::MAX),
            ts_ns: num("ts_ns").unwrap_or(0),
        }
    }
}

impl Subscriber for StompSubscriber {
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError> {
        let deadline = Instant::now() + wait;
        loop {
            let f = match self.early.pop_front() {
                Some(f) => f,
                None => {
                    let Some(conn) = self.conn.as_mut() else {
                        return Ok(None);
                    };
                    match conn.next_frame(deadline)? {
                        Some(f) => f,
                        None => return Ok(None),
                    }
                }
            };
            match f.command.as_str() {
                "MESSAGE" => {
                    self.acknowledge(&f)?;
                    return Ok(Some(self.stamp(&f)));
                }
                "ERROR" => return Err(error_frame(&self.target, "receiving", &f)),
                _ => {}
            }
        }
    }
    fn close(mut self: Box<Self>) {
        if let Some(mut c) = self.conn.take() {
            // The rest of a `client` batch, so that the broker does not count them pending.
            if let Some(id) = self.last_ack.take() {
                let _ = c.send(&Frame::new("ACK").header("id", id));
            }
            c.close();
        }
    }
}
