//! Where the CPU goes: the stacks `perf` sampled while the measured window was open, each
//! group's share of them turned into microseconds per message.
//!
//! oemputx measures a group's CPU per message exactly (CPU clocks); `perf` says how that CPU
//! divides among functions, by sampling. A function's figure is the group's measured µs per
//! message times the function's share of the group's samples, so a group's functions add
//! up to its measured CPU per message and the sampling only decides the split. The ± is the
//! sampling error of that share (binomial, 95 %), the one error the split has.
//!
//! perf runs system-wide (`-a`) and the samples are kept by process afterwards: per-task
//! sampling (`-p PID`) re-arms its timer at every context switch and cost +14…+22 % on a
//! ~150 µs flow, inside the very figures it samples (docs/profiles.md has the measurements).

pub mod attribute;
pub mod diff;
pub mod recorder;
pub mod stacks;

use serde::{Deserialize, Serialize};

/// Samples per second per CPU: an odd rate, so that a flow's period is less likely to be a
/// whole multiple of the sampling period (lock-in), and low enough to stay within 5 % of the
/// reference flow's CPU (docs/benchmarks.md).
pub const FREQUENCY_HZ: u32 = 999;

/// Functions kept per group in a report (by self, then by total).
pub const TOP_FUNCTIONS: usize = 15;

/// What `--profile` found: per group, the functions' µs per message.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Profile {
    /// How the stacks were sampled.
    pub method: String,
    pub frequency_hz: u32,
    /// Samples taken inside the measured window(s), of every process on the machine.
    pub samples: u64,
    /// Of those, samples of the groups' processes (and oemputx's own, as DRIVER).
    pub attributed_samples: u64,
    /// Seconds the sampling was on (the measured windows).
    pub window_s: f64,
    /// perf's own CPU while it sampled, µs per message (its process CPU clock): outside the
    /// groups' figures, in the report's other CPU.
    pub perf_cpu_us_per_tran: Option<f64>,
    /// Where the sampling's cost lands, in words.
    pub overhead: String,
    pub groups: Vec<GroupProfile>,
    /// Lock-in, unresolved frames, groups with nothing to sample.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// One group's functions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupProfile {
    pub name: String,
    /// The group's measured CPU per message, which its functions' self figures add up to.
    pub us_per_tran: f64,
    pub samples: u64,
    /// The CPU time the samples stand for ÷ the group's measured CPU in the window: about
    /// 0.97 when perf's samples spread evenly over the group's work (its pauses take ~3 %);
    /// far from it, the split among functions is suspect and the report says so.
    #[serde(default)]
    pub coverage: Option<f64>,
    /// Share of the group's samples whose own function perf could not name, percent.
    pub unresolved_pct: f64,
    /// What would name them ("start RabbitMQ with +JPperf true", …).
    #[serde(default)]
    pub unresolved_hint: Option<String>,
    pub functions: Vec<FunctionRow>,
    /// Every function's self and total µs per message, for differential profiles.
    #[serde(skip)]
    pub all: Vec<FunctionRow>,
    /// Folded stacks (`frame;frame;leaf` and a sample count), for flame graphs and
    /// `--export-folded`.
    #[serde(skip)]
    pub folded: Vec<(String, u64)>,
}

/// One function of a group.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FunctionRow {
    pub name: String,
    /// The binary or library it is in (`[kernel.kallsyms]`, `libc.so.6`, `beam.smp`, …).
    pub module: String,
    /// CPU per message spent in the function itself.
    pub self_us_per_tran: f64,
    /// 95 % sampling error of `self_us_per_tran`, ±µs.
    pub self_pm_us: f64,
    /// CPU per message in the function and everything it called.
    pub total_us_per_tran: f64,
    pub total_pm_us: f64,
    /// Samples with the function as the leaf.
    pub samples: u64,
    /// Samples with the function anywhere on the stack.
    pub total_samples: u64,
    /// Set when the samples came in step with the flow (see [`LockIn`]).
    #[serde(default)]
    pub lock_in: Option<LockIn>,
}

/// The samples of a function came in step with the flow: of the thread's samples right
/// after one in the function, a larger share is in it again than its share overall. A
/// flow whose per-message cost is perfectly regular can fall into step with the sampling
/// period and read +25…+31 % for a whole run; such a figure is flagged, not reported as
/// fact.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LockIn {
    /// P(the thread's next sample is in the function | this one is).
    pub next_same: f64,
    /// What it would be if samples fell independently of the flow: the function's share of
    /// its threads' samples.
    pub share: f64,
    /// Pairs of consecutive samples the estimate rests on.
    pub pairs: u64,
}

impl Profile {
    /// The group's profile by name.
    pub fn group(&self, name: &str) -> Option<&GroupProfile> {
        self.groups.iter().find(|g| g.name == name)
    }
}

/// A function's key across profiles: its name and module.
pub fn key(f: &FunctionRow) -> (String, String) {
    (f.name.clone(), f.module.clone())
}
