//! AMQP 1.0 through fe2o3-amqp: the protocol of ActiveMQ, Artemis, Qpid, Solace and Azure
//! Service Bus; tested here against RabbitMQ 3.10's `rabbitmq_amqp1_0` plugin.
//!
//! Each task has one connection and session, a sender link to the request address and a
//! receiver link on a dynamic node the broker creates for its replies (or on `--reply-queue`'s
//! address). Each request carries `message-id` (the correlation id) and `reply-to` (the
//! receiver's address); a reply is matched by its `correlation-id`, the JMS convention every
//! AMQP 1.0 responder follows. Requests are sent pre-settled (fire and forget, as AMQP
//! 0-9-1 publishes without confirms); with `--persistent` the header's `durable` is set and
//! each send waits for the broker's disposition (it has taken the message). Replies are
//! asked for pre-settled too: the reply is the acknowledgement.
//!
//! A queue name becomes an address by the endpoint's address style (`url.rs`). RabbitMQ's
//! plugin has no dynamic nodes, so there a task's replies come to an exclusive queue the
//! plugin makes for a receiver on `/exchange/amq.direct/KEY`, and `reply-to` names that.
//!
//! Not here: `--syncpoint` (AMQP 1.0 transactions) — RabbitMQ's plugin has no transaction
//! coordinator, so nothing here could run them; refused before the run.

pub mod url;

use super::amqp::url::AmqpEndpoint;
use super::client_runtime;
use super::deadline::Deadline;
use super::endpoint::{EndpointKind, OptionRefused, refuse_mq_calls, refuse_shared_reply_queue};
use super::{
    AsyncSession, Prepared, QueueSetup, Reply, ReplyQueue, SessionFuture, TaskSession, Transport,
    TransportError,
};
use fe2o3_amqp::connection::{ConnectionHandle, OpenError};
use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::sasl_profile::SaslProfile;
use fe2o3_amqp::session::SessionHandle;
use fe2o3_amqp::types::definitions::{ReceiverSettleMode, SenderSettleMode};
use fe2o3_amqp::types::messaging::{
    Body, Data, Header, Message, MessageId, Properties, Source, Target, TerminusDurability,
    message::Builder,
};
use fe2o3_amqp::types::primitives::{Binary, Value};
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Runtime;
use url::{AddressStyle, Amqp10Endpoint};

/// RabbitMQ's default `max_message_size` (128 MiB).
pub const MAX_MESSAGE: usize = 128 * 1024 * 1024;
/// How long connecting may take before the broker counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the AMQP 1.0 handshake (SASL, then open) may take once the port answered.
/// Longer than [`CONNECT_TIMEOUT`]: RabbitMQ 3.10 sends a refused login's SASL outcome 3 s
/// after the login (3.0 s in strace on a quiet host), which left 2 s of the 5 for the rest;
/// at load 4 the handshake ran out before the refusal came, and a wrong password read as an
/// unreachable broker. RabbitMQ's own `handshake_timeout` is 10 s.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Replies the broker may send ahead on a task's receiver.
const REPLY_CREDIT: u32 = 64;

/// The AMQP 1.0 transport: where to connect and the queues to use.
pub struct Amqp10 {
    endpoint: Amqp10Endpoint,
    setup: QueueSetup,
}

impl Amqp10 {
    pub fn new(endpoint: Amqp10Endpoint, setup: QueueSetup) -> Amqp10 {
        Amqp10 { endpoint, setup }
    }

    fn target(&self) -> String {
        self.endpoint.redacted()
    }

    /// The request queue's address: one that creates it under --declare.
    fn request_address(&self) -> String {
        let (style, queue) = (self.endpoint.style, &self.setup.request_queue);
        if self.setup.declare {
            style.declaring(queue)
        } else {
            style.address(queue)
        }
    }
}

/// A connection and one session on it.
pub struct Opened {
    pub connection: ConnectionHandle<()>,
    pub session: SessionHandle<()>,
    /// The node it went to.
    pub node: (String, u16),
}

/// Open a connection (TLS for amqps10://, SASL PLAIN with the URL's user) and a session,
/// on the first of the endpoint's nodes that answers, in order (a refused login ends the
/// search). Shared with sample-flow, so that a flow connects as the driver does.
pub async fn open(ep: &Amqp10Endpoint, container: &str) -> Result<Opened, TransportError> {
    let mut last = None;
    for node in ep.nodes() {
        match super::interruptible(&node.redacted(), open_bounded(&node, container)).await {
            Err(e) if matches!(e.kind(), TransportError::Unreachable { .. }) => last = Some(e),
            done => return done,
        }
    }
    Err(last.unwrap_or_else(|| TransportError::Unreachable {
        target: ep.redacted(),
        why: "the URL names no node".into(),
    }))
}

/// [`open`], the port bounded by [`CONNECT_TIMEOUT`], the handshake by [`HANDSHAKE_TIMEOUT`].
async fn open_bounded(ep: &Amqp10Endpoint, container: &str) -> Result<Opened, TransportError> {
    let target = ep.redacted();
    let unreachable = |why: String| TransportError::Unreachable {
        target: target.clone(),
        why,
    };
    let tcp = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio::net::TcpStream::connect((ep.host.as_str(), ep.port)),
    )
    .await
    .map_err(|_| unreachable(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())))?
    .map_err(|e| unreachable(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let builder = Connection::builder()
        .container_id(container)
        .scheme("amqp")
        .hostname(ep.host.as_str())
        .sasl_profile(SaslProfile::Plain {
            username: ep.user.clone(),
            password: ep.password.expose().to_string(),
        });
    let opened = match &ep.tls {
        None => tokio::time::timeout(HANDSHAKE_TIMEOUT, builder.open_with_stream(tcp)).await,
        Some(tls) => {
            let stream = super::tls::connect(tls, tcp)
                .await
                .map_err(|why| unreachable(format!("TLS failed: {why}")))?;
            tokio::time::timeout(HANDSHAKE_TIMEOUT, builder.open_with_stream(stream)).await
        }
    };
    let mut connection = opened
        .map_err(|_| {
            unreachable(format!(
                "the AMQP 1.0 handshake did not finish within {} s",
                HANDSHAKE_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| open_error(ep, e))?;
    let session = Session::begin(&mut connection)
        .await
        .map_err(|e| TransportError::broker(&target, "beginning a session", e))?;
    Ok(Opened {
        connection,
        session,
        node: (ep.host.clone(), ep.port),
    })
}

/// What a failed open means for the user.
fn open_error(ep: &Amqp10Endpoint, e: OpenError) -> TransportError {
    let target = ep.redacted();
    match e {
        OpenError::SaslError { .. } => TransportError::AuthRefused {
            target,
            user: ep.user.clone(),
        },
        // RabbitMQ without the plugin answers an AMQP 1.0 header with its 0-9-1 one.
        OpenError::ProtocolHeaderMismatch(found) => TransportError::NotAmqp10 {
            target,
            found: format!("{found:?}"),
        },
        other => TransportError::Unreachable {
            target,
            why: crate::secret::scrub(&other.to_string()),
        },
    }
}

/// A link the broker refused: the address is the likely cause.
fn refused_link(
    target: &str,
    address: &str,
    style: url::AddressStyle,
    why: String,
) -> TransportError {
    TransportError::AddressRefused {
        target: target.to_string(),
        address: address.to_string(),
        style: style.name(),
        why,
    }
}

/// A target whose terminus is durable: RabbitMQ's plugin declares a missing `/queue/NAME`
/// durable then, as `--declare` does on AMQP 0-9-1, and refuses a non-durable attach to a
/// durable queue ("inequivalent arg 'durable'").
pub fn durable_target(address: &str) -> Target {
    Target::builder()
        .address(address)
        .durable(TerminusDurability::Configuration)
        .build()
}

/// A number distinct between calls in this process and between processes' runs.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    (nanos << 16) ^ NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The warning for a reply queue the run could not delete: what, why, and how to delete it.
fn left_behind(queue: &str, why: &TransportError) -> String {
    format!(
        "warning: this run's reply queue '{queue}' could not be deleted ({why}); it stays on the broker until deleted: rabbitmqctl delete_queue {queue}"
    )
}

/// A link's name, unique within the connection.
fn link_name(what: &str, task: usize) -> String {
    format!("oemputx-{what}-{task}-{}", std::process::id())
}

/// The longest closing a session waits for the broker's answers, all steps together.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Close a connection quietly (the run's outcome is already decided).
async fn close_quietly(mut o: Opened) {
    let _ = o.session.end().await;
    let _ = o.connection.close().await;
}

impl Transport for Amqp10 {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        let target = self.target();
        client_runtime(&target, "AMQP 1.0")?.block_on(async {
            let mut o = open(&self.endpoint, "oemputx-setup").await?;
            // Whether the queue exists: RabbitMQ takes a sender on a missing
            // `/amq/queue/NAME` and drops what it sends (unroutable), but refuses a receiver.
            // The receiver gets no credit, so it takes nothing off the queue.
            let address = self.request_address();
            let attached = crate::signals::within(
                CONNECT_TIMEOUT,
                Receiver::builder()
                    .name(link_name("check", 0))
                    .source(
                        Source::builder()
                            .address(address.as_str())
                            .durable(TerminusDurability::Configuration)
                            .build(),
                    )
                    .credit_mode(CreditMode::Manual)
                    .attach(&mut o.session),
            )
            .await;
            let checked = match attached {
                Ok(Ok(receiver)) => {
                    let _ = receiver.close().await;
                    Ok(())
                }
                Ok(Err(e)) => Err(e.to_string()),
                Err(crate::signals::Stopped::Interrupted) => {
                    return Err(TransportError::connecting(&target));
                }
                Err(crate::signals::Stopped::Elapsed) => Err(format!(
                    "no answer to the link within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )),
            }
            .map_err(|why| {
                if self.endpoint.style == url::AddressStyle::Rabbitmq && !self.setup.declare {
                    TransportError::MissingQueue {
                        queue: self.setup.request_queue.clone(),
                        target: target.clone(),
                    }
                } else {
                    refused_link(&target, &address, self.endpoint.style, why)
                }
            });
            close_quietly(o).await;
            checked?;
            Ok(Prepared::default())
        })
    }

    fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
        let target = self.target();
        let rt = Arc::new(client_runtime(&target, "AMQP 1.0")?);
        let persistent = self.setup.persistent;
        let named_reply = match &self.setup.reply_queue {
            ReplyQueue::Named(q) => Some(self.endpoint.style.address(q)),
            // Direct and per-request were refused before the run (EndpointKind::refuse).
            ReplyQueue::Temporary | ReplyQueue::Direct | ReplyQueue::PerRequest => None,
        };
        let request = self.request_address();
        let style = self.endpoint.style;
        let temporary = style.temporary(&format!(
            "oemputx.reply.{}.{task}.{}",
            std::process::id(),
            unique()
        ));
        // The set-up ends at once on a signal; its future is large, so it lives on the heap
        // (a task thread's stack overflowed with it).
        let made = rt.block_on(super::interruptible(
            &target,
            Box::pin(self.task_links(task, &request, named_reply.as_ref(), temporary.as_ref())),
        ));
        let (opened, sender, receiver, reply_to) = match made {
            Ok(made) => made,
            Err(e) => {
                // A reply queue the broker may have made for a link that then failed (or
                // a signal cut short) is not left on a shared broker.
                if let (Some(address), None) = (&temporary, &named_reply) {
                    let _ = super::amqp::admin::delete_queue(
                        &self.endpoint.as_amqp091(),
                        &style.queue_of(address),
                    );
                }
                return Err(e);
            }
        };
        // Deleted through the node the session is on first, then the others: the first may
        // be the one lost, and a session that broke still leaves its queue behind.
        let delete_after = temporary.filter(|_| named_reply.is_none()).map(|address| {
            let mut on = self.endpoint.as_amqp091().at(&opened.node);
            on.nodes.retain(|n| *n != opened.node);
            on.nodes.insert(0, opened.node.clone());
            (on, style.queue_of(&address))
        });
        Ok(TaskSession::Async(Box::new(Amqp10Session {
            rt,
            broke: false,
            node: crate::url_parts::node_name(&opened.node.0, opened.node.1),
            opened: Some(opened),
            sender: Some(sender),
            receiver: Some(receiver),
            reply_to,
            persistent,
            target,
            unsent: std::collections::VecDeque::new(),
            last_body: Binary::default(),
            timer: Deadline::default(),
            delete_after,
        })))
    }

    fn max_message_size(&self) -> usize {
        MAX_MESSAGE
    }
}

/// A task's set-up, apart from the trait.
impl Amqp10 {
    /// A task's connection and its two links, each attach bounded by [`CONNECT_TIMEOUT`]:
    /// the request link, and the reply link on `named_reply`, else `temporary`, else a
    /// dynamic node; with the reply address the broker gave.
    async fn task_links(
        &self,
        task: usize,
        request: &str,
        named_reply: Option<&String>,
        temporary: Option<&String>,
    ) -> Result<(Opened, Sender, Receiver, String), TransportError> {
        let target = self.target();
        let style = self.endpoint.style;
        let persistent = self.setup.persistent;
        // Each link's attach is bounded (the caller ends the whole on a signal).
        let bounded = |what: &'static str| {
            let target = target.clone();
            move || {
                TransportError::broker(
                    &target,
                    what,
                    format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
                )
            }
        };

        let mut o = open(&self.endpoint, &format!("oemputx-task-{task}")).await?;
        let sender = Sender::builder()
            .name(link_name("requests", task))
            .target(durable_target(request))
            .sender_settle_mode(if persistent {
                SenderSettleMode::Unsettled
            } else {
                SenderSettleMode::Settled
            })
            .attach(&mut o.session);
        let sender = super::handshake(
            &target,
            CONNECT_TIMEOUT,
            sender,
            bounded("attaching the request link"),
        )
        .await?
        .map_err(|e| refused_link(&target, request, style, e.to_string()))?;
        let source = match named_reply.as_ref().or(temporary.as_ref()) {
            // Not durable: a responder's sender to the reply address makes RabbitMQ
            // declare the queue again, and refuses a declare that differs in
            // durability; clients' terminus is not durable unless they ask.
            Some(address) => Source::builder().address(address.as_str()).build(),
            None => Source::builder().dynamic(true).build(),
        };
        let receiver = Receiver::builder()
            .name(link_name("replies", task))
            .source(source)
            .sender_settle_mode(SenderSettleMode::Settled)
            .receiver_settle_mode(ReceiverSettleMode::First)
            .credit_mode(CreditMode::Auto(REPLY_CREDIT))
            .auto_accept(true)
            .attach(&mut o.session);
        let receiver = super::handshake(
            &target,
            CONNECT_TIMEOUT,
            receiver,
            bounded("attaching the reply link"),
        )
        .await?
        .map_err(|e| {
            let what = named_reply.map_or("a dynamic reply node", String::as_str);
            refused_link(&target, what, style, e.to_string())
        })?;
        let reply_to = receiver
            .source()
            .as_ref()
            .and_then(|s| s.address.clone())
            .or(named_reply.cloned())
            .or(temporary.cloned())
            .ok_or_else(|| {
                TransportError::broker(
                    &target,
                    "creating a reply node",
                    "the broker gave the dynamic node no address",
                )
            })?;
        Ok((o, sender, receiver, reply_to))
    }
}

/// One task's connection, links and reply address.
pub struct Amqp10Session {
    rt: Arc<Runtime>,
    /// `None` only after close (as are the links).
    opened: Option<Opened>,
    sender: Option<Sender>,
    receiver: Option<Receiver>,
    reply_to: String,
    persistent: bool,
    target: String,
    /// Requests `put` left to send in the next get or close.
    unsent: std::collections::VecDeque<Message<Data>>,
    /// The last body put: a run sends the same few bodies again and again.
    last_body: Binary,
    timer: Deadline,
    /// RabbitMQ: the task's reply queue, deleted (over AMQP 0-9-1) when the session ends.
    delete_after: Option<(AmqpEndpoint, String)>,
    /// The node the connection went to (`host:port`).
    node: String,
    /// Whether its connection broke.
    broke: bool,
}

impl Amqp10Session {
    fn lost(&self, why: impl std::fmt::Display) -> TransportError {
        TransportError::ConnectionLost {
            target: self.target.clone(),
            why: why.to_string(),
        }
    }

    async fn send_all(&mut self) -> Result<(), TransportError> {
        let Some(sender) = &mut self.sender else {
            return Err(self.lost("session already closed"));
        };
        // One at a time, so that a send cut short by the caller's deadline (a stalled
        // connection holds back the link's credit) leaves the rest for the next call.
        while let Some(message) = self.unsent.pop_front() {
            // Pre-settled unless --persistent; then this waits for the broker's outcome.
            let outcome =
                sender
                    .send(message)
                    .await
                    .map_err(|e| TransportError::ConnectionLost {
                        target: self.target.clone(),
                        why: format!("sending a request: {e}"),
                    })?;
            if self.persistent
                && let Err(state) = outcome.accepted_or_else(|s| s)
            {
                return Err(TransportError::broker(
                    &self.target,
                    "sending a persistent request",
                    format!("the broker did not accept it: {state:?}"),
                ));
            }
        }
        Ok(())
    }

    /// [`Self::await_reply`], remembering a broken connection (its node goes last when the
    /// reply queue is deleted).
    async fn next_reply(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        let got = self.await_reply(wait).await;
        if let Err(e) = &got
            && matches!(e.kind(), TransportError::ConnectionLost { .. })
        {
            self.broke = true;
        }
        got
    }

    async fn await_reply(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        // Sending is bounded by the same wait as receiving: on a stalled connection it waits
        // for credit that never comes, and the run must still see its timeouts and signals.
        // (A timer only when there is something to send: most gets of a loop have nothing.)
        if !self.unsent.is_empty() {
            match tokio::time::timeout(wait, self.send_all()).await {
                Ok(sent) => sent?,
                Err(_) => return Ok(None),
            }
        }
        let Some(receiver) = &mut self.receiver else {
            return Err(self.lost("session already closed"));
        };
        let Some(got) = self
            .timer
            .around(wait, receiver.recv::<Body<Value>>())
            .await
        else {
            return Ok(None);
        };
        let delivery = got.map_err(|e| self.lost(format!("receiving a reply: {e}")))?;
        let message = delivery.message();
        let correl_id = message
            .properties
            .as_ref()
            .and_then(|p| p.correlation_id.as_ref())
            .map(id_text);
        Ok(Some(Reply {
            correl_id,
            len: body_len(&message.body),
        }))
    }

    async fn shut(&mut self) -> Result<(), TransportError> {
        // Bounded as a whole: a stalled connection answers no close, and the run's report
        // (or its exit after a signal) must not wait on it.
        let deadline = tokio::time::Instant::now() + CLOSE_TIMEOUT;
        let sent = match tokio::time::timeout_at(deadline, self.send_all()).await {
            Ok(sent) => sent,
            Err(_) => {
                Err(self.lost("the last requests could not be sent: the connection is stalled"))
            }
        };
        let (sender, receiver, opened) =
            (self.sender.take(), self.receiver.take(), self.opened.take());
        let _ = tokio::time::timeout_at(deadline, async move {
            if let Some(s) = sender {
                let _ = s.close().await;
            }
            if let Some(r) = receiver {
                let _ = r.close().await;
            }
            if let Some(o) = opened {
                close_quietly(o).await;
            }
        })
        .await;
        sent
    }
}

/// A message id as text: a string id as it is, others in their usual written form.
pub fn id_text(id: &MessageId) -> String {
    match id {
        MessageId::String(s) => s.clone(),
        MessageId::Ulong(n) => n.to_string(),
        MessageId::Uuid(u) => format!("{u:?}"),
        MessageId::Binary(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// A message's body as bytes: its data sections, or a string or binary value; empty for
/// anything else.
pub fn body_bytes(body: &Body<Value>) -> Vec<u8> {
    match body {
        Body::Data(batch) => batch.iter().flat_map(|d| d.0.iter().copied()).collect(),
        Body::Value(v) => match &v.0 {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Binary(b) => b.to_vec(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The length of a message's body in bytes: its data sections, or a string or binary value
/// (other clients send text as an AMQP value); 0 for anything else.
pub(crate) fn body_len(body: &Body<Value>) -> usize {
    match body {
        Body::Data(batch) => batch.iter().map(|d| d.0.len()).sum(),
        Body::Value(v) => match &v.0 {
            Value::String(s) => s.len(),
            Value::Binary(b) => b.len(),
            _ => 0,
        },
        _ => 0,
    }
}

impl AsyncSession for Amqp10Session {
    fn runtime(&self) -> Arc<Runtime> {
        self.rt.clone()
    }
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        if self.sender.is_none() {
            return Err(self.lost("session already closed"));
        }
        if self.last_body.as_slice() != body {
            self.last_body = Binary::from(body.to_vec());
        }
        let properties = Properties::builder()
            .message_id(correl_id.to_string())
            .reply_to(self.reply_to.clone())
            .build();
        let message: Builder<Data> = Message::builder()
            .properties(properties)
            .data(self.last_body.clone());
        let message = if self.persistent {
            message.header(Header::builder().durable(true).build())
        } else {
            message
        };
        self.unsent.push_back(message.build());
        Ok(())
    }
    fn get(&mut self, wait: Duration) -> SessionFuture<'_, Result<Option<Reply>, TransportError>> {
        Box::pin(self.next_reply(wait))
    }
    fn commit(&mut self) -> SessionFuture<'_, Result<(), TransportError>> {
        // --syncpoint is refused before a run: nothing here is transactional.
        Box::pin(async { Ok(()) })
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let rt = self.rt.clone();
        let shut = rt.block_on(self.shut());
        self.delete_reply_queue();
        shut
    }
    fn node(&self) -> Option<String> {
        Some(self.node.clone())
    }
}

impl Amqp10Session {
    /// Delete the task's reply queue, if the session made one. Outside the session's
    /// runtime: the deletion runs on a runtime of its own.
    fn delete_reply_queue(&mut self) {
        if let Some((mut ep, queue)) = self.delete_after.take() {
            // Through another node first when this one's connection broke (it may be gone).
            if self.broke {
                ep.nodes.rotate_left(1);
            }
            // Best effort: a run's outcome does not hang on tidying up. But a queue left
            // behind stays on the broker until someone deletes it (no consumer, no expiry:
            // RabbitMQ's AMQP 1.0 plugin takes no queue arguments), so it is named.
            if let Err(e) = super::amqp::admin::delete_queue(&ep, &queue) {
                crate::say!("{}", left_behind(&queue, &e));
            }
        }
    }
}

impl Drop for Amqp10Session {
    fn drop(&mut self) {
        self.delete_reply_queue();
        // The connection's engine lives on this session's runtime.
        let _inside = self.rt.enter();
        self.sender.take();
        self.receiver.take();
        self.opened.take();
    }
}

impl EndpointKind for Amqp10Endpoint {
    fn transport(&self) -> &'static str {
        "amqp10"
    }
    /// RabbitMQ counts an AMQP 0-9-1 consumer on the queue, but it cannot read what AMQP 1.0
    /// sends there.
    fn silent_consumers_hint(&self) -> Option<&'static str> {
        Some(
            "an AMQP 0-9-1 consumer (sample-flow without --url amqp10://) cannot read requests sent over AMQP 1.0: give the AMQP 1.0 run a queue of its own (the AMQP10 profile uses MQSI.IN.AMQP10)",
        )
    }
    /// A queue apart from RABBIT's MQSI.IN: an AMQP 0-9-1 flow on the same RabbitMQ
    /// queue would take these requests and die of them (the AMQP10 profile's).
    fn default_request_queue(&self) -> &'static str {
        "MQSI.IN.AMQP10"
    }
    fn redacted(&self) -> String {
        Amqp10Endpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(Amqp10::new(self.clone(), setup)))
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    fn broker_address(&self) -> Option<(String, u16)> {
        Some((self.host.clone(), self.port))
    }
    /// RabbitMQ counts a queue's consumers whatever protocol they speak (asked over 0-9-1).
    fn counted_consumers(&self, queue: &str) -> Option<u32> {
        match self.style {
            AddressStyle::Rabbitmq => super::amqp::admin::consumers(&self.as_amqp091(), queue).ok(),
            AddressStyle::Plain | AddressStyle::QueuePrefix => None,
        }
    }
    /// RabbitMQ's AMQP 1.0 plugin runs inside the broker; other brokers' processes (Java for
    /// Artemis and ActiveMQ) are the user's to name with --group.
    fn default_groups(&self) -> Vec<&'static str> {
        match self.style {
            AddressStyle::Rabbitmq => vec!["QMGR=@rabbitmq"],
            AddressStyle::Plain | AddressStyle::QueuePrefix => Vec::new(),
        }
    }
    fn refuse(&self, setup: &QueueSetup) -> Result<(), OptionRefused> {
        refuse_mq_calls(setup)?;
        super::endpoint::refuse_rabbitmq_paths(setup, "amqp10")?;
        refuse_shared_reply_queue(setup, "amqp10://")?;
        if setup.syncpoint {
            return Err(OptionRefused::new(
                "--syncpoint",
                format!(
                    "on {}: AMQP 1.0 transactions are not run by oemputx yet, and RabbitMQ's AMQP 1.0 plugin, the only broker here, has no transaction coordinator; leave --syncpoint out",
                    self.redacted()
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Amqp10Endpoint {
        Amqp10Endpoint::parse("amqp10://app:SeCrEt99@127.0.0.1:5672").expect("parses")
    }

    #[test]
    fn a_broker_without_amqp_1_0_is_told_apart_from_a_refused_login() {
        let ep = endpoint();
        let header =
            OpenError::ProtocolHeaderMismatch(bytes::Bytes::from_static(b"AMQP\0\0\t\x01"));
        let e = open_error(&ep, header);
        assert!(matches!(e, TransportError::NotAmqp10 { .. }), "{e}");
        assert!(e.is_usage());
        assert!(
            e.to_string()
                .contains("rabbitmq-plugins enable rabbitmq_amqp1_0")
        );
        let io = OpenError::Io(std::io::Error::other("reset by SeCrEt99"));
        let e = open_error(&ep, io).to_string();
        assert!(!e.contains("SeCrEt99"), "{e}");
    }

    #[test]
    fn a_reply_queue_left_behind_is_named_with_how_to_delete_it() {
        let ep = endpoint();
        let why = TransportError::broker(&ep.redacted(), "deleting queue 'q'", "no answer");
        let w = left_behind("oemputx.reply.1.0.7", &why);
        assert!(
            w.starts_with("warning: ")
                && w.ends_with("rabbitmqctl delete_queue oemputx.reply.1.0.7")
                && w.contains("no answer"),
            "{w}"
        );
        assert!(!w.contains("SeCrEt99"), "{w}");
    }

    #[test]
    fn ids_and_bodies_of_other_clients_read_as_text_and_bytes() {
        assert_eq!(
            id_text(&MessageId::String("oemputx-a-1-2".into())),
            "oemputx-a-1-2"
        );
        assert_eq!(id_text(&MessageId::Ulong(42)), "42");
        let text = Body::Value(fe2o3_amqp::types::messaging::AmqpValue(Value::String(
            "héllo".into(),
        )));
        assert_eq!(body_len(&text), "héllo".len());
        assert_eq!(body_bytes(&text), "héllo".as_bytes());
        let data: Body<Value> = Body::Data(vec![Data(Binary::from(vec![1u8, 2, 3]))].into());
        assert_eq!(body_len(&data), 3);
    }
}
