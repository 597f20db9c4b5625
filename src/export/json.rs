//! The JSON exporter: the report model as `oemputx.report/2`.

use crate::report::Report;

/// The report as pretty-printed JSON with a trailing newline, with its `headline` (read
/// off the finished report here, so that it always says what the figures say).
pub fn render(report: &Report) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(report)?;
    if let serde_json::Value::Object(map) = &mut value {
        map.insert(
            "headline".into(),
            serde_json::to_value(crate::report::headline::Headline::of(report))?,
        );
    }
    let mut s = serde_json::to_string_pretty(&value)?;
    s.push('\n');
    Ok(s)
}
