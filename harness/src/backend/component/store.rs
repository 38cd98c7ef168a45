//! The config store a sync mode needs ([`StoreKind`]: ZooKeeper or etcd), and whether a mode's
//! or a component's cases run on this machine ([`skip_reason`], [`required`]).

use model::SyncMode;

use super::{etcd, zookeeper};
use crate::Env;

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

    /// The Debian packages that provide the server.
    fn packages(self) -> &'static str {
        match self {
            StoreKind::Zookeeper => "zookeeper (with a JRE)",
            StoreKind::Etcd => "etcd-server",
        }
    }

    /// Why the server cannot run on this machine, if it cannot.
    pub fn unavailable(self) -> Option<String> {
        let missing = match self {
            StoreKind::Zookeeper => zookeeper::locate().err(),
            StoreKind::Etcd => etcd::locate().err(),
        }?;
        Some(format!(
            "{} server not available: {missing} (install the Debian package {})",
            self.name(),
            self.packages()
        ))
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::options::FakeEnv;

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
