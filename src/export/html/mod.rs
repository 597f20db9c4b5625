//! One self-contained HTML file per result, to send to people who will not read a terminal
//! table: no network at all (a Content-Security-Policy that forbids every fetch, no external
//! font, script or style), charts as inline SVG drawn in Rust with plotters (already the
//! project's chart library for sweep and matrix: no JavaScript chart library to inline),
//! light and printable, every figure visible without interaction.
//!
//! [`page`] is the shell; each command's page puts its tables ([`table`], [`facts`]) and
//! charts ([`charts`]) in it; every chart is a `<figure id="chart-…">` so that tests find it.

pub mod charts;
pub mod compare;
pub mod flame;
pub mod gate;
pub mod history;
pub mod ladder;
pub mod matrix;
pub mod pubsub;
pub mod run;
pub mod sweep;

use std::fmt::Write as _;

/// Text as HTML shows it: markup as text, and control characters (but tab and line feed)
/// as U+FFFD, which XHTML and a copy into a terminal would otherwise take raw.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' | '\n' => o.push(c),
            c if c.is_control() => o.push('\u{fffd}'),
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Nothing may be fetched: not a font, not an image, not a script (the file is read offline
/// and sent by mail). Inline styles are the one thing allowed.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// Wide tables scroll inside themselves on a narrow screen, charts shrink to it, and long
/// words (a queue manager's URL, a path) wrap: a phone never scrolls the page sideways.
const STYLE: &str = "body{font-family:sans-serif;color:#111;background:#fff;max-width:1100px;margin:1.5em auto;padding:0 1em;line-height:1.35}\
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}\
th{background:#f2f2f2}td.t,th.t{text-align:left}.status{display:inline-block;padding:.1em .5em;border:1px solid #999;font-weight:bold}\
.bad{color:#a00;border-color:#a00}.ok{color:#060;border-color:#060}figure{margin:1em 0}figcaption{font-size:.9em;color:#333}\
.note{color:#333;font-size:.92em}.headline{font-size:1.2em;font-weight:bold;margin:.6em 0}\
.warn{color:#a00;border-left:4px solid #a00;padding-left:.5em}\
p,td.t{overflow-wrap:anywhere}svg{max-width:100%;height:auto}\
@media (max-width:700px){table{display:block;overflow-x:auto;max-width:100%}figure{overflow-x:auto}}\
@media print{body{margin:0;max-width:none}h2{break-after:avoid}figure,table{break-inside:avoid}}";

/// The whole page: a title, a status (and whether it is good), and the body's sections.
pub fn page(title: &str, status: (&str, bool), body: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p><span class=\"status {}\">{}</span></p>\n{body}\n\
<p class=\"note\">Written by oemputx {} — one file, no network; the figures are in the JSON export too.</p>\n</body></html>\n",
        esc(title),
        esc(title),
        if status.1 { "ok" } else { "bad" },
        esc(status.0),
        env!("CARGO_PKG_VERSION"),
    );
    o
}

/// A section: a heading and its content.
pub fn section(o: &mut String, heading: &str, content: &str) {
    let _ = write!(o, "<h2>{}</h2>\n{content}\n", esc(heading));
}

/// A table: a header row and rows of cells, the first column text (left), the rest
/// figures (right).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut o = String::from("<table><tr>");
    for (i, h) in header.iter().enumerate() {
        let class = if i == 0 { " class=\"t\"" } else { "" };
        let _ = write!(o, "<th{class}>{}</th>", esc(h));
    }
    o.push_str("</tr>\n");
    for r in rows {
        o.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if i == 0 { " class=\"t\"" } else { "" };
            let _ = write!(o, "<td{class}>{}</td>", esc(c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>");
    o
}

/// A two-column table of facts: name, value.
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut o = String::from("<table>");
    for (k, v) in rows {
        let _ = write!(
            o,
            "<tr><th class=\"t\">{}</th><td class=\"t\">{}</td></tr>",
            esc(k),
            esc(v)
        );
    }
    o.push_str("</table>");
    o
}

/// A chart: an SVG with its caption, as a figure the tests can find by id.
pub fn figure(id: &str, caption: &str, svg: &str) -> String {
    format!(
        "<figure id=\"chart-{}\">{svg}<figcaption>{}</figcaption></figure>",
        esc(id),
        esc(caption)
    )
}

/// A figure with a fixed number of decimals, or `-`.
pub fn num(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.decimals$}"),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_the_page_forbids_every_fetch() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let p = page("t<1>", ("completed", true), "<p>b</p>");
        assert!(p.starts_with("<!doctype html>"));
        assert!(p.contains("default-src 'none'"));
        assert!(p.contains("<title>t&lt;1&gt;</title>"));
        assert!(!p.contains("http://") && !p.contains("https://"), "{p}");
    }
}
