//! The headline of a run: the one sentence people forward — what a message costs, who
//! takes it, the capture ratio and the host's state — and the run's most important warning,
//! read off the report so that every format puts the same answer first.

use super::Report;
use serde::Serialize;

/// The headline: what every output of a run starts with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// The sentence, as the text, Markdown and HTML show it.
    pub text: String,
    /// CPU per message, µs: the corrected total, else the captured one, else the driver's.
    pub us_per_message: Option<f64>,
    /// Which of those it is: `corrected total`, `captured total`, or `driver only`.
    pub basis: &'static str,
    /// The largest groups' shares of the captured total, largest first (at most three).
    pub shares: Vec<Share>,
    pub capture_ratio: Option<f64>,
    /// `measured`, `fixed` or `not applied`.
    pub capture_ratio_source: Option<String>,
    /// `quiet`, `busy` or `contended`: other work on the host during the window.
    pub host_state: Option<&'static str>,
    /// The run's most important warning: an incomplete run's reason first, then the
    /// accounting's error, its first warning, noisy rounds.
    pub warning: Option<String>,
}

/// One group's share of the captured total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    pub group: String,
    pub pct: f64,
}

/// The groups a headline names.
const SHARES: usize = 3;

impl Headline {
    pub fn of(r: &Report) -> Headline {
        let (us_per_message, basis) = match (r.corrected_us_per_tran, r.captured_us_per_tran) {
            (Some(c), _) => (Some(c), "corrected total"),
            (None, Some(c)) => (Some(c), "captured total"),
            (None, None) => (r.app_cpu.us_per_tran, "driver only"),
        };
        let mut groups: Vec<&crate::accounting::GroupRow> =
            r.groups.iter().filter(|g| g.pct.is_finite()).collect();
        groups.sort_by(|a, b| b.pct.total_cmp(&a.pct));
        let shares: Vec<Share> = groups
            .iter()
            .take(SHARES)
            .map(|g| Share {
                group: g.name.clone(),
                pct: g.pct,
            })
            .collect();
        let ratio = r.capture_ratio.as_ref();
        let host_state = r
            .accounting
            .as_ref()
            .and_then(|a| a.host_load.as_ref())
            .map(|h| h.state.word());
        let mut h = Headline {
            text: String::new(),
            us_per_message,
            basis,
            shares,
            capture_ratio: ratio.map(|c| c.value),
            capture_ratio_source: ratio.map(|c| c.source.to_string()),
            host_state,
            warning: warning(r),
        };
        h.text = h.sentence();
        if let Some(breaks) = interruptions(&r.interruptions) {
            h.text.push(' ');
            h.text.push_str(&breaks);
        }
        h
    }

    fn sentence(&self) -> String {
        let mut s = match self.us_per_message {
            Some(us) => format!("One message costs {us:.2} µs of CPU ({})", self.basis),
            None => "No CPU per message: no transaction completed".to_string(),
        };
        if !self.shares.is_empty() {
            let parts: Vec<String> = self
                .shares
                .iter()
                .map(|g| format!("{} {:.0} %", g.group, g.pct))
                .collect();
            s.push_str(&format!(": {}", parts.join(", ")));
        }
        if let (Some(v), Some(src)) = (self.capture_ratio, &self.capture_ratio_source) {
            s.push_str(&format!("; capture ratio {v:.3} ({src})"));
        }
        if let Some(state) = self.host_state {
            s.push_str(&format!("; host {state}"));
        }
        s.push('.');
        s
    }
}

/// The run's broken connections in one sentence, e.g. "1 interruption: 412 ms without
/// replies, 3 requests lost."; with several, the longest outage ("up to"), since the tasks'
/// outages overlap in time; None when there were none.
pub fn interruptions(breaks: &[crate::driver::Interruption]) -> Option<String> {
    let t = crate::driver::InterruptionTotals::of(breaks)?;
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut s = format!(
        "{}: {}{:.0} ms without replies, {} lost",
        plural(t.interruptions as u64, "interruption", "interruptions"),
        if t.interruptions > 1 { "up to " } else { "" },
        t.longest_outage_ms,
        plural(t.lost, "request", "requests")
    );
    if t.late > 0 {
        s.push_str(&format!(", {} late", t.late));
    }
    if t.duplicated > 0 {
        s.push_str(&format!(", {} duplicated", t.duplicated));
    }
    if t.not_reconnected > 0 {
        s.push_str(&format!(
            "; {} not reconnected within --reconnect-for",
            t.not_reconnected
        ));
    }
    s.push('.');
    Some(s)
}

/// The warning a reader must not miss, if any.
fn warning(r: &Report) -> Option<String> {
    let a = r.accounting.as_ref();
    r.status_detail
        .clone()
        .filter(|_| r.status != crate::driver::Status::Completed)
        .or_else(|| a.and_then(|a| a.error.clone()))
        .or_else(|| a.and_then(|a| a.warnings.first().cloned()))
        .or_else(|| r.rounds_summary.as_ref().and_then(|s| s.noisy.clone()))
}
