//! NATS (core request/reply) through async-nats, the NATS maintainers' client.
//!
//! The request queue is a subject. Each task subscribes to its own inbox
//! (`_INBOX.<unique>.*`) and publishes each request with the reply subject
//! `_INBOX.<unique>.<correlation id>`: **correlation is by reply subject**, because replying
//! to the request's reply subject is the whole of NATS's request/reply convention — every
//! responder in every client library does it, and none has to copy a header. The driver
//! reads the correlation id back from the subject the reply arrived on.
//!
//! A request published where nobody subscribes comes back at once as a "no responders"
//! status (503) on its reply subject (the client announces `no_responders` in CONNECT):
//! the run stops with an error naming the subject and how to start a flow, instead of
//! timing out request after request.
//!
//! Each session is one connection on a current-thread runtime on the task's own thread, as
//! for AMQP: a put is queued and published by the next get, so that one entry into the
//! runtime sends the request and waits for its reply.
//!
//! `--persistent` publishes each request into the JetStream stream that captures the subject
//! and waits for the stream's acknowledgement; see [`jetstream`] for the stream and the
//! `Reply-To` header that carries the reply subject a stored message would lose.

pub mod jetstream;
pub mod url;

use super::client_runtime;
use super::deadline::Deadline;
use super::endpoint::{EndpointKind, OptionRefused, refuse_mq_calls};
use super::{
    AsyncSession, Prepared, QueueSetup, Reply, ReplyQueue, SessionFuture, TaskSession, Transport,
    TransportError,
};
use async_nats::{Client, ConnectErrorKind, StatusCode, Subscriber};
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::runtime::Runtime;
use url::{NatsAuth, NatsEndpoint};

/// nats-server's default max_payload (1 MB); the server's own figure replaces it once
/// connected.
pub const DEFAULT_MAX_PAYLOAD: usize = 1024 * 1024;
/// How long connecting may take before the server counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The NATS transport: where to connect and the subject to use.
pub struct Nats {
    endpoint: NatsEndpoint,
    setup: QueueSetup,
    /// The server's max_payload, learnt in prepare.
    max_payload: AtomicUsize,
}

impl Nats {
    pub fn new(endpoint: NatsEndpoint, setup: QueueSetup) -> Nats {
        Nats {
            endpoint,
            setup,
            max_payload: AtomicUsize::new(DEFAULT_MAX_PAYLOAD),
        }
    }

    fn target(&self) -> String {
        self.endpoint.redacted()
    }
}

/// The client options for an endpoint: its name, the connect timeout, its credentials and
/// TLS. Shared with sample-flow, so that a flow connects as the driver does.
pub fn connect_options(ep: &NatsEndpoint, name: &str) -> async_nats::ConnectOptions {
    let mut options = async_nats::ConnectOptions::new()
        .name(name)
        .connection_timeout(CONNECT_TIMEOUT);
    options = match &ep.auth {
        NatsAuth::User { user, password } => {
            options.user_and_password(user.clone(), password.expose().to_string())
        }
        NatsAuth::Token(token) => options.token(token.expose().to_string()),
        NatsAuth::None => options,
    };
    if ep.nodes.len() > 1 {
        // The nodes in the order given (the first that answers is the one a run measures
        // against), and only those: a cluster's gossip of other addresses is not followed.
        options = options.retain_servers_order().ignore_discovered_servers();
    }
    if ep.tls {
        // rustls needs one process-wide crypto provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        options = options.require_tls(true);
    }
    options
}

/// Connect to the endpoint's first node that answers, node by node in the order given (each
/// tried once: an unreachable cluster is the user's to fix), so that the node is known by
/// the address the user gave it (a server's own idea of its host is often 0.0.0.0). The
/// connection's [`Lost`] is told when it breaks.
async fn connect(ep: &NatsEndpoint, name: &str) -> Result<Connected, TransportError> {
    let mut last = None;
    for (server, node) in ep.server().into_iter().zip(&ep.nodes) {
        let lost = Arc::new(Lost::default());
        let attempt = connect_bounded(ep, &server, name, lost.clone());
        match super::interruptible(&ep.redacted(), attempt).await {
            Ok(client) => {
                return Ok(Connected {
                    client,
                    node: format!("{}:{}", crate::url_parts::host_for_url(&node.0), node.1),
                    lost,
                });
            }
            Err(e) if matches!(e.kind(), TransportError::Unreachable { .. }) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| TransportError::Unreachable {
        target: ep.redacted(),
        why: "no node".into(),
    }))
}

/// A connection, the node it went to, and the flag its break sets.
struct Connected {
    client: Client,
    node: String,
    lost: Arc<Lost>,
}

/// A task's connection broke: set by the client's event callback and woken beside each wait
/// for a reply, so that the driver hears of it at once and reconnects (the client's own
/// reconnection is not used: it would replay requests buffered for a server that went away,
/// and the driver could not count what the break cost). A waker, not a lock: registering
/// it is one atomic step on each wait.
#[derive(Default)]
struct Lost {
    broke: AtomicBool,
    waker: futures_util::task::AtomicWaker,
}

impl Lost {
    fn broke(&self) -> bool {
        self.broke.load(Ordering::Acquire)
    }
}

/// One node, bounded by the client's [`CONNECT_TIMEOUT`].
async fn connect_bounded(
    ep: &NatsEndpoint,
    server: &str,
    name: &str,
    lost: Arc<Lost>,
) -> Result<Client, TransportError> {
    let target = ep.redacted();
    let options = connect_options(ep, name)
        .max_reconnects(Some(1))
        .event_callback(move |event| {
            let lost = lost.clone();
            async move {
                if matches!(
                    event,
                    async_nats::Event::Disconnected | async_nats::Event::Closed
                ) {
                    lost.broke.store(true, Ordering::Release);
                    lost.waker.wake();
                }
            }
        });
    options.connect(server).await.map_err(|e| {
        let why = crate::secret::scrub(&e.to_string());
        let err = match e.kind() {
            ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                TransportError::AuthRefused {
                    target,
                    user: ep.user_shown(),
                }
            }
            ConnectErrorKind::Tls => TransportError::Unreachable {
                target,
                why: format!("TLS failed: {why}; is the server's certificate trusted here?"),
            },
            ConnectErrorKind::TimedOut => TransportError::Unreachable {
                target,
                why: format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
            },
            _ => TransportError::Unreachable { target, why },
        };
        err.caused_by(&e)
    })
}

/// Whether anybody answers on `subject`: `Some(0)` when nobody does, `None` when somebody
/// does (NATS cannot count them). How `sweep` and the gate know the flows they started are
/// serving. A subject a JetStream stream captures is served when somebody reads the
/// stream; any other is probed with one empty request, which a flow answers (the reference
/// flow with an error document) and NATS answers "no responders" when nobody subscribes.
pub fn responders(ep: &NatsEndpoint, subject: &str) -> Result<Option<u32>, TransportError> {
    let target = ep.redacted();
    client_runtime(&target, "NATS")?.block_on(async {
        let client = connect(ep, "oemputx-probe").await?.client;
        let js = async_nats::jetstream::new(client.clone());
        let some = match jetstream::capturing(&js, subject).await {
            Some(stream) => Ok(stream.readers > 0),
            None => has_responders(&client, subject, &target).await,
        };
        let _ = client.drain().await;
        Ok(if some? { None } else { Some(0) })
    })
}

/// One empty request to `subject`: false when NATS answers "no responders".
async fn has_responders(
    client: &Client,
    subject: &str,
    target: &str,
) -> Result<bool, TransportError> {
    let inbox = client.new_inbox();
    let mut sub = client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| TransportError::broker(target, "subscribing to an inbox", e))?;
    client
        .publish_with_reply(subject.to_string(), inbox, Vec::new().into())
        .await
        .map_err(|e| TransportError::broker(target, "publishing a probe", e))?;
    let answer = tokio::time::timeout(Duration::from_secs(2), sub.next()).await;
    Ok(!matches!(&answer, Ok(Some(m)) if m.status == Some(StatusCode::NO_RESPONDERS)))
}

impl Nats {
    /// `--persistent`: JetStream must be on, a stream must capture the subject (created
    /// with --declare) and something must read it.
    async fn prepare_stream(
        &self,
        client: &Client,
        target: &str,
    ) -> Result<jetstream::StreamFacts, TransportError> {
        let js = async_nats::jetstream::new(client.clone());
        jetstream::require(&js, target).await?;
        let subject = &self.setup.request_queue;
        let facts = jetstream::find_or_create(
            &js,
            subject,
            self.setup.declare,
            self.setup.replicas,
            target,
            &crate::signals::interrupted,
        )
        .await?;
        if facts.readers == 0 {
            return Err(TransportError::NoStreamReader {
                stream: facts.name,
                subject: subject.clone(),
                target: target.to_string(),
            });
        }
        Ok(facts)
    }

    /// Core NATS: something must answer on the subject, and no stream may capture it (its
    /// acknowledgements would come back as replies).
    async fn prepare_core(&self, client: &Client, target: &str) -> Result<(), TransportError> {
        let subject = &self.setup.request_queue;
        let js = async_nats::jetstream::new(client.clone());
        if let Some(stream) = jetstream::capturing(&js, subject).await {
            return Err(TransportError::CapturedByStream {
                subject: subject.clone(),
                stream: stream.name,
                target: target.to_string(),
            });
        }
        // Before the run, so that a missing flow is one line, not a failed round: one
        // empty request, which a flow answers outside the measured window.
        if !has_responders(client, subject, target).await? {
            return Err(TransportError::NoResponders {
                subject: subject.clone(),
                target: target.to_string(),
            });
        }
        Ok(())
    }
}

impl Transport for Nats {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        let target = self.target();
        client_runtime(&target, "NATS")?.block_on(async {
            let client = connect(&self.endpoint, "oemputx-setup").await?.client;
            let max = client.server_info().max_payload;
            if max > 0 {
                self.max_payload.store(max, Ordering::Relaxed);
            }
            let store = if self.setup.persistent {
                self.prepare_stream(&client, &target)
                    .await
                    .map(|f| Some(f.describe()))
            } else {
                self.prepare_core(&client, &target).await.map(|()| None)
            };
            let _ = client.drain().await;
            Ok(Prepared {
                cleared: 0,
                store: store?,
                broker: None,
            })
        })
    }

    fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
        let target = self.target();
        let rt = Arc::new(client_runtime(&target, "NATS")?);
        let (Connected { client, node, lost }, inbox, replies) = rt.block_on(async {
            let name = format!("oemputx-task-{task}");
            let connected = connect(&self.endpoint, &name).await?;
            let client = &connected.client;
            let inbox = client.new_inbox();
            let replies = client.subscribe(format!("{inbox}.*")).await.map_err(|e| {
                TransportError::broker(&target, "subscribing to the task's inbox", e)
            })?;
            Ok::<_, TransportError>((connected, inbox, replies))
        })?;
        // The context spawns its acknowledgement task on the session's runtime.
        let js = self.setup.persistent.then(|| {
            let _inside = rt.enter();
            async_nats::jetstream::new(client.clone())
        });
        Ok(TaskSession::Async(Box::new(NatsSession {
            rt,
            node,
            client: Some(client),
            lost,
            js,
            replies,
            prefix: format!("{inbox}."),
            subject: async_nats::Subject::from(self.setup.request_queue.as_str()),
            target,
            unsent: Vec::new(),
            last_body: bytes::Bytes::new(),
            timer: Deadline::default(),
            patience: self.setup.wait,
        })))
    }

    fn max_message_size(&self) -> usize {
        self.max_payload.load(Ordering::Relaxed)
    }
}

/// One task's NATS connection and inbox subscription.
pub struct NatsSession {
    rt: Arc<Runtime>,
    /// `None` only after close.
    client: Option<Client>,
    /// The node the connection went to (`host:port`, as the server names itself).
    node: String,
    /// Told by the client when the connection breaks.
    lost: Arc<Lost>,
    /// `--persistent`: requests go through JetStream and wait for its acknowledgement.
    js: Option<async_nats::jetstream::Context>,
    replies: Subscriber,
    /// The inbox and its dot: a reply's subject is this and the correlation id.
    prefix: String,
    /// The request subject, shared by reference with each publish.
    subject: async_nats::Subject,
    target: String,
    /// Requests `put` left to publish in the next get or close: (reply subject, body).
    unsent: Vec<(String, bytes::Bytes)>,
    /// The last body put, shared by reference: a run sends the same few bodies again and
    /// again, and a copy per request was measurable beside a raw client loop.
    last_body: bytes::Bytes,
    /// The wait for replies, one timer kept across gets.
    timer: Deadline,
    /// How long a stream that has no leader is asked again (--wait).
    patience: Duration,
}

impl NatsSession {
    fn lost(&self, why: impl std::fmt::Display) -> TransportError {
        TransportError::ConnectionLost {
            target: self.target.clone(),
            why: why.to_string(),
        }
    }

    async fn send_all(&mut self) -> Result<(), TransportError> {
        let Some(client) = &self.client else {
            return Err(self.lost("session already closed"));
        };
        if let Some(js) = &self.js {
            let stored = stored(
                js,
                &self.subject,
                &mut self.unsent,
                &self.target,
                self.patience,
            )
            .await;
            // A store that failed because the node went away is a break, not the broker's no.
            return match stored {
                Err(e) if self.lost.broke() => Err(self.lost(format!(
                    "the connection to node {} broke while storing a request: {e}",
                    self.node
                ))),
                other => other,
            };
        }
        for (reply, body) in self.unsent.drain(..) {
            if let Err(e) = client
                .publish_with_reply(self.subject.clone(), reply, body)
                .await
            {
                return Err(TransportError::ConnectionLost {
                    target: self.target.clone(),
                    why: format!("publishing a request: {e}"),
                });
            }
        }
        Ok(())
    }

    async fn next_reply(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        self.send_all().await?;
        let (replies, lost) = (&mut self.replies, &self.lost);
        // The next reply, or the break, whichever comes first: a reply already there first,
        // so that replies that came before the break are still taken after it.
        let next = self
            .timer
            .around(
                wait,
                std::future::poll_fn(|cx| {
                    if let std::task::Poll::Ready(m) = replies.poll_next_unpin(cx) {
                        return std::task::Poll::Ready(Some(m));
                    }
                    lost.waker.register(cx.waker());
                    if lost.broke() {
                        return std::task::Poll::Ready(None);
                    }
                    std::task::Poll::Pending
                }),
            )
            .await;
        let Some(next) = next else {
            return Ok(None);
        };
        let Some(Some(m)) = next else {
            return Err(self.lost(format!(
                "the connection to node {} broke (the inbox subscription ended)",
                self.node
            )));
        };
        if m.status == Some(StatusCode::NO_RESPONDERS) {
            return Err(TransportError::NoResponders {
                subject: self.subject.to_string(),
                target: self.target.clone(),
            });
        }
        let correl_id = m
            .subject
            .as_str()
            .strip_prefix(self.prefix.as_str())
            .map(str::to_string);
        Ok(Some(Reply {
            correl_id,
            len: m.payload.len(),
        }))
    }

    async fn shut(&mut self) -> Result<(), TransportError> {
        let sent = self.send_all().await;
        if let Some(client) = self.client.take() {
            let _ = self.replies.unsubscribe().await;
            client
                .drain()
                .await
                .map_err(|e| self.lost(format!("closing: {e}")))?;
        }
        sent
    }
}

/// Publish each request to the stream's subject with the task's reply subject in a
/// `Reply-To` header, then wait for every acknowledgement: a persistent put is done when
/// the stream has stored it. A stream that answers "no stream" (its subject has no
/// responder: a cluster electing the stream's leader after a node's loss, seconds on a
/// loaded host) is asked again for up to `patience` (the run's --wait), the request's round
/// trip counting the wait; a stream deleted mid-run still fails after it.
async fn stored(
    js: &async_nats::jetstream::Context,
    subject: &async_nats::Subject,
    unsent: &mut Vec<(String, bytes::Bytes)>,
    target: &str,
    patience: Duration,
) -> Result<(), TransportError> {
    let failed = |e: &dyn std::fmt::Display| TransportError::Broker {
        what: "storing a request in JetStream".into(),
        target: target.to_string(),
        why: e.to_string(),
    };
    let publish = |reply: &str, body: &bytes::Bytes| {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(jetstream::REPLY_TO, reply);
        js.publish_with_headers(subject.clone(), headers, body.clone())
    };
    let mut acks = Vec::with_capacity(unsent.len());
    for (reply, body) in unsent.drain(..) {
        let ack = publish(&reply, &body).await.map_err(|e| failed(&e))?;
        acks.push((ack, reply, body));
    }
    let until = tokio::time::Instant::now() + patience;
    for (mut ack, reply, body) in acks {
        let mut pause = Duration::from_millis(20);
        loop {
            match ack.await {
                Ok(_) => break,
                Err(e)
                    if e.kind()
                        == async_nats::jetstream::context::PublishErrorKind::StreamNotFound
                        && tokio::time::Instant::now() + pause < until =>
                {
                    if let Err(crate::signals::Stopped::Interrupted) =
                        crate::signals::within(pause, std::future::pending::<()>()).await
                    {
                        return Err(TransportError::Interrupted {
                            what: "waiting for the stream to store a request".into(),
                        });
                    }
                    pause = (pause * 2).min(Duration::from_millis(500));
                    ack = publish(&reply, &body).await.map_err(|e| failed(&e))?;
                }
                Err(e) => return Err(failed(&e)),
            }
        }
    }
    Ok(())
}

impl AsyncSession for NatsSession {
    fn runtime(&self) -> Arc<Runtime> {
        self.rt.clone()
    }
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        if self.client.is_none() {
            return Err(self.lost("session already closed"));
        }
        if self.last_body.as_ref() != body {
            self.last_body = bytes::Bytes::copy_from_slice(body);
        }
        let mut reply = String::with_capacity(self.prefix.len() + correl_id.len());
        reply.push_str(&self.prefix);
        reply.push_str(correl_id);
        self.unsent.push((reply, self.last_body.clone()));
        Ok(())
    }
    fn get(&mut self, wait: Duration) -> SessionFuture<'_, Result<Option<Reply>, TransportError>> {
        Box::pin(self.next_reply(wait))
    }
    fn commit(&mut self) -> SessionFuture<'_, Result<(), TransportError>> {
        // --syncpoint is refused for NATS before a run; nothing is transactional here.
        Box::pin(async { Ok(()) })
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let rt = self.rt.clone();
        rt.block_on(self.shut())
    }
    fn node(&self) -> Option<String> {
        Some(self.node.clone())
    }
}

impl Drop for NatsSession {
    fn drop(&mut self) {
        // The client's connection task lives on this session's runtime.
        let _inside = self.rt.enter();
        self.client.take();
    }
}

impl EndpointKind for NatsEndpoint {
    fn transport(&self) -> &'static str {
        "nats"
    }
    fn redacted(&self) -> String {
        NatsEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(Nats::new(self.clone(), setup)))
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    fn broker_address(&self) -> Option<(String, u16)> {
        Some((self.host.clone(), self.port))
    }
    fn consumers(&self, queue: &str) -> Result<Option<u32>, TransportError> {
        responders(self, queue)
    }
    /// The server is what a NATS run is about; its flows are the user's own processes.
    fn default_groups(&self) -> Vec<&'static str> {
        vec!["QMGR=@nats"]
    }
    /// JetStream streams keep replicas.
    fn replicates(&self) -> bool {
        true
    }
    /// What NATS cannot do, or not yet: each refused with the way out.
    fn refuse(&self, setup: &QueueSetup) -> Result<(), OptionRefused> {
        if setup.replicas.is_some() && !setup.persistent {
            return Err(OptionRefused::new(
                "--replicas",
                "replicas are a JetStream stream's: add --persistent (and --declare to create the stream with them), or leave --replicas out for core NATS",
            ));
        }
        refuse_mq_calls(setup)?;
        super::endpoint::refuse_rabbitmq_paths(setup, "nats")?;
        if setup.syncpoint {
            return Err(OptionRefused::new(
                "--syncpoint",
                "NATS has no units of work spanning puts and gets: leave --syncpoint out for nats:// (--persistent waits for JetStream to store each request)",
            ));
        }
        if matches!(setup.reply_queue, ReplyQueue::Named(_)) {
            return Err(OptionRefused::new(
                "--reply-queue",
                "on NATS each task gets its replies on its own inbox subject: leave --reply-queue out",
            ));
        }
        if let Some(why) = super::subject::subject_problem(&setup.request_queue) {
            return Err(OptionRefused::new("--request-queue", why));
        }
        Ok(())
    }
}
