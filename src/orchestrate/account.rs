//! `oemputx account`'s measuring: any other load driver (JMeter, PerfTest, a script) run
//! between two snapshots of the groups, its own CPU from its reaped children's usage, and
//! the groups' CPU divided by the messages it says it sent (→ `AccountReport`).

use crate::accounting::{Accounting, DriverRow, Traffic};
use crate::children::Group;
use crate::config::ConfigError;
use crate::config::tools::AccountConfig;
use crate::report::Host;
use crate::report::account::AccountReport;
use crate::window::Window as _;
use anyhow::Context as _;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What an account measured, and how its command ended.
#[derive(Debug)]
pub struct Accounted {
    pub report: AccountReport,
    /// The command's status (`report.exit_code` is its code, if it had one).
    pub status: ExitStatus,
    /// Whether a signal was passed on to it: the figures cover its run up to then.
    pub interrupted: bool,
}

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

/// Run the command between the groups' two snapshots, and divide by its messages.
pub fn run(args: &AccountConfig, interrupt: &AtomicBool) -> anyhow::Result<Accounted> {
    let mut acc = Accounting::new(args.groups.clone(), args.cpu_source, args.ratio)
        .counting_syncs(args.count_syncs)
        .with_hosts(&args.hosts)
        .map_err(ConfigError::from)?;
    let before = children_cpu();
    acc.start();
    let mut group = spawn(args)?;
    let (status, interrupted) = wait_or_pass_on(&group, interrupt)?;
    acc.end();
    // The rest of its group after the window, then the command reaped: its CPU is in
    // RUSAGE_CHILDREN only once it is.
    group.stop();
    let command_cpu = sub(children_cpu(), before);
    let report = report(args, &acc, status.code(), command_cpu)?;
    Ok(Accounted {
        report,
        status,
        interrupted,
    })
}

/// The command started, the leader of a process group of its own.
fn spawn(args: &AccountConfig) -> anyhow::Result<Group> {
    let program = &args.program;
    let mut command = std::process::Command::new(program);
    command.args(&args.args);
    // With an output on stdout, stdout carries that output alone: the command's own
    // stdout goes to stderr, with everything else said to a person.
    if crate::terminal::STDOUT_TAKEN.load(Ordering::Relaxed) {
        command.stdout(std::io::stderr());
    }
    // The command leads a process group of its own: what it leaves running when it ends
    // (a forked worker, `sh -c 'driver & …'`) is stopped with it, here or when dropped on
    // an error.
    Ok(
        Group::spawn(&mut command, GRACE).map_err(|e| ConfigError::BadValue {
            flag: "account",
            why: format!("cannot run '{program}': {e}; check the command and its PATH"),
        })?,
    )
}

/// The groups' table over the command's window, with the command as the driver's row.
fn report(
    args: &AccountConfig,
    acc: &Accounting,
    exit_code: Option<i32>,
    command_cpu: (Duration, Duration),
) -> anyhow::Result<AccountReport> {
    let program = &args.program;
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
    // The command's own CPU per message, from getrusage of the children.
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
    Ok(AccountReport {
        schema: crate::report::account::SCHEMA,
        command: std::iter::once(program.clone())
            .chain(args.args.iter().cloned())
            .collect(),
        exit_code,
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
    })
}

/// How long the command is given after a signal passed on to it, and its group after it
/// ended, before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// Wait for the command to end; on Ctrl-C or SIGTERM pass the signal on to its whole group
/// and wait at most [`GRACE`] more before SIGKILL. Returns its status (read, the command
/// not reaped) and whether it was interrupted.
fn wait_or_pass_on(group: &Group, interrupt: &AtomicBool) -> anyhow::Result<(ExitStatus, bool)> {
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
        // µs stand in for ticks: below a µs is nothing, not a rounding up.
        assert_eq!(
            command_split((Duration::from_nanos(999), Duration::from_micros(3))),
            (0, 3)
        );
    }

    fn account(command: &[&str]) -> AccountConfig {
        let me = format!("ME=pid:{}", std::process::id());
        AccountConfig {
            messages: 10,
            groups: crate::accounting::selector::parse_groups([me.as_str()]).expect("a group"),
            hosts: Vec::new(),
            cpu_source: crate::accounting::snapshot::CpuSource::Exact,
            count_syncs: true,
            ratio: crate::accounting::RatioMode::Measured,
            exports: Default::default(),
            program: command[0].to_string(),
            args: command[1..].iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_command_is_accounted_between_two_snapshots_with_its_status() {
        let a = run(&account(&["sh", "-c", "exit 3"]), &AtomicBool::new(false)).expect("ran");
        assert!(!a.interrupted);
        assert_eq!(a.status.code(), Some(3));
        let r = &a.report;
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(r.command, ["sh", "-c", "exit 3"]);
        assert_eq!(r.messages, 10);
        assert!(r.elapsed_s > 0.0 && r.rate_tps > 0.0, "{r:?}");
        assert!(r.groups.iter().any(|g| g.name == "ME"), "{:?}", r.groups);
        // A program that does not exist is the command line's error, naming it.
        let err = run(&account(&["no-such-program-x"]), &AtomicBool::new(false))
            .expect_err("not run")
            .to_string();
        assert!(err.contains("cannot run 'no-such-program-x'"), "{err}");
    }
}
