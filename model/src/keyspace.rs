//! The ZooKeeper / etcd key layout of ShenYu 2.6.0 (no namespace prefix), shared by the admin's
//! publishers and the gateway's subscribers:
//!
//! | data | path | value |
//! |---|---|---|
//! | plugin | `/shenyu/plugin/{pluginName}` | [`PluginData`] JSON |
//! | selector | `/shenyu/selector/{pluginName}/{selectorId}` | [`SelectorData`] JSON |
//! | rule | `/shenyu/rule/{pluginName}/{selectorId}-{ruleId}` | [`RuleData`] JSON |
//! | metadata | `/shenyu/metaData/{URL-encoded path}` | [`MetaData`] JSON |
//! | app auth | `/shenyu/auth/{appKey}` | [`AppAuthData`] JSON |
//!
//! The same strings are ZooKeeper znode paths and etcd keys. Ids never contain `-` (the rule
//! node name is split on the first `-`). The metadata segment is encoded like Java's
//! `URLEncoder` (ShenYu 2.6.0), so a path becomes one znode, not a tree.

use crate::app_auth::AppAuthData;
use crate::event::{ConfigGroup, DataEvent, DataEventType, EventPayload};
use crate::meta::MetaData;
use crate::plugin::PluginData;
use crate::rule::RuleData;
use crate::selector::SelectorData;
use crate::url_codec;

/// The root of every key.
pub const ROOT: &str = "/shenyu";
/// The parent of plugin nodes.
pub const PLUGIN_PARENT: &str = "/shenyu/plugin";
/// The parent of the per-plugin selector parents.
pub const SELECTOR_PARENT: &str = "/shenyu/selector";
/// The parent of the per-plugin rule parents.
pub const RULE_PARENT: &str = "/shenyu/rule";
/// The parent of metadata nodes.
pub const META_DATA_PARENT: &str = "/shenyu/metaData";
/// The parent of app auth nodes.
pub const APP_AUTH_PARENT: &str = "/shenyu/auth";
/// Every group parent, in ShenYu's sync order.
pub const PARENTS: [&str; 5] = [
    PLUGIN_PARENT,
    SELECTOR_PARENT,
    RULE_PARENT,
    META_DATA_PARENT,
    APP_AUTH_PARENT,
];

/// The node of one config item, as parsed from (or rendered to) a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKey {
    /// `/shenyu/plugin/{name}`.
    Plugin {
        /// Plugin name.
        name: String,
    },
    /// `/shenyu/selector/{plugin}/{id}`.
    Selector {
        /// The selector's plugin name.
        plugin: String,
        /// Selector id.
        id: String,
    },
    /// `/shenyu/rule/{plugin}/{selector_id}-{id}`.
    Rule {
        /// The rule's plugin name.
        plugin: String,
        /// The rule's selector id.
        selector_id: String,
        /// Rule id.
        id: String,
    },
    /// `/shenyu/metaData/{URL-encoded path}`.
    MetaData {
        /// The metadata path (decoded).
        path: String,
    },
    /// `/shenyu/auth/{app_key}`.
    AppAuth {
        /// Application key.
        app_key: String,
    },
}

/// Why a node's value cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The value is not the JSON of the node's model type.
    #[error("{path}: malformed value: {source}")]
    Json {
        /// The node path.
        path: String,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The value names another item than its path does.
    #[error("{path}: the value is for `{found}`, not for this node")]
    Mismatch {
        /// The node path.
        path: String,
        /// What the value names (rendered as its own path).
        found: String,
    },
}

impl NodeKey {
    /// Parses an item path; `None` for parents, the root and anything outside the layout.
    pub fn parse(path: &str) -> Option<NodeKey> {
        let rest = path.strip_prefix(ROOT)?.strip_prefix('/')?;
        let (kind, rest) = rest.split_once('/')?;
        let segments: Vec<&str> = rest.split('/').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return None;
        }
        match (kind, segments.as_slice()) {
            ("plugin", [name]) => Some(NodeKey::Plugin {
                name: (*name).to_owned(),
            }),
            ("selector", [plugin, id]) => Some(NodeKey::Selector {
                plugin: (*plugin).to_owned(),
                id: (*id).to_owned(),
            }),
            ("rule", [plugin, name]) => {
                let (selector_id, id) = name.split_once('-')?;
                if selector_id.is_empty() || id.is_empty() || id.contains('-') {
                    return None;
                }
                Some(NodeKey::Rule {
                    plugin: (*plugin).to_owned(),
                    selector_id: selector_id.to_owned(),
                    id: id.to_owned(),
                })
            }
            ("metaData", [encoded]) => Some(NodeKey::MetaData {
                path: url_codec::decode(encoded).ok()?.into_owned(),
            }),
            ("auth", [app_key]) => Some(NodeKey::AppAuth {
                app_key: (*app_key).to_owned(),
            }),
            _ => None,
        }
    }

    /// The node's path.
    pub fn path(&self) -> String {
        match self {
            NodeKey::Plugin { name } => format!("{PLUGIN_PARENT}/{name}"),
            NodeKey::Selector { plugin, id } => format!("{SELECTOR_PARENT}/{plugin}/{id}"),
            NodeKey::Rule {
                plugin,
                selector_id,
                id,
            } => format!("{RULE_PARENT}/{plugin}/{selector_id}-{id}"),
            NodeKey::MetaData { path } => format!("{META_DATA_PARENT}/{}", url_codec::encode(path)),
            NodeKey::AppAuth { app_key } => format!("{APP_AUTH_PARENT}/{app_key}"),
        }
    }

    /// The node's config group.
    pub fn group(&self) -> ConfigGroup {
        match self {
            NodeKey::Plugin { .. } => ConfigGroup::Plugin,
            NodeKey::Selector { .. } => ConfigGroup::Selector,
            NodeKey::Rule { .. } => ConfigGroup::Rule,
            NodeKey::MetaData { .. } => ConfigGroup::MetaData,
            NodeKey::AppAuth { .. } => ConfigGroup::AppAuth,
        }
    }

    /// An UPDATE event for this node's value. The value must be the JSON of the node's model
    /// type and name the same item as the path.
    pub fn upsert(&self, value: &[u8]) -> Result<DataEvent, NodeError> {
        let path = self.path();
        let json = |source| NodeError::Json {
            path: path.clone(),
            source,
        };
        let payload = match self {
            NodeKey::Plugin { .. } => {
                EventPayload::Plugin(vec![serde_json::from_slice(value).map_err(json)?])
            }
            NodeKey::Selector { .. } => {
                EventPayload::Selector(vec![serde_json::from_slice(value).map_err(json)?])
            }
            NodeKey::Rule { .. } => {
                EventPayload::Rule(vec![serde_json::from_slice(value).map_err(json)?])
            }
            NodeKey::MetaData { .. } => {
                EventPayload::MetaData(vec![serde_json::from_slice(value).map_err(json)?])
            }
            NodeKey::AppAuth { .. } => {
                EventPayload::AppAuth(vec![serde_json::from_slice(value).map_err(json)?])
            }
        };
        let event = DataEvent::new(DataEventType::Update, payload);
        match item_keys(&event).as_slice() {
            [key] if key == self => Ok(event),
            [key] => Err(NodeError::Mismatch {
                path,
                found: key.path(),
            }),
            _ => unreachable!("one item per node"),
        }
    }
}

/// The node of every item of `event`, in order.
pub fn item_keys(event: &DataEvent) -> Vec<NodeKey> {
    match &event.payload {
        EventPayload::Plugin(items) => items.iter().map(plugin_key).collect(),
        EventPayload::Selector(items) => items.iter().map(selector_key).collect(),
        EventPayload::Rule(items) => items.iter().map(rule_key).collect(),
        EventPayload::MetaData(items) => items.iter().map(meta_data_key).collect(),
        EventPayload::AppAuth(items) => items.iter().map(app_auth_key).collect(),
    }
}

/// Every item of `event` as (node, JSON value), in order.
pub fn item_nodes(event: &DataEvent) -> Vec<(NodeKey, Vec<u8>)> {
    fn json<T: serde::Serialize>(item: &T) -> Vec<u8> {
        serde_json::to_vec(item).expect("model types always serialise")
    }
    let values: Vec<Vec<u8>> = match &event.payload {
        EventPayload::Plugin(items) => items.iter().map(json).collect(),
        EventPayload::Selector(items) => items.iter().map(json).collect(),
        EventPayload::Rule(items) => items.iter().map(json).collect(),
        EventPayload::MetaData(items) => items.iter().map(json).collect(),
        EventPayload::AppAuth(items) => items.iter().map(json).collect(),
    };
    item_keys(event).into_iter().zip(values).collect()
}

/// The parent holding a group's nodes (directly, or one level down for selectors and rules).
pub fn group_parent(group: ConfigGroup) -> Option<&'static str> {
    match group {
        ConfigGroup::Plugin => Some(PLUGIN_PARENT),
        ConfigGroup::Selector => Some(SELECTOR_PARENT),
        ConfigGroup::Rule => Some(RULE_PARENT),
        ConfigGroup::MetaData => Some(META_DATA_PARENT),
        ConfigGroup::AppAuth => Some(APP_AUTH_PARENT),
        ConfigGroup::ProxySelector | ConfigGroup::AiProxyApiKey | ConfigGroup::DiscoverUpstream => {
            None
        }
    }
}

/// The prefix of every rule node of selector `selector_id` (of plugin `plugin`).
pub fn selector_rules_prefix(plugin: &str, selector_id: &str) -> String {
    format!("{RULE_PARENT}/{plugin}/{selector_id}-")
}

fn plugin_key(p: &PluginData) -> NodeKey {
    NodeKey::Plugin {
        name: p.name.clone(),
    }
}

fn selector_key(s: &SelectorData) -> NodeKey {
    NodeKey::Selector {
        plugin: s.plugin_name.clone(),
        id: s.id.clone(),
    }
}

fn rule_key(r: &RuleData) -> NodeKey {
    NodeKey::Rule {
        plugin: r.plugin_name.clone(),
        selector_id: r.selector_id.clone(),
        id: r.id.clone(),
    }
}

fn meta_data_key(m: &MetaData) -> NodeKey {
    NodeKey::MetaData {
        path: m.path.clone(),
    }
}

fn app_auth_key(a: &AppAuthData) -> NodeKey {
    NodeKey::AppAuth {
        app_key: a.app_key.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        let keys = [
            NodeKey::Plugin {
                name: "divide".into(),
            },
            NodeKey::Selector {
                plugin: "divide".into(),
                id: "1797".into(),
            },
            NodeKey::Rule {
                plugin: "divide".into(),
                selector_id: "1797".into(),
                id: "1798".into(),
            },
            NodeKey::MetaData {
                path: "/http/order/find by id".into(),
            },
            NodeKey::AppAuth {
                app_key: "k1".into(),
            },
        ];
        let paths: Vec<String> = keys.iter().map(NodeKey::path).collect();
        assert_eq!(
            paths,
            [
                "/shenyu/plugin/divide",
                "/shenyu/selector/divide/1797",
                "/shenyu/rule/divide/1797-1798",
                "/shenyu/metaData/%2Fhttp%2Forder%2Ffind+by+id",
                "/shenyu/auth/k1",
            ]
        );
        for (key, path) in keys.iter().zip(&paths) {
            assert_eq!(NodeKey::parse(path).as_ref(), Some(key), "{path}");
        }
    }

    #[test]
    fn parents_and_foreign_paths_are_not_items() {
        for path in [
            "/shenyu",
            "/shenyu/plugin",
            "/shenyu/selector/divide",
            "/shenyu/rule/divide",
            "/shenyu/rule/divide/17",
            "/shenyu/rule/divide/-1",
            "/shenyu/rule/divide/1-2-3",
            "/shenyu/selector/divide/1/2",
            "/shenyu/plugin/",
            "/shenyu/metaData/%zz",
            "/shenyu/metaData/%2",
            "/shenyu/proxySelectorData/divide/1",
            "/other/plugin/divide",
            "/shenyux/plugin/divide",
        ] {
            assert_eq!(NodeKey::parse(path), None, "{path}");
        }
    }

    /// The metadata segment is read as ShenYu's subscriber reads a deleted node's name
    /// (`URLDecoder.decode`): any case of hex, and bytes that are not UTF-8 as U+FFFD.
    #[test]
    fn meta_data_segments_decode_like_java() {
        for (path, want) in [
            ("/shenyu/metaData/%2fx", "/x"),
            ("/shenyu/metaData/%C3", "\u{fffd}"),
        ] {
            assert_eq!(
                NodeKey::parse(path),
                Some(NodeKey::MetaData { path: want.into() }),
                "{path}"
            );
        }
    }

    #[test]
    fn values_must_be_the_nodes_json() {
        let key = NodeKey::parse("/shenyu/rule/divide/1-2").unwrap();
        let event = key
            .upsert(br#"{"id":"2","selectorId":"1","pluginName":"divide"}"#)
            .unwrap();
        assert_eq!(event.group(), ConfigGroup::Rule);
        assert_eq!(item_keys(&event), std::slice::from_ref(&key));
        assert!(matches!(
            key.upsert(br#"{"id":"3","selectorId":"1","pluginName":"divide"}"#),
            Err(NodeError::Mismatch { .. })
        ));
        assert!(matches!(key.upsert(b""), Err(NodeError::Json { .. })));
        assert!(matches!(
            key.upsert(b"{\"id\":7}"),
            Err(NodeError::Json { .. })
        ));
        let nodes = item_nodes(&event);
        assert_eq!(nodes[0].0.path(), "/shenyu/rule/divide/1-2");
        assert_eq!(key.upsert(&nodes[0].1).unwrap(), event);
    }
}
