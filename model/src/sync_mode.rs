//! [`SyncMode`]: how config travels from admin to gateway.

use crate::wire_enum::wire_enum;

wire_enum! {
    /// A sync mode: one (admin publisher, gateway subscriber) pair.
    SyncMode, "sync mode" {
        /// Websocket push from the admin's `/websocket`.
        Websocket = "websocket",
        /// HTTP long polling on `/configs/listener` and `/configs/fetch`.
        Http = "http",
        /// ZooKeeper znodes under `/shenyu`.
        Zookeeper = "zookeeper",
        /// etcd keys under `/shenyu`.
        Etcd = "etcd",
    }
}
