//! Mapping errors to exit codes.
//!
//! Module boundaries return `thiserror` enums; the glue wraps them in `anyhow` with context.
//! Whether a failure is the user's input (exit 2) or the run's (exit 1) is decided here, once,
//! by walking the error chain for a typed error that knows.

use crate::compare::ReportFileError;
use crate::config::ConfigError;
use crate::exit_codes::Exit;
use crate::msgfile::MsgFileError;
use crate::transport::{EndpointError, TransportError};

/// The exit code for an error chain: the first typed error in it decides.
pub fn exit_for(err: &anyhow::Error) -> Exit {
    for cause in err.chain() {
        if cause.downcast_ref::<ConfigError>().is_some()
            || cause.downcast_ref::<MsgFileError>().is_some()
            || cause.downcast_ref::<ReportFileError>().is_some()
            || cause.downcast_ref::<EndpointError>().is_some()
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
