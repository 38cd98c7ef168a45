//! What a case runs on: its components, its topology and the admin's storage.

use super::*;

/// A server a case asks for with `components`, started per case beside the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    /// A Redis server (`redis-server`); its `host:port` as the gateway reaches it is
    /// `${redis.url}`.
    Redis,
}

impl Component {
    /// The name in case files, `GANTRY_REQUIRE` and messages.
    pub fn name(self) -> &'static str {
        match self {
            Component::Redis => "redis",
        }
    }
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `topology`: the admins and gateways of a case. Every gateway lists every admin URL, in
/// order (it fails over from one to the next); the admins share one database.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TopologySpec {
    /// Where the admins keep their data: one SQLite file they share (default), or a
    /// throwaway PostgreSQL cluster the harness starts (Debian `postgresql`).
    #[serde(default)]
    pub storage: Storage,
    /// How many admins (1 to 3).
    #[serde(default = "one_process")]
    pub admins: u8,
    /// How many gateways (1 to 4).
    #[serde(default = "one_process")]
    pub gateways: u8,
    /// Gateways (by index) not started before setup: a step's `start: gateway[i]` starts
    /// them, and they must converge by a full sync on their first connection.
    #[serde(default)]
    pub late: Vec<u8>,
}

fn one_process() -> u8 {
    1
}

impl Default for TopologySpec {
    fn default() -> Self {
        Self {
            storage: Storage::Sqlite,
            admins: 1,
            gateways: 1,
            late: Vec::new(),
        }
    }
}

impl TopologySpec {
    /// The most admins a case may ask for.
    pub const MAX_ADMINS: u8 = 3;
    /// The most gateways a case may ask for.
    pub const MAX_GATEWAYS: u8 = 4;

    /// Whether it is the default: one admin on SQLite, one gateway started before setup.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Where the admins keep their data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// One SQLite file in the topology's directory, shared by the admins (they watch it for
    /// each other's changes).
    #[default]
    Sqlite,
    /// A PostgreSQL cluster the harness starts on a free port (the admins notify each other
    /// with LISTEN/NOTIFY).
    Postgres,
}

impl Storage {
    /// The name in case files, `GANTRY_REQUIRE` and messages.
    pub fn name(self) -> &'static str {
        match self {
            Storage::Sqlite => "sqlite",
            Storage::Postgres => "postgres",
        }
    }
}
