//! Issue 47: a row pasted from any command's `--export-tsv` parses with Python's csv module
//! and carries what identifies the run (settings, rounds, host state, version, commit), so
//! that two pasted rows can be told apart; two runs differing only in persistence differ in
//! a column. (sweep's and a live compare's rows are checked in sweep_compare.rs.)

use oemputx_test_support::*;
use std::path::Path;

fn write_tsv(dir: &Path, name: &str, args: &[&str]) -> Vec<Vec<String>> {
    let path = dir.join(name);
    let out = oemputx()
        .current_dir(dir)
        .args(args)
        .arg("--export-tsv")
        .arg(&path)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    pasteable_tsv(&path, &oemputx::export::identity::COLUMNS)
}

/// The value of `column` in body row `row`.
fn cell<'a>(rows: &'a [Vec<String>], row: usize, column: &str) -> &'a str {
    let at = rows[0].iter().position(|h| h == column).expect(column);
    &rows[row][at]
}

#[test]
fn a_run_s_rows_identify_it_and_persistence_shows() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let base = ["--count", "300", "--rounds", "2", "--quiet", "--no-save"];
    let plain = write_tsv(dir.path(), "plain.tsv", &base);
    let mut persistent_args = base.to_vec();
    persistent_args.push("--persistent");
    let persistent = write_tsv(dir.path(), "persistent.tsv", &persistent_args);
    assert_eq!(cell(&plain, 1, "persistent"), "false");
    assert_eq!(cell(&persistent, 1, "persistent"), "true");
    assert_eq!(cell(&plain, 1, "rounds"), "2");
    assert_eq!(cell(&plain, 1, "count"), "300");
    assert!(!cell(&plain, 1, "host_state").is_empty());
    // The commit measured, from CI's variable (else git's HEAD in the run's folder).
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let path = dir.path().join("commit.tsv");
    let out = oemputx()
        .env("GITHUB_SHA", sha)
        .args(base)
        .arg("--export-tsv")
        .arg(&path)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        cell(
            &pasteable_tsv(&path, &oemputx::export::identity::COLUMNS),
            1,
            "commit"
        ),
        sha
    );
}

#[test]
fn compare_merge_pubsub_and_matrix_rows_identify_their_runs() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let d = dir.path();
    for (name, extra) in [("a.json", vec![]), ("b.json", vec!["--persistent"])] {
        let mut args = vec![
            "--count",
            "300",
            "--quiet",
            "--no-save",
            "--export-json",
            name,
        ];
        args.extend(extra);
        let out = oemputx().current_dir(d).args(&args).output().expect("runs");
        assert_eq!(out.status.code(), Some(0));
    }
    // compare refuses runs that differ in persistence unless forced: they are different.
    let rows = write_tsv(
        d,
        "compare.tsv",
        &["compare", "a.json", "b.json", "--force"],
    );
    let persistence: std::collections::BTreeSet<&str> = (1..rows.len())
        .map(|r| cell(&rows, r, "persistent"))
        .collect();
    assert_eq!(
        persistence.len(),
        2,
        "each report's row says its persistence: {rows:?}"
    );

    for (i, measure) in [(0, true), (1, false)] {
        let shard = format!("s{i}.json");
        let mut args = vec![
            "--count",
            "300",
            "--tasks",
            "2",
            "--run-id",
            "tsv",
            "--quiet",
            "--no-save",
        ];
        let of = format!("{i}/2");
        args.extend(["--shard", &of, "--export-json", &shard]);
        if measure {
            args.push("--measure");
        }
        let out = oemputx().current_dir(d).args(&args).output().expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    write_tsv(d, "merge.tsv", &["merge", "s0.json", "s1.json"]);

    if live::can_run(&[live::Service::Nats, live::Service::Mosquitto]) {
        let topic = format!("tsv.{}", std::process::id());
        let rows = write_tsv(
            d,
            "pubsub.tsv",
            &[
                "pubsub",
                "--qmgr",
                "nats://127.0.0.1:4222",
                "--topic",
                &topic,
                "--count",
                "200",
                "--no-save",
            ],
        );
        assert_eq!(cell(&rows, 1, "transport"), "nats");
        write_tsv(
            d,
            "matrix.tsv",
            &[
                "matrix",
                "--qmgr",
                "mqtt://127.0.0.1:1883",
                "--count",
                "100",
            ],
        );
    }
}
