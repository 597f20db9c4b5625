//! An HTML report as a browser shows it: Debian's Chromium, headless, no network, a fresh
//! profile; its DOM after loading, the requests the page itself made (from Chromium's
//! NetLog: the browser's own update checks are initiated by no origin, a page's by its
//! own), and a PNG screenshot.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the browser made of a page.
pub struct Rendered {
    /// The DOM after load, serialized.
    pub dom: String,
    /// Every URL the page itself asked for (none may leave it).
    pub page_requests: Vec<String>,
    pub screenshot: PathBuf,
}

fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The URLs a NetLog shows requested by a page (an initiator other than the browser's
/// "not an origin").
fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .unwrap_or(serde_json::Value::Null);
    json["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter_map(|e| {
                    let p = &e["params"];
                    let initiator = p["initiator"].as_str()?;
                    (initiator != "not an origin")
                        .then(|| p["url"].as_str().unwrap_or("?").to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Load `html` from a file:// URL: its DOM, the requests it made, and a screenshot at
/// `png` (1150 px wide, `height` tall).
pub fn render(html: &Path, png: &Path, height: u32) -> Rendered {
    let url = format!(
        "file://{}",
        html.canonicalize().expect("the HTML file").display()
    );
    let profile = tempfile::tempdir().expect("a browser profile");
    let netlog = profile.path().join("netlog.json");
    let out = chromium(&profile.path().join("p1"))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(["--virtual-time-budget=2000", "--dump-dom"])
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let requests = page_requests(&netlog);
    let shot = chromium(&profile.path().join("p2"))
        .arg(format!("--window-size=1150,{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        shot.status.success() && png.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    Rendered {
        dom,
        page_requests: requests,
        screenshot: png.to_path_buf(),
    }
}

/// The figures of a DOM by id (`chart-…`), each with how many drawn marks its SVG holds.
pub fn charts(dom: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for part in dom.split("<figure id=\"chart-").skip(1) {
        let id = part.split('"').next().unwrap_or("").to_string();
        let body = part.split("</figure>").next().unwrap_or("");
        let svg = body.contains("<svg");
        let marks = ["<rect", "<circle", "<polyline", "<path", "<line"]
            .iter()
            .map(|m| body.matches(m).count())
            .sum();
        out.push((id, if svg { marks } else { 0 }));
    }
    out
}

/// Where the tests keep their screenshots: target/html-screenshots/.
pub fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/html-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

/// A report's HTML in Chromium: each chart in `want` is there and drawn, the page asks
/// the network for nothing, and a screenshot is kept as `name`.png. Skipped (with a line)
/// without Chromium; under CI a missing Chromium fails instead.
pub fn assert_renders(html: &Path, name: &str, want: &[&str]) {
    use crate::live::{Service, can_run_named};
    if !can_run_named(&format!("{name}'s HTML report"), &[Service::Chromium]) {
        return;
    }
    let png = screenshots().join(format!("{name}.png"));
    let r = render(html, &png, 2400);
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
    assert!(size > 10_000, "{name}: a screenshot of {size} bytes");
}

/// Where the boxes of a page fall at a window of `width` × `height`, as Chromium lays it
/// out: for each of `selectors`, whether its first element lies wholly within the first
/// screen (`{"<sel>": true|false|null}`, null when absent), and `overflow_px`, how far the
/// page is wider than the window (0: no horizontal scrolling). A copy of the page is
/// measured, with a script of the test's own added (the report's policy forbids scripts).
pub fn layout(html: &Path, width: u32, height: u32, selectors: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let page = std::fs::read_to_string(html).expect("the HTML file");
    // The policy's <meta> alone: the page's <style> may share its line.
    let without_policy = match page.find("<meta http-equiv=\"Content-Security-Policy\"") {
        Some(at) => {
            let end = page[at..].find('>').map_or(page.len(), |e| at + e + 1);
            format!("{}{}", &page[..at], &page[end..])
        }
        None => page.clone(),
    };
    let wanted = serde_json::to_string(selectors).expect("JSON");
    let script = format!(
        r#"<script>
addEventListener('load', () => {{
  const out = {{}};
  for (const s of {wanted}) {{
    const e = document.querySelector(s);
    if (!e) {{ out[s] = null; continue; }}
    const r = e.getBoundingClientRect();
    out[s] = r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth;
  }}
  out.overflow_px = Math.max(0, document.documentElement.scrollWidth - innerWidth);
  parent.postMessage(JSON.stringify(out), '*');
}});
</script></body>"#
    );
    let measured = dir.path().join("measured.html");
    std::fs::write(&measured, without_policy.replacen("</body>", &script, 1)).expect("written");
    // Headless Chromium keeps a window at least 500 px wide: the page is measured in a
    // frame of the size asked for (its own viewport: media queries see that width), which
    // hands the figures up to the page --dump-dom prints.
    let frame = dir.path().join("frame.html");
    std::fs::write(
        &frame,
        format!(
            r#"<!doctype html><html><body style="margin:0">
<iframe src="measured.html" width="{width}" height="{height}" style="border:0"></iframe>
<script>addEventListener('message', e => {{
  const pre = document.createElement('pre');
  pre.id = 'oemputx-layout';
  pre.textContent = e.data;
  document.body.appendChild(pre);
}});</script></body></html>"#
        ),
    )
    .expect("written");
    let out = chromium(&dir.path().join("profile"))
        .arg(format!(
            "--window-size={},{}",
            width.max(500) + 40,
            height + 40
        ))
        .args([
            "--allow-file-access-from-files",
            "--virtual-time-budget=3000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", frame.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"oemputx-layout\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no layout measured: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let json = json.replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&json).expect("the layout as JSON")
}
