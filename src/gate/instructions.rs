//! The instruction gate's decision, as pure code: each side's counts per run (the
//! instructions over 1, N and 2N messages), the least-disturbed figure of each, and the
//! verdict (the method, and why these figures, in [`crate::commands::gate_instr`]).

use super::{Decision, Verdict};

/// The gated metrics, as named in the verdict table and in a gate file.
pub const STEADY: &str = "instructions/msg";
pub const COLD: &str = "cold start";

/// One side's counts: per run, the instructions over 1, N and 2N messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub runs: Vec<[u64; 3]>,
}

impl Counts {
    /// The figure of each run: the steady cost (I(N) − I(1)) ÷ (N − 1), the cold start I(1),
    /// or the check (I(2N) − I(N)) ÷ N.
    pub fn per_run(&self, metric: Metric) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| {
                let [one, n1, n2] = r.map(|x| x as f64);
                match metric {
                    Metric::Steady(n) => (n1 - one) / (n as f64 - 1.0),
                    Metric::Cold => one,
                    Metric::Check(n) => (n2 - n1) / n as f64,
                }
            })
            .collect()
    }

    /// The smallest figure over the runs: the least-disturbed run.
    pub fn least(&self, metric: Metric) -> f64 {
        self.per_run(metric)
            .into_iter()
            .fold(f64::INFINITY, f64::min)
    }

    /// Whether another run comes within `within` (a fraction) of the smallest figure: a lone
    /// low figure may be a run that skipped work, not the undisturbed cost.
    pub fn confirmed(&self, metric: Metric, within: f64) -> bool {
        let least = self.least(metric);
        self.per_run(metric)
            .iter()
            .filter(|&&x| x <= least * (1.0 + within))
            .count()
            >= 2
    }
}

/// The first event (Ir, instructions) of callgrind's `totals:` line, else its `summary:`.
pub fn parse_totals(text: &str) -> Option<u64> {
    let first = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    first("totals:").or_else(|| first("summary:"))
}

/// What is judged: the steady cost of a message (N given), or the cold start; the check is
/// the (I(2N) − I(N)) ÷ N figure, printed, not gated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Steady(u64),
    Cold,
    Check(u64),
}

/// Judge B's counts against A's on the least-disturbed runs; inconclusive when a smallest
/// figure is not confirmed by another run within half the tolerance.
pub fn decide(metric: Metric, counts: &[Counts; 2], tolerance: f64) -> Decision {
    let (name, unit) = match metric {
        Metric::Steady(_) | Metric::Check(_) => (STEADY, "instructions/msg"),
        Metric::Cold => (COLD, "instructions"),
    };
    let (a, b) = (counts[0].least(metric), counts[1].least(metric));
    let ratio = b / a;
    let runs_b = counts[1].per_run(metric);
    let spread = |c: &Counts, least: f64| {
        c.per_run(metric)
            .iter()
            .fold(0.0f64, |s, x| s.max(x / least - 1.0))
    };
    let worst = spread(&counts[0], a).max(spread(&counts[1], b));
    let confirmed = counts.iter().all(|c| c.confirmed(metric, tolerance / 2.0));
    let check = match metric {
        Metric::Steady(n) => {
            let (ca, cb) = (
                counts[0].least(Metric::Check(n)),
                counts[1].least(Metric::Check(n)),
            );
            format!(
                "; over messages N+1 to 2N: A {ca:.0}, B {cb:.0} ({:+.2}%)",
                100.0 * (cb / ca - 1.0)
            )
        }
        _ => String::new(),
    };
    let (verdict, note) = if !ratio.is_finite() || a <= 0.0 {
        (
            Verdict::Inconclusive,
            "flow A counted no instructions for it".to_string(),
        )
    } else if !confirmed {
        (
            Verdict::Inconclusive,
            format!(
                "a side's smallest figure has no other run within {:.2}% of it: this flow's counts depend on timing more than the tolerance allows; give it one thread, run with --tasks 1, more --runs, or gate at a wider tolerance{check}",
                50.0 * tolerance
            ),
        )
    } else {
        let v = if ratio > 1.0 + tolerance {
            Verdict::Regression
        } else if ratio < 1.0 - tolerance {
            Verdict::Improvement
        } else {
            Verdict::Pass
        };
        (
            v,
            format!(
                "instruction counts (callgrind), the least-disturbed of {} runs a side; the others were up to {:.2}% above it{check}",
                counts[0].runs.len(),
                100.0 * worst
            ),
        )
    };
    // The least-disturbed figures, not medians, are what is compared.
    let mut d = Decision::of(name, unit, &counts[0].per_run(metric), &runs_b, tolerance)
        .interval(ratio, (f64::NAN, f64::NAN), f64::NAN)
        .judged(verdict, Some(note));
    d.base_median = a;
    d.current_median = b;
    d
}

/// The decisions of an instruction gate's counts (a saved verdict's `instruction_counts`)
/// judged again with the current rule at `tolerance`: how calibration runs made by an
/// earlier build read today.
pub fn rejudge(counts: &super::InstructionCounts, tolerance: f64) -> Vec<Decision> {
    let sides = [
        Counts {
            runs: counts.a.clone(),
        },
        Counts {
            runs: counts.b.clone(),
        },
    ];
    let n = counts.messages[1];
    vec![
        decide(Metric::Steady(n), &sides, tolerance),
        decide(Metric::Cold, &sides, tolerance),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_come_from_callgrinds_output() {
        let out = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 1063731\n\nfn=(1) main\n0 5\n\ntotals: 1063843\n";
        assert_eq!(parse_totals(out), Some(1_063_843));
        assert_eq!(parse_totals("events: Ir\nsummary: 42\n"), Some(42));
        assert_eq!(parse_totals("events: Ir\n"), None);
    }

    fn counts(runs: &[[u64; 3]]) -> Counts {
        Counts {
            runs: runs.to_vec(),
        }
    }

    #[test]
    fn the_least_disturbed_runs_decide() {
        // Flow A: 194,000 a message plus 1.29 M of start-up; one run of N disturbed.
        let a = counts(&[
            [1_290_000, 195_284_000, 389_390_000],
            [1_290_100, 197_850_000, 389_380_000],
            [1_289_900, 195_290_000, 401_410_000],
        ]);
        let steady = Metric::Steady(1000);
        assert!(
            (a.least(steady) - 194_188.2).abs() < 1.0,
            "{}",
            a.least(steady)
        );
        // B: 2 % more per message.
        let b = counts(&[
            [1_290_000, 199_170_000, 397_150_000],
            [1_290_000, 199_160_000, 397_140_000],
            [1_290_000, 201_000_000, 397_160_000],
        ]);
        let d = decide(steady, &[a.clone(), b], 0.01);
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        assert!((d.ratio - 1.0199).abs() < 0.001, "{d:?}");
        assert!(d.note.unwrap_or_default().contains("N+1 to 2N"));
        let same = decide(steady, &[a.clone(), a.clone()], 0.01);
        assert_eq!(same.verdict, Verdict::Pass);
        assert_eq!(
            decide(Metric::Cold, &[a.clone(), a.clone()], 0.01).verdict,
            Verdict::Pass
        );
        // A lone low figure that no other run comes near is not trusted.
        let lone = counts(&[
            [1_290_000, 190_000_000, 389_390_000],
            [1_290_000, 195_180_000, 389_380_000],
            [1_290_000, 197_850_000, 389_400_000],
        ]);
        let d = decide(steady, &[a, lone], 0.01);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
    }
}
