//! The plugin chain, and everything plugin-specific: each plugin's handles, what it compiles
//! from them, and what it does with a request.
//!
//! A [`Plugin`] compiles a payload from each of its selectors' handles
//! ([`Plugin::Selector`]) and rules' handles ([`Plugin::Rule`]) when a snapshot is applied;
//! the router's [`SelectorTable`] keeps them with the compiled conditions, knowing no plugin.
//! Per request, a plugin looks at the request and its table and either passes (possibly
//! rewriting the path, asking for a body mapping, or keeping a guard until the response is
//! over), answers, or names an upstream to forward to, at once or after an await
//! ([`Decision`]). The chain runs the plugins the config has and enables, ordered by
//! `PluginData.sort` (ties: gantry's order), an order each snapshot computes once
//! ([`crate::snapshot::Snapshot::active`]). gantry's plugins: [`rate_limiter`] (20),
//! [`param_mapping`] (70), [`context_path`] (80), [`divide`] (200). No plugin forwarding means ShenYu's -106.
//!
//! # Adding a plugin
//!
//! 1. Write `plugin/<name>.rs` (or `plugin/<name>/mod.rs`) with a struct implementing
//!    [`Plugin`]: its `NAME` (the `PluginData` name), `CLASS_NAME` and `ORDER` (ShenYu's),
//!    the payloads it compiles from selector and rule handles (`()` when it reads none), and
//!    `execute`. [`matched_rule`] gives the rule of the matched selector.
//! 2. Declare the module below and add one line to [`Registry::standard`]. The value made
//!    there is the gateway's one instance, shared by every request of that gateway (it may
//!    hold state, such as a client; another gateway in the process has its own).
//!
//! Nothing else changes: the snapshot compiles every registered plugin's selectors with the
//! plugin's own code, the chain runs it, `/actuator/plugins` lists it.
//!
//! `execute` answers a [`Decision`]: [`now`] for a plugin that decides without waiting (no
//! allocation), or `Either::Right(Box::pin(async move { … }))` for one that awaits (a Redis
//! call: one boxed future per request). To keep something until the response is over (a
//! concurrency slot), answer [`Outcome::Continue`] with a [`Guard`]: the proxy keeps it with
//! the upstream's lease and awaits its [`Hold::finish`] before the response's last byte goes
//! out; it drops it unfinished when the response body fails or is abandoned by the client, or
//! when forwarding fails, and the chain drops it at once when a later plugin rejects the
//! request. An unfinished guard releases in its `Drop`; a release that needs an async call
//! spawns it there (`tokio::spawn`). The test plugin at the end of this file shows the shape.

pub(crate) mod context_path;
pub(crate) mod divide;
pub(crate) mod param_mapping;
pub(crate) mod rate_limiter;
mod registry;

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use futures_util::future::{BoxFuture, Either, Ready, ready};
use http::StatusCode;
use model::{GatewayError, RetryStrategy, RuleData, SelectorData};

use self::param_mapping::BodyMapping;
pub(crate) use self::registry::Registry;
use crate::EmulatedBug;
use crate::balance::Lease;
use crate::router::index::Order;
use crate::router::select::{CompiledSelector, RuleChoice, SelectorTable, select_selector};
use crate::router::{MatchError, RequestView};

/// One plugin: what it compiles from its selectors and rules, and what it does per request.
pub(crate) trait Plugin: std::fmt::Debug + Send + Sync + Sized + 'static {
    /// The plugin name (the key of `PluginData`, and selectors' and rules' `pluginName`).
    const NAME: &'static str;
    /// The Java class name ShenYu's `/actuator/plugins` shows for it.
    const CLASS_NAME: &'static str;
    /// ShenYu's built-in order.
    const ORDER: i32;
    /// What the plugin compiles from one of its selectors (`()` when it reads nothing).
    type Selector: std::fmt::Debug + Send + Sync + 'static;
    /// What the plugin compiles from one of its rules (`()` when it reads nothing).
    type Rule: std::fmt::Debug + Send + Sync + 'static;

    /// Compiles a selector's payload when a snapshot is applied. `previous`: the payload of
    /// the same selector in the previous snapshot, when it was this plugin's, to carry state
    /// over from (divide keeps its upstream pool when the handle did not change).
    fn selector(s: &SelectorData, previous: Option<&Self::Selector>) -> Self::Selector;
    /// Compiles a rule's payload when a snapshot is applied.
    fn rule(r: &RuleData) -> Self::Rule;
    /// Decides for one request; only called when the config has the plugin enabled. `bug`:
    /// the ShenYu-style bug the gateway emulates (`--emulate-bug`), `None` normally; a plugin
    /// acts on the ones that are its own (divide's balancers, the rate limiter).
    fn execute<'a>(
        &'a self,
        table: &'a Table<Self>,
        req: RequestView<'a>,
        bug: Option<EmulatedBug>,
    ) -> Decision<'a>;
    /// Takes the plugin's synced `PluginData.config` (`None`: none, or the plugin is gone);
    /// called when a snapshot changes it. Most plugins read none.
    fn configure(&self, _config: Option<&str>) {}
    /// Appends the plugin's own Prometheus series to `/metrics` (most have none).
    fn metrics(&self, _out: &mut String) {}
}

/// A plugin's compiled selectors and rules, with its payloads.
pub(crate) type Table<P> = SelectorTable<<P as Plugin>::Selector, <P as Plugin>::Rule>;

/// A plugin's decision: ready at once (no allocation), or a boxed future for a plugin that
/// awaits (one allocation per request that takes that path).
pub(crate) type Decision<'a> = Either<Ready<Outcome>, BoxFuture<'a, Outcome>>;

/// A decision taken without waiting.
pub(crate) fn now<'a>(outcome: Outcome) -> Decision<'a> {
    Either::Left(ready(outcome))
}

/// Something a plugin keeps until the response is over (see the module docs).
pub(crate) type Guard = Box<dyn Hold>;

/// What a [`Guard`] holds: ended by [`finish`](Hold::finish) when the response is complete,
/// or by its `Drop` when it is not (a rejection, a failure, an abandoned response).
pub(crate) trait Hold: std::fmt::Debug + Send + Sync {
    /// Ends it; the proxy awaits the future before it sends the response's last byte, so a
    /// client that sends its next request after a response has ended finds it ended (a
    /// concurrency slot free again).
    fn finish(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// A registered plugin, its types erased so that the chain can list them.
pub(crate) trait Registered: std::fmt::Debug + Send + Sync {
    /// [`Plugin::NAME`].
    fn name(&self) -> &'static str;
    /// [`Plugin::CLASS_NAME`].
    fn class_name(&self) -> &'static str;
    /// [`Plugin::ORDER`].
    fn order(&self) -> i32;
    /// An empty table of the plugin's, which runs this instance.
    fn table(self: Arc<Self>) -> Box<dyn PluginTable>;
    /// [`Plugin::configure`].
    fn configure(&self, config: Option<&str>);
    /// [`Plugin::metrics`].
    fn metrics(&self, out: &mut String);
}

impl<P: Plugin> Registered for P {
    fn name(&self) -> &'static str {
        P::NAME
    }

    fn class_name(&self) -> &'static str {
        P::CLASS_NAME
    }

    fn order(&self) -> i32 {
        P::ORDER
    }

    fn configure(&self, config: Option<&str>) {
        Plugin::configure(self, config);
    }

    fn metrics(&self, out: &mut String) {
        Plugin::metrics(self, out);
    }

    fn table(self: Arc<Self>) -> Box<dyn PluginTable> {
        Box::new(Compiled {
            plugin: self,
            selectors: Table::<P>::default(),
        })
    }
}

/// A plugin's compiled selectors (a [`Table`] of its payloads) with the plugin, its types
/// erased so that a snapshot holds every plugin's in one map. Persistent like the table: a
/// copy shares everything.
pub(crate) trait PluginTable: std::fmt::Debug + Send + Sync {
    /// A copy, sharing everything with this table.
    fn copy(&self) -> Box<dyn PluginTable>;
    /// Removes the selector at `order`.
    fn remove(&mut self, order: Order);
    /// Puts selector `s` with its `rules` (in order) at `order`. `old`: where this table had
    /// the same selector (it is removed); its compiled form is kept when `unchanged` (its data
    /// and rules are the same), otherwise its payload is the `previous` of
    /// [`Plugin::selector`].
    fn put(
        &mut self,
        old: Option<Order>,
        order: Order,
        s: &SelectorData,
        rules: &mut dyn Iterator<Item = &RuleData>,
        unchanged: bool,
    );
    /// Runs the plugin on a request ([`Plugin::execute`]).
    fn execute<'a>(&'a self, req: RequestView<'a>, bug: Option<EmulatedBug>) -> Decision<'a>;
    /// [`Plugin::NAME`].
    #[cfg(test)]
    fn name(&self) -> &'static str;
    /// Every selector with its rules and payloads, in order, and the index, rendered.
    #[cfg(test)]
    fn rendered(&self) -> String;
    /// The address of the compiled selector at `order` (to tell reused from recompiled).
    #[cfg(test)]
    fn compiled_at(&self, order: Order) -> Option<*const ()>;
}

/// [`PluginTable`] of plugin `P`.
struct Compiled<P: Plugin> {
    plugin: Arc<P>,
    selectors: Table<P>,
}

impl<P: Plugin> std::fmt::Debug for Compiled<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("plugin", &P::NAME)
            .field("selectors", &self.selectors)
            .finish()
    }
}

impl<P: Plugin> PluginTable for Compiled<P> {
    fn copy(&self) -> Box<dyn PluginTable> {
        Box::new(Compiled {
            plugin: Arc::clone(&self.plugin),
            selectors: self.selectors.clone(),
        })
    }

    fn remove(&mut self, order: Order) {
        self.selectors.remove(order);
    }

    fn put(
        &mut self,
        old: Option<Order>,
        order: Order,
        s: &SelectorData,
        rules: &mut dyn Iterator<Item = &RuleData>,
        unchanged: bool,
    ) {
        let old = old.and_then(|o| self.selectors.remove(o));
        let compiled = match old {
            Some(c) if unchanged => c,
            c => {
                let handle = P::selector(s, c.as_ref().map(|c| &c.handle));
                Arc::new(CompiledSelector::compile(s, handle, rules, P::rule))
            }
        };
        self.selectors.insert(order, compiled);
    }

    fn execute<'a>(&'a self, req: RequestView<'a>, bug: Option<EmulatedBug>) -> Decision<'a> {
        self.plugin.execute(&self.selectors, req, bug)
    }

    #[cfg(test)]
    fn name(&self) -> &'static str {
        P::NAME
    }

    #[cfg(test)]
    fn rendered(&self) -> String {
        let selectors: Vec<String> = self.selectors.iter().map(|s| format!("{s:?}")).collect();
        format!(
            "selectors {selectors:?} index {}",
            self.selectors.index_rendered()
        )
    }

    #[cfg(test)]
    fn compiled_at(&self, order: Order) -> Option<*const ()> {
        self.selectors.get(order).map(|s| Arc::as_ptr(s).cast())
    }
}

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
    /// What the plugins keep until the response is over (see [`Outcome::Continue`]); the
    /// proxy drops them with the response body.
    pub(crate) held: Vec<Guard>,
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
    /// Next plugin; the guard, if any, is kept until the response is over (dropped when the
    /// response body ends, fails or is abandoned, or at once when the request is rejected or
    /// fails before an upstream answers).
    Continue(Option<Guard>),
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

/// The chain: runs a snapshot's active plugins, which emulate the bug of their gateway
/// (per gateway: several gateways can run in one process).
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    bug: Option<EmulatedBug>,
}

impl Chain {
    /// gantry's chain.
    pub(crate) fn standard() -> Chain {
        Chain { bug: None }
    }

    /// This chain, its plugins emulating `bug` (see [`Plugin::execute`]).
    pub(crate) fn emulating(self, bug: Option<EmulatedBug>) -> Chain {
        Chain { bug }
    }

    /// Runs the chain over a snapshot's active plugins (the enabled ones, in chain order,
    /// [`crate::snapshot::Snapshot::active`]); the first forward or rejection wins; nobody
    /// forwarding is -106.
    pub(crate) async fn run(
        &self,
        active: &[Arc<dyn PluginTable>],
        req: &RequestView<'_>,
    ) -> Result<Forward, Rejection> {
        let mut rewrite: Option<PathRewrite> = None;
        let mut body_mapping = None;
        let mut held = Vec::new();
        for plugin in active {
            let view = RequestView {
                path: rewrite.as_ref().map_or(req.path, |r| r.match_path.as_str()),
                ..*req
            };
            match plugin.execute(view, self.bug).await {
                Outcome::Continue(guard) => held.extend(guard),
                Outcome::Rewrite(r) => rewrite = Some(r),
                Outcome::MapBody(m) => body_mapping = Some(m),
                Outcome::Forward(mut f) => {
                    f.path = rewrite.map(|r| r.real_url);
                    f.body_mapping = body_mapping;
                    f.held = held;
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

    /// [`Chain::run`] for plugins that decide without waiting (all of gantry's, in tests).
    #[cfg(test)]
    pub(crate) fn run_now(
        &self,
        active: &[Arc<dyn PluginTable>],
        req: &RequestView<'_>,
    ) -> Result<Forward, Rejection> {
        use futures_util::FutureExt;
        self.run(active, req)
            .now_or_never()
            .expect("gantry's plugins decide without waiting")
    }
}

/// For plugins that only act when a selector and a rule match (all but divide): the rule of
/// the matched selector, `None` to pass (no match), or the matching error.
pub(crate) fn matched_rule<'s, S, R>(
    table: &'s SelectorTable<S, R>,
    req: &RequestView<'_>,
) -> Result<Option<RuleChoice<'s, R>>, Rejection> {
    let Some(selector) = select_selector(table, req)? else {
        return Ok(None);
    };
    Ok(selector.select_rule(req)?)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use model::ConditionData;

    use super::*;
    use crate::router::test_helpers::TestRequest;

    /// Slots the limiter has taken and not released.
    static TAKEN: AtomicUsize = AtomicUsize::new(0);

    /// A slot, released when dropped.
    #[derive(Debug)]
    struct Slot;

    impl Drop for Slot {
        fn drop(&mut self) {
            TAKEN.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl Hold for Slot {
        fn finish(self: Box<Self>) -> BoxFuture<'static, ()> {
            Box::pin(async move { drop(self) })
        }
    }

    /// Shaped like the coming rate limiter: it awaits (as for a Redis call), then answers 429
    /// under `/full` or takes a slot it keeps until the response is over.
    #[derive(Debug)]
    struct Limiter;

    impl Plugin for Limiter {
        const NAME: &'static str = "testLimiter";
        const CLASS_NAME: &'static str = "test.Limiter";
        const ORDER: i32 = 20;
        type Selector = ();
        type Rule = ();

        fn selector(_: &SelectorData, _: Option<&()>) {}

        fn rule(_: &RuleData) {}

        fn execute<'a>(
            &'a self,
            table: &'a Table<Self>,
            req: RequestView<'a>,
            _: Option<EmulatedBug>,
        ) -> Decision<'a> {
            Either::Right(Box::pin(async move {
                tokio::task::yield_now().await;
                match matched_rule(table, &req) {
                    Err(r) => Outcome::Reject(r),
                    Ok(None) => Outcome::Continue(None),
                    Ok(Some(_)) if req.path.starts_with("/full") => Outcome::Reject(
                        Rejection::new(StatusCode::TOO_MANY_REQUESTS, GatewayError::new(429, "")),
                    ),
                    Ok(Some(_)) => {
                        TAKEN.fetch_add(1, Ordering::SeqCst);
                        Outcome::Continue(Some(Box::new(Slot)))
                    }
                }
            }))
        }
    }

    /// The limiter before divide.
    fn limited() -> Registry {
        Registry::of(vec![Arc::new(Limiter), Arc::new(divide::Divide)])
    }

    /// Plugin `at` of [`limited`], with one selector under `prefix` (with `handle`) and one
    /// rule matching everything.
    fn compiled(
        registry: &Registry,
        at: usize,
        prefix: &str,
        handle: &str,
    ) -> Arc<dyn PluginTable> {
        let plugin = registry.plugins().nth(at).unwrap();
        let selector = SelectorData {
            id: format!("{}-s", plugin.name()),
            plugin_name: plugin.name().to_owned(),
            enabled: true,
            handle: Some(handle.to_owned()),
            condition_list: vec![ConditionData::new("uri", "startsWith", "/", prefix)],
            ..Default::default()
        };
        let rule = RuleData {
            id: format!("{}-r", plugin.name()),
            selector_id: selector.id.clone(),
            plugin_name: plugin.name().to_owned(),
            enabled: true,
            condition_data_list: vec![ConditionData::new("uri", "match", "/", "/**")],
            ..Default::default()
        };
        let mut table = registry.table(plugin.name()).unwrap();
        table.put(None, Order::nth(0), &selector, &mut [rule].iter(), false);
        Arc::from(table)
    }

    #[tokio::test]
    async fn an_async_plugin_keeps_its_guard_until_the_response_is_over() {
        let chain = Chain::standard();
        let up = r#"[{"upstreamUrl":"127.0.0.1:8080","status":true}]"#;
        let registry = limited();
        let plugins = [
            compiled(&registry, 0, "/", ""),
            compiled(&registry, 1, "/api", up),
        ];
        let run = |path: &str| {
            let req = TestRequest::get(path);
            let chain = &chain;
            let plugins = &plugins;
            async move { chain.run(plugins, &req.view()).await }
        };
        // Forwarded: the slot travels with the forward, released when it is dropped.
        let forward = run("/api/a").await.unwrap();
        assert_eq!((forward.held.len(), TAKEN.load(Ordering::SeqCst)), (1, 1));
        drop(forward);
        assert_eq!(TAKEN.load(Ordering::SeqCst), 0);
        // The limiter's own answer.
        let status = |r: Result<Forward, Rejection>| r.unwrap_err().status.as_u16();
        assert_eq!(status(run("/full").await), 429);
        // A later plugin rejects (divide: no selector): the slot is released at once.
        assert_eq!(status(run("/other").await), 404);
        assert_eq!(TAKEN.load(Ordering::SeqCst), 0);
    }
}
