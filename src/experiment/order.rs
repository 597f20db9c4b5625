//! The order arms are measured in within each cycle: balanced so that a slow drift of the
//! machine, and whatever a round leaves behind for the next (a warm cache, a busy broker),
//! falls on every arm alike.
//!
//! For two arms this is ABBA: A B, B A, A B, … For k arms it is a Williams design
//! (E. J. Williams, "Experimental designs balanced for the estimation of residual effects
//! of treatments", Australian Journal of Scientific Research A 2:149–168, 1949): a Latin
//! square — every arm once in every position over k cycles — in which every arm follows
//! every other equally often. Its first row is 0, 1, k−1, 2, k−2, 3, …; row i adds i to
//! each entry (mod k). For an odd k one square cannot balance the successions, so the
//! mirrored square follows it (2k rows).

/// The rows of a balanced design for `k` arms: row c is the order of cycle c (mod the rows).
pub(crate) fn williams(k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return Vec::new();
    }
    if k == 1 {
        return vec![vec![0]];
    }
    let mut first = Vec::with_capacity(k);
    let (mut low, mut high) = (0usize, k);
    for i in 0..k {
        if i % 2 == 0 {
            first.push(low);
            low += 1;
        } else {
            high -= 1;
            first.push(high);
        }
    }
    let mut rows: Vec<Vec<usize>> = (0..k)
        .map(|r| first.iter().map(|&a| (a + r) % k).collect())
        .collect();
    if k % 2 == 1 {
        let mirrored: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        rows.extend(mirrored);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_arms_alternate_abba() {
        assert_eq!(williams(2), vec![vec![0, 1], vec![1, 0]]);
    }

    #[test]
    fn every_arm_takes_every_position_and_follows_every_other_equally_often() {
        for k in 2..=8 {
            let rows = williams(k);
            assert_eq!(rows.len(), if k % 2 == 0 { k } else { 2 * k }, "k = {k}");
            // Each row is a permutation, and each position holds each arm equally often.
            for r in &rows {
                let mut sorted = r.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..k).collect::<Vec<_>>());
            }
            for pos in 0..k {
                let mut count = vec![0; k];
                for r in &rows {
                    count[r[pos]] += 1;
                }
                assert!(
                    count.iter().all(|&c| c == rows.len() / k),
                    "k {k} pos {pos}"
                );
            }
            // Each ordered succession (a then b) appears equally often.
            let mut follows = vec![vec![0; k]; k];
            for r in &rows {
                for w in r.windows(2) {
                    follows[w[0]][w[1]] += 1;
                }
            }
            let want = follows[0][1];
            for (a, row) in follows.iter().enumerate() {
                for (b, &n) in row.iter().enumerate() {
                    if a != b {
                        assert_eq!(n, want, "k {k}: {a} then {b}");
                    }
                }
            }
        }
    }
}
