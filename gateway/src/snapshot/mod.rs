//! The config snapshot: the gateway's only shared state.
//!
//! A [`Snapshot`] holds the config exactly as received ([`ConfigData`]) and the routing tables
//! compiled from it (each plugin of the gateway's [`Registry`] compiles its own selectors and
//! rules, see `crate::plugin`), with the chain's order ([`Snapshot::active`]). It is immutable: a sync event is applied to a copy of
//! the data, the next snapshot is compiled from the previous one and what the event changed
//! ([`Changes`]), and swapped in ([`crate::sync::SyncState`]), so requests read it without
//! locks and never see a half-applied event.
//!
//! Both layers are persistent maps: copying them shares everything, so an event that changes
//! one selector costs in proportion to that selector (and its rules), not to the config held.

mod data;
mod dumps;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use model::{AppliedDigest, DigestReport, Rejections};

pub(crate) use data::{Changes, ConfigData};
pub(crate) use dumps::{Dump, Dumps};

use crate::plugin::{PluginTable, Registry, divide};

/// The longest rejection reason kept (a handle's text can be long).
const REASON_LIMIT: usize = 200;

/// One immutable, compiled view of the config.
#[derive(Debug)]
pub(crate) struct Snapshot {
    /// The plugins the tables are compiled with (the gateway's).
    registry: Arc<Registry>,
    /// The config as received.
    pub(crate) data: ConfigData,
    /// Compiled selector tables by plugin name (every registered plugin a selector names),
    /// each with its selectors in order, their rules and their index (built when the snapshot
    /// is applied, not per request); shared with the next snapshot while they do not change.
    tables: HashMap<String, Arc<dyn PluginTable>>,
    /// The tables of the plugins that run, in chain order: the registered plugins the config
    /// has enabled, by `PluginData.sort`, ties in built-in order. Computed once per snapshot;
    /// the chain only reads it.
    pub(crate) active: Vec<Arc<dyn PluginTable>>,
    /// The digest of `data`.
    pub(crate) digest: DigestReport,
    /// How many times the digest changed since the gateway started (0: the start config).
    pub(crate) version: u64,
    /// Wall-clock µs since the Unix epoch at which this digest was first served.
    pub(crate) applied_at_us: u64,
    /// Selector handles refused since the gateway started (see `plugin::divide::unusable`).
    pub(crate) rejected: Rejections,
    /// The inspection dumps of this snapshot, rendered on first use.
    pub(crate) dumps: Dumps,
}

impl Snapshot {
    /// The empty config, compiled with `registry`'s plugins (a gateway's first snapshot).
    pub(crate) fn empty(registry: Arc<Registry>) -> Snapshot {
        Snapshot::compile(
            registry,
            ConfigData::default(),
            &Changes::everything(),
            None,
        )
    }

    /// Compiles a snapshot with plugins of its own (a new [`Registry`]): every condition,
    /// pattern, regex and handle is parsed here.
    pub(crate) fn build(data: ConfigData) -> Snapshot {
        Snapshot::compile(Registry::standard(), data, &Changes::everything(), None)
    }

    /// Compiles `data` looking at every selector again, reusing from `previous` what did not
    /// change (see [`Snapshot::next`]).
    #[cfg(test)]
    pub(crate) fn rebuild(data: ConfigData, previous: &Snapshot) -> Snapshot {
        Snapshot::next(data, &Changes::everything(), previous)
    }

    /// The snapshot after `previous` once `changes` made its data into `data`, compiled with
    /// `previous`'s plugins. Only the selectors named in `changes` (all of them for a group
    /// replaced whole) are looked at: one whose data and rules are unchanged keeps its
    /// compiled form, a changed one is recompiled and keeps its upstream pool (balancer
    /// state) when its handle is unchanged. The plugins' synced config is not given to them
    /// here: that is for whoever swaps the snapshot in ([`Snapshot::configure_plugins`]).
    pub(crate) fn next(data: ConfigData, changes: &Changes, previous: &Snapshot) -> Snapshot {
        Snapshot::compile(
            Arc::clone(&previous.registry),
            data,
            changes,
            Some(previous),
        )
    }

    /// The snapshot after `previous` compiled from nothing: every selector, rule and
    /// upstream pool of `data` compiled again, nothing reused (what a gateway that rebuilds
    /// its routing table per event does, `EmulatedBug::RebuildPerChange`; tests only). The
    /// version and apply time continue from `previous` as with [`Snapshot::next`].
    pub(crate) fn from_scratch(data: ConfigData, previous: &Snapshot) -> Snapshot {
        let mut next = Snapshot::compile(
            Arc::clone(&previous.registry),
            data,
            &Changes::everything(),
            None,
        );
        (next.version, next.applied_at_us) = versioned(Some(previous), &next.digest);
        next.rejected = previous.rejected.clone();
        next
    }

    /// Gives the plugins the config of theirs that changed since `previous` (every plugin its
    /// config when `previous` is `None`). Called when this snapshot is swapped in.
    pub(crate) fn configure_plugins(&self, previous: Option<&Snapshot>) {
        self.registry
            .configure_changed(previous.map(|p| &p.data.plugins), &self.data.plugins);
    }

    /// [`Snapshot::next`], or a first build when there is no `previous`.
    fn compile(
        registry: Arc<Registry>,
        data: ConfigData,
        changes: &Changes,
        previous: Option<&Snapshot>,
    ) -> Snapshot {
        let mut tables = previous.map(|p| p.tables.clone()).unwrap_or_default();
        let everyone: BTreeSet<&String>;
        let ids: Box<dyn Iterator<Item = &String>> = if changes.all {
            everyone = previous
                .into_iter()
                .flat_map(|p| p.data.selectors.ids())
                .chain(data.selectors.ids())
                .collect();
            Box::new(everyone.into_iter())
        } else {
            Box::new(changes.selectors.iter())
        };
        let mut working: HashMap<String, Box<dyn PluginTable>> = HashMap::new();
        let mut rejected = previous.map(|p| p.rejected.clone()).unwrap_or_default();
        for id in ids {
            if let Some(reason) = refused(id, &data, previous) {
                tracing::warn!(selector = %id, %reason, "divide selector handle refused; keeping its last good upstreams");
                rejected.count += 1;
                rejected.last = Some(format!("selector {id}: {reason}"));
            }
            recompile(&registry, id, &data, previous, &tables, &mut working);
        }
        for (plugin, table) in working {
            tables.insert(plugin, Arc::from(table));
        }
        let active = active(&registry, &data, &tables);
        let digest = data.digest.report();
        let (version, applied_at_us) = versioned(previous, &digest);
        Snapshot {
            registry,
            data,
            tables,
            active,
            digest,
            version,
            applied_at_us,
            rejected,
            dumps: Dumps::default(),
        }
    }

    /// What `/actuator/digest` answers.
    pub(crate) fn applied_digest(&self) -> AppliedDigest {
        AppliedDigest {
            report: self.digest.clone(),
            version: self.version,
            applied_at_us: self.applied_at_us,
            rejected: self.rejected.clone(),
        }
    }
}

/// The version and apply time of a snapshot of `digest` after `previous`. An event that
/// leaves the config as it was (a duplicate, a no-op refresh) keeps the version and the time
/// the config became live: the latency judge measures changes.
fn versioned(previous: Option<&Snapshot>, digest: &DigestReport) -> (u64, u64) {
    match previous {
        Some(p) if p.digest.digest == digest.digest => (p.version, p.applied_at_us),
        Some(p) => (p.version + 1, now_us()),
        None => (0, now_us()),
    }
}

/// The tables of the plugins that run, in chain order (see [`Snapshot::active`]); a plugin
/// with no selector runs with an empty table.
fn active(
    registry: &Registry,
    data: &ConfigData,
    tables: &HashMap<String, Arc<dyn PluginTable>>,
) -> Vec<Arc<dyn PluginTable>> {
    let mut active: Vec<(i32, usize, Arc<dyn PluginTable>)> = data
        .plugins
        .values()
        .filter(|p| p.enabled)
        .filter_map(|p| {
            let at = registry.position(&p.name)?;
            let table = match tables.get(&p.name) {
                Some(table) => Arc::clone(table),
                None => Arc::from(registry.table(&p.name)?),
            };
            Some((p.sort, at, table))
        })
        .collect();
    active.sort_by_key(|&(sort, at, _)| (sort, at));
    active.into_iter().map(|(_, _, table)| table).collect()
}

/// Why selector `id`'s new divide handle is refused (see `plugin::divide::unusable`), cut to
/// [`REASON_LIMIT`] bytes; `None` when it is usable or was already refused in `previous`.
fn refused(id: &str, data: &ConfigData, previous: Option<&Snapshot>) -> Option<String> {
    let (plugin, _, selector) = data.selectors.get(id)?;
    if plugin != divide::NAME {
        return None;
    }
    let handle = selector.handle.as_deref().unwrap_or("");
    let before = previous.and_then(|p| p.data.selectors.get(id));
    if before.is_some_and(|(_, _, s)| s.handle.as_deref().unwrap_or("") == handle) {
        return None;
    }
    let mut reason = divide::unusable(handle)?;
    if reason.len() > REASON_LIMIT {
        let mut end = REASON_LIMIT;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
        reason.push('…');
    }
    Some(reason)
}

/// Brings selector `id` in the tables from where `previous` had it to where `data` has it.
/// `working` holds the tables changed so far (copies of `tables`, sharing their structure).
/// Selectors of plugins gantry does not run are not compiled.
fn recompile(
    registry: &Registry,
    id: &str,
    data: &ConfigData,
    previous: Option<&Snapshot>,
    tables: &HashMap<String, Arc<dyn PluginTable>>,
    working: &mut HashMap<String, Box<dyn PluginTable>>,
) {
    let old = previous.and_then(|p| p.data.selectors.get(id));
    let new = data.selectors.get(id);
    // Within one plugin, the plugin reuses the compiled selector or carries its state over.
    let mut kept = None;
    if let Some((plugin, order, _)) = old {
        match new {
            Some((now, _, _)) if now == plugin => kept = Some(order),
            _ => {
                if let Some(table) = table(registry, working, tables, plugin) {
                    table.remove(order);
                }
            }
        }
    }
    let Some((plugin, order, selector)) = new else {
        return;
    };
    let unchanged = old.is_some_and(|(_, _, before)| before == selector)
        && previous.is_some_and(|p| p.data.rules.list(id).eq(data.rules.list(id)));
    if let Some(table) = table(registry, working, tables, plugin) {
        table.put(kept, order, selector, &mut data.rules.list(id), unchanged);
    }
}

/// The working copy of `plugin`'s table (made from `tables`, or empty, on first use); `None`
/// for a plugin gantry does not run.
fn table<'w>(
    registry: &Registry,
    working: &'w mut HashMap<String, Box<dyn PluginTable>>,
    tables: &HashMap<String, Arc<dyn PluginTable>>,
    plugin: &str,
) -> Option<&'w mut Box<dyn PluginTable>> {
    if !working.contains_key(plugin) {
        let copy = match tables.get(plugin) {
            Some(table) => table.copy(),
            None => registry.table(plugin)?,
        };
        working.insert(plugin.to_owned(), copy);
    }
    working.get_mut(plugin)
}

/// Wall-clock µs since the Unix epoch.
pub(crate) fn now_us() -> u64 {
    u64::try_from(model::world::since_epoch().as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
impl Default for Snapshot {
    fn default() -> Self {
        Snapshot::build(ConfigData::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::EventPayload as P;
    use model::{
        AppAuthData, DataEvent, DataEventType, EventPayload, MetaData, PluginData, RuleData,
        SelectorData,
    };
    use std::collections::BTreeMap;

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

    fn ids<'a, T: 'a>(list: impl Iterator<Item = &'a T>, id: impl Fn(&T) -> &str) -> Vec<String> {
        list.map(|x| id(x).to_owned()).collect()
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
        assert_eq!(ids(d.selectors.list("divide"), |s| &s.id), ["2", "3", "1"]);
        // Update moves a selector.
        d.apply(ev(
            DataEventType::Update,
            P::Selector(vec![sel("1", "divide", 0)]),
        ));
        assert_eq!(ids(d.selectors.list("divide"), |s| &s.id), ["1", "2", "3"]);
        d.apply(ev(
            DataEventType::Update,
            P::Rule(vec![
                rule("r1", "1", 2),
                rule("r2", "1", 1),
                rule("r3", "2", 1),
            ]),
        ));
        assert_eq!(ids(d.rules.list("1"), |r| &r.id), ["r2", "r1"]);
        d.apply(ev(
            DataEventType::Delete,
            P::Selector(vec![sel("1", "divide", 0)]),
        ));
        assert_eq!(ids(d.selectors.list("divide"), |s| &s.id), ["2", "3"]);
        assert_eq!(d.rules.list("1").count(), 0);
        d.apply(ev(DataEventType::Delete, P::Rule(vec![rule("r3", "2", 0)])));
        assert_eq!(d.rules.list("2").count(), 0);
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
        assert_eq!(ids(d.selectors.list("divide"), |s| &s.id), ["3"]);
        assert_eq!(d.selectors.list("waf").count(), 0);
        assert_eq!(ids(d.rules.list("1"), |r| &r.id), ["r1"]);
        d.apply(ev(DataEventType::Refresh, P::Rule(vec![])));
        assert_eq!(d.rules.ids().count(), 0);
    }

    /// A refused handle counts once: not again when a full sync or a rule change brings the
    /// same selector back, again when another unusable handle comes; a waf selector's handle
    /// is not divide's to judge.
    #[test]
    fn a_refused_selector_handle_counts_once_per_handle() {
        let with = |id: &str, plugin: &str, handle: &str| SelectorData {
            handle: Some(handle.to_owned()),
            ..sel(id, plugin, 1)
        };
        let mut d = ConfigData::default();
        let mut snap = Snapshot::default();
        let mut step = |event: DataEvent| {
            let changes = d.apply(event);
            snap = Snapshot::next(d.clone(), &changes, &snap);
            (snap.rejected.count, snap.rejected.last.clone())
        };
        let good = r#"[{"upstreamUrl":"a:1"}]"#;
        let bad = with("1", "divide", "{");
        assert_eq!(
            step(ev(
                DataEventType::Myself,
                P::Selector(vec![with("1", "divide", good)])
            ))
            .0,
            0
        );
        let (count, last) = step(ev(DataEventType::Update, P::Selector(vec![bad.clone()])));
        assert_eq!(count, 1);
        assert!(last.unwrap().starts_with("selector 1: unreadable handle: "));
        assert_eq!(step(ev(DataEventType::Myself, P::Selector(vec![bad]))).0, 1);
        assert_eq!(
            step(ev(DataEventType::Update, P::Rule(vec![rule("r", "1", 1)]))).0,
            1
        );
        let long = format!(r#"[{{"upstreamUrl":"{}:1"}}]"#, "é ".repeat(300));
        let (count, last) = step(ev(
            DataEventType::Update,
            P::Selector(vec![with("1", "divide", &long)]),
        ));
        assert_eq!(count, 2);
        assert!(last.unwrap().len() <= "selector 1: ".len() + REASON_LIMIT + '…'.len_utf8());
        assert_eq!(
            step(ev(
                DataEventType::Update,
                P::Selector(vec![with("2", "waf", "{")])
            ))
            .0,
            2
        );
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
        let changed = Snapshot::rebuild(d.clone(), &start);
        assert_eq!(changed.version, 1);
        assert!(changed.applied_at_us >= start.applied_at_us);
        let same = Snapshot::rebuild(d.clone(), &changed);
        assert_eq!(
            (same.version, same.applied_at_us),
            (changed.version, changed.applied_at_us)
        );
        d.apply(ev(
            DataEventType::Delete,
            P::Selector(vec![sel("1", "divide", 1)]),
        ));
        let back = Snapshot::rebuild(d, &same);
        assert_eq!(back.version, 2);
        assert_eq!(back.applied_digest().report, start.digest);
    }

    #[test]
    fn an_increment_recompiles_only_the_plugins_it_touches() {
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
        let shared =
            |a: &Snapshot, b: &Snapshot, name: &str| Arc::ptr_eq(&a.tables[name], &b.tables[name]);
        // A rule of contextPath changes: divide's table is shared, contextPath's rebuilt.
        let mut changed = rule("r2", "2", 5);
        changed.enabled = !changed.enabled;
        let changes = d.apply(ev(DataEventType::Update, P::Rule(vec![changed])));
        let second = Snapshot::next(d.clone(), &changes, &first);
        assert!(shared(&first, &second, "divide"));
        assert!(!shared(&first, &second, "contextPath"));
        // Disabling a plugin keeps its table but flips the flag.
        let changes = d.apply(ev(
            DataEventType::Update,
            P::Plugin(vec![plugin("divide", false)]),
        ));
        let third = Snapshot::next(d.clone(), &changes, &second);
        assert!(shared(&second, &third, "divide"));
        assert_eq!(chain(&second), ["contextPath", "divide"]);
        assert_eq!(chain(&third), ["contextPath"]);
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

    #[test]
    fn one_increment_compiles_what_it_changes_whatever_is_held() {
        let held = 1_000;
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Myself,
            P::Selector(
                (0..held)
                    .map(|i| sel(&format!("s{i}"), "divide", 1))
                    .collect(),
            ),
        ));
        d.apply(ev(
            DataEventType::Myself,
            P::Rule(
                (0..held)
                    .map(|i| rule(&format!("r{i}"), &format!("s{i}"), 1))
                    .collect(),
            ),
        ));
        let first = Snapshot::build(d.clone());
        let compiled = |s: &Snapshot, id: &str| {
            let (plugin, order, _) = s.data.selectors.get(id).expect("held");
            s.tables[plugin].compiled_at(order).expect("compiled")
        };
        let recompiled = |a: &Snapshot, b: &Snapshot| -> Vec<String> {
            (0..held)
                .map(|i| format!("s{i}"))
                .filter(|id| compiled(a, id) != compiled(b, id))
                .collect()
        };
        // A selector update, a rule update, a rule delete: one selector recompiled each.
        let mut moved = sel("s7", "divide", 0);
        moved.enabled = true;
        let changes = d.apply(ev(DataEventType::Update, P::Selector(vec![moved])));
        assert_eq!(changes.selectors.len(), 1);
        let second = Snapshot::next(d.clone(), &changes, &first);
        assert_eq!(recompiled(&first, &second), ["s7"]);
        let changes = d.apply(ev(
            DataEventType::Update,
            P::Rule(vec![rule("r9", "s9", 4)]),
        ));
        let third = Snapshot::next(d.clone(), &changes, &second);
        assert_eq!(recompiled(&second, &third), ["s9"]);
        let changes = d.apply(ev(
            DataEventType::Delete,
            P::Rule(vec![rule("r9", "s9", 4)]),
        ));
        let fourth = Snapshot::next(d.clone(), &changes, &third);
        assert_eq!(recompiled(&third, &fourth), ["s9"]);
        // A group replaced whole with the same content recompiles nothing.
        let same: Vec<RuleData> = d
            .rules
            .ids()
            .filter_map(|id| d.rules.get(id))
            .map(|(_, _, r)| r.clone())
            .collect();
        let changes = d.apply(ev(DataEventType::Refresh, P::Rule(same)));
        let fifth = Snapshot::next(d.clone(), &changes, &fourth);
        assert!(recompiled(&fourth, &fifth).is_empty());
        assert_eq!(tables(&fifth), tables(&Snapshot::build(d)));
    }

    /// The names of the plugins the chain runs, in order.
    fn chain(s: &Snapshot) -> Vec<&'static str> {
        s.active.iter().map(|t| t.name()).collect()
    }

    /// Every registered plugin's compiled state the config has, rendered: flag, sort,
    /// selectors with their rules, conditions, handles, pools, in order, and the index; and
    /// the chain's order (under "").
    fn tables(s: &Snapshot) -> BTreeMap<String, String> {
        let mut rendered: BTreeMap<String, String> = s
            .data
            .plugins
            .values()
            .filter_map(|p| {
                let selectors = match s.tables.get(&p.name) {
                    Some(table) => table.rendered(),
                    None => s.registry.table(&p.name)?.rendered(),
                };
                let rendered = format!("enabled {} sort {} {selectors}", p.enabled, p.sort);
                Some((p.name.clone(), rendered))
            })
            .collect();
        rendered.insert(String::new(), format!("chain {:?}", chain(s)));
        rendered
    }

    /// The chain runs the enabled plugins by `PluginData.sort`, ties in built-in order.
    #[test]
    fn the_chain_order_is_computed_with_the_snapshot() {
        let plugin = |name: &str, sort: i32, enabled: bool| PluginData {
            name: name.to_owned(),
            sort,
            enabled,
            ..Default::default()
        };
        let mut d = ConfigData::default();
        d.apply(ev(
            DataEventType::Myself,
            P::Plugin(vec![
                plugin("divide", 1, true),
                plugin("contextPath", 1, true),
                plugin("paramMapping", 0, false),
                plugin("rateLimiter", 5, true),
                plugin("waf", 0, true),
            ]),
        ));
        assert_eq!(
            chain(&Snapshot::build(d)),
            ["contextPath", "divide", "rateLimiter"]
        );
    }

    fn config_set(d: &ConfigData) -> model::ConfigSet {
        d.config_set()
    }

    mod incremental {
        use super::*;
        use model::ConditionData;
        use proptest::prelude::*;
        use proptest::sample::select;

        /// Few ids, plugins, sorts and conditions, so that events collide: moves between
        /// plugins and selectors, index entries that change kind, ties.
        fn event() -> impl Strategy<Value = DataEvent> {
            let kind = select(vec![
                DataEventType::Update,
                DataEventType::Update,
                DataEventType::Create,
                DataEventType::Delete,
                DataEventType::Refresh,
                DataEventType::Myself,
            ]);
            let condition = select(vec![
                ("uri", "=", "/a"),
                ("uri", "startsWith", "/a"),
                ("uri", "startsWith", "/"),
                ("uri", "match", "/a/**"),
                ("header", "=", "/a"),
            ])
            .prop_map(|(t, op, v)| ConditionData::new(t, op, "x", v));
            let selector = (
                0..6u8,
                select(vec!["divide", "contextPath"]),
                0..3i32,
                any::<bool>(),
                prop::collection::vec(condition.clone(), 0..3),
            )
                .prop_map(|(id, plugin, sort, enabled, conditions)| SelectorData {
                    enabled,
                    condition_list: conditions,
                    ..sel(&format!("s{id}"), plugin, sort)
                });
            let rule = (
                0..8u8,
                0..6u8,
                0..3i32,
                prop::collection::vec(condition, 0..2),
            )
                .prop_map(|(id, selector, sort, conditions)| RuleData {
                    condition_data_list: conditions,
                    ..rule(&format!("r{id}"), &format!("s{selector}"), sort)
                });
            let plugin = (select(vec!["divide", "contextPath"]), any::<bool>()).prop_map(
                |(name, enabled)| PluginData {
                    name: name.to_owned(),
                    enabled,
                    ..Default::default()
                },
            );
            let payload = prop_oneof![
                4 => prop::collection::vec(selector, 0..4).prop_map(P::Selector),
                4 => prop::collection::vec(rule, 0..4).prop_map(P::Rule),
                1 => prop::collection::vec(plugin, 0..3).prop_map(P::Plugin),
            ];
            (kind, payload).prop_map(|(kind, payload)| ev(kind, payload))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(500))]

            /// After every event, the incrementally compiled snapshot equals one compiled
            /// from scratch, and the running digest equals the digest of the whole data.
            #[test]
            fn incremental_equals_from_scratch(events in prop::collection::vec(event(), 1..25)) {
                let mut d = ConfigData::default();
                let mut snapshot = Snapshot::default();
                for event in events {
                    let changes = d.apply(event);
                    snapshot = Snapshot::next(d.clone(), &changes, &snapshot);
                    let scratch = Snapshot::build(d.clone());
                    prop_assert_eq!(tables(&snapshot), tables(&scratch));
                    prop_assert_eq!(&snapshot.digest, &model::DigestReport::from(&config_set(&d)));
                }
            }
        }

        /// The property catches an increment that forgets a change: applying the rule
        /// events without their changes leaves stale tables.
        #[test]
        fn a_forgotten_change_is_seen() {
            let mut d = ConfigData::default();
            d.apply(ev(
                DataEventType::Myself,
                P::Plugin(vec![PluginData {
                    name: "divide".into(),
                    enabled: true,
                    ..Default::default()
                }]),
            ));
            let changes = d.apply(ev(
                DataEventType::Update,
                P::Selector(vec![sel("s1", "divide", 1)]),
            ));
            let first = Snapshot::next(d.clone(), &changes, &Snapshot::default());
            d.apply(ev(
                DataEventType::Update,
                P::Rule(vec![rule("r1", "s1", 1)]),
            ));
            let stale = Snapshot::next(d.clone(), &Changes::default(), &first);
            assert_ne!(tables(&stale), tables(&Snapshot::build(d)));
        }
    }
}
