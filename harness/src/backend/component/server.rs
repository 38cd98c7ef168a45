//! One lifecycle for every component server the host backend runs ([`HostServer`]): started
//! under the watchdog on a free loopback port (on fresh ports when another process took one
//! first), awaited until it answers, stopped, killed, started again on the same ports and
//! data, paused and resumed; killed and reaped on drop. What differs between ZooKeeper, etcd,
//! Redis and PostgreSQL is their [`ServerKind`]'s: the command, the files it needs before a
//! first start, its readiness probe and how it shuts down.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::{ServerKind, etcd, postgres, redis, zookeeper};
use crate::backend::process::{
    PORT_ATTEMPTS, Watched, free_port, lost_port_race, process_alive, retire_log, signal, tail,
};
use crate::backend::ready::{self, NotReady, ReadyWait};
use crate::error::BackendError;
use crate::scenario::ast::FaultAction;

/// A running component server on loopback; killed and reaped on drop.
#[derive(Debug)]
pub struct HostServer {
    kind: ServerKind,
    dir: PathBuf,
    port: u16,
    /// A second port: etcd's peer port (unused by the others).
    peer_port: u16,
    log: PathBuf,
    process: Option<Watched>,
    /// A directory of the server's own (PostgreSQL), removed after the server ends (field
    /// order).
    _own_dir: Option<tempfile::TempDir>,
}

impl HostServer {
    /// Starts a server of `kind` on a free loopback port with its files under `dir`
    /// (created), and waits until it answers.
    pub async fn start(
        kind: impl Into<ServerKind>,
        dir: &Path,
    ) -> Result<HostServer, BackendError> {
        HostServer::start_on(kind, dir, free_port()?).await
    }

    /// [`HostServer::start`] with the client port picked: on fresh ports when `port` turns
    /// out to be taken (the failed start's log is kept as `<kind>.log.<attempt>` in `dir`).
    /// Public only for the port-race trial (`harness/tests/it/port_race.rs`).
    #[doc(hidden)]
    pub async fn start_on(
        kind: impl Into<ServerKind>,
        dir: &Path,
        port: u16,
    ) -> Result<HostServer, BackendError> {
        let kind = kind.into();
        std::fs::create_dir_all(dir).map_err(|source| BackendError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        HostServer::launch_first(kind, dir, port, None).await
    }

    /// Makes a throwaway PostgreSQL cluster in a temporary directory of its own (kept when
    /// `keep`; see [`postgres`]), starts it on a free loopback port and waits until it accepts
    /// connections. Its [`HostServer::url`] is what the admins take as `--db`.
    pub async fn start_postgres(keep: bool) -> Result<HostServer, BackendError> {
        HostServer::start_postgres_on(keep, free_port()?).await
    }

    /// [`HostServer::start_postgres`] with the port picked: on a fresh port when `port` turns
    /// out to be taken (the failed start's log is kept as `postgres.log.<attempt>` in
    /// [`HostServer::dir`]). Public only for the port-race trial
    /// (`harness/tests/it/port_race.rs`).
    #[doc(hidden)]
    pub async fn start_postgres_on(keep: bool, port: u16) -> Result<HostServer, BackendError> {
        let dir = postgres::init(keep).await?;
        let path = dir.path().to_owned();
        HostServer::launch_first(ServerKind::Postgres, &path, port, Some(dir)).await
    }

    /// Starts the server in `dir` (which `own_dir`, when given, removes with it) on `port`,
    /// or on fresh ports when `port` was taken first.
    async fn launch_first(
        kind: ServerKind,
        dir: &Path,
        port: u16,
        own_dir: Option<tempfile::TempDir>,
    ) -> Result<HostServer, BackendError> {
        let mut server = HostServer {
            kind,
            dir: dir.to_owned(),
            port,
            peer_port: free_port()?,
            log: dir.join(format!("{}.log", kind.name())),
            process: None,
            _own_dir: own_dir,
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
                    server.stop().await;
                    retire_log(&server.log, attempt);
                    server.port = free_port()?;
                    server.peer_port = free_port()?;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// What a fresh start needs in the server's directory.
    fn prepare(&self) -> Result<(), BackendError> {
        match self.kind {
            ServerKind::Zookeeper => zookeeper::prepare(&self.dir, self.port),
            ServerKind::Etcd => etcd::prepare(&self.dir),
            ServerKind::Redis | ServerKind::Postgres => Ok(()),
        }
    }

    /// Which server it is.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The address admins and gateways take, on loopback (see [`ServerKind::address`]).
    pub fn url(&self) -> String {
        self.kind.address(&format!("127.0.0.1:{}", self.port))
    }

    /// `--zookeeper-url <url>` or `--etcd-url <url>`: how admins and gateways are pointed at
    /// a store server (nothing for the other kinds).
    pub fn store_flags(&self) -> Vec<String> {
        self.kind.store_flags(&format!("127.0.0.1:{}", self.port))
    }

    /// Its client port on loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where its files are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// Whether it was started and has died without the harness stopping it.
    pub fn exited(&self) -> bool {
        self.pid().is_some_and(|pid| !process_alive(pid))
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| tail(&t, n))
            .unwrap_or_default()
    }

    /// Ends the server (see [`HostServer::end`]) on a blocking thread. Its data stays.
    pub async fn stop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        let kind = self.kind;
        if let Err(e) = tokio::task::spawn_blocking(move || end(kind, process)).await {
            tracing::error!(server = kind.name(), "stopping the server: {e}");
        }
    }

    /// Ends the server and starts it again on the same ports and data, waiting until it
    /// answers.
    pub async fn restart(&mut self) -> Result<(), BackendError> {
        self.stop().await;
        self.launch().await
    }

    /// Starts the server again after [`HostServer::stop`], on the same ports and data,
    /// waiting until it answers. Nothing happens while it runs.
    pub async fn start_again(&mut self) -> Result<(), BackendError> {
        if self.process.is_some() {
            return Ok(());
        }
        self.launch().await
    }

    /// Ends the server, empties its data directory and starts it again on the same ports,
    /// waiting until it answers: a store that lost everything (a step's `wipe`).
    pub async fn wipe(&mut self) -> Result<(), BackendError> {
        self.stop().await;
        self.prepare()?;
        self.launch().await
    }

    /// Applies a step's fault: `stop` and `kill` end it (its port stays its own), `start`
    /// starts it again at the same address and waits until it answers, `restart` does both,
    /// `pause` and `resume` send SIGSTOP and SIGCONT.
    pub async fn fault(&mut self, action: FaultAction) -> Result<(), BackendError> {
        let name = self.kind.name();
        let pid = self.pid().ok_or_else(|| BackendError::NotRunning {
            service: name.to_owned(),
        });
        match action {
            FaultAction::Stop | FaultAction::Kill => {
                self.stop().await;
                Ok(())
            }
            FaultAction::Start => self.start_again().await,
            FaultAction::Restart => self.restart().await,
            FaultAction::Pause => signal(name, pid?, Signal::STOP),
            FaultAction::Resume => signal(name, pid?, Signal::CONT),
        }
    }

    /// Spawns the server under the watchdog and waits until it answers.
    async fn launch(&mut self) -> Result<(), BackendError> {
        let (program, args) = match self.kind {
            ServerKind::Zookeeper => zookeeper::command(&self.dir),
            ServerKind::Etcd => etcd::command(&self.dir, self.port, self.peer_port),
            ServerKind::Redis => redis::command(&self.dir, self.port),
            ServerKind::Postgres => postgres::command(&self.dir, self.port),
        }
        .map_err(|missing| self.kind.unavailable_error(missing))?;
        self.process = Some(Watched::spawn(
            self.kind.name(),
            &program,
            &args,
            &self.dir,
            &self.log,
        )?);
        self.await_ready().await
    }

    /// Polls the server until it answers, it dies, or its kind's deadline passes; stops it
    /// when it does not answer.
    async fn await_ready(&mut self) -> Result<(), BackendError> {
        let http = crate::client::http();
        let (interval, timeout) = self.kind.ready_wait();
        let wait = ReadyWait {
            service: self.kind.name().to_owned(),
            interval,
            timeout,
        };
        let server = &*self;
        let answered = wait
            .until(|| async {
                if !server.pid().is_some_and(process_alive) {
                    let log = server.log_tail(30);
                    return Err(NotReady::Gone(format!("the server exited; log:\n{log}")));
                }
                match server.kind {
                    ServerKind::Zookeeper => ready::zookeeper_srvr(server.port).await,
                    ServerKind::Etcd => ready::etcd_health(&http, &server.url()).await,
                    ServerKind::Redis => ready::redis_ping(server.port).await,
                    ServerKind::Postgres => postgres::accepts(server.port).await,
                }
                .map_err(NotReady::Yet)
            })
            .await;
        match answered {
            Ok(took) => {
                tracing::debug!(server = self.kind.name(), url = %self.url(), ms = took.as_millis(), "server ready");
                Ok(())
            }
            Err(unready) => {
                self.stop().await;
                Err(unready.into())
            }
        }
    }
}

/// Ends a server of `kind`: PostgreSQL first gets a fast shutdown (SIGINT, which releases its
/// shared memory) for a few seconds; then the watchdog kills what is left and reaps it.
/// Blocks the thread.
fn end(kind: ServerKind, process: Watched) {
    if let Some((sig, grace)) = kind.shutdown()
        && signal(kind.name(), process.pid, sig).is_ok()
    {
        let deadline = Instant::now() + grace;
        while process_alive(process.pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    process.end();
}

impl Drop for HostServer {
    fn drop(&mut self) {
        if let Some(process) = self.process.take() {
            end(self.kind, process);
        }
    }
}
