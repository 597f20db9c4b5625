//! The JSON exporter: the report model as `oemputx.report/2`.

use crate::report::Report;

/// The report as pretty-printed JSON with a trailing newline.
pub fn render(report: &Report) -> Result<String, serde_json::Error> {
    let mut s = serde_json::to_string_pretty(report)?;
    s.push('\n');
    Ok(s)
}
