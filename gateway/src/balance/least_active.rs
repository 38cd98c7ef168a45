//! Least active: the upstream with the fewest requests in flight (leased and not finished);
//! ties go to weighted random among the tied. ShenYu's `LeastActiveLoadBalance` increments a
//! counter on every pick and never decrements it, so it really cycles through the upstreams
//! ("least often selected") and ignores weight and status; gantry counts real in-flight
//! requests. [`crate::EmulatedBug::LeastActiveIgnoresInFlight`] ties every upstream: weighted
//! random over all of them, whatever their load.

use rand::Rng;

use super::{Pool, weighted_among};

/// The index chosen among at least one upstream; in-flight counts are read as all 0 when
/// `ignore_in_flight` (the emulated bug).
pub(super) fn pick(pool: &Pool, now_ms: i64, ignore_in_flight: bool, rng: &mut impl Rng) -> usize {
    let active: Vec<u64> = (0..pool.upstreams.len())
        .map(|i| if ignore_in_flight { 0 } else { pool.active(i) })
        .collect();
    let least = active.iter().copied().min().unwrap_or(0);
    let tied: Vec<usize> = (0..active.len()).filter(|&i| active[i] == least).collect();
    weighted_among(&pool.upstreams, &tied, now_ms, rng)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::up;
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use std::sync::Arc;

    #[test]
    fn picks_the_least_loaded_and_forgets_finished_requests() {
        let pool = Arc::new(Pool::new(vec![up("a:1", 1), up("b:1", 1), up("c:1", 1)]));
        let mut rng = StdRng::seed_from_u64(3);
        let a = pool.lease(0, 0);
        let b = pool.lease(1, 0);
        let b2 = pool.lease(1, 0);
        assert_eq!(pick(&pool, 0, false, &mut rng), 2);
        let c = pool.lease(2, 0);
        // a and c have one each, b two.
        assert_ne!(pick(&pool, 0, false, &mut rng), 1);
        drop((a, c));
        // a and c are idle again; b still has two in flight.
        for _ in 0..20 {
            assert_ne!(pick(&pool, 0, false, &mut rng), 1);
        }
        drop((b, b2));
        let mut seen = [false; 3];
        for _ in 0..100 {
            seen[pick(&pool, 0, false, &mut rng)] = true;
        }
        assert_eq!(seen, [true; 3], "idle upstreams tie: random among all");
    }

    #[test]
    fn ignoring_in_flight_keeps_picking_a_loaded_upstream() {
        let pool = Arc::new(Pool::new(vec![up("a:1", 1), up("b:1", 1)]));
        let mut rng = StdRng::seed_from_u64(5);
        let held: Vec<_> = (0..10).map(|_| pool.lease(0, 0)).collect();
        let picked_a = (0..200)
            .filter(|_| pick(&pool, 0, true, &mut rng) == 0)
            .count();
        // Binomial(200, 1/2): 100 ± 7; below 50 or above 150 is more than 7σ out.
        assert!((50..=150).contains(&picked_a), "a picked {picked_a} of 200");
        assert!((0..200).all(|_| pick(&pool, 0, false, &mut rng) == 1));
        drop(held);
    }
}
