//! oemputx: what does one message cost?
//!
//! The library behind the `oemputx` and `sample-flow` binaries: options become a validated
//! [`config::Config`], the [`driver`] runs the put/get loop over a [`transport`], and the
//! [`report`] model is what every exporter reads.

pub mod accounting;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod cpu;
pub mod driver;
pub mod error;
pub mod exit_codes;
pub mod flow;
pub mod gate;
pub mod msgfile;
pub mod progress;
pub mod report;
pub mod run;
pub mod stats;
pub mod sweep;
pub mod transport;
pub mod window;
