//! [`Groups`]: the items of the five synced groups as the database holds them, kept by
//! applying the admin's change events, and each group's JSON exactly as a rebuild from the
//! database writes it.
//!
//! A rebuild serialises [`Snapshot`]'s lists, which are in the store's query order
//! (`admin/src/store`; the in-memory store sorts the same way):
//! - PLUGIN, SELECTOR and RULE: `ORDER BY sort, id`;
//! - META_DATA: `ORDER BY id`; APP_AUTH: `ORDER BY app_key`;
//!
//! with text compared byte by byte (SQLite's BINARY collation, as Rust compares `str`). A
//! PostgreSQL database whose collation is not `C` may sort ids and app keys differently; the
//! numeric ids sort the same either way, app keys with mixed case or punctuation may not.
//!
//! Each group is kept in that order, so a change costs one map update plus one serialisation
//! of the group it touches; other groups are not looked at (but for RULE when a selector
//! moves to another plugin: [`Groups::apply`]).

use std::collections::{BTreeMap, HashMap};

use model::{
    AppAuthData, ConfigGroup, DataEvent, DataEventType, EventPayload, MetaData, PluginData,
    RuleData, SelectorData,
};
use serde::{Serialize, Serializer};

use crate::service::Snapshot;

/// An item of a group.
trait Row: Clone + Serialize {
    /// Where the store's query puts the item: its `ORDER BY`, ending in a unique column.
    type Order: Ord + Clone;
    /// The item's identity in its group (what a DELETE names).
    fn key(&self) -> &str;
    fn order(&self) -> Self::Order;
    /// The item as the database gives it back: an update event also carries the previous
    /// version's conditions (`before…`), which are not stored.
    fn stored(self) -> Self {
        self
    }
}

impl Row for PluginData {
    type Order = (i32, String);
    fn key(&self) -> &str {
        &self.id
    }
    fn order(&self) -> Self::Order {
        (self.sort, self.id.clone())
    }
}

impl Row for SelectorData {
    type Order = (i32, String);
    fn key(&self) -> &str {
        &self.id
    }
    fn order(&self) -> Self::Order {
        (self.sort, self.id.clone())
    }
    fn stored(self) -> Self {
        Self {
            before_condition_list: Vec::new(),
            ..self
        }
    }
}

impl Row for RuleData {
    type Order = (i32, String);
    fn key(&self) -> &str {
        &self.id
    }
    fn order(&self) -> Self::Order {
        (self.sort, self.id.clone())
    }
    fn stored(self) -> Self {
        Self {
            before_condition_data_list: Vec::new(),
            ..self
        }
    }
}

impl Row for MetaData {
    type Order = String;
    fn key(&self) -> &str {
        &self.id
    }
    fn order(&self) -> Self::Order {
        self.id.clone()
    }
}

impl Row for AppAuthData {
    type Order = String;
    fn key(&self) -> &str {
        &self.app_key
    }
    fn order(&self) -> Self::Order {
        self.app_key.clone()
    }
}

/// One group's items, in the store's order, found by key.
#[derive(Debug)]
struct Group<T: Row> {
    items: BTreeMap<T::Order, T>,
    order_of: HashMap<String, T::Order>,
}

impl<T: Row> Group<T> {
    fn of(items: Vec<T>) -> Self {
        let mut group = Self {
            items: BTreeMap::new(),
            order_of: HashMap::with_capacity(items.len()),
        };
        for item in items {
            group.upsert(item);
        }
        group
    }

    fn get(&self, key: &str) -> Option<&T> {
        self.order_of.get(key).and_then(|o| self.items.get(o))
    }

    /// Puts `item` in (as stored), answering the version it replaces.
    fn upsert(&mut self, item: T) -> Option<T> {
        let item = item.stored();
        let order = item.order();
        let previous = self
            .order_of
            .insert(item.key().to_owned(), order.clone())
            .and_then(|old| self.items.remove(&old));
        self.items.insert(order, item);
        previous
    }

    fn remove(&mut self, key: &str) {
        if let Some(order) = self.order_of.remove(key) {
            self.items.remove(&order);
        }
    }

    /// Takes in one event's items; answers whether the group may have changed.
    fn apply(&mut self, event_type: DataEventType, items: &[T]) -> bool {
        match event_type {
            DataEventType::Create | DataEventType::Update => {
                for item in items {
                    self.upsert(item.clone());
                }
                !items.is_empty()
            }
            DataEventType::Delete => {
                for item in items {
                    self.remove(item.key());
                }
                !items.is_empty()
            }
            DataEventType::Refresh | DataEventType::Myself => {
                *self = Self::of(items.to_vec());
                true
            }
            // A websocket control message, no data.
            DataEventType::RunningMode => false,
        }
    }

    /// The JSON array of the items, as `serde_json::to_string` writes the query's list.
    fn json(&self) -> String {
        serde_json::to_string(self).expect("model types always serialise")
    }
}

impl<T: Row> Serialize for Group<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.items.values())
    }
}

/// The five synced groups as the database holds them.
#[derive(Debug)]
pub(super) struct Groups {
    plugins: Group<PluginData>,
    selectors: Group<SelectorData>,
    rules: Group<RuleData>,
    meta_data: Group<MetaData>,
    app_auth: Group<AppAuthData>,
}

impl Groups {
    /// The groups of `snapshot`.
    pub(super) fn from_snapshot(snapshot: Snapshot) -> Self {
        let config = snapshot.config;
        Self {
            plugins: Group::of(config.plugins),
            selectors: Group::of(config.selectors),
            rules: Group::of(config.rules),
            meta_data: Group::of(config.meta_data),
            app_auth: Group::of(snapshot.app_auth),
        }
    }

    /// Takes in one change event; answers the groups whose JSON may have changed.
    ///
    /// A rule's `pluginName` is its selector's plugin's name, which the database joins in: a
    /// selector moved to another plugin changes its rules too, though no RULE event says so.
    pub(super) fn apply(&mut self, event: &DataEvent) -> Vec<ConfigGroup> {
        let kind = event.event_type;
        let touched = match &event.payload {
            EventPayload::Plugin(items) => self.plugins.apply(kind, items),
            EventPayload::Selector(items) => {
                let moved: Vec<&str> = match kind {
                    DataEventType::Create | DataEventType::Update => items
                        .iter()
                        .filter(|s| {
                            self.selectors
                                .get(&s.id)
                                .is_some_and(|old| old.plugin_name != s.plugin_name)
                        })
                        .map(|s| s.id.as_str())
                        .collect(),
                    _ => Vec::new(),
                };
                let touched = self.selectors.apply(kind, items);
                let rules_moved = if kind.is_full() {
                    self.join_rule_plugins(|_| true)
                } else if !moved.is_empty() {
                    self.join_rule_plugins(|rule| moved.contains(&rule.selector_id.as_str()))
                } else {
                    false
                };
                if rules_moved {
                    return vec![ConfigGroup::Selector, ConfigGroup::Rule];
                }
                touched
            }
            EventPayload::Rule(items) => self.rules.apply(kind, items),
            EventPayload::MetaData(items) => self.meta_data.apply(kind, items),
            EventPayload::AppAuth(items) => self.app_auth.apply(kind, items),
        };
        if touched {
            vec![event.group()]
        } else {
            Vec::new()
        }
    }

    /// Sets the `pluginName` of the rules `which` selects to their selector's (left alone
    /// when the selector is unknown); answers whether one changed.
    fn join_rule_plugins(&mut self, which: impl Fn(&RuleData) -> bool) -> bool {
        let mut changed = false;
        for rule in self.rules.items.values_mut().filter(|r| which(r)) {
            if let Some(selector) = self.selectors.get(&rule.selector_id)
                && selector.plugin_name != rule.plugin_name
            {
                rule.plugin_name.clone_from(&selector.plugin_name);
                changed = true;
            }
        }
        changed
    }

    /// The JSON text of `group`'s list; groups gantry does not model are `[]`.
    pub(super) fn json(&self, group: ConfigGroup) -> String {
        match group {
            ConfigGroup::Plugin => self.plugins.json(),
            ConfigGroup::Selector => self.selectors.json(),
            ConfigGroup::Rule => self.rules.json(),
            ConfigGroup::MetaData => self.meta_data.json(),
            ConfigGroup::AppAuth => self.app_auth.json(),
            ConfigGroup::ProxySelector
            | ConfigGroup::AiProxyApiKey
            | ConfigGroup::DiscoverUpstream => "[]".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(id: &str, sort: i32, plugin: &str) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            sort,
            plugin_name: plugin.to_owned(),
            ..Default::default()
        }
    }

    fn rule(id: &str, sort: i32, selector: &str, plugin: &str) -> RuleData {
        RuleData {
            id: id.to_owned(),
            sort,
            selector_id: selector.to_owned(),
            plugin_name: plugin.to_owned(),
            ..Default::default()
        }
    }

    fn groups(selectors: Vec<SelectorData>, rules: Vec<RuleData>) -> Groups {
        Groups::from_snapshot(Snapshot {
            config: model::ConfigSet {
                selectors,
                rules,
                ..Default::default()
            },
            app_auth: Vec::new(),
        })
    }

    fn ids(json: &str) -> Vec<String> {
        let items: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
        items
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn items_are_kept_in_the_queries_order_by_sort_then_id_bytes() {
        let mut groups = groups(
            vec![selector("9", 1, "divide"), selector("10", 1, "divide")],
            Vec::new(),
        );
        // "10" < "9" byte by byte; sort first.
        assert_eq!(ids(&groups.json(ConfigGroup::Selector)), ["10", "9"]);
        let touched = groups.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![
                selector("10", 2, "divide"),
                selector("8", 0, "divide"),
            ]),
        ));
        assert_eq!(touched, [ConfigGroup::Selector]);
        assert_eq!(ids(&groups.json(ConfigGroup::Selector)), ["8", "9", "10"]);
        let touched = groups.apply(&DataEvent::new(
            DataEventType::Delete,
            EventPayload::Selector(vec![selector("9", 123, "")]),
        ));
        assert_eq!(touched, [ConfigGroup::Selector]);
        assert_eq!(ids(&groups.json(ConfigGroup::Selector)), ["8", "10"]);
        assert_eq!(groups.json(ConfigGroup::ProxySelector), "[]");
    }

    #[test]
    fn an_updates_before_conditions_are_not_kept() {
        let mut groups = groups(vec![selector("1", 1, "divide")], Vec::new());
        let mut updated = selector("1", 1, "divide");
        updated.before_condition_list = vec![model::ConditionData::default()];
        groups.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![updated]),
        ));
        assert!(
            !groups
                .json(ConfigGroup::Selector)
                .contains("beforeConditionList")
        );
    }

    #[test]
    fn a_selector_moved_to_another_plugin_takes_its_rules_along() {
        let mut groups = groups(
            vec![selector("1", 1, "divide"), selector("2", 1, "divide")],
            vec![rule("3", 1, "1", "divide"), rule("4", 1, "2", "divide")],
        );
        let touched = groups.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![selector("1", 1, "waf")]),
        ));
        assert_eq!(touched, [ConfigGroup::Selector, ConfigGroup::Rule]);
        let rules: Vec<serde_json::Value> =
            serde_json::from_str(&groups.json(ConfigGroup::Rule)).unwrap();
        assert_eq!(rules[0]["pluginName"], "waf");
        assert_eq!(rules[1]["pluginName"], "divide");
        let touched = groups.apply(&DataEvent::new(
            DataEventType::RunningMode,
            EventPayload::Selector(vec![selector("1", 1, "x")]),
        ));
        assert!(touched.is_empty());
    }
}
