//! Selectors: [`SelectorData`], [`MatchMode`] and [`SelectorType`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::condition::ConditionData;
use crate::de::{null_default, null_true, r#true};

/// How a list of conditions combines (ShenYu `MatchModeEnum`; on the wire an int).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MatchMode {
    /// `0`: every condition must hold.
    #[default]
    And,
    /// `1`: any condition may hold.
    Or,
    /// Any other code, kept as sent. ShenYu's gateway evaluates it as `and`
    /// (`MatchModeEnum.getMatchModeByCode`) but, when several selectors or rules match,
    /// scores it 0 like `or` (only code 0 scores its condition count).
    Other(i32),
}

impl MatchMode {
    /// The wire code.
    pub fn code(self) -> i32 {
        match self {
            MatchMode::And => 0,
            MatchMode::Or => 1,
            MatchMode::Other(code) => code,
        }
    }

    /// The mode for a wire code; codes beyond `i32` (never a ShenYu `Integer`) saturate.
    pub fn from_code(code: i64) -> Self {
        match code {
            0 => MatchMode::And,
            1 => MatchMode::Or,
            other => MatchMode::Other(other.clamp(i32::MIN.into(), i32::MAX.into()) as i32),
        }
    }

    /// Whether every condition must hold (`and` and unknown codes) rather than any (`or`).
    pub fn is_all(self) -> bool {
        !matches!(self, MatchMode::Or)
    }

    /// ShenYu's display name (`and` / `or`; `and` for unknown codes).
    pub fn name(self) -> &'static str {
        match self {
            MatchMode::And | MatchMode::Other(_) => "and",
            MatchMode::Or => "or",
        }
    }
}

impl Serialize for MatchMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(self.code())
    }
}

impl<'de> Deserialize<'de> for MatchMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(MatchMode::from_code(
            Option::<i64>::deserialize(d)?.unwrap_or(0),
        ))
    }
}

/// In the OpenAPI document: the integer code, `0` (and) or `1` (or).
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for MatchMode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .enum_values(Some([0, 1]))
            .description(Some("`0` and, `1` or"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for MatchMode {}

/// Whether a selector always matches or evaluates its conditions (ShenYu `SelectorTypeEnum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SelectorType {
    /// `0`: full flow, matches every request; its rules are not evaluated.
    FullFlow,
    /// `1`: custom flow, evaluates its conditions.
    #[default]
    Custom,
}

impl SelectorType {
    /// The wire code.
    pub fn code(self) -> i32 {
        match self {
            SelectorType::FullFlow => 0,
            SelectorType::Custom => 1,
        }
    }

    /// The type for a wire code; anything but `0` is custom.
    pub fn from_code(code: i64) -> Self {
        if code == 0 {
            SelectorType::FullFlow
        } else {
            SelectorType::Custom
        }
    }

    /// ShenYu's display name (`full` / `custom`).
    pub fn name(self) -> &'static str {
        match self {
            SelectorType::FullFlow => "full",
            SelectorType::Custom => "custom",
        }
    }
}

impl Serialize for SelectorType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(self.code())
    }
}

impl<'de> Deserialize<'de> for SelectorType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SelectorType::from_code(
            Option::<i64>::deserialize(d)?.unwrap_or(1),
        ))
    }
}

/// In the OpenAPI document: the integer code, `0` (full flow) or `1` (custom).
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for SelectorType {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .enum_values(Some([0, 1]))
            .description(Some("`0` full flow, `1` custom"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for SelectorType {}

/// A selector as it is synced to gateways (ShenYu `SelectorData`). Note `logged` (two g's),
/// unlike [`crate::RuleData::loged`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct SelectorData {
    /// Selector id: a digit string (ShenYu splits rule paths on `-`).
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    /// Display name.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// Whether the selector takes part in matching.
    #[serde(deserialize_with = "null_default")]
    pub enabled: bool,
    /// Ordering key, ascending.
    #[serde(deserialize_with = "null_default")]
    pub sort: i32,
    /// Namespace id (ShenYu ≥2.7.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
    /// Owning plugin id.
    #[serde(deserialize_with = "null_default")]
    pub plugin_id: String,
    /// Owning plugin name; gateways group selectors by it.
    #[serde(deserialize_with = "null_default")]
    pub plugin_name: String,
    /// `0` and, `1` or.
    pub match_mode: MatchMode,
    /// `0` full flow, `1` custom.
    #[serde(rename = "type")]
    pub selector_type: SelectorType,
    /// Log matches.
    #[serde(deserialize_with = "null_default")]
    pub logged: bool,
    /// When false, rules are skipped and the plugin runs with a default rule.
    #[serde(deserialize_with = "null_true")]
    pub continued: bool,
    /// Plugin-specific JSON string; for divide a list of [`crate::DivideUpstream`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Conditions.
    #[serde(deserialize_with = "null_default")]
    pub condition_list: Vec<ConditionData>,
    /// Conditions before an update (used by ShenYu to clear match caches).
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub before_condition_list: Vec<ConditionData>,
    /// Excluded from ShenYu's match cache.
    #[serde(deserialize_with = "null_default")]
    pub match_restful: bool,
}

impl Default for SelectorData {
    fn default() -> Self {
        Self {
            id: String::new(),
            name: String::new(),
            enabled: false,
            sort: 0,
            namespace_id: None,
            plugin_id: String::new(),
            plugin_name: String::new(),
            match_mode: MatchMode::And,
            selector_type: SelectorType::Custom,
            logged: false,
            continued: r#true(),
            handle: None,
            condition_list: Vec::new(),
            before_condition_list: Vec::new(),
            match_restful: false,
        }
    }
}
