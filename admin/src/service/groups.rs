//! The five synced groups as the database holds them ([`ConfigGroups`]), kept by applying the
//! admin's change events: the one model of what an admin has published (`peers`, which
//! compares it with the database) and of the long-poll cache (`sync::http_long_poll`, which
//! serves each group's JSON exactly as a rebuild from the database writes it).
//!
//! Each group is kept in the store's query order (`admin/src/store`; the in-memory store sorts
//! the same way):
//! - PLUGIN, SELECTOR and RULE: `ORDER BY sort, id`;
//! - META_DATA: `ORDER BY id`; APP_AUTH: `ORDER BY app_key`;
//!
//! with text compared byte by byte (SQLite's BINARY collation, as Rust compares `str`). A
//! PostgreSQL database whose collation is not `C` may sort ids and app keys differently; the
//! numeric ids sort the same either way, app keys with mixed case or punctuation may not.
//! Items are kept as stored: an update's `before…` condition lists describe the previous
//! version, which the database does not hold.

use std::collections::{BTreeMap, HashMap, HashSet};

use model::{
    AppAuthData, DataEvent, DataEventType, EventPayload, MetaData, PluginData, RuleData,
    SelectorData,
};
use serde::{Serialize, Serializer};

use super::Snapshot;

/// An item of a group.
pub(crate) trait Row: Clone + PartialEq + Serialize {
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
pub(crate) struct Group<T: Row> {
    items: BTreeMap<T::Order, T>,
    order_of: HashMap<String, T::Order>,
}

impl<T: Row> Default for Group<T> {
    fn default() -> Self {
        Self {
            items: BTreeMap::new(),
            order_of: HashMap::new(),
        }
    }
}

impl<T: Row> Group<T> {
    /// The group of `items`.
    pub(crate) fn of(items: Vec<T>) -> Self {
        let mut group = Self {
            items: BTreeMap::new(),
            order_of: HashMap::with_capacity(items.len()),
        };
        for item in items {
            group.upsert(item);
        }
        group
    }

    /// The item with `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&T> {
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

    /// The items, in the store's order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.items.values()
    }

    /// The items, in the store's order, to change in place (not their key or order).
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.values_mut()
    }

    /// Takes in one event's items; answers whether the group may have changed.
    pub(crate) fn apply(&mut self, event_type: DataEventType, items: &[T]) -> bool {
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

    /// Moves to `now`, answering the items of `now` that are new or differ (in `now`'s order)
    /// and the items `now` lacks (by key).
    pub(crate) fn advance(&mut self, now: &[T]) -> (Vec<T>, Vec<T>) {
        let changed = now
            .iter()
            .filter(|i| self.get(i.key()) != Some(*i))
            .cloned()
            .collect();
        let keys: HashSet<&str> = now.iter().map(Row::key).collect();
        let mut gone: Vec<T> = self
            .values()
            .filter(|i| !keys.contains(i.key()))
            .cloned()
            .collect();
        gone.sort_by(|a, b| a.key().cmp(b.key()));
        *self = Self::of(now.to_vec());
        (changed, gone)
    }

    /// The JSON array of the items, as `serde_json::to_string` writes the query's list.
    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).expect("model types always serialise")
    }
}

impl<T: Row> Serialize for Group<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.items.values())
    }
}

/// The five synced groups as the database holds them.
#[derive(Debug, Default)]
pub(crate) struct ConfigGroups {
    pub(crate) plugins: Group<PluginData>,
    pub(crate) selectors: Group<SelectorData>,
    pub(crate) rules: Group<RuleData>,
    pub(crate) meta_data: Group<MetaData>,
    pub(crate) app_auth: Group<AppAuthData>,
}

impl ConfigGroups {
    /// The groups of `snapshot`.
    pub(crate) fn from_snapshot(snapshot: Snapshot) -> Self {
        let config = snapshot.config;
        Self {
            plugins: Group::of(config.plugins),
            selectors: Group::of(config.selectors),
            rules: Group::of(config.rules),
            meta_data: Group::of(config.meta_data),
            app_auth: Group::of(snapshot.app_auth),
        }
    }

    /// Takes in one change event; answers whether its group may have changed.
    pub(crate) fn apply(&mut self, event: &DataEvent) -> bool {
        let kind = event.event_type;
        match &event.payload {
            EventPayload::Plugin(items) => self.plugins.apply(kind, items),
            EventPayload::Selector(items) => self.selectors.apply(kind, items),
            EventPayload::Rule(items) => self.rules.apply(kind, items),
            EventPayload::MetaData(items) => self.meta_data.apply(kind, items),
            EventPayload::AppAuth(items) => self.app_auth.apply(kind, items),
        }
    }
}
