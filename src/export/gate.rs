//! The gate's result rendered: the verdict table (text and Markdown), GitHub annotations,
//! JUnit XML, Bencher metric format and github-action-benchmark JSON.

use crate::export::cells;
use crate::gate::{Decision, Outcome, Verdict};

/// At most this many GitHub annotation lines (GitHub shows ten per step).
const MAX_ANNOTATIONS: usize = 10;

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", 100.0 * (x - 1.0))
    } else {
        "-".into()
    }
}

/// A p-value, or `-` where the rule has none (the history's prediction interval): "NaN" in
/// a table reads as a fault.
fn p(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        "-".into()
    }
}

/// An interval, or `-` where there is none.
fn interval(low: f64, high: f64) -> String {
    if low.is_finite() || high.is_finite() {
        format!("[{}, {}]", pct(low), pct(high))
    } else {
        "-".into()
    }
}

/// What the table's columns are, by the gate's mode.
fn legend(o: &Outcome) -> String {
    match (o.mode, &o.instruction_counts, o.baseline_runs) {
        (_, Some(_), _) => "(change = B vs A on the least-disturbed counts, + is worse; instructions)".to_string(),
        ("ab", ..) => "(baseline/current = the medians of A's and of B's rounds; change = B against A, the paired estimate over the blocks with each pair adjusted by the control, so it can differ from the medians' ratio; + is worse; µs/tran unless the metric is rate or GROUP:NAME, a figure beyond CPU per transaction)".to_string(),
        (_, None, Some(n)) if n >= crate::gate::history::MIN_RUNS => format!(
            "(change = this run vs the median of main's {n} runs, oriented so + is worse; the interval is where the change lies given their drift, and there is no p-value; rounds = main's runs / this run's rounds; µs/tran unless the metric is rate or GROUP:NAME, a figure beyond CPU per transaction)"
        ),
        _ => "(change = current vs baseline median, oriented so + is worse; µs/tran unless the metric is rate or GROUP:NAME, a figure beyond CPU per transaction)".to_string(),
    }
}

/// The verdict table as rows of cells.
pub fn rows(o: &Outcome) -> Vec<Vec<String>> {
    let levels: Vec<f64> = o.decisions.iter().map(|d| d.ci_level).collect();
    let ci = match levels.first() {
        Some(&l) if l.is_finite() && levels.iter().all(|&x| x == l) => {
            format!("{:.0}% CI", 100.0 * l)
        }
        _ => "CI".to_string(),
    };
    let mut out = vec![
        [
            "metric",
            "baseline",
            "current",
            "change",
            ci.as_str(),
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
            // Group names come from saved reports: anyone's text.
            super::for_terminal(&d.metric),
            format!("{:.2}", d.base_median),
            format!("{:.2}", d.current_median),
            pct(d.ratio),
            interval(d.ci_low, d.ci_high),
            p(d.p_value),
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

pub(crate) fn render_text(o: &Outcome) -> String {
    let mut s = format!(
        "oemputx gate: {} against baseline {}\n{}\n\n{}",
        o.current,
        o.baseline,
        legend(o),
        cells::text(&rows(o))
    );
    for (metric, note) in notes(o) {
        s.push_str(&format!("\n{}: {note}", super::for_terminal(metric)));
    }
    if let Some(q) = &o.sequential {
        s.push_str(&format!("\nSequential: {}", sequential_line(q)));
    }
    s.push_str(&format!("\n\nVerdict: {}\n", o.verdict.as_str()));
    let diff = &o.profile.profile_diff;
    if !diff.is_empty() {
        s.push_str(&format!("Most changed: {}\n", where_changed(o)));
        super::profile::diff_text(&mut s, diff, "A", "B");
    }
    s
}

/// How a sequential run went, in one line: why it stopped, its looks and blocks, the last
/// look's level and the time it was given.
fn sequential_line(q: &crate::gate::Sequential) -> String {
    let why = match q.stopped {
        "decided" => "decided".to_string(),
        "time" => "the time given ran out (the next block would not have fitted)".to_string(),
        "rounds" => format!("--max-rounds {} reached", q.max_rounds.unwrap_or_default()),
        "cap" => format!(
            "the {} rounds the gate takes at most were reached",
            crate::config::gate::MAX_AB_ROUNDS
        ),
        other => other.to_string(),
    };
    let level = q
        .looks
        .last()
        .map(|l| format!(", the last at {:.1}%", 100.0 * l.level))
        .unwrap_or_default();
    format!(
        "stopped: {why}; {} looks{level}, {} blocks of {} pairs in {:.0} s of the {:.0} s given ({:.1} s a block at the end); the plan was made again from the pace before every look, the error level spent over every look (repeated intervals, {:.0}% overall)",
        q.looks.len(),
        q.blocks,
        q.pairs_per_block,
        q.elapsed_s,
        q.max_time_s,
        q.seconds_per_block,
        100.0 * (1.0 - q.alpha)
    )
}

/// The three functions whose CPU per message changed most, `+4.10 µs/msg [..] in f (FLOW);
/// …`: the verdict's and the annotations' answer to "where".
pub(crate) fn where_changed(o: &Outcome) -> String {
    super::profile::top_changes(&o.profile.profile_diff, 3).join("; ")
}

pub(crate) fn render_markdown(o: &Outcome) -> String {
    let icon = match o.verdict {
        Verdict::Pass => "✅",
        Verdict::Improvement => "🚀",
        Verdict::Regression => "❌",
        Verdict::Inconclusive => "⚠️",
    };
    let mut s = format!(
        "### {icon} oemputx gate: {}\n\nBaseline {}, current {}.\n\n{}",
        o.verdict.as_str(),
        super::cells::markdown_code(&o.baseline),
        super::cells::markdown_code(&o.current),
        cells::markdown(&rows(o))
    );
    for (metric, note) in notes(o) {
        s.push_str(&format!("\n- **{metric}**: {note}"));
    }
    if let Some(q) = &o.sequential {
        s.push_str(&format!(
            "\n- *sequential*: {}",
            super::cells::markdown_text(&sequential_line(q))
        ));
    }
    s.push('\n');
    if !o.profile.profile_diff.is_empty() {
        s.push_str("\n**Where it changed** (--profile, self µs/msg, B − A with its 95 % interval from the rounds):\n\n");
        for line in super::profile::top_changes(&o.profile.profile_diff, 10) {
            s.push_str(&format!("- {}\n", super::cells::markdown_text(&line)));
        }
    }
    s
}

/// GitHub workflow commands: an error per regression, a warning per inconclusive metric.
pub(crate) fn render_github(o: &Outcome) -> String {
    let mut lines = Vec::new();
    for d in &o.decisions {
        let (kind, what) = match d.verdict {
            Verdict::Regression => ("error", "regression"),
            Verdict::Inconclusive => ("warning", "inconclusive"),
            _ => continue,
        };
        // The figure, its interval and the baseline first, the rule's note after: an
        // annotation read on its own says by how much, against what.
        let mut detail = format!("{} against {}", evidence(d), o.baseline);
        if let Some(note) = &d.note {
            detail.push_str(&format!("\n{note}"));
        }
        if !o.profile.profile_diff.is_empty() {
            detail.push_str(&format!("\nMost changed (--profile): {}", where_changed(o)));
        }
        lines.push(format!(
            "::{kind} title=oemputx gate {what}: {} {}::{}",
            super::for_github_property(&super::for_terminal(&d.metric)),
            pct(d.ratio).replace('%', "%25"),
            github_message(&super::for_terminal_lines(&detail))
        ));
    }
    lines.truncate(MAX_ANNOTATIONS);
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The figures behind a verdict, in one line: "829.15 -> 912.00 us/tran (+10.0%, 95% CI
/// [+6.1%, +13.9%], p=0.0002, tolerance 5.0%)".
fn evidence(d: &Decision) -> String {
    format!(
        "{:.2} -> {:.2} {} ({}, {:.0}% CI {}, p={}, tolerance {:.1}%)",
        d.base_median,
        d.current_median,
        d.unit,
        pct(d.ratio),
        100.0 * d.ci_level,
        interval(d.ci_low, d.ci_high),
        p(d.p_value),
        100.0 * d.tolerance
    )
}

type Xml = quick_xml::Writer<Vec<u8>>;

/// A JUnit document: the declaration, one `testsuite` named "oemputx gate" with `counts` as
/// its attributes, and what `cases` writes inside it. Writing into a Vec cannot fail.
fn junit_suite(counts: &[(&str, usize)], cases: impl FnOnce(&mut Xml)) -> String {
    use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, Event};
    let mut w = quick_xml::Writer::new_with_indent(Vec::new(), b' ', 2);
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let mut suite = BytesStart::new("testsuite");
    suite.push_attribute(("name", "oemputx gate"));
    for (k, n) in counts {
        suite.push_attribute((*k, n.to_string().as_str()));
    }
    let _ = w.write_event(Event::Start(suite));
    cases(&mut w);
    let _ = w.write_event(Event::End(BytesEnd::new("testsuite")));
    String::from_utf8_lossy(&w.into_inner()).into_owned() + "\n"
}

/// One `testcase` of the gate named `name`, holding what `body` writes.
fn junit_case(w: &mut Xml, name: &str, body: impl FnOnce(&mut Xml)) {
    use quick_xml::events::{BytesEnd, BytesStart, Event};
    let mut case = BytesStart::new("testcase");
    case.push_attribute(("classname", "oemputx.gate"));
    case.push_attribute(("name", super::for_xml(name).as_str()));
    let _ = w.write_event(Event::Start(case));
    body(w);
    let _ = w.write_event(Event::End(BytesEnd::new("testcase")));
}

/// An element holding text: `<tag attrs…>text</tag>`.
fn junit_text(w: &mut Xml, tag: &str, attrs: &[(&str, &str)], text: &str) {
    use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};
    let mut e = BytesStart::new(tag);
    for (k, v) in attrs {
        e.push_attribute((*k, super::for_xml(v).as_str()));
    }
    let _ = w.write_event(Event::Start(e));
    let text = super::for_xml(text);
    let _ = w.write_event(Event::Text(BytesText::new(&text)));
    let _ = w.write_event(Event::End(BytesEnd::new(tag)));
}

/// JUnit XML: one test case per metric, a failure per regression.
pub(crate) fn render_junit(o: &Outcome) -> String {
    use quick_xml::events::{BytesStart, Event};
    let failures = o
        .decisions
        .iter()
        .filter(|d| d.verdict == Verdict::Regression)
        .count();
    let counts = [("tests", o.decisions.len()), ("failures", failures)];
    junit_suite(&counts, |w| {
        for d in &o.decisions {
            junit_case(w, &d.metric, |w| {
                let message = super::for_xml(&format!(
                    "{} {}: {}",
                    d.metric,
                    d.verdict.as_str(),
                    evidence(d)
                ));
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
                        junit_text(w, "system-out", &[], &text);
                    }
                }
            });
        }
    })
}

/// A gate that decided nothing (its options refused, the run failed or was interrupted):
/// the Markdown for the step summary, naming why and the exit code.
pub(crate) fn render_failure_markdown(exit: i32, why: &str) -> String {
    format!(
        "### 🛑 oemputx gate: no verdict (exit {exit})\n\n```text\n{}\n```\n",
        why.replace("```", "'''")
    )
}

/// A workflow command's message as the runner reads it: `%`, CR and LF percent-encoded,
/// so that it stays one command on one line.
fn github_message(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// The same as a GitHub workflow command: one error annotation.
pub(crate) fn render_failure_github(exit: i32, why: &str) -> String {
    format!(
        "::error title=oemputx gate: no verdict (exit {exit})::{}\n",
        // A broker's words in the error: no escape sequence, and no line of its own.
        github_message(&super::for_terminal_lines(why))
    )
}

/// The same as JUnit XML: one test case in error, so that a CI's test report shows it.
pub(crate) fn render_failure_junit(exit: i32, why: &str) -> String {
    let counts = [("tests", 1), ("failures", 0), ("errors", 1)];
    junit_suite(&counts, |w| {
        junit_case(w, "gate", |w| {
            let first = why.lines().next().unwrap_or("no verdict");
            // Whatever a signal cut short (reading a baseline, the search, a bootstrap),
            // the test report says there is no verdict, as the summary does.
            let first = if exit == 130 && !first.contains("no verdict") {
                format!("no verdict (exit 130): {first}")
            } else {
                first.to_string()
            };
            let kind = if exit == 2 { "usage" } else { "failure" };
            junit_text(
                w,
                "error",
                &[("message", first.as_str()), ("type", kind)],
                why,
            );
        })
    })
}

/// A gate that passes for want of a baseline (the first run of a project, an evicted
/// cache), as Markdown: said, not silent.
pub(crate) fn render_skipped_markdown(why: &str) -> String {
    format!(
        "### ⚠️ oemputx gate: no baseline yet, passing\n\n```text\n{}\n```\n",
        why.replace("```", "'''")
    )
}

/// The same as a GitHub warning annotation, its text escaped as a workflow command's.
pub(crate) fn render_skipped_github(why: &str) -> String {
    format!(
        "::warning title=oemputx gate: no baseline::{}\n",
        github_message(why)
    )
}

/// The same as JUnit XML: one skipped test case, so that a CI's test report shows why.
pub(crate) fn render_skipped_junit(why: &str) -> String {
    let counts = [("tests", 1), ("failures", 0), ("errors", 0), ("skipped", 1)];
    junit_suite(&counts, |w| {
        junit_case(w, "gate", |w| {
            let first = why.lines().next().unwrap_or("no baseline");
            junit_text(w, "skipped", &[("message", first)], why);
        })
    })
}

/// Bencher Metric Format: the current run's medians, with their rounds' range.
pub(crate) fn render_bmf(o: &Outcome) -> anyhow::Result<String> {
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
pub(crate) fn render_gha(o: &Outcome) -> anyhow::Result<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::stored::decide;
    use crate::gate::tests::rounds;
    use crate::gate::{Worse, overall};

    /// What CI sees of an A/B gate the time ran out on: the annotation states the change,
    /// its interval and the note (why it is undecided, what it would take); the summary
    /// why the run stopped.
    #[test]
    fn an_undecided_ab_gate_says_in_its_annotation_and_summary_that_the_time_ran_out() {
        let note = "the interval [+1.0%, +5.0%] straddles +2.5% after 8 blocks, not decided within the time given (--max-time 5m; 296 s used, the next block would not have fitted)";
        let d = crate::gate::Decision::of("FLOW", "us/tran", &[100.0; 8], &[103.0; 8], 0.025)
            .interval(1.03, (1.01, 1.05), 0.95)
            .judged(Verdict::Inconclusive, Some(note.to_string()));
        let mut o = Outcome::of("ab", ("A: a".into(), "B: b".into()), vec![d]);
        o.sequential = Some(crate::gate::Sequential {
            method: "m",
            alpha: 0.1,
            max_time_s: 300.0,
            max_rounds: None,
            pairs_per_block: 4,
            blocks: 8,
            elapsed_s: 296.0,
            seconds_per_block: 37.0,
            stopped: "time",
            looks: Vec::new(),
        });
        let gh = render_github(&o);
        assert!(
            gh.starts_with("::warning title=oemputx gate inconclusive: FLOW +3.0"),
            "{gh}"
        );
        assert!(gh.contains("[+1.0%25, +5.0%25]"), "{gh}");
        assert!(gh.contains("not decided within the time given"), "{gh}");
        let md = render_markdown(&o);
        assert!(md.contains("stopped: the time given ran out"), "{md}");
        assert!(render_text(&o).contains("Sequential: stopped: the time given ran out"));
    }

    #[test]
    fn no_table_prints_nan_and_each_mode_says_what_change_is() {
        let mut d = decide("FLOW", &rounds(1.0), &rounds(1.0), 0.05, Worse::Higher);
        // The history's rule has an interval and no p-value; a metric may have neither.
        d.p_value = f64::NAN;
        let mut e = d.clone();
        e.metric = "DB".into();
        (e.ci_low, e.ci_high) = (f64::NAN, f64::NAN);
        let mut o = Outcome {
            schema: crate::gate::SCHEMA,
            mode: "ab",
            ab_rounds: None,
            sequential: None,
            baseline_runs: None,
            instruction_counts: None,
            profile: Default::default(),
            baseline: "A".into(),
            current: "B".into(),
            verdict: overall(&[d.clone()]),
            decisions: vec![d, e],
        };
        for text in [render_text(&o), render_markdown(&o), render_github(&o)] {
            assert!(!text.contains("NaN") && !text.contains("[-, -]"), "{text}");
        }
        assert!(
            render_text(&o).contains("the paired estimate"),
            "{}",
            render_text(&o)
        );
        o.mode = "stored";
        assert!(render_text(&o).contains("current vs baseline median"));
    }

    #[test]
    fn exports_carry_each_metric() {
        let decisions = vec![
            decide("FLOW", &rounds(1.0), &rounds(1.10), 0.05, Worse::Higher),
            decide("DRIVER", &rounds(1.0), &rounds(1.0), 0.05, Worse::Higher),
        ];
        let mut o = Outcome::of("stored", ("b.json".into(), "c.json".into()), decisions);
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
            gh.starts_with("::error title=oemputx gate regression: FLOW +"),
            "{gh}"
        );
        // The figure, its interval and the baseline it was judged against.
        assert!(
            gh.contains(" -> ")
                && gh.contains("CI [")
                && gh.contains(&format!("against {}", o.baseline)),
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
        // With a differential profile, the annotation says where, on a line of its own.
        let change = |f: &str, d: f64| crate::profiling::diff::FunctionChange {
            versus: None,
            group: "FLOW".into(),
            function: f.into(),
            module: "flow\n::error::x".into(),
            a_us_per_tran: 20.0,
            b_us_per_tran: 20.0 + d,
            change_us_per_tran: d,
            low_us_per_tran: Some(d - 1.0),
            high_us_per_tran: Some(d + 1.0),
            a_rounds: 8,
            b_rounds: 8,
        };
        o.profile.profile_diff = vec![change("xml_parse", 4.1), change("render", -0.5)];
        let gh = render_github(&o);
        assert_eq!(gh.lines().count(), 1, "{gh}");
        assert!(
            gh.contains("%0AMost changed (--profile): +4.10 µs/msg [+3.10, +5.10] in xml_parse (FLOW); -0.50"),
            "{gh}"
        );
        assert!(render_text(&o).contains("Most changed: +4.10 µs/msg"));
        assert!(render_markdown(&o).contains("| FLOW |"));
    }
}
