//! The process exit codes, and the class every typed error declares: whether it is the
//! user's input (exit 2) or the run's failure (exit 1) is said by the error, beside its
//! definition, not decided by a list elsewhere. At the bottom of the map so that every
//! module's errors can say it; `exit` reads it from an error's chain.

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

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// An error that says which exit code it ends oemputx with: [`Exit::Usage`] for what the
/// user gave (a flag, a file, a URL, an unreachable broker), [`Exit::Failure`] for what went
/// wrong while running. Every `thiserror` type in `src/` implements it (a test holds them
/// to it), and the first one in an error's chain decides.
pub trait Classified: std::error::Error + Send + Sync + 'static {
    fn exit(&self) -> Exit;
}

/// `cause` as an `E`, asked for its exit code.
pub(crate) fn class_of<E: Classified>(cause: &(dyn std::error::Error + 'static)) -> Option<Exit> {
    cause.downcast_ref::<E>().map(Classified::exit)
}

/// The user's input, whatever the variant: each such type says so in one line.
#[macro_export]
macro_rules! usage_error {
    ($t:ty) => {
        impl $crate::exit_code::Classified for $t {
            fn exit(&self) -> $crate::exit_code::Exit {
                $crate::exit_code::Exit::Usage
            }
        }
    };
}

/// A failure of the run, whatever the variant.
#[macro_export]
macro_rules! runtime_error {
    ($t:ty) => {
        impl $crate::exit_code::Classified for $t {
            fn exit(&self) -> $crate::exit_code::Exit {
                $crate::exit_code::Exit::Failure
            }
        }
    };
}
