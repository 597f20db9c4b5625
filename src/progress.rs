//! Progress while a run lasts: a bar on a terminal, interval statistics for logs.
//!
//! Both run on one display thread that wakes every 100 ms and reads the tasks' progress
//! counters (one relaxed atomic per task); the tasks themselves do nothing for it. The bar
//! appears only on a terminal and only once a run has lasted two seconds, so short runs
//! stay clean. `--progress-every` (10 s unless told otherwise) prints one line per interval
//! on stderr, on a terminal and in CI logs alike, like the interval statistics of the IBM
//! harnesses: where no bar shows, a long run still says how it goes.

use crate::driver::ProgressCounters;
use crate::window::Window;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a run must last before the bar appears.
const BAR_AFTER: Duration = Duration::from_secs(2);
const TICK: Duration = Duration::from_millis(100);

/// What to show.
#[derive(Debug, Clone)]
pub struct ProgressSettings {
    /// Show a bar (if stderr is a terminal).
    pub bar: bool,
    /// Print a statistics line this often.
    pub stats_interval: Option<Duration>,
    /// The measured messages, when the run is sized by count.
    pub total: Option<u64>,
    /// The run's length, when sized by time.
    pub duration: Option<Duration>,
    /// Concurrent requests (tasks × messages per loop), for the round trip by Little's law.
    pub in_flight: usize,
    /// `--rate`: requests a second in all, when the run is paced.
    pub pace: Option<f64>,
}

/// The progress window: starts the display thread with the measured window, stops it at its end.
pub struct Progress {
    settings: ProgressSettings,
    counters: ProgressCounters,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Progress over `counters`.
    pub fn new(settings: ProgressSettings, counters: ProgressCounters) -> Self {
        Progress {
            settings,
            counters,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        }
    }

    fn wanted(&self) -> bool {
        (self.settings.bar && std::io::stderr().is_terminal())
            || self.settings.stats_interval.is_some()
    }
}

impl Window for Progress {
    fn start(&mut self) {
        if !self.wanted() {
            return;
        }
        let (settings, counters, stop) = (
            self.settings.clone(),
            self.counters.clone(),
            self.stop.clone(),
        );
        self.thread = std::thread::Builder::new()
            .name("oemputx-progress".into())
            .spawn(move || display(&settings, &counters, &stop))
            .ok();
    }

    fn end(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn display(s: &ProgressSettings, counters: &ProgressCounters, stop: &AtomicBool) {
    let started = Instant::now();
    let cpu_start = crate::accounting::clock::self_process().ok();
    let mut bar: Option<ProgressBar> = None;
    let (mut last_line, mut last_done) = (started, 0u64);
    let mut estimated = false;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let (now, done) = (Instant::now(), counters.total());
        let elapsed = now - started;
        if !estimated && elapsed >= ESTIMATE_AFTER && s.stats_interval.is_some() {
            estimated = true;
            if let Some(line) = estimate(s, done, elapsed) {
                crate::say!("{line}");
            }
        }
        if s.bar && bar.is_none() && elapsed >= BAR_AFTER && std::io::stderr().is_terminal() {
            bar = Some(new_bar(s));
        }
        if let Some(b) = &bar {
            let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
            match (s.total, s.duration) {
                (Some(total), _) => {
                    b.set_position(done);
                    b.set_message(format!("{rate:.0} msgs/s, {}", eta(total, done, rate)));
                }
                (None, Some(d)) => {
                    b.set_position(elapsed.as_millis() as u64);
                    b.set_message(format!(
                        "{:.0}/{:.0} s, {done} msgs, {rate:.0} msgs/s",
                        elapsed.as_secs_f64(),
                        d.as_secs_f64()
                    ));
                }
                (None, None) => b.set_message(format!("{done} msgs, {rate:.0} msgs/s")),
            }
        }
        if let Some(iv) = s.stats_interval
            && now - last_line >= iv
        {
            let span = (now - last_line).as_secs_f64();
            let rate = (done - last_done) as f64 / span;
            // Little's law: requests in flight ÷ throughput = time each spends in the system.
            let rt_us = if rate > 0.0 {
                1e6 * s.in_flight as f64 / rate
            } else {
                f64::NAN
            };
            let cpu = match (cpu_start, crate::accounting::clock::self_process().ok()) {
                (Some(a), Some(b)) if done > 0 => {
                    format!("{:.2}", (b - a).as_secs_f64() * 1e6 / done as f64)
                }
                _ => "n/a".into(),
            };
            let line = format!(
                "[progress] {} {:>9} msgs{}  {:>10.1} msgs/s  round trip ~{:>9.1} µs  oemputx CPU so far {} µs/msg  {}",
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                done,
                share_done(s, done, elapsed),
                rate,
                rt_us,
                cpu,
                time_left(s, done, elapsed),
            );
            match &bar {
                Some(b) => b.println(line),
                None => crate::say!("{line}"),
            }
            (last_line, last_done) = (now, done);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// When a run of a count says how long it will take: after its first second's pace.
const ESTIMATE_AFTER: Duration = Duration::from_secs(1);
/// A run expected to end sooner is not worth a line.
const ESTIMATE_ABOVE: Duration = Duration::from_secs(15);

/// A rate as people read it: whole from 10 a second, else four significant figures
/// (0.01, 3.333), not 3.3333333333333335.
fn rate_text(rate: f64) -> String {
    if rate >= 10.0 {
        return format!("{rate:.0}");
    }
    let places = (3 - rate.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{rate:.places$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The longest run an estimate names: beyond it, "more than" (a clock cannot hold an end
/// thousands of years away, and it was capped without a word at 31.7 years).
const ESTIMATE_MAX: Duration = Duration::from_secs(100 * 365 * 86_400);

/// The run's whole length at the pace of its first second — at most the `--rate` it is
/// paced at: a paced run's first second holds its first request and no more, so `--count
/// 100 --rate 0.01` read as 1 msgs/s and said 1m40s for a run of 2h47m — and when it will
/// end: said up front for a run of a count that will take a while (a run of a duration
/// knows its end).
fn estimate(s: &ProgressSettings, done: u64, elapsed: Duration) -> Option<String> {
    let total = s.total?;
    let measured = done as f64 / elapsed.as_secs_f64().max(1e-9);
    let (rate, at) = match s.pace {
        Some(p) if p > 0.0 && p < measured => (p, "at the --rate of"),
        _ if done == 0 || !measured.is_finite() => return None,
        _ => (measured, "at the first second's"),
    };
    let secs = total as f64 / rate;
    if secs > ESTIMATE_MAX.as_secs_f64() {
        return Some(format!(
            "[estimate] {at} {} msgs/s, {total} msgs take more than a hundred years: --duration bounds a run by time",
            rate_text(rate)
        ));
    }
    let whole = Duration::from_secs_f64(secs);
    if whole < ESTIMATE_ABOVE {
        return None;
    }
    let ends = chrono::Utc::now()
        + chrono::Duration::from_std(whole.saturating_sub(elapsed)).unwrap_or_default();
    // A run that ends on another day says which.
    let when = if whole > Duration::from_secs(20 * 3600) {
        ends.format("%Y-%m-%d %H:%M:%S")
    } else {
        ends.format("%H:%M:%S")
    };
    Some(format!(
        "[estimate] {at} {} msgs/s, {total} msgs take about {} in all (ends about {when} UTC); --duration bounds a run by time",
        rate_text(rate),
        humantime::format_duration(Duration::from_secs(whole.as_secs())),
    ))
}

/// " (40%)": the share of the run done, when its size is known.
fn share_done(s: &ProgressSettings, done: u64, elapsed: Duration) -> String {
    let share = match (s.total, s.duration) {
        (Some(total), _) if total > 0 => done as f64 / total as f64,
        (None, Some(d)) if !d.is_zero() => elapsed.as_secs_f64() / d.as_secs_f64(),
        _ => return String::new(),
    };
    format!(" ({:.0}%)", 100.0 * share.min(1.0))
}

/// The time left: at the rate since the window began for a run of a count, by the clock
/// for a run of a duration.
fn time_left(s: &ProgressSettings, done: u64, elapsed: Duration) -> String {
    match (s.total, s.duration) {
        (Some(total), _) => eta(total, done, done as f64 / elapsed.as_secs_f64().max(1e-9)),
        (None, Some(d)) => format!(
            "ETA {}",
            humantime::format_duration(Duration::from_secs(
                d.saturating_sub(elapsed).as_secs_f64().ceil() as u64
            ))
        ),
        (None, None) => String::new(),
    }
}

/// The time left at the rate measured since the window began. indicatif's own estimate
/// starts when the bar appears, two seconds in, and took the jump from 0 to the messages
/// already done for its rate: "ETA 0s" at 5,007 of 20,000 with 6 s to go.
fn eta(total: u64, done: u64, rate: f64) -> String {
    if rate <= 0.0 || !rate.is_finite() {
        return "ETA -".into();
    }
    let left = total.saturating_sub(done) as f64 / rate;
    format!(
        "ETA {}",
        humantime::format_duration(Duration::from_secs(left.ceil() as u64))
    )
}

fn new_bar(s: &ProgressSettings) -> ProgressBar {
    let (len, template) = match (s.total, s.duration) {
        (Some(n), _) => (n, "{bar:40} {pos}/{len} {msg}"),
        (None, Some(d)) => (d.as_millis() as u64, "{bar:40} {msg}"),
        (None, None) => (0, "{spinner} {msg}"),
    };
    // 4 redraws a second: enough to read, and little work for the terminal, which shares
    // the machine with the run.
    let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(4));
    if let Ok(style) = ProgressStyle::with_template(template) {
        b.set_style(style);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(total: u64, pace: Option<f64>) -> ProgressSettings {
        ProgressSettings {
            bar: false,
            stats_interval: Some(Duration::from_secs(10)),
            total: Some(total),
            duration: None,
            in_flight: 1,
            pace,
        }
    }

    #[test]
    fn a_paced_run_is_estimated_at_its_pace_and_a_huge_one_says_so() {
        // --count 100 --rate 0.01: one request in the first second, then one per 100 s.
        let paced = estimate(&counted(100, Some(0.01)), 1, Duration::from_secs(1)).expect("said");
        assert!(paced.contains("take about 2h 46m 40s"), "{paced}");
        assert!(paced.contains("--rate of 0.01 msgs/s"), "{paced}");
        // Unpaced, the first second's pace; paced above what it reaches, the same.
        let free = estimate(&counted(100_000, None), 5_000, Duration::from_secs(1)).expect("said");
        assert!(
            free.contains("first second's 5000 msgs/s") && free.contains("20s"),
            "{free}"
        );
        let slow = estimate(&counted(100_000, Some(1e6)), 5_000, Duration::from_secs(1));
        assert!(
            slow.expect("said")
                .contains("first second's 5000 msgs/s, 100000 msgs take about 20s")
        );
        // It was capped at 31.7 years without a word.
        let huge = estimate(&counted(u64::MAX, Some(0.001)), 1, Duration::from_secs(1));
        assert!(huge.expect("said").contains("more than a hundred years"));
        assert_eq!(rate_text(10.0 / 3.0), "3.333");
        assert_eq!(rate_text(0.01), "0.01");
        // A short run says nothing.
        assert_eq!(
            estimate(&counted(10, None), 10, Duration::from_secs(1)),
            None
        );
    }

    #[test]
    fn the_eta_comes_from_the_rate_measured_since_the_start() {
        // 5,007 of 20,000 at 2,500 msgs/s: 6 s left (it said 0s).
        assert_eq!(eta(20_000, 5_007, 2_500.0), "ETA 6s");
        assert_eq!(eta(1_000_000, 0, 1_000.0), "ETA 16m 40s");
        assert_eq!(eta(10, 10, 5.0), "ETA 0s");
        assert_eq!(eta(10, 0, 0.0), "ETA -");
    }
}
