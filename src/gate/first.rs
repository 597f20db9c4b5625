//! The first baseline's rule: a history of one or two runs of main has no spread between
//! runs to judge by, so the rounds rule ([`super::stored`]) decides, and its regression or
//! improvement stands only when the change lies beyond what drift between runs does: the
//! tolerance *and* a drift bound.
//!
//! **Why a bound, and why this one.** One run's rounds share one window's weather; the next
//! run, minutes or days later, does not. On the 2-core VM this project runs on
//! (docs/gate.md, lab/calibration/first-20261204), an unchanged flow's groups moved by up to
//! +28 % between two runs on a quiet host, and by up to +64 % (RabbitMQ's scheduler
//! threads) between a quiet baseline and a contended run, while a flow made +50 % costlier
//! read as little as +28 %: no fixed bound separates them. What does, mostly: the drift
//! between runs was large where the rounds *within* the runs were spread, as both follow
//! the host. In units of s, the larger of the two runs' robust standard deviations of log
//! round figures ([`super::statistics::robust_log_sd`]; at least ln 1.10), the change
//! beyond the tolerance reached at most 1.8 s in 82 unchanged runs on hosts in the same
//! state (quiet, or at load 4 on 2 cores), and 1.3 s or more for the +50 % flow (6 of 82
//! below 2 s: the misses); between hosts in different states unchanged runs reached 3.7 s. So, with
//! τ = ln(1 + tolerance) and d the change of the medians on the log scale (+ is worse):
//!
//! bound = τ + max(ln(1 + floor), K · s), with K = [`K_SAME`] and floor = [`FLOOR`] when
//! both runs recorded the same host state, [`K_ACROSS`] and [`FLOOR_ACROSS`] when they
//! differ or either predates the host state.
//!
//! A regression is called when the rounds rule calls one (p < 0.05 and the interval beyond
//! the tolerance; 3 rounds a side cannot reach p < 0.05: [`super::statistics::smallest_p`])
//! and d > bound; an improvement mirrors it. The floor keeps a flow whose rounds agree to
//! the microsecond from a bound narrower than the drift a quiet host still shows.
//!
//! **Counts are not CPU.** Bytes written, calls, syncs and switches per message (the
//! figures beyond CPU) do not follow the host the way CPU does: between two runs of the C
//! responder here its disk bytes and syncs per message agreed to the byte and the call
//! (4,096.0 and 1.00 on both, docs/gate.md), whatever the load. Theirs (those
//! `steady_between_runs` marks: bytes written, write calls, syncs; not switches, reads,
//! network bytes or memory, which follow the host, the page cache or the broker's timing)
//! is [`FLOOR_COUNTS`] whatever the hosts' states, with [`K_SAME`] times the rounds' spread
//! above it: a count that does move between rounds (a broker's batching) widens its own
//! bound.
//!
//! What it cannot tell — a change between the tolerance and the bound — it says in one
//! line, with the way out: append main's runs until the history holds three, and the spread
//! between them ([`super::history`]) replaces this rule.

use super::statistics::robust_log_sd;
use super::{Decision, Verdict};
use crate::accounting::host_load::HostState;

/// The smallest drift allowed between two runs on hosts in the same state, as a fraction,
/// however tight the rounds.
pub const FLOOR: f64 = 0.10;
/// The same between hosts in different or unknown states.
pub const FLOOR_ACROSS: f64 = 0.25;
/// The smallest drift allowed between two runs for a count beyond CPU (bytes, calls,
/// syncs, switches per message), as a fraction.
pub const FLOOR_COUNTS: f64 = 0.02;
/// The drift allowed, in the rounds' spread, when both runs' hosts were in the same state.
pub const K_SAME: f64 = 2.0;
/// The same when the states differ or either is unknown.
pub const K_ACROSS: f64 = 5.0;

/// The host's state in the baseline's newest run and in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hosts {
    pub baseline: Option<HostState>,
    pub current: Option<HostState>,
}

impl Hosts {
    /// Whether both runs recorded the same state.
    pub fn alike(&self) -> bool {
        matches!((self.baseline, self.current), (Some(a), Some(b)) if a == b)
    }

    /// The drift allowed per unit of the rounds' spread, and its floor.
    pub fn k(&self) -> (f64, f64) {
        if self.alike() {
            (K_SAME, FLOOR)
        } else {
            (K_ACROSS, FLOOR_ACROSS)
        }
    }

    /// The hosts in words, for the notes: "both quiet", "quiet for the baseline, contended
    /// now", "not recorded for the baseline".
    pub fn describe(&self) -> String {
        let word = |s: Option<HostState>| s.map_or("not recorded", HostState::word);
        if self.alike() {
            format!("both {}", word(self.baseline))
        } else {
            format!(
                "{} for the baseline, {} now",
                word(self.baseline),
                word(self.current)
            )
        }
    }
}

/// One metric's first-baseline bound: the hosts and the rounds' spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub hosts: Hosts,
    /// The larger of the two runs' robust standard deviations of log round figures.
    pub spread: f64,
    /// A count beyond CPU, whose drift between runs does not follow the host.
    pub counts: bool,
}

impl Bound {
    /// From the baseline's newest run's rounds and this run's; a sample with a figure that
    /// is not positive counts as spread without limit (nothing is called).
    pub fn of(hosts: Hosts, base: &[f64], current: &[f64]) -> Bound {
        let sd = |v: &[f64]| robust_log_sd(v).unwrap_or(f64::INFINITY);
        Bound {
            hosts,
            spread: sd(base).max(sd(current)),
            counts: false,
        }
    }

    /// The bound of a count beyond CPU (`counts`), or of CPU, latency or rate.
    pub fn counting(mut self, counts: bool) -> Bound {
        self.counts = counts;
        self
    }

    /// The drift allowed, as a fraction: max(floor, e^(K·s) − 1).
    pub fn drift(&self) -> f64 {
        let (k, floor) = if self.counts {
            (K_SAME, FLOOR_COUNTS)
        } else {
            self.hosts.k()
        };
        ((1.0 + floor).ln().max(k * self.spread)).exp() - 1.0
    }

    /// The smallest regression called, as a fraction: (1 + tolerance) × (1 + drift) − 1.
    pub fn reach(&self, tolerance: f64) -> f64 {
        (1.0 + tolerance) * (1.0 + self.drift()) - 1.0
    }
}

/// The rounds rule's decision `d` against a history of `runs` (fewer than three) runs: its
/// regression or improvement stands only when the change itself — the ratio of medians, the
/// figure the drift was measured on — lies beyond the bound; otherwise it becomes
/// inconclusive, saying what the rounds say and which changes cannot yet be told.
pub fn judge(mut d: Decision, runs: usize, bound: Bound) -> Decision {
    let reach = bound.reach(d.tolerance);
    let limit = (1.0 + reach).ln();
    let beyond = match d.verdict {
        Verdict::Regression => d.ratio.ln() > limit,
        Verdict::Improvement => d.ratio.ln() < -limit,
        Verdict::Pass | Verdict::Inconclusive => return d,
    };
    let baseline = format!(
        "a baseline of {runs} run{} (hosts {}, rounds spread ±{:.1}%)",
        if runs == 1 { "" } else { "s" },
        bound.hosts.describe(),
        100.0 * bound.spread
    );
    let change = 100.0 * (d.ratio - 1.0);
    let interval = format!(
        "[{:+.1}%, {:+.1}%]",
        100.0 * (d.ci_low - 1.0),
        100.0 * (d.ci_high - 1.0)
    );
    let drift = 100.0 * bound.drift();
    if beyond {
        d.note = Some(format!(
            "{change:+.1}% {interval} is beyond the tolerance and the ±{drift:.0}% drift between runs allowed to {baseline} (docs/gate.md)"
        ));
        return d;
    }
    let was = d.verdict.as_str().to_lowercase();
    let shown = if was == "improvement" {
        100.0 * (1.0 / (1.0 + reach) - 1.0)
    } else {
        100.0 * reach
    };
    d.verdict = Verdict::Inconclusive;
    d.note = Some(format!(
        "the rounds say {was} ({change:+.1}% {interval}), but {baseline} calls only changes beyond {shown:+.0}%: drift between runs can reach ±{drift:.0}% there; append main's runs (--save-baseline FILE on main) until the history holds {} to tell smaller ones",
        super::history::MIN_RUNS
    ));
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Worse;
    use crate::gate::stored::decide;
    use crate::gate::tests::rounds;

    const QUIET: Hosts = Hosts {
        baseline: Some(HostState::Quiet),
        current: Some(HostState::Quiet),
    };

    fn first(scale: f64, hosts: Hosts) -> Decision {
        let (base, cur) = (rounds(1.0), rounds(scale));
        judge(
            decide("FLOW", &base, &cur, 0.05, Worse::Higher),
            1,
            Bound::of(hosts, &base, &cur),
        )
    }

    #[test]
    fn a_change_beyond_drift_and_tolerance_is_called_and_a_smaller_one_is_not() {
        // Rounds spread about ±1 %: the floor decides, (1.05)(1.10) = +15.5 %.
        let b = Bound::of(QUIET, &rounds(1.0), &rounds(1.2));
        assert!(b.spread < 0.02, "{b:?}");
        assert!((b.reach(0.05) - 0.155).abs() < 1e-9, "{b:?}");
        let big = first(1.2, QUIET);
        assert_eq!(big.verdict, Verdict::Regression, "{big:?}");
        let small = first(1.12, QUIET);
        assert_eq!(small.verdict, Verdict::Inconclusive, "{small:?}");
        let note = small.note.unwrap_or_default();
        assert!(note.contains("beyond +16%"), "{note}");
        assert!(note.contains("both quiet"), "{note}");
        // An improvement has the same bound, mirrored: 1/1.155 is −13 %.
        assert_eq!(first(0.8, QUIET).verdict, Verdict::Improvement);
        assert_eq!(first(0.9, QUIET).verdict, Verdict::Inconclusive);
        // Within the tolerance it passes, as the rounds rule says.
        assert_eq!(first(1.01, QUIET).verdict, Verdict::Pass);
    }

    #[test]
    fn hosts_in_different_or_unknown_states_allow_the_wider_drift() {
        let across = Hosts {
            baseline: Some(HostState::Quiet),
            current: Some(HostState::Contended),
        };
        assert!(!across.alike());
        assert_eq!(across.describe(), "quiet for the baseline, contended now");
        let unknown = Hosts {
            baseline: None,
            current: Some(HostState::Quiet),
        };
        assert!(!unknown.alike());
        assert_eq!(unknown.k(), (K_ACROSS, FLOOR_ACROSS));
        assert!(
            unknown
                .describe()
                .starts_with("not recorded for the baseline")
        );
        // Rounds spread ±4 %: within one state the drift allowed is e^(2 × 0.04) − 1 = 8.3 %,
        // below the floor of 10 %; across states e^(5 × 0.04) − 1 = 22 %, below 25 %; at
        // ±8 %, across states e^(5 × 0.08) − 1 = 49 %.
        let b = |hosts, spread| Bound {
            hosts,
            spread,
            counts: false,
        };
        assert!((b(QUIET, 0.04).drift() - FLOOR).abs() < 1e-9);
        assert!((b(across, 0.04).drift() - FLOOR_ACROSS).abs() < 1e-9);
        assert!((b(across, 0.08).drift() - (0.4f64.exp() - 1.0)).abs() < 1e-9);
        // A count beyond CPU: its own floor whatever the hosts, its spread still widening it.
        assert!((b(across, 0.0).counting(true).drift() - FLOOR_COUNTS).abs() < 1e-9);
        assert!((b(QUIET, 0.04).counting(true).drift() - (0.08f64.exp() - 1.0)).abs() < 1e-9);
        // Tight rounds: +20 % is called within one state, not across.
        assert_eq!(first(1.2, QUIET).verdict, Verdict::Regression);
        assert_eq!(first(1.2, across).verdict, Verdict::Inconclusive);
        assert_eq!(first(1.5, across).verdict, Verdict::Regression);
    }

    #[test]
    fn spread_rounds_widen_the_bound_so_a_noisy_metric_is_not_called_on_its_drift() {
        // Rounds spread ±15 % (a loaded host): +40 % is within 2 × 15 % and the tolerance.
        let noisy = |x: f64| -> Vec<f64> {
            [1.0, 1.2, 0.85, 1.1, 0.9, 1.25, 0.8, 1.05, 0.95, 1.15]
                .iter()
                .map(|f| x * f)
                .collect()
        };
        let b = Bound::of(QUIET, &noisy(1.0), &noisy(1.4));
        assert!(b.spread > 0.1, "{b:?}");
        let d = judge(
            decide("QMGR", &noisy(1.0), &noisy(1.4), 0.05, Worse::Higher),
            1,
            b,
        );
        assert_ne!(d.verdict, Verdict::Regression, "{d:?}");
    }

    #[test]
    fn three_rounds_a_side_cannot_call_anything_whatever_the_change() {
        let (base, cur) = (&rounds(1.0)[..3], &rounds(3.0)[..3]);
        let d = judge(
            decide("FLOW", base, cur, 0.05, Worse::Higher),
            1,
            Bound::of(QUIET, base, cur),
        );
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        assert!(
            d.note.as_deref().unwrap_or("").contains("cannot reach p"),
            "{d:?}"
        );
    }
}
