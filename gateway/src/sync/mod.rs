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
//! The bugs the gateway can emulate on this path (tests only) live in `emulate.rs`, out of
//! the subscribers' sight.

pub(crate) mod confirm;
mod emulate;
pub(crate) mod etcd;
mod follower;
pub(crate) mod http_long_poll;
mod keyspace;
pub(crate) mod start;
pub(crate) mod websocket;
pub(crate) mod zookeeper;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use model::{Backoff, ConfigGroup, DataEvent, DataEventType, SyncMode};
use rand::Rng;
use serde::Serialize;

pub use self::confirm::confirm_sync;
use self::emulate::Emulation;
pub use self::follower::Follower;
use crate::plugin::Registry;
use crate::snapshot::{Changes, Snapshot};
use model::lock::MutexExt;

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
        source: Box<dyn std::error::Error + Send + Sync>,
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
    /// A ShenYu bug to reproduce (tests only), and what it holds back.
    emulation: Emulation,
    /// Told of every config swapped in (`gantry sim`), if anyone is.
    on_apply: Option<crate::OnApply>,
    /// Subscriber sessions currently connected (one per admin at most).
    sessions: AtomicUsize,
    /// The ZooKeeper session in use, as ZooKeeper prints its id (`0x…`).
    zookeeper_session: Mutex<Option<String>>,
    full_syncs: AtomicU64,
    events_applied: AtomicU64,
    events_rejected: AtomicU64,
    /// Tells the confirmations (`confirm.rs`) of every config swapped in.
    applied: confirm::Applied,
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
    /// An empty config for a sync mode, compiled with `plugins` (the gateway's).
    pub(crate) fn new(mode: SyncMode, plugins: Arc<Registry>) -> SyncState {
        SyncState {
            snapshot: ArcSwap::from_pointee(Snapshot::empty(plugins)),
            writer: Mutex::new(()),
            mode,
            emulation: Emulation::default(),
            on_apply: None,
            sessions: AtomicUsize::new(0),
            zookeeper_session: Mutex::new(None),
            full_syncs: AtomicU64::new(0),
            events_applied: AtomicU64::new(0),
            events_rejected: AtomicU64::new(0),
            applied: confirm::Applied::default(),
        }
    }

    /// The same state, reproducing `bug` (see [`crate::EmulatedBug`] and `emulate.rs`).
    pub(crate) fn emulating(mut self, bug: Option<crate::EmulatedBug>) -> SyncState {
        self.emulation = Emulation::new(bug);
        self
    }

    /// The same state, telling `on_apply` of every config it swaps in.
    pub(crate) fn observed(mut self, on_apply: Option<crate::OnApply>) -> SyncState {
        self.on_apply = on_apply;
        self
    }

    /// Whether the gateway emulates `bug` (for a subscriber's own bugs).
    pub(crate) fn emulates(&self, bug: crate::EmulatedBug) -> bool {
        self.emulation.is(bug)
    }

    /// The current snapshot (lock-free).
    pub(crate) fn snapshot(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// What an emulated bug of the request path does to a request that found `current`
    /// (see [`emulate`]): the routing tables it uses instead of `current`'s under
    /// `--emulate-bug rebuild-per-change`; `None` otherwise.
    pub(crate) fn on_request(&self, current: &Arc<Snapshot>) -> Option<Arc<Snapshot>> {
        self.emulation.on_request(current)
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
    #[cfg(test)]
    pub(crate) fn apply_text(&self, text: &str) -> Result<Applied, SyncError> {
        Ok(match self.read_text(text)? {
            Some(event) => {
                self.apply(event);
                Applied::Event
            }
            None => Applied::Ignored,
        })
    }

    /// Reads one websocket text frame: its event, or `None` for a frame that carries no
    /// config gantry models; a malformed frame is counted as rejected.
    pub(crate) fn read_text(&self, text: &str) -> Result<Option<DataEvent>, SyncError> {
        DataEvent::from_websocket_text(text).map_err(|e| {
            self.reject();
            e.into()
        })
    }

    /// Applies one event: copy the data (sharing its structure), apply, compile what changed
    /// into the next snapshot, swap it in.
    pub(crate) fn apply(&self, event: DataEvent) {
        self.apply_all(vec![event]);
    }

    /// Applies `events` (as the emulated bug, if any, sees them: `emulate.rs`) to a copy of
    /// the config and swaps the result in once. The counters count the events applied (an
    /// emulated bug may drop some, or make them wait) by their type as received.
    pub(crate) fn apply_all(&self, events: Vec<DataEvent>) {
        let writer = self.writer.locked();
        let admitted = self.emulation.admit(events);
        self.swap(&writer, admitted.now, None);
        self.count(admitted.full, admitted.count);
    }

    /// Counts `count` events applied, `full` of them full syncs (by their type as received).
    fn count(&self, full: usize, count: usize) {
        self.full_syncs.fetch_add(full as u64, Ordering::Relaxed);
        self.events_applied
            .fetch_add(count as u64, Ordering::Relaxed);
    }

    /// Applies `events` as they are in one swap. The next snapshot is compiled from the
    /// previous one: unchanged selectors keep their compiled form and balancer state (also
    /// through a full sync), an unchanged config keeps its version. `applied_at_us`, if given,
    /// replaces the time a changed config reports it was applied. The plugins get their
    /// changed config as the snapshot is swapped in. `_writer`: the writer lock, held.
    fn swap(
        &self,
        _writer: &std::sync::MutexGuard<'_, ()>,
        events: Vec<DataEvent>,
        applied_at_us: Option<u64>,
    ) {
        if events.is_empty() {
            return;
        }
        let previous = self.snapshot.load();
        let mut data = previous.data.clone();
        let mut changes = Changes::default();
        for event in events {
            changes.extend(data.apply(event));
        }
        self.emulation.narrow(&mut changes, &previous.data, &data);
        let mut next = Snapshot::next(data, &changes, &previous);
        if let Some(at) = applied_at_us
            && next.version != previous.version
        {
            next.applied_at_us = at;
        }
        next.configure_plugins(Some(&previous));
        let changed = next.version != previous.version;
        let version = next.version;
        self.snapshot.store(Arc::new(next));
        if changed {
            self.applied.tell(version);
        }
        if let Some(on_apply) = &self.on_apply
            && changed
        {
            on_apply.call(&self.snapshot.load().data.config_set());
        }
    }

    /// The sync status.
    pub(crate) fn health(&self) -> SyncHealth {
        SyncHealth {
            mode: self.mode,
            connected: self.sessions.load(Ordering::Relaxed) > 0,
            full_syncs: self.full_syncs.load(Ordering::Relaxed),
            events_applied: self.events_applied.load(Ordering::Relaxed),
            events_rejected: self.events_rejected.load(Ordering::Relaxed),
            session: self.zookeeper_session.locked().clone(),
        }
    }

    /// Records the ZooKeeper session in use (`None` when it ended).
    pub(crate) fn set_zookeeper_session(&self, id: Option<String>) {
        *self.zookeeper_session.locked() = id;
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
    let wait = backoff.next_jittered(|max| model::world::with_rng(|rng| rng.random_range(0..=max)));
    tokio::time::sleep(wait).await;
}

#[cfg(test)]
mod tests {
    use super::emulate::LATE_APPLY_DELAY;
    use super::*;
    use crate::snapshot::now_us;

    /// A state of its own (its own plugins).
    fn state(mode: SyncMode) -> SyncState {
        SyncState::new(mode, Registry::standard())
    }

    const SELECTOR: &str = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[{"id":"1","pluginName":"divide","sort":1,"enabled":true}]}"#;

    #[test]
    fn the_drop_deletes_emulation_keeps_what_was_deleted() {
        let delete = SELECTOR.replace("MYSELF", "DELETE");
        let empty_refresh = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[]}"#;
        let honest = state(SyncMode::Websocket);
        let buggy = state(SyncMode::Websocket).emulating(Some(crate::EmulatedBug::DropDeletes));
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
        let honest = state(SyncMode::Websocket);
        let buggy =
            state(SyncMode::Websocket).emulating(Some(crate::EmulatedBug::ClearBeforeRefill));
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
                (2, 2 + u64::from(std::ptr::eq(state, &buggy)))
            );
        }
    }

    #[tokio::test]
    async fn the_late_apply_emulation_stamps_a_change_applied_before_serving_it() {
        let honest = state(SyncMode::Websocket);
        let buggy = state(SyncMode::Websocket).emulating(Some(crate::EmulatedBug::LateApply));
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

    /// With the refills task running (as a gateway runs it), a full sync's group is empty
    /// only for the window: no subscriber refills it.
    #[tokio::test]
    async fn the_refills_task_ends_each_clear_before_refill_window() {
        let buggy = Arc::new(
            state(SyncMode::Websocket).emulating(Some(crate::EmulatedBug::ClearBeforeRefill)),
        );
        let refills = tokio::spawn(Arc::clone(&buggy).refills());
        let started = tokio::time::Instant::now();
        buggy.apply_text(SELECTOR).unwrap();
        assert_eq!(buggy.snapshot().digest.selectors, 0, "the window");
        let deadline = started + emulate::CLEAR_WINDOW * 40;
        while buggy.snapshot().digest.selectors == 0 {
            assert!(tokio::time::Instant::now() < deadline, "never refilled");
            tokio::task::yield_now().await;
            tokio::time::sleep(emulate::CLEAR_WINDOW / 10).await;
        }
        assert!(started.elapsed() >= emulate::CLEAR_WINDOW);
        refills.abort();
    }

    /// Each gateway has its own plugin instances: the rate limiter one state's config made
    /// fail closed (Redis unreachable: HTTP 429) stays so when another state's config makes
    /// its own fail open (with process-wide plugins, the second config was every gateway's).
    #[tokio::test]
    async fn two_states_have_their_own_plugins() {
        use model::{ConditionData, EventPayload, PluginData, RuleData, SelectorData};

        use crate::plugin::Chain;
        use crate::router::test_helpers::TestRequest;

        let limited = |config: Option<&str>| {
            let plugin = PluginData {
                id: "9".into(),
                name: "rateLimiter".into(),
                enabled: true,
                sort: 20,
                config: config.map(str::to_owned),
                ..Default::default()
            };
            let selector = SelectorData {
                id: "l".into(),
                plugin_name: "rateLimiter".into(),
                enabled: true,
                sort: 1,
                condition_list: vec![ConditionData::new("uri", "startsWith", "/", "/")],
                ..Default::default()
            };
            let rule = RuleData {
                id: "r".into(),
                selector_id: "l".into(),
                plugin_name: "rateLimiter".into(),
                enabled: true,
                sort: 1,
                condition_data_list: vec![ConditionData::new("uri", "startsWith", "/", "/")],
                ..Default::default()
            };
            vec![
                DataEvent::new(DataEventType::Myself, EventPayload::Plugin(vec![plugin])),
                DataEvent::new(
                    DataEventType::Myself,
                    EventPayload::Selector(vec![selector]),
                ),
                DataEvent::new(DataEventType::Myself, EventPayload::Rule(vec![rule])),
            ]
        };
        let status = |state: &SyncState| {
            let snapshot = state.snapshot();
            let req = TestRequest::get("/x");
            async move {
                let decided = Chain::standard().run(&snapshot.active, &req.view()).await;
                decided.err().map(|r| r.status.as_u16())
            }
        };
        let closed = state(SyncMode::Websocket);
        closed.apply_all(limited(Some(
            r#"{"mode":"standalone","url":"127.0.0.1:1","failClosed":true}"#,
        )));
        assert_eq!(
            status(&closed).await,
            Some(429),
            "Redis down, failing closed"
        );
        let open = state(SyncMode::Websocket);
        open.apply_all(limited(Some(
            r#"{"mode":"standalone","url":"127.0.0.1:1","failClosed":false}"#,
        )));
        assert_eq!(
            status(&open).await,
            Some(404),
            "Redis down, failing open; then no divide"
        );
        assert_eq!(status(&closed).await, Some(429), "still its own config");
    }

    #[test]
    fn a_duplicated_increment_is_applied_once() {
        // The websocket `duplicate` protocol fault (docs/faults.md): the same frame twice.
        let update = SELECTOR.replace("MYSELF", "UPDATE");
        let delete = SELECTOR.replace("MYSELF", "DELETE");
        let once = state(SyncMode::Websocket);
        let twice = state(SyncMode::Websocket);
        for frame in [SELECTOR, &update, &delete] {
            once.apply_text(frame).unwrap();
            twice.apply_text(frame).unwrap();
            twice.apply_text(frame).unwrap();
            assert_eq!(once.snapshot().digest, twice.snapshot().digest, "{frame}");
        }
    }

    #[test]
    fn malformed_frames_are_counted_and_change_nothing() {
        let state = state(SyncMode::Websocket);
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
        let state = state(SyncMode::Http);
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
        let state = state(SyncMode::Websocket);
        let running = r#"{"eventType":"RUNNING_MODE","runningMode":"STANDALONE","isMaster":true,"masterUrl":"/websocket"}"#;
        assert_eq!(state.apply_text(running).unwrap(), Applied::Ignored);
        let discover = r#"{"groupType":"DISCOVER_UPSTREAM","eventType":"UPDATE","data":[{}]}"#;
        assert_eq!(state.apply_text(discover).unwrap(), Applied::Ignored);
        let h = state.health();
        assert_eq!((h.events_rejected, h.events_applied), (0, 0));
    }
}
