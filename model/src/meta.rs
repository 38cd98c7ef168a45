//! Metadata: [`MetaData`].

use serde::{Deserialize, Serialize};

use crate::de::null_default;

/// API metadata (ShenYu `MetaData`); the gateway keys it by `id` and indexes it by `path`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct MetaData {
    /// Id.
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    /// Application name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
    /// Context path, e.g. `/http`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_path: Option<String>,
    /// Full request path.
    #[serde(deserialize_with = "null_default")]
    pub path: String,
    /// Rpc type (`http`, `dubbo`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_type: Option<String>,
    /// Service name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Method name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method_name: Option<String>,
    /// Parameter types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter_types: Option<String>,
    /// Rpc extension JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_ext: Option<String>,
    /// Whether the entry is used.
    #[serde(deserialize_with = "null_default")]
    pub enabled: bool,
    /// Namespace id (ShenYu ≥2.7.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}
