//! oemputx: what does one message cost?
//!
//! The library behind the `oemputx` binary. The modules follow the data flow, and imports
//! only point down it: each module imports only modules on lower lines of this map (it may
//! skip layers; none on its own line or above). docs/layout.md draws the same map, and
//! tests/it/layout.rs checks that the two agree, that they name every module there is, and
//! that every `crate::` path in `src/` points down.
//!
//! ```text
//! commands/                     one thin file per subcommand
//!   orchestrate/                sweep, live compare, the gates and their verdict, pub/sub windows, the matrix, cpu, account
//!     interleave/               the engine's cycles over flows oemputx starts
//!       measure.rs              one measured run
//!         exit.rs  export/  no_reply.rs
//!           gate/  serving.rs
//!             report/  progress.rs
//!               cli/  driver/  flows.rs
//!                 config/
//!                   pubsub/
//!                     transport/
//!                       profiling/
//!                         accounting/
//!                           experiment/  msgfile.rs  url_parts.rs
//!                             children.rs  features.rs  files.rs  secret.rs  stats.rs  terminal.rs  window.rs
//!                               exit_code.rs  signals.rs
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
pub mod exit_code;
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
