//! Which signal stopped the run: set by the handlers `main` installs, read by whatever
//! reports the stop (a report says SIGTERM from a supervisor, not Ctrl-C). A leaf module, so
//! that reports can name the signal without depending on the exit codes above them.

/// The signal that interrupted the run (0 when none), set by the handlers `main` installs:
/// a report says which one stopped it (SIGTERM from a supervisor is no Ctrl-C).
pub static LAST_SIGNAL: std::sync::LazyLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::LazyLock::new(Default::default);

/// How a report names what interrupted the run.
pub fn interrupted_by() -> &'static str {
    match LAST_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) as i32 {
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "Ctrl-C",
    }
}

/// Whether a signal (Ctrl-C, SIGTERM) has asked oemputx to stop: set by the handlers `main`
/// installs, so that a wait deep in a client library's handshake sees it without the run's
/// flag being handed down to it.
pub fn interrupted() -> bool {
    !FINISHING.with(std::cell::Cell::get)
        && LAST_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) != 0
}

thread_local! {
    /// Set while this thread tidies up after the run ([`finishing`]).
    static FINISHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f`, the tidying after a run (deleting the queues oemputx made), with its waits
/// blind to a signal that has already come: the signal that ended the run must not also
/// leave its queues behind on a shared broker. Those waits keep their own bounds, and a
/// second Ctrl-C still ends the process at once.
pub fn finishing<T>(f: impl FnOnce() -> T) -> T {
    let before = FINISHING.with(|c| c.replace(true));
    let out = f();
    FINISHING.with(|c| c.set(before));
    out
}

/// How a bounded wait ended without its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The bound passed.
    Elapsed,
    /// A signal arrived.
    Interrupted,
}

/// How often a bounded wait looks for a signal: quick to a person, nothing to the CPU.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// `fut`'s output, unless `bound` passes or a signal arrives first. Every handshake with a
/// broker waits through this: a silent port held a Ctrl-C for the whole bound (issue 48,
/// class d: every wait bounded by a setting and interruptible).
pub async fn within<F: std::future::Future>(
    bound: std::time::Duration,
    fut: F,
) -> Result<F::Output, Stopped> {
    within_watching(bound, interrupted, fut).await
}

/// [`within`], looking at `stop` for the signal: a test's own flag, or the flag of a
/// program that handles its signals itself (sample-flow).
pub async fn within_watching<F: std::future::Future>(
    bound: std::time::Duration,
    stop: impl Fn() -> bool,
    fut: F,
) -> Result<F::Output, Stopped> {
    let watch = async {
        loop {
            if stop() {
                return;
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    };
    tokio::select! {
        biased;
        out = fut => Ok(out),
        () = watch => Err(Stopped::Interrupted),
        () = tokio::time::sleep(bound) => Err(Stopped::Elapsed),
    }
}

/// `f`'s result, unless a signal arrives first: `f` runs on a thread of its own, left to
/// finish alone (within its own bound) when the wait for it ends. For a blocking client
/// (pmproxy's HTTP) whose wait cannot be cut short from inside; `f` runs here, waiting
/// for no signal, should the machine refuse a thread.
pub fn unless_interrupted<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Stopped> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let job = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
    let run = {
        let job = job.clone();
        move || {
            let taken = job.lock().ok().and_then(|mut j| j.take());
            if let Some(f) = taken {
                let _ = tx.send(f());
            }
        }
    };
    if std::thread::Builder::new()
        .name("oemputx-wait".into())
        .spawn(run)
        .is_err()
    {
        let taken = job.lock().ok().and_then(|mut j| j.take());
        return taken.map(|f| f()).ok_or(Stopped::Interrupted);
    }
    loop {
        match rx.recv_timeout(LOOK_EVERY) {
            Ok(out) => return Ok(out),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(Stopped::Elapsed),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if interrupted() => {
                return Err(Stopped::Interrupted);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    fn on_runtime<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    #[test]
    fn a_bounded_wait_ends_with_its_answer_its_bound_or_a_signal() {
        let never = || false;
        assert_eq!(
            on_runtime(within_watching(Duration::from_secs(5), never, async { 7 })),
            Ok(7)
        );
        let started = Instant::now();
        let pending = std::future::pending::<()>();
        assert_eq!(
            on_runtime(within_watching(Duration::from_millis(50), never, pending)),
            Err(Stopped::Elapsed)
        );
        assert!(started.elapsed() >= Duration::from_millis(50));

        // A signal that arrives mid-wait ends it within a look, long before the bound.
        let flag = std::sync::Arc::new(AtomicBool::new(false));
        let raise = flag.clone();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            raise.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let out = on_runtime(within_watching(
            Duration::from_secs(60),
            || flag.load(Ordering::Relaxed),
            std::future::pending::<()>(),
        ));
        assert_eq!(out, Err(Stopped::Interrupted));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        let _ = raiser.join();
    }
}
