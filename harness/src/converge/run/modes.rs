//! What each sync mode allows of a history's faults.

use model::{SyncFaultKind, SyncMode};

use crate::backend::BackendKind;
use crate::scenario::ast::Target;

/// The protocol fault [`Fault::Protocol`](super::super::history::Fault::Protocol) arms in `mode`, if any (one the gateway heals by
/// itself: docs/faults.md).
pub(crate) fn protocol_fault(mode: SyncMode) -> Option<SyncFaultKind> {
    match mode {
        SyncMode::Websocket => Some(SyncFaultKind::CloseMidPush),
        SyncMode::Http => Some(SyncFaultKind::EmptyAnswer),
        _ => None,
    }
}

/// Whether histories in `mode` on `backend` may compact etcd ([`Fault::Compact`](super::super::history::Fault::Compact): the etcd
/// mode on the host backend, as a case file's `compact: etcd`).
pub(crate) fn compacts(mode: SyncMode, backend: BackendKind) -> bool {
    mode == SyncMode::Etcd && backend == BackendKind::Host
}

/// The store the gateways sync from in `mode`, if any (what [`Fault::KillStore`](super::super::history::Fault::KillStore) kills).
pub(crate) fn store_target(mode: SyncMode) -> Option<Target> {
    match mode {
        SyncMode::Zookeeper => Some(Target::Zookeeper),
        SyncMode::Etcd => Some(Target::Etcd),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_kills_exist_in_the_store_modes_only() {
        assert_eq!(store_target(SyncMode::Zookeeper), Some(Target::Zookeeper));
        assert_eq!(store_target(SyncMode::Etcd), Some(Target::Etcd));
        assert_eq!(store_target(SyncMode::Websocket), None);
        assert_eq!(store_target(SyncMode::Http), None);
    }

    #[test]
    fn etcd_compacts_on_the_host_backend_only() {
        assert!(compacts(SyncMode::Etcd, BackendKind::Host));
        assert!(!compacts(SyncMode::Etcd, BackendKind::Docker));
        for mode in [SyncMode::Websocket, SyncMode::Http, SyncMode::Zookeeper] {
            assert!(!compacts(mode, BackendKind::Host));
        }
    }
}
