//! Rules: [`RuleData`].

use serde::{Deserialize, Serialize};

use crate::condition::ConditionData;
use crate::de::null_default;
use crate::selector::MatchMode;

/// A rule as it is synced to gateways (ShenYu `RuleData`). Note `loged` (one g) and
/// `conditionDataList`, unlike the selector's `logged` and `conditionList`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct RuleData {
    /// Rule id: a digit string.
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    /// Display name.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// Whether the rule takes part in matching.
    #[serde(deserialize_with = "null_default")]
    pub enabled: bool,
    /// Ordering key, ascending.
    #[serde(deserialize_with = "null_default")]
    pub sort: i32,
    /// Namespace id (ShenYu ≥2.7.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
    /// Owning plugin name.
    #[serde(deserialize_with = "null_default")]
    pub plugin_name: String,
    /// Owning selector id; gateways group rules by it.
    #[serde(deserialize_with = "null_default")]
    pub selector_id: String,
    /// `0` and, `1` or.
    pub match_mode: MatchMode,
    /// Log matches (one g, as on ShenYu's wire).
    #[serde(deserialize_with = "null_default")]
    pub loged: bool,
    /// Plugin rule handle JSON string; for divide a [`crate::DivideRuleHandle`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Conditions.
    #[serde(deserialize_with = "null_default")]
    pub condition_data_list: Vec<ConditionData>,
    /// Conditions before an update.
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub before_condition_data_list: Vec<ConditionData>,
    /// Excluded from ShenYu's match cache.
    #[serde(deserialize_with = "null_default")]
    pub match_restful: bool,
}
