//! Websocket sync (`GET /websocket`): `MYSELF` gets the full config, `RUNNING_MODE` the
//! standalone reply, and every committed change goes to every session as one frame. With a
//! sync token configured, the upgrade needs `X-Shenyu-Sync-Token` equal to it.
//!
//! A session answers at most one `MYSELF` per full-sync interval: one arriving sooner is not
//! dropped but owed, and all those owed are answered by one full sync when the interval ends
//! (it reflects the config at that time). Increments keep flowing meanwhile, and a full sync
//! is never reordered against them (see [`Admin::snapshot_for`]).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use model::{DataEvent, DataEventType, SyncFaultKind, SyncMode};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use super::fault::{self, SyncFaults};
use super::{Publisher, closed};
use crate::AppState;
use crate::auth::secrets_equal;
use crate::error::ApiError;
use crate::service::{Admin, Snapshot};

/// The header carrying ShenYu's websocket sync token.
const SYNC_TOKEN_HEADER: &str = "X-Shenyu-Sync-Token";

/// The reply to `RUNNING_MODE`.
const RUNNING_MODE_REPLY: &str = r#"{"eventType":"RUNNING_MODE","runningMode":"STANDALONE","isMaster":true,"masterUrl":"/websocket"}"#;

/// Serves `/websocket`.
#[derive(Debug, Clone)]
pub(crate) struct WebsocketPublisher {
    sync_token: SyncToken,
    /// The least time between two full syncs on one session.
    full_sync_interval: Duration,
    /// The test-only protocol fault hook, when on.
    faults: Option<Arc<SyncFaults>>,
}

/// The sync token a websocket upgrade must carry, if any (ShenYu 2.6 has none: open).
#[derive(Clone)]
struct SyncToken(Option<Arc<str>>);

impl std::fmt::Debug for SyncToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = if self.0.is_some() { "<set>" } else { "<none>" };
        f.debug_tuple("SyncToken").field(&shown).finish()
    }
}

impl WebsocketPublisher {
    /// A publisher requiring `sync_token` on upgrades when it is set, answering at most one
    /// `MYSELF` per `full_sync_interval` on each session, with the test-only protocol
    /// `faults` hook when given.
    pub(crate) fn new(
        sync_token: Option<&str>,
        full_sync_interval: Duration,
        faults: Option<Arc<SyncFaults>>,
    ) -> Self {
        Self {
            sync_token: SyncToken(sync_token.map(Arc::from)),
            full_sync_interval,
            faults,
        }
    }
}

impl Publisher for WebsocketPublisher {
    fn mode(&self) -> SyncMode {
        SyncMode::Websocket
    }

    fn routes(&self) -> Router<AppState> {
        Router::new()
            .route("/websocket", get(upgrade))
            .layer(Extension(self.clone()))
    }
}

async fn upgrade(
    State(state): State<AppState>,
    Extension(publisher): Extension<WebsocketPublisher>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let SyncToken(Some(expected)) = &publisher.sync_token {
        let given = headers
            .get(SYNC_TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !secrets_equal(given, expected) {
            tracing::warn!("websocket upgrade without a valid {SYNC_TOKEN_HEADER}");
            return ApiError::Unauthorized("sync token is error".to_owned()).into_response();
        }
    }
    let ws = match ws {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    // Subscribe before anything is read, so no change can fall between snapshot and stream.
    let events = state.admin.subscribe();
    let closing = state.closing.subscribe();
    let admin = Arc::clone(&state.admin);
    ws.on_upgrade(move |socket| async move {
        tracing::info!("websocket sync session opened");
        let full_syncs = FullSyncs::new(publisher.full_sync_interval);
        let faults = publisher.faults.as_deref();
        match session(socket, &admin, events, closing, full_syncs, faults).await {
            Ok(()) => tracing::info!("websocket sync session closed"),
            Err(e) => tracing::warn!(error = %e, "websocket sync session failed"),
        }
    })
}

/// The frames answering `MYSELF`: one per group, in order, even when a group is empty.
fn full_sync_frames(snapshot: Snapshot) -> Vec<String> {
    DataEvent::full_sync(DataEventType::Myself, snapshot.config, snapshot.app_auth)
        .iter()
        .map(DataEvent::to_websocket_text)
        .collect()
}

/// A session's full-sync rate limit: when the next `MYSELF` may be answered, and whether one
/// is owed.
#[derive(Debug)]
struct FullSyncs {
    interval: Duration,
    next: Instant,
    owed: bool,
}

impl FullSyncs {
    /// The first `MYSELF` is answered at once.
    fn new(interval: Duration) -> Self {
        Self {
            interval,
            next: Instant::now(),
            owed: false,
        }
    }

    /// A `MYSELF` arrived: whether to answer it now (otherwise it is owed until
    /// [`Self::next`]).
    fn request(&mut self, now: Instant) -> bool {
        if self.owed || now < self.next {
            if !self.owed {
                tracing::debug!(
                    interval_ms = self.interval.as_millis(),
                    "MYSELF within the full-sync interval; answered when it ends"
                );
            }
            self.owed = true;
            return false;
        }
        true
    }

    /// A full sync was sent at `now`.
    fn sent(&mut self, now: Instant) {
        self.owed = false;
        self.next = now + self.interval;
    }
}

/// Sends a full sync; `Ok(false)` when the config cannot be read (the session must end).
async fn full_sync(
    socket: &mut WebSocket,
    admin: &Admin,
    events: &mut broadcast::Receiver<DataEvent>,
    full_syncs: &mut FullSyncs,
) -> Result<bool, axum::Error> {
    full_syncs.sent(Instant::now());
    let snapshot = match admin.snapshot_for(events).await {
        Ok(snapshot) => snapshot,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the full config");
            return Ok(false);
        }
    };
    for frame in full_sync_frames(snapshot) {
        socket.send(Message::text(frame)).await?;
    }
    Ok(true)
}

async fn session(
    mut socket: WebSocket,
    admin: &Admin,
    mut events: broadcast::Receiver<DataEvent>,
    mut closing: watch::Receiver<bool>,
    mut full_syncs: FullSyncs,
    faults: Option<&SyncFaults>,
) -> Result<(), axum::Error> {
    // An increment a test-only `reorder` fault holds back until the next one is sent.
    let mut held = None;
    loop {
        let owed = full_syncs.owed;
        tokio::select! {
            message = socket.recv() => match message {
                None => return Ok(()),
                Some(message) => match message? {
                    Message::Text(text) => match text.as_str().trim() {
                        "MYSELF" => {
                            // Owed (not answered now) or answered: either way the session goes on.
                            let goes_on = !full_syncs.request(Instant::now())
                                || full_sync(&mut socket, admin, &mut events, &mut full_syncs).await?;
                            if !goes_on {
                                return close(socket, close_code::ERROR, "storage failure").await;
                            }
                        }
                        "RUNNING_MODE" => socket.send(Message::text(RUNNING_MODE_REPLY)).await?,
                        _ => {}
                    },
                    Message::Close(_) => return Ok(()),
                    // Pings are answered by the websocket layer itself.
                    Message::Binary(_) | Message::Ping(_) | Message::Pong(_) => {}
                },
            },
            event = events.recv() => match event {
                Ok(event) => {
                    if !push(&mut socket, event.to_websocket_text(), faults, &mut held).await? {
                        tracing::warn!("test-only closeMidPush: the session ends instead of pushing");
                        return Ok(());
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "websocket session fell behind; closing it so the gateway resyncs");
                    return close(socket, close_code::AGAIN, "fell behind, reconnect and resync").await;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return close(socket, close_code::AWAY, "admin shutting down").await;
                }
            },
            () = tokio::time::sleep_until(full_syncs.next), if owed => {
                if !full_sync(&mut socket, admin, &mut events, &mut full_syncs).await? {
                    return close(socket, close_code::ERROR, "storage failure").await;
                }
            }
            () = closed(&mut closing) => {
                return close(socket, close_code::AWAY, "admin shutting down").await;
            }
        }
    }
}

/// Sends an increment's `frame`, as the armed test-only fault (if any) says (`sync::fault`):
/// dropped, sent twice, held until the next one is sent (`held`), or `Ok(false)`: the session
/// must end at once, without a close frame.
async fn push(
    socket: &mut WebSocket,
    frame: String,
    faults: Option<&SyncFaults>,
    held: &mut Option<String>,
) -> Result<bool, axum::Error> {
    match fault::take(faults, SyncMode::Websocket).map(|(kind, _)| kind) {
        Some(SyncFaultKind::Drop) => {}
        Some(SyncFaultKind::CloseMidPush) => return Ok(false),
        Some(SyncFaultKind::Reorder) if held.is_none() => {
            *held = Some(frame);
            return Ok(true);
        }
        Some(SyncFaultKind::Duplicate) => {
            socket.send(Message::text(frame.clone())).await?;
            socket.send(Message::text(frame)).await?;
        }
        _ => socket.send(Message::text(frame)).await?,
    }
    if let Some(earlier) = held.take() {
        socket.send(Message::text(earlier)).await?;
    }
    Ok(true)
}

async fn close(mut socket: WebSocket, code: u16, reason: &'static str) -> Result<(), axum::Error> {
    socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await
}
