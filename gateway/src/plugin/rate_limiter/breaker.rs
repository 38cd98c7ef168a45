//! [`Breaker`]: after Redis fails, the limiter stops asking it for a while (the failure policy
//! answers at once), then lets one request through as a probe; the probe's success closes the
//! breaker, its failure opens it again for twice as long (up to [`MAX_OPEN`]). Without it every
//! limited request waits out the connection's timeouts and retries (about 0.5 s with Redis
//! down, 1 s with Redis hung) before the policy answers.
//!
//! Lock-free: one atomic load on a request while the breaker is closed.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// How long the breaker first stays open after a failure.
pub(crate) const MIN_OPEN: Duration = Duration::from_secs(1);
/// The longest it stays open (the doubling stops there).
pub(crate) const MAX_OPEN: Duration = Duration::from_secs(4);

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Ask Redis (the breaker is closed, or this request is the probe).
    Ask,
    /// Do not ask: the breaker is open.
    FailFast,
}

/// The breaker's state: when it reopens for a probe (0: closed) and how long it stays open
/// next time, both in milliseconds.
#[derive(Debug)]
pub(crate) struct Breaker {
    /// Milliseconds after [`EPOCH`] when a probe may go (0: closed, every request asks).
    open_until: AtomicU64,
    /// How long the next opening lasts, in milliseconds.
    next_open: AtomicU64,
}

/// The clock's origin (the breaker stores milliseconds after it; never 0, since 0 is
/// "closed").
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn now_ms() -> u64 {
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX) + 1
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            open_until: AtomicU64::new(0),
            next_open: AtomicU64::new(ms(MIN_OPEN)),
        }
    }
}

impl Breaker {
    /// Whether a request asks Redis. When the open time is over, the first request to come
    /// is the probe: it pushes the open time on by the current opening, so that the others
    /// keep failing fast while it runs.
    pub(crate) fn pass(&self) -> Pass {
        let until = self.open_until.load(Ordering::Acquire);
        if until == 0 {
            return Pass::Ask;
        }
        let now = now_ms();
        if now < until {
            return Pass::FailFast;
        }
        let again = now + self.next_open.load(Ordering::Relaxed);
        match self
            .open_until
            .compare_exchange(until, again, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Pass::Ask,
            Err(_) => Pass::FailFast,
        }
    }

    /// Redis answered: the breaker closes (the opening starts short again).
    pub(crate) fn success(&self) {
        if self.open_until.load(Ordering::Acquire) != 0 {
            self.reset();
        }
    }

    /// Redis failed: the breaker opens for the current opening, which doubles for next time.
    /// Returns how long it opened for (to log).
    pub(crate) fn failure(&self) -> Duration {
        let open = self.next_open.load(Ordering::Relaxed);
        self.open_until.store(now_ms() + open, Ordering::Release);
        self.next_open
            .store((open * 2).min(ms(MAX_OPEN)), Ordering::Relaxed);
        Duration::from_millis(open)
    }

    /// Closed, with the shortest opening next (a new connection).
    pub(crate) fn reset(&self) {
        self.next_open.store(ms(MIN_OPEN), Ordering::Relaxed);
        self.open_until.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_opens_it_a_probe_after_the_opening_and_success_closes() {
        let breaker = Breaker::default();
        assert_eq!(breaker.pass(), Pass::Ask);
        assert_eq!(breaker.failure(), MIN_OPEN);
        assert_eq!(breaker.pass(), Pass::FailFast);
        // The opening is over: one probe, the others still fail fast.
        breaker.open_until.store(now_ms(), Ordering::Release);
        assert_eq!(breaker.pass(), Pass::Ask);
        assert_eq!(breaker.pass(), Pass::FailFast);
        // The probe failed: twice as long, up to the cap.
        assert_eq!(breaker.failure(), MIN_OPEN * 2);
        assert_eq!(breaker.failure(), MAX_OPEN);
        assert_eq!(breaker.failure(), MAX_OPEN);
        breaker.open_until.store(now_ms(), Ordering::Release);
        assert_eq!(breaker.pass(), Pass::Ask);
        breaker.success();
        assert_eq!(breaker.pass(), Pass::Ask);
        assert_eq!(breaker.failure(), MIN_OPEN, "success resets the opening");
    }
}
