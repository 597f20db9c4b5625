//! Exact CPU clocks of this process, its threads and other processes.
//!
//! Process and thread CPU clocks are kept by the scheduler in nanoseconds and include threads
//! that have exited, unlike `/proc/PID/stat` ticks (10 ms each, off by 20% and more at
//! 50 ms of CPU; see docs/accounting.md). Reading one is a clock_gettime(2) call; no privilege is
//! needed for a process we can see.

use nix::time::{ClockId, clock_getcpuclockid};
use nix::unistd::Pid;
use std::time::Duration;

/// Why a CPU clock could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error("cannot read the CPU clock of {what}: {source}")]
    Clock { what: String, source: nix::Error },
}

// A failure of the run (exit 1).
crate::runtime_error!(CpuError);

fn to_duration(ts: nix::sys::time::TimeSpec) -> Duration {
    Duration::new(
        ts.tv_sec().max(0) as u64,
        ts.tv_nsec().clamp(0, 999_999_999) as u32,
    )
}

/// CPU used so far by this whole process (all threads, live and exited).
pub fn self_process() -> Result<Duration, CpuError> {
    ClockId::CLOCK_PROCESS_CPUTIME_ID
        .now()
        .map(to_duration)
        .map_err(|source| CpuError::Clock {
            what: "this process".into(),
            source,
        })
}

/// CPU used so far by the calling thread.
pub fn self_thread() -> Result<Duration, CpuError> {
    ClockId::CLOCK_THREAD_CPUTIME_ID
        .now()
        .map(to_duration)
        .map_err(|source| CpuError::Clock {
            what: "this thread".into(),
            source,
        })
}

/// CPU used so far by process `pid` (all its threads, live and exited).
pub fn process(pid: i32) -> Result<Duration, CpuError> {
    let what = || format!("process {pid}");
    let clock = clock_getcpuclockid(Pid::from_raw(pid)).map_err(|source| CpuError::Clock {
        what: what(),
        source,
    })?;
    clock
        .now()
        .map(to_duration)
        .map_err(|source| CpuError::Clock {
            what: what(),
            source,
        })
}

/// CPU used so far by thread `tid` of this process.
///
/// The kernel encodes a thread's CPU clock as `(~tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED`
/// (MAKE_THREAD_CPUCLOCK in include/linux/posix-timers.h); this is the clock that
/// pthread_getcpuclockid(3) returns, built here without needing a pthread handle.
pub fn thread(tid: i32) -> Result<Duration, CpuError> {
    const CPUCLOCK_PERTHREAD: i32 = 4;
    const CPUCLOCK_SCHED: i32 = 2;
    let raw = ((!tid) << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED;
    ClockId::from_raw(raw)
        .now()
        .map(to_duration)
        .map_err(|source| CpuError::Clock {
            what: format!("thread {tid}"),
            source,
        })
}

/// The kernel thread id of the calling thread.
pub(crate) fn current_tid() -> i32 {
    nix::unistd::gettid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(d: Duration) {
        let start = self_thread().unwrap();
        while self_thread().unwrap() - start < d {}
    }

    #[test]
    fn thread_clock_of_another_thread_matches_its_own_reading() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            spin(Duration::from_millis(30));
            tx.send((current_tid(), self_thread().unwrap())).unwrap();
            done_rx.recv().unwrap();
        });
        let (tid, own) = rx.recv().unwrap();
        let seen = thread(tid).unwrap();
        done_tx.send(()).unwrap();
        h.join().unwrap();
        assert!(seen >= own, "seen {seen:?} < own {own:?}");
        assert!(
            seen - own < Duration::from_millis(5),
            "seen {seen:?} own {own:?}"
        );
        assert!(own >= Duration::from_millis(30));
    }

    #[test]
    fn process_clock_includes_exited_threads() {
        let before = process(std::process::id() as i32).unwrap();
        std::thread::spawn(|| spin(Duration::from_millis(40)))
            .join()
            .unwrap();
        let after = process(std::process::id() as i32).unwrap();
        assert!(after - before >= Duration::from_millis(40));
    }
}

/// The driver's own CPU over the measured window: this process's CPU clock, less the
/// threads in it that belong to the queue manager or flow (the embedded transport's).
#[derive(Debug, Default)]
pub struct DriverCpu {
    excluded: Vec<i32>,
    start: Option<Duration>,
    /// CPU of each window so far (one per round), `None` where a clock could not be read.
    windows: Vec<Option<Duration>>,
    /// The first failure to read a clock, reported instead of a figure.
    pub error: Option<String>,
}

impl DriverCpu {
    /// Measure this process, less the threads `excluded`.
    pub fn new(excluded: Vec<i32>) -> Self {
        DriverCpu {
            excluded,
            ..Default::default()
        }
    }

    fn read(&mut self) -> Option<Duration> {
        let mut total = match self_process() {
            Ok(t) => t,
            Err(e) => {
                self.error.get_or_insert(e.to_string());
                return None;
            }
        };
        for &tid in &self.excluded {
            match thread(tid) {
                Ok(t) => total = total.saturating_sub(t),
                Err(e) => {
                    self.error.get_or_insert(e.to_string());
                    return None;
                }
            }
        }
        Some(total)
    }

    /// CPU used in all windows together, when every clock was read.
    pub fn used(&self) -> Option<Duration> {
        if self.windows.is_empty() {
            return None;
        }
        self.windows.iter().copied().sum()
    }

    /// CPU used in window (round) `i`.
    pub(crate) fn used_in(&self, i: usize) -> Option<Duration> {
        self.windows.get(i).copied().flatten()
    }
}

impl crate::window::Window for DriverCpu {
    fn start(&mut self) {
        self.start = self.read();
    }
    fn end(&mut self) {
        let end = self.read();
        let used = self.start.take().zip(end).map(|(a, b)| b.saturating_sub(a));
        self.windows.push(used);
    }
}
