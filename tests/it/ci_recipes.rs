//! The CI recipes of docs/gate.md, run as written (issue 44) but for 200 messages a round
//! where the page has 2,000: each recipe's script, taken from the page, with the variables
//! GitHub Actions and GitLab CI set, against the local RabbitMQ. As main three times (the history grows, each run with its commit), then as a
//! change, gated against that history: the verdict's summary, JUnit file and (GitHub)
//! annotations written. What the page's YAML does around the scripts — checkout, the
//! cache, `cargo build` — is the CI's own and is not run here.

use oemputx_test_support::*;
use std::path::Path;

/// The script of the block that follows `marker` on the page: the lines under its first
/// `run: |` or `- |` that sit deeper than it, dedented.
fn script_after(page: &str, marker: &str) -> String {
    let from = page
        .find(marker)
        .unwrap_or_else(|| panic!("docs/gate.md has no '{marker}'"));
    let block = &page[from..];
    let block = &block[block.find("```yaml").expect("a YAML block")..];
    let block = &block[..block[7..].find("```").expect("the block's end") + 7];
    let lines: Vec<&str> = block.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end().ends_with("run: |") || l.trim() == "- |")
        .unwrap_or_else(|| panic!("no script block after '{marker}'"));
    let indent = |l: &str| l.len() - l.trim_start().len();
    let base = indent(lines[start]);
    let body: Vec<&str> = lines[start + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent(l) > base)
        .copied()
        .collect();
    let cut = body.iter().map(|l| indent(l)).min().unwrap_or(0);
    body.iter()
        .map(|l| l.get(cut..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run a recipe's script in `dir` with `env`, as CI runs a step (`bash -eo pipefail`), the
/// test's binaries where it names target/release; (exit code, stdout, stderr).
fn run_script(dir: &Path, script: &str, env: &[(&str, String)]) -> (i32, String, String) {
    let bins = oemputx_bin()
        .parent()
        .expect("the binaries' folder")
        .display()
        .to_string();
    let script = script.replace("target/release/", &format!("{bins}/"));
    let out = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(dir)
        // As every oemputx a test starts: no profiles from home, nothing saved under reports/.
        .env("XDG_CONFIG_HOME", "/nonexistent-oemputx-test")
        .env("OEMPUTX_NO_SAVE", "1")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bash runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sha(i: usize) -> String {
    format!("{:040x}", 0xc0ffee_u64 + i as u64)
}

#[test]
fn the_documented_ci_recipes_save_on_main_and_gate_a_change() {
    live!(RabbitMq);
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/gate.md"))
        .expect("docs/gate.md");
    // The two recipes at once, each with its own queue and folder: one after the other
    // they were the suite's longest test (166 s).
    std::thread::scope(|scope| {
        for (ci, marker) in [("github", "GitHub Actions (`"), ("gitlab", "GitLab CI (`")] {
            let page = &page;
            scope.spawn(move || recipe(page, ci, marker));
        }
    });
}

/// One CI's recipe: three runs as main, then a change gated against them.
fn recipe(page: &str, ci: &str, marker: &str) {
    // 200 messages a round where the page has 2,000: what is checked is the recipe's
    // logic (history, commits, the gate's verdict and its files), which does not change
    // with the count; at 2,000 the two recipes' 160,000 round trips were the suite's
    // longest test (170 s of four test threads' time).
    let script = script_after(page, marker);
    assert!(script.contains("--count 2000 "), "{ci}: {script}");
    let script = script.replace("--count 2000 ", "--count 200 ");
    let dir = tempfile::tempdir().expect("temp dir");
    let queue = QueueGuard(fresh_queue(&format!("recipe-{ci}")));
    let job = [
        ("BROKER_HOST", "127.0.0.1".to_string()),
        ("PERF_QUEUE", queue.0.clone()),
    ];
    let summary = dir.path().join("step-summary.md");
    let as_ci = |main: bool, i: usize| -> Vec<(&str, String)> {
        let mut env = job.to_vec();
        if ci == "github" {
            env.extend([
                ("GITHUB_ACTIONS", "true".to_string()),
                (
                    "GITHUB_REF",
                    if main {
                        "refs/heads/main"
                    } else {
                        "refs/pull/7/merge"
                    }
                    .to_string(),
                ),
                ("GITHUB_SHA", sha(i)),
                ("GITHUB_STEP_SUMMARY", summary.display().to_string()),
            ]);
        } else {
            env.extend([
                ("GITLAB_CI", "true".to_string()),
                (
                    "CI_COMMIT_BRANCH",
                    if main { "main" } else { "feature" }.to_string(),
                ),
                ("CI_DEFAULT_BRANCH", "main".to_string()),
                ("CI_COMMIT_SHA", sha(i)),
            ]);
        }
        env
    };
    for i in 0..3 {
        let (code, _, err) = run_script(dir.path(), &script, &as_ci(true, i));
        assert_eq!(code, 0, "{ci} main run {i}:\n{err}");
    }
    let history: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("perf/main.json")).expect("main's history"),
    )
    .expect("JSON");
    let commits: Vec<&str> = history["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["commit"].as_str())
        .collect();
    assert_eq!(commits, [sha(0), sha(1), sha(2)], "{ci}");
    // The change: the same flow, so it passes (or is inconclusive, which passes) —
    // never refused, and the CI page gets the verdict either way.
    let (code, stdout, err) = run_script(dir.path(), &script, &as_ci(false, 3));
    assert_eq!(code, 0, "{ci} change:\n{stdout}\n{err}");
    assert!(
        stdout.contains("Reach: from the spread of main's 3 runs"),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(dir.path().join("gate.xml")).expect("JUnit");
    assert!(
        junit.contains("<testsuite name=\"oemputx gate\""),
        "{junit}"
    );
    let md = if ci == "github" {
        summary.clone()
    } else {
        dir.path().join("gate.md")
    };
    let md = std::fs::read_to_string(md).expect("the summary");
    assert!(md.contains("oemputx gate:"), "{md}");
    assert!(md.contains("FLOW"), "{md}");
}
