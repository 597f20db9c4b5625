//! The test broker (RabbitMQ, or $OEMPUTX_TEST_AMQP): fresh queue names, queue
//! administration, and an echo flow that stops and cleans up after itself.

use crate::flow::SampleFlow;
use amqprs::channel::{QueueDeclareArguments, QueueDeleteArguments};
use amqprs::connection::{Connection, OpenConnectionArguments};
use std::sync::atomic::{AtomicU64, Ordering};

/// The broker the tests use: $OEMPUTX_TEST_AMQP, or the local RabbitMQ.
pub fn amqp_url() -> String {
    std::env::var("OEMPUTX_TEST_AMQP")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A queue name no other test (or earlier run) uses.
pub fn fresh_queue(what: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "oemputx.test.{what}.{}.{}.{}",
        std::process::id(),
        nanos % 1_000_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The test broker's connection arguments, from [`amqp_url`].
pub fn open_args() -> OpenConnectionArguments {
    let u = url::Url::parse(&amqp_url()).expect("OEMPUTX_TEST_AMQP must be an amqp:// URL");
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let user = Some(u.username())
        .filter(|s| !s.is_empty())
        .map_or("guest".into(), decode);
    let password = u.password().map_or("guest".into(), decode);
    let vhost = match u.path() {
        "" | "/" => "/".to_string(),
        p => decode(&p[1..]),
    };
    let host = u
        .host_str()
        .unwrap_or("127.0.0.1")
        .trim_matches(['[', ']'])
        .to_string();
    let mut args = OpenConnectionArguments::new(&host, u.port().unwrap_or(5672), &user, &password);
    args.virtual_host(&vhost);
    args
}

async fn connect() -> Connection {
    let args = open_args();
    Connection::open(&args)
        .await
        .expect("the test broker must be running (the test command starts it)")
}

/// Delete a queue, if it exists.
pub fn delete_queue(queue: &str) {
    runtime().block_on(async {
        let conn = connect().await;
        let ch = conn.open_channel(None).await.expect("channel");
        let _ = ch.queue_delete(QueueDeleteArguments::new(queue)).await;
        let _ = conn.close().await;
    });
}

/// Deletes its queue when dropped, so a failing test cleans up too.
pub struct QueueGuard(pub String);

impl Drop for QueueGuard {
    fn drop(&mut self) {
        delete_queue(&self.0);
    }
}

/// Create a durable queue.
pub fn declare_queue(queue: &str) {
    runtime().block_on(async {
        let conn = connect().await;
        let ch = conn.open_channel(None).await.expect("channel");
        ch.queue_declare(QueueDeclareArguments::durable_client_named(queue))
            .await
            .expect("declare");
        let _ = conn.close().await;
    });
}

/// Put `n` requests on `queue` (the default exchange), each asking for its reply on
/// `reply_to` with a correlation id of its own: a backlog for a responder to drain.
pub fn publish_requests(queue: &str, n: usize, reply_to: &str) {
    use amqprs::BasicProperties;
    use amqprs::channel::BasicPublishArguments;
    runtime().block_on(async {
        let conn = connect().await;
        let ch = conn.open_channel(None).await.expect("channel");
        for i in 0..n {
            let mut props = BasicProperties::default();
            props
                .with_reply_to(reply_to)
                .with_correlation_id(&format!("drain-{i}"));
            ch.basic_publish(
                props,
                b"<request/>".to_vec(),
                BasicPublishArguments::new("", queue),
            )
            .await
            .expect("publish");
        }
        // A round trip on the channel: every publish before it has reached the broker.
        let _ = ch
            .queue_declare(QueueDeclareArguments::durable_client_named(queue))
            .await;
        let _ = conn.close().await;
    });
}

/// Messages waiting on a queue.
pub fn queue_depth(queue: &str) -> u32 {
    queue_counts(queue).0
}

/// Consumers of a queue, as the broker counts them.
pub fn consumer_count(queue: &str) -> u32 {
    queue_counts(queue).1
}

/// Delete an exchange on the test broker (what `--declare` made), if it is there.
pub fn delete_exchange(name: &str) {
    runtime().block_on(async {
        let conn = connect().await;
        if let Ok(ch) = conn.open_channel(None).await {
            let _ = ch
                .exchange_delete(amqprs::channel::ExchangeDeleteArguments::new(name))
                .await;
            let _ = ch.close().await;
        }
        let _ = conn.close().await;
    });
}

/// An exchange a test named (a fresh name), deleted when dropped, whatever the test's end.
pub struct ExchangeGuard(pub String);

impl Drop for ExchangeGuard {
    fn drop(&mut self) {
        delete_exchange(&self.0);
    }
}

/// Whether a queue exists on the test broker (a passive declare answered, not refused).
pub fn queue_exists(queue: &str) -> bool {
    try_queue_counts(queue).is_some()
}

/// (messages, consumers) of a queue, by a passive declare.
fn queue_counts(queue: &str) -> (u32, u32) {
    try_queue_counts(queue).unwrap_or_else(|| panic!("queue {queue} does not exist"))
}

/// (messages, consumers), or `None` when the broker refuses the passive declare (404: no
/// such queue; it closes the channel).
fn try_queue_counts(queue: &str) -> Option<(u32, u32)> {
    runtime().block_on(async {
        let conn = connect().await;
        let ch = conn.open_channel(None).await.expect("channel");
        let answer = ch
            .queue_declare(QueueDeclareArguments::new(queue).passive(true).finish())
            .await;
        let _ = conn.close().await;
        answer
            .ok()
            .flatten()
            .map(|(_, depth, consumers)| (depth, consumers))
    })
}

/// `sample-flow` (`--echo`, or the reference flow) on a queue; stopped (SIGTERM) and its
/// queue deleted on drop.
pub struct EchoFlow {
    /// `None` only while dropping.
    flow: Option<SampleFlow>,
    pub queue: String,
}

impl EchoFlow {
    /// The responder's process id.
    pub fn pid(&self) -> u32 {
        self.flow.as_ref().map_or(0, SampleFlow::pid)
    }

    pub fn start(queue: &str, extra: &[&str]) -> EchoFlow {
        let mut args = vec!["--echo"];
        args.extend_from_slice(extra);
        Self::spawn(queue, &args, "echoing")
    }

    /// The full reference flow (not `--echo`), with `extra` options such as `--db`.
    pub fn reference(queue: &str, extra: &[&str]) -> EchoFlow {
        Self::spawn(queue, extra, "processing")
    }

    fn spawn(queue: &str, extra: &[&str], ready_word: &str) -> EchoFlow {
        let url = amqp_url();
        let mut args = vec!["--url", url.as_str(), "--input-queue", queue];
        args.extend_from_slice(extra);
        EchoFlow {
            flow: Some(SampleFlow::start(&args, ready_word)),
            queue: queue.to_string(),
        }
    }
}

impl Drop for EchoFlow {
    fn drop(&mut self) {
        // Stop the flow first, so that it does not re-declare the queue.
        drop(self.flow.take());
        delete_queue(&self.queue);
    }
}
