//! Config sync: subscribers receive the admin's events and apply them to the snapshot.
//!
//! ```text
//!   admin ──frames──▶ Subscriber (websocket.rs) ──text──▶ SyncState::apply_text
//!                                                         │ parse → DataEvent
//!                                                         │ copy data, apply, compile
//!                                                         ▼
//!                                           ArcSwap<Snapshot>  ◀── requests (load, no lock)
//! ```
//!
//! [`SyncState`] is shared by the subscriber and the server: it owns the snapshot and the
//! counters reported by `/actuator/health`. A frame that cannot be read is a [`SyncError`]:
//! logged at WARN, counted, and otherwise ignored, so the last good config keeps serving.

pub(crate) mod websocket;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use model::{DataEvent, SyncMode, WebsocketData};
use serde::Serialize;

use crate::snapshot::Snapshot;

/// Why a sync step failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SyncError {
    /// The frame is not a readable event (bad JSON, bad field types, unknown names).
    #[error("malformed sync frame: {0}")]
    Malformed(#[from] serde_json::Error),
    /// The admin could not be reached or the connection broke.
    #[error("connection to {url} failed: {source}")]
    Connection {
        /// The admin URL.
        url: String,
        /// What went wrong.
        source: tokio_tungstenite::tungstenite::Error,
    },
    /// The websocket handshake did not finish in time.
    #[error("connection to {url} timed out")]
    ConnectTimeout {
        /// The admin URL.
        url: String,
    },
}

/// What became of a frame that was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The snapshot was rebuilt from the event.
    Event,
    /// A frame that carries no config gantry models (running mode, unmodelled group).
    Ignored,
}

/// A source of config events (one per sync mode).
pub(crate) trait Subscriber: Send + 'static {
    /// Runs until the task is aborted, applying events to `state`.
    fn run(self, state: Arc<SyncState>) -> impl Future<Output = ()> + Send;
}

/// The snapshot plus sync status, shared by the subscriber and the request handlers.
#[derive(Debug)]
pub(crate) struct SyncState {
    snapshot: ArcSwap<Snapshot>,
    /// Serialises writers; readers never take it.
    writer: Mutex<()>,
    mode: SyncMode,
    connected: AtomicBool,
    full_syncs: AtomicU64,
    events_applied: AtomicU64,
    events_rejected: AtomicU64,
}

/// The `sync` part of `/actuator/health`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SyncHealth {
    /// Sync mode name.
    pub(crate) mode: SyncMode,
    /// Whether the subscriber is connected to an admin.
    pub(crate) connected: bool,
    /// Full-sync frames applied (MYSELF / REFRESH, one per group).
    pub(crate) full_syncs: u64,
    /// Frames applied (full and incremental).
    pub(crate) events_applied: u64,
    /// Frames rejected as malformed.
    pub(crate) events_rejected: u64,
}

impl SyncState {
    /// An empty config for a sync mode.
    pub(crate) fn new(mode: SyncMode) -> SyncState {
        SyncState {
            snapshot: ArcSwap::from_pointee(Snapshot::default()),
            writer: Mutex::new(()),
            mode,
            connected: AtomicBool::new(false),
            full_syncs: AtomicU64::new(0),
            events_applied: AtomicU64::new(0),
            events_rejected: AtomicU64::new(0),
        }
    }

    /// The current snapshot (lock-free).
    pub(crate) fn snapshot(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// Records whether the subscriber is connected.
    pub(crate) fn set_connected(&self, connected: bool) {
        self.connected.store(connected, Ordering::Relaxed);
    }

    /// Reads and applies one websocket text frame; a malformed frame is counted and
    /// leaves the snapshot untouched.
    pub(crate) fn apply_text(&self, text: &str) -> Result<Applied, SyncError> {
        let result = parse_frame(text);
        match result {
            Ok(Some(event)) => {
                self.apply(event);
                Ok(Applied::Event)
            }
            Ok(None) => Ok(Applied::Ignored),
            Err(e) => {
                self.events_rejected.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Applies one event: copy the data, apply, compile a new snapshot, swap it in.
    pub(crate) fn apply(&self, event: DataEvent) {
        let full = event.event_type.is_full();
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut data = self.snapshot.load().data.clone();
        data.apply(event);
        self.snapshot.store(Arc::new(Snapshot::build(data)));
        if full {
            self.full_syncs.fetch_add(1, Ordering::Relaxed);
        }
        self.events_applied.fetch_add(1, Ordering::Relaxed);
    }

    /// The sync status.
    pub(crate) fn health(&self) -> SyncHealth {
        SyncHealth {
            mode: self.mode,
            connected: self.connected.load(Ordering::Relaxed),
            full_syncs: self.full_syncs.load(Ordering::Relaxed),
            events_applied: self.events_applied.load(Ordering::Relaxed),
            events_rejected: self.events_rejected.load(Ordering::Relaxed),
        }
    }
}

/// A frame as an event: `Ok(None)` for running-mode replies and groups gantry does not model.
fn parse_frame(text: &str) -> Result<Option<DataEvent>, SyncError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if value.get("eventType").and_then(|v| v.as_str()) == Some("RUNNING_MODE") {
        return Ok(None);
    }
    let frame: WebsocketData = serde_json::from_value(value)?;
    Ok(DataEvent::from_wire(
        frame.group_type,
        frame.event_type,
        frame.data,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELECTOR: &str = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[{"id":"1","pluginName":"divide","sort":1,"enabled":true}]}"#;

    #[test]
    fn malformed_frames_are_counted_and_change_nothing() {
        let state = SyncState::new(SyncMode::Websocket);
        assert_eq!(state.apply_text(SELECTOR).unwrap(), Applied::Event);
        let before = state.snapshot().digest.clone();
        for bad in [
            "{not json",
            r#"{"groupType":"NOPE","eventType":"UPDATE","data":[]}"#,
            r#"{"groupType":"SELECTOR","eventType":"SMASH","data":[]}"#,
            r#"{"groupType":"SELECTOR","eventType":"UPDATE","data":[{"sort":"x"}]}"#,
            r#"{"groupType":"RULE","eventType":"UPDATE","data":{"id":"1"}}"#,
        ] {
            assert!(
                matches!(state.apply_text(bad), Err(SyncError::Malformed(_))),
                "{bad}"
            );
        }
        assert_eq!(state.snapshot().digest, before);
        let h = state.health();
        assert_eq!(
            (h.events_rejected, h.events_applied, h.full_syncs),
            (5, 1, 1)
        );
    }

    #[test]
    fn running_mode_and_unmodelled_groups_are_ignored() {
        let state = SyncState::new(SyncMode::Websocket);
        let running = r#"{"eventType":"RUNNING_MODE","runningMode":"STANDALONE","isMaster":true,"masterUrl":"/websocket"}"#;
        assert_eq!(state.apply_text(running).unwrap(), Applied::Ignored);
        let discover = r#"{"groupType":"DISCOVER_UPSTREAM","eventType":"UPDATE","data":[{}]}"#;
        assert_eq!(state.apply_text(discover).unwrap(), Applied::Ignored);
        let h = state.health();
        assert_eq!((h.events_rejected, h.events_applied), (0, 0));
    }
}
