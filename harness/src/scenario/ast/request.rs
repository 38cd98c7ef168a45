//! Requests sent to the gateway, their expectations, and teardown probes.

use super::*;

/// Teardown extras.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Teardown {
    /// Probes run after the deletes have converged.
    #[serde(default)]
    pub probes: Vec<Probe>,
}

fn get() -> String {
    "GET".to_owned()
}

/// A request sent to the gateway.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestSpec {
    /// HTTP method.
    #[serde(default = "get")]
    pub method: String,
    /// Path, possibly with a query string.
    pub path: String,
    /// Headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Query parameters appended to the path.
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Body.
    #[serde(default)]
    pub body: Option<String>,
}

/// Whether an upstream answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Route {
    /// An upstream answered.
    Present,
    /// The gateway answered -107 or -102.
    Absent,
}

/// What an answer must be; every key given must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// HTTP status.
    pub status: Option<u16>,
    /// The upstream that answered: a name, one of several (`[alpha, beta]`), or any but
    /// some (`{ not: alpha }`, `{ not: [alpha, beta] }`); an upstream must answer.
    pub upstream: Option<UpstreamExpect>,
    /// Route present or absent.
    pub route: Option<Route>,
    /// Gateway error code.
    pub code: Option<i32>,
    /// A fragment of the body.
    pub body_contains: Option<String>,
    /// A text the body must not contain.
    pub body_not_contains: Option<String>,
    /// A regular expression (the `regex` crate's syntax) that must match the body somewhere:
    /// anchor it (`^...$`) to match all of it, e.g. `^\{"code":-10[27],`.
    pub body_matches: Option<String>,
    /// Response headers the answer must carry, with these values (names case-insensitive),
    /// e.g. `x-gantry-upstream`. The ids in `x-gantry-selector-id` and `x-gantry-rule-id`
    /// are the admin's: judge them by name with `selector` and `rule`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Response headers whose values must match these regular expressions (names
    /// case-insensitive; a missing header is a miss), e.g. `x-request-id: "^[0-9a-f-]{36}$"`.
    #[serde(default)]
    pub headers_match: BTreeMap<String, String>,
    /// JSON values the body must hold, by path (`$`, `$.a.b`, `$.list[0].name`, `$['odd key']`):
    /// each path must exist and its value equal the given one.
    #[serde(default)]
    pub json: BTreeMap<String, serde_json::Value>,
    /// What the upstream received.
    pub received: Option<Received>,
    /// The setup selector that matched (by name; the gateway's `x-gantry-selector-id`).
    pub selector: Option<String>,
    /// The setup rule that matched (by name, unique in the scenario or of `selector`; the
    /// gateway's `x-gantry-rule-id`).
    pub rule: Option<String>,
}

impl Expect {
    /// Whether the expectation constrains anything (an empty one accepts every answer).
    pub fn is_empty(&self) -> bool {
        *self == Expect::default()
    }
}

/// `expect.upstream`: which upstreams may have answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamExpect {
    /// One of these (`alpha` or `[alpha, beta]`).
    AnyOf(Vec<String>),
    /// Any upstream but these (`{ not: alpha }` or `{ not: [alpha, beta] }`).
    NoneOf(Vec<String>),
}

impl UpstreamExpect {
    /// The upstream names it mentions.
    pub fn names(&self) -> &[String] {
        match self {
            UpstreamExpect::AnyOf(names) | UpstreamExpect::NoneOf(names) => names,
        }
    }

    /// Whether an answer from `got` (`None`: no upstream answered) meets it.
    pub fn accepts(&self, got: Option<&str>) -> bool {
        let Some(got) = got else { return false };
        match self {
            UpstreamExpect::AnyOf(names) => names.iter().any(|n| n == got),
            UpstreamExpect::NoneOf(names) => names.iter().all(|n| n != got),
        }
    }
}

impl From<&str> for UpstreamExpect {
    fn from(name: &str) -> Self {
        UpstreamExpect::AnyOf(vec![name.to_owned()])
    }
}

impl std::fmt::Display for UpstreamExpect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamExpect::AnyOf(names) => f.write_str(&names.join(" or ")),
            UpstreamExpect::NoneOf(names) => write!(f, "any upstream but {}", names.join(", ")),
        }
    }
}

/// One name or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
enum OneOrMany {
    /// One name.
    One(String),
    /// Several names.
    Many(Vec<String>),
}

impl From<OneOrMany> for Vec<String> {
    fn from(names: OneOrMany) -> Self {
        match names {
            OneOrMany::One(name) => vec![name],
            OneOrMany::Many(names) => names,
        }
    }
}

/// The map form of `expect.upstream`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NotUpstream {
    /// The upstreams that must not answer.
    not: OneOrMany,
}

impl<'de> Deserialize<'de> for UpstreamExpect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UpstreamExpect;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an upstream name, a list of names, or `{ not: name }`")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<UpstreamExpect, E> {
                Ok(UpstreamExpect::from(name))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<UpstreamExpect, A::Error> {
                let names =
                    Vec::<String>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(UpstreamExpect::AnyOf(names))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<UpstreamExpect, A::Error> {
                let not =
                    NotUpstream::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(UpstreamExpect::NoneOf(not.not.into()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl JsonSchema for UpstreamExpect {
    fn schema_name() -> Cow<'static, str> {
        "UpstreamExpect".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let not = generator.subschema_for::<NotUpstream>();
        json_schema!({
            "description": "The upstream that answered: a name, a list of names (one of them), \
                            or `{ not: name-or-list }` (any upstream but those).",
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                not,
            ],
        })
    }
}

/// What the upstream must have received.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Received {
    /// Method.
    pub method: Option<String>,
    /// Raw path.
    pub path: Option<String>,
    /// Raw query string.
    pub query: Option<String>,
    /// Headers (names case-insensitive).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}
