//! The contextPath plugin (ShenYu `ContextPathPlugin`, order 80, protocol §11.4): with the
//! matched rule's handle `{"contextPath":"/http","addPrefix":"/v1"}`, `realUrl` = the path
//! minus `contextPath.len()` leading bytes (not checked to be a prefix, as in ShenYu), then
//! `addPrefix` + (`realUrl`, or the full path when that is empty). Later plugins (divide)
//! match on `realUrl`, and the upstream receives it. No selector or rule → the path is kept.
//! `rewriteContextPath` / `percentage` are not implemented.

use http::StatusCode;
use model::GatewayError;
use serde::Deserialize;

use super::{Outcome, Plugin, Rejection, matched_rule};
use crate::router::RequestView;
use crate::router::select::{PluginHandle, RuleChoice};
use crate::snapshot::CompiledPlugin;

/// The plugin name.
pub(crate) const NAME: &str = "contextPath";

/// A contextPath rule handle (ShenYu `ContextMappingRuleHandle`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ContextPathHandle {
    context_path: Option<String>,
    add_prefix: Option<String>,
}

impl ContextPathHandle {
    /// Reads a handle.
    pub(crate) fn parse(handle: &str) -> Result<ContextPathHandle, serde_json::Error> {
        serde_json::from_str(handle)
    }

    /// The rewritten path, `None` when the handle changes nothing. A path shorter than the
    /// context path is ShenYu's `StringIndexOutOfBoundsException`: an error.
    fn real_url(&self, path: &str) -> Result<Option<String>, Rejection> {
        let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
        let mut real = None;
        if !blank(&self.context_path) {
            let len = self.context_path.as_deref().map_or(0, str::len);
            let rest = path.get(len..).ok_or_else(|| {
                Rejection::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    GatewayError::new(500, "Internal Server Error"),
                )
            })?;
            real = Some(rest.to_owned());
        }
        if !blank(&self.add_prefix) {
            let prefix = self.add_prefix.as_deref().unwrap_or("");
            let tail = match real.as_deref() {
                Some(r) if !r.is_empty() => r,
                _ => path,
            };
            real = Some(format!("{prefix}{tail}"));
        }
        Ok(real)
    }
}

/// The contextPath plugin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContextPath;

impl Plugin for ContextPath {
    fn name(&self) -> &'static str {
        NAME
    }

    fn class_name(&self) -> &'static str {
        "org.apache.shenyu.plugin.context.path.ContextPathPlugin"
    }

    fn order(&self) -> i32 {
        80
    }

    fn execute(&self, plugin: &CompiledPlugin, req: &RequestView<'_>) -> Outcome {
        let handle = match matched_rule(plugin, req) {
            Err(r) => return Outcome::Reject(r),
            Ok(Some((_, RuleChoice::Rule(rule)))) => match &rule.plugin_handle {
                PluginHandle::ContextPath(h) => h,
                _ => return Outcome::Continue,
            },
            Ok(_) => return Outcome::Continue,
        };
        match handle.real_url(req.path) {
            Err(r) => Outcome::Reject(r),
            Ok(Some(path)) => Outcome::Rewrite(path),
            Ok(None) => Outcome::Continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(handle: &str, path: &str) -> Option<String> {
        ContextPathHandle::parse(handle)
            .unwrap()
            .real_url(path)
            .unwrap()
    }

    #[test]
    fn real_urls() {
        assert_eq!(
            real(r#"{"contextPath":"/http"}"#, "/http/order/1").as_deref(),
            Some("/order/1")
        );
        assert_eq!(
            real(r#"{"contextPath":"/http","addPrefix":"/v1"}"#, "/http/a").as_deref(),
            Some("/v1/a")
        );
        // Empty realUrl → the prefix goes before the full path.
        assert_eq!(
            real(r#"{"contextPath":"/http","addPrefix":"/v1"}"#, "/http").as_deref(),
            Some("/v1/http")
        );
        assert_eq!(
            real(r#"{"addPrefix":"/v1"}"#, "/a").as_deref(),
            Some("/v1/a")
        );
        // Not checked to be a prefix, as in ShenYu.
        assert_eq!(
            real(r#"{"contextPath":"/xyz"}"#, "/http/a").as_deref(),
            Some("p/a")
        );
        assert_eq!(real(r#"{"contextPath":" "}"#, "/a"), None);
        assert_eq!(real("{}", "/a"), None);
        let short = ContextPathHandle::parse(r#"{"contextPath":"/long/context"}"#).unwrap();
        assert_eq!(short.real_url("/a").unwrap_err().status, 500);
    }
}
