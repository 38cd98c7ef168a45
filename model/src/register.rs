//! Bodies of the admin's HTTP registration center (protocol §9), sent by ShenYu clients (and
//! the harness) to `/shenyu-client/register-metadata`, `register-uri` and `offline`.

use serde::{Deserialize, Serialize};

/// Body of `register-metadata` (ShenYu `MetaDataRegisterDTO`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MetaDataRegister {
    /// Application name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
    /// The application's context path, e.g. `/http`; names the divide selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_path: Option<String>,
    /// API path, e.g. `/http/order/{id}`; becomes a rule's `uri` condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Description of the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_desc: Option<String>,
    /// RPC type; `http` for divide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_type: Option<String>,
    /// Service (class) name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Method name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method_name: Option<String>,
    /// Rule name; the path when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_name: Option<String>,
    /// Parameter types, comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_types: Option<String>,
    /// RPC extension JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_ext: Option<String>,
    /// Whether the rule and metadata start enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Whether metadata is stored as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_meta_data: Option<bool>,
    /// Carried into the contextPath rule handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_prefixed: Option<bool>,
}

/// Body of `register-uri` and `offline` (ShenYu `URIRegisterDTO`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UriRegister {
    /// `http://` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Application name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
    /// The application's context path; names the selector the address joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_path: Option<String>,
    /// RPC type; `http` for divide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_type: Option<String>,
    /// The instance's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The instance's port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `REGISTER` (or absent), `OFFLINE`, `HEARTBEAT`, `DELETED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
}
