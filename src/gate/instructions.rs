//! The instruction gate's decision, as pure code: each side's counts per run (the
//! instructions over 1, N and 2N messages), the least-disturbed figure of each, and the
//! verdict (the method, and why these figures, in [`crate::orchestrate::gate_instr`]).

use super::{Decision, GateError, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The gated metrics, as named in the verdict table and in a gate file.
pub const STEADY: &str = "instructions/msg";
pub const COLD: &str = "cold start";

/// The JSON schema tag of a saved instruction baseline.
pub const BASELINE_SCHEMA: &str = "oemputx.instructions-baseline/1";

/// Flow A's counts saved on main (`gate --instructions --save-baseline`), for branches to be
/// judged against without building the base again: counts are deterministic for the same
/// code, valgrind, compilers, libraries and CPU, so those are recorded with them and a
/// gate refuses to compare across them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstrBaseline {
    pub schema: String,
    pub created_utc: String,
    /// The flow's command, its passwords masked.
    pub flow: String,
    /// The message counts of each run's three counts: 1, N and 2N.
    pub messages: [u64; 3],
    /// Per run, the instructions over 1, N and 2N messages.
    pub runs: Vec<[u64; 3]>,
    pub provenance: Provenance,
    pub settings: BaselineSettings,
}

/// What a count depends on besides the flow's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `valgrind --version`.
    pub valgrind: String,
    /// The CPU's model and a fingerprint of its flags (glibc chooses routines by them).
    pub cpu: String,
    /// The compilers the flow's program names in its `.comment` section.
    pub compilers: Vec<String>,
    /// The shared libraries it loads (ldd), each with a fingerprint of its content.
    pub libraries: Vec<Library>,
}

/// One shared library of the flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Library {
    pub name: String,
    pub path: String,
    pub fingerprint: String,
}

/// The settings the counts were made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSettings {
    pub count: u64,
    pub tasks: usize,
    pub msgs_per_loop: usize,
    pub transport: String,
    pub message_bytes: usize,
    pub persistent: bool,
}

impl BaselineSettings {
    pub fn of(run: &crate::config::RunConfig, count: u64) -> BaselineSettings {
        BaselineSettings {
            count,
            tasks: run.tasks,
            msgs_per_loop: run.msgs_per_loop,
            transport: run.endpoint.transport().to_string(),
            message_bytes: run.messages.max_len(),
            persistent: run.persistent,
        }
    }
}

impl BaselineSettings {
    /// Each setting that differs, as "--count 40 then, 50 now".
    fn differences(&self, now: &BaselineSettings) -> Vec<String> {
        let pairs = [
            ("--count", self.count.to_string(), now.count.to_string()),
            ("--tasks", self.tasks.to_string(), now.tasks.to_string()),
            (
                "--msgs-per-loop",
                self.msgs_per_loop.to_string(),
                now.msgs_per_loop.to_string(),
            ),
            ("transport", self.transport.clone(), now.transport.clone()),
            (
                "message bytes",
                self.message_bytes.to_string(),
                now.message_bytes.to_string(),
            ),
            (
                "--persistent",
                self.persistent.to_string(),
                now.persistent.to_string(),
            ),
        ];
        pairs
            .into_iter()
            .filter(|(_, then, now)| then != now)
            .map(|(what, then, now)| format!("{what} {then} then, {now} now"))
            .collect()
    }
}

impl InstrBaseline {
    /// Read and check a saved baseline.
    pub fn load(path: &Path) -> Result<InstrBaseline, GateError> {
        let text = crate::files::read_text(
            path,
            crate::files::MAX_REPORT_BYTES,
            "instruction baseline",
        )
        .map_err(|e| {
            GateError::input(
                "--baseline",
                format!(
                    "{e}; count one on main with gate --instructions --flow-a CMD --save-baseline {}",
                    path.display()
                ),
            )
        })?;
        let b: InstrBaseline = serde_json::from_str(&text).map_err(|e| {
            GateError::input(
                "--baseline",
                format!(
                    "{} is no instruction baseline ({e}): give the file gate --instructions --save-baseline wrote",
                    path.display()
                ),
            )
        })?;
        if b.schema != BASELINE_SCHEMA {
            return Err(GateError::input(
                "--baseline",
                format!(
                    "{} has schema '{}', not '{BASELINE_SCHEMA}'",
                    path.display(),
                    b.schema
                ),
            ));
        }
        if b.runs.len() < 2 {
            return Err(GateError::input(
                "--baseline",
                format!(
                    "{} holds {} run(s): a baseline needs 2 or more",
                    path.display(),
                    b.runs.len()
                ),
            ));
        }
        Ok(b)
    }

    /// What differs between the conditions of this baseline and of a count now, each in
    /// words; nothing when the counts can be compared.
    pub(crate) fn differences(
        &self,
        now: &Provenance,
        run: &crate::config::RunConfig,
        count: u64,
    ) -> Vec<String> {
        let mut out = self.provenance.differences(now);
        out.extend(self.settings.differences(&BaselineSettings::of(run, count)));
        out
    }
}

impl Provenance {
    /// What differs from `now`, each in words.
    fn differences(&self, now: &Provenance) -> Vec<String> {
        let mut out = Vec::new();
        if self.valgrind != now.valgrind {
            out.push(format!("{} then, {} now", self.valgrind, now.valgrind));
        }
        if self.cpu != now.cpu {
            out.push(format!("CPU {} then, {} now", self.cpu, now.cpu));
        }
        if self.compilers != now.compilers {
            out.push(format!(
                "the flow was built by {:?} then, by {:?} now",
                self.compilers, now.compilers
            ));
        }
        for lib in &self.libraries {
            match now.libraries.iter().find(|l| l.name == lib.name) {
                Some(l) if l.fingerprint != lib.fingerprint => {
                    out.push(format!("library {} changed ({})", lib.name, l.path));
                }
                None => out.push(format!("library {} is no longer loaded", lib.name)),
                _ => {}
            }
        }
        for lib in &now.libraries {
            if !self.libraries.iter().any(|l| l.name == lib.name) {
                out.push(format!("library {} is new", lib.name));
            }
        }
        out
    }
}

/// One side's counts: per run, the instructions over 1, N and 2N messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub runs: Vec<[u64; 3]>,
}

impl Counts {
    /// The figure of each run: the steady cost (I(N) − I(1)) ÷ (N − 1), the cold start I(1),
    /// or the check (I(2N) − I(N)) ÷ N.
    pub(crate) fn per_run(&self, metric: Metric) -> Vec<f64> {
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
    pub(crate) fn confirmed(&self, metric: Metric, within: f64) -> bool {
        let least = self.least(metric);
        self.per_run(metric)
            .iter()
            .filter(|&&x| x <= least * (1.0 + within))
            .count()
            >= 2
    }
}

/// The first event (Ir, instructions) of callgrind's `totals:` line, else its `summary:`.
pub(crate) fn parse_totals(text: &str) -> Option<u64> {
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
pub(crate) fn decide(metric: Metric, counts: &[Counts; 2], tolerance: f64) -> Decision {
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
    } else if !confirmed && apart(metric, counts, tolerance) != Verdict::Pass {
        // Timing moved the counts more than half the tolerance, but less than the change:
        // whichever run is the undisturbed cost, every B run is beyond every A run.
        (
            apart(metric, counts, tolerance),
            format!(
                "instruction counts (callgrind): the runs vary by up to {:.2}%, more than half the tolerance, yet every run of one side lies beyond every run of the other by more than the tolerance{check}",
                100.0 * worst
            ),
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

/// Regression when B's smallest figure exceeds A's largest by more than the tolerance,
/// improvement when B's largest is below A's smallest by more; otherwise `Pass` (not
/// decided this way). Extra work from timing (a busier broker, a retried read) only adds
/// instructions, so ranges that far apart are a change whichever run is undisturbed.
fn apart(metric: Metric, counts: &[Counts; 2], tolerance: f64) -> Verdict {
    let range = |c: &Counts| {
        let runs = c.per_run(metric);
        let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
        (lo, runs.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    };
    let ((a_lo, a_hi), (b_lo, b_hi)) = (range(&counts[0]), range(&counts[1]));
    if b_lo > a_hi * (1.0 + tolerance) {
        Verdict::Regression
    } else if b_hi < a_lo * (1.0 - tolerance) {
        Verdict::Improvement
    } else {
        Verdict::Pass
    }
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
        let d = decide(steady, &[a.clone(), lone], 0.01);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        // Runs spread by timing (a loaded host) past half the tolerance, yet every B run is
        // tens of per cent beyond every A run: a regression all the same, and the mirror an
        // improvement.
        let loaded = counts(&[
            [1_290_000, 250_000_000, 500_000_000],
            [1_290_000, 254_000_000, 508_000_000],
            [1_290_000, 258_000_000, 516_000_000],
        ]);
        let d = decide(steady, &[a.clone(), loaded.clone()], 0.01);
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        assert!(d.note.unwrap_or_default().contains("every run of one side"));
        let d = decide(steady, &[loaded, a], 0.01);
        assert_eq!(d.verdict, Verdict::Improvement, "{d:?}");
    }

    #[test]
    fn a_baseline_names_every_condition_that_differs() {
        let lib = |name: &str, fp: &str| Library {
            name: name.into(),
            path: format!("/lib/{name}"),
            fingerprint: fp.into(),
        };
        let then = Provenance {
            valgrind: "valgrind-3.19.0".into(),
            cpu: "Xeon (flags 1)".into(),
            compilers: vec!["rustc 1.90".into()],
            libraries: vec![lib("libc.so.6", "aa"), lib("libm.so.6", "bb")],
        };
        assert!(then.differences(&then.clone()).is_empty());
        let now = Provenance {
            valgrind: "valgrind-3.20.0".into(),
            libraries: vec![lib("libc.so.6", "ac"), lib("libz.so.1", "cc")],
            ..then.clone()
        };
        let d = then.differences(&now);
        assert_eq!(d.len(), 4, "{d:?}");
        assert!(d[0].contains("3.19.0") && d[0].contains("3.20.0"));
        assert!(d[1].contains("libc.so.6 changed"));
        assert!(d[2].contains("libm.so.6 is no longer loaded"));
        assert!(d[3].contains("libz.so.1 is new"));
        let s = BaselineSettings {
            count: 1000,
            tasks: 1,
            msgs_per_loop: 1,
            transport: "amqp".into(),
            message_bytes: 630,
            persistent: false,
        };
        let changed = BaselineSettings {
            count: 2000,
            persistent: true,
            ..s.clone()
        };
        assert_eq!(
            s.differences(&changed),
            [
                "--count 1000 then, 2000 now",
                "--persistent false then, true now"
            ]
        );
    }
}
