//! App auth (sign plugin): [`AppAuthData`].

use serde::{Deserialize, Serialize};

use crate::de::null_default;

/// An application's credentials (ShenYu `AppAuthData`); gateways key it by `appKey`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct AppAuthData {
    /// Application key.
    #[serde(deserialize_with = "null_default")]
    pub app_key: String,
    /// Application secret (ShenYu sends it in clear).
    #[serde(deserialize_with = "null_default")]
    pub app_secret: String,
    /// Whether the app is enabled.
    #[serde(deserialize_with = "null_default")]
    pub enabled: bool,
    /// Whether path checks are open.
    #[serde(deserialize_with = "null_default")]
    pub open: bool,
    /// Parameters.
    #[serde(deserialize_with = "null_default")]
    pub param_data_list: Vec<AuthParamData>,
    /// Paths.
    #[serde(deserialize_with = "null_default")]
    pub path_data_list: Vec<AuthPathData>,
    /// Namespace id (ShenYu ≥2.7.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

/// An app parameter (ShenYu `AuthParamData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct AuthParamData {
    /// Application name.
    #[serde(deserialize_with = "null_default")]
    pub app_name: String,
    /// Parameter.
    #[serde(deserialize_with = "null_default")]
    pub app_param: String,
}

/// An app path (ShenYu `AuthPathData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct AuthPathData {
    /// Application name.
    #[serde(deserialize_with = "null_default")]
    pub app_name: String,
    /// Path pattern.
    #[serde(deserialize_with = "null_default")]
    pub path: String,
    /// Whether the path is enabled.
    #[serde(deserialize_with = "null_default")]
    pub enabled: bool,
}
