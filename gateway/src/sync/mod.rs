//! Config sync: subscribers receive the admin's events and apply them to the snapshot.
//!
//! ```text
//!   admin ──frames──▶ Subscriber (websocket.rs) ──text──▶ SyncState::apply_text
//!   admin ──groups──▶ Subscriber (http_long_poll.rs) ───▶ SyncState::apply_group
//!   store ──nodes───▶ Subscriber (zookeeper.rs, etcd.rs)
//!                      └ keyspace.rs: node → DataEvent ──▶ SyncState::apply, apply_all
//!                                                         │ parse → DataEvent
//!                                                         │ copy data, apply, compile the change
//!                                                         ▼
//!                                           ArcSwap<Snapshot>  ◀── requests (load, no lock)
//! ```
//!
//! [`SyncState`] is shared by the subscriber and the server: it owns the snapshot and the
//! counters reported by `/actuator/health`. A frame that cannot be read is a [`SyncError`]:
//! logged at WARN, counted, and otherwise ignored, so the last good config keeps serving.

pub(crate) mod etcd;
pub(crate) mod http_long_poll;
mod keyspace;
pub(crate) mod websocket;
pub(crate) mod zookeeper;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use model::{Backoff, ConfigGroup, DataEvent, DataEventType, EventPayload, SyncMode};
use rand::Rng;
use serde::Serialize;

use crate::snapshot::{Changes, Snapshot, now_us};

/// How long [`crate::EmulatedBug::ClearBeforeRefill`] leaves a group empty.
pub(crate) const CLEAR_WINDOW: std::time::Duration = std::time::Duration::from_millis(250);

/// How long after stamping a change applied [`crate::EmulatedBug::LateApply`] swaps it in.
pub(crate) const LATE_APPLY_DELAY: std::time::Duration = std::time::Duration::from_millis(200);

/// Locks `mutex`, ignoring poisoning (every writer leaves the data consistent).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A payload of the same group with no item.
fn emptied(payload: &EventPayload) -> EventPayload {
    match payload {
        EventPayload::Plugin(_) => EventPayload::Plugin(Vec::new()),
        EventPayload::Selector(_) => EventPayload::Selector(Vec::new()),
        EventPayload::Rule(_) => EventPayload::Rule(Vec::new()),
        EventPayload::MetaData(_) => EventPayload::MetaData(Vec::new()),
        EventPayload::AppAuth(_) => EventPayload::AppAuth(Vec::new()),
    }
}

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
    /// The admin refused the websocket upgrade with HTTP 401: it wants a sync token and got
    /// none, or another one.
    #[error(
        "{url} refused the websocket upgrade with HTTP 401: {}",
        if *token_sent {
            "the X-Shenyu-Sync-Token given with --sync-token (GANTRY_GATEWAY_SYNC_TOKEN) is not the admin's"
        } else {
            "the admin requires X-Shenyu-Sync-Token; start the gateway with --sync-token (GANTRY_GATEWAY_SYNC_TOKEN) set to the admin's token"
        }
    )]
    SyncTokenRefused {
        /// The websocket URL.
        url: String,
        /// Whether a token was sent.
        token_sent: bool,
    },
    /// A connected session heard nothing (not even a pong) for the silence bound: a silent
    /// partition.
    #[error("no frame from {url} for {after:?}: connection given up")]
    Silent {
        /// The websocket URL.
        url: String,
        /// The silence bound.
        after: std::time::Duration,
    },
    /// The websocket handshake did not finish in time.
    #[error("connection to {url} timed out")]
    ConnectTimeout {
        /// The admin URL.
        url: String,
    },
    /// An HTTP request to the admin failed (connect, read timeout, broken body).
    #[error("request to {url} failed: {source}")]
    Http {
        /// The request URL.
        url: String,
        /// What went wrong.
        source: reqwest::Error,
    },
    /// The admin answered, but not with success (status or envelope code).
    #[error("{url} answered HTTP {status}, code {code}: {message}")]
    Refused {
        /// The request URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// Envelope code (0 when the body was not an envelope).
        code: i32,
        /// Envelope message or body excerpt.
        message: String,
    },
    /// The admin rejected the token (HTTP 401 or code 600): log in again.
    #[error("{url} rejected the access token")]
    Unauthorized {
        /// The request URL.
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
    /// A ShenYu bug to reproduce (tests only).
    emulate: Option<crate::EmulatedBug>,
    /// Events an emulated bug holds back for [`SyncState::refill`].
    held: Mutex<Held>,
    /// Subscriber sessions currently connected (one per admin at most).
    sessions: AtomicUsize,
    /// The ZooKeeper session in use, as ZooKeeper prints its id (`0x…`).
    zookeeper_session: Mutex<Option<String>>,
    full_syncs: AtomicU64,
    events_applied: AtomicU64,
    events_rejected: AtomicU64,
}

/// What an emulated bug holds back until [`SyncState::refill`].
#[derive(Debug, Default)]
struct Held {
    /// [`crate::EmulatedBug::ClearBeforeRefill`]: full events whose groups were swapped in
    /// emptied; [`crate::EmulatedBug::LateApply`]: every event received.
    events: Vec<DataEvent>,
    /// [`crate::EmulatedBug::LateApply`]: when the first of them arrived, the apply time the
    /// gateway reports for them.
    arrived_us: Option<u64>,
}

/// The `sync` part of `/actuator/health`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SyncHealth {
    /// Sync mode name.
    pub(crate) mode: SyncMode,
    /// Whether the subscriber is connected to at least one admin.
    pub(crate) connected: bool,
    /// Full syncs applied (websocket MYSELF / REFRESH frames, accepted long-poll groups;
    /// one per group).
    pub(crate) full_syncs: u64,
    /// Events applied (full and incremental).
    pub(crate) events_applied: u64,
    /// Frames or fetched groups rejected as malformed.
    pub(crate) events_rejected: u64,
    /// ZooKeeper: the id of the session in use (`0x…`, as ZooKeeper's `cons` prints it);
    /// absent between sessions and in the other modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
}

impl SyncState {
    /// An empty config for a sync mode.
    pub(crate) fn new(mode: SyncMode) -> SyncState {
        SyncState {
            snapshot: ArcSwap::from_pointee(Snapshot::default()),
            writer: Mutex::new(()),
            mode,
            emulate: None,
            held: Mutex::new(Held::default()),
            sessions: AtomicUsize::new(0),
            zookeeper_session: Mutex::new(None),
            full_syncs: AtomicU64::new(0),
            events_applied: AtomicU64::new(0),
            events_rejected: AtomicU64::new(0),
        }
    }

    /// The same state, reproducing `bug` (see [`crate::EmulatedBug`]).
    pub(crate) fn emulating(mut self, bug: Option<crate::EmulatedBug>) -> SyncState {
        self.emulate = bug;
        self
    }

    /// `event` as the emulated bug would see it: `None` when it drops it.
    fn as_emulated(&self, mut event: DataEvent) -> Option<DataEvent> {
        match self.emulate {
            None => Some(event),
            Some(crate::EmulatedBug::ClearBeforeRefill) if event.event_type.is_full() => {
                let emptied = DataEvent::new(event.event_type, emptied(&event.payload));
                lock(&self.held).events.push(event);
                Some(emptied)
            }
            Some(
                crate::EmulatedBug::ClearBeforeRefill
                | crate::EmulatedBug::ResumeCompactedWatch
                | crate::EmulatedBug::RoundRobinIgnoresWeights
                | crate::EmulatedBug::HashRingOffByOne
                | crate::EmulatedBug::LeastActiveIgnoresInFlight
                | crate::EmulatedBug::LimiterForgetsReleases
                | crate::EmulatedBug::RandomIgnoresWeights
                | crate::EmulatedBug::LateApply,
            ) => Some(event),
            Some(crate::EmulatedBug::DropDeletes) => match event.event_type {
                DataEventType::Delete => None,
                t if t.is_full() => {
                    event.event_type = DataEventType::Update;
                    Some(event)
                }
                _ => Some(event),
            },
        }
    }

    /// Applies what an emulated bug held back: under
    /// [`crate::EmulatedBug::ClearBeforeRefill`], after [`CLEAR_WINDOW`], the full events
    /// whose groups were swapped in emptied; under [`crate::EmulatedBug::LateApply`], after
    /// [`LATE_APPLY_DELAY`], every event received, stamped applied when the first arrived.
    /// Otherwise returns at once. Every subscriber awaits it after applying what it received.
    pub(crate) async fn refill(&self) {
        let window = match self.emulate {
            Some(crate::EmulatedBug::ClearBeforeRefill) => CLEAR_WINDOW,
            Some(crate::EmulatedBug::LateApply) => LATE_APPLY_DELAY,
            _ => return,
        };
        let Held { events, arrived_us } = std::mem::take(&mut *lock(&self.held));
        if events.is_empty() {
            return;
        }
        tokio::time::sleep(window).await;
        self.swap(events, arrived_us);
    }

    /// The current snapshot (lock-free).
    pub(crate) fn snapshot(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// Marks a subscriber session to an admin as connected until the guard is dropped.
    pub(crate) fn connected(&self) -> ConnectedGuard<'_> {
        self.sessions.fetch_add(1, Ordering::Relaxed);
        ConnectedGuard(self)
    }

    /// Replaces one whole group with `data` (a long-poll fetch the caller accepted): one
    /// swap. Unreadable items are counted as a rejection and change nothing.
    pub(crate) fn apply_group(
        &self,
        group: ConfigGroup,
        data: Vec<serde_json::Value>,
    ) -> Result<Applied, SyncError> {
        match DataEvent::from_wire(group, DataEventType::Refresh, data) {
            Ok(Some(event)) => {
                self.apply(event);
                Ok(Applied::Event)
            }
            Ok(None) => Ok(Applied::Ignored),
            Err(e) => {
                self.reject();
                Err(e.into())
            }
        }
    }

    /// Counts a rejected frame or response.
    pub(crate) fn reject(&self) {
        self.events_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads and applies one websocket text frame; a malformed frame is counted and
    /// leaves the snapshot untouched.
    pub(crate) fn apply_text(&self, text: &str) -> Result<Applied, SyncError> {
        match DataEvent::from_websocket_text(text) {
            Ok(Some(event)) => {
                self.apply(event);
                Ok(Applied::Event)
            }
            Ok(None) => Ok(Applied::Ignored),
            Err(e) => {
                self.reject();
                Err(e.into())
            }
        }
    }

    /// Applies one event: copy the data (sharing its structure), apply, compile what changed
    /// into the next snapshot, swap it in.
    pub(crate) fn apply(&self, event: DataEvent) {
        self.apply_all(vec![event]);
    }

    /// Applies `events` (as the emulated bug, if any, sees them) to a copy of the config and
    /// swaps the result in once. The counters count the events applied (an emulated bug may
    /// drop some) by their type as received.
    pub(crate) fn apply_all(&self, events: Vec<DataEvent>) {
        let (mut full, mut applied) = (0, Vec::with_capacity(events.len()));
        for event in events {
            let was_full = event.event_type.is_full();
            if let Some(event) = self.as_emulated(event) {
                full += usize::from(was_full);
                applied.push(event);
            }
        }
        let count = applied.len();
        if self.emulate == Some(crate::EmulatedBug::LateApply) {
            let mut held = lock(&self.held);
            held.arrived_us.get_or_insert_with(now_us);
            held.events.extend(applied);
        } else {
            self.swap(applied, None);
        }
        self.full_syncs.fetch_add(full as u64, Ordering::Relaxed);
        self.events_applied
            .fetch_add(count as u64, Ordering::Relaxed);
    }

    /// Applies `events` as they are in one swap. The next snapshot is compiled from the
    /// previous one: unchanged selectors keep their compiled form and balancer state (also
    /// through a full sync), an unchanged config keeps its version. `applied_at_us`, if given,
    /// replaces the time a changed config reports it was applied.
    fn swap(&self, events: Vec<DataEvent>, applied_at_us: Option<u64>) {
        if events.is_empty() {
            return;
        }
        let _writer = lock(&self.writer);
        let previous = self.snapshot.load();
        let mut data = previous.data.clone();
        let mut changes = Changes::default();
        for event in events {
            changes.extend(data.apply(event));
        }
        let mut next = Snapshot::next(data, &changes, Some(&previous));
        if let Some(at) = applied_at_us
            && next.version != previous.version
        {
            next.applied_at_us = at;
        }
        self.snapshot.store(Arc::new(next));
    }

    /// The sync status.
    pub(crate) fn health(&self) -> SyncHealth {
        SyncHealth {
            mode: self.mode,
            connected: self.sessions.load(Ordering::Relaxed) > 0,
            full_syncs: self.full_syncs.load(Ordering::Relaxed),
            events_applied: self.events_applied.load(Ordering::Relaxed),
            events_rejected: self.events_rejected.load(Ordering::Relaxed),
            session: lock(&self.zookeeper_session).clone(),
        }
    }

    /// Records the ZooKeeper session in use (`None` when it ended).
    pub(crate) fn set_zookeeper_session(&self, id: Option<String>) {
        *lock(&self.zookeeper_session) = id;
    }
}

/// A connected subscriber session; dropping it marks the session gone.
#[derive(Debug)]
pub(crate) struct ConnectedGuard<'a>(&'a SyncState);

impl Drop for ConnectedGuard<'_> {
    fn drop(&mut self) {
        self.0.sessions.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sleeps for `backoff`'s next wait, jittered to between half and all of its step.
pub(crate) async fn back_off(backoff: &mut Backoff) {
    let wait = backoff.next_jittered(|max| rand::rng().random_range(0..=max));
    tokio::time::sleep(wait).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELECTOR: &str = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[{"id":"1","pluginName":"divide","sort":1,"enabled":true}]}"#;

    #[test]
    fn the_drop_deletes_emulation_keeps_what_was_deleted() {
        let delete = SELECTOR.replace("MYSELF", "DELETE");
        let empty_refresh = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[]}"#;
        let honest = SyncState::new(SyncMode::Websocket);
        let buggy =
            SyncState::new(SyncMode::Websocket).emulating(Some(crate::EmulatedBug::DropDeletes));
        for state in [&honest, &buggy] {
            state.apply_text(SELECTOR).unwrap();
            state.apply_text(&delete).unwrap();
        }
        assert_eq!(honest.snapshot().digest.selectors, 0);
        assert_eq!(buggy.snapshot().digest.selectors, 1);
        honest.apply_text(SELECTOR).unwrap();
        for state in [&honest, &buggy] {
            state.apply_text(empty_refresh).unwrap();
        }
        assert_eq!(honest.snapshot().digest.selectors, 0);
        assert_eq!(buggy.snapshot().digest.selectors, 1, "a full sync merges");
    }

    #[tokio::test]
    async fn the_clear_before_refill_emulation_empties_a_group_until_the_refill() {
        let honest = SyncState::new(SyncMode::Websocket);
        let buggy = SyncState::new(SyncMode::Websocket)
            .emulating(Some(crate::EmulatedBug::ClearBeforeRefill));
        for state in [&honest, &buggy] {
            state.apply_text(SELECTOR).unwrap();
            state.refill().await;
            assert_eq!(state.snapshot().digest.selectors, 1);
            // A resync of the same group.
            state.apply_text(SELECTOR).unwrap();
        }
        assert_eq!(honest.snapshot().digest.selectors, 1);
        assert_eq!(buggy.snapshot().digest.selectors, 0, "the window");
        buggy.refill().await;
        assert_eq!(buggy.snapshot().digest.selectors, 1);
        // Increments are applied as they come.
        buggy
            .apply_text(&SELECTOR.replace("MYSELF", "DELETE"))
            .unwrap();
        assert_eq!(buggy.snapshot().digest.selectors, 0);
        for state in [&honest, &buggy] {
            let h = state.health();
            assert_eq!(
                (h.full_syncs, h.events_applied),
                (2, 2 + u64::from(state.emulate.is_some()))
            );
        }
    }

    #[tokio::test]
    async fn the_late_apply_emulation_stamps_a_change_applied_before_serving_it() {
        let honest = SyncState::new(SyncMode::Websocket);
        let buggy =
            SyncState::new(SyncMode::Websocket).emulating(Some(crate::EmulatedBug::LateApply));
        let before = now_us();
        honest.apply_text(SELECTOR).unwrap();
        assert_eq!(honest.snapshot().digest.selectors, 1, "served at once");
        assert!(honest.snapshot().applied_at_us >= before);
        buggy.apply_text(SELECTOR).unwrap();
        let arrived = now_us();
        assert_eq!(buggy.snapshot().digest.selectors, 0, "held back");
        assert_eq!(buggy.health().events_applied, 1, "counted as applied");
        buggy.refill().await;
        let swapped = now_us();
        let snapshot = buggy.snapshot();
        assert_eq!(snapshot.digest.selectors, 1);
        assert!(
            (before..=arrived).contains(&snapshot.applied_at_us),
            "stamped on arrival: {before} ≤ {} ≤ {arrived}",
            snapshot.applied_at_us
        );
        let late = u128::from(swapped - snapshot.applied_at_us);
        assert!(
            late >= LATE_APPLY_DELAY.as_micros(),
            "served {late} µs after the stamp"
        );
    }

    #[test]
    fn a_duplicated_increment_is_applied_once() {
        // The websocket `duplicate` protocol fault (docs/faults.md): the same frame twice.
        let update = SELECTOR.replace("MYSELF", "UPDATE");
        let delete = SELECTOR.replace("MYSELF", "DELETE");
        let once = SyncState::new(SyncMode::Websocket);
        let twice = SyncState::new(SyncMode::Websocket);
        for frame in [SELECTOR, &update, &delete] {
            once.apply_text(frame).unwrap();
            twice.apply_text(frame).unwrap();
            twice.apply_text(frame).unwrap();
            assert_eq!(once.snapshot().digest, twice.snapshot().digest, "{frame}");
        }
    }

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
    fn apply_group_replaces_or_rejects() {
        let state = SyncState::new(SyncMode::Http);
        let item = serde_json::json!({"id":"1","pluginName":"divide","sort":1,"enabled":true});
        assert_eq!(
            state
                .apply_group(ConfigGroup::Selector, vec![item])
                .unwrap(),
            Applied::Event
        );
        let before = state.snapshot().digest.clone();
        let bad = serde_json::json!({"id":"1","sort":"x"});
        assert!(state.apply_group(ConfigGroup::Selector, vec![bad]).is_err());
        assert_eq!(state.snapshot().digest, before);
        assert_eq!(
            state
                .apply_group(ConfigGroup::DiscoverUpstream, vec![])
                .unwrap(),
            Applied::Ignored
        );
        let a = state.connected();
        let b = state.connected();
        drop(a);
        assert!(state.health().connected);
        drop(b);
        let h = state.health();
        assert_eq!(
            (
                h.connected,
                h.events_rejected,
                h.events_applied,
                h.full_syncs
            ),
            (false, 1, 1, 1)
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
