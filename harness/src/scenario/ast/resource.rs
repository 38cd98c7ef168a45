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
}
