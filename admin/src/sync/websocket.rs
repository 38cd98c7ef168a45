//! Websocket sync (`GET /websocket`): `MYSELF` gets the full config, `RUNNING_MODE` the
//! standalone reply, and every committed change goes to every session as one frame. With a
//! sync token configured, the upgrade needs `X-Shenyu-Sync-Token` equal to it.
//!
//! A session answers at most one `MYSELF` per full-sync interval: one arriving sooner is not
//! dropped but owed, and all those owed are answered by one full sync when the interval ends
//! (it reflects the config at that time). Increments keep flowing meanwhile, and a full sync
//! is never reordered against them (see [`Admin::snapshot_for`]). Full syncs over all
//! sessions are limited too ([`FullSyncRate`]): one due while the shared rate is spent is
//! owed until its reserved slot.
//!
//! The endpoint is open to anyone unless a sync token is set, so what a client can hold is
//! bounded: at most `max_sessions` sessions at once (an upgrade beyond gets 503), and a
//! client message of at most [`MAX_MESSAGE`] in frames of at most [`MAX_FRAME`] (a longer one
//! closes the session with code 1009); clients only ever send short commands.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use model::{AdminResult, DataEvent, DataEventType, SyncConfirmation, SyncFaultKind, SyncMode};
use tokio::sync::{Semaphore, broadcast, watch};
use tokio::time::Instant;

use super::fault::{self, SyncFaults};
use super::full_sync_rate::FullSyncRate;
use super::status::{Peer, SyncStatus};
use super::{Publisher, closed};
use crate::AppState;
use crate::auth::secrets_equal;
use crate::error::ApiError;
use crate::service::{Admin, SharedEvent, Snapshot};

/// The header carrying ShenYu's websocket sync token.
const SYNC_TOKEN_HEADER: &str = "X-Shenyu-Sync-Token";

/// The reply to `RUNNING_MODE`.
const RUNNING_MODE_REPLY: &str = r#"{"eventType":"RUNNING_MODE","runningMode":"STANDALONE","isMaster":true,"masterUrl":"/websocket"}"#;

/// The longest message a client may send (tungstenite's default is 64 MiB, which a
/// never-ending fragmented message would hold per session); commands are a few bytes.
const MAX_MESSAGE: usize = 64 * 1024;

/// The longest frame a client may send.
const MAX_FRAME: usize = 16 * 1024;

/// A session's read buffer, grown when a message needs more: a gateway sends a few bytes
/// (`MYSELF`, `RUNNING_MODE`, pings), and tungstenite's 128 KiB default was most of the
/// ~138 KiB each session held (10,000 sessions: 1.4 GiB).
const READ_BUFFER: usize = 4 * 1024;

/// Serves `/websocket`.
#[derive(Debug, Clone)]
pub(crate) struct WebsocketPublisher {
    sync_token: SyncToken,
    /// The least time between two full syncs on one session.
    full_sync_interval: Duration,
    /// Full syncs over all sessions.
    full_sync_rate: Arc<FullSyncRate>,
    /// One permit per session that may be open at once.
    sessions: Arc<Semaphore>,
    /// The test-only protocol fault hook, when on.
    faults: Option<Arc<SyncFaults>>,
    /// What each session sent and what its gateway confirmed.
    status: Arc<SyncStatus>,
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
    /// `MYSELF` per `full_sync_interval` on each session and `full_sync_rate` per second
    /// over all ([`FullSyncRate::new`]), serving at most `max_sessions` sessions at once,
    /// with the test-only protocol `faults` hook when given, recording sends and
    /// confirmations in `status`.
    pub(crate) fn new(
        sync_token: Option<&str>,
        full_sync_interval: Duration,
        full_sync_rate: u32,
        max_sessions: usize,
        faults: Option<Arc<SyncFaults>>,
        status: Arc<SyncStatus>,
    ) -> Self {
        Self {
            sync_token: SyncToken(sync_token.map(Arc::from)),
            full_sync_interval,
            full_sync_rate: Arc::new(FullSyncRate::new(full_sync_rate)),
            sessions: Arc::new(Semaphore::new(max_sessions.min(Semaphore::MAX_PERMITS))),
            faults,
            status,
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
    Peer(peer): Peer,
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
        Ok(ws) => ws
            .max_message_size(MAX_MESSAGE)
            .max_frame_size(MAX_FRAME)
            .read_buffer_size(READ_BUFFER),
        Err(rejection) => return rejection.into_response(),
    };
    let Ok(permit) = Arc::clone(&publisher.sessions).try_acquire_owned() else {
        tracing::warn!("websocket upgrade refused: the session limit is reached");
        let status = StatusCode::SERVICE_UNAVAILABLE;
        let refusal = AdminResult::<()>::error(
            i32::from(status.as_u16()),
            "too many websocket sessions".to_owned(),
        );
        return (status, Json(refusal)).into_response();
    };
    // Subscribe before anything is read, so no change can fall between snapshot and stream.
    let events = state.admin.subscribe();
    let closing = state.closing.subscribe();
    let admin = Arc::clone(&state.admin);
    ws.on_upgrade(move |socket| async move {
        // Held until the session ends.
        let _permit = permit;
        tracing::info!("websocket sync session opened");
        let full_syncs = FullSyncs::new(
            publisher.full_sync_interval,
            Arc::clone(&publisher.full_sync_rate),
        );
        let faults = publisher.faults.as_deref();
        let mut link = Link {
            status: &publisher.status,
            key: publisher.status.session_opened(peer),
        };
        match session(
            socket, &admin, events, closing, full_syncs, faults, &mut link,
        )
        .await
        {
            Ok(()) => tracing::info!("websocket sync session closed"),
            Err(e) => tracing::warn!(error = %e, "websocket sync session failed"),
        }
        publisher.status.session_closed(&link.key);
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
    /// When an owed full sync may go: the end of the session's interval, or the slot the
    /// shared rate reserved for it.
    next: Instant,
    owed: bool,
    /// Whether `next` is a slot reserved from `rate`.
    reserved: bool,
    rate: Arc<FullSyncRate>,
}

impl FullSyncs {
    /// The first `MYSELF` is answered as soon as `rate` allows.
    fn new(interval: Duration, rate: Arc<FullSyncRate>) -> Self {
        Self {
            interval,
            next: Instant::now(),
            owed: false,
            reserved: false,
            rate,
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
        self.claim(now)
    }

    /// The session's own interval allows a full sync at `now`: whether the shared rate does
    /// too (a slot reserved earlier has come); otherwise it is owed until the slot reserved
    /// now.
    fn claim(&mut self, now: Instant) -> bool {
        if self.reserved {
            return true;
        }
        let slot = self.rate.reserve(now);
        if slot <= now {
            return true;
        }
        tracing::debug!("full-sync rate over all sessions spent; MYSELF answered at its slot");
        self.owed = true;
        self.reserved = true;
        self.next = slot;
        false
    }

    /// A full sync was sent at `now`.
    fn sent(&mut self, now: Instant) {
        self.owed = false;
        self.reserved = false;
        self.next = now + self.interval;
    }
}

/// A session as the sync status registry knows it: its key (the gateway's id once it
/// confirmed).
struct Link<'a> {
    status: &'a SyncStatus,
    key: String,
}

/// Sends a full sync; `Ok(false)` when the config cannot be read (the session must end).
async fn full_sync(
    socket: &mut WebSocket,
    admin: &Admin,
    events: &mut broadcast::Receiver<SharedEvent>,
    full_syncs: &mut FullSyncs,
    link: &Link<'_>,
) -> Result<bool, axum::Error> {
    full_syncs.sent(Instant::now());
    // Noted before the snapshot: it holds at least the changes up to this one.
    let seq = link.status.current();
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
    link.status.sent(&link.key, seq);
    Ok(true)
}

async fn session(
    mut socket: WebSocket,
    admin: &Admin,
    mut events: broadcast::Receiver<SharedEvent>,
    mut closing: watch::Receiver<bool>,
    mut full_syncs: FullSyncs,
    faults: Option<&SyncFaults>,
    link: &mut Link<'_>,
) -> Result<(), axum::Error> {
    // An increment a test-only `reorder` fault holds back until the next one is sent.
    let mut held = None;
    loop {
        let owed = full_syncs.owed;
        // Biased, so that a seed of `gantry sim` replays the same choice when several
        // branches are ready: the gateway's message, then events, the owed full sync, and
        // shutdown.
        tokio::select! {
            biased;
            message = socket.recv() => match message {
                None => return Ok(()),
                Some(Err(e)) if over_limit(&e) => {
                    tracing::warn!(error = %e, "websocket client message over the limit; closing");
                    return close(socket, close_code::SIZE, "message too big").await;
                }
                Some(message) => match message? {
                    Message::Text(text) => match text.as_str().trim() {
                        "MYSELF" => {
                            // Owed (not answered now) or answered: either way the session goes on.
                            let goes_on = !full_syncs.request(Instant::now())
                                || full_sync(&mut socket, admin, &mut events, &mut full_syncs, link).await?;
                            if !goes_on {
                                return close(socket, close_code::ERROR, "storage failure").await;
                            }
                        }
                        "RUNNING_MODE" => socket.send(Message::text(RUNNING_MODE_REPLY)).await?,
                        text => if let Some(confirmation) = SyncConfirmation::from_websocket_text(text) {
                            link.key = link.status.confirmed(&link.key, confirmation);
                        },
                    },
                    Message::Close(_) => return Ok(()),
                    // Pings are answered by the websocket layer itself.
                    Message::Binary(_) | Message::Ping(_) | Message::Pong(_) => {}
                },
            },
            event = events.recv() => match event {
                Ok(event) => {
                    let seq = link.status.note(&event);
                    let pushed = push(&mut socket, event.websocket_text(), faults, &mut held).await?;
                    if pushed {
                        link.status.sent(&link.key, seq);
                    } else {
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
                let goes_on = !full_syncs.claim(Instant::now())
                    || full_sync(&mut socket, admin, &mut events, &mut full_syncs, link).await?;
                if !goes_on {
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
/// dropped, sent twice, held until the next one is sent (`held`), sent after a delay (the
/// session waits meanwhile, so later increments wait behind it), or `Ok(false)`: the session
/// must end at once, without a close frame.
async fn push(
    socket: &mut WebSocket,
    frame: Utf8Bytes,
    faults: Option<&SyncFaults>,
    held: &mut Option<Utf8Bytes>,
) -> Result<bool, axum::Error> {
    let taken = fault::take(faults, SyncMode::Websocket);
    if let Some((SyncFaultKind::LatePush, delay)) = taken {
        tokio::time::sleep(delay).await;
    }
    match taken.map(|(kind, _)| kind) {
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

/// Whether a read failed on a client message or frame over [`MAX_MESSAGE`] or
/// [`MAX_FRAME`].
fn over_limit(e: &axum::Error) -> bool {
    std::error::Error::source(e)
        .and_then(|source| source.downcast_ref::<tungstenite::Error>())
        .is_some_and(|e| matches!(e, tungstenite::Error::Capacity(_)))
}

async fn close(mut socket: WebSocket, code: u16, reason: &'static str) -> Result<(), axum::Error> {
    socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await
}
