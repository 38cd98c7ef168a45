//! The [`DockerBackend`]: an engine whose images are checked (or built), ready to begin runs.

use std::path::Path;
use std::sync::Arc;

use model::SyncMode;

use super::cleanup::sweep_stale;
use super::engine::{block_on_fresh, connect};
use super::run::DockerRun;
use super::swarm::Lease;
use crate::error::BackendError;
use crate::images::{self, ImageSpec};

/// The docker backend: a reachable engine with the images present.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    /// Extra arguments for every gateway and admin
    /// ([`crate::backend::Backend::with_gateway_args`]).
    pub(crate) extra: crate::backend::ExtraArgs,
    /// The swarm its runs' services go on (`--backend swarm`); `None`: plain containers.
    swarm: Option<Arc<Lease>>,
}

impl DockerBackend {
    /// Connects, removes what dead harness processes left behind, then makes sure the images
    /// exist: built from the static binaries in `bin_dir` when given (only those whose content
    /// hash changed), else only checked ([`images::preflight`]).
    pub fn open(bin_dir: Option<&Path>) -> Result<Self, BackendError> {
        let bin_dir = bin_dir.map(Path::to_path_buf);
        block_on_fresh(async move {
            let docker = connect().await?;
            sweep_stale(&docker).await?;
            let needed: Vec<ImageSpec> = images::ALL.to_vec();
            // Middleware images are checked per mode, when a run begins (their host package
            // may be missing, which only makes that mode unavailable).
            let needed = match &bin_dir {
                Some(_) => needed,
                None => needed
                    .into_iter()
                    .filter(|s| matches!(s.source, images::ImageSource::WorkspaceBinary { .. }))
                    .collect(),
            };
            match bin_dir {
                Some(dir) => images::ensure(&docker, &needed, &dir, false)
                    .await
                    .map(drop),
                None => images::preflight(&docker, &needed).await,
            }
        })??;
        // A swarm gantry made for runs killed since, whose services were swept just now.
        super::swarm::sweep_stale()?;
        Ok(Self {
            extra: crate::backend::ExtraArgs::default(),
            swarm: None,
        })
    }

    /// [`DockerBackend::open`], running every service as a Swarm service: on the swarm the
    /// engine is in, or on a one-node swarm made now and left by the last harness process
    /// using it ([`Lease`]).
    pub fn open_swarm(bin_dir: Option<&Path>) -> Result<Self, BackendError> {
        let backend = Self::open(bin_dir)?;
        Ok(Self {
            swarm: Some(Arc::new(Lease::acquire()?)),
            ..backend
        })
    }

    /// Whether its runs go on a swarm.
    pub fn is_swarm(&self) -> bool {
        self.swarm.is_some()
    }

    /// Starts a run: a fresh id and its two private networks. `keep` leaves its containers and
    /// networks in place when it ends (`GANTRY_KEEP=1`).
    pub async fn begin(&self, mode: SyncMode, keep: bool) -> Result<DockerRun, BackendError> {
        let needed = images::needed(mode).ok_or_else(|| BackendError::StoreUnavailable {
            mode,
            detail: "the docker backend cannot run this mode (use --backend host)".into(),
        })?;
        let docker = connect().await?;
        images::preflight(&docker, &needed).await?;
        DockerRun::create(docker, keep, self.extra.clone(), self.swarm.clone()).await
    }
}
