//! [`Follower`]: a gateway's config store with no network and no server, fed events by hand.
//! `gantry sim` feeds one every event the admin publishes, in order and without loss, to
//! learn the sequence of configs the admin committed, group by group, as a gateway applies
//! them.

use std::sync::Arc;

use model::{DataEvent, SyncMode};

use super::SyncState;
use crate::OnApply;
use crate::plugin::Registry;

/// A gateway's config, applied in-process (see the module docs).
#[derive(Debug)]
pub struct Follower(SyncState);

impl Follower {
    /// The empty config of a gateway syncing by `mode`; `on_apply` is told of every config
    /// it takes.
    pub fn new(mode: SyncMode, on_apply: OnApply) -> Follower {
        Follower(SyncState::new(mode, Arc::clone(&Registry::standard())).observed(Some(on_apply)))
    }

    /// Applies `event` as a gateway applies one it received (no emulated bug).
    pub fn apply(&self, event: DataEvent) {
        self.0.apply(event);
    }
}
