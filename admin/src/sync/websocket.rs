//! Websocket sync (`GET /websocket`): `MYSELF` gets the full config, `RUNNING_MODE` the
//! standalone reply, and every committed change goes to every session as one frame. With a
//! sync token configured, the upgrade needs `X-Shenyu-Sync-Token` equal to it.

use std::sync::Arc;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use model::{DataEvent, DataEventType, EventPayload, SyncMode};
use tokio::sync::{broadcast, watch};

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
    /// A publisher requiring `sync_token` on upgrades when it is set.
    pub(crate) fn new(sync_token: Option<&str>) -> Self {
        Self {
            sync_token: SyncToken(sync_token.map(Arc::from)),
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
            .layer(Extension(self.sync_token.clone()))
    }
}

async fn upgrade(
    State(state): State<AppState>,
    Extension(SyncToken(expected)): Extension<SyncToken>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Some(expected) = expected {
        let given = headers
            .get(SYNC_TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !secrets_equal(given, &expected) {
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
        match session(socket, &admin, events, closing).await {
            Ok(()) => tracing::info!("websocket sync session closed"),
            Err(e) => tracing::warn!(error = %e, "websocket sync session failed"),
        }
    })
}

/// The frames answering `MYSELF`: one per group, in order, even when a group is empty.
fn full_sync_frames(snapshot: Snapshot) -> Vec<String> {
    let config = snapshot.config;
    [
        EventPayload::Plugin(config.plugins),
        EventPayload::Selector(config.selectors),
        EventPayload::Rule(config.rules),
        EventPayload::MetaData(config.meta_data),
        EventPayload::AppAuth(snapshot.app_auth),
    ]
    .into_iter()
    .map(|payload| DataEvent::new(DataEventType::Myself, payload).to_websocket_text())
    .collect()
}

async fn session(
    mut socket: WebSocket,
    admin: &Admin,
    mut events: broadcast::Receiver<DataEvent>,
    mut closing: watch::Receiver<bool>,
) -> Result<(), axum::Error> {
    loop {
        tokio::select! {
            message = socket.recv() => match message {
                None => return Ok(()),
                Some(message) => match message? {
                    Message::Text(text) => match text.as_str().trim() {
                        "MYSELF" => {
                            let snapshot = match admin.snapshot_for(&mut events).await {
                                Ok(snapshot) => snapshot,
                                Err(e) => {
                                    tracing::error!(error = %e, "cannot read the full config");
                                    return close(socket, close_code::ERROR, "storage failure").await;
                                }
                            };
                            for frame in full_sync_frames(snapshot) {
                                socket.send(Message::text(frame)).await?;
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
                Ok(event) => socket.send(Message::text(event.to_websocket_text())).await?,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "websocket session fell behind; closing it so the gateway resyncs");
                    return close(socket, close_code::AGAIN, "fell behind, reconnect and resync").await;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return close(socket, close_code::AWAY, "admin shutting down").await;
                }
            },
            () = closed(&mut closing) => {
                return close(socket, close_code::AWAY, "admin shutting down").await;
            }
        }
    }
}

async fn close(mut socket: WebSocket, code: u16, reason: &'static str) -> Result<(), axum::Error> {
    socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await
}
