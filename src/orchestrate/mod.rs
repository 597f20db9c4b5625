//! Orchestration, one room per experiment that starts flows and measures them in rounds:
//! the commands parse, call one function here, and hand its typed result to their outputs.
//! `sweep` (threads against processes per task count), `compare` (settings in one window)
//! and `ab` (the A/B gate: two flows in ABBA rounds); `pubsub`, one publish/subscribe
//! window between two CPU snapshots, which `pubsub_rounds` (pubsub's rounds and capacity
//! search) and `matrix` (the CJMQ table's cells) repeat; `cpu`, the groups' CPU without a
//! driver (so far, over a window, per interval); `account`, any other load driver between
//! two snapshots; `gate_stored` (a run against main's stored history), `gate_instr`
//! (instruction counts under callgrind) and `verdict` (the verdict's outputs and exit code,
//! shared by the three gates); `change_points` (main's history searched for steps, by
//! `history` and the stored gate).

pub mod ab;
pub mod account;
pub mod change_points;
pub mod compare;
pub mod cpu;
pub mod gate_instr;
pub mod gate_stored;
pub mod ladder;
pub mod matrix;
pub mod pubsub;
pub mod pubsub_rounds;
pub mod sweep;
pub mod verdict;
