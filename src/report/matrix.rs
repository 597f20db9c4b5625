//! What `oemputx matrix` reports: the CJMQ throughput table, cell by cell — with
//! `--rounds`, each cell the median of its rounds and how far they spread.

use serde::Serialize;

/// The JSON schema tag of a matrix.
pub const SCHEMA: &str = "oemputx.matrix/1";

/// The whole table, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    pub schema: &'static str,
    /// The broker, its password masked.
    pub broker: String,
    /// Messages the sender sends in each cell.
    pub count: u64,
    /// Times every cell was measured (1 unless `--rounds`).
    pub rounds: usize,
    /// `topic` (every receiver gets every message) or `queue` (they compete).
    pub pattern: String,
    /// Ctrl-C or SIGTERM stopped it: the cells not reached are missing, and the cell it
    /// stopped in is left out (its figures cover part of it).
    pub interrupted: bool,
    /// Set when an error stopped the matrix after some cells: the cells measured before it
    /// are kept; null for a matrix that ran to its end (or was interrupted).
    pub partial: Option<MatrixPartial>,
    pub cells: Vec<Cell>,
}

/// Where a matrix stopped short, and why (the matrix's cells, not blocks: a matrix
/// measures cell after cell, each a pub/sub run of its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatrixPartial {
    /// Cell measurements done (each cell once a round) and planned.
    pub cells_done: usize,
    pub cells_planned: usize,
    /// The error that stopped it, with its context.
    pub reason: String,
}

impl MatrixPartial {
    /// The line the text carries: `partial: stopped after N of M cell measurements: …`.
    pub fn line(&self) -> String {
        format!(
            "partial: stopped after {} of {} cell measurements: {}",
            self.cells_done, self.cells_planned, self.reason
        )
    }
}

/// One cell of the table: its figures, the medians over its rounds when there are several.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub persistent: bool,
    pub msg_size: usize,
    pub receivers: usize,
    /// Messages received per second per receiver (the median receiver); `None` where the
    /// broker has no such mode.
    pub received_mps: Option<f64>,
    pub publish_mps: Option<f64>,
    /// The first group's (the broker's) CPU per message published and per delivered, µs.
    pub broker_us_per_published: Option<f64>,
    pub broker_us_per_delivered: Option<f64>,
    /// Messages lost or duplicated, over all its rounds.
    pub lost: u64,
    /// Why a cell is empty.
    pub note: Option<String>,
    /// With more than one round: each figure's spread over the rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<CellSpread>,
}

/// How far a cell's rounds spread, figure by figure.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CellSpread {
    pub rounds: usize,
    pub received_mps: Option<Spread>,
    pub publish_mps: Option<Spread>,
    pub broker_us_per_published: Option<Spread>,
    pub broker_us_per_delivered: Option<Spread>,
}

/// One figure over a cell's rounds: the median's 95 % distribution-free interval (with
/// under nine rounds, their range) and the range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub low: f64,
    pub high: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The interval's larger half as a share of the median: "± 3 %".
    pub(crate) fn relative_half(&self, median: f64) -> f64 {
        if median > 0.0 {
            (median - self.low).max(self.high - median) / median
        } else {
            f64::NAN
        }
    }
}

impl Cell {
    /// One cell from its rounds' cells (measured alike, in any order): each figure the
    /// median over the rounds that have it, with its spread; the losses summed; the first
    /// note kept.
    pub(crate) fn of_rounds(rounds: &[Cell]) -> Option<Cell> {
        let first = rounds.first()?;
        if rounds.len() == 1 {
            return Some(first.clone());
        }
        let figure = |f: fn(&Cell) -> Option<f64>| -> (Option<f64>, Option<Spread>) {
            let v: Vec<f64> = rounds.iter().filter_map(f).collect();
            match crate::experiment::median_interval(&v, 0.05) {
                Some(s) => {
                    let (min, max) = v
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                            (l.min(x), h.max(x))
                        });
                    (
                        Some(s.median),
                        Some(Spread {
                            low: s.low,
                            high: s.high,
                            min,
                            max,
                        }),
                    )
                }
                None => (None, None),
            }
        };
        let (received_mps, r) = figure(|c| c.received_mps);
        let (publish_mps, p) = figure(|c| c.publish_mps);
        let (published, bp) = figure(|c| c.broker_us_per_published);
        let (delivered, bd) = figure(|c| c.broker_us_per_delivered);
        Some(Cell {
            received_mps,
            publish_mps,
            broker_us_per_published: published,
            broker_us_per_delivered: delivered,
            lost: rounds.iter().map(|c| c.lost).sum(),
            note: rounds.iter().find_map(|c| c.note.clone()),
            spread: Some(CellSpread {
                rounds: rounds.len(),
                received_mps: r,
                publish_mps: p,
                broker_us_per_published: bp,
                broker_us_per_delivered: bd,
            }),
            ..first.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(rate: f64, lost: u64) -> Cell {
        Cell {
            persistent: false,
            msg_size: 128,
            receivers: 1,
            received_mps: Some(rate),
            publish_mps: Some(rate * 1.1),
            broker_us_per_published: Some(rate / 100.0),
            broker_us_per_delivered: None,
            lost,
            note: None,
            spread: None,
        }
    }

    #[test]
    fn a_cell_of_rounds_is_their_median_with_its_spread_and_the_losses_summed() {
        let rounds: Vec<Cell> = [
            1000.0, 1100.0, 900.0, 1050.0, 950.0, 1500.0, 1020.0, 980.0, 1060.0,
        ]
        .iter()
        .enumerate()
        .map(|(i, r)| cell(*r, u64::from(i == 2)))
        .collect();
        let c = Cell::of_rounds(&rounds).expect("cell");
        assert_eq!(c.received_mps, Some(1020.0));
        assert_eq!(c.lost, 1);
        let s = c.spread.expect("spread");
        assert_eq!(s.rounds, 9);
        let r = s.received_mps.expect("rate spread");
        assert_eq!((r.min, r.max), (900.0, 1500.0));
        // Nine rounds: the interval is the second smallest to the second largest.
        assert_eq!((r.low, r.high), (950.0, 1100.0));
        assert!((r.relative_half(1020.0) - 80.0 / 1020.0).abs() < 1e-12);
        // Fewer: their range.
        let few = Cell::of_rounds(&rounds[..5])
            .and_then(|c| c.spread)
            .and_then(|s| s.received_mps);
        assert_eq!(few.map(|r| (r.low, r.high)), Some((900.0, 1100.0)));
        assert!(s.broker_us_per_delivered.is_none());
        // One round is the cell as measured.
        assert!(Cell::of_rounds(&rounds[..1]).expect("one").spread.is_none());
    }
}
