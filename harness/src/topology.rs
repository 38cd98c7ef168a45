//! What runs for one scenario under one mode: the echo upstreams, the components the case asks
//! for (Redis), an admin and a gateway, with their files in a temporary directory (kept when
//! `GANTRY_KEEP=1`).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rustix::process::Signal;

use model::SyncMode;

use crate::backend::{
    Backend, ComponentService, Run, Service, Store, StoreKind, StoreServer, UpstreamService,
};
use crate::error::BackendError;
use std::net::SocketAddr;

use crate::backend::middleware::signal;
use crate::fault::{FaultProxy, Mode as ProxyMode};
use crate::scenario::ast::{Component, FaultAction, Target, UpstreamDecl};
use crate::scenario::placeholder;

/// A running topology; dropping it stops everything (gateway first).
#[derive(Debug)]
pub struct Topology {
    /// The gateway.
    pub gateway: Service,
    /// The admin.
    pub admin: Service,
    /// The ZooKeeper or etcd server of the zookeeper and etcd modes (host backend); taken
    /// out while a step stops or starts it.
    store: Mutex<Option<StoreServer>>,
    /// The ZooKeeper or etcd container of the zookeeper and etcd modes (docker backend).
    store_container: Option<Store>,
    /// The proxy on the gateway's sync connection, when asked for.
    proxy: Option<FaultProxy>,
    /// The components the case asked for, each started once (a step may stop and start
    /// them: taken out of the map while that runs).
    components: Mutex<BTreeMap<Component, ComponentService>>,
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
        Self::start_with(backend, mode, upstreams, components, keep, false).await
    }

    /// [`Topology::start`], with the gateway's sync connection (to the admin, or to
    /// ZooKeeper or etcd) through a [`FaultProxy`] when `sync_proxy` (host backend), so that
    /// steps can partition and heal it. Docker runs need no proxy: they partition on the
    /// run's sync network.
    pub async fn start_with(
        backend: &Backend,
        mode: SyncMode,
        upstreams: &[UpstreamDecl],
        components: &[Component],
        keep: bool,
        sync_proxy: bool,
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
        let (gateway, proxy) = match (&run, sync_proxy) {
            (Run::Host(host), true) => {
                let (proxy, source) = sync_proxy_for(mode, &admin, store.as_ref()).await?;
                let gateway = host.start_gateway_on(mode, source, dir.path()).await?;
                (Service::Host(gateway), Some(proxy))
            }
            // Docker runs partition on the run's sync network instead (`Topology::partition`).
            _ => (
                run.start_gateway(mode, &admin, store.as_ref(), dir.path())
                    .await?,
                None,
            ),
        };
        Ok(Self {
            gateway,
            admin,
            proxy,
            store: Mutex::new(store),
            store_container,
            components: Mutex::new(started),
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
                .components()
                .get(&Component::Redis)
                .map(ComponentService::url),
        }
    }

    /// Applies a step's fault to `target`: stops, kills, starts, restarts, pauses or resumes
    /// it. A stopped process keeps its address, so a `start` brings it back where its peers
    /// look for it.
    pub async fn fault(&self, action: FaultAction, target: Target) -> Result<(), BackendError> {
        match target {
            Target::Admin => self.admin.fault(action).await,
            Target::Gateway => self.gateway.fault(action).await,
            Target::Zookeeper | Target::Etcd => {
                let missing = BackendError::NoSuchProcess { target };
                if let Some(Store::Docker(c)) = &self.store_container {
                    return match c.role() == target.name() {
                        true => c.fault(action).await,
                        false => Err(missing),
                    };
                }
                let mut store = match self.stores().take() {
                    Some(s) if s.kind().name() == target.name() => s,
                    Some(other) => {
                        *self.stores() = Some(other);
                        return Err(missing);
                    }
                    None => return Err(missing),
                };
                let done = store_fault(&mut store, action).await;
                *self.stores() = Some(store);
                done
            }
            Target::Redis => {
                let component = Component::Redis;
                let mut service = self
                    .components()
                    .remove(&component)
                    .ok_or(BackendError::NoSuchProcess { target })?;
                let done = service.fault(action).await;
                self.components().insert(component, service);
                done
            }
        }
    }

    /// Cuts the gateway off from where it syncs (a step's `partition`): on the host, `how`
    /// the proxy says; on docker, a disconnect from the run's sync network (connections go
    /// silent, as `blackhole`; parse refuses the other modes there). [`Topology::heal`] ends it.
    pub async fn partition(&self, how: ProxyMode) -> Result<(), BackendError> {
        match (&self.run, &self.gateway) {
            (Run::Docker(run), Service::Docker(gateway)) if how == ProxyMode::Blackhole => {
                run.partition(gateway).await
            }
            (Run::Docker(_), _) => Err(BackendError::FaultUnsupported {
                action: "partition",
                target: Target::Gateway,
                backend: "docker",
            }),
            (Run::Host(_), _) => {
                self.sync_proxy()?.set(how);
                Ok(())
            }
        }
    }

    /// Ends a partition: the gateway's sync connection passes again (a step's `heal`).
    pub async fn heal(&self) -> Result<(), BackendError> {
        match (&self.run, &self.gateway) {
            (Run::Docker(run), Service::Docker(gateway)) => run.heal(gateway).await,
            _ => {
                self.sync_proxy()?.heal();
                Ok(())
            }
        }
    }

    fn sync_proxy(&self) -> Result<&FaultProxy, BackendError> {
        self.proxy.as_ref().ok_or(BackendError::NoSyncProxy)
    }

    fn stores(&self) -> MutexGuard<'_, Option<StoreServer>> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn components(&self) -> MutexGuard<'_, BTreeMap<Component, ComponentService>> {
        self.components.lock().unwrap_or_else(|e| e.into_inner())
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
        if let Some(store) = self.stores().as_ref() {
            tails += &format!(
                "\n--- {} log (last {n} lines{kept}) ---\n{}",
                store.kind().name(),
                store.log_tail(n)
            );
        }
        for (component, service) in self.components().iter() {
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

/// A fault on a host ZooKeeper or etcd server (stopping one always kills it).
async fn store_fault(s: &mut StoreServer, action: FaultAction) -> Result<(), BackendError> {
    let name = s.kind().name();
    let pid = || {
        s.pid().ok_or_else(|| BackendError::NotRunning {
            service: name.to_owned(),
        })
    };
    match action {
        FaultAction::Stop | FaultAction::Kill => s.stop().await,
        FaultAction::Start => return s.start_again().await,
        FaultAction::Restart => return s.restart().await,
        FaultAction::Pause => return signal(name, pid()?, Signal::STOP),
        FaultAction::Resume => return signal(name, pid()?, Signal::CONT),
    }
    Ok(())
}

/// A fault proxy in front of what the gateway syncs from (the admin in the websocket and
/// http modes, the store otherwise), and the gateway flags that point at it.
async fn sync_proxy_for(
    mode: SyncMode,
    admin: &Service,
    store: Option<&StoreServer>,
) -> Result<(FaultProxy, Vec<String>), BackendError> {
    let (target, flag) = match store {
        Some(store) => (
            SocketAddr::from(([127, 0, 0, 1], store.port())),
            store.kind().url_flag(),
        ),
        None => {
            let addr = admin.url().trim_start_matches("http://");
            let addr = addr.parse().map_err(|_| BackendError::Io {
                what: format!("reading the admin address {addr} for the {mode} sync proxy"),
                source: std::io::Error::other("not ip:port"),
            })?;
            (addr, "--admin-url")
        }
    };
    let proxy = FaultProxy::start(target)
        .await
        .map_err(|source| BackendError::Io {
            what: format!("starting the sync proxy to {target}"),
            source,
        })?;
    let proxied = match store.map(StoreServer::kind) {
        Some(StoreKind::Zookeeper) => proxy.addr().to_string(),
        _ => format!("http://{}", proxy.addr()),
    };
    let mut source = vec![flag.to_owned(), proxied];
    if store.is_some() {
        source.extend(["--admin-url".to_owned(), admin.url().to_owned()]);
    }
    Ok((proxy, source))
}
