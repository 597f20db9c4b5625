//! From a ladder's steps to its answer, pure: the highest rate that held and the interval
//! the steps leave, what limited the first step above it, the knee, repeats that disagree
//! with their first measurement, and the cores each group kept busy along the curve.
//!
//! - **Held**: a rate holds when most of its measurements held (fails when most did not;
//!   a tie, a repeat that disagreed, is neither), leaving out one that a measurement with
//!   more tasks replaced (`--tasks auto`: the driver limited it). The top is the highest
//!   rate that held below the lowest that failed.
//! - **What limited it**, for the lowest rate above the top that did not hold:
//!   - `host` when less than [`HOST_FULL_IDLE`] of the CPUs was idle over the step;
//!   - after `--tasks auto` measured the rate again with twice the tasks: `driver` when
//!     that helped ([`more_tasks_helped`]: it held, or gained [`MORE_TASKS_GAIN`], or closed
//!     half the shortfall) and the cap was reached, `flow` when it did not;
//!   - `flow` when twice the tasks, tried at this rate or a higher one, did not raise the
//!     achieved rate there by [`MORE_TASKS_GAIN`];
//!   - `flow` when a step with as many tasks or fewer got more through than this one was
//!     offered (the unpaced step, most often): the tasks could offer the rate;
//!   - else `driver` when the rate was not kept and no request queued: with every task behind
//!     its schedule each always has its requests in flight, so by Little's law a request
//!     spent tasks × msgs-per-loop ÷ achieved rate in the system; under [`QUEUED_FACTOR`] ×
//!     the unloaded round trip (the least p50 of the paced steps that held), nothing waited
//!     and only more tasks would have offered more;
//!   - `flow` otherwise: requests waited for the flow with CPU to spare (or the latency
//!     objective failed while the rate was kept).
//! - **Knee**: the rate of the largest power, achieved rate ÷ mean round trip (Kleinrock,
//!   "Power and deterministic rules of thumb for probabilistic problems in computer
//!   communications", ICC 1979; Jain, *The Art of Computer Systems Performance Analysis*,
//!   1991, §3.3 calls the throughput there the knee capacity): past it, each message more a
//!   second costs more waiting than it adds throughput.
//! - **Capacity**: measured at each rate that held, never extrapolated; between two rates
//!   [`cores_at`] interpolates linearly.

use super::{Ladder, Limiter, Phase, Step, duration_us, rate};
use serde::{Deserialize, Serialize};

/// A step with less than this share of the CPUs idle was limited by the host.
pub const HOST_FULL_IDLE: f64 = 0.10;
/// Requests that spent less than this × the unloaded round trip in the system did not
/// queue: the driver limited the step.
pub const QUEUED_FACTOR: f64 = 1.5;
/// A repeat that differs from its first measurement by more than this share (and more than
/// their intervals) is flagged.
pub const DRIFT_SHARE: f64 = 0.05;

/// One rate that held: the cores each group kept busy there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityRow {
    pub offered_tps: f64,
    pub achieved_tps: f64,
    /// Each group's cores (the driver's too: it is the load, not the system).
    pub groups: Vec<GroupCores>,
    /// The groups' corrected CPU, the driver's left out, in cores.
    pub corrected_cores: Option<f64>,
    /// What a million messages cost in that CPU at --price-per-vcpu-hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_million: Option<f64>,
}

/// A group's cores at one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCores {
    pub name: String,
    pub cores: f64,
}

/// The group that is oemputx's own cost.
const DRIVER: &str = "DRIVER";

/// Steps a later measurement with more tasks at the same rate replaced.
fn superseded(steps: &[Step]) -> Vec<bool> {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            steps[i + 1..]
                .iter()
                .any(|later| later.phase == Phase::MoreTasks && later.offered_tps == s.offered_tps)
        })
        .collect()
}

/// One measurement per paced rate, lowest rate first: the last that a measurement with
/// more tasks did not replace, repeats left out (what the curve is drawn from).
pub(crate) fn curve(steps: &[Step]) -> Vec<&Step> {
    let gone = superseded(steps);
    let mut out: Vec<&Step> = Vec::new();
    for (s, _) in steps
        .iter()
        .zip(&gone)
        .filter(|(s, g)| !**g && s.repeat_of.is_none())
    {
        if s.offered_tps.is_none() || s.transactions == 0 {
            continue;
        }
        match out.iter_mut().find(|x| x.offered_tps == s.offered_tps) {
            Some(x) => *x = s,
            None => out.push(s),
        }
    }
    out.sort_by(|a, b| {
        a.offered_tps
            .unwrap_or(0.0)
            .total_cmp(&b.offered_tps.unwrap_or(0.0))
    });
    out
}

/// The paced measurements that count, by rate, lowest first: held (Some(true)) when most
/// of its measurements held, failed (Some(false)) when most did not, None on a tie (a
/// repeat that disagreed: drift, flagged by [`drift`]).
fn outcomes(steps: &[Step]) -> Vec<(f64, Option<bool>)> {
    let gone = superseded(steps);
    let mut tally: Vec<(f64, usize, usize)> = Vec::new();
    for (s, _) in steps.iter().zip(&gone).filter(|(_, g)| !**g) {
        let Some(r) = s.offered_tps else { continue };
        let (held, failed) = (usize::from(s.holds), usize::from(!s.holds));
        match tally.iter_mut().find(|(x, ..)| *x == r) {
            Some(t) => {
                t.1 += held;
                t.2 += failed;
            }
            None => tally.push((r, held, failed)),
        }
    }
    tally.sort_by(|a, b| a.0.total_cmp(&b.0));
    tally
        .into_iter()
        .map(|(r, held, failed)| (r, (held != failed).then_some(held > failed)))
        .collect()
}

/// The top: the highest rate that held below the lowest that did not (every rate up to it
/// held, or disagreed with itself), and that lowest rate (None when none failed).
pub fn top(steps: &[Step]) -> (Option<f64>, Option<f64>) {
    let o = outcomes(steps);
    let first_failed = o.iter().find(|x| x.1 == Some(false)).map(|x| x.0);
    let max = o
        .iter()
        .rev()
        .find(|x| x.1 == Some(true) && first_failed.is_none_or(|f| x.0 < f))
        .map(|x| x.0);
    (max, first_failed)
}

/// Rates that held above one that did not: the curve is not monotone there (the host
/// drifted, or the flow's cost depends on the rate), and the top is taken below.
fn held_above_a_failure(steps: &[Step]) -> Option<String> {
    let o = outcomes(steps);
    let failed = o.iter().find(|x| x.1 == Some(false))?.0;
    let above: Vec<String> = o
        .iter()
        .filter(|x| x.1 == Some(true) && x.0 > failed)
        .map(|x| rate(x.0))
        .collect();
    (!above.is_empty()).then(|| {
        format!(
            "{} msg/s held above {} msg/s, which did not: the steps do not rise together (the host drifted, or the flow's cost depends on the rate), so the top is taken below the lowest rate that did not hold",
            above.join(", "),
            rate(failed)
        )
    })
}

/// The round trip with nothing queued: the least p50 of the paced steps that held (of the
/// completed paced steps when none did).
pub(crate) fn unloaded_round_trip_us(steps: &[Step]) -> Option<f64> {
    let least = |held: bool| {
        steps
            .iter()
            .filter(|s| s.offered_tps.is_some() && s.transactions > 0 && (!held || s.holds))
            .map(|s| s.p50_us)
            .filter(|p| *p > 0.0)
            .reduce(f64::min)
    };
    least(true).or_else(|| least(false))
}

/// What the steps say about a failed step beyond its own figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence {
    /// The round trip with nothing queued ([`unloaded_round_trip_us`]).
    pub unloaded_us: Option<f64>,
    /// The same rate measured just before with fewer tasks: (its tasks, its achieved rate).
    pub fewer_tasks: Option<(usize, f64)>,
    /// The most any other step got through with at most this step's tasks: (that step,
    /// its rate).
    pub tasks_reached: Option<(usize, f64)>,
    /// Twice the tasks tried at this rate or above, in vain: (the rate, fewer tasks and
    /// what they got, more tasks and what they got).
    pub more_tasks_in_vain: Option<TasksTried>,
}

/// Twice the tasks tried at one rate: the rate, and (tasks, achieved msg/s) before and after.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TasksTried {
    pub rate: f64,
    pub fewer: (usize, f64),
    pub more: (usize, f64),
}

/// More tasks that raised the achieved rate by this factor helped.
pub const MORE_TASKS_GAIN: f64 = 1.05;

/// Whether twice the tasks helped at `offered` msg/s, where fewer got `before`: the step
/// with more held, or got [`MORE_TASKS_GAIN`] × `before`, or closed half the shortfall (a
/// step at 96 % of its rate cannot gain 5 %).
pub(crate) fn more_tasks_helped(offered: f64, before: f64, after: &Step) -> bool {
    after.holds
        || after.achieved_tps >= MORE_TASKS_GAIN * before
        || after.achieved_tps - before >= 0.5 * (offered - before)
}

impl Evidence {
    /// The evidence the steps before `step` (in `steps`) give about it.
    pub fn of(steps: &[Step], step: &Step) -> Evidence {
        let fewer = steps
            .iter()
            .take_while(|s| s.step != step.step)
            .filter(|s| s.offered_tps == step.offered_tps && s.tasks < step.tasks)
            .last()
            .map(|s| (s.tasks, s.achieved_tps));
        let reached = steps
            .iter()
            .filter(|s| s.step != step.step && s.tasks <= step.tasks)
            .filter(|s| s.status == crate::driver::Status::Completed)
            .max_by(|a, b| a.achieved_tps.total_cmp(&b.achieved_tps))
            .map(|s| (s.step, s.achieved_tps));
        Evidence {
            unloaded_us: unloaded_round_trip_us(steps),
            fewer_tasks: fewer.filter(|_| step.phase == Phase::MoreTasks),
            tasks_reached: reached,
            more_tasks_in_vain: in_vain(steps, step),
        }
    }
}

/// A measurement with more tasks at `step`'s rate or above (another step) that raised the
/// achieved rate by less than [`MORE_TASKS_GAIN`] over the one with fewer before it.
fn in_vain(steps: &[Step], step: &Step) -> Option<TasksTried> {
    let offered = step.offered_tps?;
    steps
        .iter()
        .enumerate()
        .filter(|(_, m)| m.phase == Phase::MoreTasks && m.step != step.step)
        .filter(|(_, m)| m.offered_tps.is_some_and(|r| r >= offered))
        .find_map(|(i, m)| {
            let before = steps[..i]
                .iter()
                .rev()
                .find(|p| p.offered_tps == m.offered_tps && p.tasks < m.tasks)?;
            let r = m.offered_tps?;
            (!more_tasks_helped(r, before.achieved_tps, m)).then_some(TasksTried {
                rate: r,
                fewer: (before.tasks, before.achieved_tps),
                more: (m.tasks, m.achieved_tps),
            })
        })
}

/// What stopped `step` from holding, and why in words.
pub(crate) fn diagnose(
    step: &Step,
    evidence: Evidence,
    cpus: usize,
    msgs_per_loop: usize,
) -> (Limiter, String) {
    if let Some(idle) = step.host_idle_cpus
        && idle < HOST_FULL_IDLE * cpus as f64
    {
        return (
            Limiter::Host,
            format!(
                "the CPUs were full: {idle:.2} of {cpus} idle over the step; a larger host, or fewer other processes on it, would raise the top"
            ),
        );
    }
    let short = step.offered_tps.is_some_and(|o| {
        step.achieved_tps < super::KEEP_UP * o || step.backlog_growth > super::GROWTH_SHARE * o
    });
    if !short {
        return (
            Limiter::Flow,
            "the rate was kept but the latency objective was not: requests waited in the flow"
                .into(),
        );
    }
    let idle = step.host_idle_cpus.map_or(String::new(), |i| {
        format!(", with {i:.2} of {cpus} CPUs idle")
    });
    if let Some(found) = measured(step, &evidence, &idle) {
        return found;
    }
    // Little's law with every task behind its schedule: each always has its requests out.
    let in_system_us =
        (step.tasks * msgs_per_loop) as f64 / step.achieved_tps.max(f64::MIN_POSITIVE) * 1e6;
    match evidence.unloaded_us {
        Some(r0) if in_system_us < QUEUED_FACTOR * r0 => (
            Limiter::Driver,
            format!(
                "its {} task(s) could not offer more: each request took {} in the system against {} unloaded, so none waited for the flow; more tasks would offer more (--tasks N, or --tasks auto)",
                step.tasks,
                duration_us(in_system_us),
                duration_us(r0)
            ),
        ),
        Some(r0) => (
            Limiter::Flow,
            format!(
                "requests queued for the flow: each took {} in the system against {} unloaded{idle}",
                duration_us(in_system_us),
                duration_us(r0)
            ),
        ),
        None => (
            Limiter::Flow,
            format!("the flow did not keep up{idle} (no step held to compare its round trip with)"),
        ),
    }
}

/// What the other steps measured about `step`'s limit, when they did: the same rate with
/// fewer tasks, more tasks in vain at this rate or above, these tasks getting more through.
fn measured(step: &Step, evidence: &Evidence, idle: &str) -> Option<(Limiter, String)> {
    // Measured: the same rate with fewer tasks just before.
    if let Some((tasks, achieved)) = evidence.fewer_tasks {
        let helped = step
            .offered_tps
            .is_some_and(|r| more_tasks_helped(r, achieved, step));
        return Some(if !helped {
            (
                Limiter::Flow,
                format!(
                    "{} tasks got {} msg/s where {tasks} got {}: more tasks did not raise the rate, so requests waited for the flow{idle}",
                    step.tasks,
                    rate(step.achieved_tps),
                    rate(achieved)
                ),
            )
        } else {
            (
                Limiter::Driver,
                format!(
                    "{} tasks got {} msg/s where {tasks} got {}: the tasks were what limited it, and --tasks auto stops at {}; give more with --tasks N",
                    step.tasks,
                    rate(step.achieved_tps),
                    rate(achieved),
                    crate::config::ladder::AUTO_TASKS.1
                ),
            )
        });
    }
    // Measured: more tasks at this rate or above did not raise the rate.
    if let Some(TasksTried {
        rate: r,
        fewer: (t1, a1),
        more: (t2, a2),
    }) = evidence.more_tasks_in_vain
    {
        return Some((
            Limiter::Flow,
            format!(
                "at {} msg/s, {t2} tasks got {} msg/s where {t1} got {}: more tasks did not raise the rate, so requests waited for the flow{idle}",
                rate(r),
                rate(a2),
                rate(a1)
            ),
        ));
    }
    // Measured: these tasks (or fewer) got more through than this step asked of them.
    if let (Some((n, got)), Some(offered)) = (evidence.tasks_reached, step.offered_tps)
        && got >= super::KEEP_UP * offered
        && n != step.step
    {
        return Some((
            Limiter::Flow,
            format!(
                "{} task(s) got {} msg/s through at step {n}, more than this step asked of them: they could offer the rate, so requests waited for the flow{idle}",
                step.tasks,
                rate(got)
            ),
        ));
    }
    None
}

/// The rate of the largest power (achieved ÷ mean round trip) among the rates that held
/// (one measurement each, [`curve`]); None with fewer than three.
pub(crate) fn knee(steps: &[Step]) -> Option<f64> {
    let candidates: Vec<&Step> = curve(steps)
        .into_iter()
        .filter(|s| s.holds && s.mean_us > 0.0)
        .collect();
    let mut rates: Vec<f64> = candidates.iter().filter_map(|s| s.offered_tps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    if rates.len() < 3 {
        return None;
    }
    candidates
        .iter()
        .max_by(|a, b| (a.achieved_tps / a.mean_us).total_cmp(&(b.achieved_tps / b.mean_us)))
        .and_then(|s| s.offered_tps)
}

/// Each repeat that disagrees with its first measurement: marked on the repeat, and the
/// warnings in words.
pub fn drift(steps: &mut [Step]) -> Vec<String> {
    let mut warnings = Vec::new();
    for i in 0..steps.len() {
        let Some(first) = steps[i]
            .repeat_of
            .and_then(|n| steps.iter().position(|s| s.step == n))
        else {
            continue;
        };
        let (a, b) = (&steps[first], &steps[i]);
        let what = format!(
            "step {} (a repeat of step {} at {})",
            b.step,
            a.step,
            a.offered_tps
                .map_or("unpaced".into(), |r| format!("{} msg/s", rate(r)))
        );
        let mut notes = Vec::new();
        if a.holds != b.holds {
            notes.push(format!(
                "it {} where the first {}",
                if b.holds { "held" } else { "did not hold" },
                if a.holds { "held" } else { "did not" }
            ));
        }
        if let (Some(x), Some(y)) = (a.cost(), b.cost()) {
            let half = |s: &Step| {
                s.corrected_high_us_per_tran
                    .zip(s.corrected_low_us_per_tran)
                    .map_or(0.0, |(h, l)| (h - l) / 2.0)
            };
            if x > 0.0 && (y - x).abs() > (half(a) + half(b)).max(DRIFT_SHARE * x) {
                notes.push(format!(
                    "it cost {y:.1} µs/msg against {x:.1} the first time ({:+.1} %)",
                    100.0 * (y / x - 1.0)
                ));
            }
        }
        if !notes.is_empty() {
            let note = format!(
                "{what}: {}: the host drifted while the ladder ran, so the steps between them carry some of it",
                notes.join("; ")
            );
            steps[i].drift = Some(note.clone());
            warnings.push(note);
        }
    }
    warnings
}

/// The cores each group kept busy at each rate that held (its first measurement there).
pub fn capacity(steps: &[Step], price: Option<f64>) -> Vec<CapacityRow> {
    let held: Vec<f64> = outcomes(steps)
        .into_iter()
        .filter(|o| o.1 == Some(true))
        .map(|o| o.0)
        .collect();
    let gone = superseded(steps);
    let mut rows: Vec<CapacityRow> = held
        .iter()
        .filter_map(|r| {
            steps
                .iter()
                .zip(&gone)
                .find(|(s, g)| !**g && s.offered_tps == Some(*r) && s.holds)
                .map(|(s, _)| s)
        })
        .map(|s| {
            let corrected = s.corrected_us_per_tran.map(|c| {
                let driver = s.groups.iter().find(|g| g.name == DRIVER).map_or(0.0, |g| {
                    g.us_per_tran * s.capture_ratio.map_or(1.0, |r| 1.0 / r)
                });
                (c - driver).max(0.0)
            });
            CapacityRow {
                offered_tps: s.offered_tps.unwrap_or(s.achieved_tps),
                achieved_tps: s.achieved_tps,
                groups: s
                    .groups
                    .iter()
                    .map(|g| GroupCores {
                        name: g.name.clone(),
                        cores: g.cores,
                    })
                    .collect(),
                corrected_cores: corrected.map(|c| c * s.achieved_tps / 1e6),
                cost_per_million: price
                    .zip(corrected)
                    .map(|(p, us)| crate::report::capacity::cost_per_million(us, p)),
            }
        })
        .collect();
    rows.sort_by(|a, b| a.offered_tps.total_cmp(&b.offered_tps));
    rows
}

#[cfg(test)]
/// The corrected cores the groups need at `rate`, interpolated linearly between the rates
/// that held; None outside them (never extrapolated).
pub(crate) fn cores_at(rows: &[CapacityRow], rate: f64) -> Option<f64> {
    capacity_at(rows, rate).and_then(|r| r.corrected_cores)
}

/// The capacity at `rate`, each figure interpolated linearly between the two rates that
/// held around it (measured where it is one of them); None outside them: never
/// extrapolated.
pub fn capacity_at(rows: &[CapacityRow], rate: f64) -> Option<CapacityRow> {
    let (first, last) = (rows.first()?, rows.last()?);
    if !(first.offered_tps..=last.offered_tps).contains(&rate) {
        return None;
    }
    let (a, b) = rows
        .windows(2)
        .find(|w| rate >= w[0].offered_tps && rate <= w[1].offered_tps)
        .map_or((first, first), |w| (&w[0], &w[1]));
    let span = b.offered_tps - a.offered_tps;
    let f = if span > 0.0 {
        (rate - a.offered_tps) / span
    } else {
        0.0
    };
    let mix = |x: f64, y: f64| x + (y - x) * f;
    let both = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| mix(x, y));
    Some(CapacityRow {
        offered_tps: rate,
        achieved_tps: mix(a.achieved_tps, b.achieved_tps),
        groups: a
            .groups
            .iter()
            .filter_map(|g| {
                let other = b.groups.iter().find(|x| x.name == g.name)?;
                Some(GroupCores {
                    name: g.name.clone(),
                    cores: mix(g.cores, other.cores),
                })
            })
            .collect(),
        corrected_cores: both(a.corrected_cores, b.corrected_cores),
        cost_per_million: both(a.cost_per_million, b.cost_per_million),
    })
}

/// The capacity at each rate asked for (`--capacity-at`): interpolated, or why not.
pub(crate) fn capacity_asked(rows: &[CapacityRow], rates: &[f64]) -> Vec<CapacityAt> {
    rates
        .iter()
        .map(|&r| {
            let row = capacity_at(rows, r);
            let note = match (row.is_some(), rows.first(), rows.last()) {
                (true, ..) => None,
                (false, None, _) | (false, _, None) => {
                    Some("no rate held: nothing to interpolate".to_string())
                }
                (false, Some(_), Some(hi)) if r > hi.offered_tps => Some(format!(
                    "past the highest rate that held ({} msg/s): not extrapolated",
                    super::rate(hi.offered_tps)
                )),
                (false, Some(lo), _) => Some(format!(
                    "below the lowest rate measured ({} msg/s): not extrapolated",
                    super::rate(lo.offered_tps)
                )),
            };
            CapacityAt { rate: r, row, note }
        })
        .collect()
}

/// The capacity at one rate asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityAt {
    pub rate: f64,
    /// Interpolated between the two rates that held around it; null outside them.
    pub row: Option<CapacityRow>,
    /// Why there is no row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Fill in the ladder's conclusions from its steps: the top and its interval, what limited
/// it, the knee, drift, capacity and the answer.
pub(crate) fn conclude(l: &mut Ladder, msgs_per_loop: usize) {
    let cpus = l.host.cpus;
    let (max, above) = top(&l.steps);
    l.max_sustainable_tps = max;
    l.max_sustainable_low_tps = max;
    l.max_sustainable_high_tps = above;
    let unloaded = unloaded_round_trip_us(&l.steps);
    let gone = superseded(&l.steps);
    let failed = above.and_then(|r| {
        l.steps
            .iter()
            .zip(&gone)
            .rev()
            .find(|(s, g)| !**g && s.offered_tps == Some(r) && !s.holds)
            .map(|(s, _)| s.step)
    });
    let drifted = drift(&mut l.steps);
    l.warnings.extend(drifted);
    l.warnings.extend(held_above_a_failure(&l.steps));
    let failed = failed.and_then(|n| l.steps.iter().find(|s| s.step == n));
    let diagnosis = failed.map(|s| {
        let evidence = Evidence {
            unloaded_us: unloaded,
            ..Evidence::of(&l.steps, s)
        };
        diagnose(s, evidence, cpus, msgs_per_loop)
    });
    l.limited_by = diagnosis.as_ref().map(|d| d.0);
    l.limited_why = diagnosis.map(|d| d.1);
    l.knee_tps = knee(&l.steps);
    l.capacity = capacity(&l.steps, l.price_per_vcpu_hour);
    let asked: Vec<f64> = l.capacity_at.iter().map(|c| c.rate).collect();
    l.capacity_at = capacity_asked(&l.capacity, &asked);
    l.answer = answer(l, failed);
}

/// The answer in one line.
fn answer(l: &Ladder, failed: Option<&Step>) -> String {
    let slo = if l.slo.is_empty() {
        String::new()
    } else {
        format!(
            " with {}",
            l.slo
                .iter()
                .map(|s| s.describe())
                .collect::<Vec<_>>()
                .join(" and ")
        )
    };
    let head = match (l.max_sustainable_tps, l.max_sustainable_high_tps) {
        (Some(m), Some(h)) => format!("sustains {} msg/s [{}, {}]{slo}", rate(m), rate(m), rate(h)),
        (Some(m), None) if l.end == super::LadderEnd::Budget => format!(
            "sustains at least {} msg/s{slo}: --max-time ran out before a rate failed (give it more time)",
            rate(m)
        ),
        (Some(m), None) => format!(
            "sustains at least {} msg/s{slo}: every rate tried held, so the top was not reached (give higher --rates)",
            rate(m)
        ),
        (None, Some(h)) => format!(
            "sustains no rate tried{slo}: even {} msg/s did not hold (give lower --rates)",
            rate(h)
        ),
        (None, None) => "no paced step was measured".to_string(),
    };
    let limit = match (l.limited_by, failed) {
        (Some(by), Some(f)) => format!(
            "; the {} limits (at {} msg/s {})",
            by.word(),
            f.offered_tps.map_or("unpaced".into(), rate),
            f.why.first().map_or("it did not hold", String::as_str)
        ),
        _ => String::new(),
    };
    format!("{head}{limit}{}", cost_fall(&l.capacity, &l.steps))
}

/// "; cost falls from 1,070 µs/msg at 100 msg/s to 420 at 3,000".
fn cost_fall(rows: &[CapacityRow], steps: &[Step]) -> String {
    let cost_at = |r: f64| {
        steps
            .iter()
            .find(|s| s.offered_tps == Some(r) && s.holds)
            .and_then(Step::cost)
    };
    let (Some(lo), Some(hi)) = (rows.first(), rows.last()) else {
        return String::new();
    };
    match (cost_at(lo.offered_tps), cost_at(hi.offered_tps)) {
        (Some(a), Some(b)) if rows.len() >= 2 => format!(
            "; cost {} from {a:.0} µs/msg at {} msg/s to {b:.0} at {}",
            if b < a { "falls" } else { "rises" },
            rate(lo.offered_tps),
            rate(hi.offered_tps)
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
