//! Plugins: [`PluginData`] and ShenYu's built-in plugin table.

use serde::{Deserialize, Serialize};

use crate::de::null_default;

/// A plugin as it is synced to gateways (ShenYu `PluginData`). Gateways key plugins by `name`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct PluginData {
    /// Plugin id, e.g. `"5"` for divide.
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    /// Plugin name, the gateway's key, e.g. `divide`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// Whether the plugin runs in the gateway's chain.
    #[serde(deserialize_with = "null_default")]
    pub enabled: bool,
    /// Chain order; replaces the plugin's built-in order once synced.
    #[serde(deserialize_with = "null_default")]
    pub sort: i32,
    /// Plugin config as a JSON *string*.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// Plugin role, e.g. `Proxy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Base64 of an extension jar; `""` when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_jar: Option<String>,
    /// Namespace id (ShenYu ≥2.7.0); accepted and carried, never interpreted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

/// One row of ShenYu's built-in plugin table (`plugin` SQL seed and `PluginEnum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinPlugin {
    /// ShenYu's id for the plugin.
    pub id: &'static str,
    /// Plugin name.
    pub name: &'static str,
    /// Default chain order.
    pub sort: i32,
    /// Plugin role.
    pub role: &'static str,
    /// Enabled in a fresh admin.
    pub enabled: bool,
    /// Default plugin config (a JSON string), if any.
    pub config: Option<&'static str>,
}

const fn builtin(
    id: &'static str,
    name: &'static str,
    sort: i32,
    role: &'static str,
    enabled: bool,
) -> BuiltinPlugin {
    BuiltinPlugin {
        id,
        name,
        sort,
        role,
        enabled,
        config: None,
    }
}

/// ShenYu's built-in plugins with their ids, names and default order (protocol doc §2.13).
pub const BUILTIN_PLUGINS: &[BuiltinPlugin] = &[
    builtin("1", "sign", 20, "Authentication", false),
    builtin("2", "waf", 50, "Authentication", false),
    builtin("3", "rewrite", 90, "HttpProcess", false),
    builtin("4", "rateLimiter", 60, "FaultTolerance", false),
    BuiltinPlugin {
        id: "5",
        name: "divide",
        sort: 200,
        role: "Proxy",
        enabled: true,
        config: Some(r#"{"multiSelectorHandle":"1","multiRuleHandle":"0"}"#),
    },
    builtin("6", "dubbo", 310, "Proxy", false),
    builtin("9", "hystrix", 130, "FaultTolerance", false),
    builtin("10", "sentinel", 140, "FaultTolerance", false),
    builtin("11", "sofa", 310, "Proxy", false),
    builtin("12", "resilience4j", 310, "FaultTolerance", false),
    builtin("13", "tars", 310, "Proxy", false),
    builtin("14", "contextPath", 80, "HttpProcess", true),
    builtin("15", "grpc", 310, "Proxy", false),
    builtin("16", "redirect", 110, "HttpProcess", false),
    builtin("18", "loggingConsole", 160, "Logging", false),
    builtin("19", "jwt", 30, "Authentication", false),
    builtin("20", "request", 120, "HttpProcess", false),
    builtin("21", "oauth2", 40, "Authentication", false),
    builtin("22", "paramMapping", 70, "HttpProcess", false),
    builtin("23", "modifyResponse", 220, "HttpProcess", false),
    builtin("24", "cryptorRequest", 100, "Cryptor", true),
    builtin("25", "cryptorResponse", 410, "Cryptor", true),
    builtin("26", "websocket", 200, "Proxy", true),
    builtin("27", "generalContext", 125, "Common", true),
    builtin("30", "cache", 10, "Cache", false),
    builtin("31", "mock", 1, "Mock", false),
    builtin("40", "keyAuth", 150, "Authentication", false),
    builtin("42", "tcp", 320, "Proxy", true),
    builtin("44", "basicAuth", 150, "Authentication", false),
];

impl BuiltinPlugin {
    /// Looks a built-in plugin up by id.
    pub fn by_id(id: &str) -> Option<&'static BuiltinPlugin> {
        BUILTIN_PLUGINS.iter().find(|p| p.id == id)
    }

    /// Looks a built-in plugin up by name.
    pub fn by_name(name: &str) -> Option<&'static BuiltinPlugin> {
        BUILTIN_PLUGINS.iter().find(|p| p.name == name)
    }
}
