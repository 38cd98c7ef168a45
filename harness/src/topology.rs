//! What runs for one scenario under one mode: the echo upstreams, an admin and a gateway, with
//! their files in a temporary directory (kept when `GANTRY_KEEP=1`).

use std::collections::BTreeMap;
use std::path::Path;

use model::SyncMode;

use crate::backend::{Backend, Service};
use crate::error::BackendError;
use crate::upstream::Upstream;

/// A running topology; dropping it stops everything (gateway first).
#[derive(Debug)]
pub struct Topology {
    /// The gateway.
    pub gateway: Service,
    /// The admin.
    pub admin: Service,
    upstreams: BTreeMap<String, Upstream>,
    dir: tempfile::TempDir,
    keep: bool,
}

impl Topology {
    /// Starts the upstreams named `upstreams`, then the admin, then the gateway.
    pub async fn start(
        backend: &Backend,
        mode: SyncMode,
        upstreams: &[String],
        keep: bool,
    ) -> Result<Self, BackendError> {
        let mut dir = tempfile::Builder::new()
            .prefix("gantry-")
            .tempdir()
            .map_err(|source| BackendError::Io {
                what: "creating a temp dir".into(),
                source,
            })?;
        dir.disable_cleanup(keep);
        let mut ups = BTreeMap::new();
        for name in upstreams {
            ups.insert(name.clone(), Upstream::start(name).await?);
        }
        let admin = backend.start_admin(mode, dir.path()).await?;
        let gateway = backend.start_gateway(mode, admin.url(), dir.path()).await?;
        Ok(Self {
            gateway,
            admin,
            upstreams: ups,
            dir,
            keep,
        })
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.upstreams.get(name)
    }

    /// Where the logs and the database are.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last `n` lines of each service log, with headers (naming the directory when kept).
    pub fn log_tails(&self, n: usize) -> String {
        let kept = if self.keep {
            format!(", kept in {}", self.dir().display())
        } else {
            String::new()
        };
        [&self.admin, &self.gateway]
            .iter()
            .map(|s| {
                format!(
                    "\n--- {} log (last {n} lines{kept}) ---\n{}",
                    s.name(),
                    s.log_tail(n)
                )
            })
            .collect()
    }
}
