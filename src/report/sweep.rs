//! What `oemputx sweep` reports: one point per (N, mode), each a run's figures.

use crate::config::sweep::SweepMode;
use serde::Serialize;

/// The JSON schema tag of a sweep.
pub const SCHEMA: &str = "oemputx.sweep/1";

/// One point of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub tasks: usize,
    pub mode: SweepMode,
    pub flow_processes: usize,
    pub flow_threads_each: usize,
    pub transactions: u64,
    pub rate_tps: f64,
    pub round_trip_mean_us: f64,
    /// Each group's total µs per transaction (the driver as DRIVER).
    pub groups: Vec<(String, f64)>,
    pub captured_us_per_tran: Option<f64>,
    pub capture_ratio: Option<f64>,
    pub corrected_us_per_tran: Option<f64>,
    pub status: crate::driver::Status,
}

/// A whole sweep, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub schema: &'static str,
    pub label: String,
    pub start_utc: String,
    pub flow_cmd: String,
    pub settings: super::Settings,
    pub points: Vec<Point>,
    pub host: super::Host,
}
