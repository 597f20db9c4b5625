//! The `oemputx` binary: parse options, install the Ctrl-C handler, dispatch, exit with the
//! named code.

use anyhow::Context;
use clap::Parser;
use oemputx::cli::Cli;
use oemputx::commands;
use oemputx::exit::{Exit, exit_for};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

fn main() -> ExitCode {
    match run() {
        Ok(Exit::Ok) if oemputx::exit::STDOUT_LOST.load(std::sync::atomic::Ordering::Relaxed) => {
            oemputx::say!(
                "Error: cannot write to stdout (is the device full?); the report files were written: check where stdout goes"
            );
            Exit::Failure.into()
        }
        Ok(code) => code.into(),
        Err(e) => {
            oemputx::say!("Error: {e:#}");
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
        .and_then(|_| {
            signal_hook::flag::register_usize(sig, oemputx::exit::LAST_SIGNAL.clone(), sig as usize)
        })
        .context("installing the Ctrl-C handler")?;
    }
    commands::dispatch(&cli, interrupt)
}
