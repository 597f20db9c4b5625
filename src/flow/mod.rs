//! The reference message flow behind the `sample-flow` binary: a system under test modelled
//! on the broker paper's production flow (630-byte XML in, a dozen nodes, a database insert).
//!
//! [`nodes`] is the message processing without I/O, [`db`] the database node, [`stats`] the
//! flow's own accounting and statistics, and [`engine`] the threads that run them.

pub mod db;
pub mod engine;
pub mod nodes;
pub mod stats;
