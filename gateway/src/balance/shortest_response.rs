//! Shortest response (ShenYu `ShortestResponseLoadBalancer`): `estimate = average response
//! time × inflight` (0 before any response), the strictly shortest wins, ties go to weighted
//! random among the tied. `inflight` = requests in flight + 1. gantry times each request on
//! its own lease; ShenYu records the time through one `beginTime` field shared by concurrent
//! requests and never changes `inflight` (it stays 1).

use std::sync::atomic::Ordering;

use rand::Rng;

use super::{Pool, weighted_among};

/// The index chosen among at least one upstream.
pub(super) fn pick(pool: &Pool, now_ms: i64, rng: &mut impl Rng) -> usize {
    let estimates: Vec<u64> = (0..pool.upstreams.len())
        .map(|i| estimate(pool, i))
        .collect();
    let shortest = estimates.iter().copied().min().unwrap_or(0);
    let tied: Vec<usize> = (0..estimates.len())
        .filter(|&i| estimates[i] == shortest)
        .collect();
    weighted_among(&pool.upstreams, &tied, now_ms, rng)
}

fn estimate(pool: &Pool, i: usize) -> u64 {
    let stats = &pool.stats[i];
    let succeeded = stats.succeeded.load(Ordering::Relaxed);
    if succeeded == 0 {
        return 0;
    }
    let average = stats.succeeded_us.load(Ordering::Relaxed) / succeeded;
    average.saturating_mul(pool.active(i) + 1)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::up;
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn fastest_wins_and_untimed_upstreams_tie_at_zero() {
        let pool = Pool::new(vec![up("a:1", 1), up("b:1", 1)]);
        pool.finish(0, 5_000, true);
        pool.finish(1, 1_000, true);
        // finish() also decrements; nothing was leased, so active stays 0.
        let mut rng = StdRng::seed_from_u64(9);
        for _ in 0..20 {
            assert_eq!(pick(&pool, 0, &mut rng), 1);
        }
        let fresh = Pool::new(vec![up("a:1", 1), up("b:1", 0)]);
        for _ in 0..20 {
            assert_eq!(
                pick(&fresh, 0, &mut rng),
                0,
                "tie → weighted: b has weight 0"
            );
        }
    }

    #[test]
    fn in_flight_requests_lengthen_the_estimate() {
        let pool = std::sync::Arc::new(Pool::new(vec![up("a:1", 1), up("b:1", 1)]));
        pool.finish(0, 1_000, true);
        pool.finish(1, 1_500, true);
        let held = pool.lease(0, 0);
        let mut rng = StdRng::seed_from_u64(9);
        assert_eq!(pick(&pool, 0, &mut rng), 1, "a: 1000×2 > b: 1500×1");
        drop(held);
    }
}
