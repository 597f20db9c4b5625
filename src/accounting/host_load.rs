//! How busy the host was with other people's work over the window: quiet, busy, or
//! contended. Other work does not enter the groups' figures directly, but it moves them —
//! the reference flow read FLOW 137, QMGR 230, DB 147 µs/tran on a quiet host and 443, 708,
//! 510 with other jobs beside it — so a run on a busy host is marked as such in every
//! output, and a pasted row cannot pass for a quiet one.
//!
//! The figures are CPUs' worth over the window: the run's (captured groups and the driver),
//! the rest of the machine's tasks (all tasks' CPU less the run's, so short-lived processes
//! count where the tasks source sees them), steal (the hypervisor ran another guest) and
//! idle. The thresholds are in CPUs' share of the machine:
//! - **quiet**: other work below 5 % of the machine and steal below 2 %;
//! - **contended**: not quiet, and less than 10 % of the machine idle: the CPUs were full,
//!   so the run's processes waited for CPU that the other work held;
//! - **busy**: other work or steal above those shares, with CPU to spare.

use serde::{Deserialize, Serialize};

/// Other work above this share of the machine makes the host busy.
pub const QUIET_OTHER_SHARE: f64 = 0.05;
/// Steal above this share of the machine makes the host busy.
pub const QUIET_STEAL_SHARE: f64 = 0.02;
/// A busy host with less idle than this share of the machine is contended.
pub const CONTENDED_IDLE_SHARE: f64 = 0.10;

/// The host's state over the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostState {
    Quiet,
    Busy,
    Contended,
}

impl HostState {
    pub fn word(self) -> &'static str {
        match self {
            HostState::Quiet => "quiet",
            HostState::Busy => "busy",
            HostState::Contended => "contended",
        }
    }
}

/// What the classification needs, all over one window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub cpus: usize,
    pub elapsed_s: f64,
    /// CPU of the measured groups and the driver.
    pub run_s: f64,
    /// CPU of every other task.
    pub other_s: f64,
    /// Idle and iowait.
    pub idle_s: f64,
    pub steal_s: f64,
    /// Whether `other_s` includes processes that started and ended in the window.
    pub counts_short_lived: bool,
}

/// The host's load over the window, in CPUs' worth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    pub state: HostState,
    pub cpus: usize,
    /// CPUs the run's processes (groups and driver) kept busy on average.
    pub run_cpus: f64,
    /// CPUs other work kept busy on average.
    pub other_cpus: f64,
    pub steal_cpus: f64,
    pub idle_cpus: f64,
    /// Other work and steal as a share of the machine: how much of it the run could not have.
    pub squeeze_share: f64,
    /// One sentence with the figures.
    pub summary: String,
}

impl HostLoad {
    /// Classify one window.
    pub fn classify(w: Window) -> HostLoad {
        let per = |s: f64| s / w.elapsed_s;
        let cpus = w.cpus.max(1) as f64;
        let (run, other, steal) = (per(w.run_s), per(w.other_s), per(w.steal_s));
        let idle = per(w.idle_s).clamp(0.0, cpus);
        let state = if other / cpus < QUIET_OTHER_SHARE && steal / cpus < QUIET_STEAL_SHARE {
            HostState::Quiet
        } else if idle / cpus < CONTENDED_IDLE_SHARE {
            HostState::Contended
        } else {
            HostState::Busy
        };
        let squeeze = ((other + steal) / cpus).min(1.0);
        let mut summary = format!(
            "other processes kept {other:.2} of the {} CPUs busy ({:.0} %), steal {steal:.2}; the run's processes {run:.2}, idle {idle:.2}",
            w.cpus,
            100.0 * other / cpus
        );
        if !w.counts_short_lived {
            summary.push_str(" (processes that came and went under a parent outside the groups are not seen here)");
        }
        HostLoad {
            state,
            cpus: w.cpus,
            run_cpus: run,
            other_cpus: other,
            steal_cpus: steal,
            idle_cpus: idle,
            squeeze_share: squeeze,
            summary,
        }
    }

    /// The warning a busy or contended run carries first.
    pub fn warning(&self) -> String {
        let what = match self.state {
            HostState::Quiet => return String::new(),
            HostState::Busy => format!(
                "the host was busy with other work ({}): the run had CPU to spare, but other work shares caches, memory bandwidth and the broker, so figures can differ from a quiet host's",
                self.summary
            ),
            HostState::Contended => format!(
                "the host was contended ({}): the CPUs were full, so the run's processes waited for CPU other work held ({:.0} % of the machine was not the run's to have); rate and round trip are lower and CPU per message can be higher than on a quiet host",
                self.summary,
                100.0 * self.squeeze_share
            ),
        };
        format!(
            "{what}. Compare only with runs on a host in the same state, or compare A and B in one window (oemputx compare, gate --ab)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(run: f64, other: f64, idle: f64, steal: f64) -> Window {
        Window {
            cpus: 2,
            elapsed_s: 10.0,
            run_s: run,
            other_s: other,
            idle_s: idle,
            steal_s: steal,
            counts_short_lived: true,
        }
    }

    #[test]
    fn a_host_with_little_other_work_is_quiet() {
        // The quick start: one CPU's worth of run, 1 % of the machine other.
        let h = HostLoad::classify(window(10.0, 0.2, 9.8, 0.0));
        assert_eq!(h.state, HostState::Quiet);
        assert!((h.run_cpus - 1.0).abs() < 1e-12 && (h.other_cpus - 0.02).abs() < 1e-12);
        assert_eq!(h.warning(), "");
    }

    #[test]
    fn other_work_with_cpu_to_spare_is_busy_and_full_cpus_are_contended() {
        let busy = HostLoad::classify(window(10.0, 4.0, 6.0, 0.0));
        assert_eq!(busy.state, HostState::Busy);
        assert!(busy.warning().contains("busy with other work"));
        let full = HostLoad::classify(window(10.0, 9.5, 0.5, 0.0));
        assert_eq!(full.state, HostState::Contended);
        assert!((full.squeeze_share - 0.475).abs() < 1e-12);
        assert!(
            full.warning().contains("48 % of the machine"),
            "{}",
            full.warning()
        );
    }

    #[test]
    fn steal_alone_makes_a_host_busy() {
        let h = HostLoad::classify(window(10.0, 0.0, 9.0, 1.0));
        assert_eq!(h.state, HostState::Busy);
        assert!((h.steal_cpus - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_source_blind_to_short_lived_processes_says_so() {
        let mut w = window(10.0, 4.0, 6.0, 0.0);
        w.counts_short_lived = false;
        assert!(HostLoad::classify(w).summary.contains("not seen here"));
    }
}
