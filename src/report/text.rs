//! The text exporter: OEMPUTX's report layout, plain aligned text in 80 columns.

use super::Report;
use crate::cli::MatchMode;
use crate::driver::Status;
use std::fmt::Write;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.prec$}"))
}

/// Render the report as text.
pub fn render(r: &Report) -> String {
    let s = &r.settings;
    let mut o = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(
        o,
        "oemputx {} - what does one message cost?",
        r.tool.version
    );
    let _ = writeln!(o, "Queue manager     : {}", s.qmgr);
    let _ = writeln!(o, "Request queue     : {}", s.request_queue);
    let _ = writeln!(
        o,
        "Reply queue       : {}",
        s.reply_queue
            .as_deref()
            .unwrap_or("temporary, one per task")
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
    let _ = writeln!(
        o,
        "Persistence       : {}",
        if s.persistent {
            "persistent"
        } else {
            "non-persistent"
        }
    );
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
    if let Some(rate) = s.rate_limit_tps {
        let _ = writeln!(
            o,
            "Paced at          : {rate} msgs/sec (latency from intended send times)"
        );
    }
    if s.reply_queue.is_some() {
        let _ = writeln!(
            o,
            "Clearing out reply queue... {} message(s) deleted",
            r.reply_queue_cleared
        );
    }
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
    let _ = writeln!(o);
    let l = &r.round_trip_us;
    let _ = writeln!(
        o,
        "Round trip (us)      min      p50      p90      p99    p99.9      max"
    );
    let _ = writeln!(
        o,
        "              {:>10.1}{:>9.1}{:>9.1}{:>9.1}{:>9.1}{:>9.1}",
        l.min, l.p50, l.p90, l.p99, l.p999, l.max
    );
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
    let _ = writeln!(o, "Driver CPU source     : {}", cpu.source);
    let _ = writeln!(
        o,
        "Per-process CPU       : not measured (process accounting is not yet available)"
    );
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
    o
}
