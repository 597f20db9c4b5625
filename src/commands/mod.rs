//! One thin file per subcommand, and the dispatch from parsed options to it.

pub mod account;
pub mod compare;
pub mod cpu;
pub mod gate;
pub mod gate_ab;
pub mod gate_instr;
pub mod matrix;
pub mod pubsub;
pub mod run;
pub mod sweep;

use crate::cli::{Cli, Command};
use crate::config::Config;
use crate::exit::Exit;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run what the command line asks for; `interrupt` is set by Ctrl-C.
pub fn dispatch(cli: &Cli, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    match &cli.command {
        Some(Command::Cpu(args)) => cpu::cpu(args, interrupt),
        Some(Command::Account(args)) => account::account(args),
        Some(Command::Pubsub(args)) => pubsub::pubsub(args),
        Some(Command::Matrix(args)) => matrix::matrix(args),
        Some(Command::Sweep(args)) => sweep::sweep(args, interrupt),
        Some(Command::Compare(args)) => compare::compare(args),
        Some(Command::Gate(args)) if args.instructions => {
            gate_instr::gate_instructions(args, interrupt)
        }
        Some(Command::Gate(args)) if args.flow_a.is_some() => gate_ab::gate_ab(args, interrupt),
        Some(Command::Gate(args)) => gate::gate(args, interrupt),
        None => run::put_get(&Config::from_args(&cli.run)?, interrupt),
    }
}
