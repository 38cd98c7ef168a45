//! The world the admin and the gateway read besides the network: the wall clock and the
//! random source. Each is read here and nowhere else, so `gantry sim` can replace both.
//!
//! By default they are the real ones: [`SystemTime::now`] and the thread's generator. A
//! simulation runs every host on one thread; it calls [`install`] on that thread with its
//! seed and its clock, and until the returned guard is dropped every draw comes from one
//! generator seeded by that seed and every wall-clock read from the simulated clock, so a
//! seed replays the same ids, secrets, jitter and balancer picks. (Monotonic time is
//! `tokio::time`, which the simulator drives itself.)

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

/// A replacement world, installed on one thread.
struct Installed {
    rng: StdRng,
    clock: Box<dyn Fn() -> SystemTime>,
}

thread_local! {
    static INSTALLED: RefCell<Option<Installed>> = const { RefCell::new(None) };
}

/// The current wall-clock time.
pub fn now() -> SystemTime {
    INSTALLED.with_borrow(|w| w.as_ref().map_or_else(SystemTime::now, |w| (w.clock)()))
}

/// The current wall-clock time since the Unix epoch (zero before it).
pub fn since_epoch() -> Duration {
    now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// Runs `f` with the random source.
pub fn with_rng<R>(f: impl FnOnce(&mut dyn RngCore) -> R) -> R {
    INSTALLED.with_borrow_mut(|w| match w {
        Some(w) => f(&mut w.rng),
        None => f(&mut rand::rng()),
    })
}

/// `N` random bytes from the random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    with_rng(|rng| rng.fill_bytes(&mut bytes));
    bytes
}

/// A random `u64` from the random source.
pub fn random_u64() -> u64 {
    with_rng(|rng| rng.next_u64())
}

/// Puts this thread in a world of its own until the guard is dropped: draws from a generator
/// seeded with `seed`, the wall clock read from `clock`. For simulations only.
///
/// # Panics
/// When this thread is already in one.
#[must_use = "the world is replaced only while the guard lives"]
pub fn install(seed: u64, clock: impl Fn() -> SystemTime + 'static) -> WorldGuard {
    INSTALLED.with_borrow_mut(|w| {
        assert!(
            w.is_none(),
            "a simulated world is already installed on this thread"
        );
        *w = Some(Installed {
            rng: StdRng::seed_from_u64(seed),
            clock: Box::new(clock),
        });
    });
    WorldGuard(std::marker::PhantomData)
}

/// Keeps a world installed on this thread ([`install`]); dropping it restores the real one.
#[derive(Debug)]
pub struct WorldGuard(std::marker::PhantomData<*const ()>);

impl Drop for WorldGuard {
    fn drop(&mut self) {
        INSTALLED.with_borrow_mut(|w| *w = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_world_replays_its_draws_and_its_clock() {
        let at = UNIX_EPOCH + Duration::from_secs(1_000);
        let draws = || {
            let _world = install(7, move || at);
            assert_eq!(now(), at);
            (random_u64(), random_bytes::<4>())
        };
        assert_eq!(draws(), draws(), "the same seed draws the same");
        let _world = install(8, move || at);
        assert_ne!(random_u64(), draws_of(7), "another seed draws otherwise");
    }

    fn draws_of(seed: u64) -> u64 {
        StdRng::seed_from_u64(seed).next_u64()
    }

    #[test]
    fn without_a_world_the_clock_is_real() {
        let before = SystemTime::now();
        assert!(now() >= before);
    }
}
