//! The arithmetic of CPU accounting, kept pure so that it can be tested on fixed numbers.
//!
//! - **User/system split.** The kernel samples whether a tick lands in user or system mode
//!   and scales the samples to the exact runtime, so the split is a binomial estimate: with
//!   T seconds of CPU, a tick of t seconds and a system share p, its 1σ uncertainty is about
//!   √(T·t·p(1−p)) (docs/accounting.md, measured on this kind of machine).
//! - **Capture ratio.** CPU of all tasks over the window ÷ the CPU the machine was busy,
//!   where busy = elapsed × CPUs − idle − iowait. Busy is derived from idle because
//!   /proc/stat's busy ticks undercount short bursts (≈40% low under request/reply traffic,
//!   docs/accounting.md). What tasks do not carry (interrupts, softirqs not charged to a task) is
//!   what the ratio corrects for, as z/OS's capture ratio corrects for uncaptured time.

/// Split an exact total into user and system from tick counts; returns (user, system).
/// With no ticks at all, the whole total is reported as user time (the kernel does the same).
pub fn split(total: f64, user_ticks: u64, sys_ticks: u64) -> (f64, f64) {
    let ticks = user_ticks + sys_ticks;
    if ticks == 0 {
        return (total, 0.0);
    }
    let sys = total * sys_ticks as f64 / ticks as f64;
    (total - sys, sys)
}

/// 1σ uncertainty of the user (or system) part of `total_s` seconds, in seconds.
pub(crate) fn split_sigma(total_s: f64, tick_s: f64, sys_share: f64) -> f64 {
    let p = sys_share.clamp(0.0, 1.0);
    (total_s.max(0.0) * tick_s * p * (1.0 - p)).sqrt()
}

/// The measured capture ratio, or None when the machine's busy time cannot be told
/// (no elapsed time, or idle ticks that exceed the window).
pub fn capture_ratio(
    tasks_cpu_s: f64,
    elapsed_s: f64,
    cpus: usize,
    idle_s: f64,
    iowait_s: f64,
) -> Option<f64> {
    let busy = elapsed_s * cpus as f64 - idle_s - iowait_s;
    (busy > 0.0 && tasks_cpu_s > 0.0).then(|| tasks_cpu_s / busy)
}

/// 1σ of a measured capture ratio from /proc/stat's tick counting: each CPU's idle and
/// iowait counters are read in whole ticks at both ends of the window, so each difference is
/// off by a triangular error of σ = tick/√6; over 2·cpus counters the busy time is off by
/// tick·√(cpus/3), and the ratio (tasks ÷ busy) by that share of busy.
pub(crate) fn capture_ratio_sigma(ratio: f64, busy_s: f64, cpus: usize, tick_s: f64) -> f64 {
    if busy_s <= 0.0 {
        return f64::INFINITY;
    }
    ratio * tick_s * (cpus as f64 / 3.0).sqrt() / busy_s
}

/// Whether a run was bound by CPU or spent its round trips waiting, from the CPU each
/// transaction used (all measured processes, µs), its round trip (µs), the rate and the
/// machine's CPUs. Returns (cpu_bound, share of the machine's CPU the measured work used).
pub(crate) fn cpu_bound(cpu_us_per_tran: f64, rate_tps: f64, cpus: usize) -> (bool, f64) {
    let used = cpu_us_per_tran * rate_tps / 1e6 / cpus.max(1) as f64;
    (used >= 0.8, used)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_capture_ratio_sigma_shrinks_with_the_busy_time() {
        // 2 CPUs, 10 ms ticks: busy is off by 10 ms × √(2/3) ≈ 8.2 ms.
        let short = super::capture_ratio_sigma(0.9, 0.05, 2, 0.01);
        let long = super::capture_ratio_sigma(0.9, 2.0, 2, 0.01);
        assert!((short - 0.9 * 0.01 * (2.0f64 / 3.0).sqrt() / 0.05).abs() < 1e-12);
        assert!(short > 0.1 && long < 0.004, "{short} {long}");
        assert!(super::capture_ratio_sigma(0.9, 0.0, 2, 0.01).is_infinite());
    }

    use super::*;

    #[test]
    fn split_scales_ticks_to_the_exact_total() {
        let (u, s) = split(0.051, 3, 1);
        assert!((u - 0.03825).abs() < 1e-12 && (s - 0.01275).abs() < 1e-12);
        assert_eq!(split(0.02, 0, 0), (0.02, 0.0));
    }

    #[test]
    fn split_sigma_matches_the_design_note() {
        // 51 ms of CPU, 4 ms ticks, a quarter in system mode: √(0.051·0.004·0.1875) ≈ 6.2 ms.
        let s = split_sigma(0.051, 0.004, 0.25);
        assert!((s - 0.006185).abs() < 1e-5, "{s}");
        assert_eq!(split_sigma(0.05, 0.004, 0.0), 0.0);
    }

    #[test]
    fn capture_ratio_is_task_cpu_over_busy_time() {
        // 2 CPUs for 1 s, 1.2 s idle: 0.8 s busy, of which tasks carried 0.72 s.
        let r = capture_ratio(0.72, 1.0, 2, 1.2, 0.0).unwrap();
        assert!((r - 0.9).abs() < 1e-12);
        assert_eq!(capture_ratio(0.5, 1.0, 1, 1.0, 0.0), None);
    }

    #[test]
    fn cpu_bound_compares_demand_with_the_machine() {
        assert!(cpu_bound(200.0, 9000.0, 2).0); // 1.8 of 2 CPUs
        assert!(!cpu_bound(50.0, 3000.0, 2).0); // 0.15 of 2 CPUs
    }
}
