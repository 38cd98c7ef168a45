//! The convergence wait that proves a change live.

use super::*;

/// The convergence wait: one probe (`probe:`) or several (`probes:`), all of which must pass
/// together `consecutive` times in a row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawWait")]
pub struct Wait {
    /// The probes that must all pass (one or more).
    pub probes: Vec<Probe>,
    /// Whether the file lists them (`probes:`) rather than giving one (`probe:`): decides the
    /// field paths of messages.
    pub listed: bool,
    /// Passes in a row needed.
    pub consecutive: u32,
    /// Poll period (at most 50ms).
    pub interval: Duration,
    /// Hard deadline.
    pub timeout: Duration,
}

impl Wait {
    /// The field path of probe `i` below the wait (`probe` or `probes[i]`).
    pub fn probe_path(&self, i: usize) -> String {
        match self.listed {
            true => format!("probes[{i}]"),
            false => "probe".to_owned(),
        }
    }
}

/// The convergence wait as written: `probe` or `probes`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawWait {
    /// The probe that must pass.
    probe: Option<Probe>,
    /// Several probes that must all pass (instead of `probe`), e.g. both routes a change
    /// touches.
    probes: Option<Vec<Probe>>,
    /// Passes in a row needed (every probe passing is one pass).
    #[serde(default = "three")]
    #[schemars(range(min = crate::judge::spec::MIN_COUNT))]
    consecutive: u32,
    /// Poll period (at most 50ms).
    #[serde(default = "ten_ms", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "ten_ms_text")]
    interval: Duration,
    /// Hard deadline.
    #[serde(default = "ten_s", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "ten_s_text")]
    timeout: Duration,
}

impl TryFrom<RawWait> for Wait {
    type Error = String;

    fn try_from(raw: RawWait) -> Result<Self, String> {
        let (probes, listed) = match (raw.probe, raw.probes) {
            (Some(p), None) => (vec![p], false),
            (None, Some(ps)) if !ps.is_empty() => (ps, true),
            (None, Some(_)) => return Err("`probes` needs at least one probe".to_owned()),
            (None, None) => return Err("give `probe` or `probes`".to_owned()),
            (Some(_), Some(_)) => {
                return Err("give `probe` or `probes`, not both".to_owned());
            }
        };
        Ok(Wait {
            probes,
            listed,
            consecutive: raw.consecutive,
            interval: raw.interval,
            timeout: raw.timeout,
        })
    }
}

/// In the schema a wait is what `RawWait` reads, with exactly one of `probe` and `probes`.
impl JsonSchema for Wait {
    fn schema_name() -> Cow<'static, str> {
        "Wait".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = RawWait::json_schema(generator);
        schema.insert(
            "description".into(),
            "The convergence wait: `probe` or `probes` (all must pass), polled until they pass \
             `consecutive` times in a row."
                .into(),
        );
        schema.insert(
            "oneOf".into(),
            serde_json::json!([{ "required": ["probe"] }, { "required": ["probes"] }]),
        );
        schema
    }
}
