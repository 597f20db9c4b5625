//! Orchestration, one room per experiment that starts flows and measures them in rounds:
//! the commands parse, call one function here, and hand its typed result to their outputs.
//! `sweep` (threads against processes per task count), `compare` (settings in one window)
//! and `ab` (the A/B gate: two flows in ABBA rounds); `pubsub`, one publish/subscribe
//! window between two CPU snapshots (pubsub and matrix repeat it); `gate_stored` (a run
//! against main's stored history), `gate_instr` (instruction counts under callgrind) and
//! `verdict` (the verdict's outputs and exit code, shared by the three gates);
//! `change_points` (main's history searched for steps, by `history` and the stored gate).

pub mod ab;
pub mod change_points;
pub mod compare;
pub mod gate_instr;
pub mod gate_stored;
pub mod ladder;
pub mod pubsub;
pub mod sweep;
pub mod verdict;
