//! The convergence wait that proves a change live.

use super::*;

/// The convergence wait: one probe (`probe:`) or several (`probes:`), all of which must pass
/// together `consecutive` times in a row; or a split (`distribution:`), whose every named
/// upstream must answer within a number of requests, `consecutive` times in a row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawWait")]
pub struct Wait {
    /// The probes that must all pass (one or more). A `distribution` wait has one: its
    /// request, expecting one of its upstreams.
    pub probes: Vec<Probe>,
    /// A `distribution` wait's split (its probe is `probes[0]`).
    pub distribution: Option<DistributionWait>,
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
    /// The field path of probe `i` below the wait (`probe`, `probes[i]` or `distribution`).
    pub fn probe_path(&self, i: usize) -> String {
        match (self.listed, &self.distribution) {
            (true, _) => format!("probes[{i}]"),
            (false, Some(_)) => "distribution".to_owned(),
            (false, None) => "probe".to_owned(),
        }
    }
}

/// `distribution:` a wait until a split is live: one pass sends `request` up to `within`
/// times, and passes when every upstream of `upstreams` has answered at least once (it stops
/// there); an answer from another upstream, or none, fails the pass.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DistributionWait {
    /// The request sent.
    pub request: RequestSpec,
    /// The upstreams of the split: each must answer at least once in a pass, and no other
    /// may answer.
    pub upstreams: Vec<String>,
    /// The most requests one pass sends (default 100).
    #[serde(default = "hundred")]
    pub within: u32,
}

fn hundred() -> u32 {
    100
}

impl DistributionWait {
    /// The probe of one request: answered by one of the upstreams.
    fn probe(&self) -> Probe {
        Probe {
            request: self.request.clone(),
            expect: Expect {
                upstream: Some(UpstreamExpect::AnyOf(self.upstreams.clone())),
                ..Expect::default()
            },
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
    /// A split that must be live (instead of `probe`): every named upstream answers within
    /// `within` requests.
    distribution: Option<DistributionWait>,
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
        let (probes, listed) = match (raw.probe, raw.probes, &raw.distribution) {
            (Some(p), None, None) => (vec![p], false),
            (None, Some(ps), None) if !ps.is_empty() => (ps, true),
            (None, Some(_), None) => return Err("`probes` needs at least one probe".to_owned()),
            (None, None, Some(d)) => (vec![d.probe()], false),
            (None, None, None) => {
                return Err("give `probe`, `probes` or `distribution`".to_owned());
            }
            (Some(_), Some(_), _) => {
                return Err("give `probe` or `probes`, not both".to_owned());
            }
            (_, _, Some(_)) => {
                return Err("give `distribution` alone, without `probe` or `probes`".to_owned());
            }
        };
        Ok(Wait {
            probes,
            distribution: raw.distribution,
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
            "The convergence wait: `probe` or `probes` (all must pass), or `distribution` (every \
             upstream of a split answers), polled until it passes `consecutive` times in a row."
                .into(),
        );
        schema.insert(
            "oneOf".into(),
            serde_json::json!([
                { "required": ["probe"] },
                { "required": ["probes"] },
                { "required": ["distribution"] }
            ]),
        );
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_distribution_wait_is_one_probe_expecting_one_of_its_upstreams() {
        let yaml = "distribution: { request: { path: /s }, upstreams: [alpha, beta] }\n";
        let w: Wait = serde_norway::from_str(yaml).unwrap();
        let split = w.distribution.as_ref().unwrap();
        assert_eq!((split.within, w.consecutive), (100, 3));
        assert_eq!(w.probes.len(), 1);
        assert_eq!(w.probes[0].request.path, "/s");
        assert_eq!(
            w.probes[0].expect.upstream,
            Some(UpstreamExpect::AnyOf(vec!["alpha".into(), "beta".into()]))
        );
        assert_eq!(w.probe_path(0), "distribution");
        let both = "probe: { request: { path: /s }, expect: { status: 200 } }\n".to_owned() + yaml;
        let e = serde_norway::from_str::<Wait>(&both)
            .unwrap_err()
            .to_string();
        assert!(e.contains("give `distribution` alone"), "{e}");
    }
}
