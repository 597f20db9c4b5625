//! A sweep as an HTML page: each point's medians with intervals, each N's processes ÷
//! threads with its verdict, and the sweep's chart (error bars).

use super::{esc, figure, section, table};
use crate::report::sweep::Sweep;

/// The sweep's page.
pub fn render(s: &Sweep) -> String {
    let mut body = String::new();
    let rows = crate::export::sweep::rows(s);
    let (header, rest) = rows
        .split_first()
        .map_or((Vec::new(), &[][..]), |(h, r)| (h.clone(), r));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut points = format!(
        "{}<p class=\"note\">flow: {}; {} blocks of {} cycles in {:.0} s, ended: {}.</p>{}",
        s.partial.as_ref().map_or_else(String::new, |p| format!(
            "<p class=\"note\"><strong>{}</strong></p>",
            esc(&p.line())
        )),
        esc(&s.flow_cmd),
        s.run_shape.blocks,
        s.run_shape.cycles_per_block,
        s.run_shape.elapsed_s,
        esc(s.run_shape.ended),
        table(&header, rest)
    );
    if let Ok(svg) = crate::export::sweep::render_svg(s) {
        points.push_str(&figure("sweep", "Rate and FLOW CPU per transaction against N, threads and processes, each point its median with its interval.", &svg));
    }
    section(&mut body, "Points", &points);
    let ratios: Vec<Vec<String>> = s
        .ratios
        .iter()
        .map(|m| {
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
            vec![
                format!("N={} {}", m.tasks, m.metric),
                f(m.ratio),
                f(m.low),
                f(m.high),
                m.reading.clone(),
            ]
        })
        .collect();
    section(
        &mut body,
        "Processes ÷ threads at each N",
        &table(&["N, metric", "ratio", "low", "high", "reading"], &ratios),
    );
    let good = s.partial.is_none();
    super::page(
        "oemputx sweep: threads against processes",
        (
            match s.run_shape.ended {
                e if good => e,
                "failed" => "PARTIAL: stopped by a fault",
                _ => "INTERRUPTED",
            },
            good,
        ),
        &body,
    )
}
