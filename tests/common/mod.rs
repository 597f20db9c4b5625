//! Helpers shared by the integration tests: fresh queue names, an echo flow that stops and
//! cleans up after itself, and queue administration on the test broker.
#![allow(dead_code)]

#[path = "flow.rs"]
mod flow;
pub use flow::SampleFlow;

/// The sample-flow binary beside this build's oemputx.
pub fn flow_bin() -> std::path::PathBuf {
    flow::sample_flow_bin()
}

use amqprs::channel::{QueueDeclareArguments, QueueDeleteArguments};
use amqprs::connection::{Connection, OpenConnectionArguments};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

async fn connect() -> Connection {
    let ep = oemputx::transport::amqp::url::AmqpEndpoint::parse(&amqp_url())
        .expect("OEMPUTX_TEST_AMQP must be an amqp:// URL");
    let mut args = OpenConnectionArguments::new(&ep.host, ep.port, &ep.user, ep.password.expose());
    args.virtual_host(&ep.vhost);
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

/// Messages waiting on a queue.
pub fn queue_depth(queue: &str) -> u32 {
    runtime().block_on(async {
        let conn = connect().await;
        let ch = conn.open_channel(None).await.expect("channel");
        let (_, depth, _) = ch
            .queue_declare(QueueDeclareArguments::new(queue).passive(true).finish())
            .await
            .expect("queue exists")
            .expect("declare-ok");
        let _ = conn.close().await;
        depth
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

/// Run oemputx with `args` and JSON on stdout; returns (exit code, parsed JSON or Null, stderr).
pub fn run_json(args: &[&str]) -> (i32, serde_json::Value, String) {
    run_json_env(args, &[])
}

/// [`run_json`] with these environment variables set (a password, say).
pub fn run_json_env(args: &[&str], env: &[(&str, &str)]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_oemputx"))
        .envs(env.iter().copied())
        .args(args)
        .args(["--export-json", "-", "--quiet", "--no-save"])
        .output()
        .expect("oemputx runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The oemputx binary, as a test runs it: profiles only from what the test gives (never the
/// developer's home), nothing saved under reports/, and no hang beyond a minute.
pub fn oemputx() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("oemputx").expect("binary built");
    c.env("XDG_CONFIG_HOME", "/nonexistent-oemputx-test")
        .env("OEMPUTX_NO_SAVE", "1")
        .timeout(Duration::from_secs(60));
    c
}

/// A group's row of a JSON report, or null.
pub fn group<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

/// The database the tests use: $OEMPUTX_TEST_PG, or the local PostgreSQL. (The password is
/// the one the test command sets when it installs PostgreSQL; trust auth ignores it.)
pub fn pg_url() -> String {
    std::env::var("OEMPUTX_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

/// Run one SQL statement returning a single bigint (or none).
pub fn pg_scalar(sql: &str) -> Option<i64> {
    runtime().block_on(async {
        let (client, conn) = tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls)
            .await
            .expect("the test database must be running (the test command starts it)");
        tokio::spawn(conn);
        let row = client.query_opt(sql, &[]).await.expect("query");
        row.map(|r| r.get::<_, i64>(0))
    })
}

/// A table name no other test uses; dropped when the guard goes.
pub struct TableGuard(pub String);

impl TableGuard {
    pub fn fresh(what: &str) -> TableGuard {
        let q = fresh_queue(what);
        TableGuard(q.replace('.', "_"))
    }
}

impl Drop for TableGuard {
    fn drop(&mut self) {
        runtime().block_on(async {
            if let Ok((client, conn)) =
                tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls).await
            {
                tokio::spawn(conn);
                let _ = client
                    .batch_execute(&format!("DROP TABLE IF EXISTS {}", self.0))
                    .await;
            }
        });
    }
}

/// A report's integrity counts: (sent, matched, timed out, unmatched, duplicates).
pub fn integrity5(j: &serde_json::Value) -> (u64, u64, u64, u64, u64) {
    let i = &j["integrity"];
    let n = |k: &str| i[k].as_u64().unwrap_or(u64::MAX);
    (
        n("sent"),
        n("matched"),
        n("timed_out"),
        n("unmatched"),
        n("duplicates"),
    )
}
