//! The IBM MQ transport against the in-memory queue manager: the exact MQI calls and
//! options of a run, and what each reason code becomes.

use crate::config::{RunConfig, RunOptions};
use crate::driver::{self, Controls, Outcome, Status};
use crate::transport::ibmmq::calls::{ConnectSpec, QueueKind, Reason};
use crate::transport::ibmmq::fake::{Call, FakeQm, Responder};
use crate::transport::ibmmq::url::IbmMqEndpoint;
use crate::transport::ibmmq::{IbmMq, MODEL_QUEUE, spec_for};
use crate::transport::{MatchMode, TaskSession, Transport, TransportError};
use crate::window::NoWindow;
use mqi::constants as c;

mod mq_rules;
use std::sync::Arc;
use std::time::Duration;

const URL: &str = "ibmmq://QM1?conn=127.0.0.1(1414)&channel=DEV.APP.SVRCONN";

pub(crate) fn config(o: RunOptions) -> RunConfig {
    RunOptions {
        qmgr: Some(URL.into()),
        no_progress: true,
        ..o
    }
    .build()
    .expect("test config is valid")
}

/// The transport over the fake, connecting the way the real one would for `cfg`'s
/// endpoint (with no MQ environment variables set).
pub(crate) fn transport(cfg: &RunConfig, qm: &FakeQm) -> IbmMq {
    let Some(ep) = cfg.endpoint.downcast::<IbmMqEndpoint>() else {
        panic!("an IBM MQ endpoint expected");
    };
    transport_with(cfg, qm, spec_for(ep, None, |_| false))
}

pub(crate) fn transport_with(cfg: &RunConfig, qm: &FakeQm, spec: ConnectSpec) -> IbmMq {
    IbmMq::with_library(
        Arc::new(qm.clone()),
        spec,
        "ibmmq://QM1".into(),
        cfg.queue_setup(),
    )
}

pub(crate) fn run(cfg: &RunConfig, qm: &FakeQm) -> Result<Outcome, TransportError> {
    drive(cfg, &transport(cfg, qm))
}

pub(crate) fn drive(cfg: &RunConfig, t: &IbmMq) -> Result<Outcome, TransportError> {
    driver::drive(cfg, t, &Controls::default(), &mut NoWindow)
}

/// The run's error, whether it failed before the run or during it.
pub(crate) fn error_text(result: Result<Outcome, TransportError>) -> String {
    match result {
        Err(e) => e.to_string(),
        Ok(out) => out.error.unwrap_or_default(),
    }
}

pub(crate) fn qm(responder: Responder) -> FakeQm {
    FakeQm::new(&["MQSI.IN", "MQSI.OUT"], "MQSI.IN", responder)
}

pub(crate) fn puts(calls: &[Call]) -> Vec<&Call> {
    calls
        .iter()
        .filter(|c| matches!(c, Call::Put { .. } | Call::Put1 { .. }))
        .collect()
}

pub(crate) fn gets_on<'a>(calls: &'a [Call], queue: &str) -> Vec<&'a Call> {
    calls
        .iter()
        .filter(|c| matches!(c, Call::Get { queue: q, .. } if q == queue))
        .collect()
}

#[test]
fn reason_codes_print_by_name() {
    assert_eq!(
        Reason::NO_MSG_AVAILABLE.to_string(),
        "MQRC_NO_MSG_AVAILABLE (2033)"
    );
    assert_eq!(
        Reason::CONNECTION_BROKEN.to_string(),
        "MQRC_CONNECTION_BROKEN (2009)"
    );
    assert_eq!(Reason(2035).to_string(), "MQRC_NOT_AUTHORIZED (2035)");
}

#[test]
fn requests_carry_reply_to_and_replies_come_back_on_each_task_s_dynamic_queue() {
    let qm = qm(Responder::Echo);
    let cfg = config(RunOptions {
        count: Some(20),
        tasks: 2,
        wait: Duration::from_secs(5),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.status, Status::Completed);
    assert_eq!(
        (out.integrity.sent, out.integrity.matched),
        (20, 20),
        "{:?}",
        out.integrity
    );
    let calls = qm.calls();
    // Each task connects with the channel of the URL and makes its own reply queue from
    // the model queue, exclusively.
    let models: Vec<_> = calls
        .iter()
        .filter(|c| matches!(c, Call::Open { queue, .. } if queue == MODEL_QUEUE))
        .collect();
    assert_eq!(models.len(), 2);
    for m in &models {
        assert_eq!(
            **m,
            Call::Open {
                queue: MODEL_QUEUE.into(),
                options: c::MQOO_INPUT_EXCLUSIVE | c::MQOO_INQUIRE | c::MQOO_FAIL_IF_QUIESCING
            }
        );
    }
    assert!(calls.iter().any(|c| matches!(c, Call::Connect(spec)
        if spec.channel == Some(("DEV.APP.SVRCONN".into(), "127.0.0.1(1414)".into())))));
    let puts = puts(&calls);
    assert_eq!(puts.len(), 20);
    let mut reply_queues = std::collections::BTreeSet::new();
    for p in puts {
        let Call::Put {
            queue, md, options, ..
        } = p
        else {
            panic!("MQPUT expected, got {p:?}");
        };
        assert_eq!(queue, "MQSI.IN");
        assert_eq!(
            *options,
            c::MQPMO_NEW_MSG_ID | c::MQPMO_FAIL_IF_QUIESCING | c::MQPMO_NO_SYNCPOINT
        );
        assert_eq!(md.persistence, c::MQPER_NOT_PERSISTENT);
        assert!(md.reply_to_q.starts_with("AMQ.OEMPUTX."), "{md:?}");
        reply_queues.insert(md.reply_to_q.clone());
    }
    assert_eq!(reply_queues.len(), 2, "one reply queue per task");
    for q in &reply_queues {
        for g in gets_on(&calls, q) {
            let Call::Get {
                options,
                wait_ms,
                correl_id,
                ..
            } = g
            else {
                unreachable!()
            };
            assert_eq!(
                *options,
                c::MQGMO_WAIT
                    | c::MQGMO_FAIL_IF_QUIESCING
                    | c::MQGMO_ACCEPT_TRUNCATED_MSG
                    | c::MQGMO_NO_SYNCPOINT
            );
            // MQGMO_WAIT in slices of at most 200 ms, repeated until --wait has passed, so
            // that Ctrl-C is noticed at once.
            assert!(*wait_ms <= 200 && *wait_ms > 0, "wait {wait_ms}");
            // Its own queue holds only its replies: the next message, matched by the driver.
            assert_eq!(*correl_id, None);
        }
    }
    // Every session closes its queues and disconnects; so does prepare.
    let discs = calls.iter().filter(|c| **c == Call::Disconnect).count();
    assert_eq!(discs, 3);
}

#[test]
fn a_shared_reply_queue_is_cleared_then_read_by_correl_id_in_put_order() {
    let qm = qm(Responder::Echo);
    qm.preload("MQSI.OUT", 3);
    let cfg = config(RunOptions {
        count: Some(12),
        reply_queue: Some("MQSI.OUT".into()),
        msgs_per_loop: 3,
        wait: Duration::from_secs(2),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.cleared, 3);
    assert_eq!(out.integrity.matched, 12);
    assert_eq!(out.integrity.unmatched, 0);
    let calls = qm.calls();
    let gets = gets_on(&calls, "MQSI.OUT");
    // Clearing: destructive gets without wait until MQRC_NO_MSG_AVAILABLE.
    for g in &gets[..4] {
        assert!(
            matches!(g, Call::Get { options, correl_id: None, wait_ms: 0, .. }
            if *options == c::MQGMO_NO_WAIT | c::MQGMO_NO_SYNCPOINT
                | c::MQGMO_ACCEPT_TRUNCATED_MSG | c::MQGMO_FAIL_IF_QUIESCING),
            "{g:?}"
        );
    }
    // The run: each MQGET names the CorrelId it wants, the MsgIds in the order of the puts.
    let wanted: Vec<_> = gets[4..]
        .iter()
        .map(|g| match g {
            Call::Get {
                correl_id: Some(id),
                wait_ms: 1..=200,
                ..
            } => *id,
            other => panic!("MQGET by CorrelId with a wait expected, got {other:?}"),
        })
        .collect();
    assert_eq!(wanted.len(), 12);
    assert!(wanted.windows(2).all(|w| w[0] < w[1]), "put order");
    assert!(calls.contains(&Call::Open {
        queue: "MQSI.OUT".into(),
        options: c::MQOO_INPUT_SHARED | c::MQOO_FAIL_IF_QUIESCING
    }));
    assert_eq!(qm.depth("MQSI.OUT"), 0);
}

#[test]
fn match_any_gets_the_next_message_of_a_shared_queue() {
    let qm = qm(Responder::Echo);
    let cfg = config(RunOptions {
        count: Some(5),
        reply_queue: Some("MQSI.OUT".into()),
        match_mode: MatchMode::Any,
        no_clear: true,
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.integrity.matched, 5);
    let calls = qm.calls();
    let gets = gets_on(&calls, "MQSI.OUT");
    assert_eq!(gets.len(), 5, "no clearing under --no-clear");
    assert!(gets.iter().all(|g| matches!(
        g,
        Call::Get {
            correl_id: None,
            ..
        }
    )));
}

#[test]
fn persistent_syncpoint_puts_and_gets_are_committed_with_mqcmit() {
    let qm = qm(Responder::Echo);
    // Persistent replies need a queue that takes them: a permanent dynamic one here.
    qm.model("DEV.APP.MODEL.QUEUE", QueueKind::PermanentDynamic);
    let cfg = config(RunOptions {
        count: Some(6),
        msgs_per_loop: 2,
        persistent: true,
        syncpoint: true,
        model_queue: Some("DEV.APP.MODEL.QUEUE".into()),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.integrity.matched, 6);
    let calls = qm.calls();
    for p in puts(&calls) {
        assert!(
            matches!(p, Call::Put { md, options, .. }
            if md.persistence == c::MQPER_PERSISTENT
                && *options == c::MQPMO_NEW_MSG_ID | c::MQPMO_FAIL_IF_QUIESCING | c::MQPMO_SYNCPOINT),
            "{p:?}"
        );
    }
    let run_gets: Vec<_> = calls
        .iter()
        .filter(|c| matches!(c, Call::Get { queue, .. } if queue.starts_with("AMQ.")))
        .collect();
    assert!(
        run_gets
            .iter()
            .all(|g| matches!(g, Call::Get { options, .. }
        if options.contains(c::MQGMO_SYNCPOINT) && !options.contains(c::MQGMO_NO_SYNCPOINT)))
    );
    // Three loops: MQCMIT after the two puts (else the flow never sees them) and after the
    // two gets.
    let sequence: Vec<&str> = calls
        .iter()
        .filter_map(|c| match c {
            Call::Put { .. } => Some("put"),
            Call::Get { queue, .. } if queue.starts_with("AMQ.") => Some("get"),
            Call::Commit => Some("commit"),
            _ => None,
        })
        .collect();
    assert_eq!(
        sequence,
        ["put", "put", "commit", "get", "get", "commit"].repeat(3)
    );
}

#[test]
fn uncommitted_puts_are_not_seen_by_the_flow() {
    let qm = qm(Responder::Echo);
    let cfg = config(RunOptions {
        count: Some(1),
        syncpoint: true,
        ..RunOptions::default()
    });
    let t = transport(&cfg, &qm);
    let Ok(TaskSession::Blocking(mut session)) = t.session(0) else {
        panic!("an IBM MQ session blocks");
    };
    session.put(b"<a/>", "oemputx-0-0-0").expect("put");
    assert_eq!(
        session
            .get(std::time::Duration::from_millis(20))
            .expect("get"),
        None,
        "no reply before MQCMIT"
    );
    session.commit().expect("commit");
    let reply = session
        .get(std::time::Duration::from_millis(1000))
        .expect("get")
        .expect("a reply after MQCMIT");
    assert_eq!(reply.correl_id.as_deref(), Some("oemputx-0-0-0"));
    session.close().expect("close");
}

#[test]
fn put1_puts_each_request_without_opening_the_request_queue() {
    let qm = qm(Responder::Echo);
    let cfg = config(RunOptions {
        count: Some(4),
        put1: true,
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.integrity.matched, 4);
    let calls = qm.calls();
    let p = puts(&calls);
    assert_eq!(p.len(), 4);
    assert!(
        p.iter()
            .all(|c| matches!(c, Call::Put1 { queue, .. } if queue == "MQSI.IN"))
    );
    // Only prepare opens the request queue (to check it exists and may be put to).
    let opens = calls
        .iter()
        .filter(|c| matches!(c, Call::Open { queue, .. } if queue == "MQSI.IN"))
        .count();
    assert_eq!(opens, 1);
}

#[test]
fn no_msg_available_is_a_timeout_the_driver_counts() {
    let qm = qm(Responder::Silent);
    let cfg = config(RunOptions {
        count: Some(3),
        wait: Duration::from_millis(50),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.status, Status::TimedOut);
    assert_eq!(
        (
            out.integrity.sent,
            out.integrity.timed_out,
            out.integrity.matched
        ),
        (3, 3, 0)
    );
    assert!(out.integrity.balanced());
    // Each reply was waited for with MQGMO_WAIT for --wait in all, and no longer.
    let calls = qm.calls();
    let waits: i32 = calls
        .iter()
        .filter_map(|c| match c {
            Call::Get {
                wait_ms, options, ..
            } if options.contains(c::MQGMO_WAIT) => Some(*wait_ms),
            _ => None,
        })
        .sum();
    assert!(
        (120..=150).contains(&waits),
        "{waits} ms of MQGMO_WAIT for 3 × 50 ms"
    );
}

#[test]
fn a_second_reply_to_one_request_is_a_duplicate() {
    let qm = qm(Responder::Twice);
    let cfg = config(RunOptions {
        count: Some(5),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.integrity.matched, 5);
    // The last request's second reply is still on the queue when the run ends.
    assert_eq!(out.integrity.duplicates, 4, "{:?}", out.integrity);
    assert_eq!(out.integrity.unmatched, 0);
}

#[test]
fn connection_broken_fails_the_run_with_the_reason_by_name() {
    let qm = qm(Responder::Echo);
    qm.fail("MQGET", 3, Reason::CONNECTION_BROKEN);
    // --reconnect-for 0s: the broken connection ends the run.
    let cfg = config(RunOptions {
        count: Some(10),
        reconnect_for: Some(Duration::ZERO),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("the run reports what it did");
    assert_eq!(out.status, Status::Failed);
    assert_eq!(out.integrity.matched, 2);
    let error = out.error.unwrap_or_default();
    assert!(error.contains("MQRC_CONNECTION_BROKEN (2009)"), "{error}");
}

#[test]
fn a_broken_connection_is_connected_again_and_the_run_goes_on() {
    // By default the task connects again (MQCONNX) and goes on; the request whose MQGET
    // broke was in flight, and its reply, still on the reply queue of the broken
    // connection, is taken or lost, never counted twice.
    let qm = qm(Responder::Echo);
    qm.fail("MQGET", 3, Reason::CONNECTION_BROKEN);
    let cfg = config(RunOptions {
        count: Some(10),
        wait: Duration::from_millis(200),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("the run reports what it did");
    let i = out.integrity;
    assert!(i.balanced(), "{i:?}");
    assert_eq!(i.sent, 10, "{i:?}");
    assert!(i.matched >= 9, "{i:?}");
    let [b] = out.interruptions.as_slice() else {
        panic!("one interruption: {:?}", out.interruptions)
    };
    assert!(b.reconnected, "{b:?}");
    assert!(b.why.contains("MQRC_CONNECTION_BROKEN (2009)"), "{b:?}");
    assert_eq!(b.lost + i.matched, 10, "{b:?} {i:?}");
}

#[test]
fn not_authorized_and_unknown_queues_are_usage_errors_naming_the_reason() {
    let qm = qm(Responder::Echo);
    qm.forbid("MQSI.IN");
    let err = run(
        &config(RunOptions {
            count: Some(1),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect_err("refused");
    assert!(err.is_usage());
    let text = err.to_string();
    assert!(text.contains("MQRC_NOT_AUTHORIZED (2035)"), "{text}");
    assert!(
        text.contains("'MQSI.IN'") && text.contains("setmqaut"),
        "{text}"
    );

    let qm = self::qm(Responder::Echo);
    let err = run(
        &config(RunOptions {
            count: Some(1),
            request_queue: Some("NO.SUCH.Q".into()),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect_err("unknown");
    assert!(err.is_usage());
    let text = err.to_string();
    assert!(text.contains("MQRC_UNKNOWN_OBJECT_NAME (2085)"), "{text}");
    assert!(
        text.contains("NO.SUCH.Q") && text.contains("DEFINE QLOCAL"),
        "{text}"
    );
}

#[test]
fn a_queue_manager_that_is_not_there_is_a_usage_error() {
    let qm = qm(Responder::Echo);
    qm.fail("MQCONNX", 1, Reason::Q_MGR_NOT_AVAILABLE);
    let err = run(
        &config(RunOptions {
            count: Some(1),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect_err("unreachable");
    assert!(matches!(err, TransportError::Unreachable { .. }), "{err}");
    assert!(err.is_usage());
    assert!(err.to_string().contains("MQRC_Q_MGR_NOT_AVAILABLE (2059)"));
}

#[test]
fn a_message_too_big_for_the_queue_is_a_usage_error() {
    let qm = qm(Responder::Echo);
    qm.fail("MQPUT", 1, Reason::MSG_TOO_BIG_FOR_Q);
    let err = error_text(run(
        &config(RunOptions {
            count: Some(1),
            ..RunOptions::default()
        }),
        &qm,
    ));
    assert!(err.contains("MQRC_MSG_TOO_BIG_FOR_Q (2030)"), "{err}");
    assert!(err.contains("MAXMSGL"), "{err}");
}

/// Who serves the request queue: IPPROCS, asked on a handle opened only to inquire, counts
/// the responder and any other handle open to get, never the asking one; the listener of a
/// client channel is where the flows' connections are looked for.
#[test]
fn the_request_queue_s_open_input_count_is_asked_without_counting_the_asker() {
    use crate::transport::endpoint::EndpointKind;
    let cfg = config(RunOptions::default());
    let qm = qm(Responder::Echo);
    let t = transport(&cfg, &qm);
    assert_eq!(t.open_input_count("MQSI.IN").expect("IPPROCS"), 1);
    qm.open_for_input("MQSI.IN", 2);
    assert_eq!(t.open_input_count("MQSI.IN").expect("IPPROCS"), 3);
    assert_eq!(t.open_input_count("MQSI.OUT").expect("IPPROCS"), 0);
    let calls = qm.calls();
    assert!(calls.contains(&Call::Open {
        queue: "MQSI.IN".into(),
        options: c::MQOO_INQUIRE | c::MQOO_FAIL_IF_QUIESCING,
    }));
    let err = t
        .open_input_count("NO.SUCH.Q")
        .expect_err("an unknown queue");
    assert!(err.to_string().contains("NO.SUCH.Q"), "{err}");
    let Some(ep) = cfg.endpoint.downcast::<IbmMqEndpoint>() else {
        panic!("an IBM MQ endpoint expected");
    };
    assert_eq!(ep.broker_address(), Some(("127.0.0.1".to_string(), 1414)));
}
