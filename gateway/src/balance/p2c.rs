//! Power of two choices (ShenYu `P2cLoadBalancer`): draw two distinct upstreams at random,
//! `load = ⌊√lag + 1⌋ × inflight`, take the lower load (tie → the first drawn) unless the
//! other one was last picked more than 3 s ago, then take that one (so an idle upstream gets
//! probed). `inflight` = requests in flight + 1 (ShenYu starts the counter at 1). After each
//! response `lag = lag·w + t·(1−w)` with `w = exp(−Δ/600 ms)`, Δ the time since the upstream's
//! previous response (w = 0 while lag is 0). gantry's sample `t` is the request's own time;
//! ShenYu uses "now − lastPicked", which concurrent picks overwrite.

use std::sync::atomic::Ordering;

use rand::Rng;

use super::{Pool, Stats};

/// An upstream not picked for this long is forced.
const FORCE_AFTER_MS: i64 = 3_000;
/// The decay constant of the lag average.
const DECAY_MS: f64 = 600.0;

/// The index chosen among at least two upstreams.
pub(super) fn pick(pool: &Pool, now_ms: i64, rng: &mut impl Rng) -> usize {
    let n = pool.upstreams.len();
    let a = rng.random_range(0..n);
    let mut b = rng.random_range(0..n - 1);
    if b >= a {
        b += 1;
    }
    let (low, high) = if load(pool, a) <= load(pool, b) {
        (a, b)
    } else {
        (b, a)
    };
    let idle = now_ms.saturating_sub(pool.stats[high].last_picked_ms.load(Ordering::Relaxed));
    if idle > FORCE_AFTER_MS { high } else { low }
}

fn load(pool: &Pool, i: usize) -> u64 {
    let lag = f64::from_bits(pool.stats[i].lag_bits.load(Ordering::Relaxed));
    let inflight = pool.active(i) + 1;
    ((lag.sqrt() + 1.0) as u64).saturating_mul(inflight)
}

/// Folds one response time into the upstream's lag.
pub(super) fn record(stats: &Stats, now_ms: i64, elapsed_us: u64) {
    let previous = stats.last_response_ms.swap(now_ms, Ordering::Relaxed);
    let sample = elapsed_us as f64 / 1_000.0;
    let _ = stats
        .lag_bits
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
            let old = f64::from_bits(bits);
            let w = if old == 0.0 {
                0.0
            } else {
                (-(now_ms.saturating_sub(previous).max(0) as f64) / DECAY_MS).exp()
            };
            Some((old * w + sample * (1.0 - w)).to_bits())
        });
}

#[cfg(test)]
mod tests {
    use super::super::test_support::up;
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use std::sync::Arc;

    #[test]
    fn lower_load_wins_unless_the_other_is_idle_too_long() {
        let pool = Arc::new(Pool::new(vec![up("a:1", 1), up("b:1", 1)]));
        let mut rng = StdRng::seed_from_u64(5);
        let now = 100_000;
        // Both picked recently; a has 3 in flight.
        drop(pool.lease(1, now));
        let held: Vec<_> = (0..3).map(|_| pool.lease(0, now)).collect();
        for _ in 0..20 {
            assert_eq!(pick(&pool, now + 10, &mut rng), 1);
        }
        // a not picked for over 3 s: forced despite its load.
        assert_eq!(pick(&pool, now + 3_001, &mut rng), 0);
        drop(held);
    }

    #[test]
    fn lag_is_an_exponential_average() {
        let stats = Stats::default();
        record(&stats, 1_000, 100_000);
        let lag = |s: &Stats| f64::from_bits(s.lag_bits.load(Ordering::Relaxed));
        assert_eq!(lag(&stats), 100.0, "first sample taken as is");
        record(&stats, 1_600, 0);
        let w = (-1.0f64).exp();
        assert!((lag(&stats) - 100.0 * w).abs() < 1e-9);
    }
}
