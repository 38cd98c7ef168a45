//! `wire_enum!`: a ShenYu enum carried on the wire by name, and [`UnknownName`], the error
//! for a name that is not one of them.
//!
//! The macro gives the enum its wire names (with accepted aliases), `ALL` in ShenYu's enum
//! order, `as_str`, `aliases`, `doc` (the variant's doc comment), `FromStr`, `Display`, serde by name, and the OpenAPI / JSON schema of the
//! name list when the `openapi` / `schema` features are on.

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

/// Declares a ShenYu wire enum: `Name, "kind" { Variant = "WIRE" | "alias", ... }`.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $kind:literal {
            $( $(#[doc = $vdoc:literal])* $variant:ident = $wire:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[doc = $vdoc])* $variant ),+
        }

        impl $name {
            /// Every variant, in ShenYu's enum order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The ShenYu wire name.
            pub fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $wire ),+ }
            }

            /// The other names `from_str` accepts for it.
            pub fn aliases(self) -> &'static [&'static str] {
                match self { $( $name::$variant => &[$( $alias ),*] ),+ }
            }

            /// Its doc comment (the lines joined), for generated reference tables.
            pub fn doc(self) -> &'static str {
                match self { $( $name::$variant => concat!("" $(, $vdoc)*).trim_ascii() ),+ }
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
