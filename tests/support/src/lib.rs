//! What the integration tests and the benchmarks share: the binaries as tests run them, the
//! test broker and database, and the reference flow's launcher. A crate of its own (not a
//! `tests/common` module each test file compiles a part of), so nothing in it is dead code.

pub mod amqp;
pub mod bad_responder;
pub mod bin;
pub mod browser;
pub mod burn;
pub mod fault_proxy;
pub mod flow;
pub mod kafka;
pub mod live;
pub mod pg;
pub mod schema;

pub use amqp::*;
pub use bad_responder::{BadResponder, Misbehaviour};
pub use bin::*;
pub use burn::{BurnResponder, Truth, burn_responder_bin};
pub use fault_proxy::{Fault, FaultProxy};
pub use flow::{SampleFlow, sample_flow_bin};
pub use live::Service;
pub use pg::*;
pub use schema::assert_matches_schema;

/// The sample-flow binary beside this build's oemputx.
pub fn flow_bin() -> std::path::PathBuf {
    sample_flow_bin()
}
