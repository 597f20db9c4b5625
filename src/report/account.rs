//! What `oemputx account` reports: another load driver's run between two snapshots, the
//! groups' CPU per message it says it sent.

use super::{AccountingInfo, Host};
use crate::accounting::{CaptureRatio, GroupRow, OtherCpu, ProcessRow};
use serde::Serialize;

/// The JSON schema tag of an account report.
pub const SCHEMA: &str = "oemputx.account/1";

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
