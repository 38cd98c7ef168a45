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
//! server's) in a directory owned by that user ([`HostServer::start_postgres`] starts it). It is ready when `pg_isready` connects.
//! Ending it asks for a fast shutdown (SIGINT) first; dropping it also removes the directory
//! (unless kept). A missing installation skips the cases that need it ([`skip_reason`])
//! unless `GANTRY_REQUIRE` names `postgres`.
//!
//! [`HostServer::start_postgres`]: super::HostServer::start_postgres

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::required;
use crate::Env;
use crate::backend::process::tail;
use crate::error::BackendError;

/// Where Debian's `postgresql` packages put their versions.
pub(crate) const POSTGRES_LIB: &str = "/usr/lib/postgresql";
/// The user PostgreSQL runs as when the harness runs as root.
const POSTGRES_USER: &str = "postgres";
/// The superuser `initdb` makes; the admins connect as it.
pub(crate) const SUPERUSER: &str = "gantry";

/// The newest `bin` directory under [`POSTGRES_LIB`] holding `initdb`, `postgres` and
/// `pg_isready`, or what is missing.
pub(crate) fn bin_dir() -> Result<PathBuf, String> {
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
pub(crate) fn unavailable() -> Option<String> {
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

/// Makes a cluster with `initdb` in a fresh temporary directory (kept when `keep`), owned by
/// the user the server runs as.
pub(super) async fn init(keep: bool) -> Result<tempfile::TempDir, BackendError> {
    let bin = bin_dir().map_err(BackendError::PostgresUnavailable)?;
    let io = |what: String| move |source| BackendError::Io { what, source };
    let mut dir = tempfile::Builder::new()
        .prefix("gantry-pg-")
        .tempdir()
        .map_err(io("creating a temp dir for PostgreSQL".into()))?;
    dir.disable_cleanup(keep);
    if as_root() {
        let (uid, gid) = user_ids(POSTGRES_USER)
            .ok_or_else(|| BackendError::PostgresUnavailable(unavailable().unwrap_or_default()))?;
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
            tail(&String::from_utf8_lossy(&out.stderr), 20)
        )));
    }
    Ok(dir)
}

/// `postgres://gantry@<host_port>/postgres`: the URL admins take as `--db`.
pub(crate) fn address(host_port: &str) -> String {
    format!("postgres://{SUPERUSER}@{host_port}/postgres")
}

/// The command that runs the cluster made in `dir` on `port`, its socket in `dir`, or what is
/// missing.
pub(super) fn command(dir: &Path, port: u16) -> Result<(PathBuf, Vec<String>), String> {
    let bin = bin_dir()?;
    let data = dir.join("data").display().to_string();
    let socket_dir = dir.display().to_string();
    let server_args = [
        "-D",
        &data,
        "-p",
        &port.to_string(),
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
    Ok(as_postgres(&bin.join("postgres"), &server_args))
}

/// Whether the server on `port` accepts connections (`pg_isready`).
pub(super) async fn accepts(port: u16) -> Result<(), String> {
    let pg_isready = bin_dir()?.join("pg_isready");
    let status = tokio::task::spawn_blocking(move || {
        Command::new(pg_isready)
            .args([
                "-q",
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                SUPERUSER,
            ])
            .args(["-d", "postgres"])
            .stdin(Stdio::null())
            .status()
    })
    .await;
    match status {
        Ok(Ok(s)) if s.success() => Ok(()),
        Ok(Ok(s)) => Err(format!("pg_isready: {s}")),
        Ok(Err(e)) => Err(format!("pg_isready: {e}")),
        Err(e) => Err(format!("pg_isready: {e}")),
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::options::FakeEnv;

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
