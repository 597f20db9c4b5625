//! oemputx: what does one message cost?
//!
//! The library behind the `oemputx` binary. The modules follow the data flow, and imports
//! only point down it:
//!
//! ```text
//! commands ─► interleave ─► measure ─► exit, export, no_reply ─► gate, serving
//!   ─► report, progress ─► cli, driver, flows ─► config ─► pubsub ─► transport
//!   ─► accounting ─► experiment, msgfile, url_parts
//!   ─► children, features, files, secret, signals, stats, terminal, window
//! ```
//!
//! [`commands`] holds one thin file per subcommand on top of them all.

pub mod accounting;
pub mod children;
pub mod cli;
pub mod commands;
pub mod config;
pub mod driver;
pub mod exit;
pub mod experiment;
pub mod export;
pub mod features;
pub mod files;
pub mod flows;
pub mod gate;
pub mod interleave;
pub mod measure;
pub mod msgfile;
pub mod no_reply;
pub mod orchestrate;
pub mod profiling;
pub mod progress;
pub mod pubsub;
pub mod report;
pub mod secret;
pub mod serving;
pub mod signals;
pub mod stats;
pub mod terminal;
pub mod transport;
pub mod url_parts;
pub mod window;
