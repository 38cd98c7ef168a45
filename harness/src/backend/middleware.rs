//! Real ZooKeeper and etcd servers for the `zookeeper` and `etcd` sync modes, as child
//! processes on loopback with free ports and their data under the topology's directory.
//!
//! - ZooKeeper: `java -cp /usr/share/java/zookeeper.jar[:slf4j-simple.jar]
//!   org.apache.zookeeper.server.ZooKeeperServerMain <dir>/zoo.cfg` (Debian's `zookeeper`);
//!   ready when the `srvr` four-letter word answers with a `Mode:` line.
//! - etcd: `etcd --name gantry --data-dir <dir>/data ...` (Debian's `etcd-server`); ready when
//!   `GET /health` answers `{"health":"true"}`.
//!
//! Durability: ZooKeeper runs with `forceSync=no` and etcd with `--unsafe-no-fsync`, on both
//! backends (`crate::backend::docker::specs`, `crate::images`). Both servers are per-scenario
//! fixtures: a killed or restarted server keeps what it wrote (the page cache outlives the
//! process), and only a machine crash could lose it. With fsync on, one commit waited 2.7 s
//! on a busy CI disk, and the `latency` judges measured the disk, not the sync path.
//!
//! Neither server watches its stdin, so each runs under a small `sh` watchdog whose stdin is a
//! pipe the harness holds: when the harness drops the [`StoreServer`] or dies, the pipe
//! closes and the watchdog kills the server with SIGKILL and reaps it. Dropping a
//! [`StoreServer`] waits for that, so no server outlives its topology.
//!
//! When the server cannot run on this machine the mode is skipped ([`skip_reason`]), unless
//! `GANTRY_REQUIRE` (a comma list of modes and components) names it. The watchdog
//! ([`Watched`]) also runs the components a case asks for (`super::redis`).

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use model::SyncMode;

use super::host::find_on_path;
use super::ready::{self, NotReady, ReadyWait};
use crate::Env;
use crate::error::BackendError;

/// Where Debian's `zookeeper` package puts the server jar (its manifest names the classpath).
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// Debian's SLF4J binding that makes ZooKeeper log to stderr (optional).
pub const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";
/// How long a server may take to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the watchdog may take to kill and reap the server.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `"$@"` (output to stderr), prints its pid, waits for stdin to end, then kills it.
const WATCHDOG: &str = r#""$@" >&2 </dev/null &
pid=$!
echo "$pid"
cat >/dev/null
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0"#;

/// A config store a sync mode needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Apache ZooKeeper.
    Zookeeper,
    /// etcd.
    Etcd,
}

impl StoreKind {
    /// The store `mode` syncs through, if any.
    pub fn for_mode(mode: SyncMode) -> Option<StoreKind> {
        match mode {
            SyncMode::Zookeeper => Some(StoreKind::Zookeeper),
            SyncMode::Etcd => Some(StoreKind::Etcd),
            SyncMode::Websocket | SyncMode::Http => None,
        }
    }

    /// The sync mode that uses it.
    pub fn mode(self) -> SyncMode {
        match self {
            StoreKind::Zookeeper => SyncMode::Zookeeper,
            StoreKind::Etcd => SyncMode::Etcd,
        }
    }

    /// The name used in logs and messages.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Zookeeper => "zookeeper",
            StoreKind::Etcd => "etcd",
        }
    }

    /// The admin and gateway flag that takes the store's address.
    pub fn url_flag(self) -> &'static str {
        match self {
            StoreKind::Zookeeper => "--zookeeper-url",
            StoreKind::Etcd => "--etcd-url",
        }
    }

    /// The program and leading arguments that run the server, or what is missing.
    fn locate(self) -> Result<(PathBuf, Vec<String>), String> {
        match self {
            StoreKind::Zookeeper => {
                let java = find_on_path("java").ok_or("`java` is not on PATH")?;
                if !Path::new(ZOOKEEPER_JAR).is_file() {
                    return Err(format!("{ZOOKEEPER_JAR} does not exist"));
                }
                let mut classpath = ZOOKEEPER_JAR.to_owned();
                if Path::new(SLF4J_SIMPLE_JAR).is_file() {
                    classpath = format!("{classpath}:{SLF4J_SIMPLE_JAR}");
                }
                let args = [
                    "-Xmx256m",
                    "-cp",
                    &classpath,
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                ];
                Ok((java, args.map(str::to_owned).to_vec()))
            }
            StoreKind::Etcd => {
                let etcd = find_on_path("etcd").ok_or("`etcd` is not on PATH")?;
                Ok((etcd, Vec::new()))
            }
        }
    }

    /// The Debian packages that provide the server.
    fn packages(self) -> &'static str {
        match self {
            StoreKind::Zookeeper => "zookeeper (with a JRE)",
            StoreKind::Etcd => "etcd-server",
        }
    }

    /// Why the server cannot run on this machine, if it cannot.
    pub fn unavailable(self) -> Option<String> {
        self.locate().err().map(|missing| {
            format!(
                "{} server not available: {missing} (install the Debian package {})",
                self.name(),
                self.packages()
            )
        })
    }
}

/// Whether `GANTRY_REQUIRE` (comma-separated names: sync modes such as `zookeeper`,
/// components such as `redis`) names `name`.
pub fn required(env: &dyn Env, name: &str) -> bool {
    env.var("GANTRY_REQUIRE")
        .is_some_and(|list| list.split(',').any(|m| m.trim().eq_ignore_ascii_case(name)))
}

/// Why cases under `mode` are skipped here: its store server is missing and `GANTRY_REQUIRE`
/// does not name the mode. `None` when they run.
pub fn skip_reason(env: &dyn Env, mode: SyncMode) -> Option<String> {
    let reason = StoreKind::for_mode(mode)?.unavailable()?;
    if required(env, mode.as_str()) {
        None
    } else {
        Some(format!(
            "{reason}; set GANTRY_REQUIRE={mode} to make this a failure"
        ))
    }
}

/// How many times a server is started on fresh ports when another process took its port
/// between [`free_port`] and the server's bind.
pub(super) const PORT_ATTEMPTS: u32 = 3;

/// A free loopback port (bound, then released for the server: another process may take it
/// before the server binds it; see [`lost_port_race`]).
pub(super) fn free_port() -> Result<u16, BackendError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| BackendError::Io {
            what: "picking a free port".into(),
            source,
        })
}

/// Whether a server's log (or docker's answer to a container start) says its port was taken
/// before it could bind it (ZooKeeper's `BindException`, etcd's, Redis's, PostgreSQL's and
/// docker's userland proxy's `bind: address already in use`): the harness's port pick lost a
/// race, so starting again on a fresh port is no hidden failure.
pub(super) fn lost_port_race(log: &str) -> bool {
    log.to_ascii_lowercase().contains("address already in use")
}

/// Moves a failed start's log aside (`<log>.<attempt>`, kept for a post-mortem) so that the
/// next attempt's log starts empty.
pub(super) fn retire_log(log: &Path, attempt: u32) {
    let mut aside = log.as_os_str().to_owned();
    aside.push(format!(".{attempt}"));
    if let Err(e) = std::fs::rename(log, &aside) {
        tracing::warn!(log = %log.display(), "moving a failed start's log aside: {e}");
    }
}

/// A running ZooKeeper or etcd server; killed and reaped on drop.
#[derive(Debug)]
pub struct StoreServer {
    kind: StoreKind,
    dir: PathBuf,
    port: u16,
    peer_port: u16,
    log: PathBuf,
    process: Option<Watched>,
}

/// The watchdog shell, its stdin and the server's pid (see the module docs): ending it, or
/// dropping the harness's end of its stdin, kills the server.
#[derive(Debug)]
pub(super) struct Watched {
    watchdog: Child,
    stdin: Option<ChildStdin>,
    /// The server's process id.
    pub(super) pid: u32,
}

impl Watched {
    /// Runs `program args` under the watchdog in `dir`, its output appended to `log`; `name`
    /// names the server in errors.
    pub(super) fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        dir: &Path,
        log: &Path,
    ) -> Result<Watched, BackendError> {
        let io = |what: String| move |source| BackendError::Io { what, source };
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io(format!("opening {}", log.display())))?;
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("gantry-watchdog")
            .arg(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(io(format!("starting {} under sh", program.display())))?;
        let stdin = watchdog.stdin.take();
        let mut pid_line = String::new();
        let read = watchdog
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut pid_line));
        match (read, pid_line.trim().parse::<u32>()) {
            (Some(Ok(_)), Ok(pid)) => Ok(Watched {
                watchdog,
                stdin,
                pid,
            }),
            _ => {
                let _ = watchdog.kill();
                let _ = watchdog.wait();
                Err(BackendError::NoListenLine {
                    service: name.to_owned(),
                    detail: format!("the watchdog printed {pid_line:?} instead of a pid"),
                })
            }
        }
    }

    /// Ends the server: EOF on the watchdog's stdin makes it kill and reap the server, then
    /// exit. Waits for that up to [`STOP_TIMEOUT`], then kills both. Blocks the thread (async
    /// code goes through [`StoreServer::stop`]).
    pub(super) fn end(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            match self.watchdog.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        // The watchdog is stuck: kill both.
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
        let _ = self.watchdog.kill();
        let _ = self.watchdog.wait();
    }
}

impl StoreServer {
    /// Starts a server of `kind` with its files under `dir` (created), and waits until it
    /// answers.
    pub async fn start(kind: StoreKind, dir: &Path) -> Result<StoreServer, BackendError> {
        StoreServer::start_on(kind, dir, free_port()?).await
    }

    /// [`StoreServer::start`] with the client port picked: on fresh ports when `port` turns
    /// out to be taken (the failed start's log is kept as `<kind>.log.<attempt>` in `dir`).
    /// Public only for the port-race trial (`harness/tests/it/port_race.rs`).
    #[doc(hidden)]
    pub async fn start_on(
        kind: StoreKind,
        dir: &Path,
        port: u16,
    ) -> Result<StoreServer, BackendError> {
        let mut server = StoreServer {
            kind,
            dir: dir.to_owned(),
            port,
            peer_port: free_port()?,
            log: dir.join(format!("{}.log", kind.name())),
            process: None,
        };
        let mut attempt = 1;
        loop {
            server.prepare()?;
            match server.launch().await {
                Ok(()) => return Ok(server),
                Err(e) if attempt < PORT_ATTEMPTS && lost_port_race(&server.log_tail(60)) => {
                    tracing::warn!(
                        server = kind.name(),
                        port = server.port,
                        "port taken before the server bound it; starting again on fresh ports: {e}"
                    );
                    retire_log(&server.log, attempt);
                    server.port = free_port()?;
                    server.peer_port = free_port()?;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// An empty data directory and, for ZooKeeper, its `zoo.cfg` on the current port.
    fn prepare(&self) -> Result<(), BackendError> {
        let io = |what: String| move |source| BackendError::Io { what, source };
        let data = self.dir.join("data");
        if data.exists() {
            std::fs::remove_dir_all(&data).map_err(io(format!("emptying {}", data.display())))?;
        }
        std::fs::create_dir_all(&data).map_err(io(format!("creating {}", data.display())))?;
        if self.kind == StoreKind::Zookeeper {
            let cfg = format!(
                "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
                 4lw.commands.whitelist=srvr,ruok,cons\nforceSync=no\n",
                data.display(),
                self.port
            );
            let path = self.dir.join("zoo.cfg");
            std::fs::write(&path, cfg).map_err(io(format!("writing {}", path.display())))?;
        }
        Ok(())
    }

    /// Which store it is.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The address admin and gateway take: `127.0.0.1:<port>` (ZooKeeper) or
    /// `http://127.0.0.1:<port>` (etcd).
    pub fn url(&self) -> String {
        match self.kind {
            StoreKind::Zookeeper => format!("127.0.0.1:{}", self.port),
            StoreKind::Etcd => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// Whether it was started and has died without the harness stopping it.
    pub fn exited(&self) -> bool {
        self.pid().is_some_and(|pid| !process_alive(pid))
    }

    /// Its client port on loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| super::host::tail(&t, n))
            .unwrap_or_default()
    }

    /// Kills the server (SIGKILL) and reaps it, waiting on a blocking thread. Its data stays.
    pub async fn stop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        if let Err(e) = tokio::task::spawn_blocking(move || process.end()).await {
            tracing::error!(server = self.kind.name(), "stopping the server: {e}");
        }
    }

    /// Kills the server and starts it again on the same ports and data, waiting until it
    /// answers.
    pub async fn restart(&mut self) -> Result<(), BackendError> {
        self.stop().await;
        self.launch().await
    }

    /// Starts the server again after [`StoreServer::stop`], on the same ports and data,
    /// waiting until it answers. Nothing happens while it runs.
    pub async fn start_again(&mut self) -> Result<(), BackendError> {
        if self.process.is_some() {
            return Ok(());
        }
        self.launch().await
    }

    /// Spawns the server under the watchdog and waits until it answers.
    async fn launch(&mut self) -> Result<(), BackendError> {
        let (program, mut args) =
            self.kind
                .locate()
                .map_err(|missing| BackendError::StoreUnavailable {
                    mode: self.kind.mode(),
                    detail: missing,
                })?;
        match self.kind {
            StoreKind::Zookeeper => args.push(self.dir.join("zoo.cfg").display().to_string()),
            StoreKind::Etcd => {
                let client = format!("http://127.0.0.1:{}", self.port);
                let peer = format!("http://127.0.0.1:{}", self.peer_port);
                args.extend(
                    [
                        "--name",
                        "gantry",
                        "--data-dir",
                        &self.dir.join("data").display().to_string(),
                        "--listen-client-urls",
                        &client,
                        "--advertise-client-urls",
                        &client,
                        "--listen-peer-urls",
                        &peer,
                        "--initial-advertise-peer-urls",
                        &peer,
                        "--initial-cluster",
                        &format!("gantry={peer}"),
                        "--unsafe-no-fsync",
                    ]
                    .map(str::to_owned),
                );
            }
        }
        self.process = Some(Watched::spawn(
            self.kind.name(),
            &program,
            &args,
            &self.dir,
            &self.log,
        )?);
        self.await_ready().await
    }

    /// Polls the server until it answers, it dies, or [`READY_TIMEOUT`] passes; stops it
    /// when it does not answer.
    async fn await_ready(&mut self) -> Result<(), BackendError> {
        let http = crate::client::http();
        let wait = ReadyWait {
            service: self.kind.name().to_owned(),
            interval: Duration::from_millis(100),
            timeout: READY_TIMEOUT,
        };
        let server = &*self;
        let answered = wait
            .until(|| async {
                if !server.pid().is_some_and(process_alive) {
                    let log = server.log_tail(30);
                    return Err(NotReady::Gone(format!("the server exited; log:\n{log}")));
                }
                match server.kind {
                    StoreKind::Zookeeper => ready::zookeeper_srvr(server.port).await,
                    StoreKind::Etcd => ready::etcd_health(&http, &server.url()).await,
                }
                .map_err(NotReady::Yet)
            })
            .await;
        match answered {
            Ok(took) => {
                tracing::debug!(server = self.kind.name(), url = %self.url(), ms = took.as_millis(), "store server ready");
                Ok(())
            }
            Err(unready) => {
                self.stop().await;
                Err(unready.into())
            }
        }
    }
}

/// Sends `signal` to the process `pid` of `service` (SIGSTOP pauses it, SIGCONT resumes it).
pub(crate) fn signal(
    service: &str,
    pid: u32,
    signal: rustix::process::Signal,
) -> Result<(), BackendError> {
    let what = format!("sending {signal:?} to {service} (pid {pid})");
    let target = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| BackendError::Io {
            what: what.clone(),
            source: std::io::Error::other("not a process id"),
        })?;
    rustix::process::kill_process(target, signal).map_err(|e| BackendError::Io {
        what,
        source: e.into(),
    })
}

/// Whether process `pid` exists and is not a zombie (Linux `/proc`).
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        if let Some(process) = self.process.take() {
            process.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::FakeEnv;

    #[test]
    fn port_races_are_told_from_other_start_failures() {
        for lost in [
            "java.net.BindException: Address already in use",
            "2026-12-02 19:33:29.446898 C | etcdmain: listen tcp 127.0.0.1:36415: bind: address already in use",
            "# Warning: Could not create server TCP listening socket 127.0.0.1:36415: bind: Address already in use",
            "Error response from daemon: driver failed programming external connectivity on endpoint porttest (640edea7): Error starting userland proxy: listen tcp4 127.0.0.1:49181: bind: address already in use",
        ] {
            assert!(lost_port_race(lost), "{lost}");
        }
        for other in [
            "java.io.IOException: No snapshot found",
            "connection refused",
            "",
        ] {
            assert!(!lost_port_race(other), "{other}");
        }
    }

    #[test]
    fn require_names_modes() {
        let env = FakeEnv(HashMap::from([("GANTRY_REQUIRE", "etcd, ZooKeeper")]));
        assert!(required(&env, SyncMode::Zookeeper.as_str()));
        assert!(required(&env, SyncMode::Etcd.as_str()));
        assert!(!required(&env, SyncMode::Http.as_str()));
        assert!(!required(&FakeEnv(HashMap::new()), SyncMode::Etcd.as_str()));
        // Modes without a store never skip.
        assert_eq!(
            skip_reason(&FakeEnv(HashMap::new()), SyncMode::Websocket),
            None
        );
        // A required mode never skips, whatever is installed.
        assert_eq!(skip_reason(&env, SyncMode::Etcd), None);
    }

    #[test]
    fn kinds_map_to_modes_and_flags() {
        assert_eq!(StoreKind::for_mode(SyncMode::Http), None);
        let zk = StoreKind::for_mode(SyncMode::Zookeeper).unwrap();
        assert_eq!(
            (zk.mode(), zk.url_flag()),
            (SyncMode::Zookeeper, "--zookeeper-url")
        );
        let etcd = StoreKind::for_mode(SyncMode::Etcd).unwrap();
        assert_eq!(
            (etcd.mode(), etcd.url_flag()),
            (SyncMode::Etcd, "--etcd-url")
        );
    }
}
