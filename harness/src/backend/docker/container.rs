//! One running container of a run ([`Container`]): how the harness and the other containers
//! reach it, its logs (followed into a bounded buffer) and the wait until it is ready.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::StreamExt;

use super::engine::docker_err;
use super::specs::{ContainerSpec, Probe};
use crate::backend::ready::{self, ReadyWait};
use crate::error::BackendError;

/// How long a container may take to answer its health endpoint.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of container log kept per container.
const LOG_LIMIT: usize = 256 * 1024;

/// A running container of a run; removed with its run.
#[derive(Debug)]
pub struct Container {
    name: String,
    role: &'static str,
    url: String,
    peer: String,
    logs: Arc<Mutex<String>>,
    follower: tokio::task::JoinHandle<()>,
}

impl Container {
    /// The handle of the started container `spec`: follows its logs, reads its published
    /// port, then waits until it is ready ([`ContainerSpec::probe`]).
    pub(super) async fn attach(
        docker: &Docker,
        spec: &ContainerSpec,
    ) -> Result<Self, BackendError> {
        let port_key = format!("{}/tcp", spec.port);
        let what = |verb: &str| format!("{verb} container {}", spec.name);
        let logs = Arc::new(Mutex::new(String::new()));
        let follower = tokio::spawn(follow_logs(
            docker.clone(),
            spec.name.clone(),
            Arc::clone(&logs),
        ));
        let mut container = Container {
            name: spec.name.clone(),
            role: spec.role,
            url: String::new(),
            peer: format!("{}:{}", spec.name, spec.port),
            logs,
            follower,
        };
        let inspect = docker
            .inspect_container(&spec.name, None)
            .await
            .map_err(docker_err(what("inspecting")))?;
        let host_port = inspect
            .network_settings
            .and_then(|n| n.ports)
            .and_then(|mut p| p.remove(&port_key))
            .flatten()
            .and_then(|b| b.into_iter().find_map(|b| b.host_port))
            .filter(|p| !p.is_empty())
            .ok_or_else(|| BackendError::Docker {
                what: what("reading the published port of"),
                detail: format!("no host port for {port_key}"),
            })?;
        container.url = format!("http://127.0.0.1:{host_port}");
        container.await_healthy(spec.probe).await?;
        Ok(container)
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

/// Appends the logs of container `name` to `logs` until it stops, keeping the newest half
/// when they pass [`LOG_LIMIT`].
async fn follow_logs(docker: Docker, name: String, logs: Arc<Mutex<String>>) {
    let opts = LogsOptionsBuilder::default()
        .follow(true)
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
        self.follower.abort();
    }
}
