//! One measured run, from a validated config to its report, and the report's export: shared
//! by the default command, `sweep` (a run per point) and `gate` (a run, then the verdict).

use crate::accounting::CpuTable;
use crate::accounting::clock::DriverCpu;
use crate::accounting::{Accounting, DriverRow, Traffic};
use crate::config::{RunConfig, RunLength};
use crate::driver::backlog::{Backlog, RoundBacklog};
use crate::driver::{self, Controls};
use crate::progress::{Progress, ProgressSettings};
use crate::report::{Latency, Measured, Report, RoundGroup, RoundRow};
use crate::transport;
use crate::window::Windows;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Run the loop `cfg` describes, with its accounting windows, and build the report.
pub fn measure(cfg: &RunConfig, interrupt: Arc<AtomicBool>) -> anyhow::Result<Report> {
    measure_paced(cfg, interrupt).map(|(report, _)| report)
}

/// [`measure`], with each round's backlog when the run is paced for a duration and settles
/// first (a ladder's step): requests due by the schedule and not yet answered, sampled while
/// the window is open (`driver::backlog`). Empty otherwise.
pub(crate) fn measure_paced(
    cfg: &RunConfig,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<(Report, Vec<RoundBacklog>)> {
    // Hosts first: one that cannot be read stops the run before a queue is touched.
    let mut accounting = Accounting::new(cfg.groups.clone(), cfg.cpu_source, cfg.capture_ratio)
        .counting_syncs(cfg.count_syncs)
        .with_hosts(&cfg.hosts)
        .map_err(crate::config::ConfigError::from)?;
    // perf first: it reads every process's maps as it starts, well before the window.
    let mut stacks = start_stacks(cfg)?;
    let mut clip = stacks.as_ref().map(|r| r.clip());
    let transport = transport::open(
        &cfg.endpoint,
        cfg.queue_setup().interrupted_by(interrupt.clone()),
    )?;
    // Who consumed the request queue as the run began: a run no one answers can then say
    // that someone was there (a flow that died of the first request shows 0 at the end).
    // Not on a queue oemputx made for its own flows (compare, sweep, the gate): it knows who
    // consumes those, and their rounds stay free of the extra connection.
    let consumers_before = cfg
        .check_serving
        .then(|| cfg.endpoint.kind().counted_consumers(&cfg.request_queue))
        .flatten();
    let excluded = transport.own_threads();
    // The profile's own thread is its cost, not the driver's (the profile reports it).
    let profile_threads = stacks.as_ref().map(|r| r.own_threads()).unwrap_or_default();
    if let Some(r) = stacks.as_mut() {
        r.ignore_threads(&excluded);
    }
    let controls = Controls::new(interrupt, cfg.tasks);
    let mut backlog = backlog_sampler(cfg, &controls);
    let sampler = backlog.as_ref().map_or(Vec::new(), Backlog::own_threads);
    let mut window = DriverCpu::new([excluded.as_slice(), &profile_threads, &sampler].concat());
    // Transport errors name the queue manager (redacted) themselves.
    let outcome = {
        // Snapshots outside, the driver's own clock inside: their cost stays out of it.
        let mut progress = Progress::new(progress_settings(cfg), controls.progress_counters());
        // perf outermost (switching it stays outside the snapshots), its clip innermost.
        let mut list: Vec<&mut dyn crate::window::Window> = Vec::new();
        if let Some(r) = stacks.as_mut() {
            list.push(r);
        }
        list.extend([
            &mut accounting as &mut dyn crate::window::Window,
            &mut progress,
        ]);
        if let Some(b) = backlog.as_mut() {
            list.push(b);
        }
        list.push(&mut window);
        if let Some(c) = clip.as_mut() {
            list.push(c);
        }
        let mut windows = Windows(list);
        crate::no_reply::watching(cfg, &controls, || {
            driver::drive(cfg, transport.as_ref(), &controls, &mut windows)
        })?
    };

    let source = driver_source(
        window.error.as_ref(),
        excluded.len(),
        !profile_threads.is_empty(),
    );
    let report = report_of(
        cfg,
        &outcome,
        (&window, &accounting),
        stacks,
        consumers_before,
        source,
    );
    Ok((
        report,
        backlog
            .map(|mut b| std::mem::take(&mut b.rounds))
            .unwrap_or_default(),
    ))
}

/// The run's report, whole: its CPU table from the accounting and the driver's clock, its
/// rounds, what perf sampled, who served its queue and why no one answered.
fn report_of(
    cfg: &RunConfig,
    outcome: &driver::Outcome,
    (window, accounting): (&DriverCpu, &Accounting),
    stacks: Option<crate::profiling::recorder::Recorder>,
    consumers_before: Option<u32>,
    source: String,
) -> Report {
    let transactions = outcome.integrity.matched;
    let rate = transactions as f64 / outcome.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    let round_trip_us = outcome.round_trip_ns.mean() / 1000.0;
    let driver_row = window.used().map(DriverRow::oemputx);
    let table = accounting.table(Traffic {
        transactions,
        driver: driver_row.as_ref(),
        concurrency: Some(cfg.tasks),
        round_trip_us,
        rate_tps: rate,
    });
    let rounds = round_rows(cfg, outcome, window, accounting);
    let profile = stacks.map(|recorder| profile_of(recorder, table.as_ref(), transactions));
    let serving = table
        .as_ref()
        .filter(|_| cfg.check_serving)
        .and_then(|t| crate::serving::check(cfg, &t.processes, &t.groups));
    let silence = silence(cfg, outcome, consumers_before);
    Report::build(
        cfg,
        Measured {
            outcome,
            app_cpu: window.used(),
            app_cpu_source: source,
            table,
            accounting_error: accounting.error.clone(),
            rounds,
            profile,
            serving,
            silence,
        },
    )
}

/// A ladder's paced steps (they settle first) want their backlog; a plain run does not.
fn backlog_sampler(cfg: &RunConfig, controls: &Controls) -> Option<Backlog> {
    match (cfg.rate, cfg.length, cfg.settle) {
        (Some(rate), RunLength::Duration(d), Some(_)) => {
            Some(Backlog::new(rate, d, controls.progress_counters()))
        }
        _ => None,
    }
}

/// Where the driver's CPU figure comes from, in words.
fn driver_source(
    error: Option<&impl std::fmt::Display>,
    embedded: usize,
    profiled: bool,
) -> String {
    if let Some(e) = error {
        return format!("unavailable: {e}");
    }
    let less = match (embedded, profiled) {
        (0, false) => return "process CPU clock (ns, all threads)".to_string(),
        (0, true) => "--profile's thread".to_string(),
        (n, false) => format!("{n} embedded queue manager thread(s)"),
        (n, true) => format!("{n} embedded queue manager thread(s) and --profile's thread"),
    };
    format!("process CPU clock (ns) less {less}")
}

/// What the progress display needs of the run.
fn progress_settings(cfg: &RunConfig) -> ProgressSettings {
    ProgressSettings {
        bar: cfg.progress_bar,
        stats_interval: cfg.stats_interval,
        total: match cfg.length {
            RunLength::Count(n) => Some(n),
            RunLength::Duration(_) => None,
        },
        duration: match cfg.length {
            RunLength::Duration(d) => Some(d),
            RunLength::Count(_) => None,
        },
        in_flight: cfg.tasks * cfg.msgs_per_loop,
        pace: cfg.rate,
    }
}

/// perf, recording disabled, when the run is profiled.
fn start_stacks(cfg: &RunConfig) -> anyhow::Result<Option<crate::profiling::recorder::Recorder>> {
    if !cfg.sample_stacks {
        return Ok(None);
    }
    crate::profiling::recorder::Recorder::start()
        .map(Some)
        .map_err(|e| {
            if e.is_setup() {
                anyhow::Error::from(crate::config::bad("--profile", e.to_string()))
            } else {
                anyhow::anyhow!("--profile: {e}")
            }
        })
}

/// What perf sampled, attributed to the CPU table's processes and groups; why there is no
/// profile where one could not be made (a warning in the report, never an empty table).
fn profile_of(
    recorder: crate::profiling::recorder::Recorder,
    table: Option<&CpuTable>,
    transactions: u64,
) -> Result<crate::profiling::Profile, String> {
    if crate::signals::interrupted() {
        return Err("the run was interrupted before its stacks were read".to_string());
    }
    let (processes, groups) =
        table.map_or((&[][..], &[][..]), |t| (&t.processes[..], &t.groups[..]));
    recorder.finish(
        &crate::profiling::attribute::Rows { processes, groups },
        transactions,
    )
}

/// A run that got no reply at all although the broker counts consumers on its request
/// queue: what to add to its status (the transport's own likely cause where it knows one:
/// an AMQP 0-9-1 flow on the same RabbitMQ queue cannot read requests sent over AMQP 1.0).
fn silence(cfg: &RunConfig, outcome: &driver::Outcome, before: Option<u32>) -> Option<String> {
    use crate::driver::Status;
    let silent = matches!(
        outcome.status,
        Status::TimedOut | Status::StoppedAfterTimeouts
    ) && outcome.integrity.matched == 0;
    let n = before.filter(|n| *n > 0 && silent)?;
    let why = cfg.endpoint.kind().silent_consumers_hint().unwrap_or(
        "are they serving another run, replying elsewhere, or echoing the wrong correlation id?",
    );
    Some(format!(
        "the broker counted {n} consumer(s) on {} as the run began, yet none answered: {why}",
        cfg.request_queue
    ))
}

/// Each round's figures; with one round, the run's own table stands for it.
fn round_rows(
    cfg: &RunConfig,
    outcome: &driver::Outcome,
    driver_cpu: &DriverCpu,
    accounting: &Accounting,
) -> Vec<RoundRow> {
    let several = outcome.rounds.len() > 1;
    outcome
        .rounds
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let transactions = r.integrity.matched;
            let elapsed_s = r.elapsed.as_secs_f64();
            let rate_tps = if elapsed_s > 0.0 {
                transactions as f64 / elapsed_s
            } else {
                0.0
            };
            let round_trip_us = Latency::of(&r.round_trip_ns);
            let cpu = if several {
                driver_cpu.used_in(i)
            } else {
                driver_cpu.used()
            };
            let driver = cpu.map(DriverRow::oemputx);
            let traffic = Traffic {
                transactions,
                driver: driver.as_ref(),
                concurrency: Some(cfg.tasks),
                round_trip_us: round_trip_us.mean,
                rate_tps,
            };
            let table = if several {
                accounting.round_table(i, traffic)
            } else {
                accounting.table(traffic)
            };
            RoundRow {
                round: i + 1,
                transactions,
                elapsed_s,
                rate_tps,
                round_trip_us,
                app_cpu_us_per_tran: cpu
                    .filter(|_| transactions > 0)
                    .map(|d| d.as_secs_f64() * 1e6 / transactions as f64),
                captured_us_per_tran: table.as_ref().map(|t| t.captured_us_per_tran),
                corrected_us_per_tran: table.as_ref().and_then(|t| t.corrected_us_per_tran),
                groups: table
                    .map(|t| {
                        t.groups
                            .into_iter()
                            .map(|g| RoundGroup {
                                name: g.name,
                                total_us_per_tran: g.total_us_per_tran,
                                cost: g.cost,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunOptions;
    use crate::driver::Status;

    fn embedded(o: RunOptions) -> Report {
        let cfg = RunOptions {
            no_progress: true,
            ..o
        }
        .build()
        .expect("test config is valid");
        measure(&cfg, Arc::new(AtomicBool::new(false))).expect("embedded run")
    }

    #[test]
    fn a_run_in_rounds_has_a_row_per_round_that_adds_up_to_the_run() {
        let r = embedded(RunOptions {
            count: Some(600),
            rounds: 3,
            ..RunOptions::default()
        });
        // --count is each round's: three rounds of 600.
        assert_eq!(r.status, Status::Completed);
        assert_eq!(r.transactions, 1800);
        assert_eq!(r.rounds.len(), 3);
        let per_round: Vec<u64> = r.rounds.iter().map(|x| x.transactions).collect();
        assert_eq!(per_round, [600, 600, 600]);
        for (i, row) in r.rounds.iter().enumerate() {
            assert_eq!(row.round, i + 1);
            assert!(row.rate_tps > 0.0 && row.elapsed_s > 0.0, "{row:?}");
            // The driver's own CPU is measured per round, exactly (a thread clock).
            assert!(row.app_cpu_us_per_tran.is_some_and(|x| x > 0.0), "{row:?}");
        }
        assert!(r.rounds_summary.is_some());
    }

    #[test]
    fn a_single_round_run_reports_its_own_table_and_no_round_rows_to_summarise() {
        let r = embedded(RunOptions {
            count: Some(200),
            ..RunOptions::default()
        });
        assert_eq!(r.status, Status::Completed);
        assert_eq!(r.transactions, 200);
        assert!(r.rounds.len() <= 1, "{:?}", r.rounds.len());
    }
}
