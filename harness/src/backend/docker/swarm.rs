//! Docker Swarm, for `--backend swarm`: the engine's own orchestrator runs the topology as
//! services instead of plain containers ([`Lease`], [`start_service`], [`Service`]).
//!
//! **The swarm.** [`Lease::acquire`] uses the swarm the engine is in; an engine in no swarm is
//! made a one-node swarm on loopback (`docker swarm init --advertise-addr 127.0.0.1`), and the
//! last harness process holding it makes the engine leave again, so the engine is left as it
//! was found. Harness processes share the engine (nextest runs one per test): each one that
//! holds the swarm has a file under [`lease_dir`] per lease (`<pid>-<n>`), taken and dropped
//! under an exclusive `flock`, and one whose process is gone (a `kill -9`) no longer counts:
//! the next backend to open ([`sweep_stale`]) leaves a swarm gantry made that nobody holds. A
//! swarm gantry did not make is never left.
//!
//! **The services.** Each [`ContainerSpec`] is one replicated service of one task, named as
//! the container would be (so peers resolve it by the same name: the service's virtual IP on
//! the run's overlay networks), labelled like the run's containers, and restarted by Swarm
//! whenever its task ends (`restart_policy: any`). Its port is published in host mode on a
//! host port picked once, so a replaced task answers where the old one did; the state a
//! restart must keep (the admin's SQLite file, ZooKeeper's, etcd's and PostgreSQL's data) is on a named
//! volume of the run mounted at `/data`. The faults go through Swarm: `stop` scales the
//! service to zero, `start` back to one, `restart` is a rolling update (`--force`), `kill`
//! kills the task's container and Swarm replaces it; `pause` and a partition act on the
//! task's container.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{
    EndpointPortConfig, EndpointPortConfigPublishModeEnum, EndpointSpec, EndpointSpecModeEnum,
    LocalNodeState, Mount, MountType, MountVolumeOptions, NetworkAttachmentConfig, ServiceSpec,
    ServiceSpecMode, ServiceSpecModeReplicated, ServiceSpecUpdateConfig,
    ServiceSpecUpdateConfigOrderEnum, SwarmInitRequest, Task, TaskSpec, TaskSpecContainerSpec,
    TaskSpecResources, TaskSpecRestartPolicy, TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    InspectServiceOptions, LeaveSwarmOptionsBuilder, ListServicesOptionsBuilder,
    ListTasksOptionsBuilder, UpdateServiceOptionsBuilder,
};

use super::engine::{block_on_fresh, connect};
use super::error::docker_err;
use super::specs::{ContainerSpec, ENV};
use crate::error::BackendError;
use crate::images;

/// Where a replaced task finds the state its service must keep.
const DATA_DIR: &str = "/data";
/// How long Swarm waits before replacing a task that ended (a `kill`).
const RESTART_DELAY: Duration = Duration::from_millis(500);
/// How long a service may take to have a running task.
const TASK_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a removal waits for a task on its way to a container (a task of a service that
/// restarts a failing container again and again may always have one).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The directory of the holders' files and their lock.
fn lease_dir() -> PathBuf {
    std::env::temp_dir().join("gantry-swarm")
}

/// This harness process's hold on the engine's swarm; the last holder of a swarm gantry made
/// leaves it when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    /// This process's holder file.
    holder: PathBuf,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BackendError {
    let what = what.into();
    move |source| BackendError::Io { what, source }
}

/// The exclusive lock on [`lease_dir`], held while the guard lives.
fn lock() -> Result<File, BackendError> {
    let dir = lease_dir();
    std::fs::create_dir_all(dir.join("holders"))
        .map_err(io(format!("creating {}", dir.display())))?;
    let file = File::create(dir.join("lock")).map_err(io("opening the swarm lease lock"))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| io("locking the swarm lease")(e.into()))?;
    Ok(file)
}

/// The pids holding the swarm whose process still runs (the files of the others are removed).
fn live_holders() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(lease_dir().join("holders")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid: u32 = name.to_str()?.split('-').next()?.parse().ok()?;
            if std::path::Path::new("/proc").join(pid.to_string()).exists() {
                Some(pid)
            } else {
                // A holder gone without letting go (kill -9): it holds nothing now.
                let _ = std::fs::remove_file(e.path());
                None
            }
        })
        .collect()
}

/// The marker saying the swarm is gantry's own (made by [`Lease::acquire`]).
fn made_marker() -> PathBuf {
    lease_dir().join("made-by-gantry")
}

async fn node_state(docker: &Docker) -> Result<LocalNodeState, BackendError> {
    Ok(docker
        .info()
        .await
        .map_err(docker_err("reading the engine's swarm state"))?
        .swarm
        .and_then(|s| s.local_node_state)
        .unwrap_or(LocalNodeState::INACTIVE))
}

impl Lease {
    /// Holds the engine's swarm, making the engine a one-node swarm on loopback when it is in
    /// none.
    pub(crate) fn acquire() -> Result<Self, BackendError> {
        let _lock = lock()?;
        live_holders();
        block_on_fresh(async {
            let docker = connect().await?;
            match node_state(&docker).await? {
                LocalNodeState::ACTIVE => Ok(()),
                LocalNodeState::INACTIVE | LocalNodeState::EMPTY => {
                    let request = SwarmInitRequest {
                        listen_addr: Some("127.0.0.1:2377".into()),
                        advertise_addr: Some("127.0.0.1".into()),
                        ..Default::default()
                    };
                    docker
                        .init_swarm(request)
                        .await
                        .map_err(docker_err("making the engine a one-node swarm"))?;
                    std::fs::write(made_marker(), b"").map_err(io("writing the swarm's marker"))?;
                    tracing::info!("the engine is now a one-node swarm on 127.0.0.1");
                    Ok(())
                }
                other => Err(BackendError::Docker {
                    what: "using the engine's swarm".into(),
                    detail: format!("the engine's swarm state is `{other}`"),
                }),
            }
        })??;
        static LEASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = LEASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let holder = lease_dir()
            .join("holders")
            .join(format!("{}-{n}", std::process::id()));
        std::fs::write(&holder, b"").map_err(io("writing the swarm lease"))?;
        Ok(Self { holder })
    }

    /// Lets go; the last holder of a swarm gantry made leaves it.
    fn release(&self) -> Result<(), BackendError> {
        let _lock = lock()?;
        let _ = std::fs::remove_file(&self.holder);
        leave_if_unheld()
    }
}

/// Leaves a swarm gantry made that no live harness process holds (one killed while holding
/// it); call it under [`lock`].
fn leave_if_unheld() -> Result<(), BackendError> {
    if !live_holders().is_empty() || !made_marker().exists() {
        return Ok(());
    }
    let left = block_on_fresh(async {
        let docker = connect().await?;
        // Kept runs (`GANTRY_KEEP=1`) keep the swarm too, until a later run sweeps them.
        let kept = labelled_services(&docker, super::RUN_LABEL).await?;
        if !kept.is_empty() {
            tracing::warn!(
                "the engine stays in the swarm gantry made: {} service(s) of kept runs are on it \
                 (`docker swarm leave --force` removes them and it)",
                kept.len()
            );
            return Ok(false);
        }
        if node_state(&docker).await? == LocalNodeState::ACTIVE {
            docker
                .leave_swarm(Some(
                    LeaveSwarmOptionsBuilder::default().force(true).build(),
                ))
                .await
                .map_err(docker_err("leaving the swarm gantry made"))?;
            tracing::info!("the engine left the swarm gantry made");
        }
        Ok::<_, BackendError>(true)
    })??;
    if !left {
        return Ok(());
    }
    std::fs::remove_file(made_marker()).map_err(io("removing the swarm's marker"))
}

/// Leaves the swarm gantry made when its holders are all gone (killed); a no-op otherwise.
pub(crate) fn sweep_stale() -> Result<(), BackendError> {
    if !made_marker().exists() {
        return Ok(());
    }
    let _lock = lock()?;
    leave_if_unheld()
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            tracing::error!("letting go of the swarm: {e}");
        }
    }
}

/// Whether the engine is in a swarm gantry made (for the tests that check it left).
pub fn made_by_gantry() -> bool {
    made_marker().exists()
}

/// The service of one [`ContainerSpec`]: its name and how to reach its current task.
#[derive(Debug, Clone)]
pub(crate) struct Service {
    /// The service (and DNS) name.
    pub name: String,
}

/// The named volume holding `spec`'s state across its tasks, and the command that keeps its
/// state there; `None` for a stateless service (a gateway, an upstream).
fn data_volume(spec: &ContainerSpec, run_id: &str) -> Option<(String, Vec<String>)> {
    let stateful = [
        images::ADMIN.role,
        images::ZOOKEEPER.role,
        images::ETCD.role,
        images::REDIS.role,
        images::POSTGRES.role,
    ];
    if !stateful.contains(&spec.role) {
        return None;
    }
    let cmd = spec
        .cmd
        .iter()
        .map(|a| match a.as_str() {
            // The admin's SQLite file (`admin_spec`).
            "/admin.db" => format!("{DATA_DIR}/admin.db"),
            _ => a.clone(),
        })
        .collect();
    Some((format!("gantry-{run_id}-{}-data", spec.role), cmd))
}

/// How peers reach a service by name: Swarm's virtual IP where the engine's kernel routes it
/// (IPVS), else DNS round robin over its tasks' addresses (`GANTRY_SWARM_ENDPOINT=dnsrr`
/// forces it).
fn endpoint_mode() -> EndpointSpecModeEnum {
    let forced = std::env::var("GANTRY_SWARM_ENDPOINT").is_ok_and(|v| v == "dnsrr");
    if forced || !std::path::Path::new("/proc/net/ip_vs").exists() {
        EndpointSpecModeEnum::DNSRR
    } else {
        EndpointSpecModeEnum::VIP
    }
}

/// Where a service's tasks publish their port on the host (host mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Publish {
    /// One task, on this host port, kept by every task that replaces it.
    One(u16),
    /// This many tasks, each on a host port the engine picks.
    Replicas(u8),
}

/// The service spec of `spec`, on `networks`, published as `publish` says, with `labels` on
/// the service, its tasks' containers and its volume.
pub(crate) fn service_spec(
    spec: &ContainerSpec,
    run_id: &str,
    networks: &[String],
    publish: Publish,
    labels: &HashMap<String, String>,
    memory: Option<u64>,
) -> ServiceSpec {
    let (replicas, host_port) = match publish {
        Publish::One(port) => (1, Some(i64::from(port))),
        Publish::Replicas(n) => (i64::from(n), None),
    };
    let mut labels = labels.clone();
    labels.insert("gantry.role".into(), spec.role.to_owned());
    let (mounts, args) = match data_volume(spec, run_id) {
        Some((volume, cmd)) => (
            vec![Mount {
                target: Some(DATA_DIR.into()),
                source: Some(volume),
                typ: Some(MountType::VOLUME),
                volume_options: Some(MountVolumeOptions {
                    labels: Some(labels.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            cmd,
        ),
        None => (Vec::new(), spec.cmd.clone()),
    };
    let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    ServiceSpec {
        name: Some(spec.name.clone()),
        labels: Some(labels.clone()),
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated {
                replicas: Some(replicas),
            }),
            ..Default::default()
        }),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(spec.image.to_owned()),
                args: Some(args),
                env: Some(ENV.iter().map(|(k, v)| format!("{k}={v}")).collect()),
                labels: Some(labels),
                mounts: Some(mounts),
                stop_grace_period: Some(nanos(Duration::from_secs(10))),
                ..Default::default()
            }),
            // A case's `resources`: each task's memory limit.
            resources: memory
                .and_then(|m| i64::try_from(m).ok())
                .map(|bytes| TaskSpecResources {
                    limits: Some(bollard::models::Limit {
                        memory_bytes: Some(bytes),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::ANY),
                delay: Some(nanos(RESTART_DELAY)),
                ..Default::default()
            }),
            networks: Some(
                networks
                    .iter()
                    .map(|n| NetworkAttachmentConfig {
                        target: Some(n.clone()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        // One task on a fixed host port: the old one must be gone before the new one binds it.
        update_config: Some(ServiceSpecUpdateConfig {
            parallelism: Some(1),
            order: Some(ServiceSpecUpdateConfigOrderEnum::STOP_FIRST),
            ..Default::default()
        }),
        endpoint_spec: Some(EndpointSpec {
            mode: Some(endpoint_mode()),
            ports: Some(vec![EndpointPortConfig {
                target_port: Some(i64::from(spec.port)),
                published_port: host_port,
                publish_mode: Some(EndpointPortConfigPublishModeEnum::HOST),
                ..Default::default()
            }]),
        }),
        ..Default::default()
    }
}

impl Service {
    /// Creates the service of `spec`; [`Service::running_task`] waits for its task.
    pub(crate) async fn create(docker: &Docker, spec: ServiceSpec) -> Result<Self, BackendError> {
        let name = spec.name.clone().unwrap_or_default();
        docker
            .create_service(spec, None)
            .await
            .map_err(docker_err(format!("creating service {name}")))?;
        Ok(Self { name })
    }

    /// Every container its tasks ran in so far, ended ones included (Swarm keeps a few
    /// replaced tasks' containers).
    pub(crate) async fn containers(&self, docker: &Docker) -> Result<Vec<String>, BackendError> {
        let label = format!("com.docker.swarm.service.name={}", self.name);
        let filters = HashMap::from([("label", vec![label.as_str()])]);
        let options = bollard::query_parameters::ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let containers = docker
            .list_containers(Some(options))
            .await
            .map_err(docker_err(format!(
                "listing the containers of {}",
                self.name
            )))?;
        Ok(containers.into_iter().filter_map(|c| c.id).collect())
    }

    /// The container of the service's running task, waiting up to [`TASK_TIMEOUT`] for one
    /// (a task that failed to start says why in the error).
    pub(crate) async fn running_task(&self, docker: &Docker) -> Result<String, BackendError> {
        let deadline = tokio::time::Instant::now() + TASK_TIMEOUT;
        let mut last = String::from("no task yet");
        loop {
            let tasks = (self.tasks(docker, None).await)
                .map_err(docker_err(format!("listing the tasks of {}", self.name)))?;
            for task in &tasks {
                let Some(status) = &task.status else { continue };
                let running = status.state == Some(TaskState::RUNNING)
                    && task.desired_state == Some(TaskState::RUNNING);
                let container = status
                    .container_status
                    .as_ref()
                    .and_then(|c| c.container_id.clone());
                match container {
                    // Swarm may not have seen a killed container end yet.
                    Some(id) if running && container_runs(docker, &id).await => return Ok(id),
                    _ => {}
                }
                if let Some(err) = &status.err {
                    last = format!(
                        "task {}: {} ({err})",
                        task.id.as_deref().unwrap_or("?"),
                        status.state.map_or("?".into(), |s| s.to_string())
                    );
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::Docker {
                    what: format!("waiting for a running task of service {}", self.name),
                    detail: format!("none after {TASK_TIMEOUT:?}; last: {last}"),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The containers of the service's `count` running tasks, by slot, each with the host port
    /// its `port` is published on, waiting up to [`TASK_TIMEOUT`] for all of them.
    pub(crate) async fn running_replicas(
        &self,
        docker: &Docker,
        count: u8,
        port: u16,
    ) -> Result<Vec<(String, u16)>, BackendError> {
        let deadline = tokio::time::Instant::now() + TASK_TIMEOUT;
        loop {
            let mut tasks = (self.tasks(docker, Some("running")).await)
                .map_err(docker_err(format!("listing the tasks of {}", self.name)))?;
            tasks.sort_by_key(|t| t.slot);
            let mut running = Vec::new();
            for task in tasks {
                let Some(status) = task.status else { continue };
                let container = status.container_status.and_then(|c| c.container_id);
                if let (Some(TaskState::RUNNING), Some(id)) = (status.state, container)
                    && let Some(host_port) = published_port(docker, &id, port).await
                {
                    running.push((id, host_port));
                }
            }
            if running.len() == usize::from(count) {
                return Ok(running);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::Docker {
                    what: format!("waiting for {count} running tasks of service {}", self.name),
                    detail: format!("{} after {TASK_TIMEOUT:?}", running.len()),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The service's tasks; with `desired`, those whose desired state it is (`running`).
    async fn tasks(
        &self,
        docker: &Docker,
        desired: Option<&str>,
    ) -> Result<Vec<Task>, bollard::errors::Error> {
        let mut filters = HashMap::from([("service", vec![self.name.as_str()])]);
        if let Some(state) = desired {
            filters.insert("desired-state", vec![state]);
        }
        (docker.list_tasks(Some(
            ListTasksOptionsBuilder::default().filters(&filters).build(),
        )))
        .await
    }

    /// Removes the service (its task's container goes with it); one already gone is no
    /// error. A task still on its way to a container (a service just created, as a killed
    /// run leaves it) is let arrive first, up to [`SETTLE_TIMEOUT`]: removed then, its node
    /// created the container after the service and every listing of it had gone.
    pub(crate) async fn remove(&self, docker: &Docker) -> Result<(), BackendError> {
        self.await_settled(docker).await?;
        match docker.delete_service(&self.name).await {
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(docker_err(format!("removing service {}", self.name))(e)),
        }
    }

    /// Sets the service's replica count (a stop is zero, a start one).
    pub(crate) async fn scale(&self, docker: &Docker, replicas: i64) -> Result<(), BackendError> {
        self.update(docker, &format!("scaling to {replicas}"), |spec| {
            spec.mode = Some(ServiceSpecMode {
                replicated: Some(ServiceSpecModeReplicated {
                    replicas: Some(replicas),
                }),
                ..Default::default()
            });
        })
        .await?;
        if replicas == 0 {
            self.await_no_task(docker).await?;
        }
        Ok(())
    }

    /// A rolling update that replaces the task though nothing changed (`--force`).
    pub(crate) async fn force_update(&self, docker: &Docker) -> Result<(), BackendError> {
        let old = self.running_task(docker).await?;
        self.update(docker, "forcing an update", |spec| {
            if let Some(task) = spec.task_template.as_mut() {
                task.force_update = Some(task.force_update.unwrap_or(0) + 1);
            }
        })
        .await?;
        // The update is done when another task runs.
        let deadline = tokio::time::Instant::now() + TASK_TIMEOUT;
        loop {
            if self.running_task(docker).await? != old {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::Docker {
                    what: format!("updating service {}", self.name),
                    detail: format!("its task was not replaced within {TASK_TIMEOUT:?}"),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn update(
        &self,
        docker: &Docker,
        what: &str,
        change: impl FnOnce(&mut ServiceSpec),
    ) -> Result<(), BackendError> {
        let what = format!("{what} service {}", self.name);
        let current = docker
            .inspect_service(&self.name, None::<InspectServiceOptions>)
            .await
            .map_err(docker_err(what.clone()))?;
        let version = current.version.and_then(|v| v.index).unwrap_or_default();
        let mut spec = current.spec.unwrap_or_default();
        change(&mut spec);
        let options = UpdateServiceOptionsBuilder::default()
            .version(i32::try_from(version).unwrap_or(i32::MAX))
            .build();
        docker
            .update_service(&self.name, spec, options, None)
            .await
            .map_err(docker_err(what))?;
        Ok(())
    }

    /// Waits until no task of the service is between its creation and a running (or ended)
    /// container, or [`SETTLE_TIMEOUT`] has passed (a task no node takes never gets a
    /// container, and holds nothing up); a service already gone has none.
    async fn await_settled(&self, docker: &Docker) -> Result<(), BackendError> {
        let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
        loop {
            let tasks = match self.tasks(docker, None).await {
                Ok(tasks) => tasks,
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => return Ok(()),
                Err(e) => {
                    return Err(docker_err(format!("listing the tasks of {}", self.name))(e));
                }
            };
            let on_the_way = tasks.iter().any(|task| {
                matches!(
                    task.status.as_ref().and_then(|s| s.state),
                    Some(
                        TaskState::NEW
                            | TaskState::ALLOCATED
                            | TaskState::PENDING
                            | TaskState::ASSIGNED
                            | TaskState::ACCEPTED
                            | TaskState::PREPARING
                            | TaskState::READY
                            | TaskState::STARTING
                    )
                )
            });
            if !on_the_way || tokio::time::Instant::now() >= deadline {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until no task of the service runs (after scaling to zero).
    async fn await_no_task(&self, docker: &Docker) -> Result<(), BackendError> {
        let deadline = tokio::time::Instant::now() + TASK_TIMEOUT;
        let filters = HashMap::from([
            (
                "label",
                vec![format!("com.docker.swarm.service.name={}", self.name)],
            ),
            ("status", vec!["running".to_owned(), "paused".to_owned()]),
        ]);
        loop {
            let running = docker
                .list_containers(Some(
                    bollard::query_parameters::ListContainersOptionsBuilder::default()
                        .filters(&filters)
                        .build(),
                ))
                .await
                .map_err(docker_err(format!("listing the tasks of {}", self.name)))?;
            if running.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::Docker {
                    what: format!("stopping service {}", self.name),
                    detail: format!("its task still runs after {TASK_TIMEOUT:?}"),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The host port container `id` publishes its `port` on, once it does.
async fn published_port(docker: &Docker, id: &str, port: u16) -> Option<u16> {
    docker
        .inspect_container(id, None)
        .await
        .ok()?
        .network_settings?
        .ports?
        .remove(&format!("{port}/tcp"))??
        .into_iter()
        .find_map(|b| b.host_port?.parse().ok())
}

/// Whether container `id` runs (a paused one does too).
async fn container_runs(docker: &Docker, id: &str) -> bool {
    docker
        .inspect_container(id, None)
        .await
        .ok()
        .and_then(|c| c.state)
        .and_then(|s| s.running)
        .unwrap_or(false)
}

/// The services labelled `filter`, by name; none when the engine is in no swarm.
pub(crate) async fn labelled_services(
    docker: &Docker,
    filter: &str,
) -> Result<Vec<(String, HashMap<String, String>)>, BackendError> {
    if node_state(docker).await? != LocalNodeState::ACTIVE {
        return Ok(Vec::new());
    }
    let filters = HashMap::from([("label", vec![filter])]);
    Ok(docker
        .list_services(Some(
            ListServicesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(docker_err("listing services"))?
        .into_iter()
        .filter_map(|s| {
            let spec = s.spec?;
            Some((spec.name?, spec.labels.unwrap_or_default()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::docker::{admin_spec, gateway_spec};

    #[test]
    fn a_stateful_service_keeps_its_data_on_the_run_volume_and_a_gateway_keeps_none() {
        let admin = admin_spec("gantry-abc-", model::SyncMode::Websocket, &[]);
        let labels = HashMap::from([("gantry.run".to_owned(), "abc".to_owned())]);
        let spec = service_spec(
            &admin,
            "abc",
            &["net".into()],
            Publish::One(40000),
            &labels,
            None,
        );
        let task = spec.task_template.unwrap();
        assert_eq!(task.resources, None, "no limit unless a case sets one");
        let container = task.container_spec.unwrap();
        let args = container.args.unwrap().join(" ");
        assert!(args.contains("--db /data/admin.db"), "{args}");
        let mount = &container.mounts.unwrap()[0];
        assert_eq!(mount.source.as_deref(), Some("gantry-abc-admin-data"));
        assert_eq!(mount.target.as_deref(), Some("/data"));
        let port = &spec.endpoint_spec.unwrap().ports.unwrap()[0];
        assert_eq!(
            (port.target_port, port.published_port, port.publish_mode),
            (
                Some(9095),
                Some(40000),
                Some(EndpointPortConfigPublishModeEnum::HOST)
            )
        );
        assert_eq!(
            task.restart_policy.unwrap().condition,
            Some(TaskSpecRestartPolicyConditionEnum::ANY)
        );

        let gateway = gateway_spec("gantry-abc-", model::SyncMode::Websocket, "http://a", &[]);
        let spec = service_spec(
            &gateway,
            "abc",
            &["net".into()],
            Publish::Replicas(3),
            &labels,
            Some(64 << 20),
        );
        let limits = spec.task_template.as_ref().unwrap().resources.as_ref();
        assert_eq!(
            limits.and_then(|r| r.limits.as_ref()?.memory_bytes),
            Some(64 << 20),
            "`resources.gateway.memory` is each task's limit"
        );
        assert_eq!(
            spec.mode.unwrap().replicated.unwrap().replicas,
            Some(3),
            "one service of three tasks"
        );
        assert_eq!(
            spec.endpoint_spec.unwrap().ports.unwrap()[0].published_port,
            None,
            "each task on a port of the engine's choosing"
        );
        let container = spec.task_template.unwrap().container_spec.unwrap();
        assert!(container.mounts.unwrap().is_empty());
        assert_eq!(container.args.unwrap(), gateway.cmd);
    }
}
