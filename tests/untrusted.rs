//! Issue 48's classes, across every reader of a saved file: text from a file another host
//! or a CI artifact made never reaches a terminal, a CI log, XML, HTML, Markdown or a
//! spreadsheet raw. A saved report whose group is named with a control character, a line
//! break, a GitHub workflow command, markup or a formula is refused by every command that
//! reads one (exit 2), and the refusal itself shows the name escaped.

use oemputx_test_support::*;
use std::path::Path;

/// A name no run writes: every kind of text that does harm somewhere.
const HOSTILE: &str = "::error::pwn\u{1b}[31m<script>x</script>|=cmd\r\n::add-mask::Z";

/// A quiet run of the embedded queue manager in `dir` with `extra` options.
fn run(dir: &Path, extra: &[&str]) {
    let out = oemputx()
        .current_dir(dir)
        .args(["--count", "300", "--rounds", "3", "--quiet", "--no-save"])
        .args(["--group", &format!("ME=pid:{}", std::process::id())])
        .args(extra)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `file` with the group ME renamed to [`HOSTILE`] everywhere it appears.
fn poison(file: &Path) {
    let text = std::fs::read_to_string(file).expect("saved");
    let name = serde_json::to_string(HOSTILE).expect("a JSON string");
    assert!(
        text.contains("\"ME\""),
        "the group is in {}",
        file.display()
    );
    std::fs::write(file, text.replace("\"ME\"", &name)).expect("rewritten");
}

/// Nothing on a terminal or in a CI log from the hostile name: no escape sequence, no
/// carriage return, no line that starts a workflow command but oemputx's own annotations.
fn defused(what: &str, out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    assert!(
        !text.contains('\u{1b}'),
        "{what}: an escape sequence\n{text}"
    );
    assert!(!text.contains('\r'), "{what}: a carriage return\n{text}");
    for line in text.lines() {
        let own = [
            "::error title=oemputx",
            "::warning title=oemputx",
            "::notice",
        ]
        .iter()
        .any(|p| line.starts_with(p));
        assert!(
            !line.starts_with("::") || own,
            "{what}: a workflow command\n{text}"
        );
    }
}

#[test]
fn a_saved_report_with_a_hostile_group_name_is_refused_by_every_reader_with_the_name_escaped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    run(d, &["--export-json", "a.json"]);
    run(d, &["--export-json", "b.json"]);
    let shard = [
        "--shard",
        "0/1",
        "--run-id",
        "u",
        "--measure",
        "--export-json",
    ];
    run(d, &[&shard[..], &["s.json"]].concat());
    for _ in 0..3 {
        run(d, &["--save-baseline", "history.json"]);
    }
    std::fs::copy(d.join("b.json"), d.join("clean.json")).expect("a clean copy");
    for f in ["a.json", "history.json", "s.json"] {
        poison(&d.join(f));
    }
    let readers: [&[&str]; 6] = [
        &["compare", "a.json", "b.json", "--export-tsv", "t.tsv"],
        &[
            "compare",
            "clean.json",
            "a.json",
            "--export-markdown",
            "m.md",
        ],
        &[
            "gate",
            "--baseline",
            "history.json",
            "--current",
            "clean.json",
            "--github",
            "--export-junit",
            "j.xml",
        ],
        &[
            "gate",
            "--baseline",
            "clean.json",
            "--current",
            "a.json",
            "--github",
        ],
        &["history", "history.json", "--export-html", "h.html"],
        &["merge", "s.json", "--export-html", "h.html"],
    ];
    for args in readers {
        let out = oemputx()
            .current_dir(d)
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("is not one oemputx writes"), "{args:?}: {err}");
        defused(&format!("{args:?} stderr"), &out.stderr);
        defused(&format!("{args:?} stdout"), &out.stdout);
        for written in ["t.tsv", "m.md", "h.html"] {
            assert!(!d.join(written).exists(), "{args:?} wrote {written}");
        }
        // The gate's failure outputs say why, and stay well-formed XML.
        if let Ok(xml) = std::fs::read_to_string(d.join("j.xml")) {
            let mut r = quick_xml::Reader::from_str(&xml);
            loop {
                match r.read_event() {
                    Ok(quick_xml::events::Event::Eof) => break,
                    Ok(_) => {}
                    Err(e) => panic!("{args:?}: the JUnit file is not XML: {e}\n{xml}"),
                }
            }
            assert!(!xml.contains('\u{1b}'), "{xml}");
            std::fs::remove_file(d.join("j.xml")).expect("removed");
        }
    }
}
