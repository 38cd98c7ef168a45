//! One running container of a run ([`Container`]): how the harness and the other containers
//! reach it, its logs (followed into a bounded buffer), the wait until it is ready, and the
//! faults a step applies to it ([`Container::fault`]: stop, kill, start, restart, pause,
//! resume).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{
    KillContainerOptionsBuilder, LogsOptionsBuilder, StartContainerOptions,
    StopContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::engine::docker_err;
use super::specs::{ContainerSpec, Probe};
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

/// A running container of a run; removed with its run.
#[derive(Debug)]
pub struct Container {
    docker: Docker,
    name: String,
    role: &'static str,
    /// `<port>/tcp`: the port it publishes.
    port_key: String,
    probe: Probe,
    url: String,
    peer: String,
    logs: Arc<Mutex<String>>,
    /// Follows the logs of the container's current start (replaced on each start).
    follower: Mutex<tokio::task::JoinHandle<()>>,
}

impl Container {
    /// The handle of the started container `spec`: follows its logs, reads its published
    /// port, then waits until it is ready ([`ContainerSpec::probe`]).
    pub(super) async fn attach(
        docker: &Docker,
        spec: &ContainerSpec,
    ) -> Result<Self, BackendError> {
        let logs = Arc::new(Mutex::new(String::new()));
        let follower = tokio::spawn(follow_logs(
            docker.clone(),
            spec.name.clone(),
            Arc::clone(&logs),
            0,
        ));
        let mut container = Container {
            docker: docker.clone(),
            name: spec.name.clone(),
            role: spec.role,
            port_key: format!("{}/tcp", spec.port),
            probe: spec.probe,
            url: String::new(),
            peer: format!("{}:{}", spec.name, spec.port),
            logs,
            follower: Mutex::new(follower),
        };
        container.read_url().await?;
        container.await_healthy(container.probe).await?;
        Ok(container)
    }

    /// Applies a step's fault: `stop` (SIGTERM, then SIGKILL after a grace period), `kill`
    /// (SIGKILL), `start` (and wait until ready), `restart` (stop, then start), `pause` and
    /// `resume` (the cgroup freezer: `docker pause` / `unpause`). The container keeps its name,
    /// networks and published port across a stop, so peers and the harness reach it again
    /// where they did.
    pub async fn fault(&self, action: FaultAction) -> Result<(), BackendError> {
        let what = |verb: &str| docker_err(format!("{verb} container {}", self.name));
        match action {
            FaultAction::Stop => self.stop(STOP_GRACE_SECS).await,
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
                .map_err(what("killing")),
            FaultAction::Start => self.start().await,
            FaultAction::Restart => {
                self.stop(STOP_GRACE_SECS).await?;
                self.start().await
            }
            FaultAction::Pause => self
                .docker
                .pause_container(&self.name)
                .await
                .map_err(what("pausing")),
            FaultAction::Resume => self
                .docker
                .unpause_container(&self.name)
                .await
                .map_err(what("resuming")),
        }
    }

    /// Stops the container, giving its process `grace_secs` to exit on SIGTERM.
    async fn stop(&self, grace_secs: i32) -> Result<(), BackendError> {
        let opts = StopContainerOptionsBuilder::default().t(grace_secs).build();
        self.docker
            .stop_container(&self.name, Some(opts))
            .await
            .map_err(docker_err(format!("stopping container {}", self.name)))
    }

    /// Starts the stopped container again (on the same published port) and waits until it is
    /// ready; its logs keep reaching [`Container::log_tail`].
    async fn start(&self) -> Result<(), BackendError> {
        self.docker
            .start_container(&self.name, None::<StartContainerOptions>)
            .await
            .map_err(docker_err(format!("starting container {}", self.name)))?;
        // The first follower ended with the container; this one reads from the restart on.
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX));
        let follower = tokio::spawn(follow_logs(
            self.docker.clone(),
            self.name.clone(),
            Arc::clone(&self.logs),
            since,
        ));
        std::mem::replace(&mut *self.follower(), follower).abort();
        self.await_healthy(self.probe).await
    }

    fn follower(&self) -> std::sync::MutexGuard<'_, tokio::task::JoinHandle<()>> {
        self.follower.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the published port into [`Container::url`].
    async fn read_url(&mut self) -> Result<(), BackendError> {
        let what = |verb: &str| format!("{verb} container {}", self.name);
        let inspect = self
            .docker
            .inspect_container(&self.name, None)
            .await
            .map_err(docker_err(what("inspecting")))?;
        let host_port = inspect
            .network_settings
            .and_then(|n| n.ports)
            .and_then(|mut p| p.remove(&self.port_key))
            .flatten()
            .and_then(|b| b.into_iter().find_map(|b| b.host_port))
            .filter(|p| !p.is_empty())
            .ok_or_else(|| BackendError::Docker {
                what: what("reading the published port of"),
                detail: format!("no host port for {}", self.port_key),
            })?;
        self.url = format!("http://127.0.0.1:{host_port}");
        Ok(())
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
        let buf = self.logs.lock().expect("the log buffer is never poisoned");
        crate::backend::host::tail(&buf, n)
    }

    async fn await_healthy(&self, probe: Probe) -> Result<(), BackendError> {
        let http = crate::client::http();
        let path = match probe {
            Probe::Http(path) => path,
            Probe::Srvr | Probe::Ping => "",
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
        let mut buf = logs.lock().expect("the log buffer is never poisoned");
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

impl Drop for Container {
    fn drop(&mut self) {
        self.follower().abort();
    }
}
