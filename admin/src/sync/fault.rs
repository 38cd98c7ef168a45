//! Test-only protocol faults on the sync channel (harness case files' `syncFault` step
//! change; `docs/faults.md`). Off unless the admin starts with the hidden flag
//! `--test-only-sync-faults` (no environment variable: it cannot be switched on by a stray
//! setting); then `POST /test-only/sync-fault` (behind the login token) arms one fault for the
//! next `count` pushes:
//!
//! | kind | mode | what the admin does instead of the push |
//! |---|---|---|
//! | `drop` | websocket | the increment is not sent |
//! | `duplicate` | websocket | the increment is sent twice |
//! | `reorder` | websocket | the increment is held and sent right after the next one |
//! | `closeMidPush` | websocket | the session ends (no close frame) instead of sending it |
//! | `latePush` | websocket | the increment waits `delayMs` before it is sent (the next ones wait behind it) |
//! | `emptyAnswer` | http | a listener answer naming changed groups names none |
//! | `lateAnswer` | http | a listener answer naming changed groups waits `delayMs` first |
//! | `corruptGroup` | http | a `/configs/fetch` answer's first group carries its real md5 and time with data no gateway can read |
//!
//! Faults armed one after another queue up: the first is consumed (`count` times) before the
//! next applies, and a fault of another mode's kind is never consumed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use model::lock::MutexExt;

use axum::extract::Extension;
use axum::routing::post;
use axum::{Json, Router};
use model::{AdminResult, SyncFaultKind, SyncFaultRequest, SyncMode};

use crate::AppState;

/// The faults armed, in order: shared by the endpoint and the publishers.
#[derive(Debug, Default)]
pub(crate) struct SyncFaults {
    armed: Mutex<VecDeque<SyncFaultRequest>>,
}

impl SyncFaults {
    /// Arms `request` after those already armed.
    fn arm(&self, request: SyncFaultRequest) {
        tracing::warn!(?request, "test-only sync fault armed");
        if request.count > 0 {
            self.lock().push_back(request);
        }
    }

    /// Consumes one use of the first armed fault if it is one of `mode`'s channel (a push
    /// or a listener answer, not a fetch answer): the kind and its delay.
    pub(crate) fn take(&self, mode: SyncMode) -> Option<(SyncFaultKind, Duration)> {
        self.take_where(|kind| kind.mode() == mode && !kind.on_fetch())
    }

    /// Consumes one use of the first armed fault if it hits a `/configs/fetch` answer.
    pub(crate) fn take_fetch(&self) -> Option<SyncFaultKind> {
        self.take_where(SyncFaultKind::on_fetch)
            .map(|(kind, _)| kind)
    }

    /// Consumes one use of the first armed fault if its kind is `wanted`.
    fn take_where(
        &self,
        wanted: impl Fn(SyncFaultKind) -> bool,
    ) -> Option<(SyncFaultKind, Duration)> {
        let mut armed = self.lock();
        let request = armed.front_mut().filter(|r| wanted(r.kind))?;
        let taken = (request.kind, Duration::from_millis(request.delay_ms));
        request.count -= 1;
        if request.count == 0 {
            armed.pop_front();
        }
        tracing::warn!(kind = ?taken.0, "test-only sync fault applied");
        Some(taken)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<SyncFaultRequest>> {
        self.armed.locked()
    }
}

/// Consumes a fault of `mode`'s channel from `faults`, when the hook is on.
pub(crate) fn take(
    faults: Option<&SyncFaults>,
    mode: SyncMode,
) -> Option<(SyncFaultKind, Duration)> {
    faults.and_then(|f| f.take(mode))
}

/// Adds `POST /test-only/sync-fault` to `router` (the token-protected routes) when the hook
/// is on.
pub(crate) fn routes(
    router: Router<AppState>,
    faults: Option<&Arc<SyncFaults>>,
) -> Router<AppState> {
    let Some(faults) = faults else {
        return router;
    };
    router
        .route("/test-only/sync-fault", post(arm))
        .layer(Extension(Arc::clone(faults)))
}

async fn arm(
    Extension(faults): Extension<Arc<SyncFaults>>,
    Json(request): Json<SyncFaultRequest>,
) -> Json<AdminResult<()>> {
    faults.arm(request);
    Json(AdminResult::success("armed", ()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_consumed_count_times_by_its_mode_only() {
        let faults = SyncFaults::default();
        faults.arm(serde_json::from_str(r#"{"kind":"duplicate","count":2}"#).unwrap());
        assert_eq!(faults.take(SyncMode::Http), None);
        for _ in 0..2 {
            assert_eq!(
                faults.take(SyncMode::Websocket),
                Some((SyncFaultKind::Duplicate, Duration::ZERO))
            );
        }
        assert_eq!(faults.take(SyncMode::Websocket), None);
        faults.arm(serde_json::from_str(r#"{"kind":"lateAnswer","delayMs":5}"#).unwrap());
        faults.arm(serde_json::from_str(r#"{"kind":"drop"}"#).unwrap());
        assert_eq!(faults.take(SyncMode::Websocket), None, "queued behind");
        assert_eq!(
            take(Some(&faults), SyncMode::Http),
            Some((SyncFaultKind::LateAnswer, Duration::from_millis(5)))
        );
        assert_eq!(take(None, SyncMode::Http), None);
        assert_eq!(
            faults.take(SyncMode::Websocket),
            Some((SyncFaultKind::Drop, Duration::ZERO))
        );
    }

    #[test]
    fn a_fetch_fault_is_consumed_by_fetch_answers_only() {
        let faults = SyncFaults::default();
        faults.arm(serde_json::from_str(r#"{"kind":"corruptGroup"}"#).unwrap());
        assert_eq!(faults.take(SyncMode::Http), None, "not a listener answer's");
        assert_eq!(faults.take_fetch(), Some(SyncFaultKind::CorruptGroup));
        assert_eq!(faults.take_fetch(), None, "used up");
        faults.arm(serde_json::from_str(r#"{"kind":"emptyAnswer"}"#).unwrap());
        assert_eq!(faults.take_fetch(), None, "a listener answer's");
    }
}
