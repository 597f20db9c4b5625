//! The `oemputx` binary: parse options, install the Ctrl-C handler, dispatch, exit with the
//! named code.

use anyhow::Context;
use oemputx::cli::Cli;
use oemputx::commands;
use oemputx::exit::{Exit, exit_for_now};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

fn main() -> ExitCode {
    let exit = outcome();
    // Ctrl-C, once the reports are written: die of SIGINT as the default handler would, so
    // that a shell sees 130 *and* stops the loop or script around oemputx, which it does
    // for a child killed by SIGINT but not for one that exits 130. SIGTERM ends with 130.
    if exit == Exit::Interrupted
        && oemputx::signals::LAST_SIGNAL.load(std::sync::atomic::Ordering::Relaxed)
            == signal_hook::consts::SIGINT as usize
    {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGINT);
    }
    exit.into()
}

fn outcome() -> Exit {
    match run() {
        Ok(Exit::Ok)
            if oemputx::terminal::STDOUT_LOST.load(std::sync::atomic::Ordering::Relaxed) =>
        {
            oemputx::say!(
                "Error: cannot write to stdout (is the device full?); the report files were written: check where stdout goes"
            );
            Exit::Failure
        }
        Ok(code) => code,
        Err(e) => {
            oemputx::say!("Error: {e:#}");
            // An error met because a signal stopped a wait (the queue a flow was to
            // declare, say) is still an interrupted run: a shell loop must see 130.
            exit_for_now(&e)
        }
    }
}

fn run() -> anyhow::Result<Exit> {
    let matches = oemputx::cli::command().get_matches();
    let cli =
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // One policy for every command: at most one output on stdout, and then nothing else.
    match oemputx::cli::stdout_exports(&matches).as_slice() {
        [] => {}
        [_] => oemputx::terminal::STDOUT_TAKEN.store(true, std::sync::atomic::Ordering::Relaxed),
        many => {
            let why = format!(
                "{} {} name stdout ('-'); only one output can go there: give the others file paths",
                many.join(" and "),
                if many.len() == 2 { "both" } else { "all" }
            );
            oemputx::say!("Error: {why}");
            // A gate's CI page still says why (its JUnit, summary and annotation).
            if let Some(oemputx::cli::Command::Gate(args)) = &cli.command {
                oemputx::orchestrate::verdict::write_failure(&args.outputs(), Exit::Usage, &why);
            }
            return Ok(Exit::Usage);
        }
    }

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
