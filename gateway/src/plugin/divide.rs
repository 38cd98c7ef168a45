//! The divide plugin (ShenYu `DividePlugin`): selector, then rule, then an upstream of the
//! selector chosen by the rule's `loadBalance` (see `balance`) or named by the client's
//! `specify-domain` header. The rule's `headerMaxSize` (summed header value bytes) answers
//! 431 and `requestMaxSize` (Content-Length) 413 when exceeded; `timeout`, `retry` and
//! `retryStrategy` go to the proxy, `retry` and `timeout` clamped to the bounds the admin
//! validates ([`RETRY_BOUNDS`], [`TIMEOUT_MS_BOUNDS`]): a ShenYu admin stores any integer. No
//! selector → 404 -107, no rule → 404 -102, no usable upstream → 503 -119; a missing or disabled
//! divide plugin lets the chain end in -106.
//!
//! A selector handle the gateway cannot use ([`unusable`]) does not replace the upstreams the
//! selector had: ShenYu's divide handler fails on it and leaves its upstream cache as it was.

use std::sync::{Arc, LazyLock};

use http::StatusCode;
use model::{
    DivideRuleHandle, DivideUpstream, GatewayError, RETRY_BOUNDS, RuleData, SelectorData,
    TIMEOUT_MS_BOUNDS,
};

use super::{Decision, Forward, Outcome, Plugin, Rejection, Table, now};
use crate::EmulatedBug;
use crate::balance::{PickContext, Pool, Upstream, now_ms};
use crate::router::RequestView;
use crate::router::select::{DEFAULT_RULE_ID, RuleChoice, select_selector};

/// The plugin name.
pub(crate) const NAME: &str = "divide";

static DEFAULT_RULE: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(DEFAULT_RULE_ID));
static DEFAULT_HANDLE: LazyLock<DivideRuleHandle> = LazyLock::new(DivideRuleHandle::default);

/// The divide plugin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Divide;

impl Plugin for Divide {
    const NAME: &'static str = NAME;
    const CLASS_NAME: &'static str = "org.apache.shenyu.plugin.divide.DividePlugin";
    const ORDER: i32 = 200;
    /// The selector's usable upstreams (`status == true`) with the balancers' state.
    type Selector = Arc<Pool>;
    /// The rule's handle (defaults when absent or unreadable).
    type Rule = DivideRuleHandle;

    /// The pool of the previous snapshot (its balancer state) when the handle is the same, or
    /// when the new one is [`unusable`] (the last good upstreams; the snapshot counts it).
    fn selector(s: &SelectorData, previous: Option<&Arc<Pool>>) -> Arc<Pool> {
        let handle = s.handle.as_deref().unwrap_or("");
        match previous {
            Some(p) if p.handle() == handle || unusable(handle).is_some() => p.clone(),
            _ => Arc::new(Pool::from_handle(handle, &s.id)),
        }
    }

    fn rule(r: &RuleData) -> DivideRuleHandle {
        let handle = match r.handle.as_deref() {
            Some(h) if r.plugin_name == NAME => DivideRuleHandle::parse(h).unwrap_or_else(|e| {
                tracing::warn!(rule = %r.id, error = %e, "unreadable divide rule handle; using defaults");
                DivideRuleHandle::default()
            }),
            _ => DivideRuleHandle::default(),
        };
        bounded(handle, &r.id)
    }

    fn execute<'a>(
        &'a self,
        table: &'a Table<Self>,
        req: RequestView<'a>,
        bug: Option<EmulatedBug>,
    ) -> Decision<'a> {
        now(decide(table, &req, bug))
    }
}

/// `handle` with `retry` and `timeout` clamped to [`RETRY_BOUNDS`] and [`TIMEOUT_MS_BOUNDS`]
/// (logged when it changes them): `retry: 2147483647` would otherwise retry a dead upstream
/// for hours.
fn bounded(mut handle: DivideRuleHandle, rule_id: &str) -> DivideRuleHandle {
    let retry = i64::from(handle.retry).clamp(*RETRY_BOUNDS.start(), *RETRY_BOUNDS.end());
    let timeout = handle
        .timeout
        .clamp(*TIMEOUT_MS_BOUNDS.start(), *TIMEOUT_MS_BOUNDS.end());
    if retry != i64::from(handle.retry) || timeout != handle.timeout {
        tracing::warn!(
            rule = %rule_id,
            retry = handle.retry,
            timeout = handle.timeout,
            "divide rule handle out of bounds; clamped to retry {retry}, timeout {timeout} ms"
        );
    }
    handle.retry = i32::try_from(retry).unwrap_or(0);
    handle.timeout = timeout;
    handle
}

/// Why the gateway cannot use divide selector handle `handle`: it is not a list of upstreams,
/// or none of its enabled upstreams has a usable address. `None` for a usable one; an empty
/// list or one whose upstreams are all offline is usable (no upstream: 503 -119).
pub(crate) fn unusable(handle: &str) -> Option<String> {
    let list = match DivideUpstream::parse_list(handle) {
        Ok(list) => list,
        Err(e) => return Some(format!("unreadable handle: {e}")),
    };
    let mut error = None;
    for upstream in list.into_iter().filter(|u| u.status) {
        match Upstream::new(upstream) {
            Ok(_) => return None,
            Err(e) => error = Some(e),
        }
    }
    error.map(|e| format!("no usable upstream: {e}"))
}

/// Divide's decision for one request; the balancers see `bug`.
fn decide(table: &Table<Divide>, req: &RequestView<'_>, bug: Option<EmulatedBug>) -> Outcome {
    let reject = |status, body| Outcome::Reject(Rejection::new(status, body));
    let selector = match select_selector(table, req) {
        Err(e) => return Outcome::Reject(e.into()),
        Ok(None) => {
            return reject(
                StatusCode::NOT_FOUND,
                GatewayError::selector_not_found(NAME),
            );
        }
        Ok(Some(s)) => s,
    };
    let (rule_id, handle) = match selector.select_rule(req) {
        Err(e) => return Outcome::Reject(e.into()),
        Ok(None) => return reject(StatusCode::NOT_FOUND, GatewayError::rule_not_found(NAME)),
        Ok(Some(RuleChoice::Default)) => (DEFAULT_RULE.clone(), &*DEFAULT_HANDLE),
        Ok(Some(RuleChoice::Rule(r))) => (r.id.clone(), &r.handle),
    };
    if let Some(r) = too_large(handle, req) {
        return Outcome::Reject(r);
    }
    let timeout = handle.timeout;
    let ctx = PickContext {
        now_ms: now_ms(),
        client_ip: req.peer,
        bug,
    };
    // ShenYu's `specify-domain` header names the upstream (client-controllable).
    let specified = req
        .headers
        .get("specify-domain")
        .and_then(|v| v.to_str().ok())
        .and_then(|url| selector.handle.find(url));
    let lease = match specified {
        Some(index) => Some(selector.handle.lease(index, ctx.now_ms)),
        None => selector.handle.pick(handle.load_balance, &ctx),
    };
    let Some(lease) = lease else {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            GatewayError::no_healthy_upstream(),
        );
    };
    let timeout_ms = if timeout > 0 {
        timeout
    } else {
        DivideRuleHandle::default().timeout
    };
    Outcome::Forward(Forward {
        lease,
        timeout_ms: timeout_ms.unsigned_abs(),
        retry: u32::try_from(handle.retry).unwrap_or(0),
        retry_strategy: handle.retry_strategy,
        path: None,
        body_mapping: None,
        selector_id: selector.id.clone(),
        rule_id,
        held: Vec::new(),
    })
}

/// ShenYu's size checks: header value bytes over `headerMaxSize` → 431, Content-Length over
/// `requestMaxSize` → 413 (0 = unlimited).
fn too_large(handle: &DivideRuleHandle, req: &RequestView<'_>) -> Option<Rejection> {
    if handle.header_max_size > 0 {
        let size: usize = req.headers.values().map(|v| v.len()).sum();
        if i64::try_from(size).unwrap_or(i64::MAX) > handle.header_max_size {
            return Some(Rejection::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                GatewayError::new(431, "Request Header Fields Too Large"),
            ));
        }
    }
    if handle.request_max_size > 0 {
        let length = req
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(0);
        if length > handle.request_max_size {
            return Some(Rejection::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                GatewayError::new(413, "Request Entity Too Large"),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Chain;
    use crate::router::test_helpers::TestRequest;
    use crate::snapshot::{ConfigData, Snapshot};
    use model::{
        ConditionData, DataEvent, DataEventType, EventPayload, PluginData, RuleData, SelectorData,
    };

    fn snapshot(enabled: bool, handle: &str) -> Snapshot {
        Snapshot::build(config(enabled, handle, r#"{"timeout":1234}"#))
    }

    fn config(enabled: bool, handle: &str, rule_handle: &str) -> ConfigData {
        let mut d = ConfigData::default();
        d.apply(DataEvent::new(
            DataEventType::Myself,
            EventPayload::Plugin(vec![PluginData {
                name: NAME.into(),
                enabled,
                ..Default::default()
            }]),
        ));
        d.apply(DataEvent::new(
            DataEventType::Myself,
            EventPayload::Selector(vec![SelectorData {
                id: "1".into(),
                plugin_name: NAME.into(),
                enabled: true,
                handle: Some(handle.into()),
                condition_list: vec![ConditionData::new("uri", "startsWith", "/", "/api")],
                ..Default::default()
            }]),
        ));
        d.apply(DataEvent::new(
            DataEventType::Myself,
            EventPayload::Rule(vec![RuleData {
                id: "2".into(),
                selector_id: "1".into(),
                plugin_name: NAME.into(),
                enabled: true,
                handle: Some(rule_handle.into()),
                condition_data_list: vec![ConditionData::new("uri", "match", "/", "/api/a/**")],
                ..Default::default()
            }]),
        ));
        d
    }

    const UP: &str = r#"[{"upstreamUrl":"127.0.0.1:8080","weight":50,"status":true}]"#;

    fn run(snap: &Snapshot, path: &str) -> Result<Forward, Rejection> {
        let req = TestRequest::get(path);
        Chain::standard().run_now(&snap.active, &req.view())
    }

    #[test]
    fn outcomes() {
        let snap = snapshot(true, UP);
        let f = run(&snap, "/api/a/x").unwrap();
        assert_eq!(
            (
                f.lease.upstream().authority.as_str(),
                &*f.selector_id,
                &*f.rule_id,
                f.timeout_ms
            ),
            ("127.0.0.1:8080", "1", "2", 1234)
        );
        let code = |r: Result<Forward, Rejection>| {
            let r = r.unwrap_err();
            (r.status.as_u16(), r.body.code)
        };
        assert_eq!(code(run(&snap, "/other")), (404, -107));
        assert_eq!(code(run(&snap, "/api/b")), (404, -102));
        assert_eq!(code(run(&snapshot(false, UP), "/api/a/x")), (404, -106));
        assert_eq!(code(run(&Snapshot::default(), "/api/a/x")), (404, -106));
        let down = r#"[{"upstreamUrl":"127.0.0.1:8080","status":false}]"#;
        assert_eq!(code(run(&snapshot(true, down), "/api/a/x")), (503, -119));
        assert_eq!(
            code(run(&snapshot(true, "not json"), "/api/a/x")),
            (503, -119)
        );
    }

    #[test]
    fn retry_and_timeout_are_clamped_to_the_admin_bounds() {
        let forward = |rule_handle: &str| {
            let snap = Snapshot::build(config(true, UP, rule_handle));
            let f = run(&snap, "/api/a/x").unwrap();
            (f.retry, f.timeout_ms)
        };
        assert_eq!(
            forward(r#"{"retry":2147483647,"timeout":9999999999}"#),
            (10, 600_000)
        );
        assert_eq!(forward(r#"{"retry":-5,"timeout":-1}"#), (0, 3000));
        assert_eq!(forward(r#"{"retry":2,"timeout":1234}"#), (2, 1234));
    }

    #[test]
    fn an_unusable_selector_handle_keeps_the_last_good_pool() {
        let snap = snapshot(true, UP);
        let keeps = |handle: &str| {
            let next = Snapshot::rebuild(config(true, handle, "{}"), &snap);
            let f = run(&next, "/api/a/x");
            f.map(|f| f.lease.upstream().authority.to_string())
        };
        assert_eq!(keeps("not json").unwrap(), "127.0.0.1:8080");
        let bad_url = r#"[{"upstreamUrl":"a b:1","status":true}]"#;
        assert_eq!(keeps(bad_url).unwrap(), "127.0.0.1:8080");
        assert!(
            unusable(bad_url)
                .unwrap()
                .starts_with("no usable upstream: ")
        );
        // An empty list and offline upstreams are usable: no upstream.
        for usable in ["[]", r#"[{"upstreamUrl":"a b:1","status":false}]"#] {
            assert_eq!(unusable(usable), None);
            assert_eq!(keeps(usable).unwrap_err().body.code, -119);
        }
    }

    const THREE: &str = r#"[{"upstreamUrl":"a:1","weight":5},{"upstreamUrl":"b:1","weight":1},{"upstreamUrl":"c:1","weight":1}]"#;

    fn names(snap: &Snapshot, req: &TestRequest, n: usize) -> String {
        names_by(&Chain::standard(), snap, req, n)
    }

    /// The first letters of the upstreams `chain` forwards `n` requests to.
    fn names_by(chain: &Chain, snap: &Snapshot, req: &TestRequest, n: usize) -> String {
        (0..n)
            .map(|_| {
                let f = chain.run_now(&snap.active, &req.view()).unwrap();
                f.lease.upstream().data.upstream_url.chars().next().unwrap()
            })
            .collect()
    }

    #[test]
    fn the_rule_names_the_balancer_and_state_survives_unrelated_changes() {
        let rr = r#"{"loadBalance":"roundRobin"}"#;
        let snap = Snapshot::build(config(true, THREE, rr));
        let req = TestRequest::get("/api/a/x");
        assert_eq!(names(&snap, &req, 3), "aab");
        // A rebuild with the same selector handle keeps the round-robin position...
        let mut data = config(true, THREE, rr);
        data.apply(DataEvent::new(
            DataEventType::Myself,
            EventPayload::MetaData(Vec::new()),
        ));
        let next = Snapshot::rebuild(data, &snap);
        assert_eq!(names(&next, &req, 4), "acaa");
        // ...a changed handle starts over.
        let changed = THREE.replace("c:1", "d:1");
        let other = Snapshot::rebuild(config(true, &changed, rr), &next);
        assert_eq!(names(&other, &req, 7), "aabadaa");
    }

    #[test]
    fn the_chains_emulated_bug_reaches_the_balancer() {
        let snap = Snapshot::build(config(true, THREE, r#"{"loadBalance":"roundRobin"}"#));
        let req = TestRequest::get("/api/a/x");
        let chain = Chain::standard().emulating(Some(EmulatedBug::RoundRobinIgnoresWeights));
        assert_eq!(names_by(&chain, &snap, &req, 6), "abcabc");
    }

    #[test]
    fn specify_domain_bypasses_the_balancer() {
        let snap = Snapshot::build(config(true, THREE, r#"{"loadBalance":"roundRobin"}"#));
        let req = TestRequest::get("/api/a/x").header("specify-domain", "c:1");
        assert_eq!(names(&snap, &req, 3), "ccc");
        let unknown = TestRequest::get("/api/a/x").header("specify-domain", "z:1");
        assert_eq!(names(&snap, &unknown, 2), "aa");
    }
}
