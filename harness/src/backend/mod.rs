//! Backends start the admin and the gateway for one sync mode. Only `host` (local processes)
//! exists; a docker backend will sit beside it behind the same [`Backend`] interface.

pub mod host;

use std::path::{Path, PathBuf};

use model::SyncMode;

pub use host::{HostBackend, Service};

use crate::error::BackendError;

/// Which backend to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// Local processes from the workspace's target directory.
    #[default]
    Host,
}

/// A backend, ready to start services.
#[derive(Debug, Clone)]
pub enum Backend {
    /// Local processes.
    Host(HostBackend),
}

impl Backend {
    /// A backend of `kind` whose binaries live in `bin_dir`.
    pub fn new(kind: BackendKind, bin_dir: PathBuf) -> Result<Self, BackendError> {
        match kind {
            BackendKind::Host => HostBackend::new(bin_dir).map(Backend::Host),
        }
    }

    /// Starts an admin publishing with `mode`; its files go under `dir`.
    pub async fn start_admin(&self, mode: SyncMode, dir: &Path) -> Result<Service, BackendError> {
        match self {
            Backend::Host(h) => h.start_admin(mode, dir).await,
        }
    }

    /// Starts a gateway subscribing with `mode` to the admin at `admin_url`.
    pub async fn start_gateway(
        &self,
        mode: SyncMode,
        admin_url: &str,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        match self {
            Backend::Host(h) => h.start_gateway(mode, admin_url, dir).await,
        }
    }
}
