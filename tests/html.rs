//! The HTML reports in a real browser (issue 32): Debian's Chromium, headless and offline,
//! loads each from a file:// URL; every chart is there and drawn, the page asks for nothing
//! on the network, and a screenshot is kept (target/html-screenshots/).

use oemputx_test_support::browser::{charts, render};
use oemputx_test_support::*;

fn screenshots() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/html-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

/// The page's charts are all there and drawn, and it fetched nothing.
fn check(html: &std::path::Path, name: &str, want: &[&str]) {
    let png = screenshots().join(format!("{name}.png"));
    let r = render(html, &png, 2600);
    let drawn = charts(&r.dom);
    for id in want {
        let marks = drawn.iter().find(|(c, _)| c == id).map_or(0, |(_, m)| *m);
        assert!(
            marks >= 3,
            "chart-{id} is missing or empty in {name}: {drawn:?}"
        );
    }
    assert!(
        r.page_requests.is_empty(),
        "{name} asked the network for {:?}",
        r.page_requests
    );
    let size = std::fs::metadata(&r.screenshot).map_or(0, |m| m.len());
    assert!(size > 10_000, "{name}: screenshot of {size} bytes");
}

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
    check(&html, "run", &["cpu", "latency", "rounds"]);
}
