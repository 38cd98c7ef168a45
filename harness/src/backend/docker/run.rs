//! One run: a topology's two private networks and the containers started on them
//! ([`DockerRun`]), all removed when the run is dropped (unless kept).
//!
//! The networks split the gateway's two sides, so a step can partition one without the other:
//!
//! - the upstream network `gantry-<id>`: the gateway, the scenario upstreams and the
//!   components (Redis), everything the gateway proxies to or calls while serving;
//! - the sync network `gantry-<id>-sync`: the admin, the ZooKeeper or etcd container, and the
//!   gateway, everything it syncs from.
//!
//! The gateway is started on the sync network, so that its first sync attempt finds the admin
//! or the store, and joined to the upstream network before it is awaited; that network's name
//! sorts first, so docker moves the gateway's default route and its published port to it on
//! the join, and [`DockerRun::partition`] (a disconnect from the sync network)
//! leaves both alone. The sync network has a subnet of its own choosing, so that
//! [`DockerRun::heal`] can give the gateway its old address back: a blackholed connection then
//! resumes where it stood. A restarted container gets its old addresses back from docker (they
//! are free again; `docker::partition_keeps_the_published_port` checks the admin's), and every
//! container publishes its port on a host port picked once, so a restarted container answers
//! the harness and its peers where it did.
//!
//! testcontainers creates and starts the containers ([`DockerRun::start`]); the networks are
//! created here with bollard, because testcontainers can neither label a network nor choose its
//! subnet. On the swarm backend the networks are attachable overlays and each service is a
//! Swarm service on them instead of a container ([`super::swarm`]); the rest is the same.

use model::lock::MutexExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bollard::Docker;
use bollard::models::{HostConfig, Ipam, IpamConfig, NetworkCreateRequest};
use rand::Rng;
use testcontainers::core::IntoContainerPort;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerRequest, GenericImage, ImageExt};

use super::cleanup::{labels, remove_container, remove_run};
use super::container::Container;
use super::engine::{block_on_fresh, connect};
use super::error::docker_err;
use super::specs::{ContainerSpec, ENV, SYNC_PROXY_ROLE, proxy_spec, redis_spec, store_spec};
use super::swarm::{self, Lease};
use crate::backend::process::{PORT_ATTEMPTS, free_port, lost_port_race};
use crate::backend::{StoreKind, SyncToken};
use crate::error::BackendError;
use crate::fault::container::ProxyContainer;
use crate::images;
use crate::scenario::ast::Resources;

/// How many random subnets [`DockerRun::create`] tries for the sync network before giving up
/// (one may overlap another run's).
const SUBNET_TRIES: usize = 8;

/// Which of a run's networks a container joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The upstream network only: upstreams, components.
    Upstream,
    /// The sync network only: the admin, ZooKeeper, etcd.
    Sync,
    /// Both (the gateway): started on the sync network, then joined to the upstream one.
    Both,
}

impl Side {
    /// The side of a container of `role`.
    fn of(role: &str) -> Side {
        if role == images::GATEWAY.role {
            Side::Both
        } else if [
            images::ADMIN.role,
            images::ZOOKEEPER.role,
            images::ETCD.role,
            images::POSTGRES.role,
            SYNC_PROXY_ROLE,
        ]
        .contains(&role)
        {
            Side::Sync
        } else {
            Side::Upstream
        }
    }
}

/// One run's networks and containers; dropping it removes them (unless kept).
#[derive(Debug)]
pub struct DockerRun {
    docker: Docker,
    id: String,
    /// `gantry-<id>`: the gateway, its upstreams and components.
    network: String,
    /// The sync-network address of each partitioned container (name, address), given back
    /// on heal.
    partitioned: Mutex<Vec<(String, String)>>,
    labels: HashMap<String, String>,
    keep: bool,
    /// Extra arguments for every gateway and admin.
    pub(crate) extra: crate::backend::ExtraArgs,
    /// The limits of its containers or services' tasks, by role (a case's `resources`).
    pub(crate) resources: Resources,
    /// Given to the run's admin and gateways.
    sync_token: SyncToken,
    /// The swarm its services run on (swarm backend); `None`: plain containers.
    swarm: Option<Arc<Lease>>,
}

impl DockerRun {
    /// A fresh id and its two private networks on `docker`; `keep` leaves its containers and
    /// networks in place when it ends.
    pub(super) async fn create(
        docker: Docker,
        keep: bool,
        extra: crate::backend::ExtraArgs,
        swarm: Option<Arc<Lease>>,
    ) -> Result<Self, BackendError> {
        let id: String = {
            let mut rng = rand::rng();
            (0..10)
                .map(|_| char::from(b"0123456789abcdef"[rng.random_range(0..16)]))
                .collect()
        };
        let network = format!("gantry-{id}");
        let run = DockerRun {
            docker,
            labels: labels(&id),
            partitioned: Mutex::new(Vec::new()),
            id,
            network,
            keep,
            extra,
            resources: Resources::default(),
            sync_token: SyncToken::random(),
            swarm,
        };
        run.docker
            .create_network(NetworkCreateRequest {
                name: run.network.clone(),
                driver: Some(run.network_driver().into()),
                attachable: run.swarm.is_some().then_some(true),
                labels: Some(run.labels.clone()),
                ..Default::default()
            })
            .await
            .map_err(docker_err(format!("creating network {}", run.network)))?;
        run.create_sync_network().await?;
        Ok(run)
    }

    /// Creates the sync network on a random `10.x.y.0/24` subnet (a user subnet lets
    /// [`DockerRun::heal`] choose the address), trying another when one is taken.
    async fn create_sync_network(&self) -> Result<(), BackendError> {
        let mut last = None;
        for _ in 0..SUBNET_TRIES {
            let subnet = {
                let mut rng = rand::rng();
                format!(
                    "10.{}.{}.0/24",
                    rng.random_range(200..=254),
                    rng.random_range(0..=255)
                )
            };
            let request = NetworkCreateRequest {
                name: self.sync_network(),
                driver: Some(self.network_driver().into()),
                attachable: self.swarm.is_some().then_some(true),
                labels: Some(self.labels.clone()),
                ipam: Some(Ipam {
                    config: Some(vec![IpamConfig {
                        subnet: Some(subnet.clone()),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Default::default()
            };
            match self.docker.create_network(request).await {
                Ok(_) => return Ok(()),
                Err(e) => last = Some((subnet, e)),
            }
        }
        let (subnet, e) = last.expect("SUBNET_TRIES > 0");
        Err(docker_err(format!(
            "creating network {} (last on {subnet})",
            self.sync_network()
        ))(e))
    }

    /// Cuts `container` (the gateway) off from the sync network: a forced disconnect, so its
    /// connections to the admin or the store go silent and new ones fail, while its upstream
    /// network and published port stay. [`DockerRun::heal`] ends it.
    pub async fn partition(&self, container: &Container) -> Result<(), BackendError> {
        let address = container.address_on(&self.sync_network()).await?;
        container.leave(&self.sync_network()).await?;
        self.partitioned()
            .push((container.name().to_owned(), address));
        Ok(())
    }

    /// Connects `container` to the sync network again after [`DockerRun::partition`], at its
    /// old address (so a silent connection resumes) and under its name (so peers resolve it).
    pub async fn heal(&self, container: &Container) -> Result<(), BackendError> {
        let address = {
            let mut partitioned = self.partitioned();
            let at = partitioned
                .iter()
                .position(|(n, _)| n == container.name())
                .ok_or(BackendError::NotPartitioned)?;
            partitioned.swap_remove(at).1
        };
        container.join(&self.sync_network(), Some(&address)).await
    }

    /// Whether its services are Swarm services.
    pub fn is_swarm(&self) -> bool {
        self.swarm.is_some()
    }

    /// `overlay` on the swarm backend, else `bridge`.
    fn network_driver(&self) -> &'static str {
        if self.swarm.is_some() {
            "overlay"
        } else {
            "bridge"
        }
    }

    /// `gantry-<id>-sync`: the admin, the store and the gateway.
    fn sync_network(&self) -> String {
        format!("{}-sync", self.network)
    }

    /// The run's networks: the upstream one (the gateway, its upstreams and components) and
    /// the sync one (the admin, ZooKeeper or etcd, and the gateway).
    pub fn networks(&self) -> (String, String) {
        (self.network.clone(), self.sync_network())
    }

    fn partitioned(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        self.partitioned.locked()
    }

    /// Starts the ZooKeeper or etcd container of `kind` (the admin and gateway are pointed at
    /// it by its handle, `Run::start_admin`).
    pub async fn start_store(&self, kind: StoreKind) -> Result<Container, BackendError> {
        self.start(&store_spec(&self.prefix(), kind)).await
    }

    /// Starts the Redis container a case asks for (`components: [redis]`), after checking
    /// that its image exists; the gateway reaches it as `<prefix>redis:6379`.
    pub async fn start_redis(&self) -> Result<Container, BackendError> {
        crate::images::preflight(&self.docker, &[crate::images::REDIS]).await?;
        self.start(&redis_spec(&self.prefix())).await
    }

    /// Starts a fault proxy of `role` (`specs::UPSTREAM_PROXY_ROLE` or `SYNC_PROXY_ROLE`) in
    /// front of `target` (the container whose `name:port` it relays to), after checking that
    /// its image exists; its peers are given [`ProxyContainer::address`] instead.
    pub(crate) async fn start_proxy(
        &self,
        role: &'static str,
        target: &Container,
    ) -> Result<ProxyContainer, BackendError> {
        crate::images::preflight(&self.docker, &[crate::images::PROXY]).await?;
        let spec = proxy_spec(role, target.name(), target.peer_addr());
        self.start(&spec).await.map(ProxyContainer::new)
    }

    /// The sync token the run's admin requires and its gateways send.
    pub fn sync_token(&self) -> &SyncToken {
        &self.sync_token
    }

    /// The run id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `gantry-<id>-`: the prefix of the run's container names.
    pub fn prefix(&self) -> String {
        format!("gantry-{}-", self.id)
    }

    /// Creates and starts `spec` (through testcontainers) on the run's networks its role
    /// belongs to, publishing its port on `127.0.0.1` at a free host port picked now (kept
    /// across restarts; picked again when another process took it before docker bound it),
    /// then waits until it is ready through that port.
    pub async fn start(&self, spec: &ContainerSpec) -> Result<Container, BackendError> {
        if self.swarm.is_some() {
            return self.start_service(spec).await;
        }
        let side = Side::of(spec.role);
        let first = match side {
            Side::Sync | Side::Both => self.sync_network(),
            Side::Upstream => self.network.clone(),
        };
        let (repo, tag) = spec.image.split_once(':').unwrap_or((spec.image, "latest"));
        let memory = self.resources.memory_of(spec.role);
        let host_config = move |host: &mut HostConfig| {
            loopback_only(host);
            if let Some(bytes) = memory.and_then(|m| i64::try_from(m).ok()) {
                // Swap included: the limit is all the memory it gets.
                host.memory = Some(bytes);
                host.memory_swap = Some(bytes);
            }
        };
        let request = |host_port: u16| {
            ENV.iter()
                .fold(
                    GenericImage::new(repo, tag).into(),
                    |r: ContainerRequest<_>, (k, v)| r.with_env_var(*k, *v),
                )
                .with_container_name(&spec.name)
                .with_network(&first)
                .with_labels(self.labels.clone())
                .with_label("gantry.role", spec.role)
                .with_cmd(&spec.cmd)
                .with_mapped_port(host_port, spec.port.tcp())
                .with_host_config_modifier(host_config)
        };
        let mut attempt = 1;
        let (inner, host_port) = loop {
            let host_port = free_port()?;
            let started = request(host_port).start().await;
            match started {
                Ok(inner) => break (inner, host_port),
                Err(e) if attempt < PORT_ATTEMPTS && lost_port_race(&e.to_string()) => {
                    tracing::warn!(
                        container = %spec.name,
                        "host port taken before docker bound it; starting again on a fresh one: {e}"
                    );
                    // Created, not started: the next attempt reuses its name.
                    remove_container(&self.docker, &spec.name).await?;
                    attempt += 1;
                }
                Err(e) => return Err(docker_err(format!("starting container {}", spec.name))(e)),
            }
        };
        let join = (side == Side::Both).then_some(self.network.as_str());
        Container::attach(&self.docker, inner, spec, host_port, join, self.keep).await
    }
}

impl DockerRun {
    /// Creates `spec` as a Swarm service of one task on the run's networks its role belongs
    /// to, publishing its port (host mode, every interface: Swarm cannot bind one) at a free
    /// host port picked now and kept by every task after it, then waits until it is ready.
    async fn start_service(&self, spec: &ContainerSpec) -> Result<Container, BackendError> {
        let networks = self.networks_of(spec.role);
        let host_port = free_port()?;
        let service = swarm::Service::create(
            &self.docker,
            swarm::service_spec(
                spec,
                &self.id,
                &networks,
                swarm::Publish::One(host_port),
                &self.labels,
                self.resources.memory_of(spec.role),
            ),
        )
        .await?;
        Container::attach_task(&self.docker, service, spec, host_port, self.keep).await
    }

    /// Starts `spec` as one Swarm service of `count` tasks behind its one name (what an admin's
    /// gateways are given), on the networks of its role, each task published on a host port of
    /// the engine's choosing and observed on its own: the handles, in slot order, are named
    /// `<name>.<slot>`.
    pub async fn start_replicas(
        &self,
        spec: &ContainerSpec,
        count: u8,
    ) -> Result<Vec<Container>, BackendError> {
        let service = swarm::Service::create(
            &self.docker,
            swarm::service_spec(
                spec,
                &self.id,
                &self.networks_of(spec.role),
                swarm::Publish::Replicas(count),
                &self.labels,
                self.resources.memory_of(spec.role),
            ),
        )
        .await?;
        let tasks = service
            .running_replicas(&self.docker, count, spec.port)
            .await?;
        let mut replicas = Vec::new();
        for (slot, (container, host_port)) in (1..).zip(tasks) {
            let replica = Container::attach_replica(
                &self.docker,
                service.clone(),
                container,
                (spec, slot),
                host_port,
                self.keep,
            );
            replicas.push(replica.await?);
        }
        Ok(replicas)
    }

    /// The run's networks a service of `role` is on.
    fn networks_of(&self, role: &str) -> Vec<String> {
        match Side::of(role) {
            Side::Upstream => vec![self.network.clone()],
            Side::Sync => vec![self.sync_network()],
            Side::Both => vec![self.network.clone(), self.sync_network()],
        }
    }

    /// Starts the run's PostgreSQL (the admins' database of a topology of several admins).
    pub async fn start_postgres(&self) -> Result<Container, BackendError> {
        crate::images::preflight(&self.docker, &[crate::images::POSTGRES]).await?;
        self.start(&super::specs::postgres_spec(&self.prefix()))
            .await
    }
}

/// Binds every published port to `127.0.0.1` only (testcontainers binds all interfaces).
fn loopback_only(host: &mut HostConfig) {
    for bindings in host
        .port_bindings
        .iter_mut()
        .flat_map(|p| p.values_mut())
        .flatten()
    {
        for binding in bindings {
            binding.host_ip = Some("127.0.0.1".into());
        }
    }
}

impl Drop for DockerRun {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let id = self.id.clone();
        // No panic here: a panic while unwinding would abort the process.
        let result = block_on_fresh(async move {
            let docker = connect().await?;
            remove_run(&docker, &id).await
        })
        .and_then(|r| r);
        if let Err(e) = result {
            tracing::error!("cleaning up docker run {}: {e}", self.id);
        }
    }
}
