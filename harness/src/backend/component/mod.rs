//! The components a topology starts besides its admins and gateways: the ZooKeeper or etcd
//! server of the zookeeper and etcd sync modes, the Redis a case asks for, the PostgreSQL
//! cluster of a `storage: postgres` topology.
//!
//! Each is described once, in a file of its own ([`zookeeper`], [`etcd`], [`redis`],
//! [`postgres`]: where its binary is, its command line, what it needs before a first start,
//! its readiness check), and named by a [`ServerKind`]. The host backend runs every one of
//! them through one lifecycle, [`HostServer`] (`server`); the docker backend starts them as
//! containers (`crate::backend::docker::specs`, the same flags). Either way a topology holds
//! a [`ComponentService`]: the one handle, whose [`ComponentService::url`] is the address as
//! the admins and gateways of its backend reach it.
//!
//! When a server cannot run on this machine the cases that need it are skipped
//! ([`skip_reason`], [`redis::skip_reason`], [`postgres::skip_reason`]), unless
//! `GANTRY_REQUIRE` (a comma list of modes and components) names it ([`required`]).
//!
//! Durability: ZooKeeper runs with `forceSync=no`, etcd with `--unsafe-no-fsync` and
//! PostgreSQL with `fsync=off`, on both backends (`crate::backend::docker::specs`,
//! `crate::images`). The servers are per-scenario fixtures: a killed or restarted server keeps
//! what it wrote (the page cache outlives the process), and only a machine crash could lose
//! it. With fsync on, one commit waited 2.7 s on a busy CI disk, and the `latency` judges
//! measured the disk, not the sync path.

mod data;
pub(crate) mod etcd;
mod kind;
pub(crate) mod postgres;
pub(crate) mod redis;
mod server;
mod service;
mod store;
pub(crate) mod zookeeper;

pub(crate) use kind::ServerKind;
pub use server::HostServer;
pub use service::ComponentService;
pub use store::{StoreKind, required, skip_reason};
