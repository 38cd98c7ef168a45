//! Conditions: [`ConditionData`] with its [`ParamType`] and [`Operator`] enums.

use serde::{Deserialize, Serialize};

use crate::de::null_default;

/// One predicate of a selector or rule (ShenYu `ConditionData`).
///
/// The fields stay strings on the wire so that any payload round-trips unchanged; parse them
/// with [`ParamType::from_str`] and [`Operator::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct ConditionData {
    /// Parameter type, e.g. `uri`, `header` (see [`ParamType`]).
    #[serde(deserialize_with = "null_default")]
    pub param_type: String,
    /// Operator alias, e.g. `=`, `match` (see [`Operator`]).
    #[serde(deserialize_with = "null_default")]
    pub operator: String,
    /// Header, query or cookie name; `/` for `uri` by convention.
    #[serde(deserialize_with = "null_default")]
    pub param_name: String,
    /// Value compared with the request's value (trimmed by the gateway).
    #[serde(deserialize_with = "null_default")]
    pub param_value: String,
}

impl ConditionData {
    /// A condition from its four parts.
    pub fn new(param_type: &str, operator: &str, param_name: &str, param_value: &str) -> Self {
        Self {
            param_type: param_type.to_owned(),
            operator: operator.to_owned(),
            param_name: param_name.to_owned(),
            param_value: param_value.to_owned(),
        }
    }
}

/// A name that is not one of an enum's ShenYu names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}` (expected one of: {expected})")]
pub struct UnknownName {
    /// What kind of name it was (`operator`, `param type`, ...).
    pub kind: &'static str,
    /// The name as given.
    pub name: String,
    /// The accepted names, comma-separated.
    pub expected: String,
}

macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $kind:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every variant, in ShenYu's enum order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The ShenYu wire name.
            pub fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $wire ),+ }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownName;
            fn from_str(s: &str) -> Result<Self, $crate::UnknownName> {
                match s {
                    $( $wire $(| $alias)* => Ok($name::$variant), )+
                    _ => Err($crate::UnknownName {
                        kind: $kind,
                        name: s.to_owned(),
                        expected: [$( $wire ),+].join(", "),
                    }),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(::serde::de::Error::custom)
            }
        }

        /// In the OpenAPI document: a string, one of the wire names.
        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .enum_values(Some($name::ALL.iter().map(|v| v.as_str())))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $name {}

        /// In the scenario schema: a string, one of the names `from_str` accepts (aliases too).
        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "string",
                    "enum": [$( $wire $(, $alias)* ),+],
                })
            }
        }
    };
}
pub(crate) use wire_enum;

wire_enum! {
    /// Where a condition reads its value from (ShenYu `ParamTypeEnum`).
    ParamType, "param type" {
        /// A field of the gateway's request context (ShenYu reads `ShenyuContext` by reflection).
        Post = "post",
        /// The request path (rewritten by contextPath when that plugin ran).
        Uri = "uri",
        /// The first value of a query parameter.
        Query = "query",
        /// The client host.
        Host = "host",
        /// The client IP.
        Ip = "ip",
        /// The first value of a header.
        Header = "header",
        /// A cookie value.
        Cookie = "cookie",
        /// The HTTP method, upper case.
        ReqMethod = "req_method",
        /// The Host header's host part.
        Domain = "domain",
        /// Listed by ShenYu but never extracted by its gateway.
        Path = "path",
        /// Listed by ShenYu but never extracted by its gateway.
        FormData = "form-data",
    }
}

wire_enum! {
    /// How a condition compares (ShenYu `OperatorEnum` aliases; `equals` is the SPI key of `=`).
    Operator, "operator" {
        /// AntPathMatcher on `uri`, substring elsewhere.
        Match = "match",
        /// Exact, case-sensitive equality.
        Equals = "=" | "equals",
        /// Full-string RE2 match.
        Regex = "regex",
        /// Substring.
        Contains = "contains",
        /// Before a `yyyy-MM-dd HH:mm:ss` local time.
        TimeBefore = "TimeBefore",
        /// After a `yyyy-MM-dd HH:mm:ss` local time.
        TimeAfter = "TimeAfter",
        /// Negated `match`.
        Exclude = "exclude",
        /// Prefix.
        StartsWith = "startsWith",
        /// Suffix.
        EndsWith = "endsWith",
        /// Spring PathPattern on `uri`, substring elsewhere.
        PathPattern = "pathPattern",
        /// The value is missing, empty or whitespace.
        IsBlank = "isBlank",
        /// In ShenYu's enum with `support=false`; no judge exists.
        Gt = ">",
        /// In ShenYu's enum with `support=false`; no judge exists.
        Lt = "<",
        /// Removed from ShenYu in 2.4.2.
        SpEl = "SpEL",
        /// Removed from ShenYu in 2.4.2.
        Groovy = "Groovy",
    }
}

impl Operator {
    /// Whether a current ShenYu gateway has a judge for this operator.
    pub fn is_supported(self) -> bool {
        !matches!(
            self,
            Operator::Gt | Operator::Lt | Operator::SpEl | Operator::Groovy
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_aliases_parse() {
        assert_eq!("=".parse::<Operator>().unwrap(), Operator::Equals);
        assert_eq!("equals".parse::<Operator>().unwrap(), Operator::Equals);
        assert_eq!(Operator::Equals.as_str(), "=");
        assert_eq!(
            "pathPattern".parse::<Operator>().unwrap(),
            Operator::PathPattern
        );
        let err = "pathpattern".parse::<Operator>().unwrap_err();
        assert!(
            err.to_string().contains("unknown operator `pathpattern`"),
            "{err}"
        );
        assert!(!Operator::SpEl.is_supported());
    }

    #[test]
    fn param_types_parse() {
        for p in ParamType::ALL {
            assert_eq!(p.as_str().parse::<ParamType>().unwrap(), *p);
        }
        assert!("URI".parse::<ParamType>().is_err());
    }

    #[test]
    fn gson_escaped_operator_reads_as_equals() {
        let c: ConditionData = serde_json::from_str(
            r#"{"paramType":"uri","operator":"\u003d","paramName":"/","paramValue":"/a"}"#,
        )
        .unwrap();
        assert_eq!(c.operator, "=");
        assert_eq!(c.operator.parse::<Operator>().unwrap(), Operator::Equals);
    }
}
