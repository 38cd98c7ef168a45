//! The sync path's share of `--emulate-bug` ([`EmulatedBug`]): tests only, never real traffic.
//!
//! Everything a bug changes in how events are applied happens here, inside
//! [`SyncState::apply_all`], so the subscribers do not know about it:
//! - [`EmulatedBug::DropDeletes`] drops DELETE events and merges full syncs;
//! - [`EmulatedBug::ClearBeforeRefill`] swaps a full sync's groups in emptied at once and holds
//!   the events back for [`CLEAR_WINDOW`];
//! - [`EmulatedBug::LateApply`] holds every event back for [`LATE_APPLY_DELAY`], stamped
//!   applied when the first arrived;
//! - [`EmulatedBug::ReorderIncrements`] holds each incremental event until the next one and
//!   applies the two swapped;
//! - [`EmulatedBug::SkipRuleFullSync`] drops a full sync's rule group;
//! - [`EmulatedBug::HandleChangeIgnored`] leaves out of an increment's changes the selectors
//!   whose handle alone changed, so they are not recompiled ([`Emulation::narrow`]).
//!
//! What one apply call holds back is a batch, swapped in one window later by
//! [`SyncState::refills`] (a task the gateway starts next to its subscriber when the bug holds
//! events). Until then the state behaves as a subscriber blocked on the window would: what
//! the next calls bring waits, unread and uncounted, and is then taken call by call, as if it
//! had just arrived (a call that opens a new batch makes the rest wait again).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use model::{ConfigGroup, DataEvent, DataEventType, EventPayload};
use tokio::sync::Notify;

use super::SyncState;
use crate::EmulatedBug;
use crate::snapshot::{Changes, ConfigData, now_us};
use model::lock::MutexExt;

/// How long [`EmulatedBug::ClearBeforeRefill`] leaves a group empty.
pub(crate) const CLEAR_WINDOW: Duration = Duration::from_millis(250);

/// How long after stamping a change applied [`EmulatedBug::LateApply`] swaps it in.
pub(crate) const LATE_APPLY_DELAY: Duration = Duration::from_millis(200);

/// The bug the sync path emulates, and what it holds back.
#[derive(Debug, Default)]
pub(crate) struct Emulation {
    /// The bug (`None`: apply events as they are).
    bug: Option<EmulatedBug>,
    /// The open batch.
    held: Mutex<Held>,
    /// Signalled when a batch opens.
    opened: Notify,
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

    /// [`EmulatedBug::HandleChangeIgnored`]: drops from `changes` (an increment's, taking
    /// `before` to `after`) every selector whose data differs in its handle only (its rules
    /// the same), so its compiled form, upstreams included, stays the old one.
    pub(super) fn narrow(&self, changes: &mut Changes, before: &ConfigData, after: &ConfigData) {
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
