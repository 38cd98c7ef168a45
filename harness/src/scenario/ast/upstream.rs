//! The scenario's upstreams: echo servers or ones that behave as told.

use super::*;

/// One entry of `upstreams`: `alpha` (an echo upstream) or `{ name: slow, behave: [...] }`.
/// Read by hand rather than as an untagged enum, so that a wrong key in the map is reported
/// as such.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpstreamDecl {
    /// The upstream's name (`x-gantry-upstream`).
    pub name: String,
    /// How it answers besides echoing (empty: an echo upstream).
    pub behave: Vec<Behaviour>,
}

impl UpstreamDecl {
    /// An echo upstream.
    pub fn echo(name: &str) -> UpstreamDecl {
        UpstreamDecl {
            name: name.to_owned(),
            behave: Vec::new(),
        }
    }
}

/// The map form of an `upstreams` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UpstreamWithBehaviour {
    /// The upstream's name (`x-gantry-upstream`).
    name: String,
    /// How it answers: the first entry whose `path` and `method` match a request decides; a
    /// request no entry matches gets the echo.
    #[serde(default)]
    behave: Vec<Behaviour>,
}

impl<'de> Deserialize<'de> for UpstreamDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UpstreamDecl;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an upstream name or `{ name, behave }`")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<UpstreamDecl, E> {
                Ok(UpstreamDecl::echo(name))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<UpstreamDecl, A::Error> {
                let u = UpstreamWithBehaviour::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(UpstreamDecl {
                    name: u.name,
                    behave: u.behave,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl JsonSchema for UpstreamDecl {
    fn schema_name() -> Cow<'static, str> {
        "UpstreamDecl".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let object = generator.subschema_for::<UpstreamWithBehaviour>();
        json_schema!({
            "description": "An upstream: a name (an echo upstream) or `{ name, behave }`.",
            "anyOf": [{ "type": "string" }, object],
        })
    }
}
