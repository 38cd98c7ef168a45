//! Commits other admins make to the shared database (ShenYu's admin-cluster problem, protocol
//! §4.5, which ShenYu's admins only solve at a gateway's next poll or the 5-minute refresh).
//!
//! The admin keeps what it has published ([`Published`]: every group's items, updated by each
//! event it sends, in the model of `service::groups`). When the database may have changed,
//! [`Admin::reconcile`] reads a snapshot under the write lock and publishes the difference as
//! UPDATE and DELETE events; so
//! every publisher (websocket sessions, the long-poll cache, ZooKeeper, etcd) passes on
//! another admin's commit as if it were this admin's own. [`watch`] runs it after every
//! change the store's feed ([`Store::change_feed`](crate::store::Store::change_feed)) reports, and every
//! [`FALLBACK`] in any case.

use std::sync::{Arc, Weak};
use std::time::Duration;

use model::{DataEvent, DataEventType, EventPayload};
use tokio::sync::broadcast;

use super::groups::ConfigGroups;
use super::{Admin, SharedEvent, Snapshot};
use crate::store::StoreError;

/// How often the database is compared with what was published even when no change was
/// reported (a missed notification, a feed that cannot be opened).
pub(crate) const FALLBACK: Duration = Duration::from_secs(60);

/// How long to wait before opening a failed change feed again.
const REOPEN_DELAY: Duration = Duration::from_secs(1);

/// The watch spends at most one part in `PACE` of its time comparing: after a comparison that
/// took `d`, the next one starts no sooner than `PACE × d` after it began. A comparison reads
/// everything committed (0.2 s at 10k selectors in a release build) and the feed reports this
/// admin's own commits too, so unpaced, a steady stream of writes kept a core rereading the
/// database and every write got slower as the config grew (creating 4,000 routes one call at
/// a time took minutes in a debug build). The price: another admin's commit may wait
/// `(PACE - 1) × d` longer to be passed on (0.8 s at 10k selectors).
const PACE: u32 = 5;

/// When the comparison after one that began at `began` and took `took` may start.
fn paced(began: tokio::time::Instant, took: Duration) -> tokio::time::Instant {
    began + took * PACE
}

/// What an admin has published: what its gateways hold once every event has reached them.
#[derive(Debug, Default)]
pub(crate) struct Published(ConfigGroups);

impl Published {
    /// Everything in `snapshot` published.
    pub(crate) fn new(snapshot: &Snapshot) -> Self {
        Self(ConfigGroups::from_snapshot(snapshot.clone()))
    }

    /// Takes in one published event (kept as stored: without an update's `before…` lists,
    /// or every update would look like another admin's commit and go out twice).
    pub(crate) fn apply(&mut self, event: &DataEvent) {
        self.0.apply(event);
    }

    /// Moves to `snapshot`, answering the events that take gateways there: UPDATE of the new
    /// and changed items in sync order (plugins first), then DELETE of the gone ones in
    /// reverse (rules before their selectors before their plugins). Empty groups give no
    /// event.
    pub(crate) fn advance(&mut self, snapshot: &Snapshot) -> Vec<DataEvent> {
        let groups = &mut self.0;
        let (plugins, gone_plugins) = groups.plugins.advance(&snapshot.config.plugins);
        let (selectors, gone_selectors) = groups.selectors.advance(&snapshot.config.selectors);
        let (rules, gone_rules) = groups.rules.advance(&snapshot.config.rules);
        let (meta, gone_meta) = groups.meta_data.advance(&snapshot.config.meta_data);
        let (auth, gone_auth) = groups.app_auth.advance(&snapshot.app_auth);
        let update = |payload| DataEvent::new(DataEventType::Update, payload);
        let delete = |payload| DataEvent::new(DataEventType::Delete, payload);
        [
            update(EventPayload::Plugin(plugins)),
            update(EventPayload::Selector(selectors)),
            update(EventPayload::Rule(rules)),
            update(EventPayload::MetaData(meta)),
            update(EventPayload::AppAuth(auth)),
            delete(EventPayload::AppAuth(gone_auth)),
            delete(EventPayload::MetaData(gone_meta)),
            delete(EventPayload::Rule(gone_rules)),
            delete(EventPayload::Selector(gone_selectors)),
            delete(EventPayload::Plugin(gone_plugins)),
        ]
        .into_iter()
        .filter(|e| !e.is_empty())
        .collect()
    }
}

impl Admin {
    /// Publishes what the database holds and this admin has not published (commits of other
    /// admins sharing the database); answers the number of events sent.
    ///
    /// The database is read without the write lock, so a comparison never holds up this
    /// admin's writes for a whole read; the difference is taken under the lock, and only if
    /// no write of this admin came between the read and the lock (else the read would miss
    /// what was just published and undo it). After [`super::OPTIMISTIC_READS`] reads spoiled
    /// that way, one read takes the lock.
    pub(crate) async fn reconcile(&self) -> Result<usize, StoreError> {
        self.reconcile_with(async || {}).await
    }

    /// [`Self::reconcile`], running `between` after each lock-free read (tests plant writes
    /// there).
    async fn reconcile_with(&self, mut between: impl AsyncFnMut()) -> Result<usize, StoreError> {
        let mut writes = self.writes.subscribe();
        for _ in 0..super::OPTIMISTIC_READS {
            let before = *writes.borrow_and_update();
            if before % 2 == 1 {
                // A write is in progress: read once it is done.
                if writes.changed().await.is_err() {
                    break;
                }
                continue;
            }
            let snapshot = self.read_snapshot().await?;
            between().await;
            let _write = self.write_lock().await;
            // Taking the lock counted one: anything more is a write between read and lock.
            if *self.writes.borrow() == before + 1 {
                return Ok(self.pass_on(&snapshot));
            }
        }
        let _write = self.write_lock().await;
        let snapshot = self.read_snapshot().await?;
        Ok(self.pass_on(&snapshot))
    }

    /// Publishes the difference between `snapshot` and what was published; called under the
    /// write lock.
    fn pass_on(&self, snapshot: &Snapshot) -> usize {
        let events = self.published().advance(snapshot);
        let sent = events.len();
        for event in events {
            tracing::info!(
                group = %event.group(),
                kind = %event.event_type,
                items = event.len(),
                "passing on a change another admin committed"
            );
            self.send(event);
        }
        sent
    }
}

/// Runs [`Admin::reconcile`] after every change the database reports (SQLite read every
/// `poll`) and every [`FALLBACK`], until the admin is dropped. With `poll` `None` only the
/// fallback runs; an in-memory database, which nothing else can change, is not watched. A
/// feed that fails is opened again.
pub(crate) async fn watch(admin: Weak<Admin>, poll: Option<Duration>) {
    let Some((store, mut events)) = admin.upgrade().map(|a| (a.store.clone(), a.subscribe()))
    else {
        return;
    };
    let mut feed = None;
    loop {
        if let Some(poll) = poll
            && feed.is_none()
        {
            feed = match store.change_feed(poll).await {
                Ok(None) => return,
                Ok(Some(feed)) => Some(feed),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch the database for other admins' commits");
                    None
                }
            };
        }
        // Also reads whatever changed while no feed was open.
        let Some(strong) = admin.upgrade() else {
            return;
        };
        let began = tokio::time::Instant::now();
        if let Err(e) = strong.reconcile().await {
            tracing::warn!(error = %e, "cannot compare the database with what was published");
        }
        drop(strong);
        let rested = paced(began, began.elapsed());
        let deadline = match (&feed, poll) {
            (None, Some(_)) => tokio::time::Instant::now() + REOPEN_DELAY,
            _ => tokio::time::Instant::now() + FALLBACK,
        };
        let next = async {
            tokio::time::sleep_until(rested).await;
            match feed.as_mut() {
                Some(open) => {
                    if let Err(e) = open.changed(deadline).await {
                        tracing::warn!(error = %e, "the database's change feed failed; reopening it");
                        feed = None;
                    }
                }
                None => tokio::time::sleep_until(deadline).await,
            }
        };
        tokio::select! {
            () = next => {},
            () = admin_gone(&mut events) => return,
        }
    }
}

/// Completes once the admin's event channel closes (the admin is dropped).
async fn admin_gone(events: &mut broadcast::Receiver<SharedEvent>) {
    while !matches!(
        events.recv().await,
        Err(broadcast::error::RecvError::Closed)
    ) {}
}

/// Starts [`watch`] for `admin` in the background.
pub(crate) fn spawn_watch(admin: &Arc<Admin>, poll: Option<Duration>) {
    tokio::spawn(watch(Arc::downgrade(admin), poll));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use model::SelectorData;

    use tokio::time::{Instant, timeout};

    use super::*;
    use crate::service::tests::selector;
    use crate::store::tests::PgSchema;

    /// How long a commit on one admin may take to be published by the other (the bound the
    /// README states); the watch reads SQLite every [`POLL`].
    const BOUND: Duration = Duration::from_secs(2);
    const POLL: Duration = Duration::from_millis(100);

    fn selector_data(id: &str, name: &str) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            name: name.to_owned(),
            ..Default::default()
        }
    }

    fn snapshot(selectors: Vec<SelectorData>) -> Snapshot {
        Snapshot {
            config: model::ConfigSet {
                selectors,
                ..Default::default()
            },
            app_auth: Vec::new(),
        }
    }

    #[test]
    fn the_difference_is_updates_then_deletes() {
        let mut published = Published::new(&snapshot(vec![
            selector_data("1", "a"),
            selector_data("2", "b"),
        ]));
        let events = published.advance(&snapshot(vec![
            selector_data("2", "b2"),
            selector_data("3", "c"),
        ]));
        assert_eq!(
            events,
            [
                DataEvent::new(
                    DataEventType::Update,
                    EventPayload::Selector(vec![selector_data("2", "b2"), selector_data("3", "c")])
                ),
                DataEvent::new(
                    DataEventType::Delete,
                    EventPayload::Selector(vec![selector_data("1", "a")])
                ),
            ]
        );
        assert!(
            published
                .advance(&snapshot(vec![
                    selector_data("2", "b2"),
                    selector_data("3", "c")
                ]))
                .is_empty(),
            "nothing left once advanced"
        );
    }

    #[test]
    fn an_update_with_its_before_conditions_is_not_passed_on_again() {
        let mut published = Published::new(&snapshot(vec![selector_data("1", "a")]));
        let updated = selector_data("1", "a2");
        published.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![SelectorData {
                before_condition_list: vec![model::ConditionData::default()],
                ..updated.clone()
            }]),
        ));
        assert_eq!(published.advance(&snapshot(vec![updated])), Vec::new());
    }

    #[test]
    fn published_events_leave_nothing_to_pass_on() {
        let mut published = Published::new(&snapshot(vec![selector_data("1", "a")]));
        published.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![selector_data("2", "b")]),
        ));
        published.apply(&DataEvent::new(
            DataEventType::Delete,
            EventPayload::Selector(vec![selector_data("1", "a")]),
        ));
        assert!(
            published
                .advance(&snapshot(vec![selector_data("2", "b")]))
                .is_empty()
        );
        // A planted miss: an event never applied is found.
        let events = published.advance(&snapshot(vec![
            selector_data("2", "b"),
            selector_data("4", "d"),
        ]));
        assert_eq!(events.len(), 1, "{events:?}");
    }

    /// The next selector event on `events` naming `id`, within [`BOUND`]; `None` only when the
    /// bound passes without one (silence). A closed or lagging channel panics: it would hide
    /// events, not show their absence. Every event received (that one included) is added to
    /// `seen`.
    async fn selector_event(
        events: &mut broadcast::Receiver<SharedEvent>,
        id: &str,
        seen: &mut Vec<SharedEvent>,
    ) -> Option<SharedEvent> {
        let deadline = Instant::now() + BOUND;
        loop {
            let received = tokio::time::timeout_at(deadline, events.recv())
                .await
                .ok()?;
            let event = received.unwrap_or_else(|e| {
                panic!("the event channel failed before the bound ({e}): no proof of silence")
            });
            seen.push(event.clone());
            if let EventPayload::Selector(items) = &event.payload
                && items.iter().any(|s| s.id == id)
            {
                return Some(event);
            }
        }
    }

    /// The control's own control: a channel that closes is not read as silence.
    #[tokio::test]
    #[should_panic(expected = "the event channel failed before the bound (channel closed)")]
    async fn a_closed_channel_is_no_silence() {
        let (sender, mut events) = broadcast::channel::<SharedEvent>(1);
        drop(sender);
        selector_event(&mut events, "1", &mut Vec::new()).await;
    }

    /// A write of this admin that lands between a comparison's read and its lock is not
    /// undone: the read that missed it is thrown away and read again.
    #[tokio::test]
    async fn a_write_after_the_read_is_not_undone() {
        let store = crate::store::open(":memory:").await.unwrap();
        let admin = Admin::new(store).await.unwrap();
        let mut events = admin.subscribe();
        let mut written = None;
        let sent = admin
            .reconcile_with(async || {
                if written.is_none() {
                    written = Some(admin.create_selector(selector("/between")).await.unwrap());
                }
            })
            .await
            .unwrap();
        assert_eq!(sent, 0, "nothing to pass on");
        let event = events.try_recv().expect("the write's own event");
        assert_eq!(event.event_type, DataEventType::Update);
        assert!(
            matches!(
                events.try_recv(),
                Err(broadcast::error::TryRecvError::Empty)
            ),
            "no DELETE of {written:?} from a stale read"
        );
    }

    /// Two admins on `db`; `a` watches (or not), `b` writes.
    async fn pair(db: &str, watch: Option<Duration>) -> (Arc<Admin>, Admin) {
        let a = Arc::new(
            Admin::new(crate::store::open(db).await.unwrap())
                .await
                .unwrap(),
        );
        spawn_watch(&a, watch);
        let b = Admin::new(crate::store::open(db).await.unwrap())
            .await
            .unwrap();
        (a, b)
    }

    async fn another_admins_commits_are_published(db: &str) {
        let (a, b) = pair(db, Some(POLL)).await;
        let mut events = a.subscribe();
        let mut seen = Vec::new();
        let own = a.create_selector(selector("/own")).await.unwrap();
        let created = b.create_selector(selector("/peer")).await.unwrap();
        let event = selector_event(&mut events, &created, &mut seen)
            .await
            .expect("b's new selector is published by a within the bound");
        assert_eq!(event.event_type, DataEventType::Update);
        b.delete_selectors(std::slice::from_ref(&created))
            .await
            .unwrap();
        let deleted = selector_event(&mut events, &created, &mut seen)
            .await
            .expect("b's delete is published by a within the bound");
        assert_eq!(deleted.event_type, DataEventType::Delete);
        let own_events = seen
            .iter()
            .filter(|e| matches!(&e.payload, EventPayload::Selector(items) if items.iter().any(|s| s.id == own)))
            .count();
        assert_eq!(
            own_events, 1,
            "a's own write is published once, not passed on again: {seen:?}"
        );
    }

    async fn without_the_watch_they_are_not(db: &str) {
        let (a, b) = pair(db, None).await;
        let mut events = a.subscribe();
        let created = b.create_selector(selector("/peer")).await.unwrap();
        assert!(
            selector_event(&mut events, &created, &mut Vec::new())
                .await
                .is_none(),
            "with the watch off, b's commit must not reach a's publishers within the bound"
        );
        // The fallback comparison still finds it.
        assert_eq!(a.reconcile().await.unwrap(), 1);
    }

    #[tokio::test]
    async fn another_admins_commits_are_published_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("shared.db");
        another_admins_commits_are_published(db.to_str().unwrap()).await;
    }

    #[tokio::test]
    async fn without_the_watch_they_are_not_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("shared.db");
        without_the_watch_they_are_not(db.to_str().unwrap()).await;
    }

    #[tokio::test]
    #[cfg_attr(
        gantry_postgres_skip,
        ignore = "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
    )]
    async fn another_admins_commits_are_published_on_postgres() {
        let schema = PgSchema::create().await;
        timeout(
            Duration::from_secs(30),
            another_admins_commits_are_published(&schema.url),
        )
        .await
        .unwrap();
        schema.drop().await;
    }

    #[tokio::test]
    #[cfg_attr(
        gantry_postgres_skip,
        ignore = "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
    )]
    async fn without_the_watch_they_are_not_on_postgres() {
        let schema = PgSchema::create().await;
        without_the_watch_they_are_not(&schema.url).await;
        schema.drop().await;
    }
}
