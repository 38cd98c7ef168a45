//! The sync path's share of `--emulate-bug` ([`EmulatedBug`]): tests only, never real traffic.
//!
//! Everything a bug changes in how events are applied happens here, inside
//! [`SyncState::apply_all`], so the subscribers do not know about it:
//! - [`EmulatedBug::DropDeletes`] drops DELETE events and merges full syncs;
//! - [`EmulatedBug::MergeFullSync`] merges full syncs (as UPDATE events);
//! - [`EmulatedBug::StaleMatchCache`] leaves out of an increment's changes the selectors that
//!   only lost a live rule (disabled or deleted), so their compiled matcher stays the old one
//!   ([`Emulation::narrow`]);
//! - [`EmulatedBug::DropOrphanRules`] drops the rules of an increment whose selector the
//!   gateway has not got (it tracks the selector ids it was sent);
//! - [`EmulatedBug::StaleAfterResubscribe`] drops every increment once a group came in full
//!   a second time (a new session's resync);
//! - [`EmulatedBug::ClearBeforeRefill`] swaps a full sync's groups in emptied at once and holds
//!   the events back for [`CLEAR_WINDOW`];
//! - [`EmulatedBug::LateApply`] holds every event back for [`LATE_APPLY_DELAY`], stamped
//!   applied when the first arrived;
//! - [`EmulatedBug::ReorderIncrements`] holds each incremental event until the next one and
//!   applies the two swapped;
//! - [`EmulatedBug::SkipRuleFullSync`] drops a full sync's rule group;
//! - [`EmulatedBug::HandleChangeIgnored`] leaves out of an increment's changes the selectors
//!   whose handle alone changed, so they are not recompiled ([`Emulation::narrow`]);
//! - [`EmulatedBug::RebuildPerChange`] leaves the sync path alone: the request path
//!   ([`SyncState::on_request`]) compiles the routing tables from nothing whenever the
//!   config's version moved, as APISIX's router does in each worker, and requests wait on it;
//! - [`EmulatedBug::LeakPerRequest`] leaves the sync path alone too: the request path leaks
//!   one file descriptor and [`LEAKED_PER_REQUEST`] bytes of memory per request.
//!
//! What one apply call holds back is a batch, swapped in one window later by
//! [`SyncState::refills`] (a task the gateway starts next to its subscriber when the bug holds
//! events). Until then the state behaves as a subscriber blocked on the window would: what
//! the next calls bring waits, unread and uncounted, and is then taken call by call, as if it
//! had just arrived (a call that opens a new batch makes the rest wait again).
//!
//! A few bugs live on the link instead, read by the subscribers from here:
//! [`EmulatedBug::WebsocketMessageCap`] ([`SyncState::websocket_config`]) and
//! [`EmulatedBug::NoSyncKeepalive`] ([`SyncState::keepalive_silence`]);
//! [`EmulatedBug::RecordRejectedVersion`] is a line of the long-polling subscriber's fetch.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use model::{ConfigGroup, DataEvent, DataEventType, EventPayload};
use tokio::sync::Notify;

use super::SyncState;
use crate::EmulatedBug;
use crate::snapshot::{Changes, ConfigData, Snapshot, now_us};
use model::lock::MutexExt;

/// How long [`EmulatedBug::ClearBeforeRefill`] leaves a group empty.
pub(crate) const CLEAR_WINDOW: Duration = Duration::from_millis(250);

/// How long after stamping a change applied [`EmulatedBug::LateApply`] swaps it in.
pub(crate) const LATE_APPLY_DELAY: Duration = Duration::from_millis(200);

/// The longest websocket message [`EmulatedBug::WebsocketMessageCap`] reads: ShenYu's shipped
/// `messageMaxSize` (shenyu-protocol.md §3.1).
pub(crate) const WEBSOCKET_MESSAGE_CAP: usize = 10240;

/// How long a sync connection may stay silent under [`EmulatedBug::NoSyncKeepalive`]: a day,
/// never within a test.
pub(crate) const NO_KEEPALIVE_SILENCE: Duration = Duration::from_secs(24 * 60 * 60);

/// How much memory a request leaks under [`EmulatedBug::LeakPerRequest`]: 256 KiB.
///
/// Resident memory does not grow a page at a time: the readings of a gateway leaking 64 KiB a
/// request (some 27 requests, 1.7 MiB, a run) grew in steps of exactly 2 MiB, and a run that
/// crossed no step read the same as the one before, so the leak judge, which wants a new high
/// every run, passed the planted leak now and then (a CI run read 26144, 28192, 30240, 30240
/// KiB). At 256 KiB a run leaks some 6.75 MiB, several steps, every run.
pub(crate) const LEAKED_PER_REQUEST: usize = 256 * 1024;

/// The bug the sync path emulates, and what it holds back.
#[derive(Debug, Default)]
pub(crate) struct Emulation {
    /// The bug (`None`: apply events as they are).
    bug: Option<EmulatedBug>,
    /// The open batch.
    held: Mutex<Held>,
    /// Signalled when a batch opens.
    opened: Notify,
    /// [`EmulatedBug::RebuildPerChange`]: the tables the request path last compiled from
    /// nothing (of some version of the config).
    router: Mutex<Option<Arc<Snapshot>>>,
}

/// What a bug holds back until [`SyncState::refill`]: the open batch, and what came after it.
#[derive(Debug, Default)]
struct Held {
    /// The open batch, in arrival order (empty: none is open).
    events: Vec<DataEvent>,
    /// The apply calls made while a batch was open, each waiting to be taken as it came.
    waiting: VecDeque<Vec<DataEvent>>,
    /// [`EmulatedBug::LateApply`]: when the first of them arrived, the apply time the gateway
    /// reports for them.
    arrived_us: Option<u64>,
    /// [`EmulatedBug::ReorderIncrements`]: the increment waiting for its successor.
    swapped: Option<DataEvent>,
    /// [`EmulatedBug::StaleAfterResubscribe`]: the groups taken in full so far.
    full_groups: Vec<ConfigGroup>,
    /// [`EmulatedBug::StaleAfterResubscribe`]: whether a group came in full again.
    resubscribed: bool,
    /// [`EmulatedBug::DropOrphanRules`]: the ids of the selectors held.
    selector_ids: std::collections::HashSet<String>,
}

/// Events as the emulated bug lets them through.
#[derive(Debug, Default)]
pub(super) struct Admitted {
    /// To apply now.
    pub(super) now: Vec<DataEvent>,
    /// Events counted as applied (now or when their batch is swapped in).
    pub(super) count: usize,
    /// How many of them were full syncs as received.
    pub(super) full: usize,
}

impl Emulation {
    /// The emulation of `bug`.
    pub(super) fn new(bug: Option<EmulatedBug>) -> Emulation {
        Emulation {
            bug,
            ..Emulation::default()
        }
    }

    /// Whether the gateway emulates `bug`.
    pub(super) fn is(&self, bug: EmulatedBug) -> bool {
        self.bug == Some(bug)
    }

    /// What a request that found `current` swapped in goes through under a bug of the
    /// request path; `None` for the tables to use: `current`'s.
    ///
    /// [`EmulatedBug::RebuildPerChange`]: the tables, compiled again from all of `current`'s
    /// data when the last ones are of another version; a request that finds a rebuild under
    /// way waits for it (one router, as in an APISIX worker).
    /// [`EmulatedBug::LeakPerRequest`]: one file descriptor opened and never closed, and
    /// [`LEAKED_PER_REQUEST`] bytes of memory written and never freed.
    pub(super) fn on_request(&self, current: &Arc<Snapshot>) -> Option<Arc<Snapshot>> {
        match self.bug {
            Some(EmulatedBug::RebuildPerChange) => Some(self.rebuilt(current)),
            Some(EmulatedBug::LeakPerRequest) => {
                if let Ok(file) = std::fs::File::open("/dev/null") {
                    std::mem::forget(file);
                }
                // Written, so resident; seen, so not optimised away.
                std::hint::black_box(Vec::leak(vec![0x5au8; LEAKED_PER_REQUEST]));
                None
            }
            _ => None,
        }
    }

    /// [`EmulatedBug::RebuildPerChange`]'s tables for a request that found `current`.
    fn rebuilt(&self, current: &Arc<Snapshot>) -> Arc<Snapshot> {
        let mut router = self.router.locked();
        if router.as_ref().is_none_or(|r| r.version != current.version) {
            *router = Some(Arc::new(Snapshot::from_scratch(
                current.data.clone(),
                current,
            )));
        }
        router.clone().expect("compiled just now if not before")
    }

    /// [`EmulatedBug::HandleChangeIgnored`]: drops from `changes` (an increment's, taking
    /// `before` to `after`) every selector whose data differs in its handle only (its rules
    /// the same), so its compiled form, upstreams included, stays the old one.
    pub(super) fn narrow(&self, changes: &mut Changes, before: &ConfigData, after: &ConfigData) {
        if self.is(EmulatedBug::StaleMatchCache) && !changes.all {
            changes
                .selectors
                .retain(|id| !only_lost_live_rules(id, before, after));
        }
        if !self.is(EmulatedBug::HandleChangeIgnored) || changes.all {
            return;
        }
        let without_handle = |data: &ConfigData, id: &str| {
            data.selectors.get(id).map(|(_, _, s)| model::SelectorData {
                handle: None,
                ..s.clone()
            })
        };
        changes.selectors.retain(|id| {
            let (old, new) = (without_handle(before, id), without_handle(after, id));
            old.is_none() || old != new || !before.rules.list(id).eq(after.rules.list(id))
        });
    }

    /// How long the bug holds a batch back; `None` when it holds nothing.
    fn window(&self) -> Option<Duration> {
        match self.bug? {
            EmulatedBug::ClearBeforeRefill => Some(CLEAR_WINDOW),
            EmulatedBug::LateApply => Some(LATE_APPLY_DELAY),
            _ => None,
        }
    }

    /// `events` (one apply call) as the bug sees them: what to apply now; what it holds back
    /// opens a batch; while one is open, the call waits. Called with the state's writer lock
    /// held, so that a batch cannot be swapped in meanwhile.
    pub(super) fn admit(&self, events: Vec<DataEvent>) -> Admitted {
        let mut held = self.held.locked();
        if !held.events.is_empty() {
            held.waiting.push_back(events);
            return Admitted::default();
        }
        self.admit_call(&mut held, events)
    }

    /// [`Emulation::admit`] for a call taken now.
    fn admit_call(&self, held: &mut MutexGuard<'_, Held>, events: Vec<DataEvent>) -> Admitted {
        let mut admitted = Admitted::default();
        for mut event in events {
            let full = event.event_type.is_full();
            match self.bug {
                Some(EmulatedBug::DropDeletes) => match event.event_type {
                    DataEventType::Delete => continue,
                    _ if full => event.event_type = DataEventType::Update,
                    _ => {}
                },
                Some(EmulatedBug::DropOrphanRules) => drop_orphan_rules(held, &mut event),
                Some(EmulatedBug::StaleAfterResubscribe) if full => {
                    if held.full_groups.contains(&event.group()) {
                        held.resubscribed = true;
                    } else {
                        held.full_groups.push(event.group());
                    }
                }
                Some(EmulatedBug::StaleAfterResubscribe) if held.resubscribed => {
                    admitted.count += 1;
                    continue;
                }
                Some(EmulatedBug::MergeFullSync) if full => {
                    event.event_type = DataEventType::Update;
                }
                Some(EmulatedBug::LateApply) => {
                    held.arrived_us.get_or_insert_with(now_us);
                    held.events.push(event);
                    admitted.count += 1;
                    admitted.full += usize::from(full);
                    continue;
                }
                Some(EmulatedBug::ReorderIncrements) if !full => {
                    admitted.count += 1;
                    if let Some(earlier) = held.swapped.take() {
                        admitted.now.push(event);
                        admitted.now.push(earlier);
                    } else {
                        held.swapped = Some(event);
                    }
                    continue;
                }
                Some(EmulatedBug::SkipRuleFullSync)
                    if full && event.group() == ConfigGroup::Rule =>
                {
                    admitted.count += 1;
                    admitted.full += 1;
                    continue;
                }
                Some(EmulatedBug::ClearBeforeRefill) if full || !held.events.is_empty() => {
                    if full {
                        admitted
                            .now
                            .push(DataEvent::new(event.event_type, emptied(&event.payload)));
                    }
                    held.events.push(event);
                    admitted.count += 1;
                    admitted.full += usize::from(full);
                    continue;
                }
                _ => {}
            }
            admitted.count += 1;
            admitted.full += usize::from(full);
            admitted.now.push(event);
        }
        if !held.events.is_empty() {
            self.opened.notify_one();
        }
        admitted
    }
}

impl SyncState {
    /// The silence bound a subscriber keeps: `silence`, or a day under
    /// [`EmulatedBug::NoSyncKeepalive`] (no ping, no keep-alive, no silence check).
    pub(crate) fn keepalive_silence(&self, silence: Duration) -> Duration {
        if self.emulation.is(EmulatedBug::NoSyncKeepalive) {
            NO_KEEPALIVE_SILENCE
        } else {
            silence
        }
    }

    /// The websocket subscriber's limits: tungstenite's defaults (64 MiB messages), or
    /// [`WEBSOCKET_MESSAGE_CAP`] under [`EmulatedBug::WebsocketMessageCap`].
    pub(crate) fn websocket_config(
        &self,
    ) -> Option<tokio_tungstenite::tungstenite::protocol::WebSocketConfig> {
        self.emulation
            .is(EmulatedBug::WebsocketMessageCap)
            .then(|| {
                tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                    .max_message_size(Some(WEBSOCKET_MESSAGE_CAP))
                    .max_frame_size(Some(WEBSOCKET_MESSAGE_CAP))
            })
    }

    /// Swaps in the open batch one window after it opened (at once when the bug holds
    /// nothing or no batch is open): under [`EmulatedBug::ClearBeforeRefill`] the full
    /// events whose groups were swapped in emptied (and what came after them), under
    /// [`EmulatedBug::LateApply`] every event received, stamped applied when the first
    /// arrived.
    pub(crate) async fn refill(&self) {
        let Some(window) = self.emulation.window() else {
            return;
        };
        if self.emulation.held.locked().events.is_empty() {
            return;
        }
        tokio::time::sleep(window).await;
        let writer = self.writer.locked();
        let mut held = self.emulation.held.locked();
        let events = std::mem::take(&mut held.events);
        let arrived_us = held.arrived_us.take();
        self.swap(&writer, events, arrived_us);
        // The calls that waited, as they came, until one opens a batch again.
        while held.events.is_empty()
            && let Some(call) = held.waiting.pop_front()
        {
            let admitted = self.emulation.admit_call(&mut held, call);
            self.swap(&writer, admitted.now, None);
            self.count(admitted.full, admitted.count);
        }
    }

    /// Refills every batch the emulated bug opens, until aborted; returns at once when the
    /// bug holds nothing back.
    pub(crate) async fn refills(self: Arc<Self>) {
        if self.emulation.window().is_none() {
            return;
        }
        loop {
            self.emulation.opened.notified().await;
            self.refill().await;
        }
    }
}

/// [`EmulatedBug::DropOrphanRules`]: keeps `held`'s selector ids up to date with `event`, and
/// drops from a rule increment the rules whose selector is not held.
fn drop_orphan_rules(held: &mut Held, event: &mut DataEvent) {
    let full = event.event_type.is_full();
    let delete = event.event_type == DataEventType::Delete;
    match &mut event.payload {
        EventPayload::Selector(items) => {
            if full {
                held.selector_ids.clear();
            }
            for s in items.iter() {
                if delete {
                    held.selector_ids.remove(&s.id);
                } else {
                    held.selector_ids.insert(s.id.clone());
                }
            }
        }
        EventPayload::Rule(items) if !full && !delete => {
            items.retain(|r| held.selector_ids.contains(&r.selector_id));
        }
        _ => {}
    }
}

/// [`EmulatedBug::StaleMatchCache`]: whether selector `id`, held before and after with the
/// same data, only lost live rules from `before` to `after` (one disabled or deleted, none
/// added or changed otherwise).
fn only_lost_live_rules(id: &str, before: &ConfigData, after: &ConfigData) -> bool {
    let selector = |data: &ConfigData| data.selectors.get(id).map(|(_, _, s)| s.clone());
    let live = |data: &ConfigData| {
        let rules = data.rules.list(id).filter(|r| r.enabled);
        rules.cloned().collect::<Vec<_>>()
    };
    let (old, new) = (live(before), live(after));
    selector(before).is_some()
        && selector(before) == selector(after)
        && new.len() < old.len()
        && new.iter().all(|r| old.contains(r))
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

#[cfg(test)]
mod regression_bug_tests {
    use std::sync::Arc;

    use model::SyncMode;

    use super::super::SyncState;
    use crate::EmulatedBug;
    use crate::plugin::Registry;

    const SELECTOR: &str = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[{"id":"1","pluginName":"divide","sort":1,"enabled":true}]}"#;
    const EMPTY_REFRESH: &str = r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[]}"#;

    /// [`EmulatedBug::RebuildPerChange`]: a request gets tables compiled from nothing, of the
    /// config swapped in, once per version (the same ones until the config moves); an honest
    /// gateway's requests use the snapshot's own.
    #[test]
    fn a_rebuilding_router_compiles_everything_again_once_per_change() {
        const DIVIDE: &str = r#"{"groupType":"PLUGIN","eventType":"MYSELF","data":[{"id":"5","name":"divide","enabled":true,"sort":200}]}"#;
        let state = |bug| SyncState::new(SyncMode::Websocket, Registry::standard()).emulating(bug);
        let (honest, buggy) = (state(None), state(Some(EmulatedBug::RebuildPerChange)));
        for state in [&honest, &buggy] {
            state.apply_text(DIVIDE).unwrap();
            state.apply_text(SELECTOR).unwrap();
        }
        assert!(honest.on_request(&honest.snapshot()).is_none());
        let current = buggy.snapshot();
        let first = buggy.on_request(&current).expect("the bug rebuilds");
        assert_eq!(
            (first.version, &first.digest),
            (current.version, &current.digest)
        );
        assert!(
            !Arc::ptr_eq(&first.active[0], &current.active[0]),
            "the divide table is compiled again, not shared"
        );
        let again = buggy.on_request(&buggy.snapshot()).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "no change, no rebuild");
        buggy
            .apply_text(&SELECTOR.replace("MYSELF", "DELETE"))
            .unwrap();
        let after = buggy.on_request(&buggy.snapshot()).unwrap();
        assert_eq!(
            (after.version, after.digest.selectors),
            (first.version + 1, 0)
        );
    }
    /// [`EmulatedBug::LeakPerRequest`]: every request leaves one more descriptor open; an
    /// honest gateway's requests leave none.
    #[test]
    fn a_leaking_gateway_keeps_one_descriptor_per_request() {
        let open = || std::fs::read_dir("/proc/self/fd").unwrap().count();
        let state = |bug| SyncState::new(SyncMode::Websocket, Registry::standard()).emulating(bug);
        let (honest, buggy) = (state(None), state(Some(EmulatedBug::LeakPerRequest)));
        let before = open();
        for _ in 0..3 {
            assert!(honest.on_request(&honest.snapshot()).is_none());
        }
        let between = open();
        for _ in 0..50 {
            assert!(buggy.on_request(&buggy.snapshot()).is_none());
        }
        let after = open();
        // Other tests of the process open and close files meanwhile: the honest gateway's
        // count moves with them only, the leak by 50.
        assert!(between < before + 10, "{before} -> {between}");
        assert!(after >= between + 40, "{between} -> {after}");
    }

    /// [`EmulatedBug::MergeFullSync`] keeps what a full sync leaves out, but applies deletes.
    #[test]
    fn a_merged_full_sync_keeps_a_ghost_but_deletes_apply() {
        let state = |bug| SyncState::new(SyncMode::Websocket, Registry::standard()).emulating(bug);
        let (honest, buggy) = (state(None), state(Some(EmulatedBug::MergeFullSync)));
        for state in [&honest, &buggy] {
            state.apply_text(SELECTOR).unwrap();
            state.apply_text(EMPTY_REFRESH).unwrap();
        }
        assert_eq!(honest.snapshot().digest.selectors, 0);
        assert_eq!(buggy.snapshot().digest.selectors, 1, "a full sync merges");
        buggy
            .apply_text(&SELECTOR.replace("MYSELF", "DELETE"))
            .unwrap();
        assert_eq!(buggy.snapshot().digest.selectors, 0, "a delete applies");
    }

    /// [`EmulatedBug::StaleAfterResubscribe`] applies increments until a group comes in full
    /// again, then that full sync, then no increment.
    #[test]
    fn a_resubscribed_gateway_drops_increments() {
        let buggy = SyncState::new(SyncMode::Websocket, Registry::standard())
            .emulating(Some(EmulatedBug::StaleAfterResubscribe));
        let update = SELECTOR.replace("MYSELF", "UPDATE");
        let other = update.replace(r#""id":"1""#, r#""id":"2""#);
        buggy.apply_text(EMPTY_REFRESH).unwrap();
        buggy.apply_text(&update).unwrap();
        assert_eq!(
            buggy.snapshot().digest.selectors,
            1,
            "first session: applied"
        );
        buggy.apply_text(SELECTOR).unwrap();
        assert_eq!(buggy.snapshot().digest.selectors, 1, "the resync applies");
        buggy.apply_text(&other).unwrap();
        assert_eq!(
            buggy.snapshot().digest.selectors,
            1,
            "then increments are dropped"
        );
    }

    /// [`EmulatedBug::StaleMatchCache`]: a rule disabled or deleted leaves its selector out of
    /// the changes (its compiled matcher is not rebuilt); a rule enabled again does not.
    #[test]
    fn a_stale_match_cache_keeps_a_lost_rule_compiled() {
        const RULE: &str = r#"{"groupType":"RULE","eventType":"UPDATE","data":[{"id":"r1","selectorId":"1","pluginName":"divide","sort":1,"enabled":true,"matchMode":0,"conditionDataList":[]}]}"#;
        let event = |text: &str| {
            model::DataEvent::from_websocket_text(text)
                .unwrap()
                .unwrap()
        };
        let mut before = crate::snapshot::ConfigData::default();
        before.apply(event(&SELECTOR.replace("MYSELF", "UPDATE")));
        before.apply(event(RULE));
        let disabled = RULE.replace(r#""enabled":true"#, r#""enabled":false"#);
        let changed = |bug, text: &str, before: &crate::snapshot::ConfigData| {
            let mut after = before.clone();
            let mut changes = after.apply(event(text));
            super::Emulation::new(bug).narrow(&mut changes, before, &after);
            (changes.selectors.contains("1"), after)
        };
        let deleted = RULE.replace("UPDATE", "DELETE");
        for lost in [&disabled, &deleted] {
            assert!(changed(None, lost, &before).0);
            assert!(
                !changed(Some(EmulatedBug::StaleMatchCache), lost, &before).0,
                "{lost}"
            );
        }
        let (_, off) = changed(None, &disabled, &before);
        assert!(
            changed(Some(EmulatedBug::StaleMatchCache), RULE, &off).0,
            "enabled again: recompiled"
        );
    }

    /// [`EmulatedBug::DropOrphanRules`]: a rule that comes before its selector is lost; a
    /// correct gateway keeps it and routes once the selector comes.
    #[test]
    fn an_orphan_rule_is_dropped_only_by_the_bug() {
        const RULE: &str = r#"{"groupType":"RULE","eventType":"UPDATE","data":[{"id":"r1","selectorId":"1","pluginName":"divide","sort":1,"enabled":true,"matchMode":0,"conditionDataList":[]}]}"#;
        let state = |bug| SyncState::new(SyncMode::Websocket, Registry::standard()).emulating(bug);
        let (honest, buggy) = (state(None), state(Some(EmulatedBug::DropOrphanRules)));
        for state in [&honest, &buggy] {
            state.apply_text(RULE).unwrap();
            state
                .apply_text(&SELECTOR.replace("MYSELF", "UPDATE"))
                .unwrap();
        }
        assert_eq!(
            honest.snapshot().digest.rules,
            1,
            "kept until its selector came"
        );
        assert_eq!(buggy.snapshot().digest.rules, 0);
        buggy.apply_text(RULE).unwrap();
        assert_eq!(
            buggy.snapshot().digest.rules,
            1,
            "with its selector held, it applies"
        );
    }
}
