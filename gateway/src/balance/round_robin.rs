//! Smooth weighted round robin (ShenYu `RoundRobinLoadBalancer`, nginx/Dubbo): per pick every
//! upstream's `current += weight` in list order, the highest `current` wins (strict `>`, so
//! ties go to the earliest), and the winner's `current -= Σweight`. Weights 5,1,1 give
//! `a a b a c a a`; all weights 0 always give the first. A changed effective weight (warm-up,
//! status) resets that upstream's `current` to 0.
//!
//! [`crate::EmulatedBug::RoundRobinIgnoresWeights`] runs the same algorithm with every weight
//! taken as 1: a plain cycle in list order.
//!
//! The state is the selector's own (ShenYu keys a process-wide map by the first upstream's
//! URL) and sits behind a short mutex: the update touches every upstream at once.

use super::{Upstream, effective_weight};

/// Per-upstream `(weight, current)`.
#[derive(Debug)]
pub(super) struct State {
    entries: Vec<(i32, i64)>,
}

impl State {
    /// Fresh state for `n` upstreams.
    pub(super) fn new(n: usize) -> State {
        State {
            entries: vec![(0, 0); n],
        }
    }

    /// The next index among `upstreams` (the same list the state was made for); every weight
    /// counts as 1 when `ignore_weights` (the emulated bug).
    pub(super) fn pick(
        &mut self,
        upstreams: &[Upstream],
        now_ms: i64,
        ignore_weights: bool,
    ) -> usize {
        let mut total: i64 = 0;
        let mut best: Option<(usize, i64)> = None;
        for (i, (u, entry)) in upstreams.iter().zip(&mut self.entries).enumerate() {
            let weight = if ignore_weights {
                1
            } else {
                effective_weight(&u.data, now_ms)
            };
            if entry.0 != weight {
                *entry = (weight, 0);
            }
            entry.1 += i64::from(weight);
            total += i64::from(weight);
            if best.is_none_or(|(_, max)| entry.1 > max) {
                best = Some((i, entry.1));
            }
        }
        let (chosen, _) = best.unwrap_or((0, 0));
        if let Some(entry) = self.entries.get_mut(chosen) {
            entry.1 -= total;
        }
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::up;
    use super::*;
    use proptest::prelude::*;

    fn sequence(weights: &[i32], n: usize) -> String {
        let ups: Vec<Upstream> = weights
            .iter()
            .enumerate()
            .map(|(i, w)| up(&format!("u{i}:1"), *w))
            .collect();
        let mut state = State::new(ups.len());
        (0..n)
            .map(|_| char::from(b'a' + state.pick(&ups, 0, false) as u8))
            .collect()
    }

    #[test]
    fn exact_sequences() {
        assert_eq!(sequence(&[5, 1, 1], 14), "aabacaaaabacaa");
        assert_eq!(sequence(&[1, 1, 1], 6), "abcabc");
        assert_eq!(sequence(&[2, 1], 6), "abaaba");
        assert_eq!(sequence(&[0, 0, 0], 4), "aaaa");
        assert_eq!(sequence(&[0, 3], 3), "bbb");
    }

    #[test]
    fn ignoring_weights_cycles_plainly() {
        let ups = [up("a:1", 5), up("b:1", 1), up("c:1", 0)];
        let mut state = State::new(ups.len());
        let seq: String = (0..7)
            .map(|_| char::from(b'a' + state.pick(&ups, 0, true) as u8))
            .collect();
        assert_eq!(seq, "abcabca");
    }

    #[test]
    fn a_weight_change_resets_that_upstream() {
        let mut ups = vec![up("a:1", 1), up("b:1", 1)];
        let mut state = State::new(2);
        assert_eq!(state.pick(&ups, 0, false), 0);
        ups[1].data.weight = 3;
        // b's current restarts from 0: a = -1+1 = 0, b = 0+3 = 3.
        assert_eq!(state.pick(&ups, 0, false), 1);
    }

    proptest! {
        /// Over one period (Σweight picks) every upstream is picked exactly `weight` times.
        #[test]
        fn one_period_matches_the_weights(weights in prop::collection::vec(1..20i32, 1..6)) {
            let total: i32 = weights.iter().sum();
            let seq = sequence(&weights, total as usize);
            for (i, w) in weights.iter().enumerate() {
                let c = char::from(b'a' + i as u8);
                prop_assert_eq!(seq.chars().filter(|x| *x == c).count(), *w as usize);
            }
        }
    }
}
