//! The contextPath plugin (ShenYu `ContextPathPlugin`, order 80, protocol §11.3–§11.4): with
//! the matched rule's handle `{"contextPath":"/http","addPrefix":"/v1"}`, `realUrl` = the path
//! minus `contextPath.len()` leading bytes (not checked to be a prefix, as in ShenYu), then
//! `addPrefix` + (`realUrl`, or the full path when that is empty). The upstream receives
//! `realUrl`; later plugins (divide) match on ShenYu's "rewritten raw path":
//! `rewriteContextPath + realUrl` when `rewriteContextPath` is set and a draw falls under
//! `percentage`, else `contextPath + realUrl` when `contextPath` is set, else the raw path.
//! No selector or rule → nothing changes.

use http::StatusCode;
use model::{ContextMappingRuleHandle, GatewayError, RuleData, SelectorData};

use super::{Decision, Outcome, PathRewrite, Plugin, Rejection, Table, matched_rule, now};
use crate::router::RequestView;
use crate::router::select::RuleChoice;

/// The plugin name.
pub(crate) const NAME: &str = "contextPath";

/// What `handle` does to `path`, `None` when it changes nothing. `draw` gives a number in
/// 0..100 for the `percentage` test. A path shorter than the context path is ShenYu's
/// `StringIndexOutOfBoundsException`: an error.
fn rewrite(
    handle: &ContextMappingRuleHandle,
    path: &str,
    draw: impl FnOnce() -> i32,
) -> Result<Option<PathRewrite>, Rejection> {
    let mut real = None;
    if let Some(context_path) = handle.context_path() {
        let rest = path.get(context_path.len()..).ok_or_else(|| {
            Rejection::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                GatewayError::new(500, "Internal Server Error"),
            )
        })?;
        real = Some(rest.to_owned());
    }
    if let Some(prefix) = handle.add_prefix() {
        let tail = match real.as_deref() {
            Some(r) if !r.is_empty() => r,
            _ => path,
        };
        real = Some(format!("{prefix}{tail}"));
    }
    let rewrite_context_path = handle
        .rewrite_context_path()
        .filter(|_| draw() < handle.percentage());
    let base = match (rewrite_context_path, handle.context_path()) {
        (Some(base), _) | (None, Some(base)) => Some(base),
        (None, None) => None,
    };
    if real.is_none() && base.is_none() {
        return Ok(None);
    }
    let real_url = real.unwrap_or_else(|| path.to_owned());
    let match_path = match base {
        Some(base) => format!("{base}{real_url}"),
        None => path.to_owned(),
    };
    Ok(Some(PathRewrite {
        real_url,
        match_path,
    }))
}

/// The contextPath plugin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContextPath;

impl Plugin for ContextPath {
    const NAME: &'static str = NAME;
    const CLASS_NAME: &'static str = "org.apache.shenyu.plugin.context.path.ContextPathPlugin";
    const ORDER: i32 = 80;
    type Selector = ();
    /// The rule's handle; `None` when absent or unreadable (logged): the rule changes nothing.
    type Rule = Option<ContextMappingRuleHandle>;

    fn selector(_: &SelectorData, _: Option<&()>) {}

    fn rule(r: &RuleData) -> Option<ContextMappingRuleHandle> {
        let h = r.handle.as_deref().filter(|_| r.plugin_name == NAME)?;
        ContextMappingRuleHandle::parse(h)
            .inspect_err(|e| {
                tracing::warn!(rule = %r.id, plugin = %r.plugin_name, error = %e, "unreadable rule handle; ignored");
            })
            .ok()
    }

    fn execute<'a>(
        &'a self,
        table: &'a Table<Self>,
        req: RequestView<'a>,
        _: Option<crate::EmulatedBug>,
    ) -> Decision<'a> {
        let handle = match matched_rule(table, &req) {
            Err(r) => return now(Outcome::Reject(r)),
            Ok(Some(RuleChoice::Rule(rule))) => match &rule.handle {
                Some(h) => h,
                None => return now(Outcome::Continue(None)),
            },
            Ok(_) => return now(Outcome::Continue(None)),
        };
        now(
            match rewrite(handle, req.path, || rand::random_range(0..100)) {
                Err(r) => Outcome::Reject(r),
                Ok(Some(rewrite)) => Outcome::Rewrite(rewrite),
                Ok(None) => Outcome::Continue(None),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (realUrl, match path) for `path`, the draw always 0 (under any percentage > 0).
    fn paths(handle: &str, path: &str) -> Option<(String, String)> {
        let handle = ContextMappingRuleHandle::parse(handle).unwrap();
        rewrite(&handle, path, || 0)
            .unwrap()
            .map(|r| (r.real_url, r.match_path))
    }

    fn pair(real: &str, matched: &str) -> Option<(String, String)> {
        Some((real.to_owned(), matched.to_owned()))
    }

    #[test]
    fn real_urls_and_match_paths() {
        // The registration handle: divide still matches /http/..., the upstream gets the rest.
        assert_eq!(
            paths(
                r#"{"contextPath":"/http","addPrefixed":false}"#,
                "/http/order/1"
            ),
            pair("/order/1", "/http/order/1")
        );
        assert_eq!(
            paths(r#"{"contextPath":"/http","addPrefix":"/v1"}"#, "/http/a"),
            pair("/v1/a", "/http/v1/a")
        );
        // Empty realUrl → the prefix goes before the full path.
        assert_eq!(
            paths(r#"{"contextPath":"/http","addPrefix":"/v1"}"#, "/http"),
            pair("/v1/http", "/http/v1/http")
        );
        // addPrefix alone: no context path attribute, so matching stays on the raw path.
        assert_eq!(paths(r#"{"addPrefix":"/v1"}"#, "/a"), pair("/v1/a", "/a"));
        // Not checked to be a prefix, as in ShenYu.
        assert_eq!(
            paths(r#"{"contextPath":"/xyz"}"#, "/http/a"),
            pair("p/a", "/xyzp/a")
        );
        assert_eq!(paths(r#"{"contextPath":" "}"#, "/a"), None);
        assert_eq!(paths("{}", "/a"), None);
        let short = ContextMappingRuleHandle::parse(r#"{"contextPath":"/long/context"}"#).unwrap();
        assert_eq!(rewrite(&short, "/a", || 0).unwrap_err().status, 500);
    }

    #[test]
    fn rewrite_context_path_replaces_the_match_base_under_the_percentage() {
        let handle = ContextMappingRuleHandle::parse(
            r#"{"contextPath":"/http","rewriteContextPath":"/new","percentage":30}"#,
        )
        .unwrap();
        let at = |draw: i32| {
            rewrite(&handle, "/http/a", || draw)
                .unwrap()
                .map(|r| (r.real_url, r.match_path))
        };
        assert_eq!(at(0), pair("/a", "/new/a"));
        assert_eq!(at(29), pair("/a", "/new/a"));
        assert_eq!(at(30), pair("/a", "/http/a"));
        assert_eq!(at(99), pair("/a", "/http/a"));
        // Default percentage 100: always; without contextPath the path itself follows.
        assert_eq!(
            paths(r#"{"rewriteContextPath":"/new"}"#, "/a/b"),
            pair("/a/b", "/new/a/b")
        );
        // percentage 0: never.
        assert_eq!(
            paths(r#"{"rewriteContextPath":"/new","percentage":0}"#, "/a"),
            None
        );
    }
}
