//! A wait for the next reply with one timer kept across waits.
//!
//! Arming a fresh tokio timer for every get (as `tokio::time::timeout` does) was a
//! measurable share of the driver's CPU beside NATS's 18 µs round trip (docs/benchmarks.md),
//! so the async transports keep one timer and move it only when the deadline a wait asks
//! for is more than a little later than the one it holds. A wait may so end up to
//! [`Deadline::slack`] early: 1 ms of a 60 s `--wait`, never more than 1 % of it.

use futures_util::StreamExt;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

/// One timer, kept across waits.
#[derive(Default)]
pub struct Deadline {
    /// `None` until the first wait (a timer needs the runtime).
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Deadline {
    /// How early a wait may end: min(1 ms, 1 % of the wait).
    pub(crate) fn slack(wait: Duration) -> Duration {
        (wait / 100).min(Duration::from_millis(1))
    }

    /// The output of `fut`, or `None` when `wait` passed first.
    pub async fn around<F: Future>(&mut self, wait: Duration, fut: F) -> Option<F::Output> {
        let want = tokio::time::Instant::now() + wait;
        let sleep = match &mut self.sleep {
            Some(sleep) => {
                let held = sleep.deadline();
                if held > want || want > held + Deadline::slack(wait) {
                    sleep.as_mut().reset(want);
                }
                sleep
            }
            None => self.sleep.insert(Box::pin(tokio::time::sleep_until(want))),
        };
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(out));
            }
            sleep.as_mut().poll(cx).map(|()| None)
        })
        .await
    }

    /// The next item of `stream` (`Some(None)` when it ended), or `None` when `wait` passed
    /// first.
    pub async fn within<S: futures_util::Stream + Unpin>(
        &mut self,
        wait: Duration,
        stream: &mut S,
    ) -> Option<Option<S::Item>> {
        self.around(wait, stream.next()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn on_runtime<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn a_kept_timer_still_waits_each_wait_in_full_less_its_slack() {
        on_runtime(async {
            let mut timer = Deadline::default();
            let mut nothing = futures_util::stream::pending::<u8>();
            for wait_ms in [30, 30, 10, 40] {
                let wait = Duration::from_millis(wait_ms);
                let started = Instant::now();
                assert_eq!(timer.within(wait, &mut nothing).await, None);
                // A timer that fired is armed again; a shorter wait after a longer one
                // moves the deadline in.
                let took = started.elapsed();
                assert!(
                    took + Deadline::slack(wait) >= wait,
                    "{wait_ms} ms: {took:?}"
                );
                assert!(took < wait + Duration::from_millis(500), "{took:?}");
            }
            let mut one = futures_util::stream::iter([7u8]);
            let wait = Duration::from_secs(60);
            assert_eq!(timer.within(wait, &mut one).await, Some(Some(7)));
            assert_eq!(timer.within(wait, &mut one).await, Some(None));
        });
    }

    #[test]
    fn the_slack_is_a_hundredth_of_the_wait_and_at_most_a_millisecond() {
        assert_eq!(
            Deadline::slack(Duration::from_secs(60)),
            Duration::from_millis(1)
        );
        assert_eq!(
            Deadline::slack(Duration::from_millis(10)),
            Duration::from_micros(100)
        );
    }
}
