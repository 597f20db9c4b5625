//! oemputx put/get over MQTT 5 against the real Mosquitto: requests with a Response Topic
//! and Correlation Data, sample-flow answering on a shared subscription.

use oemputx_test_support::*;

const URL: &str = "mqtt://127.0.0.1:1883";

#[test]
fn put_get_over_mqtt5_matches_every_reply_at_qos_0_and_1() {
    live!(Mosquitto);
    let topic = format!("oemputx/test/{}", fresh_queue("mqtt"));
    let _flow = SampleFlow::start(
        &[
            "--url",
            URL,
            "--input-queue",
            &topic,
            "--echo",
            "--threads",
            "2",
        ],
        "echoing",
    );
    // QoS 1 on Mosquitto's default listener takes ~45 ms a round trip (Nagle against
    // delayed ACKs, see slow_round_trip_hint): fewer messages there.
    for (persistent, n) in [(false, 500u64), (true, 100)] {
        let count = n.to_string();
        let mut args = vec![
            "--qmgr",
            URL,
            "--request-queue",
            topic.as_str(),
            "--count",
            &count,
            "--tasks",
            "2",
        ];
        if persistent {
            args.push("--persistent");
        }
        let (code, j, err) = run_json(&args);
        assert_eq!(code, 0, "persistent {persistent}: {err}");
        assert_matches_schema(&j);
        assert_eq!(j["settings"]["transport"], "mqtt");
        assert_eq!(integrity5(&j), (n, n, 0, 0, 0), "{}", j["integrity"]);
        let p50 = j["round_trip_percentiles"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["pct"] == 50.0))
            .and_then(|p| p["us"].as_f64())
            .expect("a median round trip");
        let hinted = j["accounting"]["warnings"]
            .to_string()
            .contains("set_tcp_nodelay");
        assert_eq!(
            hinted,
            persistent && p50 >= 30_000.0,
            "p50 {p50} us: {}",
            j["accounting"]["warnings"]
        );
    }
}

#[test]
fn what_mqtt_put_get_cannot_do_is_refused_before_the_run() {
    for (args, says) in [
        (vec!["--qmgr", URL, "--syncpoint"], "--syncpoint"),
        (vec!["--qmgr", URL, "--reply-queue", "r"], "--reply-queue"),
        (vec!["--qmgr", URL, "--request-queue", "a/+"], "wildcard"),
        (vec!["--qmgr", "mqtts://127.0.0.1:8883"], "not yet"),
    ] {
        let (code, _, err) = run_json(&[&args[..], &["--count", "1"]].concat());
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn the_reference_flow_serves_mqtt_and_writes_a_row_per_request() {
    live!(Mosquitto, PostgreSql);
    let topic = format!("oemputx/test/{}", fresh_queue("mqtt-ref"));
    let table = TableGuard::fresh("mqtt_ref");
    let _flow = SampleFlow::start(
        &[
            "--url",
            URL,
            "--input-queue",
            &topic,
            "--db",
            &pg_url(),
            "--db-table",
            &table.0,
        ],
        "processing",
    );
    let (code, j, err) = run_json(&[
        "--qmgr",
        URL,
        "--request-queue",
        &topic,
        "--count",
        "200",
        "--tasks",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(integrity5(&j), (200, 200, 0, 0, 0), "{}", j["integrity"]);
    assert_eq!(
        pg_scalar(&format!("SELECT count(*) FROM {}", table.0)),
        Some(200)
    );
}
