//! One run: a topology's private network and the containers started on it ([`DockerRun`]),
//! all removed when the run is dropped (unless kept).

use std::collections::HashMap;
use std::sync::Mutex;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, NetworkCreateRequest, PortBinding};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use rand::Rng;

use super::cleanup::{labels, remove_run};
use super::container::Container;
use super::engine::{block_on_fresh, connect, docker_err};
use super::specs::{ContainerSpec, ENV, redis_spec, store_spec};
use crate::backend::{StoreKind, SyncToken};
use crate::error::BackendError;

/// One run's network and containers; dropping it removes them (unless kept).
#[derive(Debug)]
pub struct DockerRun {
    docker: Docker,
    id: String,
    network: String,
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
    /// A fresh id and its private network on `docker`; `keep` leaves its containers and
    /// network in place when it ends.
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
        Ok(run)
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

    /// Creates and starts `spec` on the run's network, then waits until its health path
    /// answers 200 through the published port.
    pub async fn start(&self, spec: &ContainerSpec) -> Result<Container, BackendError> {
        let port_key = format!("{}/tcp", spec.port);
        let mut labels = self.labels.clone();
        labels.insert("gantry.role".into(), spec.role.to_owned());
        let body = ContainerCreateBody {
            image: Some(spec.image.to_owned()),
            cmd: Some(spec.cmd.clone()),
            env: Some(ENV.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            labels: Some(labels),
            exposed_ports: Some(vec![port_key.clone()]),
            host_config: Some(HostConfig {
                network_mode: Some(self.network.clone()),
                port_bindings: Some(HashMap::from([(
                    port_key,
                    Some(vec![PortBinding {
                        host_ip: Some("127.0.0.1".into()),
                        host_port: Some(String::new()),
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
        self.docker
            .start_container(&spec.name, None)
            .await
            .map_err(docker_err(what("starting")))?;
        Container::attach(&self.docker, spec).await
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
