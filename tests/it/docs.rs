//! The manual and the command line agree (issue 31): every subcommand, flag and URL scheme
//! oemputx takes is in the docs, every `oemputx …` and `sample-flow …` command line the docs
//! show uses only names that exist, and the help names every scheme. Help and docs are
//! written by hand; this test is what keeps them from drifting apart.

use clap::CommandFactory;
use oemputx_test_support::*;
use std::collections::{BTreeMap, BTreeSet};

/// README.md and every page of docs/, with their names.
fn pages() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).expect("README"),
    )];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for p in docs {
        let name = format!(
            "docs/{}",
            p.file_name().unwrap_or_default().to_string_lossy()
        );
        out.push((name, std::fs::read_to_string(&p).expect("page")));
    }
    out
}

/// The long flags of a clap command (not help/version).
fn flags(c: &clap::Command) -> BTreeSet<String> {
    c.get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| !["help", "version"].contains(l))
        .map(|l| format!("--{l}"))
        .collect()
}

/// Every subcommand's flags, "" for the default run.
fn oemputx_flags() -> BTreeMap<String, BTreeSet<String>> {
    let cli = oemputx::cli::Cli::command();
    let mut out = BTreeMap::new();
    out.insert(String::new(), flags(&cli));
    for s in cli.get_subcommands() {
        out.insert(s.get_name().to_string(), flags(s));
    }
    out
}

/// sample-flow's long flags, read from its --help.
fn sample_flow_flags() -> BTreeSet<String> {
    let out = std::process::Command::new(flow_bin())
        .arg("--help")
        .output()
        .expect("sample-flow --help");
    let help = String::from_utf8_lossy(&out.stdout);
    help.split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| {
            w.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .to_string()
        })
        .filter(|w| !w.is_empty() && !["help", "version"].contains(&w.as_str()))
        .map(|w| format!("--{w}"))
        .collect()
}

/// The flags (`--name`) a piece of text names.
fn flags_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let before_ok =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'-');
        let name: String = text[start + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if before_ok && name.len() > 1 && name.as_bytes()[0].is_ascii_lowercase() {
            out.push(format!("--{name}"));
        }
        i = start + 2 + name.len();
    }
    out
}

/// The command lines the docs show for `program`: lines of fenced shell blocks and inline
/// code spans that begin with it (after an optional `$ `), joined over `\` continuations.
fn command_lines(text: &str, program: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_shell = false;
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(lang) = t.strip_prefix("```") {
            in_shell = !in_shell
                && ["sh", "bash", "shell", "console", "yaml", "yml"].contains(&lang.trim());
            continue;
        }
        if in_shell {
            let t = t
                .trim_start_matches("$ ")
                .trim_start_matches("- run: ")
                .trim_start_matches("run: ");
            if let Some(p) = pending.as_mut() {
                p.push(' ');
                p.push_str(t.trim_end_matches('\\'));
                if !t.ends_with('\\') {
                    out.extend(pending.take());
                }
                continue;
            }
            if t.starts_with(&format!("{program} ")) {
                if t.ends_with('\\') {
                    pending = Some(t.trim_end_matches('\\').to_string());
                } else {
                    out.push(t.to_string());
                }
            }
        } else {
            for (n, span) in line.split('`').enumerate() {
                if n % 2 == 1 && span.starts_with(&format!("{program} ")) {
                    out.push(span.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn every_subcommand_and_flag_is_in_the_docs_and_every_one_the_docs_use_exists() {
    let pages = pages();
    let all: String = pages
        .iter()
        .map(|(_, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let by_command = oemputx_flags();
    let every_flag: BTreeSet<String> = by_command.values().flatten().cloned().collect();
    let mut missing = Vec::new();
    for (sub, fl) in &by_command {
        if !sub.is_empty() && !all.contains(&format!("oemputx {sub}")) {
            missing.push(format!("subcommand `oemputx {sub}`"));
        }
        for f in fl {
            if !all.contains(f.as_str()) {
                let cmd = if sub.is_empty() {
                    "the run"
                } else {
                    sub.as_str()
                };
                missing.push(format!("{f} of {cmd}"));
            }
        }
    }
    let flow_flags = sample_flow_flags();
    assert!(flow_flags.contains("--echo"), "{flow_flags:?}");
    for f in &flow_flags {
        if !all.contains(f.as_str()) {
            missing.push(format!("sample-flow {f}"));
        }
    }
    assert!(
        missing.is_empty(),
        "not in README.md or docs/: {missing:#?}"
    );

    // The other way: what the docs' command lines use exists.
    let subcommands: BTreeSet<&str> = by_command.keys().map(String::as_str).collect();
    let mut unknown = Vec::new();
    for (page, text) in &pages {
        for line in command_lines(text, "oemputx") {
            let word = line.split_whitespace().nth(1).unwrap_or("");
            let sub = if word.starts_with(['-', '[', '<']) || word.is_empty() {
                ""
            } else {
                word
            };
            if !subcommands.contains(sub) {
                unknown.push(format!("{page}: `{line}`: no subcommand {sub}"));
                continue;
            }
            // Options of a round after `--` are the run's; any flag of oemputx is taken
            // as a value (a flow command's own) rather than guessed at.
            for f in flags_in(&line) {
                if !every_flag.contains(&f) && !flow_flags.contains(&f) {
                    unknown.push(format!("{page}: `{line}`: no flag {f}"));
                }
            }
        }
        for line in command_lines(text, "sample-flow") {
            for f in flags_in(&line) {
                if !flow_flags.contains(&f) {
                    unknown.push(format!("{page}: `{line}`: sample-flow has no {f}"));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "the docs use what does not exist: {unknown:#?}"
    );
}

#[test]
fn the_help_and_the_transport_page_name_every_scheme() {
    let cli = oemputx::cli::Cli::command();
    let qmgr_help = cli
        .get_arguments()
        .find(|a| a.get_long() == Some("qmgr"))
        .and_then(|a| a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let transports = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/transports.md"),
    )
    .expect("docs/transports.md");
    for scheme in oemputx::transport::registry::schemes() {
        let written = if scheme == "embedded" {
            "embedded:".to_string()
        } else {
            format!("{scheme}://")
        };
        assert!(
            qmgr_help.contains(&written),
            "--qmgr's help lacks {written}: {qmgr_help}"
        );
        assert!(
            transports.contains(&written),
            "docs/transports.md lacks {written}"
        );
    }
    // pub/sub's own: MQTT.
    let pubsub = cli
        .get_subcommands()
        .find(|s| s.get_name() == "pubsub")
        .expect("pubsub");
    let help = pubsub
        .get_arguments()
        .find(|a| a.get_long() == Some("qmgr"))
        .and_then(|a| a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    for written in ["amqp://", "nats://", "mqtt://"] {
        assert!(
            help.contains(written),
            "pubsub --qmgr's help lacks {written}: {help}"
        );
    }
    assert!(!help.contains("not yet"), "{help}");
}

#[test]
fn the_help_and_the_docs_name_every_broker_pubsub_and_matrix_run_on_and_every_built_in_profile() {
    // Which schemes pub/sub takes, asked of the binary itself: a broker it cannot run on
    // is refused by name ("so far, not on"); one it can is tried (port 1: nobody there).
    let url = |s: &str| match s {
        "ibmmq" => "ibmmq://QM1".to_string(),
        s => format!("{s}://127.0.0.1:1"),
    };
    let taken: Vec<&str> = oemputx::transport::registry::schemes()
        .filter(|s| ["amqp", "amqp10", "nats", "mqtt", "stomp", "ibmmq"].contains(s))
        .filter(|s| {
            let out = std::process::Command::new(oemputx_test_support::bin::oemputx_bin())
                .args(["pubsub", "--qmgr", &url(s), "--count", "1"])
                .args(["--no-save"])
                .output()
                .expect("runs");
            !String::from_utf8_lossy(&out.stderr).contains("so far, not on")
        })
        .collect();
    assert!(
        taken.contains(&"stomp") && taken.contains(&"amqp"),
        "{taken:?}"
    );
    let cli = oemputx::cli::Cli::command();
    let pages = pages();
    let pubsub_page = pages
        .iter()
        .find(|(p, _)| p.ends_with("pubsub.md"))
        .map(|(_, t)| t.as_str())
        .unwrap_or_default();
    for sub in ["pubsub", "matrix"] {
        let c = cli
            .get_subcommands()
            .find(|s| s.get_name() == sub)
            .expect("the subcommand");
        let qmgr = c
            .get_arguments()
            .find(|a| a.get_long() == Some("qmgr"))
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        for s in &taken {
            let written = format!("{s}://");
            assert!(
                qmgr.contains(&written),
                "{sub} --qmgr's help lacks {written}: {qmgr}"
            );
            assert!(
                pubsub_page.contains(&written),
                "docs/pubsub.md lacks {written}"
            );
        }
    }
    // The built-in profiles: every one in the docs, none the docs name that is not one.
    let out = std::process::Command::new(oemputx_test_support::bin::oemputx_bin())
        .arg("profiles")
        .env("XDG_CONFIG_HOME", "/nonexistent-oemputx-test")
        .current_dir(std::env::temp_dir())
        .output()
        .expect("runs");
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter(|l| l.ends_with("built in"))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert!(listed.len() >= 5, "{listed:?}");
    let all: String = pages.iter().map(|(_, t)| t.as_str()).collect();
    for p in &listed {
        assert!(
            all.contains(&format!("`{p}`")) || all.contains(&format!("--qmgr {p}")),
            "the docs do not name the built-in profile {p}"
        );
    }
}
