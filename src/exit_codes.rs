//! The process exit codes, named once so that `main`, the gate and the tests agree.

use std::process::ExitCode;

/// Every exit status oemputx can end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The run finished and every request was answered.
    Ok = 0,
    /// A runtime failure: the broker went away, replies timed out, a report could not be written.
    Failure = 1,
    /// Usage or bad input: a flag, a profile, a URL, a message file, an unreachable broker.
    Usage = 2,
    /// The gate found a regression.
    Regression = 3,
    /// Under `gate --strict`: the gate could not decide, or there is no baseline.
    Inconclusive = 4,
    /// Stopped by Ctrl-C (128 + SIGINT).
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}
