//! Checks: probes and the judge kinds, each judged by its module under `judge/`.

use super::*;
pub use crate::judge::CheckKind;
pub use crate::judge::churn::ChurnSpec;
use crate::judge::probe::ProbeCheck;
use crate::judge::{JUDGE_KEYS, RawCheck};

/// A request and what its answer must be.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probe {
    /// The request.
    pub request: RequestSpec,
    /// The expectation.
    pub expect: Expect,
}

/// A named check: one kind of judgement (docs/scenarios.md, "Checks"). In a file a check is
/// `name` plus either `request` + `expect` (a probe) or exactly one judge key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawCheck")]
pub struct Check {
    /// What it proves.
    pub name: String,
    /// What is judged.
    pub kind: CheckKind,
}

/// In the schema a check is what `RawCheck` reads, plus what `TryFrom<RawCheck>` enforces:
/// exactly one of the probe (`request` + `expect`, `repeat` only with them) or a judge key.
impl JsonSchema for Check {
    fn schema_name() -> Cow<'static, str> {
        "Check".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = RawCheck::json_schema(generator);
        schema.insert(
            "description".into(),
            "A named check: `name` plus either a probe (`request` + `expect`, optionally \
             `repeat`) or exactly one judge key."
                .into(),
        );
        one_kind_of_check(&mut schema);
        schema
    }
}

fn one_kind_of_check(schema: &mut Schema) {
    let mut kinds = vec![json_schema!({ "required": ["request", "expect"] })];
    kinds.extend(JUDGE_KEYS.iter().map(|k| json_schema!({ "required": [k] })));
    schema.insert(
        "oneOf".into(),
        serde_json::to_value(kinds).expect("schemas serialise"),
    );
    schema.insert(
        "dependencies".into(),
        serde_json::json!({
            "request": ["expect"],
            "expect": ["request"],
            "repeat": ["request"],
            "attempts": ["request"],
        }),
    );
}

impl TryFrom<RawCheck> for Check {
    type Error = String;

    fn try_from(mut raw: RawCheck) -> Result<Self, String> {
        let mut kinds = raw.judges();
        let judge_keys = JUDGE_KEYS.join(", ");
        let probe = match (raw.request, raw.expect) {
            (Some(request), Some(expect)) => Some(ProbeCheck {
                request,
                expect,
                repeat: raw.repeat.unwrap_or(1),
                attempts: raw.attempts.unwrap_or_default(),
            }),
            (None, None) if raw.repeat.is_none() && raw.attempts.is_none() => None,
            (Some(_), None) => {
                return Err(format!("check `{}`: `request` needs `expect`", raw.name));
            }
            _ => {
                return Err(format!(
                    "check `{}`: `expect`, `repeat` and `attempts` go with a `request`",
                    raw.name
                ));
            }
        };
        kinds.extend(probe.map(CheckKind::Probe));
        match kinds.len() {
            1 => Ok(Check {
                name: raw.name,
                kind: kinds.remove(0),
            }),
            0 => Err(format!(
                "check `{}` judges nothing: give `request` + `expect`, or one of {judge_keys}",
                raw.name
            )),
            _ => Err(format!(
                "check `{}` has several kinds ({}): one check judges one thing",
                raw.name,
                kinds
                    .iter()
                    .map(CheckKind::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}
