//! Network faults the harness injects between components: [`FaultProxy`], a TCP relay whose
//! [`Mode`] can be switched while connections are open (cut, reset, a silent partition, added
//! latency) and whose [`Toxics`] (Toxiproxy's vocabulary, per direction) can be set, for
//! case-file `partition`, `network` and `heal` steps; [`etcd::compact_at_least`], for
//! `compact: etcd`; [`zookeeper::wait_expired`], for `expireSession: gateway`; and
//! [`Starvation`], the SIGSTOP/SIGCONT duty cycle of `starve`; [`DiskMount`], the admin's
//! database disk of `diskFull` / `diskFree`; [`links::LinkProxies`], the proxies on a
//! topology's links; [`container`], a proxy in a container of its own (docker backend).

pub(crate) mod container;
mod disk;
pub(crate) mod etcd;
pub(crate) mod links;
mod proxy;
mod starve;
mod toxic;
pub(crate) mod zookeeper;

pub(crate) use disk::{DiskMount, skip_reason as disk_skip_reason};
pub(crate) use proxy::FaultProxy;
pub use proxy::Mode;
pub(crate) use starve::Starvation;
pub(crate) use toxic::{Direction, Toxic, Toxics};
