//! The process exit codes, named once so that `main`, the gate and the tests agree, and the
//! mapping from an error to its code.
//!
//! Module boundaries return `thiserror` enums; the glue wraps them in `anyhow` with context.
//! Whether a failure is the user's input (exit 2) or the run's (exit 1) is decided here, once,
//! by walking the error chain for a typed error that knows.

use crate::config::ConfigError;
use crate::msgfile::MsgFileError;
use crate::report::saved::ReportFileError;
use crate::transport::{EndpointError, TransportError};
use std::process::ExitCode;

/// `eprintln!` that cannot panic: a full or closed stderr loses the line, never the run
/// (the report files are written before anything is said).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        // Every line on stderr may carry text from outside (a broker's error above all):
        // defused here, once, for a terminal or a CI log.
        let line = $crate::terminal::for_terminal_lines(&::std::format!($($arg)*));
        let _ = ::std::writeln!(::std::io::stderr(), "{line}");
    }};
}

/// `eprint!` that cannot panic (see [`say!`]).
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr(), $($arg)*);
    }};
}

/// Set when a line could not be written to stdout (not when its reader went away): `main`
/// then ends with exit 1 naming stdout, once the files are written.
pub static STDOUT_LOST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set by `main` when an output was given `-`: stdout then carries that output alone, and
/// [`out!`] (everything written for a person) goes to stderr.
pub static STDOUT_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `print!` that cannot panic: a full stdout is remembered in [`STDOUT_LOST`], a reader
/// that went away (`| head`) is no error. To stderr when an output holds stdout
/// ([`STDOUT_TAKEN`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        if $crate::exit::STDOUT_TAKEN.load(::std::sync::atomic::Ordering::Relaxed) {
            $crate::say_raw!($($arg)*);
        } else {
        let mut o = ::std::io::stdout().lock();
        if let Err(e) = ::std::write!(o, $($arg)*).and_then(|()| o.flush()) {
            if e.kind() != ::std::io::ErrorKind::BrokenPipe {
                $crate::exit::STDOUT_LOST.store(true, ::std::sync::atomic::Ordering::Relaxed);
            }
        }
        }
    }};
}

/// `println!` that cannot panic (see [`out!`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        $crate::out!("{}\n", ::std::format_args!($($arg)*))
    }};
}

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

/// The exit code for an error chain: the first typed error in it decides.
pub fn exit_for(err: &anyhow::Error) -> Exit {
    for cause in err.chain() {
        if cause.downcast_ref::<ConfigError>().is_some()
            || cause.downcast_ref::<MsgFileError>().is_some()
            || cause.downcast_ref::<ReportFileError>().is_some()
            || cause.downcast_ref::<EndpointError>().is_some()
            || cause.downcast_ref::<crate::gate::GateError>().is_some()
            || cause
                .downcast_ref::<crate::accounting::selector::SelectorError>()
                .is_some()
            || cause
                .downcast_ref::<crate::experiment::DesignError>()
                .is_some()
            || cause
                .downcast_ref::<crate::report::merge::MergeError>()
                .is_some()
        {
            return Exit::Usage;
        }
        if let Some(t) = cause.downcast_ref::<TransportError>() {
            return if t.is_usage() {
                Exit::Usage
            } else {
                Exit::Failure
            };
        }
        if cause.downcast_ref::<clap::Error>().is_some() {
            return Exit::Usage;
        }
    }
    Exit::Failure
}

pub use crate::signals::{LAST_SIGNAL, interrupted_by};

/// The exit code for an error met now: an interrupted run's (130) once a signal has
/// stopped it — the error is then what the stop cut short (a wait for a queue, say) — else
/// [`exit_for`]'s. `main` and the gate's failure outputs both use it, so they agree.
pub fn exit_for_now(err: &anyhow::Error) -> Exit {
    if LAST_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) != 0 {
        Exit::Interrupted
    } else {
        exit_for(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    fn code(e: anyhow::Error) -> Exit {
        exit_for(&e)
    }

    #[test]
    fn the_first_typed_error_in_the_chain_decides_the_code() {
        // The user's input, however deep under context: 2.
        let bad = crate::config::bad("--count", "must be at least 1");
        assert_eq!(code(anyhow::Error::new(bad)), Exit::Usage);
        let wrapped: anyhow::Result<()> = Err(crate::config::bad("--rate", "x").into());
        assert_eq!(
            code(
                wrapped
                    .context("building the run")
                    .context("oemputx gate")
                    .unwrap_err()
            ),
            Exit::Usage
        );
        // A broker that cannot be reached is the command line's (a wrong host or port); a
        // connection lost mid-run is the run's.
        let unreachable = TransportError::Unreachable {
            target: "amqp://guest:***@127.0.0.1:5".into(),
            why: "connection refused".into(),
        };
        assert_eq!(code(anyhow::Error::new(unreachable)), Exit::Usage);
        let lost = TransportError::ConnectionLost {
            target: "amqp://guest:***@127.0.0.1:5672".into(),
            why: "reset".into(),
        };
        assert_eq!(
            code(anyhow::Error::new(lost).context("round 2")),
            Exit::Failure
        );
        // Anything untyped is a runtime failure, never a usage error by accident.
        assert_eq!(code(anyhow::anyhow!("disk full")), Exit::Failure);
    }

    #[test]
    fn the_codes_are_the_documented_ones() {
        let codes = [
            Exit::Ok,
            Exit::Failure,
            Exit::Usage,
            Exit::Regression,
            Exit::Inconclusive,
            Exit::Interrupted,
        ]
        .map(|e| e as i32);
        assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
    }
}
