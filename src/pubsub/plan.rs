//! What a pub/sub run sends and who should get what: the symbols, each publisher's share,
//! each subscriber's contiguous block, and from those the count each subscriber must
//! receive — known before the first message, so that lost and duplicated are exact.

/// The run's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The stream's name: RabbitMQ exchange, NATS subject prefix.
    pub topic: String,
    pub symbols: u16,
    /// Symbols in each subscriber's block.
    pub select: u16,
    pub publishers: usize,
    pub subscribers: usize,
    /// Messages all publishers send together (with `duration`, none: they send until it
    /// has passed, and what each subscriber must receive is known when they stop).
    pub count: u64,
    pub duration: Option<std::time::Duration>,
    pub msg_size: usize,
    pub seed: u64,
    /// Subscribers compete for one queue of every symbol (each message to one of them)
    /// instead of each selecting its own block.
    pub competing: bool,
}

impl Plan {
    /// `S00` … `S99`: zero-padded to the width of `symbols − 1`.
    pub(crate) fn symbol_name(&self, s: u16) -> String {
        let width = (self.symbols.saturating_sub(1)).to_string().len();
        format!("S{s:0width$}")
    }

    /// The number `S07` stands for, if it is one of this run's.
    pub fn symbol_of(&self, name: &str) -> Option<u16> {
        name.strip_prefix('S')?
            .parse::<u16>()
            .ok()
            .filter(|&s| s < self.symbols)
    }

    /// Messages publisher `p` sends: the count split evenly, the first ones one more.
    pub fn share(&self, p: usize) -> u64 {
        let n = self.publishers.max(1) as u64;
        self.count / n + u64::from((p as u64) < self.count % n)
    }

    /// Subscriber `i`'s block: `select` contiguous symbols from a start drawn from the seed
    /// (every symbol when subscribers compete).
    pub fn selection(&self, i: usize) -> std::ops::Range<u16> {
        if self.competing {
            return 0..self.symbols;
        }
        let room = u64::from(self.symbols - self.select) + 1;
        // One generator per subscriber, seeded from --seed and its index, so that a block
        // does not depend on how many subscribers came before it.
        let start = crate::stats::Draws::seeded(self.seed ^ (i as u64).wrapping_mul(0x9e37_79b9))
            .below(room as usize) as u16;
        start..start + self.select
    }

    /// How many of the first `sent` messages of a publisher (symbols in order from S00)
    /// carry a symbol in `block`.
    pub(crate) fn in_block(&self, sent: u64, block: &std::ops::Range<u16>) -> u64 {
        let n = u64::from(self.symbols);
        let (laps, rest) = (sent / n, sent % n);
        let whole = laps * u64::from(block.end - block.start);
        let partial = u64::from(block.end.min(rest as u16).saturating_sub(block.start));
        whole
            + if rest > u64::from(block.start) {
                partial
            } else {
                0
            }
    }

    /// What subscriber `i` must receive once every publisher has sent its share.
    pub fn expected(&self, i: usize) -> u64 {
        let block = self.selection(i);
        (0..self.publishers)
            .map(|p| self.in_block(self.share(p), &block))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            topic: "ticker".into(),
            symbols: 100,
            select: 25,
            publishers: 1,
            subscribers: 10,
            count: 20_000,
            msg_size: 64,
            seed: 7,
            competing: false,
            duration: None,
        }
    }

    #[test]
    fn symbols_are_zero_padded_and_read_back() {
        let p = plan();
        assert_eq!(p.symbol_name(7), "S07");
        assert_eq!(p.symbol_name(99), "S99");
        assert_eq!(p.symbol_of("S07"), Some(7));
        assert_eq!(p.symbol_of("S100"), None);
        assert_eq!(p.symbol_of("X07"), None);
    }

    #[test]
    fn a_block_of_a_quarter_of_the_symbols_gets_a_quarter_of_the_messages() {
        let p = plan();
        for i in 0..p.subscribers {
            let b = p.selection(i);
            assert_eq!(b.end - b.start, 25);
            assert!(b.end <= 100);
            assert_eq!(p.expected(i), 5000, "subscriber {i}: {b:?}");
        }
    }

    #[test]
    fn the_count_in_a_block_matches_counting_message_by_message() {
        let p = Plan {
            symbols: 7,
            select: 3,
            ..plan()
        };
        for sent in 0..40u64 {
            for start in 0..=4u16 {
                let block = start..start + 3;
                let by_hand = (0..sent)
                    .filter(|m| block.contains(&((m % 7) as u16)))
                    .count() as u64;
                assert_eq!(p.in_block(sent, &block), by_hand, "{sent} {block:?}");
            }
        }
    }

    #[test]
    fn shares_add_up_and_the_seed_decides_the_blocks() {
        let p = Plan {
            publishers: 3,
            count: 10,
            ..plan()
        };
        assert_eq!((0..3).map(|i| p.share(i)).sum::<u64>(), 10);
        let other = Plan { seed: 8, ..plan() };
        assert_ne!(
            (0..10).map(|i| plan().selection(i)).collect::<Vec<_>>(),
            (0..10).map(|i| other.selection(i)).collect::<Vec<_>>()
        );
    }
}
