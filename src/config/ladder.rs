//! The options of `oemputx ladder`, checked into a [`LadderConfig`]: the offered rates
//! (a list, or `auto`: a search), how long each step lasts, the latency SLOs a step must
//! meet, the task count (fixed, or `auto`: raised while the driver is what limits), the
//! time the whole ladder may take, and one step's run settings.

use super::formats::{Exports, Format, ResultKind};
use super::options::RunOptions;
use super::{ConfigError, RunConfig, bad};
use std::path::PathBuf;
use std::time::Duration;

/// The time a ladder of `--rates auto` is planned to take when --max-time is not given.
pub const MAX_TIME: Duration = Duration::from_secs(180);
/// A step of `--rates auto` when --step-time is not given: 9–12 steps fit in [`MAX_TIME`].
pub const AUTO_STEP: Duration = Duration::from_secs(10);
/// The shortest step: five windows of 200 ms.
pub const MIN_STEP: Duration = Duration::from_secs(1);
/// Task counts `--tasks auto` starts at and stops raising at.
pub const AUTO_TASKS: (usize, usize) = (2, 64);
/// The most rates a list may hold.
const MAX_RATES: usize = 64;
/// The fewest requests due in each of a step's windows: below, the rate a window keeps is
/// a count of a few.
pub const MIN_DUE: u64 = 5;

/// The offered rates, as asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Rates {
    /// An unpaced step, then geometric steps up through saturation and a bisection.
    Auto,
    /// These rates in this order; `None` is an unpaced step.
    List(Vec<Option<f64>>),
}

/// A latency objective: the `percentile`'s round trip (from the intended send time) at
/// most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slo {
    pub percentile: f64,
    pub limit_us: f64,
}

impl Slo {
    /// "p99 ≤ 50 ms".
    pub fn describe(&self) -> String {
        format!(
            "p{} ≤ {}",
            crate::stats::percentile_name(self.percentile),
            humantime::format_duration(Duration::from_nanos((self.limit_us * 1000.0) as u64))
        )
    }
}

/// How many tasks drive each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tasks {
    Fixed(usize),
    /// From [`AUTO_TASKS`]`.0`, doubled (to at most [`AUTO_TASKS`]`.1`) while a step fails
    /// because the tasks could not offer the rate.
    Auto,
}

/// What `oemputx ladder` asks for, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderOptions {
    /// `auto`, or rates such as `100,300,1000,unpaced`.
    pub rates: String,
    pub step_time: Option<Duration>,
    /// `p99=50ms` and the like.
    pub slo: Vec<String>,
    pub max_time: Option<Duration>,
    /// Measure the lowest and the highest rate that held again at the end.
    pub repeat: bool,
    /// Rates to give the capacity at, e.g. `2500,5000`.
    pub capacity_at: Option<String>,
    /// `None`: auto.
    pub tasks: Option<usize>,
    /// One step's run options (its count, duration, rounds, rate are the ladder's to set).
    pub run: RunOptions,
}

/// A ladder, checked.
#[derive(Debug, Clone)]
pub struct LadderConfig {
    /// One step's run, silent (the ladder reports): its rate, length, rounds, settling and
    /// tasks are set per step.
    pub run: RunConfig,
    /// The lowest rate a step may have: [`MIN_DUE`] requests due in each window.
    pub min_rate: f64,
    pub rates: Rates,
    pub step_time: Duration,
    /// Windows per step: each group's interval comes from their spread.
    pub windows: usize,
    /// The unmeasured time at a step's rate before its first window.
    pub settle: Duration,
    pub slos: Vec<Slo>,
    pub max_time: Duration,
    /// Measure the lowest and the highest rate that held again at the end.
    pub repeat: bool,
    /// Rates to give the capacity at, interpolated between the rates that held.
    pub capacity_at: Vec<f64>,
    pub tasks: Tasks,
    pub outputs: Exports,
    pub save_dir: Option<PathBuf>,
    pub quiet: bool,
    pub delimiter: u8,
    pub label: String,
    pub price_per_vcpu_hour: Option<f64>,
}

impl LadderOptions {
    /// Check the ladder's options; nothing is measured on a bad one.
    pub fn build(&self) -> Result<LadderConfig, ConfigError> {
        self.refuse_run_options()?;
        let rates = parse_rates(&self.rates)?;
        let slos = self
            .slo
            .iter()
            .flat_map(|s| s.split(','))
            .filter(|s| !s.trim().is_empty())
            .map(parse_slo)
            .collect::<Result<Vec<_>, _>>()?;
        let tasks = match self.tasks {
            Some(0) => return Err(bad("--tasks", "give 1 or more, or auto")),
            Some(n) => Tasks::Fixed(n),
            None => Tasks::Auto,
        };
        let step_time = self.step_time.unwrap_or(match &rates {
            Rates::Auto => AUTO_STEP,
            // A list fits in about 2.5 minutes with its two repeats, 3 to 20 s a step.
            Rates::List(l) => Duration::from_secs((150 / (l.len() as u64 + 2)).clamp(3, 20)),
        });
        if step_time < MIN_STEP {
            return Err(bad(
                "--step-time",
                format!(
                    "at least {}: a step is five windows, and each group's interval comes from their spread",
                    humantime::format_duration(MIN_STEP)
                ),
            ));
        }
        let windows = 5;
        let min_rate = check_rates_fit(&rates, step_time, windows)?;
        let first_tasks = match tasks {
            Tasks::Fixed(n) => n,
            Tasks::Auto => AUTO_TASKS.0,
        };
        let full = RunOptions {
            tasks: first_tasks,
            duration: Some(step_time / windows as u32),
            count: None,
            ..self.run.clone()
        }
        .build()?;
        let outputs = full.outputs.files.clone();
        ResultKind::Ladder.check(&outputs.given().collect::<Vec<(Format, &std::path::Path)>>())?;
        super::outputs::check(&outputs.by_flag(), None, &[])?;
        let settle = (step_time / 4).min(Duration::from_secs(1));
        let max_time = self.max_time.unwrap_or(match &rates {
            Rates::Auto => MAX_TIME,
            // A list is measured whole unless told otherwise.
            // Room for `--tasks auto`'s steps with more tasks (at most five once) and the
            // connecting and snapshots of each.
            Rates::List(l) => (step_time + Duration::from_secs(2)) * (l.len() as u32 + 2 + 5),
        });
        // A step takes its time, its settling and about a second to connect and snapshot.
        let one_step = step_time + settle + Duration::from_secs(1);
        if max_time < one_step {
            return Err(bad(
                "--max-time",
                format!(
                    "{} leaves no room for one step of {} (and its settling and start): give at least {}, or a shorter --step-time",
                    humantime::format_duration(max_time),
                    humantime::format_duration(step_time),
                    humantime::format_duration(one_step)
                ),
            ));
        }
        Ok(LadderConfig {
            min_rate,
            max_time,
            settle,
            repeat: self.repeat,
            capacity_at: parse_capacity_at(self.capacity_at.as_deref())?,
            outputs,
            save_dir: full.outputs.save_dir.clone(),
            quiet: full.quiet,
            delimiter: full.outputs.delimiter,
            label: full.label.clone(),
            price_per_vcpu_hour: full.price_per_vcpu_hour,
            run: full.silent(),
            rates,
            step_time,
            windows,
            slos,
            tasks,
        })
    }

    /// The run options a ladder sets itself, or that have no place in it.
    fn refuse_run_options(&self) -> Result<(), ConfigError> {
        let r = &self.run;
        let refusals: [(bool, &'static str, &str); 9] = [
            (
                r.count.is_some(),
                "--count",
                "a ladder's steps are timed: give --step-time",
            ),
            (
                r.duration.is_some(),
                "--duration",
                "a ladder's steps are timed: give --step-time (and --max-time for the whole ladder)",
            ),
            (
                r.rounds != 1,
                "--rounds",
                "each step is measured in five windows of its own: leave --rounds out",
            ),
            (
                r.probe.is_some(),
                "--probe",
                "a ladder sizes nothing by a probe: its steps are timed (--step-time)",
            ),
            (
                r.rate.is_some(),
                "--rate",
                "a ladder sets the rate of each step: give the rates with --rates, e.g. --rates 100,300,1000",
            ),
            (
                r.outputs.save_baseline.is_some(),
                "--save-baseline",
                "a ladder is not a run the gate can judge against: save a baseline from a run paced at one rate (oemputx --rate R --duration 30s --rounds 5 --save-baseline FILE)",
            ),
            (
                r.sample_stacks,
                "--profile",
                "not yet for ladder: profile the rate that matters with a run (oemputx --rate R --duration 30s --profile)",
            ),
            (
                r.shard.shard.is_some() || r.shard.shards.is_some(),
                "--shard",
                "not for ladder: a ladder runs from one host",
            ),
            (
                r.shard.start_at.is_some(),
                "--start-at",
                "not for ladder: a ladder runs from one host",
            ),
        ];
        if let Some((_, flag, why)) = refusals.into_iter().find(|(given, ..)| *given) {
            return Err(bad(flag, why));
        }
        if r.msgs_per_loop > 1 {
            return Err(bad(
                "--msgs-per-loop",
                "not yet for ladder: a loop's requests are paced one by one but their replies are read after the last is sent, so the first request's round trip would carry the pacing of the others; leave it at 1",
            ));
        }
        if r.outputs.decimal_comma {
            return Err(bad(
                "--decimal-comma",
                "a ladder's tables are written with decimal points: leave it out, or convert the TSV in the spreadsheet",
            ));
        }
        Ok(())
    }
}

/// `--capacity-at R1,R2,…`: rates in messages a second (none when not given).
fn parse_capacity_at(v: Option<&str>) -> Result<Vec<f64>, ConfigError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let refuse = || {
        bad(
            "--capacity-at",
            format!("'{v}' is not a list of rates: give messages a second, e.g. 2500,5000"),
        )
    };
    match parse_rates(v).map_err(|_| refuse())? {
        Rates::List(l) if l.iter().all(Option::is_some) => Ok(l.into_iter().flatten().collect()),
        _ => Err(refuse()),
    }
}

/// The lowest rate a step may have ([`MIN_DUE`] requests in each of its `windows`), and a
/// list's rates checked against it.
fn check_rates_fit(rates: &Rates, step_time: Duration, windows: usize) -> Result<f64, ConfigError> {
    // A window sends the requests due in it, ⌈rate × window⌉.
    let min_rate = MIN_DUE as f64 * windows as f64 / step_time.as_secs_f64();
    if let Rates::List(l) = rates
        && let Some(r) = l.iter().flatten().find(|r| **r < min_rate)
    {
        return Err(bad(
            "--rates",
            format!(
                "{r} msg/s leaves fewer than {MIN_DUE} requests in each of a step's {windows} windows of {}: give --step-time {} or more for it, or a higher rate",
                humantime::format_duration(step_time / windows as u32),
                humantime::format_duration(Duration::from_secs_f64(
                    (MIN_DUE as f64 * windows as f64 / r).ceil()
                ))
            ),
        ));
    }
    Ok(min_rate)
}

/// `auto`, or rates in messages a second separated by commas (`unpaced` for a step as fast
/// as the tasks go).
pub(crate) fn parse_rates(v: &str) -> Result<Rates, ConfigError> {
    let v = v.trim();
    if v.eq_ignore_ascii_case("auto") {
        return Ok(Rates::Auto);
    }
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        if part.eq_ignore_ascii_case("unpaced") {
            out.push(None);
            continue;
        }
        match part.parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 && r <= 1e7 => out.push(Some(r)),
            _ => {
                return Err(bad(
                    "--rates",
                    format!(
                        "'{part}' is not a rate: give messages a second above 0 (at most 10,000,000), or unpaced, separated by commas (e.g. 100,300,1000,unpaced), or auto"
                    ),
                ));
            }
        }
    }
    if out.len() > MAX_RATES {
        return Err(bad(
            "--rates",
            format!("at most {MAX_RATES} rates; a ladder of more would take hours"),
        ));
    }
    Ok(Rates::List(out))
}

/// `pNN=DURATION`: the NN-th percentile's round trip at most DURATION (`p99=50ms`,
/// `p99.9=200ms`, `p50=5ms`).
pub(crate) fn parse_slo(v: &str) -> Result<Slo, ConfigError> {
    let refuse = |why: String| bad("--slo", why);
    let t = v.trim();
    let Some((p, limit)) = t.split_once('=') else {
        return Err(refuse(format!(
            "'{t}' is not an objective: write a percentile and its limit, e.g. p99=50ms or p99.9=200ms"
        )));
    };
    let pct = p
        .trim()
        .strip_prefix(['p', 'P'])
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|n| *n > 0.0 && *n < 100.0)
        .ok_or_else(|| {
            refuse(format!(
                "'{p}' is not a percentile: write p50, p99, p99.9 (above 0, below 100)"
            ))
        })?;
    let d: Duration = humantime::parse_duration(limit.trim()).map_err(|e| {
        refuse(format!(
            "'{limit}' is not a duration ({e}): write e.g. 50ms"
        ))
    })?;
    if d.is_zero() {
        return Err(refuse(format!("'{limit}' must be above 0")));
    }
    Ok(Slo {
        percentile: pct,
        limit_us: d.as_secs_f64() * 1e6,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_auto_or_a_list_with_unpaced_steps_and_nonsense_is_named() {
        assert_eq!(parse_rates("auto").ok(), Some(Rates::Auto));
        assert_eq!(
            parse_rates("100, 300,unpaced").ok(),
            Some(Rates::List(vec![Some(100.0), Some(300.0), None]))
        );
        for bad_rate in ["0", "-5", "fast", "1e9", "NaN", "100,,200"] {
            let e = parse_rates(bad_rate).expect_err(bad_rate).to_string();
            assert!(e.contains("--rates") && e.contains("not a rate"), "{e}");
        }
    }

    #[test]
    fn an_slo_is_a_percentile_and_a_duration() {
        assert_eq!(
            parse_slo("p99=50ms").ok(),
            Some(Slo {
                percentile: 99.0,
                limit_us: 50_000.0
            })
        );
        assert_eq!(parse_slo("p99.9=2s").map(|s| s.limit_us).ok(), Some(2e6));
        assert_eq!(
            parse_slo("p99=50ms").map(|s| s.describe()).ok().as_deref(),
            Some("p99 ≤ 50ms")
        );
        for b in [
            "99=50ms", "p100=1s", "p99", "p99=", "p99=fast", "p99=0s", "q5=1s",
        ] {
            let e = parse_slo(b).expect_err(b).to_string();
            assert!(e.contains("--slo"), "{e}");
        }
    }

    #[test]
    fn options_the_ladder_sets_itself_are_refused_naming_the_flag() {
        for (run, flag) in [
            (
                RunOptions {
                    count: Some(5),
                    ..RunOptions::default()
                },
                "--count",
            ),
            (
                RunOptions {
                    rate: Some(5.0),
                    ..RunOptions::default()
                },
                "--rate",
            ),
            (
                RunOptions {
                    rounds: 3,
                    ..RunOptions::default()
                },
                "--rounds",
            ),
            (
                RunOptions {
                    sample_stacks: true,
                    ..RunOptions::default()
                },
                "--profile",
            ),
            (
                RunOptions {
                    msgs_per_loop: 2,
                    ..RunOptions::default()
                },
                "--msgs-per-loop",
            ),
        ] {
            let o = LadderOptions {
                rates: "auto".into(),
                step_time: None,
                slo: vec![],
                max_time: None,
                repeat: true,
                capacity_at: None,
                tasks: None,
                run,
            };
            let e = o.build().expect_err(flag).to_string();
            assert!(e.contains(flag), "{e}");
        }
    }

    #[test]
    fn a_rate_with_too_few_requests_in_a_window_names_the_step_time_it_needs() {
        let o = |rates: &str, step: u64| LadderOptions {
            rates: rates.into(),
            step_time: Some(Duration::from_secs(step)),
            slo: vec![],
            max_time: None,
            repeat: true,
            capacity_at: None,
            tasks: None,
            run: RunOptions::default(),
        };
        // 10 s in 5 windows of 2 s: 2.5 msg/s leaves 5 requests a window, 2 leaves 4.
        assert!(o("2.5,100", 10).build().is_ok());
        let e = o("2,100", 10).build().expect_err("too slow").to_string();
        assert!(
            e.contains("--rates") && e.contains("--step-time 13s"),
            "{e}"
        );
        let e = o("auto", 10);
        let e = LadderOptions {
            capacity_at: Some("fast".into()),
            ..e
        }
        .build()
        .expect_err("not rates")
        .to_string();
        assert!(e.contains("--capacity-at"), "{e}");
    }
}
