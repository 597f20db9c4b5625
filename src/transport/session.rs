//! A task's session and how the driver's loop drives it.
//!
//! A transport's client is either blocking (the embedded queue manager, the MQI) or async on a
//! runtime of its own (amqprs). The driver's loop is written once, as async code over
//! [`LoopSession`]; [`PhaseRunner`] runs one phase of it (warmup, probe, a measured round) to
//! its end: a blocking session's calls complete at once inside the future, an async session's
//! phase runs in one entry into its runtime, as a hand-written async client loop would
//! (one entry per put and get measurably cost CPU per message).
//!
//! Both kinds are trait objects, so the driver names no concrete transport: a new transport
//! implements [`Session`] or [`AsyncSession`] in its own files.

use super::{Reply, TransportError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::runtime::Runtime;

/// A future borrowed from a session, as an [`AsyncSession`] returns it.
pub type SessionFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One task's connection, with calls that block until done.
pub trait Session: Send {
    /// Put one request carrying `correl_id` (as correlation id and message id) and this
    /// session's reply queue.
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError>;
    /// Wait up to `wait` for the next reply; `None` when none came.
    fn get(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError>;
    /// Commit the unit of work under syncpoint (puts become visible, gets are acknowledged).
    fn commit(&mut self) -> Result<(), TransportError>;
    /// The driver stopped waiting for every request in flight (timed out or abandoned); a
    /// transport that gets replies by correlation id stops asking for theirs.
    fn forget_pending(&mut self) {}
    /// Close the connection cleanly.
    fn close(self: Box<Self>) -> Result<(), TransportError>;
    /// The node of a cluster the connection went to (`host:port`), where the client says.
    fn node(&self) -> Option<String> {
        None
    }
}

/// One task's connection through an async client that runs on its own runtime.
pub trait AsyncSession: Send {
    /// The runtime the session's client runs on: its futures run inside it.
    fn runtime(&self) -> Arc<Runtime>;
    /// Queue or send one request carrying `correl_id` (as correlation id and message id).
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError>;
    /// Send what `put` queued, then wait up to `wait` for the next reply.
    fn get(&mut self, wait: Duration) -> SessionFuture<'_, Result<Option<Reply>, TransportError>>;
    /// Under syncpoint: send what is queued and commit the unit of work.
    fn commit(&mut self) -> SessionFuture<'_, Result<(), TransportError>>;
    /// Send what is queued and close the connection.
    fn close(self: Box<Self>) -> Result<(), TransportError>;
    /// The node of a cluster the connection went to (`host:port`), where the client says.
    fn node(&self) -> Option<String> {
        None
    }
}

/// A task's session, as a transport opens it.
pub enum TaskSession {
    /// Calls that block until done: the driver makes them one by one.
    Blocking(Box<dyn Session>),
    /// An async client: each phase of the driver's loop runs in one entry into its runtime.
    Async(Box<dyn AsyncSession>),
}

/// The loop's operations on a session, awaited: what the driver's loop is written against.
#[allow(async_fn_in_trait)] // used generically within the crate, never as `dyn`
pub trait LoopSession {
    /// What runs a phase of the loop to its end.
    type Runner: PhaseRunner;
    fn runner(&self) -> Self::Runner;
    fn send(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError>;
    async fn receive(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError>;
    async fn commit_unit(&mut self) -> Result<(), TransportError>;
    fn forget_pending(&mut self);
    fn finish(self) -> Result<(), TransportError>;
    /// The node the connection went to, where the client says.
    fn node(&self) -> Option<String>;
    /// A new connection for task `task` of the same kind, after this one broke.
    fn reopen(transport: &dyn super::Transport, task: usize) -> Result<Self, TransportError>
    where
        Self: Sized;
}

/// Runs one phase of the loop (a future) to completion.
pub trait PhaseRunner {
    fn run<F: Future>(&self, f: F) -> F::Output;
}

/// Runs a future that never waits: a blocking session's phase is done in one poll.
pub struct Immediate;

impl PhaseRunner for Immediate {
    fn run<F: Future>(&self, f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            // Not reached: nothing a blocking session awaits is ever pending.
            std::thread::yield_now();
        }
    }
}

impl PhaseRunner for Arc<Runtime> {
    fn run<F: Future>(&self, f: F) -> F::Output {
        self.block_on(f)
    }
}

impl LoopSession for Box<dyn Session> {
    type Runner = Immediate;
    fn runner(&self) -> Immediate {
        Immediate
    }
    fn send(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        self.put(body, correl_id)
    }
    async fn receive(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        self.get(wait)
    }
    async fn commit_unit(&mut self) -> Result<(), TransportError> {
        self.commit()
    }
    fn forget_pending(&mut self) {
        Session::forget_pending(self.as_mut());
    }
    fn finish(self) -> Result<(), TransportError> {
        self.close()
    }
    fn node(&self) -> Option<String> {
        Session::node(self.as_ref())
    }
    fn reopen(transport: &dyn super::Transport, task: usize) -> Result<Self, TransportError> {
        match transport.session(task)? {
            TaskSession::Blocking(s) => Ok(s),
            TaskSession::Async(_) => Err(kind_changed()),
        }
    }
}

/// A transport whose sessions changed kind between two connections: not one of ours.
fn kind_changed() -> TransportError {
    TransportError::ConnectionLost {
        target: "the queue manager".into(),
        why: "its new connection was of another kind than the one that broke".into(),
    }
}

impl LoopSession for Box<dyn AsyncSession> {
    type Runner = Arc<Runtime>;
    fn runner(&self) -> Arc<Runtime> {
        self.runtime()
    }
    fn send(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        self.put(body, correl_id)
    }
    async fn receive(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        self.get(wait).await
    }
    async fn commit_unit(&mut self) -> Result<(), TransportError> {
        self.commit().await
    }
    fn forget_pending(&mut self) {}
    fn finish(self) -> Result<(), TransportError> {
        self.close()
    }
    fn node(&self) -> Option<String> {
        AsyncSession::node(self.as_ref())
    }
    fn reopen(transport: &dyn super::Transport, task: usize) -> Result<Self, TransportError> {
        match transport.session(task)? {
            TaskSession::Async(s) => Ok(s),
            TaskSession::Blocking(_) => Err(kind_changed()),
        }
    }
}
