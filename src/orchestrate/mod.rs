//! Orchestration, one room per experiment that starts flows and measures them in rounds:
//! the commands parse, call one function here, and hand its typed result to their outputs.
//! `sweep` (threads against processes per task count), `compare` (settings in one window)
//! and `ab` (the A/B gate: two flows in ABBA rounds); `pubsub`, one publish/subscribe
//! window between two CPU snapshots (pubsub and matrix repeat it).

pub mod ab;
pub mod change_points;
pub mod compare;
pub mod gate_stored;
pub mod ladder;
pub mod pubsub;
pub mod sweep;
pub mod verdict;
