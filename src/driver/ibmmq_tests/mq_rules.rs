//! Where a real queue manager would disagree with a naive fake: each test runs against the
//! fake keeping one MQ rule (fake.rs names the documentation page of each) and checks that
//! oemputx does what a real queue manager needs.

use super::{config, drive, error_text, gets_on, puts, qm, run, transport_with};
use crate::config::RunOptions;
use crate::transport::ibmmq::calls::{MqiConnection, MqiLibrary, QueueKind, Reason, RequestMd};
use crate::transport::ibmmq::fake::{Call, FakeQm, Responder};
use crate::transport::ibmmq::url::IbmMqEndpoint;
use crate::transport::ibmmq::{MODEL_QUEUE, spec_for};
use mqi::constants as c;
use std::time::Duration;

/// A connection straight to the fake, as the transport would open it for the tests' URL:
/// for checking the fake's own rules.
fn connection(qm: &FakeQm) -> Box<dyn MqiConnection> {
    let cfg = config(RunOptions {
        count: Some(1),
        ..RunOptions::default()
    });
    let Some(ep) = cfg.endpoint.downcast::<IbmMqEndpoint>() else {
        panic!("IBM MQ endpoint");
    };
    qm.connect(&spec_for(ep, None, |_| false)).expect("connect")
}

/// Item 1: MQ refuses persistent messages on temporary dynamic queues.
#[test]
fn persistent_requests_with_a_temporary_reply_queue_are_refused_before_any_put() {
    // The rule in the fake: a responder replying with the request's persistence to a
    // temporary dynamic queue gets no reply through.
    let qm = qm(Responder::Echo);
    let mut conn = connection(&qm);
    let (hobj, temporary) = conn
        .open(MODEL_QUEUE, c::MQOO_INPUT_EXCLUSIVE)
        .expect("model");
    let md = RequestMd {
        reply_to_q: temporary,
        persistence: c::MQPER_PERSISTENT,
        text: true,
    };
    conn.put1("MQSI.IN", &md, c::MQPMO_NO_SYNCPOINT, b"<a/>")
        .expect("put");
    let mut buffer = [0u8; 64];
    assert_eq!(
        conn.get(hobj, c::MQGMO_NO_WAIT, 0, None, &mut buffer)
            .expect("get"),
        None
    );
    assert_eq!(qm.refused_replies(), 1);

    // oemputx refuses the combination up front, naming the reason and the ways out.
    let qm = super::qm(Responder::Echo);
    let err = run(
        &config(RunOptions {
            count: Some(3),
            persistent: true,
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect_err("refused");
    assert!(err.is_usage());
    let text = err.to_string();
    for says in [
        "MQRC_PERSISTENT_NOT_ALLOWED (2048)",
        "--reply-queue",
        "--model-queue",
        "PERMDYN",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(puts(&qm.calls()).is_empty(), "nothing was put");

    // A permanent reply queue, or a PERMDYN model, takes persistent replies.
    let qm = super::qm(Responder::Echo);
    let out = run(
        &config(RunOptions {
            count: Some(3),
            persistent: true,
            reply_queue: Some("MQSI.OUT".into()),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect("run");
    assert_eq!(out.integrity.matched, 3);
    let qm = super::qm(Responder::Echo);
    qm.model("APP.PERM.MODEL", QueueKind::PermanentDynamic);
    let out = run(
        &config(RunOptions {
            count: Some(3),
            persistent: true,
            model_queue: Some("APP.PERM.MODEL".into()),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect("run");
    assert_eq!(out.integrity.matched, 3);
}

/// Item 2: MQDISC commits an open unit of work; after an error it must be backed out.
#[test]
fn an_error_inside_a_syncpoint_batch_backs_out_the_puts_already_made() {
    let qm = qm(Responder::Silent);
    // The third put of a batch of five fails.
    qm.fail("MQPUT", 3, Reason(c::MQRC_RESOURCE_PROBLEM.0));
    let cfg = config(RunOptions {
        count: Some(5),
        msgs_per_loop: 5,
        syncpoint: true,
        wait: Duration::from_millis(50),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("the run reports what it did");
    assert!(
        out.error
            .as_deref()
            .is_some_and(|e| e.contains("MQRC_RESOURCE_PROBLEM")),
        "{:?}",
        out.error
    );
    // The two puts made never reach the flow: the fake's MQDISC would have committed them.
    assert_eq!(qm.depth("MQSI.IN"), 0);
    let calls = qm.calls();
    let backout = calls.iter().position(|c| *c == Call::Backout);
    let last_disc = calls.iter().rposition(|c| *c == Call::Disconnect);
    assert!(
        matches!((backout, last_disc), (Some(b), Some(d)) if b < d),
        "MQBACK before MQDISC: {calls:?}"
    );
    assert!(!calls.contains(&Call::Commit), "nothing committed");
}

#[test]
fn the_fake_commits_at_disconnect_as_mq_does() {
    // Without MQBACK, a normal MQDISC commits: the rule the test above depends on.
    let qm = qm(Responder::Silent);
    let mut conn = connection(&qm);
    let md = RequestMd {
        reply_to_q: "MQSI.OUT".into(),
        persistence: c::MQPER_NOT_PERSISTENT,
        text: true,
    };
    conn.put1("MQSI.IN", &md, c::MQPMO_SYNCPOINT, b"<a/>")
        .expect("put");
    assert_eq!(qm.depth("MQSI.IN"), 0, "not visible before the commit");
    conn.disconnect().expect("disconnect");
    assert_eq!(qm.depth("MQSI.IN"), 1, "committed by MQDISC");
}

/// Item 3: a backed-out MQCMIT is an error, by name (library.rs turns MQ's warning into
/// the failure; its own test checks that).
#[test]
fn a_commit_the_queue_manager_backed_out_fails_the_run_by_name() {
    let qm = qm(Responder::Echo);
    qm.fail("MQCMIT", 1, Reason::BACKED_OUT);
    let cfg = config(RunOptions {
        count: Some(4),
        msgs_per_loop: 2,
        syncpoint: true,
        ..RunOptions::default()
    });
    let err = error_text(run(&cfg, &qm));
    assert!(err.contains("MQRC_BACKED_OUT (2003)"), "{err}");
    assert!(err.contains("backed the unit of work out"), "{err}");
    assert_eq!(qm.depth("MQSI.IN"), 0, "the backed-out puts never arrived");
}

/// Item 4: a client channel from the URL carries MQ's largest MaxMsgLength; the server's
/// channel still caps it, and then the error says where to raise it.
#[test]
fn a_5_mb_request_goes_through_a_url_channel_when_the_server_channel_allows_it() {
    let qm = qm(Responder::Echo);
    qm.channel_maxmsgl(104_857_600);
    let cfg = config(RunOptions {
        count: Some(2),
        msg_size: Some(5000000),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(out.integrity.matched, 2, "{:?}", out.error);
    let calls = qm.calls();
    assert!(calls.iter().any(|c| matches!(c, Call::Connect(spec)
        if spec.max_msg_length == Some(104_857_600))));

    // The server-connection channel at its default 4 MB: MQRC_DATA_LENGTH_ERROR, with the
    // MAXMSGL advice.
    let qm = super::qm(Responder::Echo);
    let err = error_text(run(&cfg, &qm));
    assert!(err.contains("MQRC_DATA_LENGTH_ERROR (2010)"), "{err}");
    assert!(err.contains("MAXMSGL") && err.contains("SVRCONN"), "{err}");
}

/// Item 5: an alias resolves to its base queue, which every task opens: a shared queue.
#[test]
fn an_alias_reply_queue_is_shared_and_read_by_correl_id() {
    let qm = qm(Responder::Echo);
    qm.alias("APP.REPLY.ALIAS", "MQSI.OUT");
    let cfg = config(RunOptions {
        count: Some(40),
        tasks: 2,
        reply_queue: Some("APP.REPLY.ALIAS".into()),
        wait: Duration::from_secs(5),
        ..RunOptions::default()
    });
    let out = run(&cfg, &qm).expect("run");
    assert_eq!(
        (out.integrity.matched, out.integrity.unmatched),
        (40, 0),
        "{:?}",
        out.integrity
    );
    let calls = qm.calls();
    let gets = gets_on(&calls, "MQSI.OUT");
    // After clearing (no CorrelId), every MQGET of the run asks for its own reply.
    let run_gets: Vec<_> = gets
        .iter()
        .filter(|g| matches!(g, Call::Get { options, .. } if options.contains(c::MQGMO_WAIT)))
        .collect();
    assert!(!run_gets.is_empty());
    assert!(
        run_gets.iter().all(|g| matches!(
            g,
            Call::Get {
                correl_id: Some(_),
                ..
            }
        )),
        "{run_gets:?}"
    );
    assert!(calls.contains(&Call::Inquire {
        queue: "MQSI.OUT".into()
    }));
}

#[test]
fn the_fake_answers_inquiries_only_on_queues_opened_to_inquire() {
    let qm = qm(Responder::Echo);
    let mut conn = connection(&qm);
    let (plain, _) = conn.open("MQSI.OUT", c::MQOO_INPUT_SHARED).expect("open");
    assert_eq!(
        conn.inquire_kind(plain).map_err(|f| f.reason),
        Err(Reason::NOT_OPEN_FOR_INQUIRE)
    );
    let (inq, _) = conn
        .open("MQSI.OUT", c::MQOO_INPUT_SHARED | c::MQOO_INQUIRE)
        .expect("open");
    assert_eq!(conn.inquire_kind(inq), Ok(QueueKind::Predefined));
}

/// Item 6: a queue manager named alone, with MQSERVER (or a CCDT) set, connects by client
/// binding; standard binding would try the local server install first.
#[test]
fn mqserver_makes_a_named_queue_manager_connect_by_client_binding() {
    let ep = IbmMqEndpoint {
        qmgr: "QM1".into(),
        ..Default::default()
    };
    let cfg = config(RunOptions {
        count: Some(2),
        ..RunOptions::default()
    });
    let spec = spec_for(&ep, None, |k| k == "MQSERVER");
    assert_eq!(spec.client_binding, Some("MQSERVER"));
    assert_eq!(
        spec_for(&ep, None, |k| k == "MQCHLLIB").client_binding,
        Some("MQCHLLIB")
    );
    let qm = qm(Responder::Echo);
    qm.local_install();
    let out = drive(&cfg, &transport_with(&cfg, &qm, spec)).expect("run");
    assert_eq!(out.integrity.matched, 2);

    // Nothing set: standard binding, which on this host finds no such local queue manager.
    let qm = super::qm(Responder::Echo);
    qm.local_install();
    let spec = spec_for(&ep, None, |_| false);
    assert_eq!(spec.client_binding, None);
    let err = drive(&cfg, &transport_with(&cfg, &qm, spec)).expect_err("local bindings");
    assert!(err.to_string().contains("MQRC_Q_MGR_NAME_ERROR"), "{err}");
}

/// Smaller: a blank ResolvedQName from a model queue is an error, not a ReplyToQ that
/// names the model.
#[test]
fn a_blank_resolved_name_of_a_dynamic_queue_is_an_error() {
    let qm = qm(Responder::Echo);
    qm.blank_resolved_names();
    let err = run(
        &config(RunOptions {
            count: Some(1),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect_err("blank");
    assert!(
        err.to_string()
            .contains("gave no name for the dynamic queue"),
        "{err}"
    );
    assert!(puts(&qm.calls()).is_empty());
}

/// Smaller: bytes go as MQFMT_NONE, text as MQSTR.
#[test]
fn requests_that_are_not_utf8_are_labelled_as_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bytes.bin");
    std::fs::write(&path, [0xffu8, 0x00, 0xfe, 0x41]).expect("write");
    let qm = qm(Responder::Echo);
    let path = path.display().to_string();
    let out = run(
        &config(RunOptions {
            count: Some(2),
            msgfile: vec![path.clone().into()],
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect("run");
    assert_eq!(out.integrity.matched, 2);
    let calls = qm.calls();
    assert!(
        puts(&calls)
            .iter()
            .all(|p| matches!(p, Call::Put { md, .. } if !md.text))
    );
    let qm = super::qm(Responder::Echo);
    run(
        &config(RunOptions {
            count: Some(1),
            ..RunOptions::default()
        }),
        &qm,
    )
    .expect("run");
    let calls = qm.calls();
    assert!(
        puts(&calls)
            .iter()
            .all(|p| matches!(p, Call::Put { md, .. } if md.text))
    );
}

/// Smaller: the advice for reasons that have a known fix.
#[test]
fn connect_refusals_tls_errors_and_the_syncpoint_limit_say_what_to_check() {
    for (verb, reason, says) in [
        ("MQCONNX", Reason::NOT_AUTHORIZED, "CHLAUTH"),
        ("MQCONNX", Reason::NOT_AUTHORIZED, "CONNAUTH"),
        ("MQCONNX", Reason::KEY_REPOSITORY_ERROR, ".sth"),
        ("MQCONNX", Reason::SSL_INITIALIZATION_ERROR, "SSLCIPH"),
        ("MQPUT", Reason::SYNCPOINT_LIMIT_REACHED, "MAXUMSGS"),
    ] {
        let qm = qm(Responder::Echo);
        qm.fail(verb, 1, reason);
        let err = error_text(run(
            &config(RunOptions {
                count: Some(2),
                syncpoint: true,
                msgs_per_loop: 2,
                ..RunOptions::default()
            }),
            &qm,
        ));
        assert!(err.contains(&reason.to_string()), "{err}");
        assert!(err.contains(says), "{says}: {err}");
    }
}

/// Smaller: `*GROUP` names a CCDT queue manager group.
#[test]
fn a_ccdt_queue_manager_group_is_a_queue_manager_name() {
    let ep = IbmMqEndpoint::parse("ibmmq://*QMGRP").expect("*QMGRP parses");
    assert_eq!(ep.qmgr, "*QMGRP");
    assert!(crate::transport::parse_url("ibmmq://*").is_err());
    assert!(crate::transport::parse_url("ibmmq://**X").is_err());
}
