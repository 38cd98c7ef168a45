//! Network faults the harness injects between components: [`FaultProxy`], a TCP relay whose
//! [`Mode`] can be switched while connections are open (cut, reset, a silent partition, added
//! latency), for case-file `partition` / `heal` steps; and [`etcd::compact`], for `compact:
//! etcd`.

pub mod etcd;
mod proxy;

pub use proxy::{FaultProxy, Mode};
