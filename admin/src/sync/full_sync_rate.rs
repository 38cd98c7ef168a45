//! The full-sync rate over all websocket sessions ([`FullSyncRate`]).
//!
//! Each session answers at most one `MYSELF` per full-sync interval, but N sessions (open to
//! anyone unless a sync token is set) multiply that: 30 sessions looping `MYSELF` pushed write
//! latency from 4 to 280 ms. This limit is shared: `rate` full syncs per second, with bursts
//! of up to `rate` (every gateway resyncing at once after an admin restart), as a generic
//! cell rate algorithm whose reservations say when each full sync may go.

use std::sync::Mutex;
use std::time::Duration;

use model::lock::MutexExt;

use tokio::time::Instant;

/// Full syncs per second over all sessions, with a burst of as many.
#[derive(Debug)]
pub(crate) struct FullSyncRate {
    /// Time between two full syncs at the steady rate; `None`: no limit.
    spacing: Option<Duration>,
    /// How far ahead of the steady rate a burst may run: `rate - 1` spacings.
    burst: Duration,
    /// When the reservations so far would all have been served at the steady rate.
    theoretical: Mutex<Instant>,
}

impl FullSyncRate {
    /// `per_second` full syncs a second, in bursts of up to as many; 0: no limit.
    pub(crate) fn new(per_second: u32) -> Self {
        let spacing = (per_second > 0).then(|| Duration::from_secs(1) / per_second);
        Self {
            spacing,
            burst: spacing.unwrap_or_default() * per_second.saturating_sub(1),
            theoretical: Mutex::new(Instant::now()),
        }
    }

    /// Reserves one full sync asked for at `now`: when it may be sent (`now`, or later once
    /// the burst is spent).
    pub(crate) fn reserve(&self, now: Instant) -> Instant {
        let Some(spacing) = self.spacing else {
            return now;
        };
        // Every update is one whole assignment: a panic elsewhere leaves it usable.
        let mut theoretical = self.theoretical.locked();
        let at = theoretical
            .checked_sub(self.burst)
            .map_or(now, |earliest| earliest.max(now));
        *theoretical = (*theoretical).max(now) + spacing;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_goes_at_once_and_the_rest_at_the_steady_rate() {
        let rate = FullSyncRate::new(4);
        let now = Instant::now();
        let slots: Vec<_> = (0..7).map(|_| rate.reserve(now) - now).collect();
        let ms = Duration::from_millis;
        assert_eq!(
            slots,
            [ms(0), ms(0), ms(0), ms(0), ms(250), ms(500), ms(750)]
        );
        // After a quiet second the burst is available again.
        let later = now + Duration::from_secs(2);
        assert_eq!(rate.reserve(later), later);
    }

    #[test]
    fn zero_is_no_limit() {
        let rate = FullSyncRate::new(0);
        let now = Instant::now();
        assert!((0..1000).all(|_| rate.reserve(now) == now));
    }
}
