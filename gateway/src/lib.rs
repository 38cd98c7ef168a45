//! gantry's reference gateway: it subscribes to an admin's config sync, keeps the config as an
//! immutable compiled snapshot, and routes every request through ShenYu's divide semantics to
//! an upstream.
//!
//! Entry point: [`serve`] with a bound listener, a [`Config`] and a shutdown future (the
//! `gantry-gateway` binary is a thin wrapper around it).
//!
//! Module map:
//! - `config.rs` ([`Config`]), `app.rs` (the state one gateway serves from, its router
//!   [`app`], and [`serve`]).
//! - `sync/`: one subscriber per sync mode (`websocket.rs`, `http_long_poll.rs`,
//!   `zookeeper.rs`, `etcd.rs`; the last two share the key layout's `keyspace.rs`), started by
//!   `start.rs`, and `SyncState`, which applies events by building a new `snapshot::Snapshot`
//!   and swapping it in (`arc_swap`); requests never lock. `emulate.rs` holds the bugs the
//!   sync path can emulate.
//! - `router/`: compiled conditions, judges, Spring's AntPath and PathPattern matchers, and
//!   selector → rule selection. Pure code.
//! - `precheck.rs`: what is refused before routing (a missing, repeated or malformed `Host`, a
//!   path with dot-segments or what Spring Security's firewall refuses).
//! - `plugin/`: the plugins (`paramMapping`, `contextPath`, `divide`), each compiling its own
//!   selector and rule handles into the router's tables, the chain, and the registry of one
//!   gateway's plugin instances; `balance/` (the six
//!   ShenYu balancers with per-selector state), `proxy.rs` (pooled hyper client, retries),
//!   `actuator.rs` (inspection endpoints), `java.rs` (Java's string renderings the router,
//!   proxy and balancers share).
//!
//! Endpoints: `/actuator/{health,digest,plugins,pluginData,selectorData,ruleData,metadata}`,
//! `/metrics` (Prometheus);
//! everything else goes through the plugin chain (see `docs/interfaces.md`).
//!
//! # Conventions
//!
//! - Locks: a poisoned `std::sync::Mutex` is used as it is, through
//!   [`model::lock::MutexExt::locked`], the workspace's one policy (never `.lock().unwrap()` or
//!   `.expect(…)`): each critical section leaves its data consistent at
//!   every step, so a panic elsewhere must not take the gateway down with it. The request path
//!   takes no lock but a balancer's own.
//! - What one gateway holds (plugin instances, config, counters) lives in its `App`, not in a
//!   `static`: tests and the `host` backend run several gateways in one process.

mod actuator;
mod app;
mod balance;
#[doc(hidden)]
pub mod bench;
mod config;
mod finishing;
mod java;
mod metrics;
mod plugin;
mod precheck;
mod proxy;
mod router;
mod snapshot;
mod state;
mod sync;

pub use crate::app::{app, serve, serve_on, serve_workers};
pub use crate::config::{Config, EmulatedBug, OnApply, SyncTimeouts};
pub use crate::plugin::rate_limiter::{BadCidr, TrustedProxies};
pub use crate::sync::Follower;
pub use crate::sync::confirm_sync;
