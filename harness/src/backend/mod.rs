//! Backends start the services of one topology: `host` (local processes and in-process
//! upstreams) and `docker` (containers on a private network). A [`Backend`] is prepared once;
//! each topology opens a [`Run`] on it and starts its services through the run, which owns
//! whatever the services share (for docker, the network) and cleans it up on drop.
//! Both wait for a service they started the same way (`ready`: poll a probe until it
//! answers, with a deadline). Besides the sync mode's store ([`Run::start_store`]), a run
//! starts the components a case asks for ([`Run::start_component`]); each is described once
//! and handed back as one [`ComponentService`] ([`component`]). The `external`
//! backend starts only upstreams, for an admin and gateway someone else runs (the engine's
//! side of that target is [`crate::target`]).

mod clock;
pub(crate) mod component;
pub(crate) mod docker;
pub(crate) mod external;
pub(crate) mod host;
pub(crate) mod process;
mod ready;

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use model::SyncMode;

pub(crate) use component::ServerKind;
pub use component::StoreKind;
pub use component::{ComponentService, HostServer};
pub(crate) use docker::Container;
pub use docker::DockerBackend;
pub(crate) use docker::DockerRun;
pub use external::ExternalTarget;
pub(crate) use external::{Capabilities, ExternalBackend};
pub(crate) use host::HostBackend;

use rustix::process::Signal;

use crate::error::BackendError;
use crate::scenario::ast::{Component, FaultAction, Target};
use crate::upstream::{Behaviour, Upstream};

/// Which backend to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Local processes from the workspace's target directory.
    #[default]
    Host,
    /// Containers of the `gantry/*:dev` images.
    Docker,
    /// Docker Swarm services of the same images, on the engine's swarm (a one-node swarm made
    /// for the run when the engine is in none).
    Swarm,
    /// An admin and a gateway someone else runs (`--admin-url`, `--gateway-url`).
    External,
}

impl BackendKind {
    /// Whether it runs the services as containers of gantry's images (docker, swarm).
    pub fn containers(self) -> bool {
        matches!(self, BackendKind::Docker | BackendKind::Swarm)
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Host => "host",
            BackendKind::Docker => "docker",
            BackendKind::Swarm => "swarm",
            BackendKind::External => "external",
        })
    }
}

/// A backend, ready to start services.
#[derive(Debug, Clone)]
pub enum Backend {
    /// Local processes.
    Host(HostBackend),
    /// Containers.
    Docker(DockerBackend),
    /// Someone else's admin and gateway.
    External(ExternalBackend),
}

impl Backend {
    /// A backend of `kind` whose binaries live in `bin_dir` (for docker: the static binaries
    /// the images are built from, rebuilding the images whose binary changed). An external
    /// backend is made by `crate::target::external::connect` instead.
    pub fn new(kind: BackendKind, bin_dir: PathBuf) -> Result<Self, BackendError> {
        match kind {
            BackendKind::Host => HostBackend::new(bin_dir).map(Backend::Host),
            BackendKind::Docker => DockerBackend::open(Some(&bin_dir)).map(Backend::Docker),
            BackendKind::Swarm => DockerBackend::open_swarm(Some(&bin_dir)).map(Backend::Docker),
            BackendKind::External => Err(BackendError::External {
                what: "starting the external backend".into(),
                detail: "it runs no binaries: connect to a target instead".into(),
            }),
        }
    }

    /// What the admin and gateway offer besides ShenYu's protocol: everything on a backend
    /// of gantry's own, what the probe found on an external target.
    pub fn capabilities(&self) -> Capabilities {
        match self {
            Backend::External(e) => e.capabilities,
            Backend::Host(_) | Backend::Docker(_) => Capabilities::GANTRY,
        }
    }

    /// The same backend, adding `args` to every gateway's command line (e.g.
    /// `--emulate-bug drop-deletes`, to see a scenario fail on a known ShenYu bug).
    pub fn with_gateway_args(mut self, args: Vec<String>) -> Self {
        if let Some(extra) = self.extra_args() {
            extra.gateway.extend(args);
        }
        self
    }

    /// The same backend, adding `args` to every admin's command line (e.g.
    /// `--peer-watch-ms 0`, to see a scenario fail on ShenYu #3900).
    pub fn with_admin_args(mut self, args: Vec<String>) -> Self {
        if let Some(extra) = self.extra_args() {
            extra.admin.extend(args);
        }
        self
    }

    fn extra_args(&mut self) -> Option<&mut ExtraArgs> {
        match self {
            Backend::Host(h) => Some(&mut h.extra),
            Backend::Docker(d) => Some(&mut d.extra),
            Backend::External(_) => None,
        }
    }

    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        match self {
            Backend::Host(_) => BackendKind::Host,
            Backend::Docker(d) if d.is_swarm() => BackendKind::Swarm,
            Backend::Docker(_) => BackendKind::Docker,
            Backend::External(_) => BackendKind::External,
        }
    }

    /// Opens a run for one topology under `mode`; `keep` leaves docker containers behind.
    /// Each run has its own random `SyncToken`.
    pub async fn begin(&self, mode: SyncMode, keep: bool) -> Result<Run, BackendError> {
        match self {
            Backend::Host(h) => Ok(Run::Host(h.for_run())),
            Backend::Docker(d) => d
                .begin(mode, keep)
                .await
                .map(|run| Run::Docker(Box::new(run))),
            Backend::External(e) => Ok(Run::External(Box::new(e.clone()))),
        }
    }
}

/// Extra command-line arguments for the admins and gateways a backend starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExtraArgs {
    /// For every gateway.
    pub gateway: Vec<String>,
    /// For every admin.
    pub admin: Vec<String>,
}

/// The name of the admins' sync user (`--sync-user`), whose password is the run's
/// [`SyncToken`]: HTTP long-polling gateways log in with it, not as the dashboard user, so
/// failed dashboard logins never cut them off.
pub(crate) const SYNC_USER: &str = "gantry-sync";

/// The websocket sync token of one run: its admins start with `--sync-token` and its
/// gateways send it, so every websocket scenario goes through the token check. It is also
/// the password of the run's [`SYNC_USER`]. Random per run; `Debug` redacts it.
#[derive(Clone)]
pub struct SyncToken(Arc<str>);

impl SyncToken {
    /// A fresh token: 32 random hex digits.
    pub fn random() -> Self {
        use rand::Rng;
        let mut rng = rand::rng();
        let token: String = (0..32)
            .map(|_| char::from(b"0123456789abcdef"[rng.random_range(0..16)]))
            .collect();
        Self(Arc::from(token))
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The admin's `--sync-user` value: [`SYNC_USER`] with this token as its password.
    pub fn sync_user(&self) -> String {
        format!("{SYNC_USER}:{}", self.0)
    }
}

impl std::fmt::Debug for SyncToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SyncToken(<redacted>)")
    }
}

/// One topology's services in the making; see [`Backend::begin`].
#[derive(Debug)]
pub enum Run {
    /// Host processes.
    Host(HostBackend),
    /// Containers on the run's networks.
    Docker(Box<DockerRun>),
    /// Upstreams for someone else's admin and gateway.
    External(Box<ExternalBackend>),
}

impl Run {
    /// The run's websocket sync token (admins require it, gateways send it); `None` for an
    /// external run (the target's admin has its own, if any).
    pub fn sync_token(&self) -> Option<&SyncToken> {
        match self {
            Run::Host(h) => Some(h.sync_token()),
            Run::Docker(d) => Some(d.sync_token()),
            Run::External(_) => None,
        }
    }

    /// The backend's name in errors and reports: `host`, `docker`, `swarm` or `external`.
    pub fn backend_name(&self) -> &'static str {
        match self {
            Run::Host(_) => "host",
            Run::Docker(d) if d.is_swarm() => "swarm",
            Run::Docker(_) => "docker",
            Run::External(_) => "external",
        }
    }

    /// The external target, for external runs.
    pub fn external(&self) -> Option<&ExternalBackend> {
        match self {
            Run::External(e) => Some(e),
            Run::Host(_) | Run::Docker(_) => None,
        }
    }

    /// The docker run's networks (upstream, sync), for docker runs.
    pub fn docker_networks(&self) -> Option<(String, String)> {
        match self {
            Run::Docker(d) => Some(d.networks()),
            Run::Host(_) | Run::External(_) => None,
        }
    }

    /// The docker run id, for docker runs.
    pub fn docker_id(&self) -> Option<&str> {
        match self {
            Run::Docker(d) => Some(d.id()),
            Run::Host(_) | Run::External(_) => None,
        }
    }

    /// Starts the ZooKeeper or etcd server of `kind`: a host process with its files under
    /// `dir`, or a container on the run's network that the admin and gateway started after it
    /// use.
    pub async fn start_store(
        &self,
        kind: StoreKind,
        dir: &Path,
    ) -> Result<ComponentService, BackendError> {
        match self {
            Run::Host(_) => HostServer::start(kind, dir)
                .await
                .map(ComponentService::Host),
            Run::Docker(d) => d
                .start_store(kind)
                .await
                .map(|container| ComponentService::Docker {
                    kind: kind.into(),
                    container,
                }),
            Run::External(_) => Err(external_unsupported("starting a ZooKeeper or etcd server")),
        }
    }

    /// Starts `component` for one case: a host process with its files under `dir`, or a
    /// container on the run's network.
    pub async fn start_component(
        &self,
        component: Component,
        dir: &Path,
    ) -> Result<ComponentService, BackendError> {
        match (self, component) {
            (Run::Host(_), _) => HostServer::start(component, dir)
                .await
                .map(ComponentService::Host),
            (Run::Docker(d), Component::Redis) => {
                d.start_redis()
                    .await
                    .map(|container| ComponentService::Docker {
                        kind: component.into(),
                        container,
                    })
            }
            (Run::External(_), _) => Err(external_unsupported("starting Redis")),
        }
    }

    /// Starts the scenario upstream `name` with `behave` (none: an echo upstream).
    pub async fn start_upstream(
        &self,
        name: &str,
        behave: &[Behaviour],
    ) -> Result<UpstreamService, BackendError> {
        match self {
            Run::Host(_) => Upstream::start(name, behave)
                .await
                .map(UpstreamService::Host),
            Run::Docker(d) => d
                .start(&docker::upstream_spec(&d.prefix(), name, behave))
                .await
                .map(UpstreamService::Docker),
            Run::External(e) => Upstream::start_at(name, behave, e.target.upstream_bind)
                .await
                .map(|upstream| UpstreamService::External {
                    upstream,
                    advertise: e.target.upstream_advertise.clone(),
                }),
        }
    }

    /// Starts an admin publishing with `mode` (to `store`, this run's [`Run::start_store`],
    /// for the zookeeper and etcd modes); host files go under `dir`.
    pub async fn start_admin(
        &self,
        mode: SyncMode,
        store: Option<&ComponentService>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        check_store(self, mode, store)?;
        match self {
            Run::Host(h) => h
                .start_admin(mode, store.and_then(ComponentService::host), dir)
                .await
                .map(Service::Host),
            Run::Docker(d) => d
                .start(&docker_admin_spec(d, mode, store))
                .await
                .map(Service::Docker),
            Run::External(e) => Ok(Service::External {
                name: "admin",
                url: e.target.admin_url.clone(),
            }),
        }
    }

    /// Starts `count` admins publishing with `mode` on one PostgreSQL of the run, as the
    /// swarm backend runs several: one Swarm service of `count` tasks behind its one name
    /// (ShenYu #3900's shape: gateways given that name reach one of them), each task a
    /// [`Service`] of its own. Returns the admins and the PostgreSQL server.
    pub async fn start_admin_replicas(
        &self,
        mode: SyncMode,
        store: Option<&ComponentService>,
        count: u8,
    ) -> Result<(Vec<Service>, ComponentService), BackendError> {
        check_store(self, mode, store)?;
        let Run::Docker(d) = self else {
            return Err(BackendError::TopologyUnsupported {
                backend: self.backend_name(),
            });
        };
        let postgres = d.start_postgres().await?;
        let mut spec = docker_admin_spec(d, mode, store);
        let db = spec.cmd.iter().position(|a| a == "--db").map(|i| i + 1);
        if let Some(db) = db.and_then(|i| spec.cmd.get_mut(i)) {
            *db = docker::postgres_url(&d.prefix());
        }
        let admins = d.start_replicas(&spec, count).await?;
        Ok((
            admins.into_iter().map(Service::Docker).collect(),
            ComponentService::Docker {
                kind: ServerKind::Postgres,
                container: postgres,
            },
        ))
    }

    /// Starts a gateway subscribing with `mode` to `admin` (or to `store`, this run's
    /// [`Run::start_store`], for the zookeeper and etcd modes).
    pub async fn start_gateway(
        &self,
        mode: SyncMode,
        admin: &Service,
        store: Option<&ComponentService>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        check_store(self, mode, store)?;
        match self {
            Run::Host(h) => h
                .start_gateway(
                    mode,
                    admin.url(),
                    store.and_then(ComponentService::host),
                    dir,
                )
                .await
                .map(Service::Host),
            Run::Docker(d) => d
                .start(&docker_gateway_spec(d, mode, admin, store))
                .await
                .map(Service::Docker),
            Run::External(e) => Ok(Service::External {
                name: "gateway",
                url: e.target.gateway_url.clone(),
            }),
        }
    }
}

/// [`Run::start_gateway`] on docker with its sync connection through a fault proxy: every
/// mention of `target` (the `name:port` of the admin or the store it syncs from) in its
/// command becomes `proxy`.
pub(crate) async fn start_gateway_through(
    run: &DockerRun,
    mode: SyncMode,
    admin: &Service,
    store: Option<&ComponentService>,
    (target, proxy): (&str, &str),
) -> Result<Service, BackendError> {
    let mut spec = docker_gateway_spec(run, mode, admin, store);
    for arg in &mut spec.cmd {
        *arg = arg.replace(target, proxy);
    }
    run.start(&spec).await.map(Service::Docker)
}

/// Starts `count` gateways subscribing with `mode` to `admin` as one Swarm service of that
/// many tasks, each a [`Service`] of its own (`gantry bench fanout --backend swarm`).
pub(crate) async fn start_gateway_replicas(
    run: &DockerRun,
    mode: SyncMode,
    admin: &Service,
    count: u8,
) -> Result<Vec<Service>, BackendError> {
    let spec = docker_gateway_spec(run, mode, admin, None);
    let tasks = run.start_replicas(&spec, count).await?;
    Ok(tasks.into_iter().map(Service::Docker).collect())
}

/// Starts gateway `index` of several (named `<prefix>gateway-<index>`) subscribing with
/// `mode` to `admin` or `store`, on a docker or swarm run.
pub(crate) async fn start_numbered_gateway(
    run: &DockerRun,
    index: u8,
    mode: SyncMode,
    admin: &Service,
    store: Option<&ComponentService>,
) -> Result<Service, BackendError> {
    let mut spec = docker_gateway_spec(run, mode, admin, store);
    spec.name = format!("{}-{index}", spec.name);
    run.start(&spec).await.map(Service::Docker)
}

/// The admin of a docker or swarm run: publishing with `mode` (to `store`), requiring the
/// run's sync token and sync user.
fn docker_admin_spec(
    run: &DockerRun,
    mode: SyncMode,
    store: Option<&ComponentService>,
) -> docker::ContainerSpec {
    let flags = store.map(ComponentService::store_flags).unwrap_or_default();
    let mut spec = docker::admin_spec(&run.prefix(), mode, &flags);
    spec.cmd
        .extend(["--sync-token".into(), run.sync_token().as_str().to_owned()]);
    spec.cmd
        .extend(["--sync-user".into(), run.sync_token().sync_user()]);
    spec.cmd.extend(run.extra.admin.iter().cloned());
    spec
}

/// A gateway of a docker or swarm run: subscribing with `mode` to `admin` (or `store`),
/// sending the run's sync token and sync user, with the run's extra gateway arguments.
fn docker_gateway_spec(
    run: &DockerRun,
    mode: SyncMode,
    admin: &Service,
    store: Option<&ComponentService>,
) -> docker::ContainerSpec {
    let flags = store.map(ComponentService::store_flags).unwrap_or_default();
    let mut spec = docker::gateway_spec(&run.prefix(), mode, &admin.peer_url(), &flags);
    let token = run.sync_token().as_str().to_owned();
    spec.cmd.extend(["--sync-token".into(), token.clone()]);
    spec.cmd.extend([
        "--username".into(),
        SYNC_USER.into(),
        "--password".into(),
        token,
    ]);
    spec.cmd.extend(run.extra.gateway.iter().cloned());
    spec
}

/// What an external run cannot do: start anything but upstreams.
fn external_unsupported(what: &str) -> BackendError {
    BackendError::External {
        what: what.to_owned(),
        detail: "an external run starts only upstreams".into(),
    }
}

/// A store must come from the run it is given to: a host server is out of a container's
/// reach, and a container is not on the host's loopback.
fn check_store(
    run: &Run,
    mode: SyncMode,
    store: Option<&ComponentService>,
) -> Result<(), BackendError> {
    let on_host = match store {
        None => return Ok(()),
        Some(s) => s.host().is_some(),
    };
    let detail = match run {
        Run::Host(_) if !on_host => {
            "a host run's admins and gateways take a host server, \
             not a container (Run::start_store)"
        }
        Run::Docker(_) if on_host => {
            "the docker backend runs its own ZooKeeper or etcd \
             container (Run::start_store), not a host server"
        }
        _ => return Ok(()),
    };
    Err(BackendError::StoreUnavailable {
        mode,
        detail: detail.into(),
    })
}

/// A running admin or gateway; stopped on drop.
#[derive(Debug)]
pub enum Service {
    /// A child process.
    Host(host::Service),
    /// A container (removed with its run).
    Docker(Container),
    /// Someone else's admin or gateway: never started or stopped by gantry.
    External {
        /// `admin` or `gateway`.
        name: &'static str,
        /// Its base URL.
        url: String,
    },
}

impl Service {
    /// `admin` or `gateway` (the container name, `gantry-<run id>-admin`, for docker).
    pub fn name(&self) -> &str {
        match self {
            Service::Host(s) => s.name(),
            Service::Docker(c) => c.name(),
            Service::External { name, .. } => name,
        }
    }

    /// Base URL as the harness reaches it, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> &str {
        match self {
            Service::Host(s) => s.url(),
            Service::Docker(c) => c.url(),
            Service::External { url, .. } => url,
        }
    }

    /// Its process id on this machine while it runs (host backend only).
    pub fn pid(&self) -> Option<u32> {
        match self {
            Service::Host(s) => s.pid(),
            Service::Docker(_) | Service::External { .. } => None,
        }
    }

    /// Whether it ended on its own (see [`host::Service::exited`]); `None` when the backend
    /// cannot tell (docker).
    pub fn exited(&self) -> Option<bool> {
        match self {
            Service::Host(s) => Some(s.exited()),
            Service::Docker(_) | Service::External { .. } => None,
        }
    }

    /// How long its log is now, in bytes: where [`Service::log_since`] starts to read what it
    /// logs from now on. `None` where gantry does not judge its log: a container's (a bounded
    /// buffer restarted with the container) or an external service's.
    pub fn log_len(&self) -> Option<u64> {
        match self {
            Service::Host(s) => Some(s.log_len()),
            Service::Docker(_) | Service::External { .. } => None,
        }
    }

    /// What it logged after its log was `offset` bytes long ([`Service::log_len`]); `None`
    /// where gantry does not judge its log.
    pub fn log_since(&self, offset: u64) -> Option<Result<String, BackendError>> {
        match self {
            Service::Host(s) => Some(s.log_since(offset)),
            Service::Docker(_) | Service::External { .. } => None,
        }
    }

    /// Applies a step's fault: stops (gracefully), kills, starts (and waits until it is
    /// ready), restarts, pauses or resumes it. It keeps its address across a stop, so a
    /// `start` brings it back where its peers and the harness look for it.
    pub async fn fault(&self, action: FaultAction) -> Result<(), BackendError> {
        let s = match self {
            Service::Host(s) => s,
            Service::Docker(c) => return c.fault(action).await,
            Service::External { name, .. } => {
                return Err(external_unsupported(&format!("{} {name}", action.name())));
            }
        };
        match action {
            FaultAction::Stop => s.stop().await,
            FaultAction::Kill => s.kill().await,
            FaultAction::Start => return s.start().await,
            FaultAction::Restart => {
                s.stop().await;
                return s.start().await;
            }
            FaultAction::Pause => return s.signal(Signal::STOP),
            FaultAction::Resume => return s.signal(Signal::CONT),
        }
        Ok(())
    }

    /// Steps its wall clock by `seconds` (negative: back); answers the new offset from the
    /// real clock (host backend: libfaketime).
    pub fn step_clock(&self, seconds: i64, target: Target) -> Result<i64, BackendError> {
        match self {
            Service::Host(s) => s.step_clock(seconds),
            Service::Docker(_) => Err(BackendError::FaultUnsupported {
                action: "clock",
                target,
                backend: "docker",
            }),
            Service::External { name, .. } => Err(external_unsupported(&format!("clock {name}"))),
        }
    }

    /// Base URL as the other services reach it.
    pub fn peer_url(&self) -> String {
        match self {
            Service::Host(s) => s.url().to_owned(),
            Service::Docker(c) => format!("http://{}", c.peer_addr()),
            Service::External { url, .. } => url.clone(),
        }
    }

    /// The last `n` lines of the service's log (stderr; stdout and stderr for containers).
    pub fn log_tail(&self, n: usize) -> String {
        match self {
            Service::Host(s) => s.log_tail(n),
            Service::Docker(c) => c.log_tail(n),
            Service::External { .. } => {
                "(an external service: its log is not gantry's to read)".into()
            }
        }
    }
}

/// A running scenario upstream; stopped on drop.
#[derive(Debug)]
pub enum UpstreamService {
    /// In-process, on loopback.
    Host(Upstream),
    /// A container on the run's network.
    Docker(Container),
    /// In-process, on the external run's `--upstream-bind` address.
    External {
        /// The upstream.
        upstream: Upstream,
        /// The host the gateway reaches it at (`--upstream-advertise`).
        advertise: String,
    },
}

impl UpstreamService {
    /// `host:port` as the gateway reaches it (a divide `upstreamUrl`).
    pub fn host_port(&self) -> String {
        match self {
            UpstreamService::Host(u) => u.host_port(),
            UpstreamService::Docker(c) => c.peer_addr().to_owned(),
            UpstreamService::External {
                upstream,
                advertise,
            } => format!("{advertise}:{}", upstream.addr().port()),
        }
    }

    /// Every request it received so far (its wiremock journal), where the harness can read
    /// it: in-process upstreams only (`None` for a container).
    pub async fn received(&self) -> Option<Vec<crate::upstream::Echo>> {
        match self {
            UpstreamService::Host(u) | UpstreamService::External { upstream: u, .. } => {
                Some(u.received().await)
            }
            UpstreamService::Docker(_) => None,
        }
    }
}
