//! Network faults the harness injects between components: [`FaultProxy`], a TCP relay whose
//! [`Mode`] can be switched while connections are open (cut, reset, a silent partition, added
//! latency), for case-file `partition` / `heal` steps.

mod proxy;

pub use proxy::{FaultProxy, Mode};
