//! Seeded picks, gantry-only (`PUT /actuator/seed`, hidden by `--hide-extras`): while a seed is
//! set, each pick's random draws come from a generator seeded with a hash of (seed, pick
//! number) instead of the thread's random source, so the same seed over the same picks gives
//! the same choices: a `distribution` check with `seed:` replays. The selector is not part of
//! the hash: its id (and its upstreams' ports) differ from run to run, the pick numbers do not.
//!
//! Lock-free: the setting is three atomics, read with one load on every pick when off and a
//! `fetch_add` when on. The setting is per process (every worker thread shares it, and the pick
//! counter), so the gateway's workers draw from one sequence.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static SEED: AtomicU64 = AtomicU64::new(0);
static PICKS: AtomicU64 = AtomicU64::new(0);

/// Sets the seed (`None`: back to the random source); the pick count starts over.
pub(crate) fn set(seed: Option<u64>) {
    ON.store(false, Ordering::SeqCst);
    if let Some(seed) = seed {
        SEED.store(seed, Ordering::SeqCst);
        PICKS.store(0, Ordering::SeqCst);
        ON.store(true, Ordering::SeqCst);
    }
}

/// The seed set, if any.
pub(crate) fn current() -> Option<u64> {
    ON.load(Ordering::SeqCst)
        .then(|| SEED.load(Ordering::SeqCst))
}

/// The generator seed of the next pick, when a seed is set.
pub(crate) fn next() -> Option<u64> {
    if !ON.load(Ordering::Acquire) {
        return None;
    }
    let n = PICKS.fetch_add(1, Ordering::Relaxed);
    Some(mix(mix(SEED.load(Ordering::Relaxed)) ^ n))
}

/// SplitMix64's finaliser: neighbouring inputs give unrelated outputs.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use model::{DivideUpstream, LoadBalance};

    use super::super::Pool;
    use super::super::test_support::ctx;
    use super::*;

    /// 400 random picks, one at a time, over an 80/20 selector after setting `seed`.
    fn picks(seed: Option<u64>) -> Vec<usize> {
        let up = |url: &str, weight| DivideUpstream {
            upstream_url: url.to_owned(),
            protocol: "http://".to_owned(),
            weight,
            status: true,
            ..Default::default()
        };
        let handle = serde_json::to_string(&[up("a:1", 80), up("b:1", 20)]).unwrap();
        let pool = Arc::new(Pool::from_handle(&handle, "selector-1"));
        set(seed);
        let out = (0..400)
            .map(|_| pool.pick(LoadBalance::Random, &ctx()).unwrap().index())
            .collect();
        set(None);
        out
    }

    /// One test for every case: the setting is process-wide.
    #[test]
    fn a_seed_replays_the_picks_and_another_does_not() {
        let first = picks(Some(42));
        assert_eq!(picks(Some(42)), first, "the same seed replays");
        assert_ne!(picks(Some(43)), first, "another seed differs");
        assert_ne!(picks(None), first, "unseeded picks are random");
        // Seeded picks still follow the weights: 80/20 over 400 is 320 ± 8 (σ), not 200.
        let a = first.iter().filter(|i| **i == 0).count();
        assert!((280..=360).contains(&a), "{a}");
        assert_eq!(current(), None);
    }
}
