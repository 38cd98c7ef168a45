//! What runs for one scenario under one mode: the echo upstreams, the components the case asks
//! for (Redis), an admin and a gateway, with their files in a temporary directory (kept when
//! `GANTRY_KEEP=1`).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::Path;

use model::SyncMode;

use crate::backend::{
    Backend, ComponentService, Run, Service, Store, StoreKind, StoreServer, UpstreamService,
};
use crate::error::BackendError;
use crate::scenario::ast::{Component, UpstreamDecl};
use crate::scenario::placeholder;

/// A running topology; dropping it stops everything (gateway first).
#[derive(Debug)]
pub struct Topology {
    /// The gateway.
    pub gateway: Service,
    /// The admin.
    pub admin: Service,
    /// The ZooKeeper or etcd server of the zookeeper and etcd modes (host backend).
    pub store: Option<StoreServer>,
    /// The ZooKeeper or etcd container of the zookeeper and etcd modes (docker backend).
    store_container: Option<Store>,
    /// The components the case asked for, each started once.
    components: BTreeMap<Component, ComponentService>,
    upstreams: BTreeMap<String, UpstreamService>,
    dir: tempfile::TempDir,
    keep: bool,
    /// Dropped last: removes what the services share (the docker network).
    run: Run,
}

impl Topology {
    /// Starts the upstreams named `upstreams`, the `components` (in any mode), the store
    /// server the mode needs (ZooKeeper, etcd), then the admin, then the gateway.
    pub async fn start(
        backend: &Backend,
        mode: SyncMode,
        upstreams: &[UpstreamDecl],
        components: &[Component],
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
        let run = backend.begin(mode, keep).await?;
        let mut ups = BTreeMap::new();
        for u in upstreams {
            ups.insert(
                u.name.clone(),
                run.start_upstream(&u.name, &u.behave).await?,
            );
        }
        let mut started = BTreeMap::new();
        for &component in components {
            if let Entry::Vacant(slot) = started.entry(component) {
                let dir = dir.path().join(component.name());
                slot.insert(run.start_component(component, &dir).await?);
            }
        }
        let (store, store_container) = match StoreKind::for_mode(mode) {
            Some(kind) => match run.start_store(kind, &dir.path().join(kind.name())).await? {
                Store::Host(s) => (Some(s), None),
                docker => (None, Some(docker)),
            },
            None => (None, None),
        };
        let admin = run.start_admin(mode, store.as_ref(), dir.path()).await?;
        let gateway = run
            .start_gateway(mode, &admin, store.as_ref(), dir.path())
            .await?;
        Ok(Self {
            gateway,
            admin,
            store,
            store_container,
            components: started,
            upstreams: ups,
            dir,
            keep,
            run,
        })
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&UpstreamService> {
        self.upstreams.get(name)
    }

    /// The values of the plugin config placeholders in this topology (`${redis.url}`: the
    /// Redis address as the gateway reaches it, when the case asked for Redis).
    pub fn placeholder_values(&self) -> placeholder::Values {
        placeholder::Values {
            redis_url: self
                .components
                .get(&Component::Redis)
                .map(ComponentService::url),
        }
    }

    /// The docker run id (labels `gantry.run`, names `gantry-<id>-*`), for docker runs.
    pub fn docker_run_id(&self) -> Option<&str> {
        self.run.docker_id()
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
        let mut tails: String = [&self.admin, &self.gateway]
            .iter()
            .map(|s| {
                format!(
                    "\n--- {} log (last {n} lines{kept}) ---\n{}",
                    s.name(),
                    s.log_tail(n)
                )
            })
            .collect();
        if let Some(store) = &self.store {
            tails += &format!(
                "\n--- {} log (last {n} lines{kept}) ---\n{}",
                store.kind().name(),
                store.log_tail(n)
            );
        }
        for (component, service) in &self.components {
            tails += &format!(
                "\n--- {component} log (last {n} lines{kept}) ---\n{}",
                service.log_tail(n)
            );
        }
        if let Some(store) = &self.store_container {
            tails += &format!(
                "\n--- store log (last {n} lines) ---\n{}",
                store.log_tail(n)
            );
        }
        tails
    }
}
