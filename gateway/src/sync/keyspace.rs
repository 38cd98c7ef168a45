//! Applying ShenYu 2.6.0 key-value nodes ([`model::keyspace`]) to the snapshot, shared by the
//! ZooKeeper and etcd subscribers: a full read becomes one REFRESH event per group, applied in
//! one swap; a changed node becomes an UPDATE event and a deleted node a DELETE event, both
//! applied by [`SyncState::apply`]. A node whose value cannot be read is logged, counted as
//! rejected and ignored; parents and foreign keys are not items and are skipped.

use model::keyspace::NodeKey;
use model::{
    AppAuthData, ConfigSet, DataEvent, DataEventType, EventPayload, PluginData, RuleData,
    SelectorData,
};

use super::SyncState;

/// Replaces the whole config with the items among `nodes` (path, value), in one swap.
/// Returns the number of items applied.
pub(super) fn replace_all(
    state: &SyncState,
    nodes: impl IntoIterator<Item = (String, Vec<u8>)>,
) -> usize {
    let mut config = ConfigSet::default();
    let mut app_auth = Vec::new();
    for (path, value) in nodes {
        let Some(event) = read_node(state, &path, &value) else {
            continue;
        };
        match event.payload {
            EventPayload::Plugin(items) => config.plugins.extend(items),
            EventPayload::Selector(items) => config.selectors.extend(items),
            EventPayload::Rule(items) => config.rules.extend(items),
            EventPayload::MetaData(items) => config.meta_data.extend(items),
            EventPayload::AppAuth(items) => app_auth.extend(items),
        }
    }
    let events = DataEvent::full_sync(DataEventType::Refresh, config, app_auth);
    let items = events.iter().map(DataEvent::len).sum();
    state.apply_all(events.into());
    items
}

/// Applies a created or changed node.
pub(super) fn put(state: &SyncState, path: &str, value: &[u8]) {
    if let Some(event) = read_node(state, path, value) {
        tracing::debug!(%path, "sync node changed");
        state.apply(event);
    }
}

/// Applies a deleted node.
pub(super) fn delete(state: &SyncState, path: &str) {
    let Some(key) = NodeKey::parse(path) else {
        return;
    };
    let payload = match key {
        NodeKey::Plugin { name } => EventPayload::Plugin(vec![PluginData {
            name,
            ..Default::default()
        }]),
        NodeKey::Selector { plugin, id } => EventPayload::Selector(vec![SelectorData {
            id,
            plugin_name: plugin,
            ..Default::default()
        }]),
        NodeKey::Rule {
            plugin,
            selector_id,
            id,
        } => EventPayload::Rule(vec![RuleData {
            id,
            selector_id,
            plugin_name: plugin,
            ..Default::default()
        }]),
        NodeKey::MetaData { path } => EventPayload::MetaData(
            // The gateway keys metadata by id; the node names its path.
            state
                .snapshot()
                .data
                .meta_data
                .values()
                .filter(|m| m.path == path)
                .cloned()
                .collect(),
        ),
        NodeKey::AppAuth { app_key } => EventPayload::AppAuth(vec![AppAuthData {
            app_key,
            ..Default::default()
        }]),
    };
    tracing::debug!(%path, "sync node deleted");
    state.apply(DataEvent::new(DataEventType::Delete, payload));
}

/// The UPDATE event for an item node; `None` for a non-item node or a rejected value.
fn read_node(state: &SyncState, path: &str, value: &[u8]) -> Option<DataEvent> {
    let key = NodeKey::parse(path)?;
    match key.upsert(value) {
        Ok(event) => Some(event),
        Err(e) => {
            tracing::warn!(error = %e, "rejected sync node");
            state.reject();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use model::SyncMode;

    use super::*;
    use crate::plugin::Registry;

    fn node(path: &str, value: &str) -> (String, Vec<u8>) {
        (path.to_owned(), value.as_bytes().to_vec())
    }

    #[test]
    fn full_read_replaces_in_one_swap_and_rejects_bad_nodes() {
        let state = SyncState::new(SyncMode::Zookeeper, Registry::standard());
        put(
            &state,
            "/shenyu/selector/divide/9",
            br#"{"id":"9","pluginName":"divide"}"#,
        );
        let applied = replace_all(
            &state,
            [
                node("/shenyu", ""),
                node("/shenyu/selector/divide", ""),
                node(
                    "/shenyu/plugin/divide",
                    r#"{"id":"5","name":"divide","enabled":true}"#,
                ),
                node(
                    "/shenyu/selector/divide/1",
                    r#"{"id":"1","pluginName":"divide"}"#,
                ),
                node(
                    "/shenyu/rule/divide/1-2",
                    r#"{"id":"2","selectorId":"1","pluginName":"divide"}"#,
                ),
                node("/shenyu/rule/divide/1-3", "not json"),
                node(
                    "/shenyu/selector/divide/4",
                    r#"{"id":"5","pluginName":"divide"}"#,
                ),
                node(
                    "/shenyu/metaData/%2Fhttp%2Fa",
                    r#"{"id":"m1","path":"/http/a","enabled":true}"#,
                ),
            ],
        );
        assert_eq!(applied, 4);
        let snap = state.snapshot();
        assert_eq!(snap.digest.plugins, 1);
        assert_eq!(snap.digest.selectors, 1);
        assert_eq!(snap.digest.rules, 1);
        assert_eq!(snap.digest.meta_data, 1);
        drop(snap);
        let health = state.health();
        assert_eq!(
            (
                health.events_rejected,
                health.full_syncs,
                health.events_applied
            ),
            (2, 5, 6)
        );

        delete(&state, "/shenyu/metaData/%2Fhttp%2Fa");
        delete(&state, "/shenyu/rule/divide/1-2");
        delete(&state, "/shenyu/selector/divide");
        let snap = state.snapshot();
        assert_eq!((snap.digest.rules, snap.digest.meta_data), (0, 0));
        assert_eq!(snap.digest.selectors, 1);
        drop(snap);
        delete(&state, "/shenyu/selector/divide/1");
        delete(&state, "/shenyu/plugin/divide");
        let snap = state.snapshot();
        assert_eq!((snap.digest.selectors, snap.digest.plugins), (0, 0));
    }

    /// Every node of a config with one divide selector (two upstreams, round-robin) and
    /// another selector named `other`.
    fn round_robin_nodes(other: &str) -> Vec<(String, Vec<u8>)> {
        let upstreams =
            r#"[{\"upstreamUrl\":\"a:1\",\"weight\":1},{\"upstreamUrl\":\"b:1\",\"weight\":1}]"#;
        let api =
            r#"[{"paramType":"uri","operator":"startsWith","paramName":"/","paramValue":"/api"}]"#;
        vec![
            node(
                "/shenyu/plugin/divide",
                r#"{"id":"5","name":"divide","enabled":true}"#,
            ),
            node(
                "/shenyu/selector/divide/1",
                &format!(
                    r#"{{"id":"1","pluginName":"divide","enabled":true,"sort":1,"handle":"{upstreams}","conditionList":{api}}}"#
                ),
            ),
            node(
                "/shenyu/rule/divide/1-2",
                &format!(
                    r#"{{"id":"2","selectorId":"1","pluginName":"divide","enabled":true,"handle":"{{\"loadBalance\":\"roundRobin\"}}","conditionDataList":{api}}}"#
                ),
            ),
            node(
                "/shenyu/selector/divide/9",
                &format!(r#"{{"id":"9","pluginName":"divide","name":"{other}","sort":2}}"#),
            ),
        ]
    }

    /// The upstream (`a` or `b`) the next request to `/api` goes to.
    fn pick(state: &SyncState) -> char {
        let req = crate::router::test_helpers::TestRequest::get("/api/x");
        let forward = crate::plugin::Chain::standard()
            .run_now(&state.snapshot().active, &req.view())
            .unwrap();
        forward
            .lease
            .upstream()
            .data
            .upstream_url
            .chars()
            .next()
            .unwrap()
    }

    #[test]
    fn a_full_read_keeps_the_balancer_state_of_unchanged_selectors() {
        let state = SyncState::new(SyncMode::Zookeeper, Registry::standard());
        replace_all(&state, round_robin_nodes("x"));
        let first = pick(&state);
        // A fresh gateway starts the cycle at `first`: the observable below can fail.
        let fresh = SyncState::new(SyncMode::Etcd, Registry::standard());
        replace_all(&fresh, round_robin_nodes("x"));
        assert_eq!(pick(&fresh), first);
        // The same config read again, then one with another selector changed: the
        // round-robin position of selector 1 carries on each time.
        replace_all(&state, round_robin_nodes("x"));
        let second = pick(&state);
        assert_ne!(second, first, "a re-read must not restart the cycle");
        replace_all(&state, round_robin_nodes("y"));
        assert_eq!(
            pick(&state),
            first,
            "nor a re-read that changed another selector"
        );
        assert_eq!(state.health().full_syncs, 15);
    }
}
