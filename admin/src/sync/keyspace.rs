//! The publisher loop shared by the ZooKeeper and etcd publishers: both keep the ShenYu 2.6.0
//! key layout ([`model::keyspace`]) in an external store equal to what is committed.
//!
//! ```text
//! subscribe ─▶ connect ─▶ snapshot ─▶ full write ─▶ every event written ─┐
//!     ▲          (every item put, stale keys deleted)                     │ error, lag,
//!     └──────────────────── back-off ◀──────────────────────────────────┘ session lost
//! ```
//!
//! The subscription is taken before the snapshot and [`Admin::snapshot_for`] drops what the
//! snapshot already holds, so no change falls in between. Any failure (store unreachable,
//! session expired, the dispatcher lagged) starts over with a new connection and a full
//! write, which is idempotent, so the store always converges to the database. The loop holds
//! the admin weakly and ends once the admin is gone.
//!
//! Several admins on one database all write the store. A full write therefore reads the store
//! *before* the snapshot and writes only the keys whose value differs: a value another admin
//! wrote was committed before it was written, so the snapshot is at least as new, and a
//! (re)starting admin does not put back an older value over a newer one another admin has just
//! written (it did, for the whole length of its full write, before this was so).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Weak;

use anyhow::Context;
use model::keyspace::{self, NodeKey};
use model::{Backoff, DataEvent, DataEventType, SyncMode};
use tokio::sync::broadcast;

use crate::service::{Admin, Snapshot};

/// A key-value store holding the ShenYu layout (ZooKeeper or etcd).
pub(crate) trait NodeStore: Send {
    /// Every key under the five group parents (not the parents themselves), intermediate
    /// ZooKeeper nodes included, with its value.
    fn entries(&mut self) -> impl Future<Output = anyhow::Result<Entries>> + Send;
    /// Creates or replaces `path` (creating missing parents).
    fn put(&mut self, path: &str, value: &[u8]) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Deletes `path`; an absent key is not an error.
    fn delete(&mut self, path: &str) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Deletes every item key that starts with `prefix` (whose last segment may be partial).
    fn delete_prefix(&mut self, prefix: &str) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Completes when the connection can no longer be trusted (a ZooKeeper session expired
    /// or reconnected); the reason is logged and everything is written again.
    fn lost(&mut self) -> impl Future<Output = String> + Send;
}

/// The store's keys and values, as [`NodeStore::entries`] reads them.
pub(crate) type Entries = BTreeMap<String, Vec<u8>>;

/// Runs a publisher until the admin is gone: `connect` opens a store session. What it wrote
/// is marked in `status` (the store is "sent" to every gateway of `mode`).
pub(crate) async fn run<S, C, F>(
    mode: SyncMode,
    admin: Weak<Admin>,
    mut connect: C,
    status: std::sync::Arc<super::status::SyncStatus>,
) where
    S: NodeStore,
    C: FnMut() -> F + Send,
    F: Future<Output = anyhow::Result<S>> + Send,
{
    // Whole steps, not jittered (the gateway's subscribers jitter theirs).
    let mut backoff = Backoff::new();
    loop {
        let Some(mut events) = admin.upgrade().map(|admin| admin.subscribe()) else {
            return;
        };
        let session = async {
            let mut store = connect().await?;
            // Before the snapshot, so the snapshot is at least as new as every value read.
            let existing = store.entries().await?;
            let Some(current) = admin.upgrade() else {
                return Ok(());
            };
            let snapshot = current
                .snapshot_for(&mut events)
                .await
                .context("reading the committed config")?;
            drop(current);
            let seq = status.current();
            let written = full_write(&mut store, existing, &snapshot).await?;
            status.written(mode, seq);
            tracing::info!(%mode, items = written.items, puts = written.puts, deletes = written.deletes, "sync store brought up to the database");
            backoff.reset();
            loop {
                tokio::select! {
                    event = events.recv() => match event {
                        Ok(event) => {
                            let seq = status.note(&event);
                            write_event(&mut store, &event).await?;
                            status.written(mode, seq);
                        }
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            anyhow::bail!("fell {missed} events behind");
                        }
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    },
                    reason = store.lost() => anyhow::bail!("{reason}"),
                }
            }
        };
        match session.await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(%mode, error = format!("{e:#}"), "sync publisher failed; writing everything again after a back-off")
            }
        }
        tokio::time::sleep(backoff.next_step()).await;
    }
}

/// What a [`replace`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Written {
    /// Items the store holds afterwards.
    items: usize,
    /// Keys written because their value differed or was missing.
    puts: usize,
    /// Stale keys deleted.
    deletes: usize,
}

/// Brings the store to `snapshot`: every item whose value in `existing` (read before the
/// snapshot) differs is written, and every key that holds no committed item is deleted.
async fn full_write<S: NodeStore>(
    store: &mut S,
    existing: Entries,
    snapshot: &Snapshot,
) -> anyhow::Result<Written> {
    let events = DataEvent::full_sync(
        DataEventType::Refresh,
        snapshot.config.clone(),
        snapshot.app_auth.clone(),
    );
    let nodes: Vec<(NodeKey, Vec<u8>)> = events.iter().flat_map(keyspace::item_nodes).collect();
    replace(store, &existing, &nodes, &keyspace::PARENTS).await
}

/// Puts those of `nodes` whose value in `existing` differs, then deletes the keys of
/// `existing` under `parents` that are neither one of them nor an ancestor of one (children
/// before their parents).
async fn replace<S: NodeStore>(
    store: &mut S,
    existing: &Entries,
    nodes: &[(NodeKey, Vec<u8>)],
    parents: &[&str],
) -> anyhow::Result<Written> {
    let mut keep = BTreeSet::new();
    let mut puts = 0;
    for (key, value) in nodes {
        let path = key.path();
        if existing.get(&path) != Some(value) {
            store.put(&path, value).await?;
            puts += 1;
        }
        let mut ancestor = path.as_str();
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            keep.insert(parent.to_owned());
            ancestor = parent;
        }
        keep.insert(path);
    }
    let stale = stale_keys(existing, &keep, parents);
    for path in &stale {
        tracing::debug!(%path, "deleting a stale key");
        store.delete(path).await?;
    }
    Ok(Written {
        items: nodes.len(),
        puts,
        deletes: stale.len(),
    })
}

/// The keys under `parents` not in `keep`, deepest first.
fn stale_keys(existing: &Entries, keep: &BTreeSet<String>, parents: &[&str]) -> Vec<String> {
    existing
        .keys()
        .rev()
        .filter(|path| {
            !keep.contains(*path)
                && parents.iter().any(|parent| {
                    path.strip_prefix(parent)
                        .is_some_and(|rest| rest.starts_with('/'))
                })
        })
        .cloned()
        .collect()
}

/// Writes one change: upserts put, deletes delete (a selector's rules and a plugin's selectors
/// and rules go with it), a full group replaces the group.
async fn write_event<S: NodeStore>(store: &mut S, event: &DataEvent) -> anyhow::Result<()> {
    tracing::debug!(group = %event.group(), kind = %event.event_type, items = event.len(), "writing a change");
    match event.event_type {
        DataEventType::RunningMode => Ok(()),
        kind if kind.is_full() => {
            let parent =
                keyspace::group_parent(event.group()).expect("modelled groups have a parent");
            let existing = store.entries().await?;
            replace(store, &existing, &keyspace::item_nodes(event), &[parent]).await?;
            Ok(())
        }
        DataEventType::Delete => {
            for key in keyspace::item_keys(event) {
                store.delete(&key.path()).await?;
                match &key {
                    NodeKey::Selector { plugin, id } => {
                        store
                            .delete_prefix(&keyspace::selector_rules_prefix(plugin, id))
                            .await?;
                    }
                    NodeKey::Plugin { name } => {
                        let selectors = format!("{}/{name}/", keyspace::SELECTOR_PARENT);
                        let rules = format!("{}/{name}/", keyspace::RULE_PARENT);
                        store.delete_prefix(&selectors).await?;
                        store.delete_prefix(&rules).await?;
                    }
                    NodeKey::Rule { .. } | NodeKey::MetaData { .. } | NodeKey::AppAuth { .. } => {}
                }
            }
            Ok(())
        }
        DataEventType::Create | DataEventType::Update => {
            for (key, value) in keyspace::item_nodes(event) {
                store.put(&key.path(), &value).await?;
            }
            Ok(())
        }
        DataEventType::Refresh | DataEventType::Myself => unreachable!("handled as full"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use model::{EventPayload, PluginData, RuleData, SelectorData};

    use super::*;

    /// An in-memory store with ZooKeeper's tree shape (parents exist as keys).
    #[derive(Debug, Default)]
    struct Tree(BTreeMap<String, Vec<u8>>);

    impl NodeStore for Tree {
        async fn entries(&mut self) -> anyhow::Result<Entries> {
            Ok(self
                .0
                .iter()
                .filter(|(k, _)| {
                    keyspace::PARENTS
                        .iter()
                        .any(|p| k.starts_with(&format!("{p}/")))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect())
        }

        async fn put(&mut self, path: &str, value: &[u8]) -> anyhow::Result<()> {
            let mut ancestor = path;
            while let Some((parent, _)) = ancestor.rsplit_once('/') {
                if !parent.is_empty() {
                    self.0.entry(parent.to_owned()).or_default();
                }
                ancestor = parent;
            }
            self.0.insert(path.to_owned(), value.to_vec());
            Ok(())
        }

        async fn delete(&mut self, path: &str) -> anyhow::Result<()> {
            let prefix = format!("{path}/");
            anyhow::ensure!(
                !self.0.keys().any(|k| k.starts_with(&prefix)),
                "{path} has children"
            );
            self.0.remove(path);
            Ok(())
        }

        async fn delete_prefix(&mut self, prefix: &str) -> anyhow::Result<()> {
            self.0
                .retain(|k, _| !k.starts_with(prefix) || k[prefix.len()..].contains('/'));
            Ok(())
        }

        async fn lost(&mut self) -> String {
            std::future::pending().await
        }
    }

    fn selector(id: &str) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            plugin_name: "divide".to_owned(),
            ..Default::default()
        }
    }

    fn rule(id: &str, selector: &str) -> RuleData {
        RuleData {
            id: id.to_owned(),
            selector_id: selector.to_owned(),
            plugin_name: "divide".to_owned(),
            ..Default::default()
        }
    }

    fn snapshot(selectors: Vec<SelectorData>, rules: Vec<RuleData>) -> Snapshot {
        Snapshot {
            config: model::ConfigSet {
                plugins: vec![PluginData {
                    id: "5".into(),
                    name: "divide".into(),
                    ..Default::default()
                }],
                selectors,
                rules,
                meta_data: Vec::new(),
            },
            app_auth: Vec::new(),
        }
    }

    fn paths(tree: &Tree) -> Vec<&str> {
        tree.0.keys().map(String::as_str).collect()
    }

    #[tokio::test]
    async fn full_write_puts_everything_and_deletes_stale_keys() {
        let mut tree = Tree::default();
        tree.put("/shenyu/selector/waf/9", b"{}").await.unwrap();
        tree.put("/shenyu/rule/divide/1-8", b"{}").await.unwrap();
        tree.put("/shenyu/proxySelectorData/divide/3", b"{}")
            .await
            .unwrap();
        let snap = snapshot(vec![selector("1")], vec![rule("2", "1")]);
        let existing = tree.entries().await.unwrap();
        let written = full_write(&mut tree, existing, &snap).await.unwrap();
        assert_eq!(
            written,
            Written {
                items: 3,
                puts: 3,
                // selector/waf/9, its parent selector/waf, rule/divide/1-8
                deletes: 3
            }
        );
        assert_eq!(
            paths(&tree),
            [
                "/shenyu",
                "/shenyu/plugin",
                "/shenyu/plugin/divide",
                "/shenyu/proxySelectorData",
                "/shenyu/proxySelectorData/divide",
                "/shenyu/proxySelectorData/divide/3",
                "/shenyu/rule",
                "/shenyu/rule/divide",
                "/shenyu/rule/divide/1-2",
                "/shenyu/selector",
                "/shenyu/selector/divide",
                "/shenyu/selector/divide/1",
            ]
        );
        let value = &tree.0["/shenyu/selector/divide/1"];
        let parsed: SelectorData = serde_json::from_slice(value).unwrap();
        assert_eq!(parsed, selector("1"));
    }

    /// Admin A restarts while admin B publishes a newer commit: A read the store, then its
    /// snapshot, and B wrote its newer value after both. A's full write must leave B's value
    /// alone (it once put every item back, so gateways went back to the older config until A's
    /// own event for the commit arrived).
    #[tokio::test]
    async fn a_full_write_does_not_put_back_an_older_value_another_admin_replaced() {
        let older = SelectorData {
            name: "to gamma".to_owned(),
            ..selector("1")
        };
        let newer = SelectorData {
            name: "to alpha".to_owned(),
            ..selector("1")
        };
        let snap = snapshot(vec![older], Vec::new());
        let mut tree = Tree::default();
        let all = tree.entries().await.unwrap();
        full_write(&mut tree, all, &snap).await.unwrap();

        let existing = tree.entries().await.unwrap();
        let path = "/shenyu/selector/divide/1";
        tree.put(path, &serde_json::to_vec(&newer).unwrap())
            .await
            .unwrap();
        let written = full_write(&mut tree, existing, &snap).await.unwrap();
        assert_eq!(written.puts, 0, "nothing differed when the store was read");
        let held: SelectorData = serde_json::from_slice(&tree.0[path]).unwrap();
        assert_eq!(held, newer, "the newer value was put back to the older one");
    }

    #[tokio::test]
    async fn events_put_and_delete_with_dependants() {
        let mut tree = Tree::default();
        let put = |payload| DataEvent::new(DataEventType::Update, payload);
        let del = |payload| DataEvent::new(DataEventType::Delete, payload);
        for event in [
            put(EventPayload::Selector(vec![selector("1"), selector("3")])),
            put(EventPayload::Rule(vec![
                rule("2", "1"),
                rule("4", "3"),
                rule("12", "11"),
            ])),
            del(EventPayload::Selector(vec![selector("1")])),
        ] {
            write_event(&mut tree, &event).await.unwrap();
        }
        let items: Vec<&str> = paths(&tree)
            .into_iter()
            .filter(|p| NodeKey::parse(p).is_some())
            .collect();
        assert_eq!(
            items,
            [
                "/shenyu/rule/divide/11-12",
                "/shenyu/rule/divide/3-4",
                "/shenyu/selector/divide/3"
            ]
        );
        let refresh = DataEvent::new(
            DataEventType::Refresh,
            EventPayload::Rule(vec![rule("5", "3")]),
        );
        write_event(&mut tree, &refresh).await.unwrap();
        assert!(tree.0.contains_key("/shenyu/rule/divide/3-5"));
        assert!(!tree.0.contains_key("/shenyu/rule/divide/3-4"));
        assert!(tree.0.contains_key("/shenyu/selector/divide/3"));
    }
}
