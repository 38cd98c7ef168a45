//! The docker backend: admin, gateway and echo upstreams as containers of the `gantry/*:dev`
//! images (see [`crate::images`]) on one private network per run.
//!
//! A run (one topology) has an id; its network is `gantry-<id>` and its containers
//! `gantry-<id>-<role>`, so they resolve each other by name. Everything it creates carries the
//! labels `gantry.run=<id>`, `gantry.pid=<harness pid>` and `gantry.host=<hostname>`. Cleanup
//! never depends on a reaper container:
//!
//! - dropping a [`DockerRun`] (end of a case, a failed start, a panic unwinding, the future
//!   dropped by Ctrl-C) force-removes every container labelled with its id, then its network;
//! - opening the backend removes what earlier harness processes on this host left behind when
//!   their pid is gone (a `kill -9`, a crash in a destructor).
//!
//! The services are reached from the harness through ports published on `127.0.0.1`; the
//! gateway reaches the admin and the upstreams by container name. [`ContainerSpec`] is the one
//! description of each service, used both here and by [`crate::compose`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, NetworkCreateRequest, PortBinding};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;
use model::SyncMode;
use rand::Rng;

use super::{StoreKind, SyncToken};
use crate::error::BackendError;
use crate::images::{self, ImageSpec};
use crate::wait::{WaitPolicy, await_convergence};

/// Label: the run id.
pub const RUN_LABEL: &str = "gantry.run";
/// Label: the pid of the harness that made the object.
pub const PID_LABEL: &str = "gantry.pid";
/// Label: the hostname of the harness that made the object.
pub const HOST_LABEL: &str = "gantry.host";
/// The admin's port inside its container.
pub const ADMIN_PORT: u16 = 9095;
/// The gateway's port inside its container.
pub const GATEWAY_PORT: u16 = 9195;
/// An echo upstream's port inside its container.
pub const UPSTREAM_PORT: u16 = 8080;
/// The environment of every container (backend and compose files alike).
pub const ENV: &[(&str, &str)] = &[("NO_COLOR", "1")];
/// How long a container may take to answer its health endpoint.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of container log kept per container.
const LOG_LIMIT: usize = 256 * 1024;

/// One service as a container: what both the backend and the compose files start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// `admin`, `gateway` or `upstream`.
    pub role: &'static str,
    /// The container (and DNS) name.
    pub name: String,
    /// The image.
    pub image: &'static str,
    /// Arguments after the image's entrypoint.
    pub cmd: Vec<String>,
    /// The HTTP port it listens on inside the network.
    pub port: u16,
    /// How to tell it is ready.
    pub probe: Probe,
}

/// How the backend tells a container is ready, through its published port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `GET <path>` answers 200.
    Http(&'static str),
    /// ZooKeeper's `srvr` four-letter word reports a mode.
    Srvr,
}

/// The etcd client port inside its container.
pub const ETCD_PORT: u16 = 2379;
/// The ZooKeeper client port inside its container.
pub const ZOOKEEPER_PORT: u16 = 2181;

/// The ZooKeeper or etcd server, named `<prefix><store>`.
pub fn store_spec(prefix: &str, kind: StoreKind) -> ContainerSpec {
    let name = format!("{prefix}{}", kind.name());
    match kind {
        StoreKind::Etcd => {
            let client = format!("http://{name}:{ETCD_PORT}");
            let peer = "http://127.0.0.1:2380";
            let mut cmd = args(&["--name", "gantry", "--data-dir", "/data"]);
            cmd.extend([
                "--listen-client-urls".into(),
                format!("http://0.0.0.0:{ETCD_PORT}"),
            ]);
            cmd.extend(["--advertise-client-urls".into(), client]);
            cmd.extend(args(&["--listen-peer-urls", peer]));
            cmd.extend(args(&["--initial-advertise-peer-urls", peer]));
            cmd.extend(["--initial-cluster".into(), format!("gantry={peer}")]);
            ContainerSpec {
                role: images::ETCD.role,
                name,
                image: images::ETCD.tag,
                cmd,
                port: ETCD_PORT,
                probe: Probe::Http("/health"),
            }
        }
        StoreKind::Zookeeper => ContainerSpec {
            role: images::ZOOKEEPER.role,
            name,
            image: images::ZOOKEEPER.tag,
            // The image's entrypoint runs the baked-in /conf/zoo.cfg.
            cmd: Vec::new(),
            port: ZOOKEEPER_PORT,
            probe: Probe::Srvr,
        },
    }
}

/// `[--zookeeper-url <name>:2181]` or `[--etcd-url http://<name>:2379]` for the store
/// container `store`.
fn store_args(store: Option<&ContainerSpec>) -> Vec<String> {
    match store {
        Some(s) if s.role == images::ZOOKEEPER.role => vec![
            StoreKind::Zookeeper.url_flag().to_owned(),
            format!("{}:{}", s.name, s.port),
        ],
        Some(s) => vec![StoreKind::Etcd.url_flag().to_owned(), s.peer_url()],
        None => Vec::new(),
    }
}

impl ContainerSpec {
    /// `http://<name>:<port>`: how other containers reach it.
    pub fn peer_url(&self) -> String {
        format!("http://{}:{}", self.name, self.port)
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The admin, named `<prefix>admin`, publishing with `mode` (to the `store` container, if
/// any), on an in-container SQLite file.
pub fn admin_spec(prefix: &str, mode: SyncMode, store: Option<&ContainerSpec>) -> ContainerSpec {
    let mut cmd = args(&["--bind", "0.0.0.0", "--port"]);
    cmd.extend([ADMIN_PORT.to_string(), "--db".into(), "/admin.db".into()]);
    cmd.extend(["--sync".into(), mode.to_string()]);
    cmd.extend(store_args(store));
    ContainerSpec {
        role: images::ADMIN.role,
        name: format!("{prefix}admin"),
        image: images::ADMIN.tag,
        cmd,
        port: ADMIN_PORT,
        probe: Probe::Http("/actuator/health"),
    }
}

/// The gateway, named `<prefix>gateway`, subscribing with `mode` to the admin at `admin_url`
/// (or to the `store` container, if any).
pub fn gateway_spec(
    prefix: &str,
    mode: SyncMode,
    admin_url: &str,
    store: Option<&ContainerSpec>,
) -> ContainerSpec {
    let mut cmd = args(&["--bind", "0.0.0.0", "--port"]);
    cmd.extend([GATEWAY_PORT.to_string(), "--sync".into(), mode.to_string()]);
    cmd.extend(["--admin-url".into(), admin_url.to_owned()]);
    cmd.extend(store_args(store));
    ContainerSpec {
        role: images::GATEWAY.role,
        name: format!("{prefix}gateway"),
        image: images::GATEWAY.tag,
        cmd,
        port: GATEWAY_PORT,
        probe: Probe::Http("/actuator/health"),
    }
}

/// The echo upstream `name`, named `<prefix>upstream-<name>`.
pub fn upstream_spec(prefix: &str, name: &str) -> ContainerSpec {
    let mut cmd = args(&["--name", name, "--bind", "0.0.0.0", "--port"]);
    cmd.push(UPSTREAM_PORT.to_string());
    ContainerSpec {
        role: images::UPSTREAM.role,
        name: format!("{prefix}upstream-{}", dns_safe(name)),
        image: images::UPSTREAM.tag,
        cmd,
        port: UPSTREAM_PORT,
        // The echo answers every path with 200.
        probe: Probe::Http("/"),
    }
}

/// `name` with every character a container name cannot hold replaced by `-`.
fn dns_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// Whether the docker backend can run `mode` (it has every image the mode needs).
pub fn supports(mode: SyncMode) -> bool {
    images::needed(mode).is_some()
}

/// Connects to the engine named by `DOCKER_HOST` (else the local socket) at the API version
/// both sides speak.
pub async fn connect() -> Result<Docker, BackendError> {
    let docker = Docker::connect_with_local_defaults().map_err(unavailable)?;
    let docker = docker.negotiate_version().await.map_err(unavailable)?;
    docker.ping().await.map_err(unavailable)?;
    Ok(docker)
}

#[expect(clippy::needless_pass_by_value, reason = "used as a map_err callback")]
fn unavailable(e: bollard::errors::Error) -> BackendError {
    BackendError::DockerUnavailable(e.to_string())
}

fn docker_err(what: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> BackendError {
    let what = what.into();
    move |e| BackendError::Docker {
        what,
        detail: e.to_string(),
    }
}

/// Runs `fut` to completion on a fresh current-thread runtime on its own thread, so it works
/// from synchronous code, from inside another runtime and from destructors.
fn block_on_fresh<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime builds")
            .block_on(fut)
    })
    .join()
    .expect("the docker helper thread does not panic")
}

/// Whether docker-backed tests run here: the engine answers, or not (and then whether that
/// is a failure, `GANTRY_REQUIRE_DOCKER=1`, or a plain skip).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineCheck {
    /// An engine answers: run them.
    Available,
    /// No engine, not required: mark them ignored, saying why.
    Skip(String),
    /// No engine but `GANTRY_REQUIRE_DOCKER=1`: fail them, saying why.
    Required(String),
}

impl EngineCheck {
    /// Asks the engine (5 s at most); `require` is `GANTRY_REQUIRE_DOCKER=1`.
    pub fn probe(require: bool) -> Self {
        let answer = block_on_fresh(async {
            match tokio::time::timeout(Duration::from_secs(5), connect()).await {
                Ok(r) => r.map(drop),
                Err(_) => Err(BackendError::DockerUnavailable(
                    "the engine did not answer within 5 s".into(),
                )),
            }
        });
        match answer {
            Ok(()) => Self::Available,
            Err(e) if require => Self::Required(format!("{e} (GANTRY_REQUIRE_DOCKER=1)")),
            Err(e) => Self::Skip(format!(
                "{e}: docker-backed trials are skipped (set GANTRY_REQUIRE_DOCKER=1 to fail instead)"
            )),
        }
    }
}

/// The docker backend: a reachable engine with the images present.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    /// Extra arguments for every gateway ([`super::Backend::with_gateway_args`]).
    pub(crate) gateway_args: Vec<String>,
}

impl DockerBackend {
    /// Connects, removes what dead harness processes left behind, then makes sure the images
    /// exist: built from the static binaries in `bin_dir` when given (only those whose content
    /// hash changed), else only checked ([`images::preflight`]).
    pub fn open(bin_dir: Option<&Path>) -> Result<Self, BackendError> {
        let bin_dir = bin_dir.map(Path::to_path_buf);
        block_on_fresh(async move {
            let docker = connect().await?;
            sweep_stale(&docker).await?;
            let needed: Vec<ImageSpec> = images::ALL.to_vec();
            // Middleware images are checked per mode, when a run begins (their host package
            // may be missing, which only makes that mode unavailable).
            let needed = match &bin_dir {
                Some(_) => needed,
                None => needed
                    .into_iter()
                    .filter(|s| matches!(s.source, images::ImageSource::WorkspaceBinary { .. }))
                    .collect(),
            };
            match bin_dir {
                Some(dir) => images::ensure(&docker, &needed, &dir, false)
                    .await
                    .map(drop),
                None => images::preflight(&docker, &needed).await,
            }
        })?;
        Ok(Self {
            gateway_args: Vec::new(),
        })
    }

    /// Starts a run: a fresh id and its private network. `keep` leaves its containers and
    /// network in place when it ends (`GANTRY_KEEP=1`).
    pub async fn begin(&self, mode: SyncMode, keep: bool) -> Result<DockerRun, BackendError> {
        let needed = images::needed(mode).ok_or_else(|| BackendError::StoreUnavailable {
            mode,
            detail: "the docker backend cannot run this mode (use --backend host)".into(),
        })?;
        let docker = connect().await?;
        images::preflight(&docker, &needed).await?;
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
            gateway_args: self.gateway_args.clone(),
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
}

fn labels(run_id: &str) -> HashMap<String, String> {
    HashMap::from([
        (RUN_LABEL.to_owned(), run_id.to_owned()),
        (PID_LABEL.to_owned(), std::process::id().to_string()),
        (HOST_LABEL.to_owned(), hostname()),
    ])
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether the process `pid` on this host still exists.
fn pid_alive(pid: &str) -> bool {
    !pid.is_empty() && Path::new("/proc").join(pid).exists()
}

/// The containers and networks labelled `filter` (`key` or `key=value`).
pub async fn labelled(
    docker: &Docker,
    filter: &str,
) -> Result<(Vec<Labelled>, Vec<Labelled>), BackendError> {
    let filters = HashMap::from([("label", vec![filter])]);
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(docker_err("listing containers"))?
        .into_iter()
        .map(|c| Labelled {
            name: c
                .names
                .and_then(|n| n.into_iter().next())
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_owned(),
            labels: c.labels.unwrap_or_default(),
        })
        .collect();
    let networks = docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(docker_err("listing networks"))?
        .into_iter()
        .map(|n| Labelled {
            name: n.name.unwrap_or_default(),
            labels: n.labels.unwrap_or_default(),
        })
        .collect();
    Ok((containers, networks))
}

/// A container or network and its labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labelled {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: HashMap<String, String>,
}

/// Force-removes the containers, then the networks, labelled `filter` for which `pick` holds.
async fn remove_labelled(
    docker: &Docker,
    filter: &str,
    pick: impl Fn(&Labelled) -> bool,
) -> Result<(), BackendError> {
    let (containers, networks) = labelled(docker, filter).await?;
    for c in containers.iter().filter(|c| pick(c)) {
        let opts = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match docker.remove_container(&c.name, Some(opts)).await {
            Ok(()) => {}
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => return Err(docker_err(format!("removing container {}", c.name))(e)),
        }
    }
    for n in networks.iter().filter(|n| pick(n)) {
        match docker.remove_network(&n.name).await {
            Ok(()) => {}
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => return Err(docker_err(format!("removing network {}", n.name))(e)),
        }
    }
    Ok(())
}

/// Removes the containers and networks of runs whose harness process on this host is gone.
pub async fn sweep_stale(docker: &Docker) -> Result<(), BackendError> {
    let host = hostname();
    remove_labelled(docker, RUN_LABEL, |o| {
        o.labels.get(HOST_LABEL) == Some(&host)
            && !pid_alive(o.labels.get(PID_LABEL).map_or("", String::as_str))
    })
    .await
}

/// Removes every container and the network of run `id`.
pub async fn remove_run(docker: &Docker, id: &str) -> Result<(), BackendError> {
    remove_labelled(docker, &format!("{RUN_LABEL}={id}"), |_| true).await
}

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
    /// Starts the ZooKeeper or etcd container of `kind`; the admin and gateway started after
    /// it use it.
    pub async fn start_store(&self, kind: StoreKind) -> Result<Container, BackendError> {
        let spec = store_spec(&self.prefix(), kind);
        let container = self.start(&spec).await?;
        *self.store.lock().expect("never poisoned") = Some(Box::new(spec));
        Ok(container)
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
                    port_key.clone(),
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
        let logs = Arc::new(Mutex::new(String::new()));
        let follower = tokio::spawn(follow_logs(
            self.docker.clone(),
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
        let inspect = self
            .docker
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
}

impl Drop for DockerRun {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let id = self.id.clone();
        let result = block_on_fresh(async move {
            let docker = connect().await?;
            remove_run(&docker, &id).await
        });
        if let Err(e) = result {
            tracing::error!("cleaning up docker run {}: {e}", self.id);
        }
    }
}

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
            Probe::Srvr => "",
        };
        let url = format!("{}{path}", self.url);
        let port: u16 = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_default();
        let policy = WaitPolicy {
            consecutive: 1,
            interval: Duration::from_millis(100),
            timeout: HEALTH_TIMEOUT,
        };
        await_convergence(policy, || async {
            if probe == Probe::Srvr {
                return tokio::task::spawn_blocking(move || super::middleware::srvr(port))
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()));
            }
            match http.get(&url).send().await {
                Ok(r) if r.status() == 200 => Ok(()),
                Ok(r) => Err(format!("HTTP {}", r.status())),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
        .map(drop)
        .map_err(|t| BackendError::Unhealthy {
            service: format!("{} (container {})", self.role, self.name),
            waited_ms: t.waited.as_millis(),
            last: format!("{}; log:\n{}", t.last, self.log_tail(40)),
        })
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_wire_the_gateway_to_the_admin_by_name() {
        let admin = admin_spec("gantry-abc-", SyncMode::Websocket, None);
        let gateway = gateway_spec("gantry-abc-", SyncMode::Websocket, &admin.peer_url(), None);
        assert_eq!(admin.name, "gantry-abc-admin");
        assert_eq!(
            gateway.cmd.join(" "),
            "--bind 0.0.0.0 --port 9195 --sync websocket --admin-url http://gantry-abc-admin:9095"
        );
        let up = upstream_spec("gantry-abc-", "Alpha_1");
        assert_eq!(up.name, "gantry-abc-upstream-alpha-1");
        assert_eq!(
            up.cmd.join(" "),
            "--name Alpha_1 --bind 0.0.0.0 --port 8080"
        );
    }

    #[test]
    fn store_containers_are_reached_by_name() {
        let zk = store_spec("gantry-abc-", StoreKind::Zookeeper);
        let admin = admin_spec("gantry-abc-", SyncMode::Zookeeper, Some(&zk));
        assert!(
            admin
                .cmd
                .join(" ")
                .ends_with("--sync zookeeper --zookeeper-url gantry-abc-zookeeper:2181"),
            "{:?}",
            admin.cmd
        );
        let etcd = store_spec("gantry-abc-", StoreKind::Etcd);
        let gateway = gateway_spec("gantry-abc-", SyncMode::Etcd, "http://a:1", Some(&etcd));
        assert!(
            gateway
                .cmd
                .join(" ")
                .ends_with("--etcd-url http://gantry-abc-etcd:2379"),
            "{:?}",
            gateway.cmd
        );
    }

    #[test]
    fn own_pid_is_alive_and_garbage_is_not() {
        assert!(pid_alive(&std::process::id().to_string()));
        assert!(!pid_alive(""));
        assert!(!pid_alive("999999999"));
    }
}
