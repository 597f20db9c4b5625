//! The account report as text.

use crate::export::text::{CpuSection, cpu_table};
use crate::report::account::AccountReport;

use std::fmt::Write as _;

/// The account report as text: the command's figures, then OEMPUTX's CPU table.
pub fn text(report: &AccountReport) -> String {
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
