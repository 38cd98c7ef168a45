//! Apache ZooKeeper for the zookeeper sync mode, from Debian's `zookeeper` package:
//!
//! `java <JVM_OPTIONS> -cp /usr/share/java/zookeeper.jar[:slf4j-simple.jar]
//! org.apache.zookeeper.server.ZooKeeperServerMain <dir>/zoo.cfg`
//!
//! with a fresh `<dir>/data` and a `zoo.cfg` on the client port (loopback only,
//! `forceSync=no`); ready when the `srvr` four-letter word answers with a `Mode:` line.

use std::path::{Path, PathBuf};

use super::data::fresh_data;
use crate::backend::process::find_on_path;
use crate::error::BackendError;

/// Where Debian's `zookeeper` package puts the server jar (its manifest names the classpath).
pub(crate) const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// Debian's SLF4J binding that makes ZooKeeper log to stderr (optional).
pub(crate) const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// The JVM options of every ZooKeeper gantry starts, on the host and in its image: a small
/// heap, and less startup CPU for a server that lives one case (the C1 compiler only, the
/// serial collector, no perf-data file): 0.35–0.49 s of CPU to ready instead of 0.46–0.65 s.
pub(crate) const JVM_OPTIONS: &[&str] = &[
    "-Xmx256m",
    "-XX:-UsePerfData",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
];

/// The program and leading arguments that run the server, or what is missing.
pub(super) fn locate() -> Result<(PathBuf, Vec<String>), String> {
    let java = find_on_path("java").ok_or("`java` is not on PATH")?;
    if !Path::new(ZOOKEEPER_JAR).is_file() {
        return Err(format!("{ZOOKEEPER_JAR} does not exist"));
    }
    let mut classpath = ZOOKEEPER_JAR.to_owned();
    if Path::new(SLF4J_SIMPLE_JAR).is_file() {
        classpath = format!("{classpath}:{SLF4J_SIMPLE_JAR}");
    }
    let mut args: Vec<String> = JVM_OPTIONS.iter().map(|o| (*o).to_owned()).collect();
    args.extend([
        "-cp".to_owned(),
        classpath,
        "org.apache.zookeeper.server.ZooKeeperServerMain".to_owned(),
    ]);
    Ok((java, args))
}

/// The command that runs the server of `dir` (its `zoo.cfg`), or what is missing.
pub(super) fn command(dir: &Path) -> Result<(PathBuf, Vec<String>), String> {
    let (java, mut args) = locate()?;
    args.push(dir.join("zoo.cfg").display().to_string());
    Ok((java, args))
}

/// An empty `<dir>/data` and a `<dir>/zoo.cfg` on `port`.
pub(super) fn prepare(dir: &Path, port: u16) -> Result<(), BackendError> {
    let data = fresh_data(dir)?;
    let cfg = format!(
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\n\
         clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
         4lw.commands.whitelist=srvr,ruok,cons\nforceSync=no\n",
        data.display(),
    );
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, cfg).map_err(|source| BackendError::Io {
        what: format!("writing {}", path.display()),
        source,
    })
}
