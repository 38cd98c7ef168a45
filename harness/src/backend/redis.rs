//! A real Redis server for the cases that ask for it (`components: [redis]`), in any sync mode:
//! Debian's `redis-server` as a child process on a free loopback port, with no persistence
//! and its working directory under the topology's directory:
//!
//! `redis-server --port N --bind 127.0.0.1 --save "" --appendonly no --dir <dir>`
//!
//! It is ready when it answers `PING` with `+PONG`. Like ZooKeeper and etcd it runs under the
//! watchdog of [`super::middleware`] (killed when the harness drops the [`RedisServer`] or
//! dies), and a missing `redis-server` skips the cases that need it ([`skip_reason`]) unless
//! `GANTRY_REQUIRE` names `redis`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::middleware::{
    PORT_ATTEMPTS, Watched, free_port, lost_port_race, process_alive, required, retire_log,
};
use super::ready::{self, NotReady, ReadyWait};
use crate::Env;
use crate::error::BackendError;
use crate::scenario::ast::Component;

/// Where Debian's `redis-server` package puts the server.
pub const REDIS_SERVER: &str = "/usr/bin/redis-server";
/// How long the server may take to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Why Redis cannot run on this machine, if it cannot.
pub fn unavailable() -> Option<String> {
    (!Path::new(REDIS_SERVER).is_file()).then(|| {
        format!(
            "redis server not available: {REDIS_SERVER} does not exist \
             (install the Debian package redis-server)"
        )
    })
}

/// Why cases asking for `component` are skipped here: its server is missing and
/// `GANTRY_REQUIRE` does not name it. `None` when they run.
pub fn skip_reason(env: &dyn Env, component: Component) -> Option<String> {
    let reason = match component {
        Component::Redis => unavailable()?,
    };
    if required(env, component.name()) {
        None
    } else {
        Some(format!(
            "{reason}; set GANTRY_REQUIRE={component} to make this a failure"
        ))
    }
}

/// A running Redis server on loopback; killed and reaped on drop.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    log: PathBuf,
    process: Option<Watched>,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port with its files under `dir` (created), and
    /// waits until it answers `PING`.
    pub async fn start(dir: &Path) -> Result<RedisServer, BackendError> {
        if let Some(why) = unavailable() {
            return Err(BackendError::ComponentUnavailable {
                component: Component::Redis,
                detail: why,
            });
        }
        std::fs::create_dir_all(dir).map_err(|source| BackendError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        let mut server = RedisServer {
            port: free_port()?,
            dir: dir.to_owned(),
            log: dir.join("redis.log"),
            process: None,
        };
        let mut attempt = 1;
        loop {
            match server.spawn().await {
                Ok(()) => return Ok(server),
                Err(e) if attempt < PORT_ATTEMPTS && lost_port_race(&server.log_tail(30)) => {
                    tracing::warn!(
                        port = server.port,
                        "port taken before redis bound it; starting again on a fresh port: {e}"
                    );
                    retire_log(&server.log, attempt);
                    server.port = free_port()?;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Starts the server again after [`RedisServer::stop`], on the same port and with the same
    /// directory (and no data: nothing is persisted), and waits until it answers `PING`.
    /// Does nothing while it runs.
    pub async fn start_again(&mut self) -> Result<(), BackendError> {
        if self.process.is_some() {
            return Ok(());
        }
        self.spawn().await
    }

    /// Spawns `redis-server` on [`RedisServer::port`] and waits until it answers.
    async fn spawn(&mut self) -> Result<(), BackendError> {
        let args = [
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            &self.dir.display().to_string(),
        ]
        .map(str::to_owned);
        let process = Watched::spawn(
            "redis",
            Path::new(REDIS_SERVER),
            &args,
            &self.dir,
            &self.log,
        )?;
        self.process = Some(process);
        self.await_ready().await
    }

    /// `127.0.0.1:<port>`: the address a host gateway reaches it at (`${redis.url}`).
    pub fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its port on loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| super::host::tail(&t, n))
            .unwrap_or_default()
    }

    /// Kills the server (SIGKILL) and reaps it, waiting on a blocking thread.
    pub async fn stop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        if let Err(e) = tokio::task::spawn_blocking(move || process.end()).await {
            tracing::error!(server = "redis", "stopping the server: {e}");
        }
    }

    /// Polls the server until it answers `PING`, it dies, or [`READY_TIMEOUT`] passes; stops
    /// it when it does not answer.
    async fn await_ready(&mut self) -> Result<(), BackendError> {
        let wait = ReadyWait {
            service: "redis".to_owned(),
            interval: Duration::from_millis(50),
            timeout: READY_TIMEOUT,
        };
        let server = &*self;
        let answered = wait
            .until(|| async {
                if !server.pid().is_some_and(process_alive) {
                    let log = server.log_tail(30);
                    return Err(NotReady::Gone(format!("the server exited; log:\n{log}")));
                }
                ready::redis_ping(server.port).await.map_err(NotReady::Yet)
            })
            .await;
        match answered {
            Ok(took) => {
                tracing::debug!(url = %self.url(), ms = took.as_millis(), "redis ready");
                Ok(())
            }
            Err(unready) => {
                self.stop().await;
                Err(unready.into())
            }
        }
    }
}

impl Drop for RedisServer {
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
    fn required_redis_never_skips_and_a_skip_says_how_to_require_it() {
        let env = FakeEnv(HashMap::from([("GANTRY_REQUIRE", "zookeeper, Redis")]));
        assert!(required(&env, "redis"));
        assert_eq!(skip_reason(&env, Component::Redis), None);
        let none = FakeEnv(HashMap::new());
        match (unavailable(), skip_reason(&none, Component::Redis)) {
            (None, skip) => assert_eq!(skip, None),
            (Some(why), skip) => assert_eq!(
                skip,
                Some(format!(
                    "{why}; set GANTRY_REQUIRE=redis to make this a failure"
                ))
            ),
        }
    }
}
