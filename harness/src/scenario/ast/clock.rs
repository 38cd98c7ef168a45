//! `clock`: a process's wall clock stepped, as NTP or an operator steps it
//! (`docs/faults.md`, "Clock skew").

use super::*;

/// `clock: { target: admin, step: -60s }`: the target's wall clock (`CLOCK_REALTIME`) jumps
/// by `step`, at once; its monotonic clock (timers, timeouts) runs on. Steps add up: a
/// second step moves the clock from where the first left it, and a restarted process keeps
/// the offset (it is the machine's clock, not the process's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClockStep {
    /// The admin or gateway whose clock steps (`admin`, `gateway`, `admin[i]`, `gateway[i]`).
    pub target: Target,
    /// How far and which way: `-60s` (back), `+1h` (ahead); whole seconds.
    pub step: SignedDuration,
}

/// A duration with a sign, written `-60s` or `+1h` (the sign is required).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedDuration {
    /// Whether it goes back.
    pub back: bool,
    /// How far.
    pub by: Duration,
}

impl SignedDuration {
    /// Its value in whole seconds (negative: back); `None` when it is not whole seconds.
    pub fn whole_seconds(self) -> Option<i64> {
        if self.by.subsec_nanos() != 0 {
            return None;
        }
        let secs = i64::try_from(self.by.as_secs()).ok()?;
        Some(if self.back { -secs } else { secs })
    }
}

impl std::fmt::Display for SignedDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.back { '-' } else { '+' };
        write!(f, "{sign}{}", humantime::format_duration(self.by))
    }
}

impl std::str::FromStr for SignedDuration {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (back, rest) = match text.split_at_checked(1) {
            Some(("-", rest)) => (true, rest),
            Some(("+", rest)) => (false, rest),
            _ => {
                return Err(format!(
                    "`{text}`: give the step's direction, `-{text}` (back) or `+{text}` (ahead)"
                ));
            }
        };
        let by = humantime::parse_duration(rest.trim())
            .map_err(|e| format!("invalid duration `{text}`: {e}"))?;
        Ok(SignedDuration { back, by })
    }
}

impl<'de> Deserialize<'de> for SignedDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for SignedDuration {
    fn schema_name() -> Cow<'static, str> {
        "SignedDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A clock step: a sign (`-` back, `+` ahead) and a duration in \
                            whole seconds, e.g. `-60s`, `+1h`.",
            "type": "string",
            "pattern": r"^\s*[-+]\s*([0-9]+(\.[0-9]+)?\s*[A-Za-zµ]+\s*)+$",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_reads_with_its_sign_in_whole_seconds() {
        let step: ClockStep = serde_norway::from_str("{ target: admin, step: -60s }").unwrap();
        assert_eq!(step.target, Target::Admin(None));
        assert_eq!(step.step.whole_seconds(), Some(-60));
        assert_eq!(step.step.to_string(), "-1m");
        let ahead: ClockStep =
            serde_norway::from_str("{ target: \"gateway[1]\", step: +1h }").unwrap();
        assert_eq!(ahead.step.whole_seconds(), Some(3600));
        let half: SignedDuration = "+1.5s".parse().unwrap();
        assert_eq!(half.whole_seconds(), None);
    }

    #[test]
    fn a_step_without_a_sign_or_with_a_bad_duration_is_refused() {
        let e = "60s".parse::<SignedDuration>().unwrap_err();
        assert!(e.contains("`-60s` (back) or `+60s` (ahead)"), "{e}");
        let e = "-sixty".parse::<SignedDuration>().unwrap_err();
        assert!(e.contains("invalid duration `-sixty`"), "{e}");
        assert!(
            serde_norway::from_str::<ClockStep>("{ target: admin, step: -1s, by: x }").is_err()
        );
    }
}
