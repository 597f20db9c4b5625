//! One thin file per subcommand, and the dispatch from parsed options to it.

pub mod account;
pub mod compare;
pub mod cpu;
pub mod gate;
pub mod gate_ab;
pub mod gate_instr;
pub mod history;
pub mod ladder;
pub mod matrix;
pub mod merge;
pub mod profiles;
pub mod pubsub;
pub mod run;
pub mod sweep;

use crate::cli::{Cli, Command, GateArgs};
use crate::config::ConfigError;
use crate::config::gate::{GateConfig, GateMode};
use crate::exit::Exit;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run what the command line asks for; `interrupt` is set by Ctrl-C.
/// The options are checked into their config first: nothing runs on a bad option.
pub fn dispatch(cli: &Cli, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    // One table of the formats each result writes: a flag for another is refused here,
    // before anything runs (a gate still writes its annotations and JUnit saying why).
    let formats = cli.outputs().map_or(Ok(()), |(kind, o)| o.check(kind));
    match &cli.command {
        Some(Command::Gate(args)) => gate_command(args, formats, interrupt),
        _ => {
            formats?;
            run_command(cli, interrupt)
        }
    }
}

/// Every command but the gate, its outputs checked.
fn run_command(cli: &Cli, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    match &cli.command {
        Some(Command::Cpu(args)) => cpu::cpu(&args.options().build()?, interrupt),
        Some(Command::Account(args)) => account::account(&args.options().build()?, interrupt),
        Some(Command::Pubsub(args)) => pubsub::pubsub(&args.options().build()?, interrupt),
        Some(Command::Matrix(args)) => matrix::matrix(&args.options().build()?, interrupt),
        Some(Command::Sweep(args)) => sweep::sweep(&args.options()?.build()?, interrupt),
        Some(Command::Ladder(args)) => ladder::ladder(&args.options()?.build()?, interrupt),
        Some(Command::Compare(args)) => compare::compare(&args.options()?.build()?, interrupt),
        Some(Command::Gate(args)) => gate_command(args, Ok(()), interrupt),
        Some(Command::Profiles(args)) => profiles::profiles(args.config.as_deref()),
        Some(Command::Init(args)) => profiles::init(args.path.as_deref(), args.force),
        Some(Command::Merge(args)) => merge::merge(&args.options().build()?),
        Some(Command::History(args)) => history::history(args),
        None => run::put_get(&cli.run.options()?.build()?, interrupt),
    }
}

/// `oemputx gate`: its outputs checked (`formats`), then its options; whatever stops it,
/// the annotations, step summary and JUnit asked for say why.
fn gate_command(
    args: &GateArgs,
    formats: Result<(), ConfigError>,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Exit> {
    let result = formats
        .map_err(anyhow::Error::from)
        .and_then(|()| args.options())
        .and_then(|o| Ok(o.build()?))
        .and_then(|cfg| gate(&cfg, interrupt));
    let failure = match &result {
        Err(e) => Some((crate::exit::exit_for_now(e), format!("{e:#}"))),
        Ok(Exit::Interrupted) => Some((
            Exit::Interrupted,
            format!("interrupted by {}", crate::signals::interrupted_by()),
        )),
        Ok(code @ (Exit::Failure | Exit::Usage)) => Some((
            *code,
            "the gate ended without a verdict (see its log)".into(),
        )),
        Ok(_) => None,
    };
    if let Some((code, why)) = failure {
        crate::orchestrate::verdict::write_failure(&args.outputs(), code, &why);
    }
    result
}

/// `oemputx gate`: the mode the options chose.
fn gate(cfg: &GateConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    match &cfg.mode {
        // A run measured now writes the reports a put/get run writes.
        GateMode::Stored { baseline, current } => {
            let write = |run: &crate::config::RunConfig, report: &crate::report::Report| {
                crate::export::run_reports::write_reports(report, &run.outputs, run.quiet)
            };
            gate::stored(cfg, (baseline, current), interrupt, &write)
        }
        GateMode::Ab(pair) => gate_ab::gate_ab(cfg, pair, interrupt),
        GateMode::Instructions {
            sides,
            run,
            runs,
            count,
        } => gate_instr::gate_instructions(cfg, sides, run, (*runs, *count), interrupt),
        GateMode::Rejudge(files) => gate_instr::rejudge(cfg, files),
    }
}
