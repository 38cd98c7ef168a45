//! Retries: a short back-off (10 ms doubling to 100 ms) and a budget of
//! [`RETRY_BUDGET_TIMEOUTS`] rule timeouts shared by all attempts of a request: no retry
//! starts past it, and an attempt's timeout is cut to what is left of it.

use std::time::Duration;

use tokio::time::Instant;

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use model::GatewayError;

use crate::plugin::Rejection;

/// The wait before the first retry; it doubles for each next one up to [`RETRY_BACKOFF_CAP`].
const RETRY_BACKOFF_START: Duration = Duration::from_millis(10);
/// The longest wait between two attempts.
const RETRY_BACKOFF_CAP: Duration = Duration::from_millis(100);
/// All attempts of a request together take at most this many rule timeouts: what ShenYu's
/// default of 3 retries can take, so that such a rule behaves as there.
pub(super) const RETRY_BUDGET_TIMEOUTS: u32 = 4;

/// The time all attempts of one request may take.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    /// The rule's timeout, per attempt.
    timeout: Duration,
    /// When the budget is spent.
    deadline: Instant,
}

impl Budget {
    /// The budget of a request under a rule timeout of `timeout`, starting now.
    pub(super) fn new(timeout: Duration) -> Budget {
        Budget {
            timeout,
            deadline: Instant::now() + timeout * RETRY_BUDGET_TIMEOUTS,
        }
    }

    /// The timeout of an attempt starting at `started`: the rule's, cut to what is left.
    pub(super) fn attempt_timeout(&self, started: Instant) -> Duration {
        self.deadline
            .saturating_duration_since(started)
            .min(self.timeout)
    }

    /// The wait before retry number `done + 1`, or `None` when the budget does not allow it.
    pub(super) fn wait(&self, done: u32) -> Option<Duration> {
        let wait = retry_wait(done);
        (Instant::now() + wait < self.deadline).then_some(wait)
    }
}

/// The wait before retry number `done + 1`: [`RETRY_BACKOFF_START`] doubled `done` times, at
/// most [`RETRY_BACKOFF_CAP`].
fn retry_wait(done: u32) -> Duration {
    RETRY_BACKOFF_START
        .saturating_mul(1 << done.min(16))
        .min(RETRY_BACKOFF_CAP)
}

/// 503 -119 when a failover retry finds no upstream it has not tried.
pub(super) fn no_upstream_left() -> Response {
    Rejection::new(
        StatusCode::SERVICE_UNAVAILABLE,
        GatewayError::new(
            GatewayError::NO_HEALTHY_UPSTREAM,
            "Can not find healthy upstream url after failover!",
        ),
    )
    .into_response()
}
