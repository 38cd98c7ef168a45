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
//! The gateway joins the upstream network first; its name sorts first, so that network holds
//! the gateway's default route and its published port, and [`DockerRun::partition`] (a
//! disconnect from the sync network) leaves both alone. The sync network has its own subnet,
//! on which each container gets a fixed address, so that a restarted admin or store comes back
//! where its peers' connections pointed, and [`DockerRun::heal`] can give the gateway its old
//! address back: a blackholed connection then resumes where it stood. Every container
//! publishes its port on a host port picked once, so a restarted container answers the
//! harness where it did.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use bollard::Docker;
use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, HostConfig, Ipam, IpamConfig,
    NetworkConnectRequest, NetworkCreateRequest, NetworkDisconnectRequest, NetworkingConfig,
    PortBinding,
};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use rand::Rng;

use super::cleanup::{labels, remove_run};
use super::container::Container;
use super::engine::{block_on_fresh, connect, docker_err};
use super::specs::{ContainerSpec, ENV, redis_spec, store_spec};
use crate::backend::{StoreKind, SyncToken};
use crate::error::BackendError;
use crate::images;

/// How many random subnets [`DockerRun::create`] tries for the sync network before giving up
/// (one may overlap another run's).
const SUBNET_TRIES: usize = 8;
/// The host part of the first container address on the sync network (`.1` is its gateway).
const FIRST_HOST: u8 = 10;

/// Which of a run's networks a container joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The upstream network only: upstreams, components.
    Upstream,
    /// The sync network only: the admin, ZooKeeper, etcd.
    Sync,
    /// Both (the gateway): the upstream network first.
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
    /// `10.x.y.`: the sync network's /24, once created.
    sync_prefix: OnceLock<String>,
    /// The host part of the next container address on the sync network.
    next_host: AtomicU8,
    labels: HashMap<String, String>,
    keep: bool,
    /// Extra arguments for every gateway.
    pub(crate) gateway_args: Vec<String>,
    /// Given to the run's admin and gateways.
    sync_token: SyncToken,
    /// The ZooKeeper or etcd container admin and gateway use, once started.
    store: Mutex<Option<Box<ContainerSpec>>>,
}

impl DockerRun {
    /// A fresh id and its two private networks on `docker`; `keep` leaves its containers and
    /// networks in place when it ends.
    pub(super) async fn create(
        docker: Docker,
        keep: bool,
        gateway_args: Vec<String>,
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
            sync_prefix: OnceLock::new(),
            next_host: AtomicU8::new(FIRST_HOST),
            id,
            network,
            keep,
            gateway_args,
            sync_token: SyncToken::random(),
            store: Mutex::new(None),
        };
        run.docker
            .create_network(NetworkCreateRequest {
                name: run.network.clone(),
                driver: Some("bridge".into()),
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
            let prefix = {
                let mut rng = rand::rng();
                format!(
                    "10.{}.{}.",
                    rng.random_range(200..=254),
                    rng.random_range(0..=255)
                )
            };
            let subnet = format!("{prefix}0/24");
            let request = NetworkCreateRequest {
                name: self.sync_network(),
                driver: Some("bridge".into()),
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
                Ok(_) => {
                    self.sync_prefix.get_or_init(|| prefix);
                    return Ok(());
                }
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
        let name = container.name();
        let what = |verb: &str| format!("{verb} {name} from network {}", self.sync_network());
        let address = self
            .docker
            .inspect_container(name, None)
            .await
            .map_err(docker_err(what("reading the address of")))?
            .network_settings
            .and_then(|n| n.networks)
            .and_then(|mut n| n.remove(&self.sync_network()))
            .and_then(|e| e.ip_address)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| BackendError::Docker {
                what: what("partitioning"),
                detail: "it has no address on that network".into(),
            })?;
        self.docker
            .disconnect_network(
                &self.sync_network(),
                NetworkDisconnectRequest {
                    container: name.to_owned(),
                    force: Some(true),
                },
            )
            .await
            .map_err(docker_err(what("disconnecting")))?;
        self.partitioned().push((name.to_owned(), address));
        Ok(())
    }

    /// Connects `container` to the sync network again after [`DockerRun::partition`], at its
    /// old address (so a silent connection resumes) and under its name (so peers resolve it).
    pub async fn heal(&self, container: &Container) -> Result<(), BackendError> {
        let name = container.name();
        let address = {
            let mut partitioned = self.partitioned();
            let at = partitioned
                .iter()
                .position(|(n, _)| n == name)
                .ok_or(BackendError::NotPartitioned)?;
            partitioned.swap_remove(at).1
        };
        self.docker
            .connect_network(
                &self.sync_network(),
                NetworkConnectRequest {
                    container: name.to_owned(),
                    endpoint_config: Some(EndpointSettings {
                        ipam_config: Some(EndpointIpamConfig {
                            ipv4_address: Some(address),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                },
            )
            .await
            .map_err(docker_err(format!(
                "connecting {name} to network {} again",
                self.sync_network()
            )))
    }

    /// The endpoint of a new container on the sync network: the next fixed address.
    fn sync_endpoint(&self) -> Result<EndpointSettings, BackendError> {
        let host = self.next_host.fetch_add(1, Ordering::Relaxed);
        let prefix = self.sync_prefix.get().expect("created with the run");
        if host == u8::MAX {
            return Err(BackendError::Docker {
                what: format!("adding a container to network {}", self.sync_network()),
                detail: "no address left".into(),
            });
        }
        Ok(EndpointSettings {
            ipam_config: Some(EndpointIpamConfig {
                ipv4_address: Some(format!("{prefix}{host}")),
                ..Default::default()
            }),
            ..Default::default()
        })
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
        self.partitioned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the ZooKeeper or etcd container of `kind`; the admin and gateway started after
    /// it use it.
    pub async fn start_store(&self, kind: StoreKind) -> Result<Container, BackendError> {
        let spec = store_spec(&self.prefix(), kind);
        let container = self.start(&spec).await?;
        *self.store.lock().expect("never poisoned") = Some(Box::new(spec));
        Ok(container)
    }

    /// Starts the Redis container a case asks for (`components: [redis]`), after checking
    /// that its image exists; the gateway reaches it as `<prefix>redis:6379`.
    pub async fn start_redis(&self) -> Result<Container, BackendError> {
        crate::images::preflight(&self.docker, &[crate::images::REDIS]).await?;
        self.start(&redis_spec(&self.prefix())).await
    }

    /// The store container started by [`DockerRun::start_store`], if any.
    pub fn store(&self) -> Option<ContainerSpec> {
        self.store
            .lock()
            .expect("never poisoned")
            .as_deref()
            .cloned()
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

    /// Creates and starts `spec` on the run's networks its role belongs to, publishing its
    /// port on a free host port picked now (kept across restarts), then waits until it is
    /// ready through that port.
    pub async fn start(&self, spec: &ContainerSpec) -> Result<Container, BackendError> {
        let port_key = format!("{}/tcp", spec.port);
        let side = Side::of(spec.role);
        let first = match side {
            Side::Sync => self.sync_network(),
            Side::Upstream | Side::Both => self.network.clone(),
        };
        let networking_config = match side {
            Side::Sync => Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(first.clone(), self.sync_endpoint()?)])),
            }),
            Side::Upstream | Side::Both => None,
        };
        let host_port = free_port().map_err(|source| BackendError::Io {
            what: format!("picking a host port for container {}", spec.name),
            source,
        })?;
        let mut labels = self.labels.clone();
        labels.insert("gantry.role".into(), spec.role.to_owned());
        let body = ContainerCreateBody {
            image: Some(spec.image.to_owned()),
            cmd: Some(spec.cmd.clone()),
            env: Some(ENV.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            labels: Some(labels),
            exposed_ports: Some(vec![port_key.clone()]),
            networking_config,
            host_config: Some(HostConfig {
                network_mode: Some(first),
                port_bindings: Some(HashMap::from([(
                    port_key,
                    Some(vec![PortBinding {
                        host_ip: Some("127.0.0.1".into()),
                        host_port: Some(host_port.to_string()),
                    }]),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        };
        let what = |verb: &str| format!("{verb} container {}", spec.name);
        self.docker
            .create_container(
                Some(
                    CreateContainerOptionsBuilder::default()
                        .name(&spec.name)
                        .build(),
                ),
                body,
            )
            .await
            .map_err(docker_err(what("creating")))?;
        if side == Side::Both {
            self.docker
                .connect_network(
                    &self.sync_network(),
                    NetworkConnectRequest {
                        container: spec.name.clone(),
                        endpoint_config: Some(self.sync_endpoint()?),
                    },
                )
                .await
                .map_err(docker_err(what("connecting to the sync network")))?;
        }
        self.docker
            .start_container(&spec.name, None)
            .await
            .map_err(docker_err(what("starting")))?;
        Container::attach(&self.docker, spec).await
    }
}

/// A port free on `127.0.0.1` right now, for a container to publish on.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
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
