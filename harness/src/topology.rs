//! What runs for one scenario under one mode: the echo upstreams, the components the case asks
//! for (Redis), the admins and gateways of its `topology` (by default one admin on SQLite and
//! one gateway), with their files in a temporary directory (kept when `GANTRY_KEEP=1`).
//!
//! Several admins share one database: a SQLite file in that directory, or a throwaway
//! PostgreSQL cluster ([`HostServer::start_postgres`]). Every gateway lists every admin URL, in order, so
//! it fails over from one to the next; in the zookeeper and etcd modes every admin writes to
//! the store and the gateways read it. Several admins or gateways, late gateways and
//! PostgreSQL run on the host backend only.

use model::lock::MutexExt;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use std::net::SocketAddr;

use futures_util::future::{join_all, try_join_all};
use model::SyncMode;

use crate::backend::docker::{SYNC_PROXY_ROLE, UPSTREAM_PROXY_ROLE};
use crate::backend::host::AdminLaunch;
use crate::backend::start_numbered_gateway;
use crate::backend::{
    Backend, ComponentService, Container, HostServer, Run, ServerKind, Service, StoreKind,
    UpstreamService,
};
use crate::error::BackendError;
use crate::fault::links::{self, LinkProxies};
use crate::fault::{DiskMount, FaultProxy, Mode as ProxyMode, Starvation, Toxics};
use crate::scenario::ast::{
    Bytes, Component, FaultAction, Link, Resources, Starve, Storage, Target, TopologySpec,
    UpstreamDecl,
};
use crate::scenario::placeholder;

/// A running topology; dropping it stops everything (gateways first).
#[derive(Debug)]
pub struct Topology {
    /// The gateways, in index order (a late one is not started until a step starts it).
    gateways: Vec<Service>,
    /// The admins, in index order.
    admins: Vec<Service>,
    /// The admins' PostgreSQL cluster (`topology.storage: postgres`), stopped after them.
    postgres: Option<ComponentService>,
    /// The ZooKeeper or etcd server of the zookeeper and etcd modes; taken out while a step
    /// stops or starts it.
    store: Mutex<Option<ComponentService>>,
    /// The fault proxies on its links, where asked for (host backend).
    links: LinkProxies,
    /// The components the case asked for, each started once (a step may stop and start
    /// them: taken out of the map while that runs).
    components: Mutex<BTreeMap<Component, ComponentService>>,
    upstreams: BTreeMap<String, UpstreamService>,
    /// The tmpfs under the admin's SQLite file (a case with `diskFull`): unmounted after the
    /// admins stop, before `dir` goes.
    disk: Option<DiskMount>,
    dir: tempfile::TempDir,
    keep: bool,
    /// Dropped last: removes what the services share (the docker network).
    run: Run,
}

/// What [`start_control`] starts.
struct Control {
    /// The ZooKeeper or etcd server of the zookeeper and etcd modes.
    store: Option<ComponentService>,
    /// The admins' PostgreSQL cluster (`topology.storage: postgres`).
    postgres: Option<ComponentService>,
    admins: Vec<Service>,
    gateways: Vec<Service>,
    /// The proxy on the gateway's sync connection, when asked for.
    proxy: Option<links::LinkProxy>,
    /// The proxy in front of the admins' PostgreSQL, when asked for.
    database: Option<links::LinkProxy>,
}

/// Starts the upstreams named in `upstreams` and each of `components` once, all at once.
async fn start_serving(
    run: &Run,
    upstreams: &[UpstreamDecl],
    components: &[Component],
    dir: &Path,
) -> Result<
    (
        BTreeMap<String, UpstreamService>,
        BTreeMap<Component, ComponentService>,
    ),
    BackendError,
> {
    let ups = try_join_all(upstreams.iter().map(|u| async {
        let service = run.start_upstream(&u.name, &u.behave).await?;
        Ok::<_, BackendError>((u.name.clone(), service))
    }));
    let mut wanted = components.to_vec();
    wanted.sort();
    wanted.dedup();
    let started = try_join_all(wanted.into_iter().map(|component| async move {
        let service = run
            .start_component(component, &dir.join(component.name()))
            .await?;
        Ok::<_, BackendError>((component, service))
    }));
    let (ups, started) = tokio::try_join!(ups, started)?;
    Ok((ups.into_iter().collect(), started.into_iter().collect()))
}

/// Starts the store server `mode` needs, then the admins (a SQLite file in `db_dir`), then
/// the gateways of `shape`.
async fn start_control(
    run: &Run,
    mode: SyncMode,
    (dir, db_dir): (&Path, &Path),
    keep: bool,
    shape: &Shape,
) -> Result<Control, BackendError> {
    let Shape {
        spec,
        sync_faults,
        clocks,
        ..
    } = shape;
    // Slicing takes the sync proxy; several admins would collapse into the first behind it.
    let sliced = shape.sliced(run) && spec.admins == 1;
    let sync_proxy = &(shape.proxies.contains(&Link::Sync) || sliced);
    let store = match StoreKind::for_mode(mode) {
        // The target syncs its own way.
        Some(_) if run.external().is_some() => None,
        Some(kind) => Some(run.start_store(kind, &dir.join(kind.name())).await?),
        None => None,
    };
    // What the host backend's admins and gateways take.
    let host_store = store.as_ref().and_then(ComponentService::host);
    let mut postgres = None;
    let mut database = None;
    let (admins, gateways, proxy) = match (run, *sync_proxy) {
        (Run::External(_), _)
            if !shape.proxies.is_empty() || *sync_faults || !spec.is_default() =>
        {
            return Err(BackendError::External {
                what: "starting the topology".into(),
                detail: "faults and topologies need processes of gantry's own".into(),
            });
        }

        (Run::Docker(_), _) if *sync_faults => {
            return Err(BackendError::FaultUnsupported {
                action: "syncFault",
                target: Target::Admin(None),
                backend: run.backend_name(),
            });
        }
        (Run::Docker(_), _) if *clocks => {
            return Err(BackendError::FaultUnsupported {
                action: "clock",
                target: Target::Admin(None),
                backend: run.backend_name(),
            });
        }
        // ShenYu #3900's shape: the admins one replicated service on PostgreSQL, behind one
        // name, which is all each gateway is given.
        (Run::Docker(d), false) if d.is_swarm() && !spec.is_default() && spec.late.is_empty() => {
            let (admins, db) = run
                .start_admin_replicas(mode, store.as_ref(), spec.admins)
                .await?;
            postgres = Some(db);
            let mut gateways = Vec::new();
            for i in 0..spec.gateways {
                let gateway = match spec.gateways {
                    1 => {
                        run.start_gateway(mode, &admins[0], store.as_ref(), dir)
                            .await?
                    }
                    _ => start_numbered_gateway(d, i, mode, &admins[0], store.as_ref()).await?,
                };
                gateways.push(gateway);
            }
            (admins, gateways, None)
        }
        (Run::Docker(_), _) if !spec.is_default() => {
            return Err(BackendError::TopologyUnsupported {
                backend: run.backend_name(),
            });
        }
        // Docker runs partition on the run's sync network (`Topology::partition`), and put
        // a proxy container on the sync link for its `network` faults.
        (Run::Docker(d), true) => {
            let admin = run.start_admin(mode, store.as_ref(), dir).await?;
            let target = match (&store, &admin) {
                (Some(ComponentService::Docker { container, .. }), _)
                | (None, Service::Docker(container)) => container,
                _ => unreachable!("a docker run's admin and store are containers"),
            };
            let proxy = d.start_proxy(SYNC_PROXY_ROLE, target).await?;
            let through = (target.peer_addr(), proxy.address());
            let gateway = crate::backend::start_gateway_through(
                d,
                mode,
                &admin,
                store.as_ref(),
                (through.0, &through.1),
            )
            .await?;
            (
                vec![admin],
                vec![gateway],
                Some(links::LinkProxy::Container(Box::new(proxy))),
            )
        }
        // The external target's admin and gateway run already.
        (Run::Docker(_) | Run::External(_), _) => {
            let admin = run.start_admin(mode, store.as_ref(), dir).await?;
            let gateway = run.start_gateway(mode, &admin, store.as_ref(), dir).await?;
            (vec![admin], vec![gateway], None)
        }
        (Run::Host(host), _) => {
            let faked;
            let host = if *clocks {
                faked = host.with_fake_clocks();
                &faked
            } else {
                host
            };
            let db = match spec.storage {
                Storage::Sqlite => db_dir.join("admin.db").display().to_string(),
                Storage::Postgres => {
                    let server = HostServer::start_postgres(keep).await?;
                    let at = SocketAddr::from(([127, 0, 0, 1], server.port()));
                    postgres = Some(ComponentService::Host(server));
                    if shape.proxied(run, Link::Database) {
                        let proxy =
                            links::start(at, "the database link", shape.slicer(run)).await?;
                        let url = ServerKind::Postgres.address(&proxy.address());
                        database = Some(proxy);
                        url
                    } else {
                        ServerKind::Postgres.address(&at.to_string())
                    }
                }
            };
            let mut launch = AdminLaunch::on(&db);
            if *sync_faults {
                launch.args.push("--test-only-sync-faults".to_owned());
            }
            let mut admins = Vec::new();
            for i in 0..spec.admins {
                let name = numbered("admin", i, spec.admins);
                let admin = host
                    .start_admin_as(&name, mode, host_store, dir, &launch)
                    .await?;
                admins.push(Service::Host(admin));
            }
            let (source, proxy) = if *sync_proxy {
                let slicer = shape.slicer(run).filter(|_| sliced);
                let (proxy, source) = sync_proxy_for(mode, &admins[0], host_store, slicer).await?;
                (source, Some(proxy))
            } else {
                (gateway_source(&admins, host_store), None)
            };
            let mut gateways = Vec::new();
            for i in 0..spec.gateways {
                let name = numbered("gateway", i, spec.gateways);
                let gateway = if spec.late.contains(&i) {
                    host.unstarted_gateway(&name, mode, source.clone(), dir)?
                } else {
                    host.start_gateway_as(&name, mode, source.clone(), dir)
                        .await?
                };
                gateways.push(Service::Host(gateway));
            }
            (admins, gateways, proxy)
        }
    };
    Ok(Control {
        store,
        postgres,
        admins,
        gateways,
        proxy,
        database,
    })
}

/// How a case's topology differs from the default (one admin on SQLite, one gateway, their
/// sync connection direct): what [`Topology::start_with`] reads from its scenario.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// The admins, gateways, late gateways and storage (`topology:`).
    pub spec: TopologySpec,
    /// The links that go through a `FaultProxy` (steps partition or fault them): the sync
    /// connection, the upstreams, the client, the database, Redis.
    pub proxies: BTreeSet<Link>,
    /// The admins run with their test-only protocol fault hook on (steps' `syncFault`).
    pub sync_faults: bool,
    /// The admins and gateways run on wall clocks of their own (steps' `clock`; host
    /// backend: libfaketime).
    pub clocks: bool,
    /// The `slice` run mode: every link goes through a `FaultProxy` that writes every chunk
    /// both ways 1 byte at a time, this far apart (host backend; the sync link with one admin
    /// only, the database link on PostgreSQL only).
    pub slice_links: Option<std::time::Duration>,
    /// The admins' SQLite file sits on a tmpfs of its own that steps fill (`diskFull`; host
    /// backend, as root).
    pub disk_faults: bool,
    /// The limits of the containers, by role (`resources`; docker backend).
    pub resources: Resources,
}

impl Shape {
    /// Whether `run` slices every link (the `slice` run mode on the host backend).
    fn sliced(&self, run: &Run) -> bool {
        self.slice_links.is_some() && matches!(run, Run::Host(_))
    }

    /// The toxics a new proxy keeps from the start: the slicer when `run` slices.
    fn slicer(&self, run: &Run) -> Option<Toxics> {
        let every = self.slice_links.filter(|_| self.sliced(run))?;
        Some(Toxics::sliced(every))
    }

    /// Whether `link` goes through a proxy on `run` (a step faults it, or every link is
    /// sliced).
    fn proxied(&self, run: &Run, link: Link) -> bool {
        self.proxies.contains(&link) || self.sliced(run)
    }
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
        Self::start_with(
            backend,
            mode,
            upstreams,
            components,
            keep,
            &Shape::default(),
        )
        .await
    }

    /// [`Topology::start`] in the `shape` a case asks for: the admins and gateways of its
    /// `topology` (several of them, late ones, PostgreSQL: host backend), the gateway's sync
    /// connection (to the admin, or to ZooKeeper or etcd) through a `FaultProxy` so that
    /// steps can partition and heal it (host backend; docker runs partition on the run's sync
    /// network instead), the admins' test-only protocol fault hook on (host backend).
    pub async fn start_with(
        backend: &Backend,
        mode: SyncMode,
        upstreams: &[UpstreamDecl],
        components: &[Component],
        keep: bool,
        shape: &Shape,
    ) -> Result<Self, BackendError> {
        let mut dir = tempfile::Builder::new()
            .prefix("gantry-")
            .tempdir()
            .map_err(|source| BackendError::Io {
                what: "creating a temp dir".into(),
                source,
            })?;
        dir.disable_cleanup(keep);
        let disk = match (backend, shape.disk_faults) {
            (Backend::Host(_), true) => Some(DiskMount::mount(dir.path().join("db"))?),
            _ => None,
        };
        let db_dir = disk.as_ref().map_or(dir.path(), DiskMount::path);
        let mut run = backend.begin(mode, keep).await?;
        if let Run::Docker(d) = &mut run {
            d.resources = shape.resources;
        }
        // The upstreams and components need nothing else; the store, the admins and the
        // gateways need each other in that order: the two chains start side by side.
        let serving = start_serving(&run, upstreams, components, dir.path());
        let control = start_control(&run, mode, (dir.path(), db_dir), keep, shape);
        let (
            (ups, started),
            Control {
                store,
                postgres,
                admins,
                gateways,
                proxy,
                database,
            },
        ) = tokio::try_join!(serving, control)?;
        let mut links = LinkProxies {
            sync: proxy,
            database,
            ..LinkProxies::default()
        };
        if shape.proxied(&run, Link::Upstream) {
            for (name, upstream) in &ups {
                let proxy = match (upstream, &run) {
                    (UpstreamService::Host(u), _) => {
                        let what = format!("the upstream link to {name}");
                        links::start(u.addr(), &what, shape.slicer(&run)).await?
                    }
                    (UpstreamService::Docker(c), Run::Docker(d)) => links::LinkProxy::Container(
                        Box::new(d.start_proxy(UPSTREAM_PROXY_ROLE, c).await?),
                    ),
                    _ => continue,
                };
                links.upstreams.insert(name.clone(), proxy);
            }
        }
        if shape.proxied(&run, Link::Redis)
            && let Some(redis) = started.get(&Component::Redis)
        {
            links.redis = Some(match (redis, &run) {
                (ComponentService::Docker { container, .. }, Run::Docker(d)) => {
                    links::LinkProxy::Container(Box::new(
                        d.start_proxy(UPSTREAM_PROXY_ROLE, container).await?,
                    ))
                }
                (service, _) => {
                    let at = SocketAddr::from(([127, 0, 0, 1], redis_port(service)?));
                    links::start(at, "the Redis link", shape.slicer(&run)).await?
                }
            });
        }
        // On docker, in the harness in front of the gateway's published port.
        if shape.proxied(&run, Link::Client) && !matches!(run, Run::External(_)) {
            for gateway in &gateways {
                let what = format!("the client link to {}", gateway.name());
                let at = links::url_addr(gateway.url(), &what)?;
                links
                    .clients
                    .push(links::start(at, &what, shape.slicer(&run)).await?);
            }
        }
        Ok(Self {
            gateways,
            admins,
            postgres,
            links,
            store: Mutex::new(store),
            components: Mutex::new(started),
            upstreams: ups,
            disk,
            dir,
            keep,
            run,
        })
    }

    /// Stops everything, as dropping does, except that a docker run's containers are removed
    /// all at once instead of one after another (a failure is logged, as on drop).
    pub async fn close(self) {
        if !matches!(self.run, Run::Docker(_)) {
            return;
        }
        let Topology {
            gateways,
            admins,
            store,
            components,
            upstreams,
            links,
            run,
            ..
        } = self;
        let services = gateways.into_iter().chain(admins).map(|s| match s {
            Service::Docker(c) => Some(c),
            _ => None,
        });
        let components = store
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_iter()
            .chain(
                components
                    .into_inner()
                    .unwrap_or_else(PoisonError::into_inner)
                    .into_values(),
            )
            .map(|c| match c {
                ComponentService::Docker { container, .. } => Some(container),
                ComponentService::Host(_) => None,
            });
        let upstreams = upstreams.into_values().map(|u| match u {
            UpstreamService::Docker(c) => Some(c),
            _ => None,
        });
        let proxies = links.into_all().map(links::LinkProxy::into_container);
        let removals = services
            .chain(components)
            .chain(upstreams)
            .chain(proxies)
            .flatten()
            .map(Container::remove);
        for result in join_all(removals).await {
            if let Err(e) = result {
                tracing::error!("closing the topology: {e}");
            }
        }
        // Last: the run's networks.
        drop(run);
    }

    /// The first admin.
    pub fn admin(&self) -> &Service {
        &self.admins[0]
    }

    /// The first gateway.
    pub fn gateway(&self) -> &Service {
        &self.gateways[0]
    }

    /// Every admin, in index order.
    pub fn admins(&self) -> &[Service] {
        &self.admins
    }

    /// Every gateway, in index order (a late one is not running until a step starts it).
    pub fn gateways(&self) -> &[Service] {
        &self.gateways
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&UpstreamService> {
        self.upstreams.get(name)
    }

    /// `host:port` where the gateway reaches the upstream `name` (a divide `upstreamUrl`):
    /// its fault proxy when the upstream link has one.
    pub fn upstream_address(&self, name: &str) -> Option<String> {
        match self.links.upstreams.get(name) {
            Some(proxy) => Some(proxy.address()),
            None => self.upstream(name).map(UpstreamService::host_port),
        }
    }

    /// The base URL the harness sends gateway `i`'s requests to: its fault proxy when the
    /// client link has one, else the gateway's own.
    pub fn client_url(&self, i: usize) -> String {
        match self.links.clients.get(i) {
            Some(proxy) => format!("http://{}", proxy.address()),
            None => self.gateways[i].url().to_owned(),
        }
    }

    /// The values of the plugin config placeholders in this topology (`${redis.url}`: the
    /// Redis address as the gateway reaches it, when the case asked for Redis).
    /// Behind its proxy when the Redis link has one.
    pub fn placeholder_values(&self) -> placeholder::Values {
        let redis = self
            .components()
            .get(&Component::Redis)
            .map(|redis| match &self.links.redis {
                Some(proxy) => redis.kind().address(&proxy.address()),
                None => redis.url(),
            });
        placeholder::Values { redis_url: redis }
    }

    /// Applies a step's fault to `target`: stops, kills, starts, restarts, pauses or resumes
    /// it. A stopped process keeps its address, so a `start` brings it back where its peers
    /// look for it.
    pub async fn fault(&self, action: FaultAction, target: Target) -> Result<(), BackendError> {
        match target {
            Target::Admin(_) | Target::Gateway(_) => {
                let services = match target {
                    Target::Admin(_) => &self.admins,
                    _ => &self.gateways,
                };
                let service = target
                    .index()
                    .and_then(|i| services.get(i))
                    .ok_or(BackendError::NoSuchProcess { target })?;
                service.fault(action).await
            }
            Target::Zookeeper | Target::Etcd => {
                let missing = BackendError::NoSuchProcess { target };
                let mut store = match self.stores().take() {
                    Some(s) if s.kind().name() == target.name() => s,
                    Some(other) => {
                        *self.stores() = Some(other);
                        return Err(missing);
                    }
                    None => return Err(missing),
                };
                let done = store.fault(action).await;
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

    /// Steps the wall clock of `target` (an admin or a gateway) by `seconds` (negative:
    /// back); answers its new offset from the real clock.
    pub fn step_clock(&self, target: Target, seconds: i64) -> Result<i64, BackendError> {
        let services = match target {
            Target::Admin(_) => &self.admins,
            Target::Gateway(_) => &self.gateways,
            _ => return Err(BackendError::NoSuchProcess { target }),
        };
        let service = target
            .index()
            .and_then(|i| services.get(i))
            .ok_or(BackendError::NoSuchProcess { target })?;
        service.step_clock(seconds, target)
    }

    /// Cuts the gateway off from where it syncs (a step's `partition`): on the host, `how`
    /// the proxy says; on docker, a disconnect from the run's sync network (connections go
    /// silent, as `blackhole`; parse refuses the other modes there). [`Topology::heal`] ends it.
    pub async fn partition(&self, how: ProxyMode) -> Result<(), BackendError> {
        match (&self.run, self.gateway()) {
            (Run::Docker(run), Service::Docker(gateway)) if how == ProxyMode::Blackhole => {
                run.partition(gateway).await
            }
            (Run::Docker(_), _) => Err(BackendError::FaultUnsupported {
                action: "partition",
                target: Target::Gateway(None),
                backend: self.run.backend_name(),
            }),
            (Run::External(_), _) => Err(BackendError::FaultUnsupported {
                action: "partition",
                target: Target::Gateway(None),
                backend: "external",
            }),
            (Run::Host(_), _) => {
                self.sync_proxy()?.set(how);
                Ok(())
            }
        }
    }

    /// Adds toxics to every proxy on `link` (a step's `network`; host and docker backends):
    /// `add` gets each one's toxics set so far. [`Topology::heal`] ends them.
    pub(crate) async fn network(
        &self,
        link: Link,
        add: impl Fn(&mut Toxics),
    ) -> Result<(), BackendError> {
        if let Run::External(_) = &self.run {
            return Err(BackendError::FaultUnsupported {
                action: "network",
                target: Target::Gateway(None),
                backend: self.run.backend_name(),
            });
        }
        let proxies = self.links.on(link);
        if proxies.is_empty() {
            return Err(BackendError::NoLinkProxy { link: link.name() });
        }
        for proxy in proxies {
            let mut toxics = proxy.toxics();
            add(&mut toxics);
            proxy.set_toxics(toxics).await?;
        }
        Ok(())
    }

    /// Ends a partition and every `network` fault: each link passes again (a step's
    /// `heal`). On docker, the proxies heal and a partitioned gateway joins the sync network
    /// again.
    pub async fn heal(&self) -> Result<(), BackendError> {
        let proxies: Vec<_> = self.links.all().collect();
        try_join_all(proxies.iter().map(|proxy| proxy.heal())).await?;
        match (&self.run, self.gateway()) {
            (Run::Docker(run), Service::Docker(gateway)) => match run.heal(gateway).await {
                Err(BackendError::NotPartitioned) if !proxies.is_empty() => Ok(()),
                healed => healed,
            },
            _ if proxies.is_empty() => Err(BackendError::NoSyncProxy),
            _ => Ok(()),
        }
    }

    /// The current revision of the etcd of the etcd mode (host backend).
    pub async fn etcd_revision(&self) -> Result<i64, BackendError> {
        crate::fault::etcd::revision(&self.etcd_url()?).await
    }

    /// Compacts the etcd of the etcd mode (a step's `compact: etcd`, host backend) to its
    /// current revision once that is at least `least`; returns it.
    pub async fn compact_etcd(&self, least: i64) -> Result<i64, BackendError> {
        crate::fault::etcd::compact_at_least(&self.etcd_url()?, least).await
    }

    /// Wipes the store `target` (a step's `wipe`, host backend): ends it, empties its data
    /// and starts it again on the same address, fresh (etcd's revisions start over).
    pub async fn wipe_store(&self, target: Target) -> Result<(), BackendError> {
        let mut host = match self.stores().take() {
            Some(ComponentService::Host(s)) if s.kind().name() == target.name() => s,
            other => {
                let docker = matches!(other, Some(ComponentService::Docker { .. }));
                *self.stores() = other;
                return Err(if docker {
                    BackendError::FaultUnsupported {
                        action: "wipe",
                        target,
                        backend: self.run.backend_name(),
                    }
                } else {
                    BackendError::NoSuchProcess { target }
                });
            }
        };
        let done = host.wipe().await;
        *self.stores() = Some(ComponentService::Host(host));
        done
    }

    /// Pauses gateway `target` until ZooKeeper has expired its session (a step's
    /// `expireSession`, zookeeper mode, host backend); returns how long that took. It stays
    /// paused.
    pub async fn expire_zookeeper_session(
        &self,
        target: Target,
    ) -> Result<std::time::Duration, BackendError> {
        let port = match self.stores().as_ref() {
            Some(ComponentService::Host(s)) if s.kind() == ServerKind::Zookeeper => s.port(),
            Some(ComponentService::Docker { .. }) => {
                return Err(BackendError::FaultUnsupported {
                    action: "expireSession",
                    target,
                    backend: self.run.backend_name(),
                });
            }
            _ => {
                return Err(BackendError::NoSuchProcess {
                    target: Target::Zookeeper,
                });
            }
        };
        let gateway = target
            .index()
            .and_then(|i| self.gateways.get(i))
            .ok_or(BackendError::NoSuchProcess { target })?;
        let session = crate::fault::zookeeper::gateway_session(gateway.url()).await?;
        self.fault(FaultAction::Pause, target).await?;
        use crate::fault::zookeeper::{EXPIRY_MARGIN, wait_expired};
        wait_expired(port, &session, EXPIRY_MARGIN).await
    }

    /// Starts starving gateway `how.target` of CPU (a step's `starve`, host backend): stopped
    /// for `how.duty` of every `how.period`, until the returned [`Starvation`] is dropped.
    pub(crate) fn starve(&self, how: &Starve) -> Result<Starvation, BackendError> {
        let target = how.target;
        let gateway = target
            .index()
            .and_then(|i| self.gateways.get(i))
            .ok_or(BackendError::NoSuchProcess { target })?;
        let Service::Host(host) = gateway else {
            return Err(BackendError::FaultUnsupported {
                action: "starve",
                target,
                backend: self.run.backend_name(),
            });
        };
        let pid = host.pid().ok_or_else(|| BackendError::NotRunning {
            service: host.name().to_owned(),
        })?;
        Starvation::start(host.name(), pid, how.stopped(), how.running())
    }

    /// The admin's database disk of a case with disk faults, or why there is none.
    fn disk(&self, action: &'static str) -> Result<&DiskMount, BackendError> {
        self.disk.as_ref().ok_or(BackendError::FaultUnsupported {
            action,
            target: Target::Admin(None),
            backend: self.run.backend_name(),
        })
    }

    /// Fills the disk under the admin's database until it refuses more (a step's
    /// `diskFull: database`); returns how many bytes that took.
    pub(crate) fn disk_full(&self) -> Result<u64, BackendError> {
        self.disk("diskFull")?.fill()
    }

    /// Frees the disk under the admin's database (a step's `diskFree: database`).
    pub(crate) fn disk_free(&self) -> Result<(), BackendError> {
        self.disk("diskFree")?.free()
    }

    fn etcd_url(&self) -> Result<String, BackendError> {
        match self.stores().as_ref() {
            Some(ComponentService::Host(s)) if s.kind() == ServerKind::Etcd => Ok(s.url()),
            Some(ComponentService::Docker { .. }) => Err(BackendError::FaultUnsupported {
                action: "compact",
                target: Target::Etcd,
                backend: self.run.backend_name(),
            }),
            _ => Err(BackendError::NoSuchProcess {
                target: Target::Etcd,
            }),
        }
    }

    fn sync_proxy(&self) -> Result<&FaultProxy, BackendError> {
        self.links
            .sync
            .as_ref()
            .and_then(links::LinkProxy::local)
            .ok_or(BackendError::NoSyncProxy)
    }

    fn stores(&self) -> MutexGuard<'_, Option<ComponentService>> {
        self.store.locked()
    }

    fn components(&self) -> MutexGuard<'_, BTreeMap<Component, ComponentService>> {
        self.components.locked()
    }

    /// The docker run's networks (upstream, sync), for docker runs: a container of your own
    /// joins the upstream one to be reached by the gateway as an upstream, the sync one to sit
    /// beside the admin and the store.
    pub fn docker_networks(&self) -> Option<(String, String)> {
        self.run.docker_networks()
    }

    /// The external target, for external runs.
    pub fn external(&self) -> Option<&crate::backend::ExternalBackend> {
        self.run.external()
    }

    /// The name a selector called `name` gets on the admin: `name`, with the run's prefix on
    /// an external target (what the run removes there).
    pub fn selector_name(&self, name: &str) -> String {
        match self.external() {
            Some(e) => e.target.selector_name(name),
            None => name.to_owned(),
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

    /// The admins and gateways the kernel's OOM killer ended (docker: `State.OOMKilled`;
    /// none elsewhere), each named with its memory limit (`gantry-…-gateway (memory limit
    /// 8MiB)`).
    pub async fn oom_killed(&self) -> Vec<String> {
        let Run::Docker(run) = &self.run else {
            return Vec::new();
        };
        let roles = (self.admins.iter().map(|s| ("admin", s)))
            .chain(self.gateways.iter().map(|s| ("gateway", s)));
        let mut killed = Vec::new();
        for (role, s) in roles {
            if let Service::Docker(c) = s
                && c.oom_killed().await
            {
                let limit = (run.resources.memory_of(role))
                    .map_or(String::new(), |m| format!(" (memory limit {})", Bytes(m)));
                killed.push(format!("{}{limit}", s.name()));
            }
        }
        killed
    }

    /// The services that ended on their own (admins, gateways, the store), by name; `None`
    /// when the backend cannot tell.
    pub fn exited(&self) -> Option<Vec<String>> {
        let mut gone = Vec::new();
        for s in self.admins.iter().chain(&self.gateways) {
            if s.exited()? {
                gone.push(s.name().to_owned());
            }
        }
        if let Some(store) = self.stores().as_ref()
            && store.exited()
        {
            gone.push(store.kind().name().to_owned());
        }
        Some(gone)
    }

    /// The last `n` lines of each service log, with headers (naming the directory when kept).
    pub fn log_tails(&self, n: usize) -> String {
        let kept = if self.keep {
            format!(", kept in {}", self.dir().display())
        } else {
            String::new()
        };
        let mut tails: String = self
            .admins
            .iter()
            .chain(&self.gateways)
            .map(|s| {
                format!(
                    "\n--- {} log (last {n} lines{kept}) ---\n{}",
                    s.name(),
                    s.log_tail(n)
                )
            })
            .collect();
        if let Some(postgres) = &self.postgres {
            let kept = match postgres.host() {
                Some(host) if self.keep => format!(", kept in {}", host.dir().display()),
                _ => String::new(),
            };
            tails += &format!(
                "\n--- postgres log (last {n} lines{kept}) ---\n{}",
                postgres.log_tail(n)
            );
        }
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
        tails
    }
}

/// `kind` alone when the topology runs one of that kind, else `kind[i]`.
fn numbered(kind: &str, i: u8, count: u8) -> String {
    if count == 1 {
        kind.to_owned()
    } else {
        format!("{kind}[{i}]")
    }
}

/// The port of the case's Redis, a process of this host.
fn redis_port(service: &ComponentService) -> Result<u16, BackendError> {
    service
        .host()
        .map(HostServer::port)
        .ok_or_else(|| BackendError::Io {
            what: "starting the fault proxy on the Redis link".into(),
            source: std::io::Error::other("Redis is not a process of this host"),
        })
}

/// Where a host gateway syncs from: every admin URL, in order (it fails over from one to the
/// next), and the store in the zookeeper and etcd modes.
fn gateway_source(admins: &[Service], store: Option<&HostServer>) -> Vec<String> {
    let urls: Vec<&str> = admins.iter().map(Service::url).collect();
    let mut source = vec!["--admin-url".to_owned(), urls.join(",")];
    source.extend(store.map(HostServer::store_flags).unwrap_or_default());
    source
}

/// A fault proxy in front of what the gateway syncs from (the admin in the websocket and
/// http modes, the store otherwise), and the gateway flags that point at it.
async fn sync_proxy_for(
    mode: SyncMode,
    admin: &Service,
    store: Option<&HostServer>,
    slicer: Option<Toxics>,
) -> Result<(links::LinkProxy, Vec<String>), BackendError> {
    let store = store.and_then(|s| Some((s, s.kind().store()?)));
    let (target, flag) = match store {
        Some((store, kind)) => (
            SocketAddr::from(([127, 0, 0, 1], store.port())),
            kind.url_flag(),
        ),
        None => (
            links::url_addr(admin.url(), &format!("the {mode} sync link's admin"))?,
            "--admin-url",
        ),
    };
    let proxy = links::start(target, "the sync link", slicer).await?;
    let proxied = match store.map(|(_, kind)| kind) {
        Some(StoreKind::Zookeeper) => proxy.address(),
        _ => format!("http://{}", proxy.address()),
    };
    let mut source = vec![flag.to_owned(), proxied];
    if store.is_some() {
        source.extend(["--admin-url".to_owned(), admin.url().to_owned()]);
    }
    Ok((proxy, source))
}
