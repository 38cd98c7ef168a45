//! The [`DockerBackend`]: an engine whose images are checked (or built), ready to begin runs.

use std::path::Path;

use model::SyncMode;

use super::cleanup::sweep_stale;
use super::engine::{block_on_fresh, connect};
use super::run::DockerRun;
use crate::error::BackendError;
use crate::images::{self, ImageSpec};

/// The docker backend: a reachable engine with the images present.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    /// Extra arguments for every gateway ([`crate::backend::Backend::with_gateway_args`]).
    pub(crate) gateway_args: Vec<String>,
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
        Ok(Self {
            gateway_args: Vec::new(),
        })
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
        DockerRun::create(docker, keep, self.gateway_args.clone()).await
    }
}
