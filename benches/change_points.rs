//! The change points' error rates on simulated histories (`src/gate/change_points/sim.rs`):
//! for main's runs with lognormal noise of 1–5 % CV, how many flat histories report a step
//! that is not there, and how often a step of +5 %, +10 % or +20 % at run 15 of 30 is
//! found within one run of where it is (and how often a step is reported more than a run
//! away: placed wrong, or one more besides it).
//!
//!   cargo bench --bench change_points -- [SERIES]        (default 1000 of each kind)
//!
//! Deterministic: the same numbers every time. docs/gate.md quotes the table.

use oemputx::gate::change_points::sim::{Scenario, rates};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Under `cargo test --all-targets` (no --bench): a few series that keep this file working.
    let smoke = !args.iter().any(|a| a == "--bench");
    let trials: usize = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(if smoke { 5 } else { 1000 });
    if smoke {
        println!("smoke run (no --bench): the figures below are not a measurement");
    }
    println!(
        "e-divisive means, p <= {} over {} permutations, {} runs either side at least",
        oemputx::gate::change_points::ALPHA,
        oemputx::gate::change_points::PERMUTATIONS,
        oemputx::gate::change_points::MIN_SEGMENT
    );
    println!(
        "| runs | CV | step at 15 | flat: false step | step found within ±1 | a step > 1 run away |"
    );
    println!("|---|---|---|---|---|---|");
    for cv in [0.01, 0.02, 0.03, 0.05] {
        for step in [0.05, 0.10, 0.20] {
            let r = rates(&Scenario {
                trials,
                runs: 30,
                cv,
                at: 15,
                step,
                seed: 0x0063_7074_7331,
            });
            let pct = |k: usize| 100.0 * k as f64 / trials as f64;
            println!(
                "| 30 | {:.0} % | {:+.0} % | {} of {trials} ({:.1} %) | {} ({:.1} %) | {} ({:.1} %) |",
                100.0 * cv,
                100.0 * step,
                r.false_alarms,
                pct(r.false_alarms),
                r.found_within_one,
                pct(r.found_within_one),
                r.extra,
                pct(r.extra)
            );
        }
    }
}
