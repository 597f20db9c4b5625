//! `oemputx account`: wraps any other load driver (JMeter, PerfTest, a script) between two
//! snapshots of the groups and divides by the messages it says it sent.

use crate::accounting::{Accounting, DriverRow, Traffic};
use crate::children::Group;
use crate::config::ConfigError;
use crate::config::tools::AccountConfig;
use crate::exit::Exit;
use crate::export::outputs::{Outputs, Style};
use crate::report::Host;
use crate::report::account::AccountReport;
use crate::window::Window;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// User and system CPU of reaped children (µs resolution; the kernel scales the tick split
/// to the exact runtime, as for a live process).
fn children_cpu() -> (Duration, Duration) {
    use nix::sys::resource::{UsageWho, getrusage};
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
    };
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .map(|u| (tv(u.user_time()), tv(u.system_time())))
        .unwrap_or_default()
}

fn sub(a: (Duration, Duration), b: (Duration, Duration)) -> (Duration, Duration) {
    (a.0.saturating_sub(b.0), a.1.saturating_sub(b.1))
}

/// The split as weights for the table (µs stand in for ticks: only the ratio is used).
fn command_split(c: (Duration, Duration)) -> (u64, u64) {
    (c.0.as_micros() as u64, c.1.as_micros() as u64)
}

/// `oemputx account`.
pub fn account(args: &AccountConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    let mut acc = Accounting::new(args.groups.clone(), args.cpu_source, args.ratio)
        .with_hosts(&args.hosts)
        .map_err(ConfigError::from)?;
    let (program, rest) = (&args.program, &args.args);
    let before = children_cpu();
    acc.start();
    let mut command = std::process::Command::new(program);
    command.args(rest);
    // With an output on stdout, stdout carries that output alone: the command's own
    // stdout goes to stderr, with everything else said to a person.
    if crate::exit::STDOUT_TAKEN.load(std::sync::atomic::Ordering::Relaxed) {
        command.stdout(std::io::stderr());
    }
    // The command leads a process group of its own: what it leaves running when it ends
    // (a forked worker, `sh -c 'driver & …'`) is stopped with it, here or when dropped on
    // an error.
    let mut group = Group::spawn(&mut command, GRACE).map_err(|e| ConfigError::BadValue {
        flag: "account",
        why: format!("cannot run '{program}': {e}; check the command and its PATH"),
    })?;
    let (status, interrupted) = wait_or_pass_on(&group, &interrupt)?;
    acc.end();
    // The rest of its group after the window, then the command reaped: its CPU is in
    // RUSAGE_CHILDREN only once it is.
    group.stop();
    let command_cpu = sub(children_cpu(), before);
    let name = std::path::Path::new(program)
        .file_name()
        .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let command_row = DriverRow {
        group: "COMMAND",
        name: format!("{name} (and children)"),
        pid: None,
        cpu: command_cpu.0 + command_cpu.1,
        split: Some(command_split(command_cpu)),
        exited: true,
    };
    let elapsed = acc.elapsed().unwrap_or_default().as_secs_f64();
    let rate = args.messages as f64 / elapsed.max(f64::MIN_POSITIVE);
    let per_msg = (command_cpu.0 + command_cpu.1).as_secs_f64() * 1e6 / args.messages as f64;
    let table = acc
        .table(Traffic {
            transactions: args.messages,
            driver: Some(&command_row),
            concurrency: None,
            round_trip_us: elapsed * 1e6 / args.messages as f64,
            rate_tps: rate,
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "taking CPU snapshots failed: {}",
                acc.error.clone().unwrap_or_default()
            )
        })?;
    // The command's own CPU per message, from getrusage of the children.
    let report = AccountReport {
        schema: crate::report::account::SCHEMA,
        command: std::iter::once(program.clone())
            .chain(rest.iter().cloned())
            .collect(),
        exit_code: status.code(),
        messages: args.messages,
        elapsed_s: elapsed,
        rate_tps: rate,
        command_cpu_us_per_msg: per_msg,
        captured_us_per_tran: table.captured_us_per_tran,
        corrected_us_per_tran: table.corrected_us_per_tran,
        capture_ratio: table.capture_ratio.clone(),
        other_cpu: table.other_cpu.clone(),
        processes: table.processes,
        groups: table.groups,
        accounting: table.info,
        host: Host::current(),
    };
    write(args, &report)?;
    if interrupted {
        crate::say!(
            "oemputx account: interrupted; the signal was passed on to the command, and the figures cover its run up to then"
        );
        return Ok(Exit::Interrupted);
    }
    if !status.success() {
        crate::say!(
            "oemputx account: the command failed ({status}); the figures cover its run anyway"
        );
        return Ok(Exit::Failure);
    }
    Ok(Exit::Ok)
}

/// The JSON file first (a full or closed stdout cannot lose it), then the text.
fn write(args: &AccountConfig, report: &AccountReport) -> anyhow::Result<()> {
    let mut out = Outputs::new();
    out.artifact(report, &args.exports, &Style::default());
    out.finish(Some(&crate::export::account::text(report)))
}

/// How long the command is given after a signal passed on to it, and its group after it
/// ended, before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// Wait for the command to end; on Ctrl-C or SIGTERM pass the signal on to its whole group
/// and wait at most [`GRACE`] more before SIGKILL. Returns its status (read, the command
/// not reaped) and whether it was interrupted.
fn wait_or_pass_on(
    group: &Group,
    interrupt: &AtomicBool,
) -> anyhow::Result<(std::process::ExitStatus, bool)> {
    use nix::sys::signal::Signal;
    let mut passed_on: Option<Instant> = None;
    loop {
        if let Some(status) = group.peek().context("waiting for the command")? {
            // The command may end of the signal before it is passed on.
            return Ok((
                status,
                passed_on.is_some() || interrupt.load(Ordering::Relaxed),
            ));
        }
        match passed_on {
            None if interrupt.load(Ordering::Relaxed) => {
                let sig = match crate::signals::interrupted_by() {
                    "SIGTERM" => Signal::SIGTERM,
                    _ => Signal::SIGINT,
                };
                group.signal(sig);
                passed_on = Some(Instant::now());
            }
            Some(t) if t.elapsed() > GRACE => group.signal(Signal::SIGKILL),
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_cpu_is_the_difference_and_never_negative() {
        let ms = Duration::from_millis;
        assert_eq!(sub((ms(30), ms(12)), (ms(10), ms(2))), (ms(20), ms(10)));
        // A child reaped by someone else cannot make the split negative.
        assert_eq!(sub((ms(5), ms(1)), (ms(10), ms(2))), (ms(0), ms(0)));
        assert_eq!(command_split((ms(20), ms(10))), (20_000, 10_000));
    }
}
