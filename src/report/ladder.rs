//! What `oemputx ladder` reports: the flow measured at offered rates in steps — each
//! step's cost per group with its interval, round trip, achieved rate, backlog and whether
//! it held — and from the steps the highest rate it sustains, what limited it, the knee,
//! and the cores each group needs along the curve ([`verdict`]).
//!
//! A step **holds** when it completed, the achieved rate is at least [`KEEP_UP`] of the
//! offered, the backlog (requests due and not answered, `driver::backlog`) did not grow by
//! more than [`GROWTH_SHARE`] of the offered rate a second (and [`MIN_GROWTH`] requests over
//! a window), and every `--slo` held. An
//! unpaced step offers nothing: it shows the most the tasks get through and never counts
//! as sustained.

pub mod verdict;

use super::{Host, Report, Settings, Tool};
use crate::accounting::host_load::HostState;
use crate::config::ladder::Slo;
use crate::driver::Status;
use crate::driver::backlog::RoundBacklog;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The JSON schema tag of a ladder.
pub const SCHEMA: &str = "oemputx.ladder/1";
/// A step keeps up when it achieves at least this share of the offered rate.
pub const KEEP_UP: f64 = 0.98;
/// A backlog's trend must add up to this many requests over a window to count as growth.
pub const MIN_GROWTH: f64 = 2.0;
/// A backlog growing faster than this share of the offered rate (per second) does not hold.
pub const GROWTH_SHARE: f64 = 0.02;

/// A whole ladder, as exported.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ladder {
    pub schema: Cow<'static, str>,
    pub tool: Tool,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub start_utc: String,
    pub end_utc: String,
    pub elapsed_s: f64,
    /// One step's settings (the first step's; each step's rate and tasks are its own).
    pub settings: Settings,
    /// `auto`, or the rates given.
    pub rates_asked: String,
    pub step_time_s: f64,
    pub windows_per_step: usize,
    pub settle_s: f64,
    pub slo: Vec<Slo>,
    pub tasks_auto: bool,
    /// Every step in the order measured (repeats included).
    pub steps: Vec<Step>,
    /// The highest offered rate that held (every time it was measured); null when none did.
    pub max_sustainable_tps: Option<f64>,
    /// The interval the bisection left: the highest rate that held and the lowest above it
    /// that did not (null when no step above it failed: the top was not reached).
    pub max_sustainable_low_tps: Option<f64>,
    pub max_sustainable_high_tps: Option<f64>,
    /// What stopped the first step above the top from holding: `flow`, `driver` or `host`.
    pub limited_by: Option<Limiter>,
    pub limited_why: Option<String>,
    /// The rate of the most throughput per unit of round trip (Kleinrock's power).
    pub knee_tps: Option<f64>,
    /// The answer in one line: what the text starts with.
    pub answer: String,
    /// Cores each group kept busy at each rate that held, and what a million messages cost.
    pub capacity: Vec<verdict::CapacityRow>,
    /// The capacity at each rate `--capacity-at` asked for, interpolated between the two
    /// rates that held around it (never extrapolated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_at: Vec<verdict::CapacityAt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_vcpu_hour: Option<f64>,
    /// How the ladder ended.
    pub end: LadderEnd,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_detail: Option<String>,
    /// A repeated step that disagreed with its first measurement, and the like.
    pub warnings: Vec<String>,
    pub host: Host,
}

/// What limited the top of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Requests waited at the broker with CPU to spare: the flow could not take them faster.
    Flow,
    /// The driver's tasks could not offer the rate (each had its request in flight, none
    /// waited): more tasks would offer more.
    Driver,
    /// The CPUs were full.
    Host,
}

impl Limiter {
    pub fn word(self) -> &'static str {
        match self {
            Limiter::Flow => "flow",
            Limiter::Driver => "driver",
            Limiter::Host => "host",
        }
    }
}

/// How a ladder ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LadderEnd {
    /// Every step it planned was measured.
    Completed,
    /// --max-time ran out before the plan did: the answer is the interval reached.
    Budget,
    Interrupted,
    /// A step failed (the broker went away, say): the steps before it stand.
    Failed,
}

/// Why a step was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// As fast as the tasks go: the closed-loop maximum, where `auto` starts.
    Unpaced,
    /// A rate of the list given.
    Listed,
    /// Geometric steps up to the first that does not hold.
    Up,
    /// Down again when the first step did not hold.
    Down,
    /// Between the last that held and the first that did not.
    Bisect,
    /// The same rate again with more tasks (`--tasks auto`): the driver limited it.
    MoreTasks,
    /// A step measured again at the end, to expose drift.
    Repeat,
}

/// One step: the flow at one offered rate for --step-time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// 1-based, in the order measured.
    pub step: usize,
    pub phase: Phase,
    /// Null for an unpaced step.
    pub offered_tps: Option<f64>,
    pub tasks: usize,
    /// The step this one repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<usize>,
    pub status: Status,
    /// When its first window opened and its last closed (UTC, RFC 3339): to set beside
    /// other monitoring of the same minutes.
    pub start_utc: String,
    pub end_utc: String,
    pub transactions: u64,
    /// The windows' scheduled time (paced), or their elapsed time (unpaced).
    pub elapsed_s: f64,
    /// Paced: the offered rate × answered ÷ due (each window sends the requests due in it,
    /// ⌈rate × window⌉); unpaced: answered ÷ elapsed.
    pub achieved_tps: f64,
    /// The round trip from each request's intended send time, µs.
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Each `--slo`'s percentile in this step, µs, in the order of the ladder's `slo`.
    pub slo_us: Vec<f64>,
    /// How fast the backlog grew, requests a second (mean over the windows; 0 unpaced).
    pub backlog_growth: f64,
    /// The backlog at the end of the last window's schedule.
    pub backlog_end: f64,
    pub holds: bool,
    /// Why it did not hold, each reason in words.
    pub why: Vec<String>,
    pub captured_us_per_tran: Option<f64>,
    pub corrected_us_per_tran: Option<f64>,
    pub corrected_low_us_per_tran: Option<f64>,
    pub corrected_high_us_per_tran: Option<f64>,
    pub capture_ratio: Option<f64>,
    pub groups: Vec<StepGroup>,
    /// CPUs left idle over the step (the host's load), and its state.
    pub host_idle_cpus: Option<f64>,
    pub host_state: Option<HostState>,
    /// Set on a repeat that disagrees with its first measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

/// A group's CPU per message at a step, with the 95 % interval from the step's windows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepGroup {
    pub name: String,
    pub host: String,
    pub us_per_tran: f64,
    pub low_us_per_tran: Option<f64>,
    pub high_us_per_tran: Option<f64>,
    /// Cores it kept busy: µs/msg × achieved msg/s ÷ 10^6.
    pub cores: f64,
}

/// How a step was asked for.
#[derive(Debug, Clone, Copy)]
pub struct StepPlan {
    pub offered_tps: Option<f64>,
    pub tasks: usize,
    pub phase: Phase,
    pub repeat_of: Option<usize>,
    /// The windows' scheduled time, s.
    pub scheduled_s: f64,
    /// How many windows it is split in.
    pub windows: usize,
}

impl StepPlan {
    /// Requests due in the windows: each window's schedule starts anew and sends the
    /// requests due before its end, ⌈rate × window⌉ (one every 1/rate from 0).
    pub(crate) fn due(&self) -> Option<f64> {
        let r = self.offered_tps?;
        let w = self.scheduled_s / self.windows.max(1) as f64;
        Some(self.windows as f64 * (r * w - 1e-9).ceil().max(1.0))
    }
}

impl Step {
    /// Step `n` from its run's report and its windows' backlogs, judged against `slos`.
    pub fn of(
        n: usize,
        plan: StepPlan,
        report: &Report,
        backlogs: &[RoundBacklog],
        slos: &[Slo],
    ) -> Step {
        let paced = plan.offered_tps.is_some();
        let elapsed_s = if paced {
            plan.scheduled_s
        } else {
            report.elapsed_s
        };
        // Paced: the offered rate's share that was answered (a window sends what is due in
        // it, a whole request more than rate × window at low rates).
        let achieved_tps = match (plan.offered_tps, plan.due()) {
            (Some(r), Some(due)) => r * report.transactions as f64 / due,
            _ => report.transactions as f64 / elapsed_s.max(f64::MIN_POSITIVE),
        };
        let histogram = report
            .round_trip_histogram
            .as_deref()
            .and_then(|h| super::decode_histogram(h).ok());
        let slo_us: Vec<f64> = slos
            .iter()
            .map(|s| {
                histogram.as_ref().map_or(f64::NAN, |h| {
                    h.value_at_quantile((s.percentile * 1000.0).round() / 100_000.0) as f64 / 1000.0
                })
            })
            .collect();
        let n_windows = backlogs.len().max(1) as f64;
        let backlog_growth = backlogs.iter().map(|b| b.growth_per_s).sum::<f64>() / n_windows;
        let corrected_half = half_interval(
            report
                .rounds
                .iter()
                .filter_map(|r| r.corrected_us_per_tran)
                .collect(),
        );
        let groups = step_groups(report, achieved_tps);
        let host_load = report
            .accounting
            .as_ref()
            .and_then(|a| a.host_load.as_ref());
        let mut step = Step {
            step: n,
            phase: plan.phase,
            offered_tps: plan.offered_tps,
            tasks: plan.tasks,
            repeat_of: plan.repeat_of,
            status: report.status,
            start_utc: report.start_utc.clone(),
            end_utc: report.end_utc.clone(),
            transactions: report.transactions,
            elapsed_s,
            achieved_tps,
            mean_us: report.round_trip_us.mean,
            p50_us: report.round_trip_us.p50,
            p90_us: report.round_trip_us.p90,
            p99_us: report.round_trip_us.p99,
            p999_us: report.round_trip_us.p999,
            slo_us,
            backlog_growth,
            backlog_end: backlogs.last().map_or(0.0, |b| b.end),
            holds: false,
            why: Vec::new(),
            captured_us_per_tran: report.captured_us_per_tran,
            corrected_us_per_tran: report.corrected_us_per_tran,
            corrected_low_us_per_tran: report
                .corrected_us_per_tran
                .zip(corrected_half)
                .map(|(c, h)| c - h),
            corrected_high_us_per_tran: report
                .corrected_us_per_tran
                .zip(corrected_half)
                .map(|(c, h)| c + h),
            capture_ratio: report.capture_ratio.as_ref().map(|c| c.value),
            groups,
            host_idle_cpus: host_load.map(|h| h.idle_cpus),
            host_state: host_load.map(|h| h.state),
            drift: None,
        };
        let window_s = plan.scheduled_s / plan.windows.max(1) as f64;
        step.why = step.reasons_not_held(slos, report.status_detail.as_deref(), window_s);
        step.holds = step.why.is_empty();
        step
    }

    /// Every reason the step did not hold (none: it held).
    fn reasons_not_held(&self, slos: &[Slo], detail: Option<&str>, window_s: f64) -> Vec<String> {
        let mut why = Vec::new();
        if self.status != Status::Completed {
            why.push(format!(
                "it did not complete ({}{})",
                self.status.describe(),
                detail.map_or(String::new(), |d| format!(": {d}"))
            ));
        }
        if let Some(offered) = self.offered_tps {
            if self.achieved_tps < KEEP_UP * offered {
                why.push(format!(
                    "it kept {} of the {} msg/s offered ({:.1} %, below {:.0} %)",
                    rate(self.achieved_tps),
                    rate(offered),
                    100.0 * self.achieved_tps / offered,
                    100.0 * KEEP_UP
                ));
            }
            // A trend that adds up to less than MIN_GROWTH requests over a window is the
            // backlog's own steps (it moves a whole request at a time), not growth.
            if self.backlog_growth > GROWTH_SHARE * offered
                && self.backlog_growth * window_s >= MIN_GROWTH
            {
                why.push(format!(
                    "its backlog grew {} requests a second (more than {:.0} % of the rate), {:.0} due and unanswered at the end",
                    rate(self.backlog_growth),
                    100.0 * GROWTH_SHARE,
                    self.backlog_end
                ));
            }
        }
        for (slo, got) in slos.iter().zip(&self.slo_us) {
            if got.is_nan() || *got > slo.limit_us {
                why.push(format!(
                    "p{} was {} (the SLO is {})",
                    crate::stats::percentile_name(slo.percentile),
                    duration_us(*got),
                    slo.describe()
                ));
            }
        }
        why
    }

    /// The figure a step's cost is judged by: corrected, else captured.
    pub fn cost(&self) -> Option<f64> {
        self.corrected_us_per_tran.or(self.captured_us_per_tran)
    }
}

/// The half-width of the 95 % interval of the windows' figures.
fn half_interval(v: Vec<f64>) -> Option<f64> {
    crate::stats::mean_interval(&v).map(|(_, h)| h)
}

/// Each group's figure at a step, with its interval from the step's windows and its cores.
fn step_groups(report: &Report, achieved_tps: f64) -> Vec<StepGroup> {
    report
        .groups
        .iter()
        .map(|g| {
            let half = half_interval(
                report
                    .rounds
                    .iter()
                    .filter_map(|r| r.groups.iter().find(|x| x.name == g.name))
                    .map(|x| x.total_us_per_tran)
                    .collect(),
            );
            StepGroup {
                name: g.name.clone(),
                host: g.host.clone(),
                us_per_tran: g.total_us_per_tran,
                low_us_per_tran: half.map(|h| g.total_us_per_tran - h),
                high_us_per_tran: half.map(|h| g.total_us_per_tran + h),
                cores: g.total_us_per_tran * achieved_tps / 1e6,
            }
        })
        .collect()
}

/// A rate as the answers write it: whole messages a second, thousands grouped (1,070).
pub fn rate(r: f64) -> String {
    let whole = r.round();
    if r < 10.0 && (r - whole).abs() > 1e-9 {
        return format!("{r:.1}");
    }
    let digits = format!("{}", whole.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// µs as a person reads it: 850 µs, 12.3 ms, 1.20 s.
pub(crate) fn duration_us(us: f64) -> String {
    if !us.is_finite() {
        "unknown".into()
    } else if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}
