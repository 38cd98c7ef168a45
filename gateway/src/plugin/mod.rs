//! The plugin chain. Each [`Plugin`] looks at the request and its compiled selectors and
//! either passes (possibly rewriting the path or asking for a body mapping), answers, or names
//! an upstream to forward to. The chain runs the plugins the config has and enables, ordered
//! by `PluginData.sort` (ties: gantry's order). gantry's plugins: [`param_mapping`] (70),
//! [`context_path`] (80), [`divide`] (200). No plugin forwarding means ShenYu's -106.

pub(crate) mod context_path;
pub(crate) mod divide;
pub(crate) mod param_mapping;
pub(crate) mod rate_limiter;

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use model::{GatewayError, RetryStrategy};

use self::param_mapping::BodyMapping;
use crate::balance::Lease;
use crate::router::select::{CompiledSelector, RuleChoice, select_selector};
use crate::router::{MatchError, RequestView};
use crate::snapshot::{CompiledPlugin, Snapshot};

/// Where and how to forward a request.
#[derive(Debug)]
pub(crate) struct Forward {
    /// The chosen upstream, counted as active until the response is finished.
    pub(crate) lease: Lease,
    /// Time allowed for the upstream's response head, per attempt.
    pub(crate) timeout_ms: u64,
    /// Further attempts after a connection failure or timeout.
    pub(crate) retry: u32,
    /// Same upstream again, or another one.
    pub(crate) retry_strategy: RetryStrategy,
    /// The path to send instead of the request's (contextPath's `realUrl`).
    pub(crate) path: Option<String>,
    /// The body rewrite paramMapping asked for.
    pub(crate) body_mapping: Option<Arc<BodyMapping>>,
    /// Matched selector.
    pub(crate) selector_id: Arc<str>,
    /// Matched rule (or `default_rule`).
    pub(crate) rule_id: Arc<str>,
}

/// An error answer: a real HTTP status with ShenYu's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// HTTP status.
    pub(crate) status: StatusCode,
    /// Body.
    pub(crate) body: GatewayError,
}

impl Rejection {
    pub(crate) fn new(status: StatusCode, body: GatewayError) -> Self {
        Self { status, body }
    }
}

impl From<MatchError> for Rejection {
    fn from(e: MatchError) -> Self {
        Rejection::new(
            e.status,
            GatewayError::new(i32::from(e.status.as_u16()), e.message),
        )
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body)).into_response()
    }
}

/// What a plugin decided.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Next plugin.
    Continue,
    /// Next plugin, which matches on `match_path`; the upstream receives `real_url`.
    Rewrite(PathRewrite),
    /// Next plugin; the request body is rewritten before forwarding (paramMapping).
    MapBody(Arc<BodyMapping>),
    /// Forward to an upstream (ends the chain).
    Forward(Forward),
    /// Answer with an error (ends the chain).
    Reject(Rejection),
}

/// contextPath's change to the path (protocol §11.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathRewrite {
    /// What the upstream receives (ShenYu `realUrl`).
    pub(crate) real_url: String,
    /// What later plugins match `uri` conditions on (ShenYu's rewritten raw path).
    pub(crate) match_path: String,
}

/// One plugin of the chain.
pub(crate) trait Plugin: std::fmt::Debug + Send + Sync {
    /// The plugin name (the key of `PluginData`).
    fn name(&self) -> &'static str;
    /// The Java class name ShenYu's `/actuator/plugins` shows for it.
    fn class_name(&self) -> &'static str;
    /// ShenYu's built-in order.
    fn order(&self) -> i32;
    /// Decides for one request; only called when the config has the plugin enabled.
    fn execute(&self, plugin: &CompiledPlugin, req: &RequestView<'_>) -> Outcome;
}

/// The ordered plugins.
#[derive(Debug)]
pub(crate) struct Chain {
    plugins: Vec<Box<dyn Plugin>>,
}

impl Chain {
    /// gantry's chain.
    pub(crate) fn standard() -> Chain {
        let mut plugins: Vec<Box<dyn Plugin>> = vec![
            Box::new(param_mapping::ParamMapping),
            Box::new(context_path::ContextPath),
            Box::new(divide::Divide),
        ];
        plugins.sort_by_key(|p| p.order());
        Chain { plugins }
    }

    /// The plugins, in built-in order.
    pub(crate) fn plugins(&self) -> impl Iterator<Item = &dyn Plugin> {
        self.plugins.iter().map(|p| &**p)
    }

    /// Runs the chain: the plugins the snapshot has enabled, by `sort`; the first forward or
    /// rejection wins; nobody forwarding is -106.
    pub(crate) fn run(
        &self,
        snapshot: &Snapshot,
        req: &RequestView<'_>,
    ) -> Result<Forward, Rejection> {
        let mut active: Vec<(&dyn Plugin, &CompiledPlugin)> = self
            .plugins
            .iter()
            .filter_map(|p| {
                let compiled = snapshot.plugins.get(p.name())?;
                compiled.enabled.then_some((&**p, compiled))
            })
            .collect();
        active.sort_by_key(|(_, compiled)| compiled.sort);
        let mut rewrite: Option<PathRewrite> = None;
        let mut body_mapping = None;
        for (plugin, compiled) in active {
            let view = RequestView {
                path: rewrite.as_ref().map_or(req.path, |r| r.match_path.as_str()),
                ..*req
            };
            match plugin.execute(compiled, &view) {
                Outcome::Continue => {}
                Outcome::Rewrite(r) => rewrite = Some(r),
                Outcome::MapBody(m) => body_mapping = Some(m),
                Outcome::Forward(mut f) => {
                    f.path = rewrite.map(|r| r.real_url);
                    f.body_mapping = body_mapping;
                    return Ok(f);
                }
                Outcome::Reject(r) => return Err(r),
            }
        }
        Err(Rejection::new(
            StatusCode::NOT_FOUND,
            GatewayError::cannot_find_url(),
        ))
    }
}

/// For plugins that only act when a selector and a rule match (all but divide): the matched
/// rule, `None` to pass (no match), or the matching error.
pub(crate) fn matched_rule<'s>(
    plugin: &'s CompiledPlugin,
    req: &RequestView<'_>,
) -> Result<Option<(&'s CompiledSelector, RuleChoice<'s>)>, Rejection> {
    let Some(selector) = select_selector(&plugin.selectors, req)? else {
        return Ok(None);
    };
    Ok(selector.select_rule(req)?.map(|rule| (selector, rule)))
}
