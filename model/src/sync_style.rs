//! [`SyncStyle`]: whether a gateway applies a change as the increment it is, or resyncs in full.

use crate::wire_enum::wire_enum;

wire_enum! {
    /// How a gateway takes a change (the conformance matrix's second axis, after the mode):
    /// Kong runs every hybrid test with incremental sync on and off, so that a bug only one
    /// path has cannot hide.
    SyncStyle, "sync style" {
        /// Apply each change as it arrives (ShenYu's behaviour): a websocket event, the
        /// long-poll groups the admin names, a ZooKeeper node, an etcd key.
        Incremental = "incremental",
        /// Take a change only as a signal and read the whole config again: websocket asks
        /// for `MYSELF`, long polling fetches every group, ZooKeeper and etcd read the tree.
        Full = "full",
    }
}
