//! The experiment engine's error rates on simulated runs (`src/experiment/sim.rs`): for 2
//! and 5 arms, under the noise measured on this kind of machine and with its drift, its
//! bursts and the restart's cost taken one at a time, how many A/A runs call a difference that is not there,
//! and how often a +3 % and a +5 % change are found.
//!
//!   cargo bench --bench experiment -- [RUNS]        (default 1000 per configuration)
//!
//! Deterministic: the same numbers every time. docs/sweep-compare.md quotes the table.

use oemputx::experiment::Rule;
use oemputx::experiment::sim::{Case, Noise, false_verdicts, tally};

fn case(arms: usize, effect: f64, noise: Noise, rule: Rule) -> Case {
    let mut effects = vec![0.0; arms];
    if arms > 1 {
        effects[1] = effect;
    }
    Case {
        arms,
        effects,
        noise,
        rule,
        cycles_per_block: 2,
        max_blocks: 24,
        alpha: 0.10,
        control: true,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Under `cargo test --all-targets` (no --bench): a few runs that keep this file working.
    let smoke = !args.iter().any(|a| a == "--bench");
    let runs: u64 = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(if smoke { 10 } else { 1000 });
    if smoke {
        println!("smoke run (no --bench): the figures below are not a measurement");
    }
    let measured = Noise::measured();
    let calm = Noise::calm();
    let noises = [
        ("calm (no drift, no bursts, no restart cost)", calm),
        (
            "drift",
            Noise {
                drift: measured.drift,
                ..calm
            },
        ),
        (
            "bursts",
            Noise {
                outlier_p: measured.outlier_p,
                ..calm
            },
        ),
        (
            "restart cost (first round of a block)",
            Noise {
                restart: measured.restart,
                restart_control: measured.restart_control,
                ..calm
            },
        ),
        ("all of them (as measured)", measured),
    ];
    let rules = [
        (
            "difference, min effect 1%",
            Rule::Difference { min_effect: 0.01 },
        ),
        ("gate, tolerance 2.5%", Rule::Gate { tolerance: 0.025 }),
    ];
    println!(
        "{runs} simulated runs per row; blocks of 2 cycles, at most 24 blocks, alpha 10% (Bonferroni over contrasts), control variate on"
    );
    println!(
        "| arms | rule | noise | A/A false verdicts | +3%: found (worse) | +5%: found (worse) |"
    );
    println!("|---:|---|---|---:|---:|---:|");
    for arms in [2, 5] {
        for (rname, rule) in rules {
            for (nname, noise) in noises {
                let aa = false_verdicts(&case(arms, 0.0, noise, rule), runs, 0x5eed);
                let found = |e: f64| tally(&case(arms, e, noise, rule), runs, 0xfeed)[0][0];
                println!(
                    "| {arms} | {rname} | {nname} | {aa} ({:.1}%) | {:.1}% | {:.1}% |",
                    100.0 * aa as f64 / runs as f64,
                    100.0 * found(0.03) as f64 / runs as f64,
                    100.0 * found(0.05) as f64 / runs as f64,
                );
            }
        }
    }
}
