//! Pub/sub on NATS: a subject per symbol (`ticker.S07`); a subscriber subscribes to each
//! subject of its block, so the server selects. The stamp travels in headers (`symbol`,
//! `seq`, `ts_ns`, `publisher`). Core NATS has no acknowledgement: every `--ack` is taken
//! as none, and a slow subscriber is cut off by the server rather than queued for.
//! `--persistent` goes through JetStream instead (`nats_js.rs`).

use super::{Ack, Broker, Publisher, Stamp, Subscriber};
use crate::transport::nats::{self as transport, url::NatsEndpoint};
use crate::transport::{TransportError, client_runtime};
use async_nats::{Client, HeaderMap};
use futures_util::StreamExt;
use futures_util::stream::SelectAll;
use std::ops::Range;
use std::time::Duration;
use tokio::runtime::Runtime;

/// Room left in a message for the headers oemputx sets (symbol, publisher, sequence, time;
/// about 75 bytes) when a body is checked against the server's max_payload.
const HEADER_ROOM: usize = 256;

/// NATS as a pub/sub broker.
pub struct NatsPubSub {
    pub endpoint: NatsEndpoint,
    pub plan: super::plan::Plan,
    pub ack: Ack,
    /// JetStream: publishes stored and acknowledged, subscribers on consumers.
    pub persistent: bool,
    pub declare: bool,
}

/// Pub/sub on a `nats://` endpoint (None for another transport's): NATS selects by subject
/// only.
pub(super) fn broker(
    endpoint: &crate::transport::Endpoint,
    o: &super::BrokerOptions,
) -> Option<Result<std::sync::Arc<dyn Broker>, super::Unsupported>> {
    let endpoint = endpoint.downcast::<NatsEndpoint>()?;
    if o.select_by == super::SelectBy::Header {
        crate::say!(
            "oemputx pubsub: NATS selects by subject only: --select-by header is taken as topic"
        );
    }
    Some(Ok(std::sync::Arc::new(NatsPubSub {
        endpoint: endpoint.clone(),
        plan: o.plan.clone(),
        ack: o.ack,
        persistent: o.persistent,
        declare: o.declare,
    })))
}

impl NatsPubSub {
    /// JetStream subscribers: one consumer per subject, or one durable shared by name.
    fn open_js_subscriber(
        &self,
        i: usize,
        subjects: Vec<String>,
        durable: Option<&str>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        let target = self.endpoint.redacted();
        let rt = client_runtime(&target, "NATS")?;
        let client = self.connect(&rt, &format!("oemputx-subscriber-{i}"))?;
        let messages = rt.block_on(async {
            let ctx = async_nats::jetstream::new(client.clone());
            super::nats_js::consumers(&ctx, &self.plan.topic, subjects, durable, self.ack, &target)
                .await
        })?;
        Ok(Box::new(super::nats_js::JsSubscriber {
            rt,
            client,
            messages,
            plan: self.plan.clone(),
            ack: self.ack,
            target,
            pending: Default::default(),
        }))
    }

    fn connect(&self, rt: &Runtime, name: &str) -> Result<Client, TransportError> {
        let ep = &self.endpoint;
        let connected = async {
            transport::connect_options(ep, name)
                .connect(ep.server())
                .await
                .map_err(|e| {
                    TransportError::Unreachable {
                        target: ep.redacted(),
                        why: crate::secret::scrub(&e.to_string()),
                    }
                    .caused_by(&e)
                })
        };
        rt.block_on(crate::transport::interruptible(&ep.redacted(), connected))
    }

    fn subject(&self, symbol: u16) -> String {
        format!("{}.{}", self.plan.topic, self.plan.symbol_name(symbol))
    }

    /// A subscriber to the subjects of `symbols`, in queue group `group` when given (the
    /// group's members share the messages).
    fn open_subscriber(
        &self,
        i: usize,
        symbols: Range<u16>,
        group: Option<&str>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        let target = self.endpoint.redacted();
        let rt = client_runtime(&target, "NATS")?;
        let client = self.connect(&rt, &format!("oemputx-subscriber-{i}"))?;
        let subs = rt.block_on(async {
            let mut all = SelectAll::new();
            for s in symbols {
                let sub = match group {
                    Some(g) => client.queue_subscribe(self.subject(s), g.to_string()).await,
                    None => client.subscribe(self.subject(s)).await,
                }
                .map_err(|e| TransportError::broker(&target, "subscribing", e))?;
                all.push(sub);
            }
            // Subscribed once the server has seen it, before the first publish.
            client
                .flush()
                .await
                .map_err(|e| TransportError::broker(&target, "flushing the subscriptions", e))?;
            Ok::<_, TransportError>(all)
        })?;
        Ok(Box::new(NatsSubscriber {
            rt,
            client,
            subs,
            plan: self.plan.clone(),
            target,
        }))
    }
}

impl Broker for NatsPubSub {
    fn describe(&self) -> String {
        self.endpoint.redacted()
    }
    fn modes(&self) -> String {
        if self.persistent {
            let ack = match self.ack {
                Ack::None => "none (ack-none consumers)",
                Ack::Auto | Ack::Client => "each message acknowledged (explicit-ack consumers)",
            };
            return format!(
                "JetStream stream {} over {}.>: publishes acknowledged by the stream; ack {ack}; selection by a pull consumer per subject {}.SNN",
                super::nats_js::stream_of(&self.plan.topic),
                self.plan.topic,
                self.plan.topic
            );
        }
        let ack = match self.ack {
            Ack::None => "none",
            Ack::Auto | Ack::Client => "none (core NATS has no acknowledgement)",
        };
        format!(
            "ack {ack}; selection by subject {}.SNN (a subscription per symbol)",
            self.plan.topic
        )
    }
    fn prepare(&self) -> Result<(), TransportError> {
        // Nothing to declare; connecting once says whether the server is there.
        let target = self.endpoint.redacted();
        let rt = client_runtime(&target, "NATS")?;
        let client = self.connect(&rt, "oemputx-pubsub-setup")?;
        // A body the server will not take failed the first publish as a lost connection
        // (exit 1): known now from the server's INFO, it is the user's --msg-size (exit 2).
        let max = client.server_info().max_payload.saturating_sub(HEADER_ROOM);
        if self.plan.msg_size > max {
            return Err(TransportError::TooLarge {
                size: self.plan.msg_size,
                max,
                transport: format!(
                    "the NATS server at {target} (its max_payload less {HEADER_ROOM} bytes for the message's headers)"
                ),
            });
        }
        rt.block_on(async {
            let prepared = if self.persistent {
                let ctx = async_nats::jetstream::new(client.clone());
                super::nats_js::prepare(&ctx, &self.plan.topic, self.declare, &target).await
            } else {
                Ok(())
            };
            let _ = client.drain().await;
            prepared
        })
    }
    fn publisher(&self, p: usize) -> Result<Box<dyn Publisher>, TransportError> {
        let target = self.endpoint.redacted();
        let rt = client_runtime(&target, "NATS")?;
        let client = self.connect(&rt, &format!("oemputx-publisher-{p}"))?;
        let subjects = (0..self.plan.symbols).map(|s| self.subject(s)).collect();
        let js = self.persistent.then(|| {
            let _inside = rt.enter();
            async_nats::jetstream::new(client.clone())
        });
        Ok(Box::new(NatsPublisher {
            js,
            rt,
            client,
            subjects,
            target,
        }))
    }
    fn subscriber(
        &self,
        i: usize,
        block: Range<u16>,
    ) -> Result<Box<dyn Subscriber>, TransportError> {
        if self.persistent {
            let subjects = block.map(|s| self.subject(s)).collect();
            return self.open_js_subscriber(i, subjects, None);
        }
        self.open_subscriber(i, block, None)
    }
    fn competitor(&self, i: usize) -> Result<Box<dyn Subscriber>, TransportError> {
        if self.persistent {
            let all = vec![format!("{}.>", self.plan.topic)];
            return self.open_js_subscriber(i, all, Some("oemputx-competing"));
        }
        self.open_subscriber(i, 0..self.plan.symbols, Some("oemputx-competing"))
    }
    fn transport(&self) -> &'static str {
        "nats"
    }
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@nats"]
    }
}

struct NatsPublisher {
    /// `--persistent`: publish through JetStream and wait for each acknowledgement.
    js: Option<async_nats::jetstream::Context>,
    rt: Runtime,
    client: Client,
    subjects: Vec<String>,
    target: String,
}

impl Publisher for NatsPublisher {
    fn publish(&mut self, stamp: Stamp, body: &[u8]) -> Result<(), TransportError> {
        let subject = self.subjects[usize::from(stamp.symbol)].clone();
        let mut headers = HeaderMap::new();
        headers.insert(
            "symbol",
            &subject[subject.rfind('.').map_or(0, |i| i + 1)..],
        );
        headers.insert("seq", stamp.seq.to_string().as_str());
        headers.insert("ts_ns", stamp.ts_ns.to_string().as_str());
        headers.insert("publisher", stamp.publisher.to_string().as_str());
        let payload = bytes::Bytes::copy_from_slice(body);
        let client = &self.client;
        if let Some(js) = &self.js {
            let target = &self.target;
            return self.rt.block_on(async {
                js.publish_with_headers(subject, headers, payload)
                    .await
                    .map_err(|e| TransportError::broker(target, "publishing to JetStream", e))?
                    .await
                    .map(|_| ())
                    .map_err(|e| TransportError::broker(target, "the stream's acknowledgement", e))
            });
        }
        self.rt
            .block_on(async {
                let sent = client.publish_with_headers(subject, headers, payload).await;
                // Let the connection's task write it now, not at the next wait.
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
    fn close(self: Box<Self>) -> Result<(), TransportError> {
        let target = self.target.clone();
        self.rt.block_on(async {
            self.client
                .flush()
                .await
                .map_err(|e| TransportError::broker(&target, "flushing the publisher", e))?;
            let _ = self.client.drain().await;
            Ok(())
        })
    }
}

struct NatsSubscriber {
    rt: Runtime,
    client: Client,
    subs: SelectAll<async_nats::Subscriber>,
    plan: super::plan::Plan,
    target: String,
}

impl Subscriber for NatsSubscriber {
    fn next(&mut self, wait: Duration) -> Result<Option<Stamp>, TransportError> {
        let got = self
            .rt
            .block_on(async { tokio::time::timeout(wait, self.subs.next()).await });
        let Ok(next) = got else { return Ok(None) };
        let Some(m) = next else {
            return Err(TransportError::ConnectionLost {
                target: self.target.clone(),
                why: "the server ended the subscriptions".into(),
            });
        };
        Ok(Some(super::nats_js::stamp_of(&m, &self.plan)))
    }
    fn close(self: Box<Self>) {
        let NatsSubscriber { rt, client, .. } = *self;
        rt.block_on(async {
            let _ = client.drain().await;
        });
    }
}
