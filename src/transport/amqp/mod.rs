//! AMQP 0-9-1 (RabbitMQ) through the `amqprs` client.
//!
//! Requests follow the common RPC convention: `reply_to` names the reply queue and
//! `correlation_id` (also sent as `message_id`) is unique per request; any responder that
//! copies the correlation id (or the message id) into its reply works with oemputx.
//!
//! Each session is one connection driven by a current-thread tokio runtime on the task's own
//! thread, so a put or get costs no thread hop. amqprs was chosen over lapin by measuring a
//! raw put/get loop of each against the same echo responder: amqprs spent about a quarter of
//! lapin's client CPU per round trip (see the commit that introduced this file).
//!
//! A named reply queue shared by several tasks is read by one router thread with its own
//! connection, which hands each reply to the task its correlation id names: AMQP has no
//! get-by-correlation-id, and a consumer per task would receive other tasks' replies
//! round-robin, even after its own task had finished. Routed replies are acknowledged on
//! receipt, so under --syncpoint only the puts are transactional in that mode.

pub mod admin;
pub mod lean;
pub mod url;

use super::correl;
use super::endpoint::EndpointKind;
use super::{
    AsyncSession, Prepared, QueueSetup, Reply, SessionFuture, TaskSession, Transport,
    TransportError,
};
use super::{QueueType, ReplyQueue};
use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, Channel, ConsumerMessage,
    QueueDeclareArguments, QueuePurgeArguments,
};
use amqprs::connection::{Connection, OpenConnectionArguments};
use lean::LeanReply;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use url::AmqpEndpoint;

/// RabbitMQ's default `max_message_size` (128 MiB since 3.8).
pub const MAX_MESSAGE: usize = 128 * 1024 * 1024;
/// How long connecting may take before the broker counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The AMQP transport: where to connect and the queues to use.
pub struct Amqp {
    endpoint: AmqpEndpoint,
    setup: QueueSetup,
    /// With a shared named reply queue: each task's inbox, filled by the router.
    inboxes: Mutex<Vec<Option<UnboundedReceiver<Reply>>>>,
    routes: Mutex<Option<Vec<UnboundedSender<Reply>>>>,
    router: Mutex<Option<Router>>,
}

/// The thread that reads a shared reply queue for all tasks.
struct Router {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Drop for Amqp {
    fn drop(&mut self) {
        let router = self.router.lock().ok().and_then(|mut r| r.take());
        if let Some(r) = router {
            r.stop.store(true, Ordering::Relaxed);
            let _ = r.handle.join();
        }
    }
}

impl Amqp {
    /// A transport for `endpoint`; nothing is connected until [`Transport::prepare`].
    pub fn new(endpoint: AmqpEndpoint, setup: QueueSetup) -> Self {
        let shared = matches!(setup.reply_queue, ReplyQueue::Named(_)) && setup.tasks > 1;
        let (routes, inboxes) = if shared {
            let (tx, rx): (Vec<_>, Vec<_>) = (0..setup.tasks).map(|_| unbounded_channel()).unzip();
            (Some(tx), rx.into_iter().map(Some).collect())
        } else {
            (None, Vec::new())
        };
        Amqp {
            endpoint,
            setup,
            inboxes: Mutex::new(inboxes),
            routes: Mutex::new(routes),
            router: Mutex::new(None),
        }
    }

    fn target(&self) -> String {
        self.endpoint.redacted()
    }

    fn runtime(&self) -> Result<Runtime, TransportError> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TransportError::Broker {
                what: "starting the AMQP client runtime".into(),
                target: self.target(),
                why: e.to_string(),
            })
    }

    /// A connection to the first of the endpoint's nodes that takes it, and that node. A node
    /// that refuses the login or the virtual host ends the search: the others share them.
    async fn connect(&self, name: &str) -> Result<(Connection, String), TransportError> {
        let mut missed = Vec::new();
        for node in &self.endpoint.nodes {
            let ep = self.endpoint.at(node);
            match self.connect_node(&ep, name).await {
                Ok(c) => return Ok((c, node_name(node))),
                Err(e) if !matches!(e.kind(), TransportError::Unreachable { .. }) => return Err(e),
                Err(e) => missed.push((node_name(node), e)),
            }
        }
        match missed.len() {
            0 | 1 => Err(missed
                .pop()
                .map(|(_, e)| e)
                .unwrap_or_else(|| self.unreachable("no node".into()))),
            _ => Err(self.unreachable(
                missed
                    .iter()
                    .map(|(n, e)| format!("{n}: {e}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            )),
        }
    }

    async fn connect_node(
        &self,
        ep: &AmqpEndpoint,
        name: &str,
    ) -> Result<Connection, TransportError> {
        // Reach the port first: a refused or silent port and a login the broker turns down
        // end the same way inside the client (a closed socket), but need different fixes.
        let target = self.target();
        let reached = super::handshake(
            &target,
            CONNECT_TIMEOUT,
            tokio::net::TcpStream::connect((ep.host.as_str(), ep.port)),
            || self.unreachable(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())),
        )
        .await?;
        // The probe's connection closes here, before the client opens its own: a server
        // that serves one connection at a time must not be kept waiting on it.
        match reached {
            Err(e) => return Err(self.unreachable(e.to_string())),
            Ok(probe) => drop(probe),
        }
        let args = connection_args(ep, name).map_err(|why| self.unreachable(why))?;
        let opened = super::handshake(&target, CONNECT_TIMEOUT, Connection::open(&args), || {
            self.unreachable(format!(
                "the AMQP handshake got no answer within {} s (is this an AMQP 0-9-1 port?)",
                CONNECT_TIMEOUT.as_secs()
            ))
        })
        .await?;
        match opened {
            Ok(c) => Ok(c),
            Err(e) => {
                let err = self.classify_open_error(&e.to_string());
                // A closed socket means a refused login only if an AMQP broker is there: a
                // port that accepts and then resets (a proxy, another service) looks the same
                // from inside the client.
                if matches!(err.kind(), TransportError::AuthRefused { .. })
                    && ep.tls.is_none()
                    && !speaks_amqp(ep).await
                {
                    return Err(self.unreachable(
                        "the port accepted the connection, then closed or reset it without starting the AMQP handshake: is an AMQP 0-9-1 broker listening there (not a proxy or another service)?".into(),
                    ));
                }
                Err(err.caused_by(&e))
            }
        }
    }

    fn unreachable(&self, why: String) -> TransportError {
        TransportError::Unreachable {
            target: self.target(),
            why: crate::secret::scrub(&why),
        }
    }

    /// Tell a refused login from a refused vhost. RabbitMQ closes the socket on a failed
    /// login unless the client asks for an explicit close (amqprs does not), so once the port
    /// is known to answer, a connection closed during the handshake means the login failed.
    fn classify_open_error(&self, text: &str) -> TransportError {
        let lower_tls = text.to_ascii_lowercase();
        if self.endpoint.tls.is_some()
            && ["certificate", "tls", "alert", "handshake", "ssl"]
                .iter()
                .any(|k| lower_tls.contains(k))
        {
            return self.unreachable(format!(
                "TLS handshake failed: {text}; check cacertfile= and server_name_indication= in the URL"
            ));
        }
        let target = self.target();
        let lower = text.to_ascii_lowercase();
        if lower.contains("530") || lower.contains("not_allowed") || lower.contains("vhost") {
            TransportError::VhostRefused {
                target,
                vhost: self.endpoint.vhost.clone(),
            }
        } else if [
            "403",
            "access_refused",
            "reset",
            "interrupted",
            "eof",
            "closed",
            "broken pipe",
        ]
        .iter()
        .any(|k| lower.contains(k))
        {
            TransportError::AuthRefused {
                target,
                user: self.endpoint.user.clone(),
            }
        } else {
            self.unreachable(text.to_string())
        }
    }

    fn broker_error(&self, what: impl Into<String>, e: amqprs::error::Error) -> TransportError {
        TransportError::Broker {
            what: what.into(),
            target: self.target(),
            why: crate::secret::scrub(&e.to_string()),
        }
        .caused_by(&e)
    }

    /// Whether `queue` exists (a passive declare). A failed passive declare closes its
    /// channel, so each check gets a fresh one.
    async fn queue_exists(&self, conn: &Connection, queue: &str) -> Result<bool, TransportError> {
        let ch = conn
            .open_channel(None)
            .await
            .map_err(|e| self.broker_error("opening a channel", e))?;
        let exists = ch
            .queue_declare(QueueDeclareArguments::new(queue).passive(true).finish())
            .await
            .is_ok();
        if exists {
            let _ = ch.close().await;
        }
        Ok(exists)
    }

    /// A flow started just before oemputx — in the background, as CI scripts start it —
    /// may not have declared its queue yet: wait for it, at most `--wait`, saying so at
    /// once (a mistyped name then costs the wait, not a silent one), and stop on Ctrl-C.
    async fn wait_for_queue(&self, conn: &Connection, queue: &str) -> Result<bool, TransportError> {
        let wait = self.setup.wait;
        crate::say!(
            "oemputx: queue '{queue}' does not exist yet on {}: waiting up to {} for the flow that owns it to declare it (--declare creates it; --wait sets the wait)",
            self.target(),
            humantime::format_duration(wait)
        );
        let deadline = std::time::Instant::now() + wait;
        while std::time::Instant::now() < deadline {
            if self
                .setup
                .interrupt
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                return Err(TransportError::Interrupted {
                    what: format!("waiting for queue '{queue}' to be declared"),
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            if self.queue_exists(conn, queue).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Check that `queue` exists, creating it with `declare`; without, the request queue
    /// (`of_flow`) is waited for ([`Self::wait_for_queue`]).
    async fn ensure_queue(
        &self,
        conn: &Connection,
        queue: &str,
        of_flow: bool,
    ) -> Result<(), TransportError> {
        // The kind asked for is the request queue's: a named reply queue stays the default.
        let kind = self.setup.queue_type.filter(|_| of_flow);
        let found = self.queue_exists(conn, queue).await?
            || (!self.setup.declare && of_flow && self.wait_for_queue(conn, queue).await?);
        if !found && !self.setup.declare {
            return Err(TransportError::MissingQueue {
                queue: queue.into(),
                target: self.target(),
            });
        }
        if found && kind.is_none() {
            return Ok(());
        }
        let ch = conn
            .open_channel(None)
            .await
            .map_err(|e| self.broker_error("opening a channel", e))?;
        let closed = CloseReason::default();
        let _ = ch.register_callback(closed.clone()).await;
        // Declaring a queue that exists with the same arguments changes nothing; with another
        // kind the broker refuses it (406 PRECONDITION_FAILED), which names the difference.
        // (A broker that relaxes its equivalence checks takes it: the check relies on it.)
        let args = QueueDeclareArguments::durable_client_named(queue)
            .arguments(queue_arguments(kind))
            .finish();
        let Err(e) = ch.queue_declare(args).await else {
            let _ = ch.close().await;
            return Ok(());
        };
        let what = match kind {
            Some(k) if found => format!("checking that queue '{queue}' is a {k} queue"),
            _ => format!("declaring queue '{queue}'"),
        };
        let why = match closed.wait().await {
            Some((406, text)) if found => format!(
                "{text}: it exists as another kind of queue (or with other arguments); delete it for --declare to create it as asked, or ask for its kind"
            ),
            Some((code, text)) => format!("{code} {text}"),
            None => e.to_string(),
        };
        Err(TransportError::Broker {
            what,
            target: self.target(),
            why: crate::secret::scrub(&why),
        }
        .caused_by(&e))
    }

    async fn prepare_async(&self) -> Result<Prepared, TransportError> {
        let (conn, _) = self.connect("oemputx-setup").await?;
        self.ensure_queue(&conn, &self.setup.request_queue, true)
            .await?;
        let mut cleared = 0;
        if let ReplyQueue::Named(q) = &self.setup.reply_queue {
            self.ensure_queue(&conn, q, false).await?;
            if self.setup.clear_reply_queue {
                let ch = conn
                    .open_channel(None)
                    .await
                    .map_err(|e| self.broker_error("opening a channel", e))?;
                cleared = ch
                    .queue_purge(QueuePurgeArguments::new(q))
                    .await
                    .map_err(|e| self.broker_error(format!("clearing reply queue '{q}'"), e))?
                    .unwrap_or(0) as u64;
                let _ = ch.close().await;
            }
        }
        let _ = conn.close().await;
        Ok(Prepared {
            cleared,
            ..Prepared::default()
        })
    }

    /// Start the router on a shared reply queue: its connection is opened here, on a
    /// runtime that then moves to the router's thread.
    fn start_router(&self, queue: &str) -> Result<(), TransportError> {
        let Some(routes) = self.routes.lock().ok().and_then(|mut r| r.take()) else {
            return Ok(());
        };
        let rt = self.runtime()?;
        let (conn, ch, rx) = rt.block_on(async {
            let (conn, _) = self.connect("oemputx-reply-router").await?;
            let ch = conn
                .open_channel(None)
                .await
                .map_err(|e| self.broker_error("opening a channel", e))?;
            let consume = BasicConsumeArguments::new(queue, "oemputx-router")
                .manual_ack(false)
                .finish();
            let (_, rx) = ch.basic_consume_rx(consume).await.map_err(|e| {
                self.broker_error(format!("consuming from reply queue '{queue}'"), e)
            })?;
            // The channel must outlive this block: dropping it would close the consumer.
            Ok::<_, TransportError>((conn, ch, rx))
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        let handle = std::thread::Builder::new()
            .name("oemputx-router".into())
            .spawn(move || route_replies(rt, (conn, ch), rx, &routes, &thread_stop))
            .map_err(|e| TransportError::Broker {
                what: "starting the reply router thread".into(),
                target: self.target(),
                why: e.to_string(),
            })?;
        if let Ok(mut r) = self.router.lock() {
            *r = Some(Router { stop, handle });
        }
        Ok(())
    }

    async fn open_session(
        &self,
        task: usize,
        inbox: Option<UnboundedReceiver<Reply>>,
    ) -> Result<Parts, TransportError> {
        let (conn, node) = self.connect(&format!("oemputx-task-{task}")).await?;
        let ch = conn
            .open_channel(None)
            .await
            .map_err(|e| self.broker_error("opening a channel", e))?;
        let reply_queue = match &self.setup.reply_queue {
            ReplyQueue::Named(q) => q.clone(),
            ReplyQueue::Direct => super::DIRECT_REPLY_TO.to_string(),
            // Refused before the run on this path (EndpointKind::refuse, lean_eligible).
            ReplyQueue::PerRequest => return Err(self.not_lean("--reply-queue per-request")),
            ReplyQueue::Temporary => {
                let declared = ch
                    .queue_declare(QueueDeclareArguments::exclusive_server_named())
                    .await
                    .map_err(|e| self.broker_error("declaring a temporary reply queue", e))?;
                declared
                    .map(|(name, _, _)| name)
                    .ok_or_else(|| TransportError::Broker {
                        what: "declaring a temporary reply queue".into(),
                        target: self.target(),
                        why: "the broker did not name the queue".into(),
                    })?
            }
        };
        let replies = match inbox {
            Some(inbox) => Source::Routed(inbox),
            None => {
                // Direct reply-to takes no acknowledgements (refused with --syncpoint).
                let acks = self.setup.syncpoint && self.setup.reply_queue != ReplyQueue::Direct;
                let consume = BasicConsumeArguments::new(&reply_queue, &format!("oemputx-{task}"))
                    .manual_ack(acks)
                    .finish();
                let (_tag, rx) = ch.basic_consume_rx(consume).await.map_err(|e| {
                    self.broker_error(format!("consuming from reply queue '{reply_queue}'"), e)
                })?;
                Source::Own(rx)
            }
        };
        if self.setup.syncpoint {
            ch.tx_select()
                .await
                .map_err(|e| self.broker_error("tx.select (for --syncpoint)", e))?;
        }
        let mut props = BasicProperties::default();
        props
            .with_reply_to(&reply_queue)
            .with_persistence(self.setup.persistent);
        Ok(Parts {
            conn,
            ch,
            replies,
            props,
            node,
        })
    }
}

/// What an AMQP session is made of, before it gets its runtime.
struct Parts {
    conn: Connection,
    ch: Channel,
    replies: Source,
    props: BasicProperties,
    /// The node of the endpoint the connection went to.
    node: String,
}

/// Where a session's replies come from.
enum Source {
    /// Its own consumer on its own reply queue.
    Own(UnboundedReceiver<ConsumerMessage>),
    /// The router of a shared reply queue.
    Routed(UnboundedReceiver<Reply>),
}

impl Source {
    /// The next reply; `None` when the consumer or router has gone.
    async fn next(&mut self) -> Option<Incoming> {
        match self {
            Source::Own(rx) => rx.recv().await.map(Incoming::from),
            Source::Routed(rx) => rx.recv().await.map(Incoming::Routed),
        }
    }
}

/// The router's loop: hand each reply to the task its correlation id names; replies that
/// name no task of this run go to task 0, so that they are counted once as unmatched.
fn route_replies(
    rt: Runtime,
    (conn, ch): (Connection, Channel),
    mut rx: UnboundedReceiver<ConsumerMessage>,
    routes: &[UnboundedSender<Reply>],
    stop: &AtomicBool,
) {
    rt.block_on(async {
        while !stop.load(Ordering::Relaxed) {
            let m = match tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
                Err(_) => continue,
                Ok(None) => break,
                Ok(Some(m)) => m,
            };
            let Incoming::Delivery(reply, _) = Incoming::from(m) else {
                continue;
            };
            let task = reply
                .correl_id
                .as_deref()
                .and_then(correl::parse)
                .map(|c| c.task)
                .filter(|&t| t < routes.len())
                .unwrap_or(0);
            // A task that has finished has dropped its inbox; its late replies are moot.
            let _ = routes[task].send(reply);
        }
        let _ = ch.close().await;
        let _ = conn.close().await;
    });
}

/// Whether `ep`'s port answers AMQP 0-9-1's protocol header with a frame (the broker's
/// Connection.Start: frame type 1, channel 0).
pub async fn speaks_amqp(ep: &AmqpEndpoint) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let probe = async {
        let mut s = tokio::net::TcpStream::connect((ep.host.as_str(), ep.port)).await?;
        s.write_all(b"AMQP\x00\x00\x09\x01").await?;
        let mut head = [0u8; 3];
        s.read_exact(&mut head).await?;
        Ok::<bool, std::io::Error>(head == [1, 0, 0])
    };
    matches!(
        tokio::time::timeout(CONNECT_TIMEOUT, probe).await,
        Ok(Ok(true))
    )
}

/// A node as reports name it: `host:port`.
fn node_name(node: &(String, u16)) -> String {
    crate::url_parts::node_name(&node.0, node.1)
}

/// Connection arguments for an endpoint, with TLS for `amqps://`.
pub fn connection_args(ep: &AmqpEndpoint, name: &str) -> Result<OpenConnectionArguments, String> {
    let mut args = OpenConnectionArguments::new(&ep.host, ep.port, &ep.user, ep.password.expose());
    args.virtual_host(&ep.vhost).connection_name(name);
    if let Some(tls) = &ep.tls {
        // rustls needs one process-wide crypto provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // amqprs reads these files whole, whatever their size or kind: each is checked
        // first by the reader every file goes through (a 4 GiB "CA file" was read into
        // memory; a FIFO would have been waited on).
        let files = [
            (tls.ca_file.as_deref(), "cacertfile"),
            (tls.cert_file.as_deref(), "certfile"),
            (tls.key_file.as_deref(), "keyfile"),
        ];
        for (path, what) in files {
            if let Some(path) = path {
                crate::files::read_regular(path, crate::files::MAX_CONFIG_BYTES, what)
                    .map_err(|e| format!("{what}: {e}"))?;
            }
        }
        let adaptor = match (&tls.cert_file, &tls.key_file) {
            (Some(cert), Some(key)) => amqprs::tls::TlsAdaptor::with_client_auth(
                tls.ca_file.as_deref(),
                cert,
                key,
                tls.server_name.clone(),
            ),
            _ => amqprs::tls::TlsAdaptor::without_client_auth(
                tls.ca_file.as_deref(),
                tls.server_name.clone(),
            ),
        }
        .map_err(|e| format!("cannot set up TLS (CA file, certificate or key unreadable?): {e}"))?;
        args.tls_adaptor(adaptor);
    }
    Ok(args)
}

impl Transport for Amqp {
    fn prepare(&self) -> Result<Prepared, TransportError> {
        let prepared = self.runtime()?.block_on(self.prepare_async())?;
        if let ReplyQueue::Named(q) = &self.setup.reply_queue {
            self.start_router(q)?;
        }
        Ok(prepared)
    }

    fn session(&self, task: usize) -> Result<TaskSession, TransportError> {
        if let Some(reply) = self.lean_eligible() {
            return self.lean_session(task, reply);
        }
        if self.setup.confirm_window.is_some() {
            return Err(self.not_lean("--confirm-window"));
        }
        Ok(TaskSession::Async(Box::new(self.open_task(task)?)))
    }

    fn max_message_size(&self) -> usize {
        MAX_MESSAGE
    }
}

impl Amqp {
    /// Whether a task's session can be the lean synchronous one ([`lean`]): plain TCP, its
    /// own reply queue, no transactions; and where its replies come back.
    fn lean_eligible(&self) -> Option<LeanReply> {
        if self.endpoint.tls.is_some()
            || self.setup.syncpoint
            || std::env::var("OEMPUTX_AMQP_CLIENT").is_ok_and(|v| v == "amqprs")
        {
            return None;
        }
        match &self.setup.reply_queue {
            ReplyQueue::Temporary => Some(LeanReply::Temporary),
            ReplyQueue::Direct => Some(LeanReply::Queue(super::DIRECT_REPLY_TO.to_string())),
            ReplyQueue::PerRequest => Some(LeanReply::PerRequest),
            // A named queue shared by several tasks is read by the router.
            ReplyQueue::Named(q) if self.setup.tasks <= 1 => Some(LeanReply::Queue(q.clone())),
            ReplyQueue::Named(_) => None,
        }
    }

    /// Task `task`'s lean session, on the first of the endpoint's nodes that takes it (a
    /// refused login or a missing queue ends the search: the other nodes share them).
    fn lean_session(&self, task: usize, reply: LeanReply) -> Result<TaskSession, TransportError> {
        let mut last = None;
        for node in &self.endpoint.nodes {
            let opened = lean::LeanSession::open(
                &self.endpoint.at(node),
                &self.target(),
                lean::LeanOptions {
                    request_queue: &self.setup.request_queue,
                    reply: reply.clone(),
                    persistent: self.setup.persistent,
                    confirm_window: self.setup.confirm_window,
                    wait: self.setup.wait,
                    task,
                },
            );
            match opened {
                Ok(s) => return Ok(TaskSession::Blocking(Box::new(s.on_node(node_name(node))))),
                Err(e) if !matches!(e.kind(), TransportError::ConnectionLost { .. }) => {
                    return Err(e);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| self.unreachable("no node".into())))
    }

    /// What only the lean session does, asked of the amqprs one (`amqps://`, --syncpoint or
    /// OEMPUTX_AMQP_CLIENT=amqprs): "not yet", naming the option.
    fn not_lean(&self, what: &str) -> TransportError {
        TransportError::Broker {
            what: what.to_string(),
            target: self.target(),
            why: "not yet supported through the amqprs client (amqps://, --syncpoint, a reply queue shared by several tasks, or OEMPUTX_AMQP_CLIENT=amqprs): use amqp:// without them".into(),
        }
    }

    /// Open task `task`'s connection, reply queue and consumer.
    fn open_task(&self, task: usize) -> Result<AmqpSession, TransportError> {
        let rt = Arc::new(self.runtime()?);
        let inbox = self
            .inboxes
            .lock()
            .ok()
            .and_then(|mut v| v.get_mut(task).and_then(Option::take));
        let shared = matches!(self.setup.reply_queue, ReplyQueue::Named(_)) && self.setup.tasks > 1;
        if shared && inbox.is_none() {
            // The router handed this task's inbox to its first connection: a second one
            // would consume the shared queue beside the router and take other tasks' replies.
            return Err(TransportError::NotYet {
                what: "connecting a task again whose replies come through a reply queue shared by several tasks".into(),
                target: self.target(),
                fix: "give each task its own reply queue (leave --reply-queue out), or run one task",
            });
        }
        let parts = rt.block_on(self.open_session(task, inbox))?;
        Ok(AmqpSession {
            rt,
            parts: Some(parts),
            request_queue: self.setup.request_queue.clone(),
            target: self.target(),
            syncpoint: self.setup.syncpoint,
            last_tag: None,
            unsent: Vec::new(),
        })
    }
}

/// One task's AMQP connection. Its operations are async; the driver awaits them in one
/// entry into the session's runtime per phase of its loop (see [`super::session`]).
pub struct AmqpSession {
    rt: Arc<Runtime>,
    /// `None` only after close.
    parts: Option<Parts>,
    request_queue: String,
    target: String,
    syncpoint: bool,
    /// Delivery tag of the newest reply not yet acknowledged (syncpoint only).
    last_tag: Option<u64>,
    /// Requests `put` left to publish in the next get, commit or close.
    unsent: Vec<(BasicProperties, Vec<u8>)>,
}

/// Publish the requests `put` left, in order; the first failure stops the rest. Putting the
/// publish off to the next get lets one pass of the runtime send the request and wait for
/// the reply, as a hand-written async loop would; a runtime pass per put measurably raised
/// the driver's CPU per message.
async fn send_all(
    ch: &Channel,
    queue: &str,
    unsent: &mut Vec<(BasicProperties, Vec<u8>)>,
) -> Result<(), amqprs::error::Error> {
    for (props, body) in unsent.drain(..) {
        ch.basic_publish(props, body, BasicPublishArguments::new("", queue))
            .await?;
    }
    Ok(())
}

impl AmqpSession {
    fn parts(&mut self) -> Result<&mut Parts, TransportError> {
        self.parts
            .as_mut()
            .ok_or_else(|| TransportError::ConnectionLost {
                target: self.target.clone(),
                why: "session already closed".into(),
            })
    }

    fn lost(&self, why: impl std::fmt::Display) -> TransportError {
        TransportError::ConnectionLost {
            target: self.target.clone(),
            why: why.to_string(),
        }
    }

    /// Queue a request; it is published by the next get, commit or close.
    fn put_request(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        let Some(parts) = self.parts.as_ref() else {
            return Err(self.lost("session already closed"));
        };
        let mut props = parts.props.clone();
        props
            .with_correlation_id(correl_id)
            .with_message_id(correl_id);
        self.unsent.push((props, body.to_vec()));
        Ok(())
    }

    /// Publish what is queued, then wait up to `wait` for the next reply. Must run inside
    /// the session's runtime.
    async fn next_reply(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        let Some(parts) = self.parts.as_mut() else {
            return Err(self.lost("session already closed"));
        };
        let Parts { ch, replies, .. } = parts;
        if let Err(e) = send_all(ch, &self.request_queue, &mut self.unsent).await {
            return Err(self.lost(format!("publishing a request: {e}")));
        }
        let Ok(next) = tokio::time::timeout(wait, replies.next()).await else {
            return Ok(None);
        };
        match next {
            // The stream of replies ended: say which of its ends went away.
            None => {
                let why = if !ch.is_connection_open() {
                    "the connection to the broker was lost (the broker closed it, or the network failed)"
                } else if !ch.is_open() {
                    "the broker closed the channel"
                } else {
                    "the broker cancelled the reply consumer (was the reply queue deleted?)"
                };
                Err(self.lost(why))
            }
            Some(Incoming::Routed(r)) => Ok(Some(r)),
            Some(Incoming::Delivery(reply, tag)) => {
                if self.syncpoint {
                    self.last_tag = tag.or(self.last_tag);
                }
                Ok(Some(reply))
            }
        }
    }

    /// Under --syncpoint: publish what is queued, acknowledge the replies got, tx.commit.
    async fn commit_work(&mut self) -> Result<(), TransportError> {
        if !self.syncpoint {
            return Ok(());
        }
        let tag = self.last_tag.take();
        let ch = self.parts()?.ch.clone();
        let (unsent, queue) = (&mut self.unsent, self.request_queue.as_str());
        let result = async move {
            send_all(&ch, queue, unsent).await?;
            if let Some(tag) = tag {
                ch.basic_ack(BasicAckArguments::new(tag, true)).await?;
            }
            ch.tx_commit().await
        }
        .await;
        result.map_err(|e| self.lost(format!("tx.commit: {e}")))
    }

    /// Publish what is queued and close the channel and connection.
    async fn shut(&mut self) -> Result<(), TransportError> {
        if let Some(parts) = self.parts.take() {
            let Parts { conn, ch, .. } = parts;
            let (unsent, queue) = (&mut self.unsent, self.request_queue.as_str());
            let closed = async move {
                let _ = send_all(&ch, queue, unsent).await;
                let _ = ch.close().await;
                conn.close().await
            }
            .await;
            closed.map_err(|e| self.lost(format!("closing: {e}")))?;
        }
        Ok(())
    }
}

impl AsyncSession for AmqpSession {
    fn runtime(&self) -> Arc<Runtime> {
        self.rt.clone()
    }
    fn node(&self) -> Option<String> {
        self.parts.as_ref().map(|p| p.node.clone())
    }
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        self.put_request(body, correl_id)
    }
    fn get(&mut self, wait: Duration) -> SessionFuture<'_, Result<Option<Reply>, TransportError>> {
        Box::pin(self.next_reply(wait))
    }
    fn commit(&mut self) -> SessionFuture<'_, Result<(), TransportError>> {
        Box::pin(self.commit_work())
    }
    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        let rt = self.rt.clone();
        rt.block_on(self.shut())
    }
}

impl Drop for AmqpSession {
    fn drop(&mut self) {
        // amqprs connections and channels clean up on drop through the runtime they were
        // made on; a session dropped without close (after an error) must drop them inside it.
        let _inside = self.rt.enter();
        self.parts.take();
    }
}

/// A reply off the wire (with its delivery tag), or one another task's consumer routed here.
enum Incoming {
    Delivery(Reply, Option<u64>),
    Routed(Reply),
}

impl From<ConsumerMessage> for Incoming {
    fn from(m: ConsumerMessage) -> Self {
        let reply = Reply {
            correl_id: m
                .basic_properties
                .as_ref()
                .and_then(|p| p.correlation_id())
                .cloned(),
            len: m.content.as_ref().map_or(0, Vec::len),
        };
        Incoming::Delivery(reply, m.deliver.as_ref().map(|d| d.delivery_tag()))
    }
}

/// The broker's reason for closing a channel (its reply code and text), which amqprs hands
/// only to a channel's callback: a refused declare's error says just "channel closed".
#[derive(Clone, Default)]
struct CloseReason(Arc<Mutex<Option<(u16, String)>>>);

impl CloseReason {
    /// The reason, once the callback has it (it may run just after the call's error).
    async fn wait(&self) -> Option<(u16, String)> {
        for _ in 0..20 {
            if let Some(r) = self.0.lock().ok().and_then(|r| r.clone()) {
                return Some(r);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }
}

#[async_trait::async_trait]
impl amqprs::callbacks::ChannelCallback for CloseReason {
    async fn close(
        &mut self,
        _channel: &amqprs::channel::Channel,
        close: amqprs::CloseChannel,
    ) -> Result<(), amqprs::error::Error> {
        if let Ok(mut r) = self.0.lock() {
            *r = Some((close.reply_code(), close.reply_text().clone()));
        }
        Ok(())
    }
    async fn cancel(
        &mut self,
        _channel: &amqprs::channel::Channel,
        _cancel: amqprs::Cancel,
    ) -> Result<(), amqprs::error::Error> {
        Ok(())
    }
    async fn flow(
        &mut self,
        _channel: &amqprs::channel::Channel,
        active: bool,
    ) -> Result<bool, amqprs::error::Error> {
        Ok(active)
    }
    async fn publish_ack(&mut self, _channel: &amqprs::channel::Channel, _ack: amqprs::Ack) {}
    async fn publish_nack(&mut self, _channel: &amqprs::channel::Channel, _nack: amqprs::Nack) {}
    async fn publish_return(
        &mut self,
        _channel: &amqprs::channel::Channel,
        _ret: amqprs::Return,
        _basic_properties: BasicProperties,
        _content: Vec<u8>,
    ) {
    }
}

/// The arguments that declare a queue of `kind` (`x-queue-type`); none for the broker's
/// default. sample-flow declares its input queue with the same.
pub fn queue_arguments(kind: Option<QueueType>) -> amqprs::FieldTable {
    let mut args = amqprs::FieldTable::new();
    if let Some(k) = kind
        && let Ok(name) = "x-queue-type".try_into()
    {
        args.insert(name, k.as_str().into());
    }
    args
}

impl EndpointKind for AmqpEndpoint {
    fn transport(&self) -> &'static str {
        "amqp"
    }
    fn refuse(&self, setup: &QueueSetup) -> Result<(), super::OptionRefused> {
        super::endpoint::refuse_mq_calls(setup)?;
        refuse_paths(setup, self.tls.is_some())
    }
    fn redacted(&self) -> String {
        AmqpEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(Amqp::new(self.clone(), setup)))
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    fn broker_address(&self) -> Option<(String, u16)> {
        Some((self.host.clone(), self.port))
    }
    fn consumers(&self, queue: &str) -> Result<Option<u32>, TransportError> {
        admin::consumers(self, queue).map(Some)
    }
    fn counted_consumers(&self, queue: &str) -> Option<u32> {
        admin::consumers(self, queue).ok()
    }
    fn delete_queue(&self, queue: &str) -> Result<(), TransportError> {
        admin::delete_queue(self, queue)
    }
    fn has_queue_types(&self) -> bool {
        true
    }
}

/// The reply paths and confirms the AMQP transport cannot combine: direct reply-to takes no
/// acknowledgements, a channel is transactional or confirming, and per-request queues and
/// confirms are the lean session's (not `amqps://`, `--syncpoint` or a shared reply queue).
fn refuse_paths(setup: &QueueSetup, tls: bool) -> Result<(), super::OptionRefused> {
    use super::OptionRefused;
    if setup.syncpoint && setup.reply_queue == ReplyQueue::Direct {
        return Err(OptionRefused::new(
            "--syncpoint",
            "direct reply-to (amq.rabbitmq.reply-to) takes no acknowledgements, so replies cannot be got under syncpoint: leave --syncpoint out, or use a reply queue (per-task, the default)",
        ));
    }
    if setup.syncpoint && setup.confirm_window.is_some() {
        return Err(OptionRefused::new(
            "--confirm-window",
            "an AMQP channel is either transactional (--syncpoint) or in confirm mode, not both: leave one out",
        ));
    }
    // What needs the lean session, and what keeps a run off it (lean_eligible).
    let lean_only = if setup.reply_queue == ReplyQueue::PerRequest {
        Some(("--reply-queue", "a reply queue per request"))
    } else {
        setup
            .confirm_window
            .map(|_| ("--confirm-window", "publisher confirms"))
    };
    let shared = matches!(setup.reply_queue, ReplyQueue::Named(_)) && setup.tasks > 1;
    let off_lean = if tls {
        Some("amqps://")
    } else if setup.syncpoint {
        Some("--syncpoint")
    } else {
        shared.then_some("a named reply queue shared by several tasks")
    };
    if let (Some((flag, what)), Some(why)) = (lean_only, off_lean) {
        return Err(OptionRefused::new(
            flag,
            format!(
                "{what} with {why} is not yet supported (only oemputx's lean amqp:// session does it): leave one of them out"
            ),
        ));
    }
    Ok(())
}
