//! The text exporter: OEMPUTX's report layout, plain aligned text in 80 columns.

use super::rows::{CpuLine, cpu_lines, spread_lines};
use crate::driver::Status;
use crate::report::{AccountingInfo, CaptureRatio, GroupRow, OtherCpu, ProcessRow, Report};
use crate::transport::MatchMode;
use std::fmt::Write;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.prec$}"))
}

/// A user or system figure, with its 1σ when that exceeds a tenth of it.
fn with_sigma(v: f64, sigma: f64) -> String {
    if sigma >= 0.01 && sigma > 0.1 * v {
        format!("{v:.2}±{sigma:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The CPU part of a report, as `oemputx` and `oemputx account` both print it.
pub struct CpuSection<'a> {
    pub processes: &'a [ProcessRow],
    pub groups: &'a [GroupRow],
    pub captured_us_per_tran: Option<f64>,
    pub capture_ratio: Option<&'a CaptureRatio>,
    pub corrected_us_per_tran: Option<f64>,
    pub other_cpu: Option<&'a OtherCpu>,
    pub accounting: Option<&'a AccountingInfo>,
}

impl<'a> From<&'a Report> for CpuSection<'a> {
    fn from(r: &'a Report) -> Self {
        CpuSection {
            processes: &r.processes,
            groups: &r.groups,
            captured_us_per_tran: r.captured_us_per_tran,
            capture_ratio: r.capture_ratio.as_ref(),
            corrected_us_per_tran: r.corrected_us_per_tran,
            other_cpu: r.other_cpu.as_ref(),
            accounting: r.accounting.as_ref(),
        }
    }
}

/// OEMPUTX's address-space table: a row per process, a total row per group.
pub(crate) fn cpu_table(o: &mut String, r: &CpuSection) {
    let Some(acc) = r.accounting else { return };
    if let Some(e) = &acc.error {
        let _ = writeln!(o, "Per-process CPU       : not measured: {e}");
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        " {:<24} {:>10} {:>10} {:>9} {:>6}",
        "Jobname.PID", "USR(us)", "SYS(us)", "Tot(us)", "(%)"
    );
    let _ = writeln!(
        o,
        " {:<24} {:>10} {:>10} {:>9}",
        "", "/tran", "/tran", "/tran"
    );
    member_rows(o, r);
    totals(o, r);
    super::beyond::text(o, r.groups, acc.beyond_cpu.as_ref());
    accounting_notes(o, acc);
}

/// A row per process of each group, then the group's total row (`NAME*`).
fn member_rows(o: &mut String, r: &CpuSection) {
    for line in cpu_lines(r.processes, r.groups) {
        match line {
            CpuLine::Member(p) => {
                // A process names itself: any local user's text, never raw on a terminal.
                let shown = super::for_terminal(&p.name);
                let name = if shown.chars().count() > 24 {
                    format!("{}~", shown.chars().take(23).collect::<String>())
                } else {
                    shown
                };
                let _ = writeln!(
                    o,
                    " {:<24} {:>10} {:>10} {:>9.2} {:>6.1}{}",
                    name,
                    with_sigma(p.user_us_per_tran, p.split_sigma_us_per_tran),
                    with_sigma(p.sys_us_per_tran, p.split_sigma_us_per_tran),
                    p.total_us_per_tran,
                    p.pct,
                    p.note
                        .as_deref()
                        .map(|n| format!("  ({n})"))
                        .unwrap_or_default()
                );
            }
            CpuLine::Total(g) if g.processes == 0 => {
                let _ = writeln!(
                    o,
                    " {:<24} {:>10} {:>10} {:>9} {:>6}  (matched nothing)",
                    format!("{}*", g.name),
                    "-",
                    "-",
                    "-",
                    "-"
                );
            }
            CpuLine::Total(g) => {
                let _ = writeln!(
                    o,
                    " {:<24} {:>10.2} {:>10.2} {:>9.2} {:>6.1}",
                    format!("{}*", g.name),
                    g.user_us_per_tran,
                    g.sys_us_per_tran,
                    g.total_us_per_tran,
                    g.pct
                );
            }
        }
    }
}

/// The captured total, the capture ratio and corrected total, and the CPU outside the groups.
fn totals(o: &mut String, r: &CpuSection) {
    if let Some(c) = r.captured_us_per_tran {
        let _ = writeln!(o, " {:<46} {:>9.2}", "Captured total", c);
    }
    match (r.capture_ratio, r.corrected_us_per_tran) {
        (Some(ratio), Some(corr)) => {
            // The value keeps the column; its ± follows it.
            let shown = ratio.shown();
            let (value, sigma) = shown.split_once(' ').unwrap_or((&shown, ""));
            let hosts = r.accounting.is_some_and(|a| !a.hosts.is_empty());
            let label = if hosts {
                ratio
                    .label()
                    .replacen("Capture ratio", "Capture ratio here", 1)
            } else {
                ratio.label()
            };
            let line = format!(" {:<46} {:>9} {sigma}", label, value);
            let _ = writeln!(o, "{}", line.trim_end());
            if let Some(why) = ratio_breakdown(ratio) {
                let _ = writeln!(o, "   {why}");
            }
            let label = if hosts {
                "Corrected total (each host's, summed)"
            } else {
                "Corrected total"
            };
            let _ = writeln!(o, " {:<46} {:>9.2}", label, corr);
        }
        _ => {
            let _ = writeln!(o, " {:<46} {:>9}", "Capture ratio", "n/a");
        }
    }
    if let Some(other) = r.other_cpu {
        let top: Vec<String> = other
            .top
            .iter()
            .map(|t| {
                format!(
                    "{}.{} {:.2}",
                    super::for_terminal(&t.name),
                    t.pid,
                    t.us_per_tran
                )
            })
            .collect();
        let _ = writeln!(
            o,
            " {:<46} {:>9.2}",
            "Other CPU (outside the groups)", other.us_per_tran
        );
        if let Some(short) = other.short_lived_us_per_tran.filter(|v| *v >= 0.005) {
            let _ = writeln!(
                o,
                "   of which {short:.2} in processes that started or ended in the window"
            );
        }
        if !top.is_empty() {
            let _ = writeln!(o, "   top: {}", top.join(", "));
        }
    }
}

/// What a measured capture ratio is made of: the tasks' CPU and its source, the busy time,
/// interrupts, steal (outside the busy time) and what no source accounts for; why it was
/// not applied, when it was not.
pub(crate) fn ratio_breakdown(c: &CaptureRatio) -> Option<String> {
    let (tasks, busy, source) = (c.tasks_cpu_s?, c.busy_s?, c.tasks_source?);
    let mut line = format!(
        "tasks {tasks:.3} s of {busy:.3} s busy; interrupts {:.3} s; unaccounted {:.1} %; steal {:.3} s (not busy); tasks: {}",
        c.irq_s.unwrap_or(0.0),
        100.0 * c.unaccounted_share.unwrap_or(0.0),
        c.steal_s.unwrap_or(0.0),
        source.short()
    );
    if let Some(n) = &c.note {
        line.push_str(&format!("; not applied: {n}"));
    }
    Some(line)
}

/// Where the CPU figures came from, what the snapshots cost, the verdict and the warnings.
fn accounting_notes(o: &mut String, acc: &AccountingInfo) {
    let source = match acc.cpu_source {
        Some(crate::accounting::snapshot::CpuSource::Ticks) => {
            "ticks from /proc/PID/stat (10 ms steps; for comparison)".to_string()
        }
        _ => format!(
            "exact CPU clocks (ns); user/sys split from ticks, ± is 1σ ({})",
            acc.tick_source
        ),
    };
    let _ = writeln!(o, "CPU source            : {source}");
    let _ = writeln!(
        o,
        "Accounting cost       : {:.6} s CPU for the snapshots ({:.2}% of the captured CPU)",
        acc.snapshot_cpu_s, acc.snapshot_share_pct
    );
    hosts(o, &acc.hosts);
    if acc.steal_s > 0.0 {
        let _ = writeln!(
            o,
            "Steal time            : {:.3} s (the hypervisor ran something else)",
            acc.steal_s
        );
    }
    if let Some(h) = &acc.host_load {
        let _ = writeln!(
            o,
            "Host load             : {}: {}",
            h.state.word(),
            super::for_terminal(&h.summary)
        );
    }
    // Each one line: a merged report's come from shards another host wrote.
    let _ = writeln!(
        o,
        "Verdict               : {}",
        super::for_terminal(&acc.verdict)
    );
    for w in &acc.warnings {
        let _ = writeln!(o, "Warning               : {}", super::for_terminal(w));
    }
}

/// Each host's own figures, when groups are on other hosts: its captured and corrected
/// totals under its own capture ratio, the CPU outside its groups, how far its snapshots
/// were from this machine's and what they cost there.
fn hosts(o: &mut String, hosts: &[crate::accounting::hosts::HostFigures]) {
    if hosts.is_empty() {
        return;
    }
    let _ = writeln!(o, "Hosts (µs/tran)       :");
    let _ = writeln!(
        o,
        "  {:<10} {:>9} {:>15} {:>9} {:>9} {:>9} {:>10}  source",
        "host", "captured", "capture ratio", "corrected", "other", "skew ms", "PCP µs"
    );
    for h in hosts {
        let ratio = h
            .capture_ratio
            .as_ref()
            .map_or_else(|| "n/a".to_string(), |r| r.shown());
        let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"));
        let local = h.source == "/proc";
        let _ = writeln!(
            o,
            "  {:<10} {:>9.2} {:>15} {:>9} {:>9.2} {:>9} {:>10}  {}{}",
            h.name,
            h.captured_us_per_tran,
            ratio,
            opt(h.corrected_us_per_tran),
            h.other_cpu.us_per_tran,
            if local {
                "-".into()
            } else {
                format!("{:.2}", h.skew_ms)
            },
            if local {
                "-".into()
            } else {
                format!("{:.2}", h.agents_us_per_tran)
            },
            h.source,
            match (h.exact, h.split.as_ref()) {
                (false, _) => " (ticks)",
                (true, "threads") => " (split: threads' sum)",
                _ => "",
            }
        );
    }
    for h in hosts {
        if let Some(l) = &h.host_load {
            let _ = writeln!(o, "  {:<10} load {}: {}", h.name, l.state.word(), l.summary);
        }
        if let Some(b) = h.capture_ratio.as_ref().and_then(ratio_breakdown) {
            let _ = writeln!(o, "  {:<10} ratio: {b}", h.name);
        }
    }
    let cost: Vec<String> = hosts
        .iter()
        .filter(|h| h.source != "/proc")
        .map(|h| {
            format!(
                "{}: {:.6} s CPU there (pmcd, pmdas, pmproxy), {:.6} s here, slowest request {:.1} ms, window {} by its clock",
                h.name,
                h.agents_cpu_s,
                h.local_cpu_s,
                h.round_trip_ms,
                h.window_s_by_host_clock
                    .map_or_else(|| "unknown".to_string(), |s| format!("{s:.3} s"))
            )
        })
        .collect();
    let _ = writeln!(o, "Host snapshot cost    : {}", cost.join("; "));
}

/// Each round, then best / median / worst, then the noise verdict.
fn rounds_table(o: &mut String, r: &Report) {
    let Some(sum) = &r.rounds_summary else { return };
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        " {:>5} {:>10} {:>11} {:>11} {:>11} {:>11}",
        "Round", "Trans", "Rate/s", "RT mean us", "AppCPU us", "Captured us"
    );
    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"));
    for row in &r.rounds {
        let _ = writeln!(
            o,
            " {:>5} {:>10} {:>11.1} {:>11.2} {:>11} {:>11}",
            row.round,
            row.transactions,
            row.rate_tps,
            row.round_trip_us.mean,
            opt(row.app_cpu_us_per_tran),
            opt(row.captured_us_per_tran)
        );
    }
    for (of, b) in spread_lines(sum) {
        let _ = writeln!(
            o,
            " {:<24} best {:>10.2}  median {:>10.2}  worst {:>10.2}  spread {:>5.1}%",
            of.label("us", "*"),
            b.best,
            b.median,
            b.worst,
            b.spread_pct
        );
    }
    match &sum.noisy {
        Some(n) => {
            let _ = writeln!(o, "Noise                 : {n}");
        }
        None => {
            let _ = writeln!(
                o,
                "Noise                 : CPU per transaction within {:.0}% across {} rounds (or within {} us/tran)",
                crate::report::rounds::NOISY_SPREAD_PCT,
                sum.rounds,
                crate::report::rounds::NOISY_FLOOR_US
            );
        }
    }
}

/// Render the report as text.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(
        o,
        "oemputx {} - what does one message cost?",
        r.tool.version
    );
    // The answer first, and the warning a reader must not miss.
    let h = crate::report::headline::Headline::of(r);
    let _ = writeln!(o, "{}", super::for_terminal(&h.text));
    if let Some(w) = &h.warning {
        let _ = writeln!(o, "Warning: {}", super::for_terminal(w));
    }
    let _ = writeln!(o);
    settings_section(&mut o, r);
    run_figures(&mut o, r);
    latency_and_integrity(&mut o, r);
    let _ = writeln!(o, "Driver CPU source     : {}", r.app_cpu.source);
    cpu_table(&mut o, &CpuSection::from(r));
    serving_line(&mut o, r);
    merged_block(&mut o, r);
    capacity_block(&mut o, r);
    if let Some(p) = &r.profile {
        super::profile::text(&mut o, p);
    }
    rounds_table(&mut o, r);
    if let Some(t) = &r.trend {
        super::beyond::trend_text(&mut o, t);
    }
    status_line(&mut o, r);
    o
}

/// A report merged from shards: each shard's own figures and where the shared CPU is from.
fn merged_block(o: &mut String, r: &Report) {
    let Some(m) = &r.merged else { return };
    let _ = writeln!(
        o,
        "\nMerged from {} shards of run {} (window {:.3} s, starts {:.3} s apart); shared groups: {}",
        m.shards.len(),
        super::for_terminal(&m.run_id),
        m.window_s,
        m.start_spread_s,
        super::for_terminal(&m.measurement)
    );
    // The shards' names and times come from files other hosts wrote: one line each, so
    // that no value can add lines to the report.
    for s in &m.shards {
        let _ = writeln!(
            o,
            " shard {:<3} {:<20} {:>10} trans {:>12.1} trans/sec  {} .. {}{}",
            s.index,
            super::for_terminal(s.node.as_deref().unwrap_or(&s.hostname)),
            s.transactions,
            s.rate_tps,
            super::for_terminal(&s.start_utc),
            super::for_terminal(&s.end_utc),
            s.late_for_start_s
                .filter(|l| *l > 0.0)
                .map(|l| format!("  (ready {l:.3} s late)"))
                .unwrap_or_default()
        );
    }
}

/// An amount of money as people read it: four significant figures, small amounts too
/// (a million messages may cost 0.0005).
pub(crate) fn money(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let places = (3 - x.abs().log10().floor() as i32).clamp(2, 12) as usize;
    format!("{x:.places$}")
}

fn capacity_block(o: &mut String, r: &Report) {
    let Some(c) = &r.capacity else { return };
    let _ = writeln!(
        o,
        "\nCapacity (cores per 1,000 trans/sec; {})",
        c.assumption
    );
    for g in &c.groups {
        let corrected = g
            .corrected_cores_per_1000_tps
            .map(|x| format!("  corrected {x:.4}"))
            .unwrap_or_default();
        let cost = g
            .cost_per_million
            .map(|x| format!("  {} per 1M msgs", money(x)))
            .unwrap_or_default();
        let host = if g.host == "local" {
            String::new()
        } else {
            format!("@{}", g.host)
        };
        let _ = writeln!(
            o,
            " {:<24} {:>9.4}{corrected}{cost}",
            format!("{}{host}", g.name),
            g.cores_per_1000_tps
        );
    }
    for h in &c.hosts {
        let fill = h.full_at_tps.map_or("-".into(), |t| format!("{t:.0}"));
        let _ = writeln!(
            o,
            " {} ({} CPU{}): the groups' {:.2} us/tran (driver left out) would fill {} at {fill} trans/sec",
            h.name,
            h.cpus,
            if h.cpus == 1 { "" } else { "s" },
            h.us_per_tran,
            if h.cpus == 1 { "it" } else { "them" }
        );
    }
    if let Some(p) = c.price_per_vcpu_hour {
        let _ = writeln!(
            o,
            " Price                 : {} per vCPU-hour (--price-per-vcpu-hour): a million messages cost µs/tran × price ÷ 3,600",
            money(p)
        );
    }
    if let (Some(h), Some(t)) = (&c.busiest_host, c.full_at_tps) {
        let _ = writeln!(
            o,
            " Estimate              : {t:.0} trans/sec fill {h}'s CPUs first ({:.1}x this run's {:.0})",
            t / c.measured_tps.max(f64::MIN_POSITIVE),
            c.measured_tps
        );
    }
}

/// Who served the request queue, when it was checked (the warnings above say what is wrong).
fn serving_line(o: &mut String, r: &Report) {
    if let Some(served) = served_by(r) {
        let _ = writeln!(
            o,
            "Served by             : {}",
            super::for_terminal(&served)
        );
    }
}

/// Who served the request queue, in a line (the text's and the HTML's).
pub(crate) fn served_by(r: &Report) -> Option<String> {
    let s = r.serving.as_ref()?;
    let consumers = s
        .consumers
        .map_or("the broker does not tell its consumers".to_string(), |c| {
            format!("{c} consumer(s) by the broker's count")
        });
    let flow_connections: usize = s.flow.iter().map(|p| p.connections).sum();
    let outside = s.others.len() + usize::from(!s.unreadable_by_uid.is_empty());
    Some(format!(
        "{consumers}; FLOW {} process(es) holding {flow_connections} connection(s) to {}; {outside} process(es) outside FLOW connected to it",
        s.flow.len(),
        s.broker
    ))
}

/// The settings echoed, as OEMPUTX's report opens.
fn settings_section(o: &mut String, r: &Report) {
    let s = &r.settings;
    // What a report says of its broker and host is one line each: a merged report's come
    // from a shard another host wrote, any host's name and a broker's queue names from outside.
    let t = super::for_terminal;
    let _ = writeln!(o, "Queue manager     : {}", t(&s.qmgr));
    let h = &r.host;
    let yes_no = |b: Option<bool>| b.map_or("unknown", |b| if b { "yes" } else { "no" });
    let _ = writeln!(
        o,
        "Host              : {}, {} CPU(s) {}, kernel {}, HZ {}, IRQ time accounted: {}",
        t(&h.hostname),
        h.cpus,
        t(h.cpu_model.as_deref().unwrap_or("(model unknown)")),
        t(&h.kernel),
        h.kernel_hz.map_or("unknown".to_string(), |z| z.to_string()),
        yes_no(h.irq_time_accounting)
    );
    let kind = s
        .queue_type
        .map_or(String::new(), |k| format!(" (a {k} queue)"));
    let _ = writeln!(o, "Request queue     : {}{kind}", t(&s.request_queue));
    let _ = writeln!(
        o,
        "Reply queue       : {}",
        t(s.reply_queue
            .as_deref()
            .unwrap_or("temporary, one per task"))
    );
    let size = if s.msg_bytes_min == s.msg_bytes_max {
        format!("{} bytes", s.msg_bytes_max)
    } else {
        format!("{}..{} bytes", s.msg_bytes_min, s.msg_bytes_max)
    };
    let _ = writeln!(
        o,
        "Message file      : {} ({size}, {} message(s))",
        s.message_source, s.messages_in_rotation
    );
    let _ = writeln!(o, "Persistence       : {}", s.persistence());
    if let Some(b) = &s.broker {
        let _ = writeln!(o, "Broker            : {b}");
    }
    let _ = writeln!(o, "Messages per loop : {}", s.msgs_per_loop);
    let total = match (s.count, s.duration_s) {
        (Some(n), _) => format!("{n}"),
        (None, Some(d)) => format!("for {d} s"),
        _ => "-".into(),
    };
    let _ = writeln!(
        o,
        "Total messages    : {total} ({} task(s), {} warmup)",
        s.tasks, s.warmup
    );
    let _ = writeln!(
        o,
        "Syncpoint         : {}",
        if s.syncpoint { "yes" } else { "no" }
    );
    let matching = match s.match_mode {
        MatchMode::Correl => "by correlation id",
        MatchMode::Any => "any reply",
    };
    let _ = writeln!(o, "Reply matching    : {matching}");
    let _ = writeln!(o, "MQGET wait        : {:.3} s", s.wait_s);
    if let Some(p) = &r.probe {
        let _ = writeln!(
            o,
            "Probe             : {:.0} msgs/s over 1 s, so {} messages per round (aiming at {} s each)",
            p.rate_tps, p.count_per_round, p.target_s
        );
    }
    if let Some(rate) = s.rate_limit_tps {
        let _ = writeln!(
            o,
            "Paced at          : {rate} msgs/sec (latency from intended send times)"
        );
    }
    if s.reply_queue.is_some() {
        if s.clear_reply_queue {
            let _ = writeln!(
                o,
                "Clearing out reply queue... {} message(s) deleted",
                r.reply_queue_cleared
            );
        } else {
            // --no-clear: what waits there was left alone, and counts as unmatched replies.
            let _ = writeln!(o, "Reply queue not cleared (--no-clear)");
        }
    }
}

/// OEMPUTX's figures: transactions, elapsed, application CPU, rate, round trip.
fn run_figures(o: &mut String, r: &Report) {
    let _ = writeln!(o);
    let _ = writeln!(o, "Start time            : {}", r.start_utc);
    let _ = writeln!(o, "End time              : {}", r.end_utc);
    let _ = writeln!(o, "Total Transactions    : {:>12}", r.transactions);
    let _ = writeln!(o, "Elapsed Time          : {:>12.6} seconds", r.elapsed_s);
    let cpu = &r.app_cpu;
    let _ = writeln!(
        o,
        "Application CPU Time  : {:>12} seconds ({}% of elapsed)",
        opt(cpu.total_s, 6),
        opt(cpu.pct_of_elapsed, 1)
    );
    let _ = writeln!(o, "Transaction Rate      : {:>12.2} trans/sec", r.rate_tps);
    let _ = writeln!(
        o,
        "Round trip per msg    : {:>12.2} microseconds",
        r.round_trip_us.mean
    );
    let _ = writeln!(
        o,
        "Avg App CPU per msg   : {:>12} microseconds",
        opt(cpu.us_per_tran, 2)
    );
}

/// Round-trip percentiles and the request/reply books.
fn latency_and_integrity(o: &mut String, r: &Report) {
    let _ = writeln!(o);
    let l = &r.round_trip_us;
    // Columns as wide as their widest value (at least 9): a round trip of a second or more
    // (1000000.0 us) must not run into its neighbour.
    let values = [l.min, l.p50, l.p90, l.p99, l.p999, l.max].map(|v| format!("{v:.1}"));
    let w = values.iter().map(|v| v.len() + 1).max().unwrap_or(9).max(9);
    let mut header = String::from("Round trip (us)");
    for name in ["min", "p50", "p90", "p99", "p99.9", "max"] {
        header.push_str(&format!("{name:>w$}"));
    }
    let _ = writeln!(o, "{header}");
    let mut row = format!("{:14}{:>width$}", "", values[0], width = w + 1);
    for v in &values[1..] {
        row.push_str(&format!("{v:>w$}"));
    }
    let _ = writeln!(o, "{row}");
    let i = &r.integrity;
    let _ = writeln!(
        o,
        "Requests sent {}: matched {}, timed out {}, abandoned {}",
        i.sent, i.matched, i.timed_out, i.abandoned
    );
    let _ = writeln!(
        o,
        "Replies received {}: matched {}, unmatched {}, duplicates {}, late {}",
        i.received, i.matched, i.unmatched, i.duplicates, i.late
    );
    if r.per_task_transactions.len() > 1 {
        let per: Vec<String> = r.per_task_transactions.iter().map(u64::to_string).collect();
        let _ = writeln!(o, "Transactions per task : {}", per.join(" "));
    }
    interruptions(o, r);
}

/// Each broken connection: when, between which nodes, and what it cost.
fn interruptions(o: &mut String, r: &Report) {
    for b in &r.interruptions {
        // The names are the broker's: shown as text, never as terminal controls.
        let node = |n: &Option<String>| super::for_terminal(n.as_deref().unwrap_or("?"));
        let to = if b.reconnected {
            node(&b.to)
        } else {
            "no node".into()
        };
        let _ = writeln!(
            o,
            "Interruption, task {} : {} -> {}, {:.1} ms without replies from {}; lost {}, late {}, duplicated {}",
            b.task,
            node(&b.from),
            to,
            b.outage_ms,
            b.start_utc,
            b.lost,
            b.late,
            b.duplicated
        );
        let _ = writeln!(o, "  broke: {}", super::for_terminal(&b.why));
    }
}

/// How the run ended, when it did not complete.
fn status_line(o: &mut String, r: &Report) {
    match r.status {
        Status::Completed => {}
        Status::Interrupted => {
            let _ = writeln!(
                o,
                "\n*** INTERRUPTED *** {}",
                r.status_detail.as_deref().unwrap_or("")
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "\n*** INCOMPLETE *** {}",
                r.status_detail.as_deref().unwrap_or("")
            );
        }
    }
}
