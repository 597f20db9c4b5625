//! One way to compare: k arms measured in interleaved rounds, judged on paired log-ratios
//! with repeated confidence intervals. Pure code — the glue that starts flows and measures
//! rounds ([`crate::interleave`]) feeds it figures; the A/B gate, `compare`, `sweep` and
//! `matrix` are its uses.
//!
//! **Why.** One window's accounting is exact, but the cost of an unchanged flow moves
//! between windows minutes apart by more than the effects users look for (docs/history.md:
//! a stored baseline called an unchanged build +17.8 %). Measuring every arm in the same
//! stretch of time, in a balanced order, cancels that drift; what is left is judged on
//! pairs.
//!
//! **How.** A *cycle* measures every arm once, in the order [`order::williams`] gives it
//! (ABBA for two arms). For each *contrast* (arm `other` against arm `base`) and metric, a
//! cycle gives one pair d = ln(other ÷ base), oriented so that above 0 is worse, less β
//! times the same pair's ln(other ÷ base) of the control group (a control variate,
//! [`control`]). A *block* is some cycles on the same flow processes; the glue restarts the
//! flows between blocks so that a process's lasting bias becomes noise, and each block's
//! mean is one independent observation. From the eighth block on, every block is a *look*:
//! the Hodges–Lehmann estimate of the observations' centre with the signed-rank interval at
//! the level of a group-sequential boundary ([`sequential`]), α split evenly over the
//! contrasts (Bonferroni), so that all the intervals of a run cover the true ratios
//! together with probability 1 − α however it stops.
//!
//! **Findings.** Under [`Rule::Gate`] (tolerance t): worse when the whole interval lies
//! above 1 + t, better when it lies below 1 − t, within when its top is at most 1 + t.
//! Under [`Rule::Difference`] (minimum effect δ): worse or better beyond ±δ, within when the
//! whole interval lies inside ±δ; otherwise inconclusive (the interval straddles ±δ), and
//! never "no difference" ([`reading`] words the three cases for compare and sweep alike).
//! A metric's `floor` (µs/tran) widens t or δ to floor ÷ the base arm's median, so that a
//! change of 0.05 µs in a group that costs 0.01 µs is never reported.

pub mod control;
pub mod order;
pub mod reading;
pub mod sequential;
pub mod sim;

use control::Pair;
use sequential::{Boundary, PairedInterval, Spending, judge, paired_interval};

/// The fewest blocks before the first look ([`sequential::FIRST_LOOK`]).
pub use sequential::FIRST_LOOK;

/// How a metric of a contrast is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// The gate's: is the change beyond the tolerance (a regression)?
    Gate { tolerance: f64 },
    /// compare's and sweep's: is there a difference of at least `min_effect`?
    Difference { min_effect: f64 },
}

impl Rule {
    /// The rule's threshold as a fraction (tolerance or minimum effect).
    pub(crate) fn threshold(self) -> f64 {
        match self {
            Rule::Gate { tolerance } => tolerance,
            Rule::Difference { min_effect } => min_effect,
        }
    }

    fn widened(self, to: f64) -> Rule {
        match self {
            Rule::Gate { tolerance } => Rule::Gate {
                tolerance: tolerance.max(to),
            },
            Rule::Difference { min_effect } => Rule::Difference {
                min_effect: min_effect.max(to),
            },
        }
    }
}

/// What an interval allows (oriented: worse means more cost, or less rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Finding {
    /// The whole interval beyond +threshold.
    Worse,
    /// The whole interval beyond −threshold.
    Better,
    /// Gate: the interval's top within +tolerance. Difference: the whole interval within
    /// ±minimum effect.
    Within,
}

/// One metric the experiment judges.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    pub name: String,
    /// Cost metrics: higher is worse; the rate: lower is.
    pub higher_is_worse: bool,
    pub rule: Rule,
    /// The smallest change worth reporting in the metric's own unit (µs/tran); 0 for none.
    pub floor: f64,
    /// Whether the control adjusts its pairs (not the control group's own metric).
    pub adjusted: bool,
}

/// What is compared, how, and how long at most.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// How many arms.
    pub arms: usize,
    /// (base, other): arm `other` judged against arm `base`.
    pub contrasts: Vec<(usize, usize)>,
    pub metrics: Vec<MetricSpec>,
    /// Whether rounds carry a control figure (a group running the same code in every arm,
    /// the driver) to adjust pairs by.
    pub control: bool,
    /// Cycles per block (the glue restarts flows between blocks).
    pub cycles_per_block: usize,
    /// The overall two-sided error level of all the run's intervals.
    pub alpha: f64,
    /// Blocks at most (the plan before the first look can only lower it).
    pub max_blocks: usize,
    /// A metric also stops once its interval is this narrow (half width as a fraction):
    /// sweep's precision target. `None`: only a finding stops it.
    pub precision: Option<f64>,
    /// Stop everything at the first metric found worse under a gate rule (no later finding
    /// changes a gate's verdict).
    pub stop_on_worse: bool,
}

/// One arm's round: a figure per metric (None where the round has none), and the control's.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub values: Vec<Option<f64>>,
    pub control: Option<f64>,
}

/// A design that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesignError {
    #[error("an experiment needs two arms or more, and one contrast or more between them")]
    TooSmall,
    #[error("contrast {0} names an arm that is not there, or an arm against itself")]
    BadContrast(usize),
    #[error("a cycle must report every arm's figures, with a figure per metric")]
    BadFigures,
}

// The user's input (exit 2).
crate::usage_error!(DesignError);

/// The state of one metric of one contrast.
#[derive(Debug, Clone, Default)]
struct Cell {
    blocks: Vec<Vec<Pair>>,
    pending: Vec<Pair>,
    skipped: usize,
    /// The slope used at the last look, when it was adjusted.
    slope: Option<f64>,
    /// The observations of the last look: one per block.
    observations: Vec<f64>,
    /// How it was decided: the finding (None: stopped at the precision asked), its interval
    /// — the deciding look's, narrowed by every later look's — and the blocks it took.
    decided: Option<(Option<Finding>, PairedInterval, usize)>,
    /// The two-sided error level of the last interval.
    level: Option<f64>,
    last: Option<PairedInterval>,
}

/// One contrast's control figures: pairs by block (for checking that the control itself
/// does not differ).
#[derive(Debug, Clone, Default)]
struct ControlPairs {
    blocks: Vec<Vec<f64>>,
    pending: Vec<f64>,
}

/// An experiment under way.
#[derive(Debug, Clone)]
pub struct Experiment {
    design: Design,
    rows: Vec<Vec<usize>>,
    rounds: Vec<Vec<Figures>>,
    cells: Vec<Vec<Cell>>,
    controls: Vec<ControlPairs>,
    spending: Spending,
    cycles: usize,
    blocks: usize,
    boundary: Option<Boundary>,
}

/// One metric of one contrast at a look, for the progress line.
#[derive(Debug, Clone, PartialEq)]
pub struct LookItem {
    pub contrast: usize,
    pub metric: usize,
    pub interval: Option<PairedInterval>,
    /// Decided at this look or before (with the finding; None: the precision was reached).
    pub decided: Option<Option<Finding>>,
    pub slope: Option<f64>,
}

/// What a look saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    pub boundary: Boundary,
    pub blocks: usize,
    pub planned: usize,
    /// Contrasts whose control itself moved at this look's level (judged unadjusted).
    pub control_moved: Vec<(usize, PairedInterval)>,
    pub items: Vec<LookItem>,
}

/// Where a metric of a contrast ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub contrast: usize,
    pub metric: usize,
    pub finding: Option<Finding>,
    /// The rule as applied (widened by the floor).
    pub rule: Rule,
    /// The deciding look's interval, else the last look's, else the blocks as measured.
    pub interval: Option<PairedInterval>,
    /// The interval's confidence level (1 − its two-sided error level).
    pub level: f64,
    /// The blocks it was decided after; None when undecided.
    pub decided_after: Option<usize>,
    /// Stopped because the interval was as narrow as asked, without a finding.
    pub precise: bool,
    /// Whether any look judged it: false for a run cut short before the first look, whose
    /// interval is the blocks' as measured and was never held against the rule.
    pub looked: bool,
    /// The paired estimate of the plain pairs, not adjusted by the control: beside the
    /// adjusted `interval.ratio`, what the control's adjustment moved.
    pub unadjusted_ratio: Option<f64>,
    /// The control's slope used, when the interval was adjusted.
    pub slope: Option<f64>,
    pub blocks: usize,
    /// Pairs where an arm had no figure for the metric.
    pub skipped: usize,
    /// The paired t-test's two-sided p-value of the blocks for no change.
    pub p_value: f64,
}

/// One arm's figures for a metric: their median and a distribution-free interval for it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ArmSummary {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    pub rounds: usize,
}

impl Experiment {
    pub fn new(design: Design) -> Result<Experiment, DesignError> {
        if design.arms < 2 || design.contrasts.is_empty() {
            return Err(DesignError::TooSmall);
        }
        if let Some(i) = design
            .contrasts
            .iter()
            .position(|&(a, b)| a >= design.arms || b >= design.arms || a == b)
        {
            return Err(DesignError::BadContrast(i));
        }
        let alpha = design.alpha / design.contrasts.len() as f64;
        Ok(Experiment {
            rows: order::williams(design.arms),
            rounds: vec![Vec::new(); design.arms],
            cells: vec![vec![Cell::default(); design.metrics.len()]; design.contrasts.len()],
            controls: vec![ControlPairs::default(); design.contrasts.len()],
            spending: Spending::new(alpha, design.max_blocks.max(FIRST_LOOK)),
            cycles: 0,
            blocks: 0,
            boundary: None,
            design,
        })
    }

    pub(crate) fn design(&self) -> &Design {
        &self.design
    }

    /// The order the arms of the next cycle are measured in: cycle j of block b takes row
    /// b + j of the balanced design.
    ///
    /// Taking the rows in turn across blocks (row c for cycle c) made every block begin with
    /// the same few rows: two arms in blocks of four cycles always began with A, six arms in
    /// blocks of two never began with arms 1, 3 or 5. The first round after the flows
    /// restart is not like the others (in an A/A compare the driver's cost differed by
    /// 2.0 % [−3.8 %, −0.2 %] between two identical arms, and through the control variate
    /// the flow's by +0.7 %), so the arm measured there must change from block to block.
    /// With row b + j, over any `rows` blocks every row is taken equally often and every
    /// arm begins a block equally often.
    pub fn order(&self) -> &[usize] {
        let per_block = self.design.cycles_per_block.max(1);
        let row = self.cycles / per_block + self.cycles % per_block;
        &self.rows[row % self.rows.len()]
    }

    pub fn cycles(&self) -> usize {
        self.cycles
    }

    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// The blocks planned.
    pub(crate) fn planned(&self) -> usize {
        self.spending.planned()
    }

    /// Plan `blocks` blocks in all (from how long blocks take, never from what they
    /// measured), never above the design's most: before any look, and again before each
    /// (the plan follows the budget; [`sequential`] says why the error level still holds).
    pub(crate) fn plan(&mut self, blocks: usize) {
        self.spending
            .plan(blocks.min(self.design.max_blocks).max(FIRST_LOOK));
    }

    /// Record a cycle: `figures[a]` is arm a's round. True when it closed a block.
    pub fn record(&mut self, figures: Vec<Figures>) -> Result<bool, DesignError> {
        let n = self.design.metrics.len();
        if figures.len() != self.design.arms || figures.iter().any(|f| f.values.len() != n) {
            return Err(DesignError::BadFigures);
        }
        for (ci, &(a, b)) in self.design.contrasts.iter().enumerate() {
            let (fa, fb) = (&figures[a], &figures[b]);
            let c = log_ratio(fa.control, fb.control).unwrap_or(f64::NAN);
            self.controls[ci].pending.push(c);
            for (mi, spec) in self.design.metrics.iter().enumerate() {
                // A decided metric goes on gathering pairs while the run goes on: later
                // looks narrow its interval and the estimate takes every block.
                let cell = &mut self.cells[ci][mi];
                match log_ratio(fa.values[mi], fb.values[mi]) {
                    Some(d) => cell.pending.push(Pair {
                        d: if spec.higher_is_worse { d } else { -d },
                        control: c,
                    }),
                    None => cell.skipped += 1,
                }
            }
        }
        for (arm, f) in figures.into_iter().enumerate() {
            self.rounds[arm].push(f);
        }
        self.cycles += 1;
        if self
            .cycles
            .is_multiple_of(self.design.cycles_per_block.max(1))
        {
            self.close_block();
            return Ok(true);
        }
        Ok(false)
    }

    /// End a block early (a run cut short): its cycles make one observation.
    pub(crate) fn close_block(&mut self) {
        let mut any = false;
        for c in &mut self.controls {
            if !c.pending.is_empty() {
                c.blocks.push(std::mem::take(&mut c.pending));
                any = true;
            }
        }
        for cell in self.cells.iter_mut().flatten() {
            if !cell.pending.is_empty() {
                cell.blocks.push(std::mem::take(&mut cell.pending));
            }
        }
        if any {
            self.blocks += 1;
        }
    }

    /// Whether a look is due now (a block has just closed, from the first look on).
    pub(crate) fn look_due(&self) -> bool {
        self.blocks >= FIRST_LOOK
    }

    /// Look at every metric (a decided one to narrow its interval); `last` spends all the
    /// error level that is left.
    pub fn look(&mut self, last: bool) -> Look {
        let last = last || self.blocks >= self.spending.planned();
        let boundary = self.spending.look(self.blocks, last);
        self.boundary = Some(boundary);
        let mut look = Look {
            boundary,
            blocks: self.blocks,
            planned: self.spending.planned(),
            control_moved: Vec::new(),
            items: Vec::new(),
        };
        let any_adjusted = self.design.metrics.iter().any(|m| m.adjusted);
        for ci in 0..self.design.contrasts.len() {
            let moved = any_adjusted
                .then(|| self.control_moved(ci, boundary.level))
                .flatten();
            if let Some(i) = moved {
                look.control_moved.push((ci, i));
            }
            for mi in 0..self.design.metrics.len() {
                let item = self.look_at(ci, mi, boundary, moved.is_none());
                look.items.push(item);
            }
        }
        look
    }

    /// The control's own interval for contrast `ci`, when it excludes no change at `level`:
    /// then its change is not only the machine's, and the contrast is judged unadjusted.
    fn control_moved(&self, ci: usize, level: f64) -> Option<PairedInterval> {
        if !self.design.control {
            return None;
        }
        let means: Vec<f64> = self.controls[ci]
            .blocks
            .iter()
            .filter(|b| !b.is_empty() && b.iter().all(|c| c.is_finite()))
            .map(|b| b.iter().sum::<f64>() / b.len() as f64)
            .collect();
        let i = paired_interval(&means, level)?;
        (i.low > 1.0 || i.high < 1.0).then_some(i)
    }

    fn look_at(&mut self, ci: usize, mi: usize, boundary: Boundary, adjust: bool) -> LookItem {
        let rule = self.rule_of(ci, mi);
        let adjust = adjust && self.design.metrics[mi].adjusted;
        let precision = self.design.precision;
        let blocks = self.blocks;
        let cell = &mut self.cells[ci][mi];
        let mut item = LookItem {
            contrast: ci,
            metric: mi,
            interval: None,
            decided: None,
            slope: None,
        };
        cell.slope = (self.design.control && adjust)
            .then(|| control::slope(&cell.blocks))
            .flatten();
        cell.observations = control::block_means(&cell.blocks, cell.slope.unwrap_or(0.0));
        item.slope = cell.slope;
        let Some(i) = paired_interval(&cell.observations, boundary.level) else {
            return item;
        };
        cell.last = Some(i);
        cell.level = Some(boundary.level);
        item.interval = Some(i);
        if let Some((f, before, n)) = cell.decided {
            let narrowed = narrow(&before, &i);
            // A metric stopped at the precision asked, without a finding, is judged again on
            // its narrowed interval: the repeated intervals hold at every look together, so
            // a later look may call what an earlier one could not (a sweep's ratio that
            // straddled its minimum effect, then came to lie beyond it, read "no difference").
            let (f, n) = match f {
                None => judge(&narrowed, rule).map_or((None, n), |found| (Some(found), blocks)),
                found => (found, n),
            };
            cell.decided = Some((f, narrowed, n));
            item.decided = Some(f);
            item.interval = Some(narrowed);
            return item;
        }
        if let Some(f) = judge(&i, rule) {
            cell.decided = Some((Some(f), i, blocks));
            item.decided = Some(Some(f));
        } else if precision.is_some_and(|p| half_width(&i) <= p) {
            cell.decided = Some((None, i, blocks));
            item.decided = Some(None);
        }
        item
    }

    /// A metric's rule, widened by its floor against the base arm's median.
    fn rule_of(&self, ci: usize, mi: usize) -> Rule {
        let spec = &self.design.metrics[mi];
        let base = self.design.contrasts[ci].0;
        let m = median(&self.values(base, mi));
        if spec.floor > 0.0 && m.is_finite() && m > 0.0 {
            spec.rule.widened(spec.floor / m)
        } else {
            spec.rule
        }
    }

    /// Whether the run can stop: every metric decided, or (when the design says so) one
    /// found worse under a gate rule.
    pub fn done(&self) -> bool {
        let cells = || self.cells.iter().flatten();
        let worse = self.design.stop_on_worse
            && self.cells.iter().enumerate().any(|(ci, row)| {
                row.iter().enumerate().any(|(mi, c)| {
                    matches!(self.rule_of(ci, mi), Rule::Gate { .. })
                        && matches!(c.decided, Some((Some(Finding::Worse), ..)))
                })
            });
        worse || cells().all(|c| c.decided.is_some())
    }

    /// Arm `arm`'s figures of metric `mi`, in the order measured.
    pub fn values(&self, arm: usize, mi: usize) -> Vec<f64> {
        self.rounds[arm]
            .iter()
            .filter_map(|f| f.values.get(mi).copied().flatten())
            .collect()
    }

    /// Arm `arm`'s figure of metric `mi` in every cycle, in the order measured (None where a
    /// round had none): what a report keeps so that a run can be judged again offline.
    pub(crate) fn round_values(&self, arm: usize, mi: usize) -> Vec<Option<f64>> {
        self.rounds[arm]
            .iter()
            .map(|f| f.values.get(mi).copied().flatten())
            .collect()
    }

    /// Arm `arm`'s control figure in every cycle, in the order measured.
    pub fn round_controls(&self, arm: usize) -> Vec<Option<f64>> {
        self.rounds[arm].iter().map(|f| f.control).collect()
    }

    /// Arm `arm`'s median of metric `mi` with a distribution-free interval at 1 − `alpha`.
    pub(crate) fn arm_summary(&self, arm: usize, mi: usize, alpha: f64) -> Option<ArmSummary> {
        median_interval(&self.values(arm, mi), alpha)
    }

    /// Where every metric of every contrast ended.
    pub(crate) fn outcomes(&self) -> Vec<Outcome> {
        let level = self.boundary.map_or(self.design.alpha, |b| b.level);
        let mut out = Vec::new();
        for (ci, row) in self.cells.iter().enumerate() {
            for (mi, cell) in row.iter().enumerate() {
                // Before any look (a run cut short), the blocks as measured.
                let observations = if cell.observations.is_empty() {
                    control::block_means(&cell.blocks, 0.0)
                } else {
                    cell.observations.clone()
                };
                let interval = cell
                    .decided
                    .map(|(_, i, _)| i)
                    .or(cell.last)
                    .or_else(|| paired_interval(&observations, level));
                out.push(Outcome {
                    contrast: ci,
                    metric: mi,
                    finding: cell.decided.and_then(|(f, ..)| f),
                    rule: self.rule_of(ci, mi),
                    interval,
                    level: 1.0 - cell.level.unwrap_or(level),
                    decided_after: cell.decided.map(|(.., n)| n),
                    precise: matches!(cell.decided, Some((None, ..))),
                    looked: cell.level.is_some(),
                    unadjusted_ratio: paired_interval(
                        &control::block_means(&cell.blocks, 0.0),
                        level,
                    )
                    .map(|i| i.ratio),
                    slope: cell.slope,
                    blocks: cell.blocks.len(),
                    skipped: cell.skipped,
                    p_value: paired_p(&observations),
                });
            }
        }
        out
    }
}

/// The error level of each metric's intervals: 10 % over every group a compare or sweep
/// reports (the engine splits it further over the contrasts), since a user reads any one
/// of them as a finding. Split over the contrasts only, each of five groups carried the
/// whole 10 %: an A/A compare on RabbitMQ called the broker's group 1.8 % cheaper
/// (lab/calibration/compare-20261202-1333, aa 3).
pub(crate) fn family_alpha(metrics: usize) -> f64 {
    0.10 / metrics.max(1) as f64
}

/// A decided metric's interval after a later look: the intersection of the two, since
/// repeated confidence intervals cover the true ratio at every look together, so their
/// intersection covers it with the same probability (Jennison & Turnbull, *Group Sequential
/// Methods*, 2000, §9.1). The estimate is the later look's, over all the blocks; should it
/// lie outside the intersection (the rare run in which the intervals failed to cover
/// together) it is held at the nearer end, so that the interval always holds it. When the
/// two do not meet at all, the later interval stands alone.
fn narrow(before: &PairedInterval, later: &PairedInterval) -> PairedInterval {
    let (low, high) = (before.low.max(later.low), before.high.min(later.high));
    if low > high {
        return *later;
    }
    PairedInterval {
        ratio: later.ratio.clamp(low, high),
        low,
        high,
        ..*later
    }
}

/// ln(b ÷ a) when both are positive figures.
fn log_ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) if x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite() => {
            Some((y / x).ln())
        }
        _ => None,
    }
}

/// Half the interval's width as a fraction of its estimate (in log terms).
pub(crate) fn half_width(i: &PairedInterval) -> f64 {
    if !(i.low > 0.0 && i.high.is_finite()) {
        return f64::INFINITY;
    }
    ((i.high.ln() - i.low.ln()) / 2.0).exp() - 1.0
}

/// The median, NaN for no values.
pub fn median(v: &[f64]) -> f64 {
    crate::stats::median(v).unwrap_or(f64::NAN)
}

/// The median and the distribution-free interval for it from order statistics (the
/// binomial with p = ½: Hollander & Wolfe, *Nonparametric Statistical Methods*, §3.6);
/// None with no values. With too few values for the level the interval is their range.
pub(crate) fn median_interval(v: &[f64], alpha: f64) -> Option<ArmSummary> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    // The largest k with P(Bin(n, ½) < k) ≤ α/2: [x(k), x(n−k+1)] covers the median.
    let mut cdf = 0.0;
    let mut k = 0;
    let mut term = 0.5f64.powi(n as i32);
    for j in 0..n {
        if cdf + term > alpha / 2.0 {
            break;
        }
        cdf += term;
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    let (low, high) = if k == 0 {
        (s[0], s[n - 1])
    } else {
        (s[k - 1], s[n - k])
    };
    Some(ArmSummary {
        median: median(&s),
        low,
        high,
        rounds: n,
    })
}

/// The paired t-test's two-sided p-value for "no change"; NaN with fewer than two values.
pub(crate) fn paired_p(d: &[f64]) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = d.len();
    if n < 2 {
        return f64::NAN;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    if sd == 0.0 {
        return if mean == 0.0 { 1.0 } else { 0.0 };
    }
    let t = mean / (sd / (n as f64).sqrt());
    StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map(|dist| 2.0 * (1.0 - dist.cdf(t.abs())))
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests;
