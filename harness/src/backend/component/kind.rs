//! [`ServerKind`]: which component server, and what its kind decides for every backend: its
//! name, the address its clients take, how it is awaited and shut down, the error when it
//! cannot run.

use std::time::Duration;

use rustix::process::Signal;

use super::postgres;
use super::store::StoreKind;
use crate::error::BackendError;
use crate::scenario::ast::Component;

/// Which component server: what [`HostServer`] runs and a [`ComponentService`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// Apache ZooKeeper (the zookeeper sync mode).
    Zookeeper,
    /// etcd (the etcd sync mode).
    Etcd,
    /// Redis (`components: [redis]`).
    Redis,
    /// PostgreSQL (`topology.storage: postgres`).
    Postgres,
}

impl From<StoreKind> for ServerKind {
    fn from(kind: StoreKind) -> Self {
        match kind {
            StoreKind::Zookeeper => ServerKind::Zookeeper,
            StoreKind::Etcd => ServerKind::Etcd,
        }
    }
}

impl From<Component> for ServerKind {
    fn from(component: Component) -> Self {
        match component {
            Component::Redis => ServerKind::Redis,
        }
    }
}

impl ServerKind {
    /// The name used in logs, messages, faults' targets and container roles.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Zookeeper => "zookeeper",
            ServerKind::Etcd => "etcd",
            ServerKind::Redis => "redis",
            ServerKind::Postgres => "postgres",
        }
    }

    /// The config store it is, for ZooKeeper and etcd.
    pub fn store(self) -> Option<StoreKind> {
        match self {
            ServerKind::Zookeeper => Some(StoreKind::Zookeeper),
            ServerKind::Etcd => Some(StoreKind::Etcd),
            ServerKind::Redis | ServerKind::Postgres => None,
        }
    }

    /// The address admins and gateways take for a server listening at `host_port`:
    /// `host:port` (ZooKeeper, Redis), `http://host:port` (etcd),
    /// `postgres://gantry@host:port/postgres` (PostgreSQL).
    pub fn address(self, host_port: &str) -> String {
        match self {
            ServerKind::Zookeeper | ServerKind::Redis => host_port.to_owned(),
            ServerKind::Etcd => format!("http://{host_port}"),
            ServerKind::Postgres => postgres::address(host_port),
        }
    }

    /// `--zookeeper-url <address>` or `--etcd-url <address>` for a store server reached at
    /// `host_port` (nothing for the other kinds): how admins and gateways are pointed at it,
    /// on any backend.
    pub fn store_flags(self, host_port: &str) -> Vec<String> {
        self.store()
            .map(|store| vec![store.url_flag().to_owned(), self.address(host_port)])
            .unwrap_or_default()
    }

    /// How often and how long the host backend polls a fresh server.
    pub(super) fn ready_wait(self) -> (Duration, Duration) {
        match self {
            ServerKind::Zookeeper | ServerKind::Etcd => {
                (Duration::from_millis(100), Duration::from_secs(30))
            }
            ServerKind::Redis => (Duration::from_millis(50), Duration::from_secs(20)),
            ServerKind::Postgres => (Duration::from_millis(50), Duration::from_secs(30)),
        }
    }

    /// The signal that shuts the server down cleanly, and how long it may take, before it is
    /// killed: PostgreSQL's fast shutdown; the others are killed at once.
    pub(super) fn shutdown(self) -> Option<(Signal, Duration)> {
        match self {
            ServerKind::Postgres => Some((Signal::INT, Duration::from_secs(5))),
            ServerKind::Zookeeper | ServerKind::Etcd | ServerKind::Redis => None,
        }
    }

    /// The error for a server that cannot run here (`missing` says why).
    pub(super) fn unavailable_error(self, missing: String) -> BackendError {
        match self {
            ServerKind::Zookeeper => BackendError::StoreUnavailable {
                mode: StoreKind::Zookeeper.mode(),
                detail: missing,
            },
            ServerKind::Etcd => BackendError::StoreUnavailable {
                mode: StoreKind::Etcd.mode(),
                detail: missing,
            },
            ServerKind::Redis => BackendError::ComponentUnavailable {
                component: Component::Redis,
                detail: missing,
            },
            ServerKind::Postgres => BackendError::PostgresUnavailable(missing),
        }
    }
}
