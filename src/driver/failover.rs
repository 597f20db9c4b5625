//! A task's broken connection: reconnecting within `--reconnect-for`, and the books of what
//! the break cost (the time without replies, the requests in flight at it).
//!
//! Written once for every transport: a session that reports [`TransportError::ConnectionLost`]
//! is replaced by a new one from [`Transport::session`], which goes to whichever of the
//! endpoint's nodes answers. The requests in flight at the break are not sent again (a
//! broker may still deliver them, and a second copy would be a second transaction); their
//! replies are still taken until --wait after the reconnect, and the rest are lost.

use super::Controls;
use super::outcome::Interruption;
use crate::transport::{LoopSession, Transport, TransportError};
use chrono::{DateTime, Utc};
use std::time::{Duration, Instant};

/// The first pause between two attempts to reconnect; each doubles it up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// The longest single sleep between attempts: a signal is noticed within this.
const SLICE: Duration = Duration::from_millis(50);

/// A request in flight when its connection broke: its reply may still come on the new one.
pub(super) struct Orphan {
    pub(super) seq: u64,
    pub(super) sent: Instant,
    /// --wait after the reconnect: lost once this passes without its reply.
    pub(super) until: Instant,
    /// The break it belongs to (an index into the task's breaks).
    pub(super) brk: usize,
}

/// One break in the making: its record, with the instants its times come from.
pub(super) struct Break {
    pub(super) rec: Interruption,
    /// The break, and the wall clock then: every UTC time of the record is counted from it.
    at: Instant,
    at_utc: DateTime<Utc>,
    last_before: Instant,
    first_after: Option<Instant>,
}

impl Break {
    /// A break of `task`'s connection to `from`, seen now, for `why`; `last_reply` is the
    /// task's last reply before it.
    pub(super) fn new(
        task: usize,
        why: &TransportError,
        from: Option<String>,
        last_reply: Option<Instant>,
    ) -> Break {
        let at = Instant::now();
        Break {
            rec: Interruption {
                task,
                start_utc: String::new(),
                end_utc: None,
                outage_ms: 0.0,
                lost: 0,
                late: 0,
                duplicated: 0,
                from,
                to: None,
                why: crate::secret::scrub(&format!("{why:#}")),
                reconnected: false,
            },
            at,
            at_utc: Utc::now(),
            last_before: last_reply.filter(|t| *t <= at).unwrap_or(at),
            first_after: None,
        }
    }

    /// A reply came at `now`: the first after the break ends the outage.
    pub(super) fn replied(&mut self, now: Instant) {
        if self.first_after.is_none() && now >= self.at {
            self.first_after = Some(now);
        }
    }

    /// The record, its times fixed: the outage runs to the first reply after the break, or
    /// to `end` when none came.
    pub(super) fn finish(mut self, end: Instant) -> Interruption {
        let utc = |t: Instant| -> DateTime<Utc> {
            if t >= self.at {
                self.at_utc + chrono::Duration::from_std(t - self.at).unwrap_or_default()
            } else {
                self.at_utc - chrono::Duration::from_std(self.at - t).unwrap_or_default()
            }
        };
        let stamp = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let until = self.first_after.unwrap_or(end.max(self.last_before));
        self.rec.start_utc = stamp(utc(self.last_before));
        self.rec.end_utc = self.first_after.map(|t| stamp(utc(t)));
        self.rec.outage_ms = (until - self.last_before).as_secs_f64() * 1e3;
        self.rec
    }
}

/// How a reconnect ended.
pub(super) enum Reconnected<S> {
    /// A new session, on the node it names.
    Session(S),
    /// Ctrl-C or a stop came first.
    Stopped,
}

/// A new session for `task` by `give_up`, trying again after a pause that doubles from
/// [`FIRST_PAUSE`] to [`MAX_PAUSE`]. An error that no retry can cure (a refused login, a
/// missing queue) ends it at once; so does `give_up`, with the last attempt's error.
pub(super) fn reconnect<S: LoopSession>(
    transport: &dyn Transport,
    task: usize,
    controls: &Controls,
    give_up: Instant,
) -> Result<Reconnected<S>, TransportError> {
    let mut pause = FIRST_PAUSE;
    loop {
        if controls.stopping() {
            return Ok(Reconnected::Stopped);
        }
        let err = match S::reopen(transport, task) {
            Ok(session) => return Ok(Reconnected::Session(session)),
            Err(e) if permanent(&e) => return Err(e),
            Err(e) => e,
        };
        let now = Instant::now();
        if now >= give_up {
            return Err(TransportError::ConnectionLost {
                target: "every node".into(),
                why: format!(
                    "no node took the task's connection again within --reconnect-for (from the first break with no reply since): {err:#}"
                ),
            });
        }
        // The last attempt at the bound itself.
        let wake = (now + pause).min(give_up);
        while Instant::now() < wake {
            if controls.stopping() {
                return Ok(Reconnected::Stopped);
            }
            std::thread::sleep((wake - Instant::now()).min(SLICE));
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Whether trying again cannot help: the broker answered and refused (a login, a queue, an
/// option), as opposed to not answering at all.
fn permanent(e: &TransportError) -> bool {
    e.is_usage() && !matches!(e.kind(), TransportError::Unreachable { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outage_runs_from_the_last_reply_before_to_the_first_after() {
        let why = TransportError::ConnectionLost {
            target: "nats://u:***@h:4222".into(),
            why: "EOF".into(),
        };
        let before = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let mut b = Break::new(3, &why, Some("h:4222".into()), Some(before));
        std::thread::sleep(Duration::from_millis(5));
        let after = Instant::now();
        b.replied(after);
        b.replied(after + Duration::from_secs(1));
        let rec = b.finish(after + Duration::from_secs(9));
        let want = (after - before).as_secs_f64() * 1e3;
        assert!(
            (rec.outage_ms - want).abs() < 1e-6,
            "{} vs {want}",
            rec.outage_ms
        );
        assert!(rec.outage_ms >= 10.0, "{}", rec.outage_ms);
        assert_eq!(rec.task, 3);
        let (start, end) = (
            DateTime::parse_from_rfc3339(&rec.start_utc).expect("start"),
            DateTime::parse_from_rfc3339(rec.end_utc.as_deref().expect("end")).expect("end"),
        );
        let span = (end - start).num_microseconds().unwrap_or_default() as f64 / 1e3;
        assert!(
            (span - rec.outage_ms).abs() < 0.01,
            "{span} vs {}",
            rec.outage_ms
        );
    }

    #[test]
    fn without_a_reply_after_it_the_outage_runs_to_the_end() {
        let why = TransportError::ConnectionLost {
            target: "t".into(),
            why: "gone".into(),
        };
        let b = Break::new(0, &why, None, None);
        let end = Instant::now() + Duration::from_millis(250);
        let rec = b.finish(end);
        assert_eq!(rec.end_utc, None);
        assert!(
            (249.0..=260.0).contains(&rec.outage_ms),
            "{}",
            rec.outage_ms
        );
        assert!(!rec.reconnected);
    }

    #[test]
    fn a_refused_login_is_not_tried_again_but_an_unanswered_connect_is() {
        let refused = TransportError::AuthRefused {
            target: "t".into(),
            user: "u".into(),
        };
        let unreachable = TransportError::Unreachable {
            target: "t".into(),
            why: "refused".into(),
        };
        assert!(permanent(&refused));
        assert!(!permanent(&unreachable));
    }
}
