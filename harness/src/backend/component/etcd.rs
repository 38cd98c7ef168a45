//! etcd for the etcd sync mode, from Debian's `etcd-server` package:
//!
//! `etcd --name gantry --data-dir <dir>/data --listen-client-urls http://127.0.0.1:<port> ...
//! --unsafe-no-fsync`
//!
//! with a fresh data directory and a peer port of its own; ready when `GET /health` answers
//! `{"health":"true"}`.

use std::path::{Path, PathBuf};

use super::data::fresh_data;
use crate::backend::process::find_on_path;
use crate::error::BackendError;

/// The `etcd` program, or what is missing.
pub(super) fn locate() -> Result<PathBuf, String> {
    find_on_path("etcd").ok_or_else(|| "`etcd` is not on PATH".to_owned())
}

/// The command that runs the server of `dir` on the client `port` and `peer_port`, or what is
/// missing.
pub(super) fn command(
    dir: &Path,
    port: u16,
    peer_port: u16,
) -> Result<(PathBuf, Vec<String>), String> {
    let etcd = locate()?;
    let client = format!("http://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let args = [
        "--name",
        "gantry",
        "--data-dir",
        &dir.join("data").display().to_string(),
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
    .map(str::to_owned);
    Ok((etcd, args.to_vec()))
}

/// An empty `<dir>/data`.
pub(super) fn prepare(dir: &Path) -> Result<(), BackendError> {
    fresh_data(dir).map(drop)
}
