//! The config snapshot: the gateway's only shared state.
//!
//! A [`Snapshot`] holds the config exactly as received ([`ConfigData`]) and the routing tables
//! compiled from it ([`CompiledPlugin`]). It is immutable: a sync event is applied to a copy of
//! the data, a new snapshot is compiled and swapped in ([`crate::sync::SyncState`]), so
//! requests read it without locks and never see a half-applied event.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use model::{
    AppAuthData, AppliedDigest, ConfigSet, DataEvent, DataEventType, DigestReport, EventPayload,
    MetaData, PluginData, RuleData, SelectorData,
};

use crate::router::select::{CompiledSelector, SelectorTable};

/// The config as received, keyed like ShenYu's gateway caches.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ConfigData {
    /// Plugins by name.
    pub(crate) plugins: BTreeMap<String, PluginData>,
    /// Selectors by plugin name, each list sorted by `sort` (stable).
    pub(crate) selectors: BTreeMap<String, Vec<SelectorData>>,
    /// Rules by selector id, each list sorted by `sort` (stable).
    pub(crate) rules: BTreeMap<String, Vec<RuleData>>,
    /// Metadata by id.
    pub(crate) meta_data: BTreeMap<String, MetaData>,
    /// App auth by app key.
    pub(crate) app_auth: BTreeMap<String, AppAuthData>,
}

/// A plugin's compiled routing table.
#[derive(Debug)]
pub(crate) struct CompiledPlugin {
    /// Whether the plugin runs.
    pub(crate) enabled: bool,
    /// Its place in the chain (`PluginData.sort`).
    pub(crate) sort: i32,
    /// Its selectors, sorted by `sort`, each with its rules, and their index (built here, not
    /// per request); shared with the next snapshot while they do not change.
    pub(crate) selectors: Arc<SelectorTable>,
}

/// One immutable, compiled view of the config.
#[derive(Debug)]
pub(crate) struct Snapshot {
    /// The config as received.
    pub(crate) data: ConfigData,
    /// Compiled routing tables by plugin name (only plugins the config has).
    pub(crate) plugins: HashMap<String, CompiledPlugin>,
    /// The digest of `data`, computed once.
    pub(crate) digest: DigestReport,
    /// How many times the digest changed since the gateway started (0: the start config).
    pub(crate) version: u64,
    /// Wall-clock µs since the Unix epoch at which this digest was first served.
    pub(crate) applied_at_us: u64,
}

impl Snapshot {
    /// Compiles a snapshot: every condition, pattern, regex and handle is parsed here.
    pub(crate) fn build(data: ConfigData) -> Snapshot {
        Snapshot::rebuild(data, None)
    }

    /// Compiles a snapshot from `previous` incrementally: a plugin whose selectors and their
    /// rules are unchanged keeps its compiled table (shared, not recompiled); in a recompiled
    /// plugin, a selector whose handle is unchanged keeps its upstream pool (balancer state).
    pub(crate) fn rebuild(data: ConfigData, previous: Option<&Snapshot>) -> Snapshot {
        let old_selectors: HashMap<&str, &CompiledSelector> = previous
            .into_iter()
            .flat_map(|p| p.plugins.values())
            .flat_map(|p| p.selectors.as_slice())
            .map(|s| (&*s.id, s))
            .collect();
        let plugins = data
            .plugins
            .values()
            .map(|p| {
                let list = data.selectors.get(&p.name).map_or(&[][..], Vec::as_slice);
                let unchanged = previous.and_then(|prev| {
                    let same = prev
                        .data
                        .selectors
                        .get(&p.name)
                        .map_or(&[][..], Vec::as_slice)
                        == list
                        && list
                            .iter()
                            .all(|s| prev.data.rules.get(&s.id) == data.rules.get(&s.id));
                    same.then(|| prev.plugins.get(&p.name)).flatten()
                });
                let selectors = match unchanged {
                    Some(compiled) => compiled.selectors.clone(),
                    None => Arc::new(
                        list.iter()
                            .map(|s| {
                                let rules = data.rules.get(&s.id).map_or(&[][..], Vec::as_slice);
                                let old = old_selectors.get(s.id.as_str()).copied();
                                CompiledSelector::compile(s, rules, old)
                            })
                            .collect(),
                    ),
                };
                (
                    p.name.clone(),
                    CompiledPlugin {
                        enabled: p.enabled,
                        sort: p.sort,
                        selectors,
                    },
                )
            })
            .collect();
        let digest = DigestReport::from(&data.config_set());
        // An event that leaves the config as it was (a duplicate, a no-op refresh) keeps the
        // version and the time the config became live: the latency judge measures changes.
        let (version, applied_at_us) = match previous {
            Some(p) if p.digest.digest == digest.digest => (p.version, p.applied_at_us),
            Some(p) => (p.version + 1, now_us()),
            None => (0, now_us()),
        };
        Snapshot {
            data,
            plugins,
            digest,
            version,
            applied_at_us,
        }
    }

    /// What `/actuator/digest` answers.
    pub(crate) fn applied_digest(&self) -> AppliedDigest {
        AppliedDigest {
            report: self.digest.clone(),
            version: self.version,
            applied_at_us: self.applied_at_us,
        }
    }
}

/// Wall-clock µs since the Unix epoch.
fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot::build(ConfigData::default())
    }
}

impl ConfigData {
    /// The config as a [`ConfigSet`] (for the digest).
    pub(crate) fn config_set(&self) -> ConfigSet {
        ConfigSet {
            plugins: self.plugins.values().cloned().collect(),
            selectors: self.selectors.values().flatten().cloned().collect(),
            rules: self.rules.values().flatten().cloned().collect(),
            meta_data: self.meta_data.values().cloned().collect(),
        }
    }

    /// Applies one event: UPDATE/CREATE upsert, DELETE removes, MYSELF/REFRESH replace the
    /// whole group. An increment with no item changes nothing. RUNNING_MODE is not data.
    pub(crate) fn apply(&mut self, event: DataEvent) {
        let kind = event.event_type;
        if kind == DataEventType::RunningMode {
            return;
        }
        let full = kind.is_full();
        let delete = kind == DataEventType::Delete;
        match event.payload {
            EventPayload::Plugin(items) => {
                if full {
                    self.plugins.clear();
                }
                for p in items {
                    if delete {
                        self.plugins.remove(&p.name);
                    } else {
                        self.plugins.insert(p.name.clone(), p);
                    }
                }
            }
            EventPayload::Selector(items) => {
                if full {
                    self.selectors.clear();
                }
                for s in items {
                    if delete {
                        if let Some(list) = self.selectors.get_mut(&s.plugin_name) {
                            list.retain(|x| x.id != s.id);
                        }
                        self.rules.remove(&s.id);
                    } else {
                        for list in self.selectors.values_mut() {
                            list.retain(|x| x.id != s.id);
                        }
                        self.selectors
                            .entry(s.plugin_name.clone())
                            .or_default()
                            .push(s);
                    }
                }
                sort_lists(&mut self.selectors, |s| s.sort);
            }
            EventPayload::Rule(items) => {
                if full {
                    self.rules.clear();
                }
                for r in items {
                    if delete {
                        if let Some(list) = self.rules.get_mut(&r.selector_id) {
                            list.retain(|x| x.id != r.id);
                        }
                    } else {
                        for list in self.rules.values_mut() {
                            list.retain(|x| x.id != r.id);
                        }
                        self.rules.entry(r.selector_id.clone()).or_default().push(r);
                    }
                }
                sort_lists(&mut self.rules, |r| r.sort);
            }
            EventPayload::MetaData(items) => {
                if full {
                    self.meta_data.clear();
                }
                for m in items {
                    if delete {
                        self.meta_data.remove(&m.id);
                    } else {
                        self.meta_data.insert(m.id.clone(), m);
                    }
                }
            }
            EventPayload::AppAuth(items) => {
                if full {
                    self.app_auth.clear();
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
    }
}

/// Stable-sorts every list by `sort` and drops empty lists.
fn sort_lists<T>(map: &mut BTreeMap<String, Vec<T>>, key: impl Fn(&T) -> i32 + Copy) {
    map.retain(|_, list| !list.is_empty());
    for list in map.values_mut() {
        list.sort_by_key(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::EventPayload as P;

    fn sel(id: &str, plugin: &str, sort: i32) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            plugin_name: plugin.to_owned(),
            sort,
            ..Default::default()
        }
    }

    fn rule(id: &str, selector: &str, sort: i32) -> RuleData {
        RuleData {
            id: id.to_owned(),
            selector_id: selector.to_owned(),
            sort,
            ..Default::default()
        }
    }

    fn ids<T>(list: Option<&Vec<T>>, id: impl Fn(&T) -> &str) -> Vec<String> {
        list.map(|l| l.iter().map(|x| id(x).to_owned()).collect())
            .unwrap_or_default()
    }

    fn ev(kind: DataEventType, payload: EventPayload) -> DataEvent {
        DataEvent::new(kind, payload)
    }

    #[test]
    fn selectors_upsert_sorted_and_delete_drops_rules() {
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Update,
            P::Selector(vec![sel("1", "divide", 5), sel("2", "divide", 1)]),
        ));
        d.apply(ev(
            DataEventType::Create,
            P::Selector(vec![sel("3", "divide", 3)]),
        ));
        assert_eq!(ids(d.selectors.get("divide"), |s| &s.id), ["2", "3", "1"]);
        // Update moves a selector.
        d.apply(ev(
            DataEventType::Update,
            P::Selector(vec![sel("1", "divide", 0)]),
        ));
        assert_eq!(ids(d.selectors.get("divide"), |s| &s.id), ["1", "2", "3"]);
        d.apply(ev(
            DataEventType::Update,
            P::Rule(vec![
                rule("r1", "1", 2),
                rule("r2", "1", 1),
                rule("r3", "2", 1),
            ]),
        ));
        assert_eq!(ids(d.rules.get("1"), |r| &r.id), ["r2", "r1"]);
        d.apply(ev(
            DataEventType::Delete,
            P::Selector(vec![sel("1", "divide", 0)]),
        ));
        assert_eq!(ids(d.selectors.get("divide"), |s| &s.id), ["2", "3"]);
        assert!(!d.rules.contains_key("1"));
        d.apply(ev(DataEventType::Delete, P::Rule(vec![rule("r3", "2", 0)])));
        assert!(!d.rules.contains_key("2"));
    }

    #[test]
    fn full_sync_replaces_the_group_only() {
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Update,
            P::Selector(vec![sel("1", "divide", 1), sel("2", "waf", 1)]),
        ));
        d.apply(ev(DataEventType::Update, P::Rule(vec![rule("r1", "1", 1)])));
        d.apply(ev(
            DataEventType::Myself,
            P::Selector(vec![sel("3", "divide", 1)]),
        ));
        assert_eq!(ids(d.selectors.get("divide"), |s| &s.id), ["3"]);
        assert!(!d.selectors.contains_key("waf"));
        assert_eq!(ids(d.rules.get("1"), |r| &r.id), ["r1"]);
        d.apply(ev(DataEventType::Refresh, P::Rule(vec![])));
        assert!(d.rules.is_empty());
    }

    #[test]
    fn plugins_meta_and_auth_by_key() {
        let mut d = ConfigData::default();
        let p = PluginData {
            id: "5".into(),
            name: "divide".into(),
            enabled: true,
            ..Default::default()
        };
        d.apply(ev(DataEventType::Update, P::Plugin(vec![p.clone()])));
        d.apply(ev(
            DataEventType::Update,
            P::Plugin(vec![PluginData {
                enabled: false,
                ..p.clone()
            }]),
        ));
        assert_eq!(d.plugins.len(), 1);
        assert!(!d.plugins["divide"].enabled);
        d.apply(ev(
            DataEventType::Delete,
            P::Plugin(vec![PluginData {
                id: String::new(),
                ..p
            }]),
        ));
        assert!(d.plugins.is_empty());

        let m = MetaData {
            id: "m1".into(),
            path: "/a".into(),
            ..Default::default()
        };
        d.apply(ev(DataEventType::Create, P::MetaData(vec![m.clone()])));
        d.apply(ev(DataEventType::Delete, P::MetaData(vec![m])));
        assert!(d.meta_data.is_empty());

        let a = AppAuthData {
            app_key: "k".into(),
            ..Default::default()
        };
        d.apply(ev(DataEventType::Myself, P::AppAuth(vec![a.clone()])));
        assert_eq!(d.app_auth.len(), 1);
        d.apply(ev(DataEventType::Delete, P::AppAuth(vec![a])));
        assert!(d.app_auth.is_empty());
    }

    #[test]
    fn empty_increment_changes_nothing_and_digest_tracks_content() {
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Update,
            P::Selector(vec![sel("1", "divide", 1)]),
        ));
        let before = d.clone();
        d.apply(ev(DataEventType::Update, P::Selector(vec![])));
        d.apply(ev(DataEventType::Delete, P::Rule(vec![])));
        assert_eq!(d, before);
        let a = Snapshot::build(before).digest;
        assert_eq!(a.selectors, 1);
        assert_ne!(a.digest, Snapshot::default().digest.digest);
    }

    #[test]
    fn version_and_applied_time_move_only_when_the_digest_does() {
        let start = Snapshot::default();
        assert_eq!(start.version, 0);
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Update,
            P::Selector(vec![sel("1", "divide", 1)]),
        ));
        let changed = Snapshot::rebuild(d.clone(), Some(&start));
        assert_eq!(changed.version, 1);
        assert!(changed.applied_at_us >= start.applied_at_us);
        let same = Snapshot::rebuild(d.clone(), Some(&changed));
        assert_eq!(
            (same.version, same.applied_at_us),
            (changed.version, changed.applied_at_us)
        );
        d.apply(ev(
            DataEventType::Delete,
            P::Selector(vec![sel("1", "divide", 1)]),
        ));
        let back = Snapshot::rebuild(d, Some(&same));
        assert_eq!(back.version, 2);
        assert_eq!(back.applied_digest().report, start.digest);
    }

    #[test]
    fn rebuild_recompiles_only_changed_plugins() {
        let plugin = |name: &str, enabled: bool| PluginData {
            name: name.to_owned(),
            enabled,
            ..Default::default()
        };
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Myself,
            P::Plugin(vec![plugin("divide", true), plugin("contextPath", true)]),
        ));
        d.apply(ev(
            DataEventType::Myself,
            P::Selector(vec![sel("1", "divide", 1), sel("2", "contextPath", 1)]),
        ));
        d.apply(ev(DataEventType::Myself, P::Rule(vec![rule("r2", "2", 1)])));
        let first = Snapshot::build(d.clone());
        let shared = |a: &Snapshot, b: &Snapshot, name: &str| {
            Arc::ptr_eq(&a.plugins[name].selectors, &b.plugins[name].selectors)
        };
        // A rule of contextPath changes: divide's table is shared, contextPath's rebuilt.
        let mut changed = rule("r2", "2", 5);
        changed.enabled = !changed.enabled;
        d.apply(ev(DataEventType::Update, P::Rule(vec![changed])));
        let second = Snapshot::rebuild(d.clone(), Some(&first));
        assert!(shared(&first, &second, "divide"));
        assert!(!shared(&first, &second, "contextPath"));
        // Disabling a plugin keeps its table but flips the flag.
        d.apply(ev(
            DataEventType::Update,
            P::Plugin(vec![plugin("divide", false)]),
        ));
        let third = Snapshot::rebuild(d.clone(), Some(&second));
        assert!(shared(&second, &third, "divide") && !third.plugins["divide"].enabled);
        // The result equals a full build: the compiled tables themselves, not only the
        // digest of the data they were compiled from.
        let full = Snapshot::build(d);
        assert_eq!(third.digest, full.digest);
        assert_eq!(tables(&third), tables(&full));
        assert_ne!(
            tables(&first),
            tables(&full),
            "the changes are visible in the tables"
        );
    }

    /// Every plugin's compiled state, rendered: flag, chain position, selectors with their
    /// rules, conditions, handles, pools and index.
    fn tables(s: &Snapshot) -> BTreeMap<String, String> {
        s.plugins
            .iter()
            .map(|(name, p)| (name.clone(), format!("{p:?}")))
            .collect()
    }
}
