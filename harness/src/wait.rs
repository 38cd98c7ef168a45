//! Convergence waits (Gateway API's `AwaitConvergence`): poll a full check every `interval`
//! until it passes `consecutive` times in a row; any failure resets the streak; a hard
//! deadline fails with what was last seen.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// How to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Passes in a row needed.
    pub consecutive: u32,
    /// Time between the starts of two attempts.
    pub interval: Duration,
    /// Hard deadline, from the start of the wait.
    pub timeout: Duration,
}

/// A wait that converged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Converged {
    /// Time from the start of the wait to the start of the first pass of the final streak.
    pub first_pass: Duration,
    /// Time from the start of the wait to the end of that pass: when the harness saw it
    /// (what sync latency measures).
    pub first_seen: Duration,
    /// Number of attempts made.
    pub attempts: u32,
}

/// A wait that hit its deadline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not converged after {} ms ({attempts} attempts, final streak {streak}/{needed}); last seen: {last}", waited.as_millis())]
pub struct WaitTimeout {
    /// How long it waited.
    pub waited: Duration,
    /// Attempts made.
    pub attempts: u32,
    /// Passes in a row at the deadline.
    pub streak: u32,
    /// Passes in a row needed.
    pub needed: u32,
    /// The last failure's description.
    pub last: String,
}

/// Polls `check` (which returns `Err(description)` on a miss) under `policy`.
pub async fn await_convergence<F, Fut>(
    policy: WaitPolicy,
    mut check: F,
) -> Result<Converged, WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let start = Instant::now();
    let deadline = start + policy.timeout;
    let needed = policy.consecutive.max(1);
    let mut streak = 0;
    let mut streak_start = Duration::ZERO;
    let mut streak_seen = Duration::ZERO;
    let mut attempts = 0;
    let mut last = "no attempt finished".to_owned();
    loop {
        let began = Instant::now();
        attempts += 1;
        match check().await {
            Ok(()) => {
                if streak == 0 {
                    streak_start = began - start;
                    streak_seen = Instant::now() - start;
                }
                streak += 1;
                if streak >= needed {
                    return Ok(Converged {
                        first_pass: streak_start,
                        first_seen: streak_seen,
                        attempts,
                    });
                }
            }
            Err(seen) => {
                streak = 0;
                last = seen;
            }
        }
        let next = began + policy.interval;
        if next > deadline {
            return Err(WaitTimeout {
                waited: Instant::now() - start,
                attempts,
                streak,
                needed,
                last,
            });
        }
        tokio::time::sleep_until(next).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(timeout_ms: u64) -> WaitPolicy {
        WaitPolicy {
            consecutive: 3,
            interval: Duration::from_millis(50),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_resets_the_streak() {
        let mut script = vec![true, false, true, true, true].into_iter();
        let got = await_convergence(policy(10_000), || {
            let pass = script.next().expect("no more attempts expected");
            async move { if pass { Ok(()) } else { Err("miss".to_owned()) } }
        })
        .await
        .unwrap();
        assert_eq!(
            got,
            Converged {
                first_pass: Duration::from_millis(100),
                first_seen: Duration::from_millis(100),
                attempts: 5
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn always_failing_times_out_with_the_last_seen() {
        let mut n = 0;
        let err = await_convergence(policy(500), || {
            n += 1;
            let msg = format!("got 404 on attempt {n}");
            async move { Err(msg) }
        })
        .await
        .unwrap_err();
        assert_eq!(err.attempts, 11);
        assert_eq!(err.last, "got 404 on attempt 11");
        assert!(
            err.to_string()
                .contains("final streak 0/3); last seen: got 404 on attempt 11"),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn passing_at_once_converges_at_zero() {
        let got = await_convergence(policy(1_000), || async { Ok(()) })
            .await
            .unwrap();
        assert_eq!(
            got,
            Converged {
                first_pass: Duration::ZERO,
                first_seen: Duration::ZERO,
                attempts: 3
            }
        );
    }
}
