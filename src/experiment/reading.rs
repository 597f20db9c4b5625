//! What an outcome under the difference rule says, in the words `compare` and `sweep` share
//! (one function, so that the two cannot drift apart again).
//!
//! **Why.** Both printed "no difference at this precision" for every undecided change,
//! whatever its interval: a sweep whose N = 4 captured ratio was 1.025 [1.013, 1.036] —
//! wholly above 1, and reaching past its own 2 % minimum effect — read "no difference". The
//! rule ([`super::sequential::judge`]) has three outcomes, and the words now follow it:
//!
//! - a difference (`worse`/`better`, in the caller's terms) when the whole interval lies
//!   beyond +δ or −δ;
//! - **no difference** only when the whole interval lies within ±δ;
//! - **inconclusive** otherwise, saying why: the interval straddles +δ or −δ (it allows no
//!   difference and a difference of δ alike), reaches past both, or was never judged (a
//!   run cut short before the first look).
//!
//! "Inconclusive" is the A/B gate's verdict for its own straddling interval; compare's
//! table said "unresolved" for the same case, and now says "inconclusive" too.

use super::{FIRST_LOOK, Finding, Outcome};

/// The word for a finding under the difference rule: more, less, same or inconclusive.
pub fn word(f: Option<Finding>) -> &'static str {
    match f {
        Some(Finding::Worse) => "more",
        Some(Finding::Better) => "less",
        Some(Finding::Within) => "same",
        None => "inconclusive",
    }
}

/// What `o` allows, in words: `worse` and `better` name a difference beyond the minimum
/// effect in the caller's terms ("costs more", "processes are slower").
pub fn difference(o: &Outcome, worse: &str, better: &str) -> String {
    let d = 100.0 * o.rule.threshold();
    match o.finding {
        Some(Finding::Worse) => format!("{worse} (the whole interval beyond +{d:.1}%)"),
        Some(Finding::Better) => format!("{better} (the whole interval beyond -{d:.1}%)"),
        Some(Finding::Within) => {
            format!("no difference as large as {d:.1}% (the whole interval within ±{d:.1}%)")
        }
        None => format!("inconclusive: {}", why_undecided(o, worse, better)),
    }
}

/// Why an outcome has no finding: which edge of ±δ its interval straddles, or why it was
/// not judged.
fn why_undecided(o: &Outcome, worse: &str, better: &str) -> String {
    let d = 100.0 * o.rule.threshold();
    let Some(i) = o.interval else {
        return format!("{} blocks give no interval", o.blocks);
    };
    if !o.looked {
        return format!(
            "not judged: stopped after {} blocks, before the first look (after {FIRST_LOOK})",
            o.blocks
        );
    }
    let precise = if o.precise {
        "as narrow as asked, yet "
    } else {
        ""
    };
    let t = o.rule.threshold();
    match (i.high > 1.0 + t, i.low < 1.0 - t) {
        (true, true) => format!(
            "{precise}the interval reaches past both -{d:.1}% and +{d:.1}%: too wide to tell"
        ),
        (true, false) => format!(
            "{precise}the interval straddles the {d:.1}% minimum effect towards \"{worse}\": it allows no difference and one beyond {d:.1}% alike"
        ),
        (false, true) => format!(
            "{precise}the interval straddles the {d:.1}% minimum effect towards \"{better}\": it allows no difference and one beyond {d:.1}% alike"
        ),
        // Not the rule's case (an interval within ±δ is a finding); said as it is.
        (false, false) => format!("{precise}not decided at the last look"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Rule;
    use crate::experiment::sequential::{PairedInterval, judge};

    /// An outcome as the engine gives it after a look, judged by the rule itself (δ = 2 %).
    fn judged(low: f64, high: f64) -> Outcome {
        let rule = Rule::Difference { min_effect: 0.02 };
        let interval = PairedInterval {
            ratio: (low * high).sqrt(),
            low,
            high,
            sd_log: 0.01,
            pairs: 12,
            z: 2.5,
        };
        Outcome {
            contrast: 0,
            metric: 0,
            finding: judge(&interval, rule),
            rule,
            interval: Some(interval),
            level: 0.98,
            decided_after: None,
            precise: false,
            looked: true,
            unadjusted_ratio: Some(interval.ratio),
            slope: None,
            blocks: 12,
            skipped: 0,
            p_value: 0.5,
        }
    }

    fn read(o: &Outcome) -> String {
        difference(o, "costs more", "costs less")
    }

    #[test]
    fn no_difference_only_when_the_whole_interval_lies_within_the_minimum_effect() {
        let o = judged(0.985, 1.019);
        assert_eq!(o.finding, Some(Finding::Within));
        assert_eq!(word(o.finding), "same");
        assert!(
            read(&o).starts_with("no difference as large as 2.0%"),
            "{}",
            read(&o)
        );
    }

    #[test]
    fn an_interval_that_straddles_the_minimum_effect_is_inconclusive_and_says_which_edge() {
        // The sweep that read "no difference": N=4 captured 1.025 [1.013, 1.036] at 2 %.
        let o = judged(1.013, 1.036);
        assert_eq!(o.finding, None);
        assert_eq!(word(o.finding), "inconclusive");
        let r = read(&o);
        assert!(r.starts_with("inconclusive: "), "{r}");
        assert!(
            r.contains("straddles the 2.0% minimum effect towards \"costs more\""),
            "{r}"
        );
        assert!(!r.contains("no difference as large"), "{r}");
        let below = read(&judged(0.97, 0.99));
        assert!(below.contains("towards \"costs less\""), "{below}");
        let wide = read(&judged(0.95, 1.05));
        assert!(wide.contains("reaches past both -2.0% and +2.0%"), "{wide}");
    }

    #[test]
    fn a_difference_is_called_only_when_the_whole_interval_lies_beyond_it() {
        let more = judged(1.021, 1.06);
        assert_eq!(
            (more.finding, word(more.finding)),
            (Some(Finding::Worse), "more")
        );
        assert!(read(&more).starts_with("costs more (the whole interval beyond +2.0%)"));
        let less = judged(0.94, 0.979);
        assert_eq!(
            (less.finding, word(less.finding)),
            (Some(Finding::Better), "less")
        );
        assert!(read(&less).starts_with("costs less"));
    }

    #[test]
    fn a_run_cut_short_before_the_first_look_is_not_judged_and_says_so() {
        let mut o = judged(1.03, 1.08);
        o.finding = None;
        o.looked = false;
        o.blocks = 2;
        let r = read(&o);
        assert_eq!(
            r,
            "inconclusive: not judged: stopped after 2 blocks, before the first look (after 8)"
        );
        o.interval = None;
        assert_eq!(read(&o), "inconclusive: 2 blocks give no interval");
    }

    #[test]
    fn a_sweep_stopped_at_its_precision_says_it_still_straddles() {
        let mut o = judged(1.005, 1.03);
        o.precise = true;
        let r = read(&o);
        assert!(
            r.starts_with("inconclusive: as narrow as asked, yet the interval straddles"),
            "{r}"
        );
    }
}
