//! [`ComponentService`]: a running component, whichever backend started it.

use super::{HostServer, ServerKind};
use crate::backend::docker::Container;
use crate::error::BackendError;
use crate::scenario::ast::FaultAction;

/// A running component server (ZooKeeper, etcd, Redis); stopped on drop.
#[derive(Debug)]
pub enum ComponentService {
    /// A host process on loopback.
    Host(HostServer),
    /// A container on the run's network (removed with its run).
    Docker {
        /// Which server it runs.
        kind: ServerKind,
        /// The container.
        container: Container,
    },
}

impl ComponentService {
    /// Which server it is.
    pub fn kind(&self) -> ServerKind {
        match self {
            ComponentService::Host(s) => s.kind(),
            ComponentService::Docker { kind, .. } => *kind,
        }
    }

    /// The host process, which the host backend's admins and gateways and the host-only
    /// faults (session expiry, compaction, the sync proxy) take.
    pub fn host(&self) -> Option<&HostServer> {
        match self {
            ComponentService::Host(s) => Some(s),
            ComponentService::Docker { .. } => None,
        }
    }

    /// The host process, mutably (to stop and restart it by hand).
    pub fn host_mut(&mut self) -> Option<&mut HostServer> {
        match self {
            ComponentService::Host(s) => Some(s),
            ComponentService::Docker { .. } => None,
        }
    }

    /// `--zookeeper-url <url>` or `--etcd-url <url>` as the admins and gateways of its
    /// backend reach it (nothing for the other kinds): one handle points both backends' admins
    /// and gateways at their store.
    pub fn store_flags(&self) -> Vec<String> {
        match self {
            ComponentService::Host(s) => s.store_flags(),
            ComponentService::Docker { kind, container } => kind.store_flags(container.peer_addr()),
        }
    }

    /// The address as the admins and gateways of its backend reach it
    /// ([`ServerKind::address`]): at `127.0.0.1:<port>` on the host, at `<container
    /// name>:<port>` on the run's network.
    pub fn url(&self) -> String {
        match self {
            ComponentService::Host(s) => s.url(),
            ComponentService::Docker { kind, container } => kind.address(container.peer_addr()),
        }
    }

    /// Whether it died without the harness stopping it; `false` when the backend cannot tell
    /// (docker).
    pub fn exited(&self) -> bool {
        match self {
            ComponentService::Host(s) => s.exited(),
            ComponentService::Docker { .. } => false,
        }
    }

    /// Applies a step's fault ([`HostServer::fault`], [`Container::fault`]).
    pub async fn fault(&mut self, action: FaultAction) -> Result<(), BackendError> {
        match self {
            ComponentService::Host(s) => s.fault(action).await,
            ComponentService::Docker { container, .. } => container.fault(action).await,
        }
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        match self {
            ComponentService::Host(s) => s.log_tail(n),
            ComponentService::Docker { container, .. } => container.log_tail(n),
        }
    }
}
