//! `oemputx cpu`'s results, apart from the window it writes for merge
//! ([`super::merge::CpuWindow`]): rows of CPU seconds (each process's so far, or each
//! group's over a window or an interval), and one interval of the watch with the counters
//! its OpenMetrics file exposes.

/// One row `oemputx cpu` prints: a process's CPU so far (`Jobname.PID`, its pid), or a
/// group's over a window or an interval (`GROUP*`, no pid).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRow {
    pub group: String,
    pub name: String,
    pub pid: Option<i32>,
    pub user_s: f64,
    pub sys_s: f64,
    pub total_s: f64,
}

/// A group's CPU as OpenMetrics counts it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupCpu {
    pub group: String,
    pub host: String,
    pub user_s: f64,
    pub sys_s: f64,
}

/// One interval of `oemputx cpu --interval`.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuInterval {
    /// Which interval, from 0: the first prints the table's header.
    pub index: u64,
    /// When it ended (RFC 3339, milliseconds).
    pub stamp: String,
    /// Each group's CPU in the interval.
    pub rows: Vec<CpuRow>,
    /// Each group's CPU since the watch began (the OpenMetrics counters).
    pub total: Vec<GroupCpu>,
    /// Each group's CPU in this interval (the OpenMetrics gauge of CPUs busy).
    pub last: Vec<GroupCpu>,
    /// The interval asked for, seconds.
    pub interval_s: f64,
}
