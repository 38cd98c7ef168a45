//! The config as received, kept in persistent maps (`imbl`): copying it for the next snapshot
//! shares everything, and applying an event costs in proportion to the items it carries. Each
//! event also reports what it changed ([`Changes`]), so the compiled tables are updated for
//! those items only, and the digest ([`ConfigDigest`]) is kept up to date item by item.

use std::collections::{BTreeMap, BTreeSet};

use imbl::{HashMap as PersistentMap, OrdMap};
use model::{
    AppAuthData, ConfigDigest, DataEvent, DataEventType, DigestItem, EventPayload, MetaData,
    PluginData, RuleData, SelectorData,
};

use crate::router::index::Order;

/// An item kept in lists by owner: selectors by plugin name, rules by selector id.
pub(crate) trait Listed: Clone {
    /// The item's id.
    fn id(&self) -> &str;
    /// The list it belongs in.
    fn owner(&self) -> &str;
    /// The item as the digest counts it.
    fn digest_item(&self) -> DigestItem<'_>;
}

impl Listed for SelectorData {
    fn id(&self) -> &str {
        &self.id
    }
    fn owner(&self) -> &str {
        &self.plugin_name
    }
    fn digest_item(&self) -> DigestItem<'_> {
        DigestItem::Selector(self)
    }
}

impl Listed for RuleData {
    fn id(&self) -> &str {
        &self.id
    }
    fn owner(&self) -> &str {
        &self.selector_id
    }
    fn digest_item(&self) -> DigestItem<'_> {
        DigestItem::Rule(self)
    }
}

/// Items in ordered lists by owner, each id in one place.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lists<T: Listed> {
    /// Where each id is: its owner and its order.
    places: PersistentMap<String, (String, Order)>,
    /// The lists by owner, never empty.
    lists: OrdMap<String, OrdMap<Order, T>>,
}

impl<T: Listed> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            places: PersistentMap::new(),
            lists: OrdMap::new(),
        }
    }
}

impl<T: Listed> Lists<T> {
    /// The item with `id`, with its owner and order.
    pub(crate) fn get(&self, id: &str) -> Option<(&str, Order, &T)> {
        let (owner, order) = self.places.get(id)?;
        let item = self.lists.get(owner)?.get(order)?;
        Some((owner, *order, item))
    }

    /// The items of `owner`, in order.
    pub(crate) fn list(&self, owner: &str) -> impl Iterator<Item = &T> {
        self.lists.get(owner).into_iter().flat_map(OrdMap::values)
    }

    /// Every id held.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &String> {
        self.places.keys()
    }

    /// The lists by owner, each in order (what the inspection endpoints show).
    pub(crate) fn by_owner(&self) -> BTreeMap<&str, Vec<&T>> {
        self.lists
            .iter()
            .map(|(owner, list)| (owner.as_str(), list.values().collect()))
            .collect()
    }

    /// Inserts `item` at `order` of its owner's list (its id must not be held).
    fn insert(&mut self, item: T, order: Order) {
        let owner = item.owner().to_owned();
        self.places
            .insert(item.id().to_owned(), (owner.clone(), order));
        self.lists.entry(owner).or_default().insert(order, item);
    }

    /// Removes the item with `id`; with `owner`, only from that owner's list.
    fn remove(&mut self, id: &str, owner: Option<&str>) -> Option<T> {
        let (held_by, order) = self.places.get(id)?;
        if owner.is_some_and(|o| o != held_by) {
            return None;
        }
        let (held_by, order) = (held_by.clone(), *order);
        self.places.remove(id);
        let list = self.lists.get_mut(&held_by)?;
        let item = list.remove(&order);
        if list.is_empty() {
            self.lists.remove(&held_by);
        }
        item
    }

    /// Removes the whole list of `owner`.
    fn remove_owner(&mut self, owner: &str) -> Vec<T> {
        let list = self.lists.remove(owner).unwrap_or_default();
        for item in list.values() {
            self.places.remove(item.id());
        }
        list.into_iter().map(|(_, item)| item).collect()
    }

    /// Removes everything.
    fn clear(&mut self) -> impl Iterator<Item = T> {
        self.places = PersistentMap::new();
        std::mem::take(&mut self.lists)
            .into_iter()
            .flat_map(|(_, list)| list.into_iter().map(|(_, item)| item))
    }
}

/// What applying events changed, for the compiled tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// A selector or rule group was replaced whole: every selector is looked at again.
    pub(crate) all: bool,
    /// Ids of the selectors whose data or rules changed (held before, now, or both).
    pub(crate) selectors: BTreeSet<String>,
}

impl Changes {
    /// Every selector is looked at again (a build from scratch).
    pub(crate) fn everything() -> Changes {
        Changes {
            all: true,
            selectors: BTreeSet::new(),
        }
    }

    /// Adds what `other` changed.
    pub(crate) fn extend(&mut self, other: Changes) {
        self.all |= other.all;
        self.selectors.extend(other.selectors);
    }
}

/// The config as received, keyed like ShenYu's gateway caches.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ConfigData {
    /// Plugins by name.
    pub(crate) plugins: OrdMap<String, PluginData>,
    /// Selectors by plugin name, each list ordered by `sort` (ties: arrival).
    pub(crate) selectors: Lists<SelectorData>,
    /// Rules by selector id, each list ordered by `sort` (ties: arrival).
    pub(crate) rules: Lists<RuleData>,
    /// Metadata by id.
    pub(crate) meta_data: OrdMap<String, MetaData>,
    /// App auth by app key.
    pub(crate) app_auth: OrdMap<String, AppAuthData>,
    /// The digest of the plugins, selectors, rules and metadata held.
    pub(crate) digest: ConfigDigest,
    /// Items inserted so far (the tie-breaking part of [`Order`]).
    seq: u64,
}

impl ConfigData {
    /// The whole config as a [`model::ConfigSet`] (what `gantry sim` checks each applied
    /// config by).
    pub(crate) fn config_set(&self) -> model::ConfigSet {
        model::ConfigSet {
            plugins: self.plugins.values().cloned().collect(),
            selectors: self
                .selectors
                .ids()
                .filter_map(|id| self.selectors.get(id))
                .map(|(_, _, s)| s.clone())
                .collect(),
            rules: self
                .rules
                .ids()
                .filter_map(|id| self.rules.get(id))
                .map(|(_, _, r)| r.clone())
                .collect(),
            meta_data: self.meta_data.values().cloned().collect(),
        }
    }

    /// Applies one event: UPDATE/CREATE upsert, DELETE removes, MYSELF/REFRESH replace the
    /// whole group. An increment with no item changes nothing. RUNNING_MODE is not data.
    /// Returns what changed for the compiled tables.
    pub(crate) fn apply(&mut self, event: DataEvent) -> Changes {
        let mut changes = Changes::default();
        let kind = event.event_type;
        if kind == DataEventType::RunningMode {
            return changes;
        }
        let full = kind.is_full();
        let delete = kind == DataEventType::Delete;
        match event.payload {
            EventPayload::Plugin(items) => {
                if full {
                    for p in std::mem::take(&mut self.plugins).values() {
                        self.digest.remove(DigestItem::Plugin(p));
                    }
                }
                for p in items {
                    if let Some(old) = self.plugins.remove(&p.name) {
                        self.digest.remove(DigestItem::Plugin(&old));
                    }
                    if !delete {
                        self.digest.add(DigestItem::Plugin(&p));
                        self.plugins.insert(p.name.clone(), p);
                    }
                }
            }
            EventPayload::Selector(items) => {
                changes.all = full;
                if full {
                    for s in self.selectors.clear() {
                        self.digest.remove(s.digest_item());
                    }
                }
                for s in items {
                    changes.selectors.insert(s.id.clone());
                    if delete {
                        // ShenYu removes the selector from the list of the plugin named in
                        // the event, and the rules of its id in any case.
                        if let Some(old) = self.selectors.remove(&s.id, Some(&s.plugin_name)) {
                            self.digest.remove(old.digest_item());
                        }
                        for r in self.rules.remove_owner(&s.id) {
                            self.digest.remove(r.digest_item());
                        }
                    } else {
                        self.upsert_selector(s);
                    }
                }
            }
            EventPayload::Rule(items) => {
                changes.all = full;
                if full {
                    for r in self.rules.clear() {
                        self.digest.remove(r.digest_item());
                    }
                }
                for r in items {
                    changes.selectors.insert(r.selector_id.clone());
                    // ShenYu removes a deleted rule from the list of the selector named in
                    // the event; an upserted rule leaves any list it was in.
                    let owner = delete.then_some(r.selector_id.as_str());
                    if let Some(old) = self.rules.remove(&r.id, owner) {
                        changes.selectors.insert(old.selector_id.clone());
                        self.digest.remove(old.digest_item());
                    }
                    if !delete {
                        self.digest.add(r.digest_item());
                        let order = self.next_order(r.sort);
                        self.rules.insert(r, order);
                    }
                }
            }
            EventPayload::MetaData(items) => {
                if full {
                    for m in std::mem::take(&mut self.meta_data).values() {
                        self.digest.remove(DigestItem::MetaData(m));
                    }
                }
                for m in items {
                    if let Some(old) = self.meta_data.remove(&m.id) {
                        self.digest.remove(DigestItem::MetaData(&old));
                    }
                    if !delete {
                        self.digest.add(DigestItem::MetaData(&m));
                        self.meta_data.insert(m.id.clone(), m);
                    }
                }
            }
            EventPayload::AppAuth(items) => {
                if full {
                    self.app_auth = OrdMap::new();
                }
                for a in items {
                    if delete {
                        self.app_auth.remove(&a.app_key);
                    } else {
                        self.app_auth.insert(a.app_key.clone(), a);
                    }
                }
            }
        }
        changes
    }

    /// Inserts or replaces a selector (it moves to the end of its `sort` ties).
    fn upsert_selector(&mut self, s: SelectorData) {
        if let Some(old) = self.selectors.remove(&s.id, None) {
            self.digest.remove(old.digest_item());
        }
        self.digest.add(s.digest_item());
        let order = self.next_order(s.sort);
        self.selectors.insert(s, order);
    }

    fn next_order(&mut self, sort: i32) -> Order {
        self.seq += 1;
        Order::new(sort, self.seq)
    }
}
