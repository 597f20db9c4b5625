//! The HTML reports in a real browser (issue 32): Debian's Chromium, headless and offline,
//! loads each from a file:// URL; every chart is there and drawn, the page asks for nothing
//! on the network, and a screenshot is kept (target/html-screenshots/).

use oemputx_test_support::browser::{assert_renders, render};
use oemputx_test_support::*;

#[test]
fn the_request_check_sees_a_page_that_fetches() {
    // The control: a page that asks for an image is seen asking.
    live!(Chromium);
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("fetching.html");
    std::fs::write(
        &page,
        "<!doctype html><img src=\"http://127.0.0.1:9/x.png\">",
    )
    .expect("write");
    let r = render(&page, &dir.path().join("f.png"), 300);
    assert!(
        r.page_requests
            .iter()
            .any(|u| u.starts_with("http://127.0.0.1:9/")),
        "{:?}",
        r.page_requests
    );
}

#[test]
fn a_run_s_html_report_draws_every_chart_offline_and_stays_small() {
    live!(Chromium);
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("run.html");
    oemputx()
        .args([
            "--count",
            "5000",
            "--rounds",
            "4",
            "--quiet",
            "--export-html",
        ])
        .arg(&html)
        .assert()
        .success();
    let size = std::fs::metadata(&html).expect("written").len();
    assert!(size < 300_000, "{size} bytes");
    // The host's load and the capture ratio's parts, as the text has them (issue 43).
    let page = std::fs::read_to_string(&html).expect("read");
    for fact in [
        ">Host load<",
        ">Other CPU (outside the groups)<",
        ">Capture ratio from<",
    ] {
        assert!(page.contains(fact), "no {fact} in the HTML report");
    }
    // What a person reads first (issue 47): the headline, with the cost per message,
    // before any section, and the warning not to miss right under it when there is one.
    let headline = page.find("<p class=\"headline\">One message costs ");
    let first_section = page.find("<h2>");
    assert!(
        matches!((headline, first_section), (Some(h), Some(s)) if h < s),
        "no headline before the first section"
    );
    assert!(page.contains(" µs of CPU ("), "the cost per message");
    assert_renders(&html, "run", &["cpu", "latency", "rounds"]);
}

/// Two embedded runs saved as JSON, as compare and the gate read them.
fn two_reports(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let paths = (dir.join("a.json"), dir.join("b.json"));
    for p in [&paths.0, &paths.1] {
        oemputx()
            .args([
                "--count",
                "500",
                "--rounds",
                "3",
                "--quiet",
                "--export-json",
            ])
            .arg(p)
            .assert()
            .success();
    }
    paths
}

#[test]
fn compare_of_saved_reports_and_the_gate_draw_their_charts_offline() {
    live!(Chromium);
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = two_reports(dir.path());
    let html = dir.path().join("compare.html");
    oemputx()
        .arg("compare")
        .args([&a, &b])
        .arg("--export-html")
        .arg(&html)
        .assert()
        .success();
    assert_renders(&html, "compare-saved", &["reports"]);
    let gate = dir.path().join("gate.html");
    let out = oemputx()
        .args(["gate", "--baseline"])
        .arg(&a)
        .arg("--current")
        .arg(&b)
        .args(["--tolerance", "50%", "--export-html"])
        .arg(&gate)
        .output()
        .expect("runs");
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 3),
        "{out:?}"
    );
    assert_renders(&gate, "gate", &["verdict"]);
}

#[test]
fn the_first_screen_shows_the_answer_and_its_warning_and_a_phone_never_scrolls_sideways() {
    live!(Chromium);
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("run.html");
    // A short run of a few rounds always has a warning to show (its capture ratio is too
    // uncertain to apply, or the host was busy), and a wide CPU table.
    oemputx()
        .args(["--count", "300", "--rounds", "3", "--quiet", "--no-save"])
        .args(["--group", &format!("ME=pid:{}", std::process::id())])
        .arg("--export-html")
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).expect("read");
    assert!(page.contains("<p class=\"warn\">"), "a warning to show");
    // A desktop's first screen: the headline (the cost per message) and the top warning,
    // without scrolling.
    let desk = oemputx_test_support::browser::layout(&html, 1280, 800, &[".headline", ".warn"]);
    assert_eq!(desk[".headline"], true, "{desk}");
    assert_eq!(desk[".warn"], true, "{desk}");
    assert_eq!(desk["overflow_px"], 0, "{desk}");
    // A phone: the page is never wider than the screen (wide tables scroll in themselves).
    let phone = oemputx_test_support::browser::layout(&html, 390, 800, &[".headline"]);
    assert_eq!(
        phone["overflow_px"], 0,
        "the page is wider than a phone: {phone}"
    );
    assert_eq!(phone[".headline"], true, "{phone}");
}
