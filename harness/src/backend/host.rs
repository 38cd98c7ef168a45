//! The host backend: `gantry-admin` and `gantry-gateway` as child processes on port 0.
//!
//! Children never outlive the harness: their stdin is a pipe the harness holds
//! (`--exit-on-stdin-eof`), and a [`Service`] kills and reaps its process on drop.

use model::lock::MutexExt;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use model::SyncMode;

use super::clock::FakeClock;
use super::process::tail;
use super::ready::{self, ReadyWait};
use super::{HostServer, SyncToken};
use crate::error::BackendError;

/// How long a child may take to print its `listening on` line.
const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a child may take to answer `/actuator/health` with 200.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);
/// The command that builds the binaries.
pub(crate) const BUILD_COMMAND: &str = "cargo build --workspace --bins";

/// Where the host binaries are.
#[derive(Debug, Clone)]
pub struct HostBackend {
    bin_dir: PathBuf,
    /// Extra arguments for every gateway and admin ([`super::Backend::with_gateway_args`],
    /// [`super::Backend::with_admin_args`]).
    pub(crate) extra: super::ExtraArgs,
    /// Given to every admin and gateway (fresh for each run, see [`HostBackend::for_run`]).
    sync_token: SyncToken,
    /// Whether admins and gateways run on a faked wall clock each, for a case that steps
    /// clocks ([`HostBackend::with_fake_clocks`]).
    fake_clocks: bool,
}

/// [`default_bin_dir`] of this process's `GANTRY_BIN_DIR`.
pub fn bin_dir_from_env() -> Result<PathBuf, BackendError> {
    default_bin_dir(std::env::var_os("GANTRY_BIN_DIR").map(Into::into))
}

/// The directory holding the binaries: `GANTRY_BIN_DIR` if given, else the directory of the
/// running executable (its parent when that is `deps` or `examples`, as for test executables
/// and examples).
pub fn default_bin_dir(env_bin_dir: Option<PathBuf>) -> Result<PathBuf, BackendError> {
    if let Some(dir) = env_bin_dir {
        return Ok(dir);
    }
    let exe = std::env::current_exe().map_err(|source| BackendError::Io {
        what: "locating the running executable".into(),
        source,
    })?;
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir
        .file_name()
        .is_some_and(|n| n == "deps" || n == "examples")
    {
        dir.pop();
    }
    Ok(dir)
}

/// Which cargo profile a build uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// The running harness's own: binaries land beside it.
    Harness,
    /// `--release`, whatever the harness is (the images take release binaries).
    Release,
}

/// Runs `cargo build --workspace --bins` (plus `--release` for a release harness) in
/// `workspace`. Returns `Ok(false)` when cargo is not installed.
pub(crate) fn build_binaries(workspace: &Path) -> Result<bool, BackendError> {
    build_binaries_into(workspace, None, Profile::Harness)
}

/// [`build_binaries`] in `profile`, with cargo's target directory at `target_dir` when given
/// (a baseline revision's worktree builds into a directory of its own).
pub(crate) fn build_binaries_into(
    workspace: &Path,
    target_dir: Option<&Path>,
    profile: Profile,
) -> Result<bool, BackendError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace)
        .args(["build", "--workspace", "--bins"]);
    if profile == Profile::Release || !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    if let Some(dir) = target_dir {
        cmd.env("CARGO_TARGET_DIR", dir);
    }
    let out = match cmd.stdin(Stdio::null()).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(BackendError::Io {
                what: format!("running {BUILD_COMMAND}"),
                source,
            });
        }
    };
    if out.status.success() {
        return Ok(true);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(BackendError::BuildFailed {
        command: BUILD_COMMAND.to_owned(),
        status: out.status.to_string(),
        stderr_tail: tail(&stderr, 40),
    })
}

/// The binaries a case runs, each checked by [`check_fresh`].
const BINARIES: [&str; 2] = ["gantry-admin", "gantry-gateway"];

/// Fails when `gantry-admin` or `gantry-gateway` in `bin_dir` is older than a source file it
/// is built from under `workspace` (a checkout). What it is built from is what cargo wrote
/// beside it (`<binary>.d`: exactly the files rustc read for it, so a test or bench edit
/// that cargo does not relink for is not counted). A binary without one (not built by cargo
/// there) has nothing to compare with and passes.
pub(crate) fn check_fresh(bin_dir: &Path, workspace: &Path) -> Result<(), BackendError> {
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_owned());
    for name in BINARIES {
        let binary = bin_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        let Ok(dep_info) = std::fs::read_to_string(bin_dir.join(format!("{name}.d"))) else {
            continue;
        };
        let Ok(built) = std::fs::metadata(&binary).and_then(|m| m.modified()) else {
            continue;
        };
        let newest = dep_info_sources(&dep_info)
            .filter(|source| source.starts_with(&workspace))
            .filter_map(|source| Some((std::fs::metadata(&source).ok()?.modified().ok()?, source)))
            .max();
        if let Some((source_time, source)) = newest
            && built < source_time
        {
            return Err(BackendError::StaleBinary {
                binary,
                newest: source,
                build: BUILD_COMMAND.to_owned(),
            });
        }
    }
    Ok(())
}

/// The files a Makefile-style dep-info file (cargo's `<binary>.d`) lists as prerequisites:
/// after each `target:`, separated by spaces, a space in a name escaped as `\ `.
fn dep_info_sources(dep_info: &str) -> impl Iterator<Item = PathBuf> + '_ {
    dep_info
        .lines()
        .filter_map(|line| line.split_once(": ").map(|(_, deps)| deps))
        .flat_map(|deps| {
            let mut files = Vec::new();
            let mut file = String::new();
            let mut chars = deps.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => file.extend(chars.next()),
                    ' ' => files.extend(
                        (!file.is_empty()).then(|| PathBuf::from(std::mem::take(&mut file))),
                    ),
                    c => file.push(c),
                }
            }
            files.extend((!file.is_empty()).then(|| PathBuf::from(file)));
            files
        })
}

impl HostBackend {
    /// A backend running the binaries in `bin_dir`; fails if one is missing.
    pub fn new(bin_dir: PathBuf) -> Result<Self, BackendError> {
        let backend = Self {
            bin_dir,
            extra: super::ExtraArgs::default(),
            sync_token: SyncToken::random(),
            fake_clocks: false,
        };
        for name in BINARIES {
            let path = backend.binary(name);
            if !path.is_file() {
                return Err(BackendError::MissingBinary {
                    path,
                    build: BUILD_COMMAND.to_owned(),
                });
            }
        }
        Ok(backend)
    }

    /// The same backend with a fresh sync token, for one run.
    pub(crate) fn for_run(&self) -> Self {
        Self {
            sync_token: SyncToken::random(),
            ..self.clone()
        }
    }

    /// The same backend starting each admin and gateway on a wall clock of its own, which a
    /// case's `clock` changes step ([`Service::step_clock`]; `backend::clock`).
    pub(crate) fn with_fake_clocks(&self) -> Self {
        Self {
            fake_clocks: true,
            ..self.clone()
        }
    }

    /// The sync token its admins require and its gateways send.
    pub fn sync_token(&self) -> &SyncToken {
        &self.sync_token
    }

    fn binary(&self, name: &str) -> PathBuf {
        self.bin_dir
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
    }

    /// Starts `gantry-admin` with a SQLite file under `dir`.
    pub async fn start_admin(
        &self,
        mode: SyncMode,
        store: Option<&HostServer>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        let db = dir.join("admin.db").display().to_string();
        self.start_admin_with(mode, store, dir, &AdminLaunch::on(&db))
            .await
    }

    /// Starts `gantry-admin` as `launch` says (several admins can share one database);
    /// its log goes under `dir`.
    pub async fn start_admin_with(
        &self,
        mode: SyncMode,
        store: Option<&HostServer>,
        dir: &Path,
        launch: &AdminLaunch<'_>,
    ) -> Result<Service, BackendError> {
        self.start_admin_as("admin", mode, store, dir, launch).await
    }

    /// [`HostBackend::start_admin_with`], naming the admin `name` (its log: `<name>.log`).
    pub async fn start_admin_as(
        &self,
        name: &str,
        mode: SyncMode,
        store: Option<&HostServer>,
        dir: &Path,
        launch: &AdminLaunch<'_>,
    ) -> Result<Service, BackendError> {
        let mut args = vec![
            "--port".into(),
            launch.port.to_string(),
            "--db".into(),
            launch.db.to_owned(),
            "--sync".into(),
            mode.to_string(),
        ];
        args.extend(store.map(HostServer::store_flags).unwrap_or_default());
        args.extend(launch.args.iter().cloned());
        args.extend(self.extra.admin.iter().cloned());
        let sync_user = self.sync_token.sync_user();
        let env = [
            ("GANTRY_ADMIN_SYNC_TOKEN", self.sync_token.as_str()),
            ("GANTRY_ADMIN_SYNC_USER", sync_user.as_str()),
        ];
        self.spawn(name, "gantry-admin", args, &env, dir).await
    }

    /// Starts `gantry-gateway` subscribed to `admin_url` (several: comma-separated), or to
    /// `store` if given.
    pub async fn start_gateway(
        &self,
        mode: SyncMode,
        admin_url: &str,
        store: Option<&HostServer>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        let mut source = vec!["--admin-url".to_owned(), admin_url.to_owned()];
        source.extend(store.map(HostServer::store_flags).unwrap_or_default());
        self.start_gateway_on(mode, source, dir).await
    }

    /// Starts `gantry-gateway` with `source`, the flags naming where it syncs from
    /// (`--admin-url …`, `--zookeeper-url …`, `--etcd-url …`).
    pub async fn start_gateway_on(
        &self,
        mode: SyncMode,
        source: Vec<String>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        self.start_gateway_as("gateway", mode, source, dir).await
    }

    /// [`HostBackend::start_gateway_on`], naming the gateway `name` (its log: `<name>.log`).
    pub async fn start_gateway_as(
        &self,
        name: &str,
        mode: SyncMode,
        source: Vec<String>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        let (args, env) = self.gateway_args(mode, source, 0);
        self.spawn(name, "gantry-gateway", args, &env, dir).await
    }

    /// A gateway like [`HostBackend::start_gateway_as`] that is not started yet (a late
    /// gateway): its port is picked now, so peers and clients know its address, and
    /// [`Service::start`] starts it there.
    pub fn unstarted_gateway(
        &self,
        name: &str,
        mode: SyncMode,
        source: Vec<String>,
        dir: &Path,
    ) -> Result<Service, BackendError> {
        let port = super::process::free_port()?;
        let (args, env) = self.gateway_args(mode, source, port);
        let mut service = self.service(name, "gantry-gateway", args, &env, dir)?;
        service.url = format!("http://127.0.0.1:{port}");
        Ok(service)
    }

    /// A gateway's arguments on `port` (0: any) and its secret variables: the sync token,
    /// and the sync user it logs in as (HTTP long polling).
    fn gateway_args(
        &self,
        mode: SyncMode,
        source: Vec<String>,
        port: u16,
    ) -> (Vec<String>, [(&'static str, &str); 3]) {
        // The harness's requests come from loopback: a trusted proxy, so that scenarios such
        // as `rate_limiter_per_client` can name their clients in `X-Forwarded-For`.
        let mut args = vec![
            "--port".into(),
            port.to_string(),
            "--sync".into(),
            mode.to_string(),
            "--trusted-proxies".into(),
            "127.0.0.0/8,::1".into(),
        ];
        args.extend(source);
        args.extend(self.extra.gateway.iter().cloned());
        let token = self.sync_token.as_str();
        (
            args,
            [
                ("GANTRY_GATEWAY_SYNC_TOKEN", token),
                ("GANTRY_GATEWAY_USERNAME", super::SYNC_USER),
                ("GANTRY_GATEWAY_PASSWORD", token),
            ],
        )
    }

    /// Starts `bin` with `args` and the variables `env` (the sync token and user: in the
    /// environment, not on the command line other users can read).
    async fn spawn(
        &self,
        name: &str,
        bin: &str,
        args: Vec<String>,
        env: &[(&str, &str)],
        dir: &Path,
    ) -> Result<Service, BackendError> {
        let mut service = self.service(name, bin, args, env, dir)?;
        let url = service.launch().await?;
        // Later starts keep the address: peers and clients hold it.
        service.launch.pin_port(&url);
        service.url = url;
        Ok(service)
    }

    /// A service of `bin`, not started, logging to `<dir>/<name>.log` (and on a faked clock
    /// kept in `<dir>/<name>.clock` when the backend fakes clocks).
    fn service(
        &self,
        name: &str,
        bin: &str,
        args: Vec<String>,
        env: &[(&str, &str)],
        dir: &Path,
    ) -> Result<Service, BackendError> {
        let clock = self
            .fake_clocks
            .then(|| FakeClock::create(dir.join(format!("{name}.clock"))))
            .transpose()?;
        Ok(Service {
            name: name.to_owned(),
            url: String::new(),
            launch: Launch {
                program: self.binary(bin),
                args,
                env: env
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            },
            log: dir.join(format!("{name}.log")),
            process: Mutex::new(None),
            clock,
        })
    }
}

/// How to start one admin: its database and port, and more flags.
#[derive(Debug, Clone)]
pub struct AdminLaunch<'a> {
    /// `--db`: a SQLite file or a PostgreSQL URL.
    pub db: &'a str,
    /// `--port` (0: any free port).
    pub port: u16,
    /// More flags.
    pub args: Vec<String>,
}

impl<'a> AdminLaunch<'a> {
    /// An admin on `db`, on any free port, with no more flags.
    pub fn on(db: &'a str) -> Self {
        Self {
            db,
            port: 0,
            args: Vec::new(),
        }
    }
}

/// How a service is started: its program, arguments and secret variables.
#[derive(Debug)]
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Launch {
    /// Replaces the `--port` value with the port of `url`, so a restart keeps the address.
    fn pin_port(&mut self, url: &str) {
        let port = url.rsplit(':').next().unwrap_or("0").to_owned();
        if let Some(i) = self.args.iter().position(|a| a == "--port")
            && let Some(value) = self.args.get_mut(i + 1)
        {
            *value = port;
        }
    }
}

/// A running child process and the pipe it exits on when closed (`--exit-on-stdin-eof`).
#[derive(Debug)]
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Process {
    /// Kills the process (unless `graceful` and it exits within [`STOP_TIMEOUT`] of its
    /// stdin closing) and reaps it; runs on a blocking thread.
    async fn end(mut self, graceful: bool) {
        let ended = tokio::task::spawn_blocking(move || {
            if graceful {
                drop(self.stdin.take());
                let deadline = std::time::Instant::now() + STOP_TIMEOUT;
                while std::time::Instant::now() < deadline {
                    if matches!(self.child.try_wait(), Ok(Some(_)) | Err(_)) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        })
        .await;
        if let Err(e) = ended {
            tracing::error!("ending a service process: {e}");
        }
    }
}

/// How long a gracefully stopped service may take to exit before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A service process: started once on a port it keeps, then stopped, killed, started,
/// paused and resumed as a case's steps say; killed and reaped on drop.
#[derive(Debug)]
pub struct Service {
    name: String,
    url: String,
    log: PathBuf,
    launch: Launch,
    /// The running process; `None` while stopped.
    process: Mutex<Option<Process>>,
    /// Its faked wall clock, for a case that steps clocks.
    clock: Option<FakeClock>,
}

impl Service {
    /// `admin` or `gateway`, or `admin[i]`, `gateway[i]` in a topology of several.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`; the same across restarts.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process().as_ref().map(|p| p.child.id())
    }

    /// Whether its process ended on its own: it was started and has exited without the
    /// harness stopping or killing it (a crash, a panic, an exit on a fatal error).
    pub fn exited(&self) -> bool {
        self.process()
            .as_mut()
            .is_some_and(|p| matches!(p.child.try_wait(), Ok(Some(_))))
    }

    /// The last `n` lines of the service's stderr log (every start appends to it).
    pub fn log_tail(&self, n: usize) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| tail(&t, n))
            .unwrap_or_default()
    }

    /// How long its log is now, in bytes (0 before it first started): where
    /// [`Service::log_since`] starts to read what it logs from now on.
    pub fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    /// What it logged after its log was `offset` bytes long (every start appends).
    pub fn log_since(&self, offset: u64) -> Result<String, BackendError> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |source| BackendError::Io {
            what: format!("reading {}", self.log.display()),
            source,
        };
        let mut file = match std::fs::File::open(&self.log) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
            opened => opened.map_err(io)?,
        };
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Stops it gracefully: closes its stdin (it shuts down), kills it after
    /// [`STOP_TIMEOUT`]. Nothing happens when it is stopped.
    pub async fn stop(&self) {
        let process = self.process().take();
        if let Some(p) = process {
            p.end(true).await;
        }
    }

    /// Kills it (SIGKILL) and reaps it. Nothing happens when it is stopped.
    pub async fn kill(&self) {
        let process = self.process().take();
        if let Some(p) = process {
            p.end(false).await;
        }
    }

    /// Starts it again on its port after [`Service::stop`] or [`Service::kill`], and waits
    /// until it is healthy. Nothing happens while it runs.
    pub async fn start(&self) -> Result<(), BackendError> {
        if self.process().is_some() {
            return Ok(());
        }
        self.launch().await.map(drop)
    }

    /// Sends `signal` (SIGSTOP to pause, SIGCONT to resume) to the running process.
    pub fn signal(&self, signal: rustix::process::Signal) -> Result<(), BackendError> {
        let pid = self.pid().ok_or_else(|| BackendError::NotRunning {
            service: self.name.clone(),
        })?;
        super::process::signal(&self.name, pid, signal)
    }

    /// Steps its wall clock by `seconds` (negative: back) from where it is, once it is
    /// seen running under libfaketime; answers the clock's new offset.
    pub fn step_clock(&self, seconds: i64) -> Result<i64, BackendError> {
        let not_running = || BackendError::NotRunning {
            service: self.name.clone(),
        };
        let clock = self
            .clock
            .as_ref()
            .ok_or_else(|| BackendError::NoFakeClock {
                service: self.name.clone(),
            })?;
        clock.runs_in(&self.name, self.pid().ok_or_else(not_running)?)?;
        clock.step(seconds)
    }

    fn process(&self) -> MutexGuard<'_, Option<Process>> {
        self.process.locked()
    }

    /// Spawns the process, reads its `listening on <url>` line, waits until it is healthy
    /// and answers the URL.
    async fn launch(&self) -> Result<String, BackendError> {
        let io = |what: String| move |source| BackendError::Io { what, source };
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(io(format!("opening {}", self.log.display())))?;
        let Launch { program, args, env } = &self.launch;
        let mut child = Command::new(program)
            .arg("--exit-on-stdin-eof")
            .args(args)
            .env("NO_COLOR", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .envs(self.clock.iter().flat_map(FakeClock::env))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(io(format!("starting {}", program.display())))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        *self.process() = Some(Process { child, stdin });
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            // Keep draining so a stray write never hits a closed pipe.
            lines.for_each(drop);
        });
        let announce = |detail: String| BackendError::NoListenLine {
            service: self.name.clone(),
            detail,
        };
        let line = match tokio::time::timeout(ANNOUNCE_TIMEOUT, rx).await {
            Err(_) => {
                return Err(announce(format!(
                    "nothing within {}s",
                    ANNOUNCE_TIMEOUT.as_secs()
                )));
            }
            Ok(Err(_)) | Ok(Ok(None)) => {
                let process = self.process().take();
                let status = match process {
                    Some(mut p) => p.child.wait().map(|s| s.to_string()).unwrap_or_default(),
                    None => String::new(),
                };
                return Err(announce(format!(
                    "exited ({status}) first; log:\n{}",
                    self.log_tail(40)
                )));
            }
            Ok(Ok(Some(Err(e)))) => return Err(announce(e.to_string())),
            Ok(Ok(Some(Ok(line)))) => line,
        };
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .filter(|u| u.starts_with("http://"))
            .ok_or_else(|| announce(format!("printed {line:?}")))?
            .to_owned();
        await_healthy(&self.name, &url).await?;
        Ok(url)
    }
}

/// Waits until `url` answers `/actuator/health` with 200.
async fn await_healthy(service: &str, url: &str) -> Result<(), BackendError> {
    let http = crate::client::http();
    let url = format!("{url}/actuator/health");
    let wait = ReadyWait {
        service: service.to_owned(),
        interval: Duration::from_millis(50),
        timeout: HEALTH_TIMEOUT,
    };
    wait.until(|| ready::http_200(&http, &url)).await?;
    Ok(())
}

impl Drop for Service {
    fn drop(&mut self) {
        let process = self.process().take();
        if let Some(mut p) = process {
            // A paused process dies of SIGKILL too.
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_dir_is_the_env_value_or_next_to_the_executable() {
        assert_eq!(
            default_bin_dir(Some(PathBuf::from("/x"))).unwrap(),
            PathBuf::from("/x")
        );
        let dir = default_bin_dir(None).unwrap();
        assert!(
            dir.file_name().is_some_and(|n| n != "deps"),
            "{}",
            dir.display()
        );
    }

    #[test]
    fn a_binary_older_than_its_sources_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let bins = tempfile::tempdir().unwrap();
        let file = |p: &Path, age_s: u64| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if !p.exists() {
                std::fs::write(p, "x").unwrap();
            }
            let t = std::time::SystemTime::now() - Duration::from_secs(age_s);
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        };
        let proxy = ws.join("gateway/src/proxy.rs");
        let spaced = ws.join("gateway/src/a dir/b.rs");
        let admin_main = ws.join("admin/src/main.rs");
        file(&bins.path().join("gantry-admin"), 100);
        file(&bins.path().join("gantry-gateway"), 100);
        file(&proxy, 500);
        file(&spaced, 500);
        file(&admin_main, 500);
        // A test module (never read for the binary, so not in its dep-info) and a file
        // outside the checkout (a registry crate) are newer.
        file(&ws.join("gateway/src/proxy/tests.rs"), 10);
        let elsewhere = tempfile::tempdir().unwrap();
        let registry = elsewhere.path().join("lib.rs");
        file(&registry, 10);
        let dep_info = |bin: &str, deps: &[&Path]| {
            let deps: Vec<String> = (deps.iter())
                .map(|d| d.display().to_string().replace(' ', "\\ "))
                .collect();
            let target = bins.path().join(bin);
            std::fs::write(
                bins.path().join(format!("{bin}.d")),
                format!("{}: {}\n", target.display(), deps.join(" ")),
            )
            .unwrap();
        };
        dep_info("gantry-gateway", &[&proxy, &spaced, &registry]);
        dep_info("gantry-admin", &[&admin_main]);
        assert!(check_fresh(bins.path(), &ws).is_ok());
        // A gateway source is newer than the gateway binary; the admin's are not.
        file(&bins.path().join("gantry-gateway"), 200);
        file(&proxy, 150);
        file(&bins.path().join("gantry-admin"), 300);
        let e = check_fresh(bins.path(), &ws).unwrap_err().to_string();
        assert!(e.contains("gantry-gateway is older than"), "{e}");
        assert!(
            e.contains("gateway/src/proxy.rs (it would test old code): rebuild it with `cargo build --workspace --bins`"),
            "{e}"
        );
        // A name with a space in it is read whole.
        file(&proxy, 500);
        file(&spaced, 150);
        let e = check_fresh(bins.path(), &ws).unwrap_err().to_string();
        assert!(e.contains("gateway/src/a dir/b.rs"), "{e}");
        // Without dep-info (binaries not built by cargo there) nothing is compared.
        std::fs::remove_file(bins.path().join("gantry-gateway.d")).unwrap();
        assert!(check_fresh(bins.path(), &ws).is_ok());
    }
}
