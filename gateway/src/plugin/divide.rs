//! The divide plugin (ShenYu `DividePlugin`): selector, then rule, then a weighted-random
//! upstream of the selector. No selector → 404 -107, no rule → 404 -102, no usable upstream →
//! 503 -119; a missing or disabled divide plugin lets the chain end in -106.

use std::sync::{Arc, LazyLock};
use std::time::{SystemTime, UNIX_EPOCH};

use http::StatusCode;
use model::{DivideRuleHandle, GatewayError};

use super::{Forward, Outcome, Plugin, Rejection};
use crate::balance;
use crate::router::RequestView;
use crate::router::select::{DEFAULT_RULE_ID, RuleChoice, select_selector};
use crate::snapshot::Snapshot;

/// The plugin name.
pub(crate) const NAME: &str = "divide";

static DEFAULT_RULE: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(DEFAULT_RULE_ID));

/// The divide plugin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Divide;

impl Plugin for Divide {
    fn class_name(&self) -> &'static str {
        "org.apache.shenyu.plugin.divide.DividePlugin"
    }

    fn order(&self) -> i32 {
        200
    }

    fn execute(&self, snapshot: &Snapshot, req: &RequestView<'_>) -> Outcome {
        let reject = |status, body| Outcome::Reject(Rejection::new(status, body));
        let Some(plugin) = snapshot.plugins.get(NAME).filter(|p| p.enabled) else {
            return Outcome::Continue;
        };
        let selector = match select_selector(&plugin.selectors, req) {
            Err(e) => return Outcome::Reject(e.into()),
            Ok(None) => {
                return reject(
                    StatusCode::NOT_FOUND,
                    GatewayError::selector_not_found(NAME),
                );
            }
            Ok(Some(s)) => s,
        };
        let (rule_id, timeout) = match selector.select_rule(req) {
            Err(e) => return Outcome::Reject(e.into()),
            Ok(None) => return reject(StatusCode::NOT_FOUND, GatewayError::rule_not_found(NAME)),
            Ok(Some(RuleChoice::Default)) => {
                (DEFAULT_RULE.clone(), DivideRuleHandle::default().timeout)
            }
            Ok(Some(RuleChoice::Rule(r))) => (r.id.clone(), r.handle.timeout),
        };
        let Some(upstream) = balance::pick(&selector.upstreams, now_ms()) else {
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
            scheme: upstream.scheme.clone(),
            authority: upstream.authority.clone(),
            host: upstream.host.clone(),
            timeout_ms: timeout_ms.unsigned_abs(),
            selector_id: selector.id.clone(),
            rule_id,
        })
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Chain;
    use crate::router::test_helpers::TestRequest;
    use crate::snapshot::ConfigData;
    use model::{
        ConditionData, DataEvent, DataEventType, EventPayload, PluginData, RuleData, SelectorData,
    };

    fn snapshot(enabled: bool, handle: &str) -> Snapshot {
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
                handle: Some(r#"{"timeout":1234}"#.into()),
                condition_data_list: vec![ConditionData::new("uri", "match", "/", "/api/a/**")],
                ..Default::default()
            }]),
        ));
        Snapshot::build(d)
    }

    const UP: &str = r#"[{"upstreamUrl":"127.0.0.1:8080","weight":50,"status":true}]"#;

    fn run(snap: &Snapshot, path: &str) -> Result<Forward, Rejection> {
        let req = TestRequest::get(path);
        Chain::standard().run(snap, &req.view())
    }

    #[test]
    fn outcomes() {
        let snap = snapshot(true, UP);
        let f = run(&snap, "/api/a/x").unwrap();
        assert_eq!(
            (
                f.authority.as_str(),
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
}
