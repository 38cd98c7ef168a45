//! One running container of a run ([`Container`]): a testcontainers [`ContainerAsync`] with
//! how the harness and the other containers reach it, its logs (followed into a bounded
//! buffer), the wait until it is ready, and the faults a step applies to it
//! ([`Container::fault`]: stop, kill, start, restart, pause, resume).
//!
//! testcontainers creates, starts, stops, pauses and removes it (on drop, unless the run is
//! kept); bollard does what testcontainers has no call for: SIGKILL, following the logs of
//! each start, and joining or leaving a second network. On the swarm backend it is a Swarm
//! service's task instead ([`swarm::Service`]): the service is named as the container would
//! be, and its faults go through Swarm.

use model::lock::MutexExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{
    EndpointIpamConfig, EndpointSettings, NetworkConnectRequest, NetworkDisconnectRequest,
};
use bollard::query_parameters::{KillContainerOptionsBuilder, LogsOptionsBuilder};
use futures_util::StreamExt;
use testcontainers::{ContainerAsync, GenericImage};

use super::error::docker_err;
use super::specs::{ContainerSpec, Probe};
use super::swarm;
use crate::backend::ready::{self, ReadyWait};
use crate::error::BackendError;
use crate::scenario::ast::FaultAction;

/// How long a graceful stop waits for the process to exit on SIGTERM before docker kills it
/// (admin, gateway, ZooKeeper and etcd all exit on SIGTERM).
const STOP_GRACE_SECS: i32 = 10;
/// How long a container may take to answer its health endpoint.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of container log kept per container.
const LOG_LIMIT: usize = 256 * 1024;

/// A running container of a run; removed when dropped (unless its run is kept), and again with
/// its run.
#[derive(Debug)]
pub struct Container {
    /// What runs it: a container or a Swarm service.
    handle: Handle,
    docker: Docker,
    keep: bool,
    name: String,
    role: &'static str,
    probe: Probe,
    url: String,
    peer: String,
    logs: Arc<Mutex<String>>,
    /// Follows the logs of the container's current start (replaced on each start).
    follower: Mutex<tokio::task::JoinHandle<()>>,
}

/// What a [`Container`] is on the engine.
#[derive(Debug)]
enum Handle {
    /// A container testcontainers started (boxed: it holds its whole request); `None` only
    /// while dropping.
    Container(Option<Box<ContainerAsync<GenericImage>>>),
    /// A Swarm service of one task, whose container changes when Swarm replaces the task.
    Task(swarm::Service),
    /// One task (this container) of a Swarm service of several, observed on its own.
    Replica(swarm::Service, String),
}

impl Container {
    /// The handle of `inner`, started from `spec` and published on `host_port`: follows its
    /// logs, joins network `join` (a second one), then waits until it is ready
    /// ([`ContainerSpec::probe`]); `keep` leaves it in place when dropped.
    pub(super) async fn attach(
        docker: &Docker,
        inner: ContainerAsync<GenericImage>,
        spec: &ContainerSpec,
        host_port: u16,
        join: Option<&str>,
        keep: bool,
    ) -> Result<Self, BackendError> {
        let handle = Handle::Container(Some(Box::new(inner)));
        let container = Self::new(docker, handle, (spec, spec.name.clone()), host_port, keep);
        container.follow(spec.name.clone(), 0);
        if let Some(network) = join {
            container.join(network, None).await?;
        }
        container.await_healthy(container.probe).await?;
        Ok(container)
    }

    /// The handle of Swarm service `service`, started from `spec` and published on
    /// `host_port`: waits for its task, follows its logs, then waits until it is ready.
    pub(super) async fn attach_task(
        docker: &Docker,
        service: swarm::Service,
        spec: &ContainerSpec,
        host_port: u16,
        keep: bool,
    ) -> Result<Self, BackendError> {
        let task = service.running_task(docker).await?;
        let handle = Handle::Task(service);
        let container = Self::new(docker, handle, (spec, spec.name.clone()), host_port, keep);
        container.follow(task, 0);
        container.await_healthy(container.probe).await?;
        Ok(container)
    }

    /// The handle of one task of Swarm service `service` of several (its container
    /// `container`), started from `spec` as the task in `slot` and published on `host_port`:
    /// follows its logs, then waits until it is ready.
    pub(super) async fn attach_replica(
        docker: &Docker,
        service: swarm::Service,
        container: String,
        (spec, slot): (&ContainerSpec, u32),
        host_port: u16,
        keep: bool,
    ) -> Result<Self, BackendError> {
        let handle = Handle::Replica(service, container.clone());
        let name = format!("{}.{slot}", spec.name);
        let replica = Self::new(docker, handle, (spec, name), host_port, keep);
        replica.follow(container, 0);
        replica.await_healthy(replica.probe).await?;
        Ok(replica)
    }

    /// The handle of `handle`, started from `spec` as `name` and published on `host_port`,
    /// its logs not followed yet.
    fn new(
        docker: &Docker,
        handle: Handle,
        (spec, name): (&ContainerSpec, String),
        host_port: u16,
        keep: bool,
    ) -> Self {
        Container {
            handle,
            docker: docker.clone(),
            keep,
            name,
            role: spec.role,
            probe: spec.probe,
            url: format!("http://127.0.0.1:{host_port}"),
            peer: format!("{}:{}", spec.name, spec.port),
            logs: Arc::new(Mutex::new(String::new())),
            follower: Mutex::new(tokio::spawn(async {})),
        }
    }

    fn inner(&self) -> &ContainerAsync<GenericImage> {
        match &self.handle {
            Handle::Container(inner) => inner.as_ref().expect("present until dropped"),
            Handle::Task(_) | Handle::Replica(..) => unreachable!("only called for containers"),
        }
    }

    /// The engine's name for what runs now: the container, or the service's current task's
    /// container.
    async fn engine_name(&self) -> Result<String, BackendError> {
        match &self.handle {
            Handle::Container(_) => Ok(self.name.clone()),
            Handle::Task(service) => service.running_task(&self.docker).await,
            Handle::Replica(_, container) => Ok(container.clone()),
        }
    }

    /// A fault on a Swarm service: `stop` scales it to zero and `start` back to one (waiting
    /// for a task that is ready), `restart` is a rolling update, `kill` kills the task's
    /// container (Swarm replaces it), `pause` and `resume` freeze and thaw the task's
    /// container.
    async fn task_fault(
        &self,
        service: &swarm::Service,
        action: FaultAction,
    ) -> Result<(), BackendError> {
        let what = |verb: &str| docker_err(format!("{verb} the task of service {}", self.name));
        match action {
            FaultAction::Stop => service.scale(&self.docker, 0).await,
            FaultAction::Kill => {
                let task = service.running_task(&self.docker).await?;
                self.docker
                    .kill_container(
                        &task,
                        Some(
                            KillContainerOptionsBuilder::default()
                                .signal("SIGKILL")
                                .build(),
                        ),
                    )
                    .await
                    .map_err(what("killing"))
            }
            FaultAction::Start | FaultAction::Restart => {
                if action == FaultAction::Start {
                    service.scale(&self.docker, 1).await?;
                } else {
                    service.force_update(&self.docker).await?;
                }
                let task = service.running_task(&self.docker).await?;
                self.follow(task, 0);
                self.await_healthy(self.probe).await
            }
            FaultAction::Pause => {
                let task = service.running_task(&self.docker).await?;
                self.docker
                    .pause_container(&task)
                    .await
                    .map_err(what("pausing"))
            }
            FaultAction::Resume => {
                let task = service.running_task(&self.docker).await?;
                self.docker
                    .unpause_container(&task)
                    .await
                    .map_err(what("resuming"))
            }
        }
    }

    /// Follows the logs of `container` (a name or id) from `since` (Unix seconds; 0: all),
    /// instead of the container followed so far.
    fn follow(&self, container: String, since: i32) {
        let follower = tokio::spawn(follow_logs(
            self.docker.clone(),
            container,
            Arc::clone(&self.logs),
            since,
        ));
        std::mem::replace(&mut *self.follower(), follower).abort();
    }

    /// Applies a step's fault: `stop` (SIGTERM, then SIGKILL after a grace period), `kill`
    /// (SIGKILL), `start` (and wait until ready), `restart` (stop, then start), `pause` and
    /// `resume` (the cgroup freezer: `docker pause` / `unpause`). The container keeps its name,
    /// networks, addresses and published port across a stop, so peers and the harness reach it
    /// again where they did.
    pub async fn fault(&self, action: FaultAction) -> Result<(), BackendError> {
        match &self.handle {
            Handle::Task(service) => return self.task_fault(service, action).await,
            // Swarm gives a replaced replica a new host port, where nothing looks for it.
            Handle::Replica(..) => {
                return Err(BackendError::Docker {
                    what: format!("{} {}", action.name(), self.name),
                    detail: "faults on one task of a replicated service are not supported \
                             (its replacement would answer on another host port)"
                        .into(),
                });
            }
            Handle::Container(_) => {}
        }
        let what = |verb: &str| docker_err(format!("{verb} container {}", self.name));
        match action {
            FaultAction::Stop => self.stop().await,
            FaultAction::Kill => self
                .docker
                .kill_container(
                    &self.name,
                    Some(
                        KillContainerOptionsBuilder::default()
                            .signal("SIGKILL")
                            .build(),
                    ),
                )
                .await
                .map_err(docker_err(format!("killing container {}", self.name))),
            FaultAction::Start => self.start().await,
            FaultAction::Restart => {
                self.stop().await?;
                self.start().await
            }
            FaultAction::Pause => self.inner().pause().await.map_err(what("pausing")),
            FaultAction::Resume => self.inner().unpause().await.map_err(what("resuming")),
        }
    }

    /// Stops the container, giving its process [`STOP_GRACE_SECS`] to exit on SIGTERM.
    async fn stop(&self) -> Result<(), BackendError> {
        self.inner()
            .stop_with_timeout(Some(STOP_GRACE_SECS))
            .await
            .map_err(docker_err(format!("stopping container {}", self.name)))
    }

    /// Starts the stopped container again (docker gives it its address back when that is still
    /// free, and the same published port) and waits until it is ready; its logs keep reaching
    /// [`Container::log_tail`].
    async fn start(&self) -> Result<(), BackendError> {
        self.inner()
            .start()
            .await
            .map_err(docker_err(format!("starting container {}", self.name)))?;
        // The first follower ended with the container; this one reads from the restart on.
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX));
        self.follow(self.name.clone(), since);
        self.await_healthy(self.probe).await
    }

    /// Joins `network` under its name, at `address` when given (a network of the run's own
    /// subnet).
    pub(super) async fn join(
        &self,
        network: &str,
        address: Option<&str>,
    ) -> Result<(), BackendError> {
        let endpoint = EndpointSettings {
            ipam_config: address.map(|a| EndpointIpamConfig {
                ipv4_address: Some(a.to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.docker
            .connect_network(
                network,
                NetworkConnectRequest {
                    container: self.engine_name().await?,
                    endpoint_config: Some(endpoint),
                },
            )
            .await
            .map_err(docker_err(format!(
                "connecting {} to network {network}",
                self.name
            )))
    }

    /// Leaves `network` at once (forced): its connections there go silent, new ones fail.
    pub(super) async fn leave(&self, network: &str) -> Result<(), BackendError> {
        self.docker
            .disconnect_network(
                network,
                NetworkDisconnectRequest {
                    container: self.engine_name().await?,
                    force: Some(true),
                },
            )
            .await
            .map_err(docker_err(format!(
                "disconnecting {} from network {network}",
                self.name
            )))
    }

    /// Its address on `network`.
    pub(super) async fn address_on(&self, network: &str) -> Result<String, BackendError> {
        let what = format!("reading the address of {} on network {network}", self.name);
        self.docker
            .inspect_container(&self.engine_name().await?, None)
            .await
            .map_err(docker_err(what.clone()))?
            .network_settings
            .and_then(|n| n.networks)
            .and_then(|mut n| n.remove(network))
            .and_then(|e| e.ip_address)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| BackendError::Docker {
                what,
                detail: "it has no address on that network".into(),
            })
    }

    /// Whether the kernel's OOM killer ended it (docker's `State.OOMKilled`): a Swarm
    /// service's any task container so far, since Swarm replaces a killed task; `false` when
    /// the engine cannot tell.
    pub async fn oom_killed(&self) -> bool {
        let names = match &self.handle {
            Handle::Container(_) => vec![self.name.clone()],
            Handle::Task(service) | Handle::Replica(service, _) => {
                service.containers(&self.docker).await.unwrap_or_default()
            }
        };
        for name in names {
            let killed = (self.docker.inspect_container(&name, None).await)
                .ok()
                .and_then(|c| c.state)
                .and_then(|s| s.oom_killed)
                .unwrap_or(false);
            if killed {
                return true;
            }
        }
        false
    }

    fn follower(&self) -> std::sync::MutexGuard<'_, tokio::task::JoinHandle<()>> {
        self.follower.locked()
    }

    /// The container name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `admin`, `gateway` or `upstream`.
    pub fn role(&self) -> &str {
        self.role
    }

    /// `http://127.0.0.1:<published port>`: how the harness reaches it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `<container name>:<port>`: how other containers on the run's network reach it.
    pub fn peer_addr(&self) -> &str {
        &self.peer
    }

    /// The last `n` lines of its stdout and stderr.
    pub fn log_tail(&self, n: usize) -> String {
        let buf = self.logs.locked();
        crate::backend::process::tail(&buf, n)
    }

    async fn await_healthy(&self, probe: Probe) -> Result<(), BackendError> {
        let http = crate::client::http();
        let path = match probe {
            Probe::Http(path) => path,
            Probe::Srvr | Probe::Ping | Probe::Postgres => "",
        };
        let url = format!("{}{path}", self.url);
        let port: u16 = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_default();
        let wait = ReadyWait {
            service: format!("{} (container {})", self.role, self.name),
            interval: Duration::from_millis(100),
            timeout: HEALTH_TIMEOUT,
        };
        wait.until(|| async {
            match probe {
                Probe::Srvr => ready::zookeeper_srvr(port).await,
                Probe::Ping => ready::redis_ping(port).await,
                Probe::Postgres => ready::postgres_accepts(port).await,
                Probe::Http(_) => ready::http_200(&http, &url).await,
            }
        })
        .await
        .map_err(|u| u.with_log(&self.log_tail(40)))?;
        Ok(())
    }
}

/// Appends the logs of container `name` since `since` (Unix seconds; 0: all) to `logs` until
/// it stops, keeping the newest half when they pass [`LOG_LIMIT`].
async fn follow_logs(docker: Docker, name: String, logs: Arc<Mutex<String>>, since: i32) {
    let opts = LogsOptionsBuilder::default()
        .follow(true)
        .since(since)
        .stdout(true)
        .stderr(true)
        .build();
    let mut stream = docker.logs(&name, Some(opts));
    while let Some(Ok(chunk)) = stream.next().await {
        let text = String::from_utf8_lossy(&chunk.into_bytes()).into_owned();
        let mut buf = logs.locked();
        buf.push_str(&text);
        if buf.len() > LOG_LIMIT {
            let cut = buf.len() - LOG_LIMIT / 2;
            let cut = (cut..buf.len())
                .find(|i| buf.is_char_boundary(*i))
                .unwrap_or(buf.len());
            buf.drain(..cut);
        }
    }
}

impl Container {
    /// Removes the container now (unless its run is kept), as dropping it would, but without
    /// blocking: testcontainers removes dropped containers one at a time on one worker
    /// thread, while a run's containers awaited together go at once ([`crate::Topology::close`]).
    pub(crate) async fn remove(mut self) -> Result<(), BackendError> {
        self.follower().abort();
        let inner = match &mut self.handle {
            Handle::Task(service) | Handle::Replica(service, _) if !self.keep => {
                return service.remove(&self.docker).await;
            }
            Handle::Task(_) | Handle::Replica(..) => return Ok(()),
            Handle::Container(inner) => inner,
        };
        match inner.take() {
            Some(inner) if !self.keep => inner
                .rm()
                .await
                .map_err(docker_err(format!("removing container {}", self.name))),
            // Kept: dropping it forgets the handle.
            inner => {
                self.handle = Handle::Container(inner);
                Ok(())
            }
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        self.follower().abort();
        // A service goes with its run.
        let Handle::Container(inner) = &mut self.handle else {
            return;
        };
        let inner = inner.take();
        // testcontainers removes a dropped container from inside a tokio runtime only; outside
        // one (or when kept) it is left to the run's own removal by label.
        if self.keep || tokio::runtime::Handle::try_current().is_err() {
            std::mem::forget(inner);
        }
    }
}
