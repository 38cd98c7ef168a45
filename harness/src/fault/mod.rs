//! Network faults the harness injects between components: [`FaultProxy`], a TCP relay whose
//! [`Mode`] can be switched while connections are open (cut, reset, a silent partition, added
//! latency), for case-file `partition` / `heal` steps; [`etcd::compact_at_least`], for
//! `compact: etcd`; and [`zookeeper::wait_expired`], for `expireSession: gateway`.

pub mod etcd;
mod proxy;
pub mod zookeeper;

pub use proxy::{FaultProxy, Mode};
