//! [`Admin`], the service layer between the REST API and the store: the write path
//! (validate, store, publish under one lock) and the read path that builds the synced shapes.
//! The same functions build what is published and what is digested.
//!
//! This file holds the shared parts (the write lock, change publishing, consistent
//! snapshots); each resource's writes and synced shape live in their own module, and every
//! refused write is a [`ServiceError`].

mod app_auth;
mod digest;
mod error;
pub(crate) mod groups;
mod meta;
mod peers;
mod plugin;
mod plugin_handle;
mod register;
mod rule;
mod selector;
mod shared;

use std::collections::HashMap;
use std::sync::Arc;

use model::lock::MutexExt;

use model::{AppAuthData, ConfigSet, DataEvent, DataEventType, EventPayload};
use tokio::sync::{Mutex, MutexGuard, broadcast, watch};

use self::app_auth::app_auth_data;
pub(crate) use self::error::ServiceError;
use self::meta::meta_data;
use self::peers::Published;
pub(crate) use self::peers::spawn_watch;
use self::plugin::plugin_data;
use self::rule::rule_data;
use self::selector::selector_data;
pub use self::shared::SharedEvent;
use crate::id::IdGenerator;
use crate::store::{Store, StoreError};
use model::time::now;
/// How many events a slow session may fall behind before it is closed.
const DISPATCH_CAPACITY: usize = 1024;

/// How many times a snapshot is read without the write lock before, writes having changed
/// the data under every read, it takes the lock for one read.
const OPTIMISTIC_READS: usize = 3;

/// The admin's core: storage plus the change dispatcher.
#[derive(Debug)]
pub(crate) struct Admin {
    store: Arc<Store>,
    events: broadcast::Sender<SharedEvent>,
    /// Held across every write and its publish, so events leave in commit order. Taken only
    /// through [`Admin::write_lock`].
    write: Mutex<()>,
    /// Counts the times `write` was taken and released: odd while a write is in progress,
    /// even otherwise. Snapshots read without the lock and check it did not move
    /// ([`Admin::snapshot_for`]).
    writes: watch::Sender<u64>,
    /// What the events sent so far add up to; changed only under the write lock.
    published: std::sync::Mutex<Published>,
    ids: IdGenerator,
    /// The last digest computed, with the write count it was read at.
    digest: digest::DigestCache,
    /// The emulated bug `publish-before-commit` ([`Admin::publishing_before_commit`]).
    publish_before_commit: bool,
}

/// The write lock, held by one write (store and publish) at a time. [`Admin::writes`] is odd
/// from when it is taken until it is dropped, after the write's events are published.
struct WriteGuard<'a> {
    _lock: MutexGuard<'a, ()>,
    writes: &'a watch::Sender<u64>,
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        // Runs before `_lock` is released: the count is even again only once the write and
        // its publish are done.
        self.writes.send_modify(|n| *n += 1);
    }
}

/// Everything committed, in synced shapes.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) config: ConfigSet,
    pub(crate) app_auth: Vec<AppAuthData>,
}

impl Admin {
    /// An admin over `store`, seeding the built-in plugins that are absent.
    pub(crate) async fn new(store: Arc<Store>) -> Result<Self, StoreError> {
        store.seed_plugins(model::BUILTIN_PLUGINS, &now()).await?;
        let (events, _) = broadcast::channel(DISPATCH_CAPACITY);
        let mut admin = Self {
            store,
            events,
            write: Mutex::new(()),
            writes: watch::Sender::new(0),
            published: std::sync::Mutex::new(Published::default()),
            ids: IdGenerator::default(),
            digest: digest::DigestCache::default(),
            publish_before_commit: false,
        };
        // Nobody has subscribed yet: what is in the database counts as published.
        let snapshot = admin.read_snapshot().await?;
        admin.published = std::sync::Mutex::new(Published::new(&snapshot));
        Ok(admin)
    }

    /// The same admin publishing a selector update before writing it
    /// ([`crate::EmulatedBug::PublishBeforeCommit`]). Tests only.
    pub(crate) fn publishing_before_commit(self) -> Self {
        Self {
            publish_before_commit: true,
            ..self
        }
    }

    /// The store, for reads.
    pub(crate) fn store(&self) -> &Store {
        self.store.as_ref()
    }

    /// A new subscription to every committed change.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<SharedEvent> {
        self.events.subscribe()
    }

    /// Sends one change to the publishers; called under the write lock.
    fn publish(&self, event_type: DataEventType, payload: EventPayload) {
        let event = DataEvent::new(event_type, payload);
        self.published().apply(&event);
        self.send(event);
    }

    /// What has been published.
    fn published(&self) -> std::sync::MutexGuard<'_, Published> {
        // Every update of it is a whole step; a panic between two leaves it usable.
        self.published.locked()
    }

    /// Sends `event` to the subscribers as it is.
    fn send(&self, event: DataEvent) {
        tracing::debug!(group = %event.group(), kind = %event.event_type, items = event.len(), "publish");
        // No subscriber is not an error: nobody is listening yet.
        let _ = self.events.send(SharedEvent::new(event));
    }

    async fn plugin_names(&self) -> Result<HashMap<String, String>, StoreError> {
        Ok(self
            .store
            .plugins()
            .await?
            .into_iter()
            .map(|p| (p.id, p.name))
            .collect())
    }

    async fn read_snapshot(&self) -> Result<Snapshot, StoreError> {
        let plugins = self.store.plugins().await?;
        let names: HashMap<&str, &str> = plugins
            .iter()
            .map(|p| (p.id.as_str(), p.name.as_str()))
            .collect();
        let selector_records = self.store.selectors().await?;
        let selector_plugin: HashMap<&str, &str> = selector_records
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    names.get(s.plugin_id.as_str()).copied().unwrap_or(""),
                )
            })
            .collect();
        let selectors = selector_records
            .iter()
            .map(|s| selector_data(s, names.get(s.plugin_id.as_str()).copied().unwrap_or("")))
            .collect();
        let rules = self
            .store
            .rules()
            .await?
            .iter()
            .map(|r| {
                rule_data(
                    r,
                    selector_plugin
                        .get(r.selector_id.as_str())
                        .copied()
                        .unwrap_or(""),
                )
            })
            .collect();
        let config = ConfigSet {
            plugins: plugins.iter().map(plugin_data).collect(),
            selectors,
            rules,
            meta_data: self
                .store
                .meta_data()
                .await?
                .iter()
                .map(meta_data)
                .collect(),
        };
        let app_auth = self
            .store
            .app_auths()
            .await?
            .iter()
            .map(app_auth_data)
            .collect();
        Ok(Snapshot { config, app_auth })
    }

    /// Takes the write lock; every write (store, then publish) holds it.
    async fn write_lock(&self) -> WriteGuard<'_> {
        let lock = self.write.lock().await;
        self.writes.send_modify(|n| *n += 1);
        WriteGuard {
            _lock: lock,
            writes: &self.writes,
        }
    }

    /// A consistent snapshot of everything committed.
    pub(crate) async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        Ok(self.consistent_snapshot(|| {}).await?.1)
    }

    /// A consistent snapshot of everything committed, with the write count it reflects.
    async fn versioned_snapshot(&self) -> Result<(u64, Snapshot), StoreError> {
        self.consistent_snapshot(|| {}).await
    }

    /// A snapshot for a sync session subscribed with `events`: the events already queued are
    /// dropped because the snapshot contains them, so the queue then holds exactly the
    /// changes committed after the snapshot.
    ///
    /// Read without the write lock, so full syncs never hold up writes: the events are
    /// drained and the snapshot read while no write is in progress, and the read is kept
    /// only if no write started meanwhile (the write counter did not move). Every write
    /// counted before is then published (drained) and in the snapshot, and every later one
    /// is neither. After [`OPTIMISTIC_READS`] reads spoiled by writes, one read takes the lock.
    pub(crate) async fn snapshot_for(
        &self,
        events: &mut broadcast::Receiver<SharedEvent>,
    ) -> Result<Snapshot, StoreError> {
        self.consistent_snapshot(|| {
            while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
        })
        .await
        .map(|(_, snapshot)| snapshot)
    }

    /// Reads a snapshot consistent with the writes (see [`Self::snapshot_for`]), with the
    /// (even) write count it reflects; `drain` runs just before each read.
    async fn consistent_snapshot(
        &self,
        mut drain: impl FnMut(),
    ) -> Result<(u64, Snapshot), StoreError> {
        let mut writes = self.writes.subscribe();
        for _ in 0..OPTIMISTIC_READS {
            let before = *writes.borrow_and_update();
            if before % 2 == 1 {
                // A write is in progress: try again once it is done.
                if writes.changed().await.is_err() {
                    break;
                }
                continue;
            }
            drain();
            let snapshot = self.read_snapshot().await?;
            if *writes.borrow() == before {
                return Ok((before, snapshot));
            }
            tracing::debug!("a write changed the data during a snapshot read; reading again");
        }
        // Not through `write_lock`: a read leaves the write counter alone.
        let _write = self.write.lock().await;
        // No write is in progress while the lock is held: the count is even and stays.
        let writes = *self.writes.borrow();
        drain();
        Ok((writes, self.read_snapshot().await?))
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Waker};
    use std::time::Duration;

    use model::SelectorDto;

    use super::*;

    /// A full selector of plugin 5 (divide) named `name`.
    pub(super) fn selector(name: &str) -> SelectorDto {
        SelectorDto {
            plugin_id: Some("5".to_owned()),
            name: Some(name.to_owned()),
            selector_type: Some(0),
            sort: Some(1),
            ..Default::default()
        }
    }

    /// A selector moved to another plugin is published as deleted from the old one (with
    /// its rules), then as new under the new one, its rules named with the new plugin; an
    /// update that keeps the plugin publishes SELECTOR/UPDATE only.
    #[tokio::test]
    async fn a_selector_moved_to_another_plugin_leaves_the_old_one() {
        let store = crate::store::open(":memory:").await.unwrap();
        let admin = Admin::new(store).await.unwrap();
        let id = admin.create_selector(selector("/moved")).await.unwrap();
        admin
            .create_rule(model::RuleDto {
                selector_id: Some(id.clone()),
                name: Some("r".to_owned()),
                sort: Some(1),
                ..Default::default()
            })
            .await
            .unwrap();
        let mut events = admin.subscribe();
        let summary = |events: &mut broadcast::Receiver<SharedEvent>| {
            let mut seen = Vec::new();
            while let Ok(e) = events.try_recv() {
                let plugins: Vec<String> = match &e.payload {
                    EventPayload::Selector(items) => {
                        items.iter().map(|s| s.plugin_name.clone()).collect()
                    }
                    EventPayload::Rule(items) => {
                        items.iter().map(|r| r.plugin_name.clone()).collect()
                    }
                    _ => Vec::new(),
                };
                seen.push(format!("{} {} {plugins:?}", e.group(), e.event_type));
            }
            seen
        };

        let mut kept = selector("/moved");
        kept.sort = Some(2);
        admin.update_selector(&id, kept).await.unwrap();
        assert_eq!(summary(&mut events), [r#"SELECTOR UPDATE ["divide"]"#]);

        let mut moved = selector("/moved");
        moved.plugin_id = Some("14".to_owned());
        admin.update_selector(&id, moved).await.unwrap();
        assert_eq!(
            summary(&mut events),
            [
                r#"SELECTOR DELETE ["divide"]"#,
                r#"RULE DELETE ["divide"]"#,
                r#"SELECTOR UPDATE ["contextPath"]"#,
                r#"RULE UPDATE ["contextPath"]"#,
            ]
        );
    }

    fn selector_ids(snapshot: &Snapshot) -> Vec<&str> {
        snapshot
            .config
            .selectors
            .iter()
            .map(|s| s.id.as_str())
            .collect()
    }

    /// A full sync being read holds nothing a write needs (it used to hold the write lock),
    /// and what it returns is still exact: the snapshot has every write whose event it
    /// drained, and the queue every later one.
    #[tokio::test]
    async fn a_write_completes_while_a_full_sync_is_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("admin.db");
        let store = crate::store::open(db.to_str().unwrap()).await.unwrap();
        let admin = Admin::new(store).await.unwrap();
        let mut events = admin.subscribe();
        let first = admin.create_selector(selector("/first")).await.unwrap();

        let (snapshot, second) = {
            let mut full = pin!(admin.snapshot_for(&mut events));
            let poll = full.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(poll.is_pending(), "the full sync is waiting for the store");
            let second = tokio::time::timeout(
                Duration::from_secs(10),
                admin.create_selector(selector("/second")),
            )
            .await
            .expect("a write completes while a full sync is being read")
            .unwrap();
            (full.await.unwrap(), second)
        };
        assert_eq!(selector_ids(&snapshot), [first.as_str(), second.as_str()]);
        assert!(
            matches!(
                events.try_recv(),
                Err(broadcast::error::TryRecvError::Empty)
            ),
            "the events of writes in the snapshot are dropped"
        );
        let third = admin.create_selector(selector("/third")).await.unwrap();
        let event = events.try_recv().expect("a later write is queued");
        let EventPayload::Selector(data) = &event.payload else {
            panic!("a selector event");
        };
        assert_eq!(data[0].id, third);
    }

    /// The write counter is odd exactly while a write holds the lock, also when the write
    /// fails.
    #[tokio::test]
    async fn the_write_counter_brackets_every_write() {
        let store = crate::store::open(":memory:").await.unwrap();
        let admin = Admin::new(store).await.unwrap();
        assert_eq!(*admin.writes.borrow(), 0);
        {
            let _write = admin.write_lock().await;
            assert_eq!(*admin.writes.borrow(), 1);
        }
        assert_eq!(*admin.writes.borrow(), 2);
        admin.create_selector(selector("/a")).await.unwrap();
        assert_eq!(*admin.writes.borrow(), 4);
        assert!(admin.create_selector(selector(" ")).await.is_err());
        assert_eq!(*admin.writes.borrow() % 2, 0);
        admin.snapshot().await.unwrap();
        assert_eq!(*admin.writes.borrow() % 2, 0, "a read does not count");
    }
}
