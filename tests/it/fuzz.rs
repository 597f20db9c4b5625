//! Property tests over what a user, a file or a broker hands oemputx: the option parser, the
//! URL parser and the redaction of passwords, the message file reader and the saved-report
//! reader. Each must answer with a value or an error, never a panic. Bounded: a few hundred
//! cases each, seconds in all, so CI runs them with every test (issue 19).

use clap::Parser;
use oemputx::cli::Cli;
use oemputx::msgfile::Messages;
use oemputx::report::saved::{Metric, Saved};
use oemputx::secret::scrub as redact_text;
use oemputx::transport::parse_url;
use proptest::prelude::*;
use serde_json::Value;

/// Options with a value, and values of the kinds users get wrong: huge, negative, empty,
/// odd units, non-numbers.
const FLAGS: [&str; 16] = [
    "--count",
    "--duration",
    "--tasks",
    "--rounds",
    "--msg-size",
    "--rate",
    "--wait",
    "--max-timeouts",
    "--msgs-per-loop",
    "--warmup",
    "--capture-ratio",
    "--label",
    "--request-queue",
    "--delimiter",
    "--group",
    "--qmgr",
];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
        "[0-9]{1,25}(ns|us|ms|s|m|h|d|y)?",
        "[-+=@%a-zA-Z0-9:/._,]{0,40}",
        Just(String::new()),
        Just("1e-300".to_string()),
        Just("NaN".to_string()),
        Just("amqp://u:p@h:99999/%zz".to_string()),
        Just("FLOW=pid:-1".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_option_parser_answers_every_command_line(
        pairs in proptest::collection::vec((0..FLAGS.len(), value()), 0..5),
    ) {
        let mut argv = vec!["oemputx".to_string()];
        for (flag, v) in pairs {
            argv.push(FLAGS[flag].to_string());
            argv.push(v);
        }
        // Parse errors are fine; building the config from what parsed must not panic
        // (it allocates the message body, so a size beyond the limit must be refused first).
        if let Ok(cli) = Cli::try_parse_from(&argv) {
            let _ = cli.run.options().and_then(|o| o.build());
        }
    }

    #[test]
    fn urls_parse_or_fail_and_their_passwords_never_show(
        scheme in prop_oneof![Just("amqp"), Just("amqps"), Just("embedded"), Just("x"), Just("")],
        user in "[a-z%0-9]{0,8}",
        password in "[A-Za-z0-9]{6,12}",
        rest in "[-a-z0-9.:/%?=&@\\[\\]]{0,40}",
    ) {
        let raw = format!("{scheme}://{user}:{password}@{rest}");
        let _ = parse_url(&raw);
        let shown = redact_text(&format!("cmd --url {raw} --db postgres://{user}:{password}@h/db"));
        prop_assert!(!shown.contains(&format!(":{password}@")), "{shown}");
    }

    #[test]
    fn any_string_is_a_url_or_an_error(raw in "\\PC{0,60}") {
        let _ = parse_url(&raw);
        let _ = redact_text(&raw);
    }

    #[test]
    fn message_files_of_any_bytes_are_read_or_refused(
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
        lines in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("m.xml");
        std::fs::write(&path, &bytes).expect("write");
        if let Ok(m) = Messages::from_files(&[path], lines) {
            prop_assert!(!m.bodies.is_empty());
        }
    }

    #[test]
    fn a_damaged_saved_report_is_read_or_refused(
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), json_value()), 1..6),
    ) {
        let mut json: Value = serde_json::from_str(
            &std::fs::read_to_string("ci/baseline.json").expect("the committed baseline"),
        )
        .expect("JSON");
        for (at, v) in edits {
            set_some_leaf(&mut json, at, v);
        }
        if let Ok(saved) = Saved::from_json("damaged.json".into(), json) {
            let mut metrics: Vec<Metric> = saved.group_names().iter().map(|g| Metric::named(g)).collect();
            metrics.extend(["captured", "corrected", "rate", "p99", "nosuch"].map(Metric::named));
            for m in &metrics {
                let _ = saved.samples(m);
                let _ = saved.require(m);
            }
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::Array(Vec::new())),
        Just(serde_json::json!({"x": 1})),
    ]
}

/// Replace one leaf (or container) of `json`, chosen by `at`, with `v`.
fn set_some_leaf(json: &mut Value, at: proptest::sample::Index, v: Value) {
    let mut paths = Vec::new();
    collect_paths(json, &mut Vec::new(), &mut paths);
    if paths.is_empty() {
        return;
    }
    let path = at.get(&paths).clone();
    let mut node = json;
    for step in &path {
        node = match step {
            Step::Key(k) => &mut node[k.as_str()],
            Step::Index(i) => &mut node[*i],
        };
    }
    *node = v;
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn collect_paths(json: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(here.clone());
    match json {
        Value::Object(m) => {
            for (k, v) in m {
                here.push(Step::Key(k.clone()));
                collect_paths(v, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                here.push(Step::Index(i));
                collect_paths(v, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}
