//! Weighted random (ShenYu `RandomLoadBalancer`): all effective weights equal (including all
//! zero) → uniform over every upstream; otherwise P(i) = wᵢ / Σw, weight-0 entries never chosen.
//! [`crate::EmulatedBug::RandomIgnoresWeights`] is uniform whatever the weights.

use rand::Rng;

use super::{Upstream, effective_weight};

/// The index chosen among at least one upstream; uniform when `ignore_weights` (the emulated
/// bug).
pub(super) fn pick(
    upstreams: &[Upstream],
    now_ms: i64,
    ignore_weights: bool,
    rng: &mut impl Rng,
) -> usize {
    if ignore_weights {
        return rng.random_range(0..upstreams.len());
    }
    let weights: Vec<i32> = upstreams
        .iter()
        .map(|u| effective_weight(&u.data, now_ms))
        .collect();
    weighted(&weights, rng)
}

/// The index chosen by weight among at least one weight.
pub(super) fn weighted(weights: &[i32], rng: &mut impl Rng) -> usize {
    let total: i64 = weights.iter().map(|w| i64::from((*w).max(0))).sum();
    let same = weights.windows(2).all(|w| w[0] == w[1]);
    if same || total <= 0 {
        return rng.random_range(0..weights.len());
    }
    let mut offset = rng.random_range(0..total);
    for (i, w) in weights.iter().enumerate() {
        offset -= i64::from((*w).max(0));
        if offset < 0 {
            return i;
        }
    }
    weights.len() - 1
}

#[cfg(test)]
mod tests {
    use super::super::test_support::up;
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn counts(weights: &[i32], n: usize, seed: u64) -> Vec<usize> {
        counts_ignoring(weights, n, seed, false)
    }

    fn counts_ignoring(weights: &[i32], n: usize, seed: u64, ignore_weights: bool) -> Vec<usize> {
        let ups: Vec<Upstream> = weights
            .iter()
            .enumerate()
            .map(|(i, w)| up(&format!("u{i}:1"), *w))
            .collect();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut c = vec![0; ups.len()];
        for _ in 0..n {
            c[pick(&ups, 0, ignore_weights, &mut rng)] += 1;
        }
        c
    }

    #[test]
    fn weight_zero_never_chosen_unless_all_equal() {
        let c = counts(&[0, 10], 1_000, 7);
        assert_eq!(c[0], 0);
        let c = counts(&[0, 0], 1_000, 7);
        assert!(c[0] > 300 && c[1] > 300, "{c:?}");
    }

    #[test]
    fn ignoring_weights_is_uniform() {
        // Binomial(3000, 1/3) per upstream: 1000 ± 26 (seeded, so exact anyway); the weights
        // would give 2400, 600 and 0.
        let c = counts_ignoring(&[80, 20, 0], 3_000, 11, true);
        assert!(c.iter().all(|n| (850..=1_150).contains(n)), "{c:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Each upstream's share of N = 20 000 picks is within 5 standard deviations
        /// (σ = √(N·p·(1−p))) of N·wᵢ/Σw. A correct balancer fails one check with probability
        /// ≈ 5.7e-7, so a whole run (32 cases × ≤ 6 upstreams) falsely fails with probability
        /// ≈ 1e-4; the seed is part of the generated input, so a failure replays exactly.
        #[test]
        fn weighted_shares(
            weights in prop::collection::vec(0..100i32, 2..7),
            seed in any::<u64>(),
        ) {
            const N: usize = 20_000;
            let c = counts(&weights, N, seed);
            let total: i32 = weights.iter().sum();
            let same = weights.windows(2).all(|w| w[0] == w[1]);
            for (i, w) in weights.iter().enumerate() {
                let p = if same || total == 0 {
                    1.0 / weights.len() as f64
                } else {
                    f64::from(*w) / f64::from(total)
                };
                let expected = N as f64 * p;
                let sigma = (N as f64 * p * (1.0 - p)).sqrt();
                prop_assert!(
                    (c[i] as f64 - expected).abs() <= 5.0 * sigma + 1.0,
                    "weights {weights:?}: upstream {i} got {} of {N}, expected {expected:.0}", c[i]
                );
            }
        }
    }
}
