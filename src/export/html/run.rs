//! A put/get run as one HTML page: the settings and host, the figures, the OEMPUTX table,
//! CPU per transaction by group, the round trip by percentile, the rounds, capacity,
//! integrity, the verdict and warnings.

use super::{charts, esc, facts, figure, num, section, table};
use crate::driver::Status;
use crate::report::Report;

fn status(r: &Report) -> (String, bool) {
    match r.status {
        Status::Completed => ("completed".into(), true),
        s => (
            format!(
                "{}: {}",
                if s == Status::Interrupted {
                    "INTERRUPTED"
                } else {
                    "INCOMPLETE"
                },
                r.status_detail.as_deref().unwrap_or(s.describe())
            ),
            false,
        ),
    }
}

fn settings(r: &Report) -> String {
    let s = &r.settings;
    let h = &r.host;
    facts(&[
        ("Queue manager", s.qmgr.clone()),
        ("Request queue", s.request_queue.clone()),
        (
            "Message",
            format!("{} ({} bytes)", s.message_source, s.msg_bytes_max),
        ),
        ("Persistence", s.persistence()),
        ("Tasks", s.tasks.to_string()),
        ("Label", r.label.clone()),
        ("Start (UTC)", r.start_utc.clone()),
        (
            "Host",
            format!(
                "{}, {} CPU(s) {}, kernel {}",
                h.hostname,
                h.cpus,
                h.cpu_model.as_deref().unwrap_or("(model unknown)"),
                h.kernel
            ),
        ),
    ])
}

fn figures(r: &Report) -> String {
    let ratio = r.capture_ratio.as_ref().map_or("-".into(), |c| {
        format!(
            "{:.3}{} ({})",
            c.value,
            c.sigma.map(|s| format!(" ±{s:.3}")).unwrap_or_default(),
            c.source
        )
    });
    let mut rows = vec![
        ("Transactions", r.transactions.to_string()),
        ("Elapsed", format!("{:.3} s", r.elapsed_s)),
        ("Rate", format!("{:.1} trans/s", r.rate_tps)),
        (
            "Round trip, mean",
            format!("{:.2} µs", r.round_trip_us.mean),
        ),
        ("Round trip, p99", format!("{:.2} µs", r.round_trip_us.p99)),
        (
            "Driver CPU",
            format!("{} µs/tran", num(r.app_cpu.us_per_tran, 2)),
        ),
        (
            "Captured total",
            format!("{} µs/tran", num(r.captured_us_per_tran, 2)),
        ),
        ("Capture ratio", ratio),
        (
            "Corrected total",
            format!("{} µs/tran", num(r.corrected_us_per_tran, 2)),
        ),
    ];
    if let Some(o) = &r.other_cpu {
        rows.push((
            "Other CPU (outside the groups)",
            format!("{:.2} µs/tran", o.us_per_tran),
        ));
    }
    if let Some(served) = crate::export::text::served_by(r) {
        rows.push(("Served by", served));
    }
    if let Some(a) = &r.accounting {
        if let Some(h) = &a.host_load {
            rows.push(("Host load", format!("{}: {}", h.state.word(), h.summary)));
        }
        rows.push(("Verdict", a.verdict.clone()));
    }
    if let Some(b) = r
        .capture_ratio
        .as_ref()
        .and_then(crate::export::text::ratio_breakdown)
    {
        rows.push(("Capture ratio from", b));
    }
    facts(&rows)
}

/// A process as a person reads it: its name and its pid once, `postgres (2280)`. A row's
/// name is the OEMPUTX Jobname.PID (`postgres.2280`), which the text and TSV keep.
fn process_label(name: &str, pid: Option<i32>) -> String {
    match pid {
        Some(pid) => {
            let base = name.strip_suffix(&format!(".{pid}")).unwrap_or(name);
            format!("{base} ({pid})")
        }
        None => name.to_string(),
    }
}

fn cpu_table(r: &Report) -> String {
    let mut rows = Vec::new();
    for g in &r.groups {
        for p in r
            .processes
            .iter()
            .filter(|p| p.group == g.name && p.host == g.host)
        {
            rows.push(vec![
                process_label(&p.name, p.pid),
                format!("{:.2}", p.user_us_per_tran),
                format!("{:.2}", p.sys_us_per_tran),
                format!("{:.2}", p.total_us_per_tran),
                format!("{:.1}", p.pct),
            ]);
        }
        let host = if g.host == "local" {
            String::new()
        } else {
            format!("@{}", g.host)
        };
        rows.push(vec![
            format!("{}*{host}", g.name),
            format!("{:.2}", g.user_us_per_tran),
            format!("{:.2}", g.sys_us_per_tran),
            format!("{:.2}", g.total_us_per_tran),
            format!("{:.1}", g.pct),
        ]);
    }
    table(
        &[
            "Process (pid) / group*",
            "USR µs/tran",
            "SYS µs/tran",
            "Tot µs/tran",
            "%",
        ],
        &rows,
    )
}

/// The OEMPUTX table and its chart of each group's user and system CPU.
fn cpu_section(r: &Report) -> String {
    let groups: Vec<(String, f64, f64)> = r
        .groups
        .iter()
        .map(|g| (g.name.clone(), g.user_us_per_tran, g.sys_us_per_tran))
        .collect();
    let mut cpu = cpu_table(r);
    if let Ok(svg) = charts::cpu_bars(&groups) {
        cpu.push_str(&figure(
            "cpu",
            "CPU per transaction of each group: user (dark) and system (light) stacked.",
            &svg,
        ));
    }
    cpu
}

/// Cost beyond CPU: a row per metric, a column per group that has a figure.
fn beyond_cpu(r: &Report) -> Option<String> {
    let shown: Vec<&crate::report::GroupRow> = r.groups.iter().filter(|g| g.cost.any()).collect();
    if shown.is_empty() {
        return None;
    }
    let names: Vec<String> = std::iter::once("Per transaction".to_string())
        .chain(shown.iter().map(|g| format!("{}*", g.name)))
        .collect();
    let header: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = crate::accounting::resources::METRICS
        .iter()
        .map(|m| {
            std::iter::once(m.label.to_string())
                .chain(shown.iter().map(|g| m.shown(&g.cost)))
                .collect()
        })
        .collect();
    Some(table(&header, &rows))
}

/// A soak's trend: its verdict, and each group's cost per message and resident set by round.
fn trend(r: &Report) -> Option<String> {
    let t = r.trend.as_ref()?;
    let mut html = format!("<p>{}</p>", super::esc(&t.verdict));
    let points = |f: &dyn Fn(&crate::report::trend::Series, usize) -> Option<f64>| {
        t.series
            .iter()
            .map(|s| {
                let p: Vec<(f64, f64)> = (0..s.hours.len())
                    .filter_map(|i| Some((s.hours[i] * 3600.0, f(s, i)?)))
                    .collect();
                (s.name.clone(), p)
            })
            .filter(|(_, p)| !p.is_empty())
            .collect::<Vec<_>>()
    };
    let cost = points(&|s, i| Some(s.us_per_tran[i]).filter(|v| v.is_finite()));
    if let Ok(svg) = charts::time_plot("CPU per message by round", "µs per message", &cost) {
        html.push_str(&figure(
            "trend-cpu",
            "Each group's CPU per message, a point per round.",
            &svg,
        ));
    }
    let rss = points(&|s, i| s.rss_bytes[i].map(|b| b / 1e6));
    if let Ok(svg) = charts::time_plot("Resident set by round", "MB", &rss) {
        html.push_str(&figure(
            "trend-rss",
            "Each group's resident set at each round's end.",
            &svg,
        ));
    }
    Some(html)
}

fn rounds(r: &Report) -> Option<String> {
    let s = r.rounds_summary.as_ref()?;
    let mut rows = Vec::new();
    let mut add = |name: &str, b: &Option<crate::report::rounds::BestMedianWorst>| {
        if let Some(b) = b {
            rows.push(vec![
                name.to_string(),
                format!("{:.2}", b.best),
                format!("{:.2}", b.median),
                format!("{:.2}", b.worst),
                format!("{:.1}%", b.spread_pct),
            ]);
        }
    };
    add("Rate (trans/s)", &s.rate_tps);
    add("Round trip mean (µs)", &s.round_trip_mean_us);
    add("Captured (µs/tran)", &s.captured_us_per_tran);
    for g in &s.groups {
        add(
            &format!("{}* (µs/tran)", g.name),
            &Some(g.total_us_per_tran),
        );
    }
    let mut series: Vec<(String, Vec<f64>)> = r
        .groups
        .iter()
        .map(|g| {
            let v = r
                .rounds
                .iter()
                .filter_map(|rd| rd.groups.iter().find(|x| x.name == g.name))
                .map(|x| x.total_us_per_tran)
                .collect();
            (g.name.clone(), v)
        })
        .collect();
    series.push((
        "captured".into(),
        r.rounds
            .iter()
            .filter_map(|rd| rd.captured_us_per_tran)
            .collect(),
    ));
    let chart = charts::rounds_plot("CPU per transaction in each round (µs)", &series)
        .map(|svg| figure("rounds", "Each round's CPU per transaction by group and captured: how far one run's figures can be trusted.", &svg))
        .unwrap_or_default();
    let noise = s
        .noisy
        .as_deref()
        .map(|n| format!("<p class=\"note\">{}</p>", esc(n)))
        .unwrap_or_default();
    Some(format!(
        "{}{chart}{noise}",
        table(&["figure", "best", "median", "worst", "spread"], &rows)
    ))
}

fn capacity(r: &Report) -> Option<String> {
    let c = r.capacity.as_ref()?;
    let rows: Vec<Vec<String>> = c
        .groups
        .iter()
        .map(|g| {
            let mut row = vec![
                format!("{}@{}", g.name, g.host),
                format!("{:.2}", g.us_per_tran),
                format!("{:.4}", g.cores_per_1000_tps),
                num(g.corrected_cores_per_1000_tps, 4),
            ];
            if c.price_per_vcpu_hour.is_some() {
                row.push(
                    g.cost_per_million
                        .map_or("-".into(), crate::export::text::money),
                );
            }
            row
        })
        .collect();
    let mut hosts: Vec<(&str, String)> = c
        .hosts
        .iter()
        .map(|h| {
            (
                h.name.as_str(),
                format!(
                    "{} CPUs; the groups' {:.2} µs/tran (driver left out) fill them at {} trans/s",
                    h.cpus,
                    h.us_per_tran,
                    num(h.full_at_tps, 0)
                ),
            )
        })
        .collect();
    if let Some(p) = c.price_per_vcpu_hour {
        hosts.push((
            "Price",
            format!(
                "{} per vCPU-hour: a million messages cost µs/tran × price ÷ 3,600",
                crate::export::text::money(p)
            ),
        ));
    }
    Some(format!(
        "{}{}<p class=\"note\">Estimate: {} trans/s fill {}'s CPUs first ({}).</p>",
        table(
            if c.price_per_vcpu_hour.is_some() {
                &[
                    "group",
                    "µs/tran",
                    "cores per 1,000 trans/s",
                    "corrected",
                    "cost per 1M msgs",
                ][..]
            } else {
                &["group", "µs/tran", "cores per 1,000 trans/s", "corrected"][..]
            },
            &rows
        ),
        facts(&hosts),
        num(c.full_at_tps, 0),
        esc(c.busiest_host.as_deref().unwrap_or("-")),
        esc(&c.assumption)
    ))
}

fn integrity(r: &Report) -> String {
    let i = &r.integrity;
    facts(&[
        (
            "Requests sent",
            format!(
                "{}: matched {}, timed out {}, abandoned {}",
                i.sent, i.matched, i.timed_out, i.abandoned
            ),
        ),
        (
            "Replies received",
            format!(
                "{}: matched {}, unmatched {}, duplicates {}, late {}",
                i.received, i.matched, i.unmatched, i.duplicates, i.late
            ),
        ),
    ])
}

/// The run's page.
/// What a person reads first: the answer, then the warning not to miss.
fn headline(r: &Report) -> String {
    let h = crate::report::headline::Headline::of(r);
    let mut o = format!("<p class=\"headline\">{}</p>\n", super::esc(&h.text));
    if let Some(w) = &h.warning {
        o.push_str(&format!(
            "<p class=\"warn\">Warning: {}</p>\n",
            super::esc(w)
        ));
    }
    o
}

pub fn render(r: &Report) -> String {
    let mut body = String::new();
    body.push_str(&headline(r));
    section(&mut body, "Settings and host", &settings(r));
    section(&mut body, "Figures", &figures(r));
    let cpu = cpu_section(r);
    section(&mut body, "CPU per transaction (the OEMPUTX table)", &cpu);
    if let Some(html) = beyond_cpu(r) {
        section(
            &mut body,
            "Beyond CPU: disk, calls, syncs, network, memory",
            &html,
        );
    }
    let points: Vec<(f64, f64)> = r
        .round_trip_percentiles
        .iter()
        .map(|p| (p.pct, p.us))
        .collect();
    if let Ok(svg) = charts::percentile_plot(&points) {
        section(
            &mut body,
            "Round trip",
            &figure(
                "latency",
                "Round trip by percentile, from the run's HDR histogram.",
                &svg,
            ),
        );
    }
    if let Some(html) = rounds(r) {
        section(&mut body, "Rounds", &html);
    }
    if let Some(html) = trend(r) {
        section(&mut body, "Trend", &html);
    }
    if let Some(html) = capacity(r) {
        section(&mut body, "Capacity", &html);
    }
    if let Some(m) = &r.merged {
        let rows: Vec<Vec<String>> = m
            .shards
            .iter()
            .map(|s| {
                vec![
                    s.index.to_string(),
                    s.node.clone().unwrap_or_else(|| s.hostname.clone()),
                    s.transactions.to_string(),
                    format!("{:.1}", s.rate_tps),
                    s.start_utc.clone(),
                    num(s.late_for_start_s, 3),
                ]
            })
            .collect();
        section(
            &mut body,
            "Shards",
            &format!(
                "<p class=\"note\">Run {}: the shared groups measured once ({}); DRIVER is the sum of the shards' own.</p>{}",
                esc(&m.run_id),
                esc(&m.measurement),
                table(
                    &[
                        "shard",
                        "host",
                        "transactions",
                        "trans/s",
                        "start (UTC)",
                        "late for start (s)"
                    ],
                    &rows
                )
            ),
        );
    }
    if let Some(p) = &r.profile {
        section(
            &mut body,
            "Where the CPU goes (--profile)",
            &super::flame::section(p),
        );
    }
    section(&mut body, "Integrity", &integrity(r));
    if let Some(a) = r.accounting.as_ref().filter(|a| !a.warnings.is_empty()) {
        let items: String = a
            .warnings
            .iter()
            .map(|w| format!("<li>{}</li>", esc(w)))
            .collect();
        section(&mut body, "Warnings", &format!("<ul>{items}</ul>"));
    }
    let (text, good) = status(r);
    super::page(
        &format!("oemputx: what does one message cost? ({})", r.label),
        (&text, good),
        &body,
    )
}
