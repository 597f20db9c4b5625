//! The matrix as an HTML page: the CJMQ table and its bar chart.

use super::{esc, figure, section};
use crate::report::matrix::Matrix;

/// The matrix's page.
pub fn render(m: &Matrix) -> String {
    let mut body = String::new();
    let mut content = format!("<pre>{}</pre>", esc(&crate::export::matrix::text(m)));
    if let Ok(svg) = crate::export::matrix::svg(m) {
        content.push_str(&figure("matrix", "Messages received per second per receiver, cell by cell (blue non-persistent, red persistent).", &svg));
    }
    section(&mut body, "The throughput table", &content);
    let good = !m.interrupted && m.partial.is_none();
    let status = if m.interrupted {
        "INTERRUPTED"
    } else if m.partial.is_some() {
        "PARTIAL: stopped by a fault"
    } else {
        "measured"
    };
    super::page("oemputx matrix", (status, good), &body)
}
