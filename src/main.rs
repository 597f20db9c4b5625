//! The `oemputx` binary: parse options, run the driver, export the report.

use anyhow::Context;
use clap::Parser;
use oemputx::cli::{Cli, Command};
use oemputx::commands;
use oemputx::config::Config;
use oemputx::error::exit_for;
use oemputx::exit_codes::Exit;
use oemputx::run;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("Error: {e:#}");
            exit_for(&e).into()
        }
    }
}

fn run() -> anyhow::Result<Exit> {
    let cli = Cli::parse();

    // The first Ctrl-C asks the loop to stop and report; a second one ends the process.
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            sig,
            Exit::Interrupted as i32,
            interrupt.clone(),
        )
        .and_then(|_| signal_hook::flag::register(sig, interrupt.clone()))
        .context("installing the Ctrl-C handler")?;
    }
    match &cli.command {
        Some(Command::Cpu(args)) => return commands::cpu(args, interrupt),
        Some(Command::Account(args)) => return commands::account(args),
        Some(Command::Sweep(args)) => return oemputx::sweep::run(args, interrupt),
        Some(Command::Compare(args)) => return oemputx::compare::run(args),
        Some(Command::Gate(args)) => return oemputx::gate::run(args, interrupt),
        None => {}
    }
    let cfg = Config::from_args(&cli.run)?;

    let report = run::measure(&cfg, interrupt)?;
    run::export(&cfg, &report)?;
    Ok(run::exit_of(report.status))
}
