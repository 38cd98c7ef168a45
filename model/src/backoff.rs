//! [`Backoff`]: the wait between reconnect attempts, one copy for the admin's ZooKeeper and
//! etcd publishers and the gateway's subscribers. Pure: the caller sleeps, and draws the
//! jitter from its own random source.

use std::time::Duration;

/// A reconnect back-off: a step that starts at [`Backoff::START`] and doubles after each
/// wait up to [`Backoff::CAP`]; [`Backoff::reset`] after a success.
///
/// The admin waits whole steps ([`Backoff::next_step`]); the gateway jitters each wait to
/// between half and all of the step ([`Backoff::next_jittered`]) so gateways that lost the
/// same admin do not come back in lockstep. (ShenYu's long-poll client waits 5 s ten times,
/// then 5 min; gantry retries faster so a restarted admin is picked up within seconds.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    step: Duration,
}

impl Backoff {
    /// The first step.
    pub const START: Duration = Duration::from_millis(100);
    /// The largest step.
    pub const CAP: Duration = Duration::from_secs(5);

    /// A back-off at its first step.
    pub fn new() -> Backoff {
        Backoff { step: Self::START }
    }

    /// Back to the first step (after a success).
    pub fn reset(&mut self) {
        self.step = Self::START;
    }

    /// The next wait: the whole current step, which then doubles up to the cap.
    pub fn next_step(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(Self::CAP);
        step
    }

    /// The next wait jittered to between half and all of the current step, which then
    /// doubles up to the cap. `draw(n)` picks the jitter: a whole number of milliseconds in
    /// `0..=n`, uniformly at random.
    pub fn next_jittered(&mut self, draw: impl FnOnce(u64) -> u64) -> Duration {
        let half = self.next_step() / 2;
        let max = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
        half + Duration::from_millis(draw(max).min(max))
    }
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(d: Duration) -> u128 {
        d.as_millis()
    }

    #[test]
    fn steps_double_to_the_cap_and_reset() {
        let mut b = Backoff::new();
        let steps: Vec<u128> = (0..8).map(|_| millis(b.next_step())).collect();
        assert_eq!(steps, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.reset();
        assert_eq!(b.next_step(), Backoff::START);
    }

    #[test]
    fn jittered_waits_are_between_half_and_all_of_the_step() {
        let mut b = Backoff::new();
        assert_eq!(
            b.next_jittered(|max| {
                assert_eq!(max, 50);
                0
            }),
            Duration::from_millis(50)
        );
        assert_eq!(b.next_jittered(|max| max), Duration::from_millis(200));
        for _ in 0..6 {
            b.next_step();
        }
        assert_eq!(b.next_jittered(|_| 7), Duration::from_millis(2507));
        assert_eq!(b.next_jittered(|_| u64::MAX), Backoff::CAP);
    }
}
