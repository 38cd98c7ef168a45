//! Resource faults: a gateway starved of CPU (`starve`, ended by `feed` or the step's end);
//! the admin's database disk full (`diskFull`, ended by `diskFree`) and the refusal a step then
//! expects of its admin changes (`refused`).

use super::*;

/// A CPU starvation (`starve: { target: gateway, duty: 90%, period: 100ms }`): the harness
/// stops the process (SIGSTOP) for `duty` of every `period` and lets it run (SIGCONT) for the
/// rest, until a `feed` of it or the end of the step (host backend).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Starve {
    /// The starved gateway: `gateway` or `gateway[i]`.
    pub target: Target,
    /// The share of each period it is stopped, a percentage (`90%`; 1% to 99%).
    pub duty: Duty,
    /// One stop-and-run cycle (default 100ms; 10ms to 10s).
    #[serde(default = "hundred_ms", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "hundred_ms_text")]
    pub period: Duration,
}

impl Starve {
    /// How long the process is stopped in each period.
    pub fn stopped(&self) -> Duration {
        self.period * self.duty.0 / 100
    }

    /// How long it runs in each period.
    pub fn running(&self) -> Duration {
        self.period.saturating_sub(self.stopped())
    }
}

fn hundred_ms() -> Duration {
    Duration::from_millis(100)
}

fn hundred_ms_text() -> &'static str {
    "100ms"
}

/// A percentage written `90%` (whole percents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duty(pub u32);

impl std::fmt::Display for Duty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}%", self.0)
    }
}

impl<'de> Deserialize<'de> for Duty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.trim()
            .strip_suffix('%')
            .and_then(|n| n.trim().parse().ok())
            .map(Duty)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid duty `{text}`: a whole percentage such as `90%`"
                ))
            })
    }
}

impl JsonSchema for Duty {
    fn schema_name() -> Cow<'static, str> {
        "Duty".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A whole percentage, e.g. `90%`.",
            "type": "string",
            "pattern": r"^\s*[0-9]+\s*%\s*$",
        })
    }
}

/// The disk a `diskFull` fills: only the admin's database so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Disk {
    /// The disk under the admin's SQLite file.
    Database,
}

/// How the admin must refuse each admin change of a step (`refused:`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Refusal {
    /// The HTTP status of the refusal (400 to 599).
    pub status: u16,
    /// Text the answer's body must contain.
    pub contains: String,
}

/// `resources:` what the case's containers may use (docker backend): a memory limit per
/// role. A process over its limit is killed by the kernel's OOM killer, which the failure
/// then names (docker's `OOMKilled`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// The gateways' containers.
    #[serde(default)]
    pub gateway: Option<RoleLimits>,
    /// The admins' containers.
    #[serde(default)]
    pub admin: Option<RoleLimits>,
}

impl Resources {
    /// Whether it limits nothing.
    pub fn is_empty(&self) -> bool {
        *self == Resources::default()
    }

    /// The memory limit of the containers of `role` (`admin`, `gateway`), in bytes.
    pub fn memory_of(&self, role: &str) -> Option<u64> {
        let limits = match role {
            "gateway" => self.gateway,
            "admin" => self.admin,
            _ => None,
        };
        limits.map(|l| l.memory.0)
    }
}

/// The limits of one role's containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleLimits {
    /// Its memory, swap included (docker's `--memory`, with `--memory-swap` the same):
    /// `48MiB`, `512KiB`, `1GiB` (at least 6 MiB, docker's own minimum).
    pub memory: Bytes,
}

/// A size in bytes, written with a binary unit (`48MiB`, `512KiB`, `1GiB`) or as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(with = "String")]
pub struct Bytes(pub u64);

/// The smallest memory limit docker takes.
pub const MIN_MEMORY: u64 = 6 * 1024 * 1024;

impl std::str::FromStr for Bytes {
    type Err = String;

    fn from_str(s: &str) -> Result<Bytes, String> {
        let text = s.trim();
        let digits = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(digits);
        let scale: u64 = match unit.trim() {
            "" | "B" => 1,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            other => {
                return Err(format!(
                    "`{s}`: unknown unit `{other}` (give B, KiB, MiB or GiB, e.g. `48MiB`)"
                ));
            }
        };
        let number: u64 = number
            .parse()
            .map_err(|_| format!("`{s}` is not a size: a whole number and a unit, e.g. `48MiB`"))?;
        number
            .checked_mul(scale)
            .map(Bytes)
            .ok_or_else(|| format!("`{s}` is too large"))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Bytes(n)),
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            n if n % (1 << 30) == 0 && n > 0 => write!(f, "{}GiB", n >> 30),
            n if n % (1 << 20) == 0 && n > 0 => write!(f, "{}MiB", n >> 20),
            n if n % (1 << 10) == 0 && n > 0 => write!(f, "{}KiB", n >> 10),
            n => write!(f, "{n}B"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starvation_reads_its_duty_and_splits_its_period() {
        let s: Starve =
            serde_norway::from_str("{ target: gateway, duty: 90%, period: 200ms }").unwrap();
        assert_eq!(s.target, Target::Gateway(None));
        assert_eq!(s.duty, Duty(90));
        assert_eq!(s.stopped(), Duration::from_millis(180));
        assert_eq!(s.running(), Duration::from_millis(20));
        let default: Starve = serde_norway::from_str("{ target: gateway, duty: 50% }").unwrap();
        assert_eq!(default.period, Duration::from_millis(100));
    }

    #[test]
    fn a_disk_fault_and_a_refusal_read() {
        let d: Disk = serde_norway::from_str("database").unwrap();
        assert_eq!(d, Disk::Database);
        let r: Refusal = serde_norway::from_str("{ status: 507, contains: disk is full }").unwrap();
        assert_eq!((r.status, r.contains.as_str()), (507, "disk is full"));
        assert!(serde_norway::from_str::<Disk>("gateway").is_err());
    }

    #[test]
    fn a_duty_without_its_percent_sign_is_refused() {
        let err = serde_norway::from_str::<Starve>("{ target: gateway, duty: '90' }").unwrap_err();
        assert!(err.to_string().contains("invalid duty `90`"), "{err}");
    }

    #[test]
    fn sizes_read_binary_units_and_refuse_others() {
        let read = |s: &str| s.parse::<Bytes>().map(|b| b.0);
        assert_eq!(read("64MiB"), Ok(64 << 20));
        assert_eq!(read("512KiB"), Ok(512 << 10));
        assert_eq!(read("1GiB"), Ok(1 << 30));
        assert_eq!(read("7000000"), Ok(7_000_000));
        assert!(read("64MB").unwrap_err().contains("unknown unit `MB`"));
        assert!(read("MiB").unwrap_err().contains("is not a size"));
        assert!(read("99999999999GiB").unwrap_err().contains("too large"));
        assert_eq!(Bytes(64 << 20).to_string(), "64MiB");
        assert_eq!(Bytes(1000).to_string(), "1000B");
    }

    #[test]
    fn a_role_without_limits_has_none() {
        let resources: Resources = serde_norway::from_str("gateway: { memory: 48MiB }").unwrap();
        assert_eq!(resources.memory_of("gateway"), Some(48 << 20));
        assert_eq!(resources.memory_of("admin"), None);
        assert_eq!(resources.memory_of("upstream"), None);
        assert!(Resources::default().is_empty());
    }
}
