//! The exit code of an error, and of an error met after a signal (`main` and the gate's
//! failure outputs agree through it). The codes themselves are in `exit_code.rs`.
//!
//! Module boundaries return `thiserror` enums; the glue wraps them in `anyhow` with context.
//! Whether a failure is the user's input (exit 2) or the run's (exit 1) is said by each
//! typed error ([`Classified`], beside its definition); this walks an error's chain for the
//! first that says.

use crate::exit_code::class_of;
pub use crate::exit_code::{Classified, Exit};

/// How each typed error is asked its class: one entry per `thiserror` type in `src/` (a
/// test scans the source and fails on one that is missing here), and clap's own.
const CLASSES: &[fn(&(dyn std::error::Error + 'static)) -> Option<Exit>] = &[
    class_of::<crate::config::ConfigError>,
    class_of::<crate::msgfile::MsgFileError>,
    class_of::<crate::report::saved::ReportFileError>,
    class_of::<crate::transport::EndpointError>,
    class_of::<crate::transport::TransportError>,
    class_of::<crate::gate::GateError>,
    class_of::<crate::gate::change_points::Unsearchable>,
    class_of::<crate::accounting::selector::SelectorError>,
    class_of::<crate::accounting::clock::CpuError>,
    class_of::<crate::accounting::pcp::PcpError>,
    class_of::<crate::accounting::snapshot::SnapshotError>,
    class_of::<crate::experiment::DesignError>,
    class_of::<crate::report::merge::MergeError>,
    class_of::<crate::profiling::recorder::ProfileError>,
    class_of::<crate::files::ReadError>,
    class_of::<crate::pubsub::Unsupported>,
    #[cfg(feature = "stomp")]
    class_of::<crate::transport::stomp::frame::FrameError>,
    |cause| cause.downcast_ref::<clap::Error>().map(|_| Exit::Usage),
];

/// The exit code for an error chain: the first typed error in it decides; an error no
/// type claims is a runtime failure, never a usage error by accident.
pub(crate) fn exit_for(err: &anyhow::Error) -> Exit {
    err.chain()
        .find_map(|cause| CLASSES.iter().find_map(|class| class(cause)))
        .unwrap_or(Exit::Failure)
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
    use crate::transport::TransportError;
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
