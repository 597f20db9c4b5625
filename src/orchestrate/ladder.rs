//! `oemputx ladder`: the flow measured at offered rates in steps, each a run of its own
//! (fresh connections, a settling phase at its rate, then five windows), and with `--rates
//! auto` a search for the highest rate that holds:
//!
//! 1. one unpaced step: the most the tasks get through, closed-loop;
//! 2. geometric steps (×2) from a round rate about a sixteenth of that, up to the first
//!    that does not hold (down by ×4 when even the first does not);
//! 3. a bisection (geometric means) between the last that held and the first that did not,
//!    until the two are within ±5 % of their middle ([`PRECISION`]);
//! 4. the lowest and the highest rate that held, measured again: a repeat that disagrees
//!    flags drift, and a rate holds only if it held every time;
//! 5. where a repeat took the top back, the interval it left bisected anew and its new top
//!    measured again (twice at most).
//!
//! With `--tasks auto`, a step the driver limited (`report::ladder::verdict::diagnose`) is
//! measured again with twice the tasks, up to `config::ladder::AUTO_TASKS`. `--max-time`
//! bounds the whole: a step that would end past it is not started, and the answer is the
//! interval reached.

use crate::config::ladder::{LadderConfig, Rates, Tasks};
use crate::config::{RunConfig, RunLength};
use crate::driver::Status;
use crate::report::Report;
use crate::report::ladder::verdict::{self, Evidence, diagnose, more_tasks_helped};
use crate::report::ladder::{Ladder, LadderEnd, Limiter, Phase, SCHEMA, Step, StepPlan, rate};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The bisection stops once the top is known to ± this share of the interval's middle.
pub const PRECISION: f64 = 0.05;
/// Geometric steps are this factor apart.
const FACTOR: f64 = 2.0;
/// The first step of `auto` is about the unpaced rate ÷ this.
const FIRST_DIVISOR: f64 = 16.0;

/// A ladder being measured.
struct Climb<'a> {
    cfg: &'a LadderConfig,
    interrupt: Arc<AtomicBool>,
    started: Instant,
    /// The longest a step has taken so far beyond its planned time (connecting, snapshots).
    overhead: Duration,
    tasks: usize,
    /// Twice the tasks did not raise the rate once: no more are tried.
    futile: bool,
    steps: Vec<Step>,
    /// The first step's report: the settings and the host the ladder shows.
    first: Option<Report>,
    end: Option<(LadderEnd, String)>,
}

/// Measure the ladder `cfg` asks for; None when it ended before its first step did.
pub fn run(cfg: &LadderConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Option<Ladder>> {
    let start_utc = now_utc();
    let mut climb = Climb {
        cfg,
        interrupt,
        started: Instant::now(),
        overhead: Duration::from_secs(1),
        tasks: match cfg.tasks {
            Tasks::Fixed(n) => n,
            Tasks::Auto => crate::config::ladder::AUTO_TASKS.0,
        },
        futile: false,
        steps: Vec::new(),
        first: None,
        end: None,
    };
    if !cfg.quiet {
        crate::say!("{}", climb.plan_line());
    }
    let result = match &cfg.rates {
        Rates::Auto => climb.search(),
        Rates::List(rates) => climb.list(rates),
    };
    if let Err(e) = result {
        if climb.steps.is_empty() {
            return Err(e);
        }
        climb.end = Some((LadderEnd::Failed, format!("{e:#}")));
    }
    if climb.end.is_none() && cfg.repeat {
        climb.repeats();
    }
    if climb.end.is_none()
        && cfg.rates == Rates::Auto
        && let Err(e) = climb.refine()
    {
        climb.end = Some((LadderEnd::Failed, format!("{e:#}")));
    }
    match (&climb.end, climb.steps.is_empty()) {
        (Some((LadderEnd::Interrupted, _)), true) => Ok(None),
        (Some((_, why)), true) => Err(anyhow::anyhow!("no step of the ladder was measured: {why}")),
        _ => Ok(climb.into_ladder(start_utc)),
    }
}

fn now_utc() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The largest 1, 2 or 5 × 10^k at most `x` (at least 1).
fn round_below(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v <= x)
        .unwrap_or(p)
}

/// `x` to three significant figures.
fn three_figures(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return x;
    }
    let p = 10f64.powf(x.log10().floor() - 2.0);
    (x / p).round() * p
}

impl Climb<'_> {
    fn plan_line(&self) -> String {
        let c = self.cfg;
        format!(
            "ladder on {}, queue {}: rates {}, steps of {} ({} windows after {} settling at the step's rate), {} task(s){}, at most {}",
            c.run.endpoint.redacted(),
            c.run.request_queue,
            match &c.rates {
                Rates::Auto => "auto (an unpaced step, ×2 up to the first that does not hold, then a bisection)".to_string(),
                Rates::List(l) => rates_text(l),
            },
            humantime::format_duration(c.step_time),
            c.windows,
            humantime::format_duration(c.settle),
            self.tasks,
            if c.tasks == Tasks::Auto { " (more while the driver limits)" } else { "" },
            humantime::format_duration(c.max_time),
        )
    }

    /// `--rates auto`.
    fn search(&mut self) -> anyhow::Result<()> {
        let Some(unpaced) = self.measure(None, Phase::Unpaced, None, self.tasks)? else {
            return Ok(());
        };
        let first = round_below(unpaced.achieved_tps / FIRST_DIVISOR).max(self.cfg.min_rate);
        let ceiling = unpaced.achieved_tps.max(1.0) * 64.0;
        let (mut held, mut failed) = (None::<f64>, None::<f64>);
        let mut r = first;
        while r <= ceiling {
            match self.driven(r, Phase::Up)? {
                None => return Ok(()),
                Some(true) => held = Some(r),
                Some(false) => {
                    failed = Some(r);
                    break;
                }
            }
            r *= FACTOR;
        }
        if held.is_none() {
            let mut r = first;
            for _ in 0..4 {
                r /= 2.0 * FACTOR;
                if r < self.cfg.min_rate {
                    break;
                }
                match self.driven(r, Phase::Down)? {
                    None => return Ok(()),
                    Some(true) => {
                        held = Some(r);
                        break;
                    }
                    Some(false) => failed = Some(r),
                }
            }
        }
        if let (Some(lo), Some(hi)) = (held, failed) {
            self.bisect(lo, hi)?;
        }
        Ok(())
    }

    /// Geometric means between `lo` (held) and `hi` (did not) until the two are within
    /// ±[`PRECISION`] of their middle, or the ladder must stop.
    fn bisect(&mut self, mut lo: f64, mut hi: f64) -> anyhow::Result<()> {
        while (hi - lo) / (hi + lo) > PRECISION {
            let mid = three_figures((lo * hi).sqrt());
            if mid <= lo || mid >= hi {
                break;
            }
            match self.driven(mid, Phase::Bisect)? {
                None => break,
                Some(true) => lo = mid,
                Some(false) => hi = mid,
            }
        }
        Ok(())
    }

    /// After the repeats (`auto`): where a repeat took the top back, the interval it left is
    /// wide again; bisect it anew and measure the new top again, twice at most.
    fn refine(&mut self) -> anyhow::Result<()> {
        for _ in 0..2 {
            let (Some(lo), Some(hi)) = verdict::top(&self.steps) else {
                return Ok(());
            };
            if (hi - lo) / (hi + lo) <= PRECISION || self.end.is_some() {
                return Ok(());
            }
            self.bisect(lo, hi)?;
            let (Some(top), _) = verdict::top(&self.steps) else {
                return Ok(());
            };
            let again = self
                .steps
                .iter()
                .rev()
                .find(|s| s.offered_tps == Some(top) && s.holds)
                .map(|s| (s.step, s.tasks));
            let repeated = self
                .steps
                .iter()
                .any(|s| s.phase == Phase::Repeat && s.offered_tps == Some(top));
            if let (Some((n, tasks)), false, true) = (again, repeated, self.cfg.repeat) {
                self.measure(Some(top), Phase::Repeat, Some(n), tasks)?;
            }
        }
        Ok(())
    }

    /// `--rates R1,R2,…`, in the order given.
    fn list(&mut self, rates: &[Option<f64>]) -> anyhow::Result<()> {
        for r in rates {
            let held = match r {
                Some(r) => self.driven(*r, Phase::Listed)?,
                None => self
                    .measure(None, Phase::Unpaced, None, self.tasks)?
                    .map(|s| s.holds),
            };
            if held.is_none() {
                break;
            }
        }
        Ok(())
    }

    /// The lowest and the highest paced rate that held, measured again (time allowing).
    fn repeats(&mut self) {
        let held: Vec<&Step> = self
            .steps
            .iter()
            .filter(|s| s.offered_tps.is_some() && s.holds)
            .collect();
        let lowest = held
            .iter()
            .min_by(|a, b| {
                a.offered_tps
                    .partial_cmp(&b.offered_tps)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|s| (s.offered_tps, s.step, s.tasks));
        let top = verdict::top(&self.steps).0;
        let highest = top.and_then(|t| {
            held.iter()
                .rev()
                .find(|s| s.offered_tps == Some(t))
                .map(|s| (s.offered_tps, s.step, s.tasks))
        });
        let mut again = vec![lowest, highest];
        again.dedup();
        for (r, n, tasks) in again.into_iter().flatten() {
            match self.measure(r, Phase::Repeat, Some(n), tasks) {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    self.end = Some((LadderEnd::Failed, format!("{e:#}")));
                    break;
                }
            }
        }
    }

    /// A paced step at `r`, measured again with twice the tasks when it could not keep the
    /// rate and the host had CPU to spare (`--tasks auto`), for as long as more tasks raise
    /// the achieved rate: whether it held, None when the ladder must stop.
    fn driven(&mut self, r: f64, phase: Phase) -> anyhow::Result<Option<bool>> {
        let Some(mut step) = self.measure(Some(r), phase, None, self.tasks)? else {
            return Ok(None);
        };
        let cap = crate::config::ladder::AUTO_TASKS.1;
        while !step.holds && self.cfg.tasks == Tasks::Auto && !self.futile && self.tasks < cap {
            let evidence = Evidence {
                fewer_tasks: None,
                ..Evidence::of(&self.steps, &step)
            };
            let (by, _) = diagnose(
                &step,
                evidence,
                self.host_cpus(),
                self.cfg.run.msgs_per_loop,
            );
            let short = step.achieved_tps < crate::report::ladder::KEEP_UP * r;
            if by == Limiter::Host || !short {
                break;
            }
            let more = (self.tasks * 2).min(cap);
            let Some(again) = self.measure(Some(r), Phase::MoreTasks, None, more)? else {
                return Ok(None);
            };
            if !more_tasks_helped(r, step.achieved_tps, &again) {
                // Twice the tasks did not raise the rate: the driver is not what limits, here
                // or above; the ladder goes on with the tasks it had.
                self.futile = true;
                return Ok(Some(again.holds));
            }
            self.tasks = more;
            step = again;
        }
        Ok(Some(step.holds))
    }

    fn host_cpus(&self) -> usize {
        self.first.as_ref().map_or(1, |r| r.host.cpus)
    }

    /// Measure one step; None (and the ladder's end set) when it could not be, or must not
    /// be, the last measured.
    fn measure(
        &mut self,
        offered: Option<f64>,
        phase: Phase,
        repeat_of: Option<usize>,
        tasks: usize,
    ) -> anyhow::Result<Option<Step>> {
        let planned = self.cfg.step_time + self.cfg.settle;
        if crate::signals::interrupted() {
            self.end = Some((
                LadderEnd::Interrupted,
                format!("interrupted by {}", crate::signals::interrupted_by()),
            ));
            return Ok(None);
        }
        // The first step always runs (the options left room for one).
        if !self.steps.is_empty()
            && self.started.elapsed() + planned + self.overhead > self.cfg.max_time
        {
            self.end = Some((
                LadderEnd::Budget,
                format!(
                    "--max-time {} was reached before step {} ({}) could be measured: the answer is the interval the steps before it left",
                    humantime::format_duration(self.cfg.max_time),
                    self.steps.len() + 1,
                    offered.map_or("unpaced".into(), |r| format!("{} msg/s", rate(r)))
                ),
            ));
            return Ok(None);
        }
        let cfg = self.step_config(offered, tasks)?;
        let t0 = Instant::now();
        let (report, backlogs) = crate::measure::measure_paced(&cfg, self.interrupt.clone())?;
        self.overhead = self.overhead.max(t0.elapsed().saturating_sub(planned));
        let plan = StepPlan {
            offered_tps: offered,
            tasks,
            phase,
            repeat_of,
            scheduled_s: self.cfg.step_time.as_secs_f64(),
            windows: self.cfg.windows,
        };
        let step = Step::of(
            self.steps.len() + 1,
            plan,
            &report,
            &backlogs,
            &self.cfg.slos,
        );
        if let Some(stop) = stopped(&report) {
            self.end = Some(stop);
            return Ok(None);
        }
        if !self.cfg.quiet {
            crate::say!("{}", self.step_line(&step));
        }
        self.first.get_or_insert(report);
        self.steps.push(step.clone());
        Ok(Some(step))
    }

    /// One step's run: its rate and tasks, five windows after settling at its rate.
    fn step_config(&self, offered: Option<f64>, tasks: usize) -> anyhow::Result<RunConfig> {
        let mut c = self.cfg.run.with_tasks(tasks)?;
        c.rate = offered;
        c.length = RunLength::Duration(self.cfg.step_time / self.cfg.windows as u32);
        c.rounds = self.cfg.windows;
        c.settle = Some(self.cfg.settle);
        // Who serves the queue is asked once, at the first step.
        c.check_serving = self.steps.is_empty();
        Ok(c)
    }

    /// The progress line of a step.
    fn step_line(&self, s: &Step) -> String {
        format!(
            "ladder: step {} ({}): {}, {} task(s): {:.1} msg/s achieved, p99 {}, {} µs/msg {}: {} [{} of {}]",
            s.step,
            phase_word(s.phase),
            s.offered_tps
                .map_or("unpaced".into(), |r| format!("{} msg/s offered", rate(r))),
            s.tasks,
            s.achieved_tps,
            crate::report::ladder::duration_us(s.p99_us),
            s.cost().map_or("-".into(), |c| format!("{c:.1}")),
            if s.corrected_us_per_tran.is_some() {
                "corrected"
            } else {
                "captured"
            },
            if s.offered_tps.is_none() {
                "unpaced".to_string()
            } else if s.holds {
                "holds".to_string()
            } else {
                format!("does not hold: {}", s.why.join("; "))
            },
            humantime::format_duration(Duration::from_secs(self.started.elapsed().as_secs())),
            humantime::format_duration(self.cfg.max_time),
        )
    }

    fn into_ladder(self, start_utc: String) -> Option<Ladder> {
        let first = self.first?;
        let mut settings = first.settings.clone();
        settings.rate_limit_tps = None;
        let (end, end_detail) = match self.end {
            Some((e, d)) => (e, Some(d)),
            None => (LadderEnd::Completed, None),
        };
        let c = self.cfg;
        let mut l = Ladder {
            schema: SCHEMA.into(),
            tool: first.tool.clone(),
            label: c.label.clone(),
            commit: first.commit.clone(),
            start_utc,
            end_utc: now_utc(),
            elapsed_s: self.started.elapsed().as_secs_f64(),
            settings,
            rates_asked: match &c.rates {
                Rates::Auto => "auto".into(),
                Rates::List(l) => rates_text(l),
            },
            step_time_s: c.step_time.as_secs_f64(),
            windows_per_step: c.windows,
            settle_s: c.settle.as_secs_f64(),
            slo: c.slos.clone(),
            tasks_auto: c.tasks == Tasks::Auto,
            steps: self.steps,
            max_sustainable_tps: None,
            max_sustainable_low_tps: None,
            max_sustainable_high_tps: None,
            limited_by: None,
            limited_why: None,
            knee_tps: None,
            answer: String::new(),
            capacity: Vec::new(),
            // The rates asked for; conclude fills in their figures.
            capacity_at: c
                .capacity_at
                .iter()
                .map(|&rate| verdict::CapacityAt {
                    rate,
                    row: None,
                    note: None,
                })
                .collect(),
            price_per_vcpu_hour: c.price_per_vcpu_hour,
            end,
            end_detail,
            warnings: Vec::new(),
            host: first.host.clone(),
        };
        verdict::conclude(&mut l, c.run.msgs_per_loop);
        Some(l)
    }
}

/// How a step's run ended the ladder, if it did: an interrupt, a failure, a flow gone (its
/// requests stopped being answered). A step that merely timed out some requests stands
/// (it did not hold).
fn stopped(report: &Report) -> Option<(LadderEnd, String)> {
    let detail = report.status_detail.clone().unwrap_or_default();
    match report.status {
        Status::Interrupted => Some((
            LadderEnd::Interrupted,
            format!("{detail}; the step it interrupted is left out"),
        )),
        Status::Failed | Status::StoppedAfterTimeouts => Some((
            LadderEnd::Failed,
            format!(
                "a step ended {}: {detail}; the steps before it stand",
                report.status.describe()
            ),
        )),
        Status::Completed | Status::TimedOut => None,
    }
}

fn rates_text(l: &[Option<f64>]) -> String {
    l.iter()
        .map(|r| r.map_or("unpaced".to_string(), |r| format!("{r}")))
        .collect::<Vec<_>>()
        .join(",")
}

fn phase_word(p: Phase) -> &'static str {
    match p {
        Phase::Unpaced => "unpaced",
        Phase::Listed => "listed",
        Phase::Up => "up",
        Phase::Down => "down",
        Phase::Bisect => "bisection",
        Phase::MoreTasks => "more tasks",
        Phase::Repeat => "repeat",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_rates_below_and_three_figures() {
        assert_eq!(round_below(2837.0 / 16.0), 100.0);
        assert_eq!(round_below(450.0), 200.0);
        assert_eq!(round_below(5.0), 5.0);
        assert_eq!(round_below(0.3), 1.0);
        assert_eq!(three_figures((1600.0f64 * 3200.0).sqrt()), 2260.0);
        assert!((three_figures(12.345) - 12.3).abs() < 1e-9);
    }
}
