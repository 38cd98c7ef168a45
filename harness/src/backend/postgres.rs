//! A throwaway PostgreSQL cluster for the cases whose topology asks for it
//! (`topology.storage: postgres`): Debian's `postgresql` binaries
//! (`/usr/lib/postgresql/<newest>/bin`), a cluster made by `initdb` in a temporary directory
//! of its own, and `postgres` on a free loopback port with its unix socket in that directory:
//!
//! ```text
//! initdb -D <dir>/data -A trust -U gantry --no-locale -E UTF8 --no-sync
//! postgres -D <dir>/data -p N -k <dir> -c listen_addresses=127.0.0.1 -c fsync=off ...
//! ```
//!
//! PostgreSQL refuses to run as root: as root, both run as the `postgres` user
//! (`setpriv --reuid postgres`, which execs rather than forks, so the watchdog's pid is the
//! server's) in a directory owned by that user. The server runs under the watchdog of
//! [`super::middleware`]; it is ready when `pg_isready` connects. Dropping the
//! [`PostgresServer`] asks for a fast shutdown (SIGINT), then kills what is left and removes
//! the directory. A missing installation skips the cases that need it ([`skip_reason`])
//! unless `GANTRY_REQUIRE` names `postgres`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::middleware::{
    PORT_ATTEMPTS, Watched, free_port, lost_port_race, process_alive, required, retire_log,
};
use super::ready::{NotReady, ReadyWait};
use crate::Env;
use crate::error::BackendError;

/// Where Debian's `postgresql` packages put their versions.
pub const POSTGRES_LIB: &str = "/usr/lib/postgresql";
/// The user PostgreSQL runs as when the harness runs as root.
const POSTGRES_USER: &str = "postgres";
/// The superuser `initdb` makes; the admins connect as it.
const SUPERUSER: &str = "gantry";
/// How long the server may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a fast shutdown may take before the server is killed.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The newest `bin` directory under [`POSTGRES_LIB`] holding `initdb`, `postgres` and
/// `pg_isready`, or what is missing.
fn bin_dir() -> Result<PathBuf, String> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(POSTGRES_LIB)
        .map_err(|e| format!("{POSTGRES_LIB}: {e}"))?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| {
            ["initdb", "postgres", "pg_isready"]
                .iter()
                .all(|b| bin.join(b).is_file())
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        format!("no {POSTGRES_LIB}/<version>/bin with initdb, postgres and pg_isready")
    })
}

/// The uid and gid of `user` in `/etc/passwd`.
fn user_ids(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == user).then_some(())?;
        let mut ids = fields.skip(1).map(str::parse::<u32>);
        Some((ids.next()?.ok()?, ids.next()?.ok()?))
    })
}

/// Whether the harness runs as root (then PostgreSQL runs as [`POSTGRES_USER`]).
fn as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Why PostgreSQL cannot run on this machine, if it cannot.
pub fn unavailable() -> Option<String> {
    let missing = match bin_dir() {
        Err(missing) => Some(missing),
        Ok(_) if as_root() && user_ids(POSTGRES_USER).is_none() => Some(format!(
            "running as root, and there is no `{POSTGRES_USER}` user to run the server as"
        )),
        Ok(_) => None,
    }?;
    Some(format!(
        "postgresql not available: {missing} (install the Debian package postgresql)"
    ))
}

/// Why cases whose topology asks for PostgreSQL are skipped here: it is missing and
/// `GANTRY_REQUIRE` does not name `postgres`. `None` when they run.
pub fn skip_reason(env: &dyn Env) -> Option<String> {
    let reason = unavailable()?;
    (!required(env, "postgres"))
        .then(|| format!("{reason}; set GANTRY_REQUIRE=postgres to make this a failure"))
}

/// A running throwaway PostgreSQL cluster; shut down and removed on drop.
#[derive(Debug)]
pub struct PostgresServer {
    port: u16,
    log: PathBuf,
    process: Option<Watched>,
    /// Dropped after the server ends (field order).
    dir: tempfile::TempDir,
}

impl PostgresServer {
    /// Makes a cluster in a fresh temporary directory (kept when `keep`), starts it on a free
    /// loopback port and waits until it accepts connections.
    pub async fn start(keep: bool) -> Result<PostgresServer, BackendError> {
        PostgresServer::start_on(keep, free_port()?).await
    }

    /// [`PostgresServer::start`] with the port picked: on a fresh port when `port` turns out
    /// to be taken (the failed start's log is kept as `postgres.log.<attempt>` in
    /// [`PostgresServer::dir`]). Public only for the port-race trial
    /// (`harness/tests/it/port_race.rs`).
    #[doc(hidden)]
    pub async fn start_on(keep: bool, port: u16) -> Result<PostgresServer, BackendError> {
        let bin = bin_dir().map_err(BackendError::PostgresUnavailable)?;
        let io = |what: String| move |source| BackendError::Io { what, source };
        let mut dir = tempfile::Builder::new()
            .prefix("gantry-pg-")
            .tempdir()
            .map_err(io("creating a temp dir for PostgreSQL".into()))?;
        dir.disable_cleanup(keep);
        if as_root() {
            let (uid, gid) = user_ids(POSTGRES_USER).ok_or_else(|| {
                BackendError::PostgresUnavailable(unavailable().unwrap_or_default())
            })?;
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).map_err(io(format!(
                "handing {} to {POSTGRES_USER}",
                dir.path().display()
            )))?;
        }
        let data = dir.path().join("data").display().to_string();
        let initdb = [
            "-D",
            &data,
            "-A",
            "trust",
            "-U",
            SUPERUSER,
            "--no-locale",
            "-E",
            "UTF8",
            "--no-sync",
        ]
        .map(str::to_owned);
        let (program, args) = as_postgres(&bin.join("initdb"), &initdb);
        let out = tokio::task::spawn_blocking({
            let cwd = dir.path().to_owned();
            move || {
                Command::new(program)
                    .args(args)
                    .current_dir(cwd)
                    .stdin(Stdio::null())
                    .output()
            }
        })
        .await
        .map_err(|e| BackendError::Io {
            what: "running initdb".into(),
            source: std::io::Error::other(e),
        })?
        .map_err(io("running initdb".into()))?;
        if !out.status.success() {
            return Err(BackendError::PostgresUnavailable(format!(
                "initdb failed ({}): {}",
                out.status,
                super::host::tail(&String::from_utf8_lossy(&out.stderr), 20)
            )));
        }
        let mut server = PostgresServer {
            port,
            log: dir.path().join("postgres.log"),
            process: None,
            dir,
        };
        let mut attempt = 1;
        loop {
            match server.launch(&bin, &data).await {
                Ok(()) => return Ok(server),
                Err(e) if attempt < PORT_ATTEMPTS && lost_port_race(&server.log_tail(30)) => {
                    tracing::warn!(
                        port = server.port,
                        "port taken before postgres bound it; starting again on a fresh port: {e}"
                    );
                    server.stop();
                    retire_log(&server.log, attempt);
                    server.port = free_port()?;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Starts the server of the cluster in `data` on `self.port` and waits until it accepts
    /// connections.
    async fn launch(&mut self, bin: &Path, data: &str) -> Result<(), BackendError> {
        let socket_dir = self.dir.path().display().to_string();
        let server_args = [
            "-D",
            data,
            "-p",
            &self.port.to_string(),
            "-k",
            &socket_dir,
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]
        .map(str::to_owned);
        let (program, args) = as_postgres(&bin.join("postgres"), &server_args);
        let process = Watched::spawn("postgres", &program, &args, self.dir.path(), &self.log)?;
        self.process = Some(process);
        self.await_ready(&bin.join("pg_isready")).await
    }

    /// The URL the admins take as `--db`.
    pub fn url(&self) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| super::host::tail(&t, n))
            .unwrap_or_default()
    }

    /// Where its files are (a directory of its own, apart from the topology's).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Asks the server for a fast shutdown, kills what is left after [`SHUTDOWN_TIMEOUT`] and
    /// reaps it.
    fn stop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        // A fast shutdown releases the shared memory; whatever is left is killed.
        if super::middleware::signal("postgres", process.pid, rustix::process::Signal::INT).is_ok()
        {
            let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
            while process_alive(process.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        process.end();
    }

    /// Polls `pg_isready` until it connects, the server dies, or [`READY_TIMEOUT`] passes.
    async fn await_ready(&mut self, pg_isready: &Path) -> Result<(), BackendError> {
        let wait = ReadyWait {
            service: "postgres".to_owned(),
            interval: Duration::from_millis(50),
            timeout: READY_TIMEOUT,
        };
        let pid = self.process.as_ref().map(|p| p.pid);
        let port = self.port.to_string();
        let answered = wait
            .until(|| async {
                if !pid.is_some_and(process_alive) {
                    let log = self.log_tail(30);
                    return Err(NotReady::Gone(format!("the server exited; log:\n{log}")));
                }
                let status = tokio::task::spawn_blocking({
                    let (program, port) = (pg_isready.to_owned(), port.clone());
                    move || {
                        Command::new(program)
                            .args(["-q", "-h", "127.0.0.1", "-p", &port, "-U", SUPERUSER])
                            .args(["-d", "postgres"])
                            .stdin(Stdio::null())
                            .status()
                    }
                })
                .await;
                match status {
                    Ok(Ok(s)) if s.success() => Ok(()),
                    Ok(Ok(s)) => Err(NotReady::Yet(format!("pg_isready: {s}"))),
                    Ok(Err(e)) => Err(NotReady::Yet(format!("pg_isready: {e}"))),
                    Err(e) => Err(NotReady::Yet(format!("pg_isready: {e}"))),
                }
            })
            .await;
        answered.map(drop).map_err(Into::into)
    }
}

/// `program args`, run as [`POSTGRES_USER`] when the harness is root.
fn as_postgres(program: &Path, args: &[String]) -> (PathBuf, Vec<String>) {
    if !as_root() {
        return (program.to_owned(), args.to_vec());
    }
    let mut wrapped: Vec<String> = [
        "--reuid",
        POSTGRES_USER,
        "--regid",
        POSTGRES_USER,
        "--init-groups",
    ]
    .map(str::to_owned)
    .to_vec();
    wrapped.push(program.display().to_string());
    wrapped.extend(args.iter().cloned());
    (PathBuf::from("setpriv"), wrapped)
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::FakeEnv;

    #[test]
    fn a_missing_postgres_skips_unless_required() {
        let Some(why) = unavailable() else {
            assert_eq!(skip_reason(&FakeEnv(HashMap::new())), None);
            return;
        };
        let skip = skip_reason(&FakeEnv(HashMap::new())).unwrap();
        assert!(skip.starts_with(&why), "{skip}");
        assert!(skip.ends_with("set GANTRY_REQUIRE=postgres to make this a failure"));
        let required = FakeEnv(HashMap::from([("GANTRY_REQUIRE", "etcd, Postgres")]));
        assert_eq!(skip_reason(&required), None);
    }

    #[test]
    fn passwd_ids_are_read_by_name() {
        assert_eq!(user_ids("root"), Some((0, 0)));
        assert_eq!(user_ids("no-such-user-here"), None);
    }
}
