//! What `oemputx matrix` reports: the CJMQ throughput table, cell by cell.

use serde::Serialize;

/// The JSON schema tag of a matrix.
pub const SCHEMA: &str = "oemputx.matrix/1";

/// The whole table, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    pub schema: &'static str,
    /// The broker, its password masked.
    pub broker: String,
    /// Messages the sender sends in each cell.
    pub count: u64,
    /// `topic` (every receiver gets every message) or `queue` (they compete).
    pub pattern: String,
    pub cells: Vec<Cell>,
}

/// One cell of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub persistent: bool,
    pub msg_size: usize,
    pub receivers: usize,
    /// Messages received per second per receiver (the median receiver); `None` where the
    /// broker has no such mode.
    pub received_mps: Option<f64>,
    pub publish_mps: Option<f64>,
    /// The first group's (the broker's) CPU per message published and per delivered, µs.
    pub broker_us_per_published: Option<f64>,
    pub broker_us_per_delivered: Option<f64>,
    pub lost: u64,
    /// Why a cell is empty.
    pub note: Option<String>,
}
