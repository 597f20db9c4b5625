//! `oemputx account`: wraps any other load driver (JMeter, PerfTest, a script) between two
//! snapshots of the groups and divides by the messages it says it sent.

use crate::accounting::{
    Accounting, CaptureRatio, DriverRow, GroupRow, OtherCpu, ProcessRow, Traffic,
};
use crate::config::ConfigError;
use crate::config::tools::AccountConfig;
use crate::exit::Exit;
use crate::export::text::{CpuSection, cpu_table};
use crate::export::write_atomic;
use crate::report::{AccountingInfo, Host};
use crate::window::Window;
use anyhow::Context;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// What `oemputx account` reports.
#[derive(Debug, Serialize)]
pub struct AccountReport {
    pub schema: &'static str,
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    pub messages: u64,
    pub elapsed_s: f64,
    pub rate_tps: f64,
    /// CPU of the command and its children (getrusage), µs per message.
    pub command_cpu_us_per_msg: f64,
    pub processes: Vec<ProcessRow>,
    pub groups: Vec<GroupRow>,
    pub captured_us_per_tran: f64,
    pub capture_ratio: Option<CaptureRatio>,
    pub corrected_us_per_tran: Option<f64>,
    pub other_cpu: OtherCpu,
    pub accounting: AccountingInfo,
    pub host: Host,
}

/// User and system CPU of reaped children (µs resolution; the kernel scales the tick split
/// to the exact runtime, as for a live process).
fn children_cpu() -> (Duration, Duration) {
    use nix::sys::resource::{UsageWho, getrusage};
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
    };
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .map(|u| (tv(u.user_time()), tv(u.system_time())))
        .unwrap_or_default()
}

fn sub(a: (Duration, Duration), b: (Duration, Duration)) -> (Duration, Duration) {
    (a.0.saturating_sub(b.0), a.1.saturating_sub(b.1))
}

/// The split as weights for the table (µs stand in for ticks: only the ratio is used).
fn command_split(c: (Duration, Duration)) -> (u64, u64) {
    (c.0.as_micros() as u64, c.1.as_micros() as u64)
}

/// `oemputx account`.
pub fn account(args: &AccountConfig) -> anyhow::Result<Exit> {
    let mut acc = Accounting::new(args.groups.clone(), args.cpu_source, args.ratio)
        .with_hosts(&args.hosts)
        .map_err(ConfigError::from)?;
    let (program, rest) = (&args.program, &args.args);
    let before = children_cpu();
    acc.start();
    let status = std::process::Command::new(program)
        .args(rest)
        .status()
        .map_err(|e| ConfigError::BadValue {
            flag: "account",
            why: format!("cannot run '{program}': {e}; check the command and its PATH"),
        })?;
    acc.end();
    let command_cpu = sub(children_cpu(), before);
    let name = std::path::Path::new(program)
        .file_name()
        .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let command_row = DriverRow {
        group: "COMMAND",
        name: format!("{name} (and children)"),
        pid: None,
        cpu: command_cpu.0 + command_cpu.1,
        split: Some(command_split(command_cpu)),
        exited: true,
    };
    let elapsed = acc.elapsed().unwrap_or_default().as_secs_f64();
    let rate = args.messages as f64 / elapsed.max(f64::MIN_POSITIVE);
    let per_msg = (command_cpu.0 + command_cpu.1).as_secs_f64() * 1e6 / args.messages as f64;
    let table = acc
        .table(Traffic {
            transactions: args.messages,
            driver: Some(&command_row),
            concurrency: None,
            round_trip_us: elapsed * 1e6 / args.messages as f64,
            rate_tps: rate,
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "taking CPU snapshots failed: {}",
                acc.error.clone().unwrap_or_default()
            )
        })?;
    // The command's own CPU per message, from getrusage of the children.
    let report = AccountReport {
        schema: "oemputx.account/1",
        command: std::iter::once(program.clone())
            .chain(rest.iter().cloned())
            .collect(),
        exit_code: status.code(),
        messages: args.messages,
        elapsed_s: elapsed,
        rate_tps: rate,
        command_cpu_us_per_msg: per_msg,
        captured_us_per_tran: table.captured_us_per_tran,
        corrected_us_per_tran: table.corrected_us_per_tran,
        capture_ratio: table.capture_ratio.clone(),
        other_cpu: table.other_cpu.clone(),
        processes: table.processes,
        groups: table.groups,
        accounting: table.info,
        host: Host::current(),
    };
    let o = render_text(&report);
    let to_stdout = args
        .export_json
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    if to_stdout {
        eprint!("{o}");
    } else {
        crate::export::print_stdout(&o)?;
    }
    if let Some(path) = &args.export_json {
        let json = serde_json::to_string_pretty(&report)? + "\n";
        write_atomic(path, json.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if !status.success() {
        eprintln!(
            "oemputx account: the command failed ({status}); the figures cover its run anyway"
        );
        return Ok(Exit::Failure);
    }
    Ok(Exit::Ok)
}

/// The account report as text: the command's figures, then OEMPUTX's CPU table.
fn render_text(report: &AccountReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "oemputx account: {}", report.command.join(" "));
    let _ = writeln!(
        o,
        "Exit status           : {}",
        report
            .exit_code
            .map_or("killed by a signal".into(), |c| c.to_string())
    );
    let _ = writeln!(o, "Messages              : {:>12}", report.messages);
    let _ = writeln!(
        o,
        "Elapsed Time          : {:>12.6} seconds",
        report.elapsed_s
    );
    let _ = writeln!(
        o,
        "Message Rate          : {:>12.2} msgs/sec",
        report.rate_tps
    );
    let _ = writeln!(
        o,
        "Command CPU per msg   : {:>12.2} microseconds (the command and its children)",
        report.command_cpu_us_per_msg
    );
    cpu_table(
        &mut o,
        &CpuSection {
            processes: &report.processes,
            groups: &report.groups,
            captured_us_per_tran: Some(report.captured_us_per_tran),
            capture_ratio: report.capture_ratio.as_ref(),
            corrected_us_per_tran: report.corrected_us_per_tran,
            other_cpu: Some(&report.other_cpu),
            accounting: Some(&report.accounting),
        },
    );
    o
}
