//! `oemputx gate`: the CI regression gate on cost per message.
//!
//! For each metric (each group's total µs/tran, the corrected total, and optionally the rate
//! and the p99 round trip) it compares the rounds of a baseline report with the rounds of the
//! current one: the ratio of medians, its 95% bootstrap confidence interval, and a
//! Mann-Whitney U p-value (methods and references in [`crate::stats`]). The verdict:
//! - **regression** when p < 0.05 and the whole interval lies above 1 + tolerance;
//! - **improvement** when p < 0.05 and the whole interval lies below 1 − tolerance;
//! - **pass** when the interval's top is within 1 + tolerance;
//! - **inconclusive** otherwise (too few rounds, or an interval too wide), with what would
//!   make it conclusive.
//!
//! This is the shape of criterion.rs's change detection (a bootstrap interval checked against
//! a noise threshold, plus a significance test), applied to rounds of a real system rather
//! than to iterations of a function; gungraun's instruction counts would need no statistics
//! but cannot see the broker's or the database's CPU.

use crate::cli::GateArgs;
use crate::compare::{ReportFileError, Saved, differences};
use crate::config::ConfigError;
use crate::exit_codes::Exit;
use crate::report::{self, cells};
use crate::stats::{bootstrap_ratio_ci, mann_whitney_p, median};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Resamples for the bootstrap interval.
const RESAMPLES: usize = 10_000;
/// Significance level of the Mann-Whitney test.
const ALPHA: f64 = 0.05;
/// Fewer rounds than this on either side cannot give a verdict.
const MIN_ROUNDS: usize = 3;
/// At most this many GitHub annotation lines (GitHub shows ten per step).
const MAX_ANNOTATIONS: usize = 10;

/// A metric's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Improvement,
    Regression,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Improvement => "improvement",
            Verdict::Regression => "REGRESSION",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// Which way is worse for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    Higher,
    Lower,
}

/// One metric's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub metric: String,
    pub unit: &'static str,
    pub base_median: f64,
    pub current_median: f64,
    /// median(current) / median(base), oriented so that above 1 is worse.
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub p_value: f64,
    pub tolerance: f64,
    pub base_rounds: usize,
    pub current_rounds: usize,
    pub current_min: f64,
    pub current_max: f64,
    pub verdict: Verdict,
    /// Why it is inconclusive and what would settle it.
    pub note: Option<String>,
}

/// Decide one metric from its two samples (oriented: `worse` says which way is bad).
pub fn decide(
    metric: &str,
    base: &[f64],
    current: &[f64],
    tolerance: f64,
    worse: Worse,
) -> Decision {
    let unit = match metric {
        "rate" => "tps",
        _ => "us/tran",
    };
    // For the rate, lower is worse: compare base/current so that above 1 is worse throughout.
    let (num, den) = match worse {
        Worse::Higher => (current, base),
        Worse::Lower => (base, current),
    };
    let (bm, cm) = (median(base), median(current));
    let ratio = median(num) / median(den);
    let ci = bootstrap_ratio_ci(den, num, RESAMPLES);
    let p = mann_whitney_p(base, current);
    let (lo, hi) = ci.unwrap_or((f64::NAN, f64::NAN));
    let (cmin, cmax) = current
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let few = base.len().min(current.len());
    let (verdict, note) = if few < MIN_ROUNDS || ci.is_none() {
        (
            Verdict::Inconclusive,
            Some(format!(
                "too few rounds ({} baseline, {} current): run both with --rounds 5 or more",
                base.len(),
                current.len()
            )),
        )
    } else if p < ALPHA && lo > 1.0 + tolerance {
        (Verdict::Regression, None)
    } else if p < ALPHA && hi < 1.0 - tolerance {
        (Verdict::Improvement, None)
    } else if hi <= 1.0 + tolerance {
        (Verdict::Pass, None)
    } else {
        let why = if lo > 1.0 + tolerance {
            format!(
                "the interval lies above +{:.1}% but the rounds differ too little to be sure (p = {p:.3})",
                100.0 * tolerance
            )
        } else {
            format!(
                "the 95% interval [{:+.1}%, {:+.1}%] straddles the +{:.1}% tolerance",
                100.0 * (lo - 1.0),
                100.0 * (hi - 1.0),
                100.0 * tolerance
            )
        };
        (
            Verdict::Inconclusive,
            Some(format!(
                "{why}: more rounds (--rounds) or longer rounds (--count, --probe) narrow it"
            )),
        )
    };
    Decision {
        metric: metric.to_string(),
        unit,
        base_median: bm,
        current_median: cm,
        ratio,
        ci_low: lo,
        ci_high: hi,
        p_value: p,
        tolerance,
        base_rounds: base.len(),
        current_rounds: current.len(),
        current_min: cmin,
        current_max: cmax,
        verdict,
        note,
    }
}

/// A gate file: the default tolerance and per-metric ones (a metric named here is gated even
/// when it is not gated by default, e.g. `rate` or `p99`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateFile {
    pub tolerance: Option<String>,
    #[serde(default)]
    pub metrics: BTreeMap<String, String>,
}

/// `5%`, `0.05` or `5` (percent) → 0.05.
pub fn parse_tolerance(flag: &'static str, v: &str) -> Result<f64, ConfigError> {
    let t = v.trim();
    let (num, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let x: f64 = num.parse().map_err(|_| ConfigError::BadValue {
        flag,
        why: format!("'{v}' is not a tolerance; write e.g. 5% or 0.05"),
    })?;
    let x = if percent || x >= 1.0 { x / 100.0 } else { x };
    if !(0.0..1.0).contains(&x) {
        return Err(ConfigError::BadValue {
            flag,
            why: format!("'{v}' must be between 0% and 100%"),
        });
    }
    Ok(x)
}

/// The metrics to gate and their tolerances.
fn plan(args: &GateArgs, base: &Saved, current: &Saved) -> anyhow::Result<Vec<(String, f64)>> {
    let file: GateFile = match &args.gate_file {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| ConfigError::BadValue {
                flag: "--gate-file",
                why: format!("cannot read {}: {e}", p.display()),
            })?;
            toml::from_str(&text).map_err(|e| ConfigError::BadValue {
                flag: "--gate-file",
                why: format!("{}: {e}", p.display()),
            })?
        }
        None => GateFile::default(),
    };
    let default = match (&args.tolerance, &file.tolerance) {
        (Some(t), _) => parse_tolerance("--tolerance", t)?,
        (None, Some(t)) => parse_tolerance("--gate-file tolerance", t)?,
        (None, None) => 0.05,
    };
    let mut metrics: Vec<String> = base
        .group_names()
        .into_iter()
        .filter(|g| current.group_names().contains(g))
        .collect();
    // The corrected total when both runs have one, else the captured total.
    let total = if !base.samples("corrected").is_empty() && !current.samples("corrected").is_empty()
    {
        "corrected"
    } else {
        "captured"
    };
    if !base.samples(total).is_empty() {
        metrics.push(total.to_string());
    }
    for m in args.metric.iter().chain(file.metrics.keys()) {
        if !metrics.contains(m) {
            metrics.push(m.clone());
        }
    }
    metrics
        .into_iter()
        .map(|m| {
            let t = match file.metrics.get(&m) {
                Some(t) => parse_tolerance("--gate-file metrics", t)?,
                None => default,
            };
            Ok((m, t))
        })
        .collect()
}

/// What the gate found.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub baseline: String,
    pub current: String,
    pub decisions: Vec<Decision>,
    pub verdict: Verdict,
}

fn overall(decisions: &[Decision]) -> Verdict {
    let any = |v| decisions.iter().any(|d| d.verdict == v);
    if any(Verdict::Regression) {
        Verdict::Regression
    } else if any(Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else if any(Verdict::Improvement) {
        Verdict::Improvement
    } else {
        Verdict::Pass
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", 100.0 * (x - 1.0))
    } else {
        "-".into()
    }
}

/// The verdict table as rows of cells.
pub fn rows(o: &Outcome) -> Vec<Vec<String>> {
    let mut out = vec![
        [
            "metric",
            "baseline",
            "current",
            "change",
            "95% CI",
            "p",
            "tolerance",
            "rounds",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for d in &o.decisions {
        out.push(vec![
            d.metric.clone(),
            format!("{:.2}", d.base_median),
            format!("{:.2}", d.current_median),
            pct(d.ratio),
            format!("[{}, {}]", pct(d.ci_low), pct(d.ci_high)),
            format!("{:.4}", d.p_value),
            format!("{:.1}%", 100.0 * d.tolerance),
            format!("{}/{}", d.base_rounds, d.current_rounds),
            d.verdict.as_str().to_string(),
        ]);
    }
    out
}

/// The metrics that carry a note (why inconclusive), with the note.
fn notes(o: &Outcome) -> impl Iterator<Item = (&str, &str)> {
    o.decisions
        .iter()
        .filter_map(|d| d.note.as_deref().map(|n| (d.metric.as_str(), n)))
}

fn render_text(o: &Outcome) -> String {
    let mut s = format!(
        "oemputx gate: {} against baseline {}\n(change = current vs baseline median, oriented so + is worse; µs/tran unless the metric is rate)\n\n{}",
        o.current,
        o.baseline,
        cells::text(&rows(o))
    );
    for (metric, note) in notes(o) {
        s.push_str(&format!("\n{metric}: {note}"));
    }
    s.push_str(&format!("\n\nVerdict: {}\n", o.verdict.as_str()));
    s
}

fn render_markdown(o: &Outcome) -> String {
    let icon = match o.verdict {
        Verdict::Pass => "✅",
        Verdict::Improvement => "🚀",
        Verdict::Regression => "❌",
        Verdict::Inconclusive => "⚠️",
    };
    let mut s = format!(
        "### {icon} oemputx gate: {}\n\nBaseline `{}`, current `{}`.\n\n{}",
        o.verdict.as_str(),
        o.baseline,
        o.current,
        cells::markdown(&rows(o))
    );
    for (metric, note) in notes(o) {
        s.push_str(&format!("\n- **{metric}**: {note}"));
    }
    s.push('\n');
    s
}

/// GitHub workflow commands: an error per regression, a warning per inconclusive metric.
fn render_github(o: &Outcome) -> String {
    let mut lines = Vec::new();
    for d in &o.decisions {
        let (kind, what) = match d.verdict {
            Verdict::Regression => ("error", "regression"),
            Verdict::Inconclusive => ("warning", "inconclusive"),
            _ => continue,
        };
        let detail = d.note.clone().unwrap_or_else(|| evidence(d));
        lines.push(format!(
            "::{kind} title=oemputx gate {what}: {}::{}",
            d.metric,
            detail.replace('%', "%25").replace('\n', "%0A")
        ));
    }
    lines.truncate(MAX_ANNOTATIONS);
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The figures behind a verdict, in one line: "829.15 -> 912.00 us/tran (+10.0%, 95% CI
/// [+6.1%, +13.9%], p=0.0002, tolerance 5.0%)".
fn evidence(d: &Decision) -> String {
    format!(
        "{:.2} -> {:.2} {} ({}, 95% CI [{}, {}], p={:.4}, tolerance {:.1}%)",
        d.base_median,
        d.current_median,
        d.unit,
        pct(d.ratio),
        pct(d.ci_low),
        pct(d.ci_high),
        d.p_value,
        100.0 * d.tolerance
    )
}

/// JUnit XML: one test case per metric, a failure per regression.
fn render_junit(o: &Outcome) -> String {
    use quick_xml::Writer;
    use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let failures = o
        .decisions
        .iter()
        .filter(|d| d.verdict == Verdict::Regression)
        .count();
    // Writing into a Vec cannot fail.
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let mut suite = BytesStart::new("testsuite");
    suite.push_attribute(("name", "oemputx gate"));
    suite.push_attribute(("tests", o.decisions.len().to_string().as_str()));
    suite.push_attribute(("failures", failures.to_string().as_str()));
    let _ = w.write_event(Event::Start(suite));
    for d in &o.decisions {
        let mut case = BytesStart::new("testcase");
        case.push_attribute(("classname", "oemputx.gate"));
        case.push_attribute(("name", d.metric.as_str()));
        let _ = w.write_event(Event::Start(case));
        let message = format!("{} {}: {}", d.metric, d.verdict.as_str(), evidence(d));
        match d.verdict {
            Verdict::Regression => {
                let mut f = BytesStart::new("failure");
                f.push_attribute(("message", message.as_str()));
                f.push_attribute(("type", "regression"));
                let _ = w.write_event(Event::Empty(f));
            }
            _ => {
                let text = match &d.note {
                    Some(n) => format!("{message}\n{n}"),
                    None => message,
                };
                let _ = w.write_event(Event::Start(BytesStart::new("system-out")));
                let _ = w.write_event(Event::Text(BytesText::new(&text)));
                let _ = w.write_event(Event::End(BytesEnd::new("system-out")));
            }
        }
        let _ = w.write_event(Event::End(BytesEnd::new("testcase")));
    }
    let _ = w.write_event(Event::End(BytesEnd::new("testsuite")));
    String::from_utf8_lossy(&w.into_inner()).into_owned() + "\n"
}

/// Bencher Metric Format: the current run's medians, with their rounds' range.
fn render_bmf(o: &Outcome) -> anyhow::Result<String> {
    let mut m = serde_json::Map::new();
    for d in &o.decisions {
        let measure = if d.unit == "tps" {
            "throughput"
        } else {
            "cpu_us_per_tran"
        };
        m.insert(
            format!("oemputx::{}", d.metric),
            serde_json::json!({ measure: {
                "value": d.current_median,
                "lower_value": d.current_min,
                "upper_value": d.current_max,
            }}),
        );
    }
    Ok(serde_json::to_string_pretty(&m)? + "\n")
}

/// github-action-benchmark's customSmallerIsBetter: every metric where smaller is better
/// (the rate is left out: it is bigger-is-better).
fn render_gha(o: &Outcome) -> anyhow::Result<String> {
    let v: Vec<serde_json::Value> = o
        .decisions
        .iter()
        .filter(|d| d.unit != "tps")
        .map(|d| {
            serde_json::json!({
                "name": format!("oemputx {}", d.metric),
                "unit": d.unit,
                "value": d.current_median,
                "range": format!("{:.2}-{:.2}", d.current_min, d.current_max),
                "extra": format!("{} rounds; {} vs baseline ({})", d.current_rounds, pct(d.ratio), d.verdict.as_str()),
            })
        })
        .collect();
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// The exit code of a verdict.
pub fn exit_of(v: Verdict, strict: bool) -> Exit {
    match v {
        Verdict::Pass | Verdict::Improvement => Exit::Ok,
        Verdict::Regression => Exit::Regression,
        Verdict::Inconclusive if strict => Exit::Inconclusive,
        Verdict::Inconclusive => Exit::Ok,
    }
}

/// `oemputx gate`.
pub fn run(args: &GateArgs, interrupt: Arc<AtomicBool>) -> anyhow::Result<Exit> {
    if args.current.is_some() != args.run.is_empty() {
        return Err(ConfigError::BadValue {
            flag: "--current",
            why: "give either --current REPORT.json or, after --, the run options to measure now"
                .into(),
        }
        .into());
    }
    let base = match Saved::load(&args.baseline) {
        Ok(b) => b,
        Err(ReportFileError::Unreadable { why, .. }) if !args.baseline.exists() => {
            let msg = format!(
                "no baseline at {} ({why}); make one on main with --save-baseline {}",
                args.baseline.display(),
                args.baseline.display()
            );
            if args.strict {
                eprintln!("Error: {msg}");
                return Ok(Exit::Inconclusive);
            }
            eprintln!("Warning: {msg}; the gate passes without one (use --strict to fail)");
            if args.github {
                println!("::warning title=oemputx gate::{}", msg.replace('%', "%25"));
            }
            return Ok(Exit::Ok);
        }
        Err(e) => return Err(e.into()),
    };
    let current = match (&args.current, args.run.is_empty()) {
        (Some(p), _) => Saved::load(p)?,
        (None, _) => {
            let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(
                std::iter::once("oemputx".to_string()).chain(args.run.clone()),
            )?;
            let cfg = crate::config::Config::from_args(&cli.run)?;
            let report = crate::run::measure(&cfg, interrupt)?;
            crate::run::export(&cfg, &report)?;
            if report.status != crate::driver::Status::Completed {
                anyhow::bail!(
                    "the run did not complete ({:?}), so there is nothing to gate",
                    report.status
                );
            }
            Saved {
                path: "this run".into(),
                json: serde_json::to_value(&report).context("encoding the run's report")?,
            }
        }
    };
    let diffs = differences(&base, &current, true);
    if !diffs.is_empty() && !args.force {
        return Err(ReportFileError::Differs(diffs).into());
    }
    let metrics = plan(args, &base, &current)?;
    let decisions: Vec<Decision> = metrics
        .iter()
        .map(|(m, t)| {
            let worse = if m == "rate" {
                Worse::Lower
            } else {
                Worse::Higher
            };
            decide(m, &base.samples(m), &current.samples(m), *t, worse)
        })
        .collect();
    if decisions.is_empty() {
        return Err(ConfigError::BadValue {
            flag: "--baseline",
            why: "the reports share no metric to gate (no groups, no CPU totals)".into(),
        }
        .into());
    }
    let outcome = Outcome {
        baseline: base.name(),
        current: current.name(),
        verdict: overall(&decisions),
        decisions,
    };
    let text = render_text(&outcome);
    print!("{text}");
    if args.github {
        print!("{}", render_github(&outcome));
    }
    let write = |path: &Path, what: &str, body: &str| {
        report::write_output(path, &format!("the gate's {what}"), body)
    };
    if let Some(p) = &args.export_markdown {
        write(p, "Markdown", &render_markdown(&outcome))?;
    }
    if let Some(p) = &args.export_junit {
        write(p, "JUnit XML", &render_junit(&outcome))?;
    }
    if let Some(p) = &args.export_bmf {
        write(p, "Bencher metrics", &render_bmf(&outcome)?)?;
    }
    if let Some(p) = &args.export_gha {
        write(p, "github-action-benchmark JSON", &render_gha(&outcome)?)?;
    }
    if let Some(p) = &args.export_json {
        let json = serde_json::to_string_pretty(&outcome)?;
        write(p, "JSON", &json)?;
    }
    if outcome.verdict == Verdict::Inconclusive {
        eprintln!(
            "Warning: the gate is inconclusive (see the notes above){}",
            if args.strict {
                ""
            } else {
                "; passing (use --strict to fail)"
            }
        );
    }
    Ok(exit_of(outcome.verdict, args.strict))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten rounds around 100 with a realistic ±1.5% spread.
    fn rounds(scale: f64) -> Vec<f64> {
        [
            100.0, 101.2, 98.9, 100.4, 99.6, 101.5, 98.5, 100.1, 99.8, 100.9,
        ]
        .iter()
        .map(|x| x * scale)
        .collect()
    }

    fn verdict(base: &[f64], cur: &[f64]) -> Verdict {
        decide("FLOW", base, cur, 0.05, Worse::Higher).verdict
    }

    #[test]
    fn identical_samples_pass() {
        assert_eq!(verdict(&rounds(1.0), &rounds(1.0)), Verdict::Pass);
    }

    #[test]
    fn a_three_percent_shift_is_within_a_five_percent_tolerance() {
        let d = decide("FLOW", &rounds(1.0), &rounds(1.03), 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Pass, "{d:?}");
        assert!(d.p_value < 0.05, "the shift is real, only small: {d:?}");
    }

    #[test]
    fn a_ten_percent_shift_is_a_regression_and_its_mirror_an_improvement() {
        let d = decide("FLOW", &rounds(1.0), &rounds(1.10), 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        assert!(d.ci_low > 1.05);
        assert_eq!(verdict(&rounds(1.0), &rounds(0.88)), Verdict::Improvement);
        // For the rate, lower is worse.
        let r = decide("rate", &rounds(1.0), &rounds(0.88), 0.05, Worse::Lower);
        assert_eq!(r.verdict, Verdict::Regression, "{r:?}");
    }

    #[test]
    fn one_wild_outlier_does_not_make_a_regression() {
        let mut cur = rounds(1.0);
        cur[3] = 250.0;
        assert_eq!(verdict(&rounds(1.0), &cur), Verdict::Pass);
    }

    #[test]
    fn too_few_rounds_are_inconclusive_and_say_what_to_do() {
        let d = decide("FLOW", &[100.0], &[120.0], 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(d.note.as_deref().unwrap_or("").contains("--rounds 5"));
    }

    #[test]
    fn a_spread_too_wide_is_inconclusive() {
        let base = [100.0, 60.0, 140.0, 80.0, 120.0];
        let cur = [104.0, 64.0, 150.0, 84.0, 125.0];
        let d = decide("FLOW", &base, &cur, 0.05, Worse::Higher);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        assert!(d.note.as_deref().unwrap_or("").contains("more rounds"));
    }

    #[test]
    fn tolerances_parse_as_percent_or_fraction() {
        assert_eq!(parse_tolerance("--tolerance", "5%").ok(), Some(0.05));
        assert_eq!(parse_tolerance("--tolerance", "0.05").ok(), Some(0.05));
        assert_eq!(parse_tolerance("--tolerance", "5").ok(), Some(0.05));
        assert!(parse_tolerance("--tolerance", "x").is_err());
        assert!(parse_tolerance("--tolerance", "150%").is_err());
    }

    #[test]
    fn exports_carry_each_metric() {
        let decisions = vec![
            decide("FLOW", &rounds(1.0), &rounds(1.10), 0.05, Worse::Higher),
            decide("DRIVER", &rounds(1.0), &rounds(1.0), 0.05, Worse::Higher),
        ];
        let o = Outcome {
            baseline: "b.json".into(),
            current: "c.json".into(),
            verdict: overall(&decisions),
            decisions,
        };
        assert_eq!(o.verdict, Verdict::Regression);
        let junit = render_junit(&o);
        assert!(junit.contains(r#"tests="2" failures="1""#), "{junit}");
        assert!(
            junit.contains(r#"<failure message="FLOW REGRESSION"#),
            "{junit}"
        );
        let gh = render_github(&o);
        assert_eq!(gh.lines().count(), 1);
        assert!(
            gh.starts_with("::error title=oemputx gate regression: FLOW::"),
            "{gh}"
        );
        let bmf: serde_json::Value =
            serde_json::from_str(&render_bmf(&o).expect("bmf")).expect("json");
        assert!(
            bmf["oemputx::FLOW"]["cpu_us_per_tran"]["value"]
                .as_f64()
                .is_some()
        );
        let gha: serde_json::Value =
            serde_json::from_str(&render_gha(&o).expect("gha")).expect("json");
        assert_eq!(gha[0]["name"], "oemputx FLOW");
        assert_eq!(gha[0]["unit"], "us/tran");
        assert!(render_markdown(&o).contains("| FLOW |"));
    }
}
