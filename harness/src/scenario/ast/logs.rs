//! `expectLogs:`: the WARN and ERROR lines an admin or gateway may log during a case. Every
//! other WARN or ERROR line fails the case (docs/scenarios.md, "Log assertions").

use super::*;

/// One declared WARN or ERROR line: which service logs it, at which level, and a piece of
/// its text.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectLog {
    /// `admin` or `gateway` (any of them in a topology of several), or `admin[i]`,
    /// `gateway[i]` (that one only).
    pub service: LogService,
    /// `warn` or `error`.
    pub level: LogLevel,
    /// Text the line holds (its level, target, message and fields, without the timestamp).
    pub contains: String,
    /// The line may not come (a fault whose effect depends on timing or on the sync mode):
    /// without it, a declaration that matched no line fails the case.
    #[serde(default)]
    pub optional: bool,
    /// The sync modes it applies in (default: every mode of the case): in another mode the
    /// line is undeclared, and a declaration not `optional` is not looked for.
    #[serde(default)]
    pub modes: Vec<SyncMode>,
    /// The run modes it applies under (default: every run, with a run mode or without): a
    /// line that only a run mode brings, e.g. a reconnect when `slice` stretches a paused
    /// step past the gateway's 10 s silence bound. Under another (or none) the declaration
    /// is dropped.
    #[serde(default)]
    pub run_modes: Vec<super::run_modes::RunModeName>,
}

impl ExpectLog {
    /// Whether it applies to a case run in `mode`.
    pub fn applies_in(&self, mode: SyncMode) -> bool {
        self.modes.is_empty() || self.modes.contains(&mode)
    }

    /// Whether it applies to a case run under `run_mode`.
    pub fn applies_under(&self, run_mode: Option<crate::RunMode>) -> bool {
        self.run_modes.is_empty()
            || run_mode.is_some_and(|m| self.run_modes.iter().any(|n| n.names(m)))
    }
}

/// The level of a declared line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LogLevel {
    /// `WARN`.
    Warn,
    /// `ERROR`.
    Error,
}

impl LogLevel {
    /// The level as tracing writes it (`WARN`, `ERROR`).
    pub fn token(self) -> &'static str {
        match self {
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
        }
    }
}

/// An admin or a gateway of the case's topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogRole {
    /// An admin.
    Admin,
    /// A gateway.
    Gateway,
}

impl LogRole {
    /// `admin` or `gateway`.
    pub fn name(self) -> &'static str {
        match self {
            LogRole::Admin => "admin",
            LogRole::Gateway => "gateway",
        }
    }
}

/// Which services a declaration covers: every one of a role, or the one at an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogService {
    /// Admin or gateway.
    pub role: LogRole,
    /// `None`: every service of the role.
    pub index: Option<u8>,
}

impl LogService {
    /// Whether it covers service `index` of `role`.
    pub fn covers(self, role: LogRole, index: usize) -> bool {
        self.role == role && self.index.is_none_or(|i| usize::from(i) == index)
    }
}

impl std::fmt::Display for LogService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            None => f.write_str(self.role.name()),
            Some(i) => write!(f, "{}[{i}]", self.role.name()),
        }
    }
}

impl std::str::FromStr for LogService {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let wrong =
            || format!("unknown service `{s}`: expected admin, gateway, admin[i] or gateway[i]");
        let (role, index) = match s.split_once('[') {
            None => (s, None),
            Some((role, rest)) => {
                let i = rest.strip_suffix(']').ok_or_else(wrong)?;
                (role, Some(i.parse::<u8>().map_err(|_| wrong())?))
            }
        };
        let role = match role {
            "admin" => LogRole::Admin,
            "gateway" => LogRole::Gateway,
            _ => return Err(wrong()),
        };
        Ok(LogService { role, index })
    }
}

impl<'de> Deserialize<'de> for LogService {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for LogService {
    fn schema_name() -> Cow<'static, str> {
        "LogService".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": r"^(admin|gateway)(\[[0-9]+\])?$",
            "description": "`admin` or `gateway` (every one of them), or `admin[i]`, `gateway[i]`."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_are_read_with_or_without_an_index() {
        let gw: LogService = "gateway".parse().unwrap();
        assert!(gw.covers(LogRole::Gateway, 0) && gw.covers(LogRole::Gateway, 2));
        let second: LogService = "admin[1]".parse().unwrap();
        assert!(second.covers(LogRole::Admin, 1) && !second.covers(LogRole::Admin, 0));
        assert_eq!(second.to_string(), "admin[1]");
        for bad in ["store", "gateway[", "gateway[x]", "admin[1"] {
            let e = bad.parse::<LogService>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
