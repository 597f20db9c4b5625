//! oemputx's integration tests, in one binary: one module per area, as rust-analyzer's and
//! matklad's "Delete Cargo Integration Tests" layout has it. Thirty binaries each linked
//! the whole crate and ran after one another; one links once, and its tests share the
//! machine in one pool of test threads.
//!
//! What the tests share lives in the support crate (tests/support). Run one area with
//! `cargo test --test it ladder::` (a module's path filters its tests).

mod accounting;
mod amqp;
mod amqp10;
mod amqps;
mod beyond_cpu;
mod ci_recipes;
mod cli;
mod docs;
mod failover;
mod flow;
mod fuzz;
mod gate;
mod history;
mod html;
mod kafka;
mod ladder;
mod layout;
mod merge;
mod merge_memory;
mod mqtt;
mod nats;
mod outputs;
mod pcp;
mod process_trees;
mod profile;
mod pubsub;
mod reports;
mod serving;
mod signals;
mod slurm;
mod snapshots;
mod stomp;
mod sweep_compare;
mod tsv_rows;
mod untrusted;
mod waits;
