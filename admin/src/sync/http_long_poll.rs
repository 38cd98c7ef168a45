//! HTTP long-polling sync (ShenYu `ConfigController`, protocol §4): `GET /configs/fetch`
//! serves whole groups with their md5 and `lastModifyTime`; `POST /configs/listener` answers
//! the groups whose md5 differs from the client's, holding the request until one changes.
//!
//! The admin keeps one cache entry per group: the exact JSON text of the group's list (served
//! as is by `fetch`), its md5 and the time it last changed. One task keeps it: it loads every
//! group from a committed snapshot, then applies each change event (which includes other
//! admins' commits on the same database, once noticed: `service::peers`) to the items it holds
//! ([`groups::Groups`], in the database's order) and re-serialises only the groups the event
//! touched, reading nothing from the database. It rebuilds everything from a snapshot when it
//! missed events (a lagged receiver), every `refresh` interval, and when a client shows a newer
//! timestamp than this admin has (§4.5: the change comes from another admin and was not
//! noticed yet). A group whose md5 changes answers the held listeners at once.

mod groups;

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use model::lock::MutexExt;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use md5::{Digest, Md5};
use model::{AdminResult, ConfigGroup, DataEvent, SyncFaultKind, SyncMode};
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use self::groups::Groups;
use super::fault::{self, SyncFaults};
use super::status::{Confirming, Peer, SyncStatus};
use super::{Publisher, closed};
use crate::AppState;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::service::{Admin, SharedEvent};
use crate::store::StoreError;

/// How many group changes a held listener may miss before it just re-compares everything.
const CHANGE_CAPACITY: usize = 64;

/// One group as cached: the JSON served, its md5 and when it last changed.
#[derive(Debug)]
struct Entry {
    json: Bytes,
    md5: String,
    last_modify_time: i64,
}

/// A request for a rebuild from the database, answered once it is installed.
type Reload = oneshot::Sender<Result<(), StoreError>>;

/// The long-polling state shared by the two endpoints and the task keeping the cache.
#[derive(Debug)]
pub(crate) struct LongPoll {
    cache: Mutex<HashMap<ConfigGroup, Arc<Entry>>>,
    /// Every group whose md5 changed, as it changes.
    changes: broadcast::Sender<ConfigGroup>,
    /// Serialises the reloads stale clients ask for, so many stale clients cause one
    /// database read, not many.
    reload: tokio::sync::Mutex<()>,
    /// To the task keeping the cache ([`keep_current`]), the only one that changes it.
    reloads: mpsc::Sender<Reload>,
    /// Becomes true once the cache holds every group.
    ready: watch::Sender<bool>,
    hold: Duration,
    /// The test-only protocol fault hook, when on.
    faults: Option<Arc<SyncFaults>>,
    /// [`crate::EmulatedBug::CompareLastModifyTime`]: stamps follow the clock as it is and
    /// a client is stale only when its `lastModifyTime` is older than the admin's.
    compare_times: AtomicBool,
}

impl LongPoll {
    /// Whether the admin emulates [`crate::EmulatedBug::CompareLastModifyTime`].
    fn compares_times(&self) -> bool {
        self.compare_times.load(Ordering::Relaxed)
    }
}

/// Serves `/configs/fetch` and `/configs/listener`.
#[derive(Debug)]
pub(crate) struct HttpLongPollPublisher {
    poll: Arc<LongPoll>,
    /// What each gateway was sent and confirmed.
    status: Arc<SyncStatus>,
}

fn millis_now() -> i64 {
    i64::try_from(model::world::since_epoch().as_millis()).unwrap_or(i64::MAX)
}

impl HttpLongPollPublisher {
    /// Starts serving `admin`'s committed data: listeners are held up to `hold`, and the cache
    /// is loaded now (in the background), then kept current with every change and rebuilt at
    /// least every `refresh`, until the admin is dropped; with the test-only protocol `faults`
    /// hook when given; sends and confirmations are recorded in `status`.
    pub(crate) fn start(
        admin: &Arc<Admin>,
        hold: Duration,
        refresh: Duration,
        faults: Option<Arc<SyncFaults>>,
        status: Arc<SyncStatus>,
    ) -> Self {
        let (poll, reloads) = LongPoll::new(hold, faults);
        let poll = Arc::new(poll);
        // Subscribed now, so no change committed from here on can be missed.
        let events = admin.subscribe();
        let mut keeper = Keeper::new(Arc::clone(&poll), Arc::downgrade(admin), events);
        keeper.status = Some(Arc::clone(&status));
        tokio::spawn(keep_current(keeper, reloads, refresh));
        Self { poll, status }
    }

    /// With `on`, emulates [`crate::EmulatedBug::CompareLastModifyTime`] (tests only).
    pub(crate) fn comparing_times(self, on: bool) -> Self {
        self.poll.compare_times.store(on, Ordering::Relaxed);
        self
    }
}

/// The cache's one writer: the items of every group once loaded, and the change events that
/// come after them.
#[derive(Debug)]
struct Keeper {
    poll: Arc<LongPoll>,
    admin: Weak<Admin>,
    events: broadcast::Receiver<SharedEvent>,
    /// `None` until loaded, and after a failed rebuild.
    groups: Option<Groups>,
    /// Notes each change before the cache holds it, so an answer never counts as sending a
    /// change the registry has not numbered.
    status: Option<Arc<SyncStatus>>,
}

impl Keeper {
    fn new(
        poll: Arc<LongPoll>,
        admin: Weak<Admin>,
        events: broadcast::Receiver<SharedEvent>,
    ) -> Self {
        Self {
            poll,
            admin,
            events,
            groups: None,
            status: None,
        }
    }

    /// Rebuilds every group from a snapshot that includes every event queued (which are
    /// dropped); `None` when the admin is gone.
    async fn rebuild(&mut self) -> Option<Result<(), StoreError>> {
        let admin = self.admin.upgrade()?;
        // A failed read may have dropped queued events: until a rebuild succeeds, there is
        // nothing sound to apply the next ones to.
        self.groups = None;
        let snapshot = match admin.snapshot_for(&mut self.events).await {
            Ok(snapshot) => snapshot,
            Err(e) => return Some(Err(e)),
        };
        let groups = Groups::from_snapshot(snapshot);
        self.poll.install(
            ConfigGroup::ALL
                .iter()
                .map(|&group| (group, groups.json(group))),
        );
        self.groups = Some(groups);
        Some(Ok(()))
    }

    /// Applies `event`, and every event already queued behind it, to the groups, then
    /// re-serialises each group they touched once: a burst of N changes to a group costs one
    /// serialisation of it, not N. `false` when nothing is loaded yet to apply them to, or
    /// when the queue overflowed meanwhile: a rebuild must take them in.
    fn apply(&mut self, event: &DataEvent) -> bool {
        let Some(groups) = self.groups.as_mut() else {
            return false;
        };
        let mut touched = groups.apply(event);
        loop {
            match self.events.try_recv() {
                Ok(next) => {
                    for group in groups.apply(&next) {
                        if !touched.contains(&group) {
                            touched.push(group);
                        }
                    }
                }
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                Err(TryRecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "the long-polling cache missed changes; rebuilding it"
                    );
                    return false;
                }
            }
        }
        self.poll
            .install(touched.into_iter().map(|group| (group, groups.json(group))));
        true
    }
}

/// Loads the cache, then applies every change event to it, and rebuilds it from the database
/// after missed events, every `refresh` (which also retries a failed load) and on request
/// (`reloads`), until the admin is gone.
async fn keep_current(mut keeper: Keeper, mut reloads: mpsc::Receiver<Reload>, refresh: Duration) {
    let Some(loaded) = keeper.rebuild().await else {
        return;
    };
    if let Err(e) = loaded {
        tracing::error!(error = %e, "cannot load the long-polling cache");
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + refresh, refresh);
    loop {
        let rebuilt = tokio::select! {
            event = keeper.events.recv() => match event {
                Ok(event) => {
                    if let Some(status) = &keeper.status {
                        status.note(&event);
                    }
                    if keeper.apply(&event) {
                        continue;
                    }
                    // Nothing loaded to apply it to, or events missed: loading now takes them
                    // in.
                    keeper.rebuild().await
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the long-polling cache missed changes; rebuilding it");
                    keeper.rebuild().await
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            Some(reply) = reloads.recv() => {
                let Some(rebuilt) = keeper.rebuild().await else { return };
                // The asker may have gone.
                let _ = reply.send(rebuilt);
                continue;
            }
            _ = tick.tick() => keeper.rebuild().await,
        };
        match rebuilt {
            None => return,
            Some(Ok(())) => {}
            Some(Err(e)) => tracing::error!(error = %e, "cannot refresh the long-polling cache"),
        }
    }
}

impl LongPoll {
    /// An empty cache, with the receiving end of its reload requests (for [`keep_current`]).
    fn new(hold: Duration, faults: Option<Arc<SyncFaults>>) -> (Self, mpsc::Receiver<Reload>) {
        let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
        let (ready, _) = watch::channel(false);
        // One at a time: they are serialised by `reload`.
        let (reloads, requests) = mpsc::channel(1);
        let poll = Self {
            cache: Mutex::new(HashMap::new()),
            changes,
            reload: tokio::sync::Mutex::new(()),
            reloads,
            ready,
            hold,
            faults,
            compare_times: AtomicBool::new(false),
        };
        (poll, requests)
    }

    /// Waits until the first load has completed.
    async fn wait_ready(&self) {
        let mut ready = self.ready.subscribe();
        // The sender lives in `self`, so this cannot fail.
        let _ = ready.wait_for(|ready| *ready).await;
    }

    fn entry(&self, group: ConfigGroup) -> Arc<Entry> {
        let cache = self.cache.locked();
        Arc::clone(
            cache
                .get(&group)
                .expect("every group is cached from the start"),
        )
    }

    /// Installs the `(group, json)` pairs whose md5 differs from the cached one, then tells
    /// the waiting clients. Called by the keeper only (one writer).
    fn install(&self, fresh: impl IntoIterator<Item = (ConfigGroup, String)>) {
        let fresh: Vec<(ConfigGroup, String, String)> = fresh
            .into_iter()
            .map(|(group, json)| {
                let md5 = hex::encode(Md5::digest(json.as_bytes()));
                (group, json, md5)
            })
            .collect();
        let mut changed = Vec::new();
        {
            let mut cache = self.cache.locked();
            for (group, json, md5) in fresh {
                let previous = cache.get(&group);
                if previous.is_some_and(|p| p.md5 == md5) {
                    continue;
                }
                let now = millis_now();
                let last_modify_time = match previous {
                    Some(p) if !self.compares_times() => now.max(p.last_modify_time + 1),
                    _ => now,
                };
                if previous.is_some() {
                    changed.push(group);
                }
                let entry = Entry {
                    json: Bytes::from(json),
                    md5,
                    last_modify_time,
                };
                cache.insert(group, Arc::new(entry));
            }
            if cache.len() == ConfigGroup::ALL.len() && !*self.ready.borrow() {
                self.ready.send_replace(true);
            }
        }
        for group in changed {
            tracing::debug!(%group, "long-poll group changed");
            // No waiting client is not an error.
            let _ = self.changes.send(group);
        }
    }

    /// Has the keeper rebuild the cache from the database, and waits until it has.
    async fn reload(&self) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        if self.reloads.send(reply).await.is_err() {
            // The keeper is gone with the admin: nothing to reload.
            return Ok(());
        }
        answer.await.unwrap_or(Ok(()))
    }

    /// §4.5: whether the client's `(md5, ts)` for `group` is out of date.
    async fn is_stale(
        &self,
        admin: &Admin,
        group: ConfigGroup,
        client_md5: &str,
        client_ts: i64,
    ) -> Result<bool, StoreError> {
        let seen = self.entry(group);
        if self.compares_times() {
            // The emulated bug: the times alone decide, so a clock gone back hides a change.
            return Ok(seen.last_modify_time > client_ts);
        }
        if client_md5 == seen.md5 {
            return Ok(false);
        }
        if seen.last_modify_time >= client_ts {
            return Ok(true);
        }
        // The client saw a newer version than this admin has: another admin changed the
        // database. Reload, unless the entry changed while we waited for the lock.
        let _reload = self.reload.lock().await;
        let current = self.entry(group);
        if Arc::ptr_eq(&current, &seen) {
            tracing::info!(%group, "a client is ahead of this admin; reloading from the database");
            // The other publishers pass the change on too.
            admin.reconcile().await?;
            self.reload().await?;
        }
        Ok(client_md5 != self.entry(group).md5)
    }

    /// The groups among `wanted` whose client state is out of date, in request order.
    async fn stale_groups(
        &self,
        admin: &Admin,
        wanted: &[(ConfigGroup, String, i64)],
    ) -> Result<Vec<ConfigGroup>, StoreError> {
        let mut stale = Vec::new();
        for (group, md5, ts) in wanted {
            if self.is_stale(admin, *group, md5, *ts).await? {
                stale.push(*group);
            }
        }
        Ok(stale)
    }
}

impl Publisher for HttpLongPollPublisher {
    fn mode(&self) -> SyncMode {
        SyncMode::Http
    }

    fn routes(&self) -> Router<AppState> {
        Router::new()
            .route("/configs/fetch", get(fetch))
            .route("/configs/listener", post(listener))
            .layer(Extension(Arc::clone(&self.poll)))
            .layer(Extension(Arc::clone(&self.status)))
    }
}

/// Query and form parameters as `(name, value)` pairs.
fn pairs(text: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_bytes(text)
        .map_err(|e| ApiError::BadRequest(format!("malformed parameters: {e}")))
}

/// `GET /configs/fetch?groupKeys=PLUGIN&groupKeys=SELECTOR` (comma-separated lists work too).
async fn fetch(
    _: Authorized,
    Extension(poll): Extension<Arc<LongPoll>>,
    (Extension(status), Peer(peer), Confirming(confirmation)): (
        Extension<Arc<SyncStatus>>,
        Peer,
        Confirming,
    ),
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let link = status.poll(confirmation, peer);
    let mut groups = Vec::new();
    for (name, value) in pairs(query.unwrap_or_default().as_bytes())? {
        if name != "groupKeys" {
            continue;
        }
        for key in value.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            let group = key
                .parse::<ConfigGroup>()
                .map_err(|e| ApiError::field("groupKeys", e))?;
            groups.push(group);
        }
    }
    if groups.is_empty() {
        return Err(ApiError::field("groupKeys", "must name at least one group"));
    }
    poll.wait_ready().await;
    let mut entries: BTreeMap<&'static str, Arc<Entry>> = groups
        .into_iter()
        .map(|group| (group.as_str(), poll.entry(group)))
        .collect();
    if let Some(SyncFaultKind::CorruptGroup) =
        poll.faults.as_deref().and_then(SyncFaults::take_fetch)
    {
        corrupt_first(&mut entries);
    }
    link.sent();
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        fetch_body(&entries),
    )
        .into_response())
}

/// The fetch answer for `entries`: what `Json(AdminResult::success("success", data))` writes
/// for `data` a map from group name to `{md5, lastModifyTime, data}`, i.e.
/// `{"code":200,"message":"success","data":{"GROUP":{"md5":..,"lastModifyTime":..,"data":[..]},..}}`
/// with the groups in name order, each group's cached JSON copied in as is.
fn fetch_body(entries: &BTreeMap<&'static str, Arc<Entry>>) -> Vec<u8> {
    const HEAD: &[u8] = br#"{"code":200,"message":"success","data":{"#;
    let size = entries
        .values()
        .map(|e| e.json.len() + e.md5.len() + 64)
        .sum::<usize>();
    let mut body = Vec::with_capacity(HEAD.len() + size + 2);
    body.extend_from_slice(HEAD);
    for (i, (name, entry)) in entries.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        // Wire-enum names and hex digests: nothing to escape.
        write!(
            body,
            r#""{name}":{{"md5":"{}","lastModifyTime":{},"data":"#,
            entry.md5, entry.last_modify_time
        )
        .expect("writing to a Vec cannot fail");
        body.extend_from_slice(&entry.json);
        body.push(b'}');
    }
    body.extend_from_slice(b"}}");
    body
}

/// The test-only `corruptGroup` fault: the first group of a fetch answer keeps its md5 and
/// lastModifyTime but carries an item no gateway can read (a `sort` that is not a number).
fn corrupt_first(entries: &mut BTreeMap<&'static str, Arc<Entry>>) {
    if let Some(entry) = entries.values_mut().next() {
        *entry = Arc::new(Entry {
            json: Bytes::from_static(br#"[{"id":"corrupt","sort":"not a number"}]"#),
            md5: entry.md5.clone(),
            last_modify_time: entry.last_modify_time,
        });
    }
}

/// Parses the listener's `GROUP=md5,lastModifyTime` parameters; other names (such as
/// `namespaceId`) are ignored, and a group that is absent is one the client does not want.
fn wanted_groups(
    params: Vec<(String, String)>,
) -> Result<Vec<(ConfigGroup, String, i64)>, ApiError> {
    let mut wanted: Vec<(ConfigGroup, String, i64)> = Vec::new();
    for (name, value) in params {
        let Ok(group) = name.parse::<ConfigGroup>() else {
            continue;
        };
        let invalid = || ApiError::BadRequest(format!("group param invalid: {name}={value}"));
        let (md5, ts) = value.split_once(',').ok_or_else(invalid)?;
        let (md5, ts) = (md5.trim(), ts.trim());
        let ts: i64 = ts.parse().map_err(|_| invalid())?;
        if md5.is_empty() {
            return Err(invalid());
        }
        wanted.retain(|(g, _, _)| *g != group);
        wanted.push((group, md5.to_owned(), ts));
    }
    Ok(wanted)
}

/// The listener's answer, exactly as ShenYu writes it.
impl LongPoll {
    /// The listener answer naming `groups` (changed), as the armed test-only fault (if any)
    /// says (`sync::fault`): naming none, or after a delay.
    async fn answer(&self, groups: &[ConfigGroup]) -> Response {
        match fault::take(self.faults.as_deref(), SyncMode::Http) {
            Some((SyncFaultKind::EmptyAnswer, _)) => listener_response(&[]),
            Some((_, delay)) => {
                tokio::time::sleep(delay).await;
                listener_response(groups)
            }
            None => listener_response(groups),
        }
    }
}

fn listener_response(groups: &[ConfigGroup]) -> Response {
    let names: Vec<&str> = groups.iter().map(|g| g.as_str()).collect();
    let mut body = serde_json::to_string(&AdminResult::success("success", names))
        .expect("a list of names serialises");
    body.push('\n');
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache,no-store"),
            (header::PRAGMA, "no-cache"),
            (header::EXPIRES, "0"),
        ],
        body,
    )
        .into_response()
}

/// `POST /configs/listener`: parameters in the query string and/or a form body.
async fn listener(
    _: Authorized,
    State(state): State<AppState>,
    Extension(poll): Extension<Arc<LongPoll>>,
    (Extension(status), Peer(peer), Confirming(confirmation)): (
        Extension<Arc<SyncStatus>>,
        Peer,
        Confirming,
    ),
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let link = status.poll(confirmation, peer);
    let body = body?;
    let mut params = pairs(query.unwrap_or_default().as_bytes())?;
    params.extend(pairs(&body)?);
    let wanted = wanted_groups(params)?;
    poll.wait_ready().await;
    // Subscribe before comparing, so a change between the comparison and the wait is seen.
    let mut changes = poll.changes.subscribe();
    let mut closing = state.closing.subscribe();
    let admin = &state.admin;
    let stale = poll.stale_groups(admin, &wanted).await?;
    if !stale.is_empty() {
        link.sent();
        return Ok(poll.answer(&stale).await);
    }
    let deadline = tokio::time::Instant::now() + poll.hold;
    loop {
        let woken = tokio::select! {
            // Lagged (missed changes) or closed: fall through to a full comparison.
            change = changes.recv() => change.ok(),
            () = tokio::time::sleep_until(deadline) => None,
            () = closed(&mut closing) => None,
        };
        let Some(group) = woken else {
            let stale = poll.stale_groups(admin, &wanted).await?;
            if !stale.is_empty() {
                link.sent();
            }
            return Ok(listener_response(&stale));
        };
        // A change the client already has (it came from another admin and this one just
        // reloaded it) is no news to it; any other change of a group is.
        let current = poll.entry(group);
        let has_it = wanted.iter().any(|(g, md5, ts)| {
            *g == group
                && if poll.compares_times() {
                    // The emulated bug: a change stamped no later than the client's is none.
                    current.last_modify_time <= *ts
                } else {
                    *md5 == current.md5
                }
        });
        if !has_it {
            link.sent();
            return Ok(poll.answer(&[group]).await);
        }
    }
}

#[cfg(test)]
mod tests {
    use model::{ConditionDto, DataEventType, RuleDto, SelectorDto};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use serde::Serialize;
    use serde_json::value::RawValue;

    use super::*;
    use crate::dto::{AppAuthDto, AuthApplyDto, MetaDataDto, PluginDto};
    use crate::service::Snapshot;

    /// A group's JSON as a rebuild always wrote it: the list the store's queries return,
    /// serialised whole (the oracle the incremental cache is held to).
    fn rebuilt_json(snapshot: &Snapshot, group: ConfigGroup) -> String {
        let config = &snapshot.config;
        let json = match group {
            ConfigGroup::Plugin => serde_json::to_string(&config.plugins),
            ConfigGroup::Selector => serde_json::to_string(&config.selectors),
            ConfigGroup::Rule => serde_json::to_string(&config.rules),
            ConfigGroup::MetaData => serde_json::to_string(&config.meta_data),
            ConfigGroup::AppAuth => serde_json::to_string(&snapshot.app_auth),
            _ => Ok("[]".to_owned()),
        };
        json.unwrap()
    }

    /// A cache rebuilt from `snapshot`.
    fn rebuilt(snapshot: &Snapshot) -> LongPoll {
        let (poll, _) = LongPoll::new(Duration::ZERO, None);
        poll.install(
            ConfigGroup::ALL
                .iter()
                .map(|&group| (group, rebuilt_json(snapshot, group))),
        );
        poll
    }

    /// The groups whose JSON or md5 differ between two caches.
    fn differences(kept: &LongPoll, rebuilt: &LongPoll) -> Vec<ConfigGroup> {
        ConfigGroup::ALL
            .iter()
            .copied()
            .filter(|&group| {
                let (a, b) = (kept.entry(group), rebuilt.entry(group));
                a.json != b.json || a.md5 != b.md5
            })
            .collect()
    }

    /// Plugins selectors are put under (no rateLimiter: its rules need a handle).
    const SELECTOR_PLUGINS: &[&str] = &["5", "2", "3", "14"];

    fn condition(value: &str) -> Vec<ConditionDto> {
        vec![ConditionDto::new("uri", "=", "/", value)]
    }

    fn selector_dto(plugin: &str, name: &str, sort: i32) -> SelectorDto {
        SelectorDto {
            plugin_id: Some(plugin.to_owned()),
            name: Some(name.to_owned()),
            selector_type: Some(1),
            sort: Some(sort),
            selector_conditions: Some(condition(name)),
            ..Default::default()
        }
    }

    fn rule_dto(selector: &str, name: &str, sort: i32) -> RuleDto {
        RuleDto {
            selector_id: Some(selector.to_owned()),
            name: Some(name.to_owned()),
            sort: Some(sort),
            rule_conditions: Some(condition(name)),
            ..Default::default()
        }
    }

    fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[rng.random_range(0..items.len())])
    }

    /// One random write of every kind the admin publishes; `n` makes names unique.
    async fn random_write(admin: &Admin, rng: &mut StdRng, n: usize) {
        let now = admin.snapshot().await.unwrap();
        let config = &now.config;
        let sort = rng.random_range(0..4);
        let on = rng.random_bool(0.5);
        let selector = pick(rng, &config.selectors).map(|s| s.id.clone());
        let rule = pick(rng, &config.rules).cloned();
        let plugin = pick(rng, &config.plugins).cloned();
        let meta = pick(rng, &config.meta_data).map(|m| m.id.clone());
        let auths = admin.store().app_auths().await.unwrap();
        let auth = pick(rng, &auths).map(|a| a.id.clone());
        let under = pick(rng, SELECTOR_PLUGINS).copied().unwrap();
        let key = format!(
            "{}{n}",
            pick(rng, &["Key", "key", "_k", "K-", "0"]).unwrap()
        );
        let name = format!("/w{n}");
        // Something to update and delete first: selectors and rules, alternately.
        let op = if n < 8 {
            n % 2 * 6
        } else {
            rng.random_range(0..21)
        };
        match op {
            0..=2 => drop(
                admin
                    .create_selector(selector_dto(under, &name, sort))
                    .await
                    .unwrap(),
            ),
            3 => {
                if let Some(id) = selector {
                    // Also moves the selector (and so its rules) to another plugin.
                    admin
                        .update_selector(&id, selector_dto(under, &name, sort))
                        .await
                        .unwrap();
                }
            }
            4 => drop(
                admin
                    .delete_selectors(&Vec::from_iter(selector))
                    .await
                    .unwrap(),
            ),
            5 => {
                if let Some(id) = selector {
                    admin.enable_selectors(&[id], on).await.unwrap();
                }
            }
            6..=8 => {
                if let Some(id) = selector {
                    admin.create_rule(rule_dto(&id, &name, sort)).await.unwrap();
                }
            }
            9 => {
                if let Some(rule) = rule {
                    let dto = rule_dto(&rule.selector_id, &name, sort);
                    admin.update_rule(&rule.id, dto).await.unwrap();
                }
            }
            10 => drop(
                admin
                    .delete_rules(&Vec::from_iter(rule.map(|r| r.id)))
                    .await
                    .unwrap(),
            ),
            11 => {
                if let Some(rule) = rule {
                    admin.enable_rules(&[rule.id], on).await.unwrap();
                }
            }
            12 => {
                let plugin = plugin.unwrap();
                admin.enable_plugins(&[plugin.id], on).await.unwrap();
            }
            13 => {
                // Reorders the plugins.
                let plugin = plugin.unwrap();
                let dto = PluginDto {
                    name: None,
                    role: plugin.role,
                    sort: Some(rng.random_range(0..300)),
                    enabled: Some(plugin.enabled),
                    config: plugin.config,
                };
                admin.update_plugin(&plugin.id, dto).await.unwrap();
            }
            14 => {
                let custom: Vec<&model::PluginData> = config
                    .plugins
                    .iter()
                    .filter(|p| p.role.as_deref() == Some("Custom"))
                    .collect();
                match pick(rng, &custom) {
                    // With its selectors and rules.
                    Some(p) if on => drop(
                        admin
                            .delete_plugins(std::slice::from_ref(&p.id))
                            .await
                            .unwrap(),
                    ),
                    _ => {
                        let dto = PluginDto {
                            name: Some(format!("p{n}")),
                            role: Some("Custom".to_owned()),
                            sort: Some(rng.random_range(0..300)),
                            enabled: Some(on),
                            config: None,
                        };
                        admin.create_plugin(dto).await.unwrap();
                    }
                }
            }
            15 => {
                let dto = MetaDataDto {
                    id: meta.filter(|_| on),
                    app_name: Some("app".to_owned()),
                    path: Some(name),
                    rpc_type: Some("http".to_owned()),
                    service_name: Some("svc".to_owned()),
                    method_name: Some("m".to_owned()),
                    enabled: Some(true),
                    ..Default::default()
                };
                admin.save_meta(dto).await.unwrap();
            }
            16 => match meta {
                Some(id) if on => admin.enable_meta(&[id], false).await.unwrap(),
                id => drop(admin.delete_meta(&Vec::from_iter(id)).await.unwrap()),
            },
            17 => {
                let dto = AuthApplyDto {
                    app_name: Some("app".to_owned()),
                    app_key: Some(key),
                    path_list: Some(vec![name]),
                    ..Default::default()
                };
                admin.apply_app_auth(dto).await.unwrap();
            }
            18 => {
                if let Some(id) = auth {
                    // A new key: DELETE of the old one, UPDATE of the new.
                    let dto = AppAuthDto {
                        id: Some(id),
                        app_key: Some(key),
                        app_secret: Some("secret".to_owned()),
                        open: Some(on),
                        ..Default::default()
                    };
                    admin.update_app_auth(dto).await.unwrap();
                }
            }
            _ => match auth {
                Some(id) if on => admin.enable_app_auths(&[id], false).await.unwrap(),
                id => drop(admin.delete_app_auths(&Vec::from_iter(id)).await.unwrap()),
            },
        }
    }

    /// A fresh admin on an in-memory database and an empty long-poll cache.
    async fn admin_and_cache() -> (Arc<Admin>, Arc<LongPoll>, mpsc::Receiver<Reload>) {
        let store = crate::store::open(":memory:").await.unwrap();
        let admin = Arc::new(Admin::new(store).await.unwrap());
        let (poll, reloads) = LongPoll::new(Duration::ZERO, None);
        (admin, Arc::new(poll), reloads)
    }

    /// A keeper of `poll` for `admin`, taking `events`, with the cache loaded.
    async fn loaded_keeper(
        poll: &Arc<LongPoll>,
        admin: &Arc<Admin>,
        events: broadcast::Receiver<SharedEvent>,
    ) -> Keeper {
        let mut keeper = Keeper::new(Arc::clone(poll), Arc::downgrade(admin), events);
        keeper.rebuild().await.unwrap().unwrap();
        keeper
    }

    /// [`keep_current`] of `poll` for `admin`, taking `events`, running once the cache loaded.
    async fn keeping(
        poll: &Arc<LongPoll>,
        admin: &Arc<Admin>,
        events: broadcast::Receiver<SharedEvent>,
        reloads: mpsc::Receiver<Reload>,
    ) -> tokio::task::JoinHandle<()> {
        let keeper = Keeper::new(Arc::clone(poll), Arc::downgrade(admin), events);
        let keeping = tokio::spawn(keep_current(keeper, reloads, Duration::from_secs(3600)));
        tokio::time::timeout(Duration::from_secs(10), poll.wait_ready())
            .await
            .expect("the cache loads");
        keeping
    }

    /// Runs `ops` random writes (from `seed`) on a fresh admin while a keeper applies their
    /// events one by one (DELETEs left out when `skip_deletes`, a planted bug); answers how
    /// the kept cache differs from one rebuilt from the database, and the DELETEs skipped.
    async fn kept_after_random_writes(
        seed: u64,
        ops: usize,
        skip_deletes: bool,
    ) -> (Vec<ConfigGroup>, usize) {
        let (admin, poll, _reloads) = admin_and_cache().await;
        let mut keeper = loaded_keeper(&poll, &admin, admin.subscribe()).await;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut skipped = 0;
        for n in 0..ops {
            random_write(&admin, &mut rng, n).await;
            while let Ok(event) = keeper.events.try_recv() {
                if skip_deletes && event.event_type == DataEventType::Delete {
                    skipped += 1;
                    continue;
                }
                assert!(keeper.apply(&event));
            }
        }
        let snapshot = admin.snapshot().await.unwrap();
        assert!(
            !snapshot.config.selectors.is_empty() && !snapshot.config.rules.is_empty(),
            "the writes left no selector or rule to compare: {snapshot:?}"
        );
        (differences(&poll, &rebuilt(&snapshot)), skipped)
    }

    #[tokio::test]
    async fn the_kept_cache_equals_a_rebuild_after_random_writes() {
        for seed in 1..=4 {
            let (differences, _) = kept_after_random_writes(seed, 60, false).await;
            assert_eq!(differences, [], "seed {seed}");
        }
    }

    /// The comparison above can fail: with the DELETE events left out, it reports the
    /// groups they would have changed.
    #[tokio::test]
    async fn a_kept_cache_missing_the_deletes_differs_from_a_rebuild() {
        let (differences, skipped) = kept_after_random_writes(1, 60, true).await;
        assert!(skipped > 0, "the writes deleted nothing");
        assert_ne!(
            differences,
            [],
            "{skipped} DELETEs skipped and nothing differs"
        );
    }

    /// The keeper applies a change with the admin, and so its database, gone: nothing is read
    /// per change.
    #[tokio::test]
    async fn a_change_event_is_applied_without_reading_the_database() {
        let (admin, poll, reloads) = admin_and_cache().await;
        let mut committed = admin.subscribe();
        // The keeper's events come from the test, so they can be sent once the admin is gone.
        let (events, received) = broadcast::channel(16);
        let keeping = keeping(&poll, &admin, received, reloads).await;
        let loaded = poll.entry(ConfigGroup::Selector);

        admin
            .create_selector(selector_dto("5", "/after-load", 1))
            .await
            .unwrap();
        let event = committed.try_recv().unwrap();
        let expected = rebuilt_json(&admin.snapshot().await.unwrap(), ConfigGroup::Selector);
        let gone = Arc::downgrade(&admin);
        drop(admin);
        assert!(gone.upgrade().is_none(), "the admin and its store are gone");

        let mut changes = poll.changes.subscribe();
        events.send(event).unwrap();
        let changed = tokio::time::timeout(Duration::from_secs(10), changes.recv())
            .await
            .expect("the change is applied")
            .unwrap();
        assert_eq!(changed, ConfigGroup::Selector);
        let now = poll.entry(ConfigGroup::Selector);
        assert_eq!(now.json, expected.as_bytes());
        assert_eq!(now.md5, hex::encode(Md5::digest(expected.as_bytes())));
        assert!(now.last_modify_time > loaded.last_modify_time);
        assert!(!keeping.is_finished(), "the keeper never needed the admin");
        drop(events);
        tokio::time::timeout(Duration::from_secs(10), keeping)
            .await
            .expect("the keeper stops once the events end")
            .unwrap();
    }

    /// A burst is applied as one: the events queued behind the first are taken in with it and
    /// the group is serialised (and its listeners woken) once, not once per event (1,000
    /// selector creates took 1.6 s to reach a gateway when each event re-serialised the group).
    #[tokio::test]
    async fn a_burst_of_queued_events_is_installed_once() {
        let (admin, poll, _reloads) = admin_and_cache().await;
        let mut keeper = loaded_keeper(&poll, &admin, admin.subscribe()).await;
        let mut changes = poll.changes.subscribe();
        for i in 0..20 {
            admin
                .create_selector(selector_dto("5", &format!("/burst/{i}"), i))
                .await
                .unwrap();
        }
        let first = keeper.events.recv().await.unwrap();
        assert!(keeper.apply(&first));
        assert!(
            matches!(keeper.events.try_recv(), Err(TryRecvError::Empty)),
            "the queued events were applied with the first"
        );
        assert_eq!(changes.try_recv().unwrap(), ConfigGroup::Selector);
        assert!(
            matches!(changes.try_recv(), Err(TryRecvError::Empty)),
            "one install for the burst"
        );
        let expected = rebuilt_json(&admin.snapshot().await.unwrap(), ConfigGroup::Selector);
        assert_eq!(poll.entry(ConfigGroup::Selector).json, expected.as_bytes());
    }

    /// A lagged receiver rebuilds from the database, so the missed changes are in: applying
    /// just the events still queued would lose the first selector.
    #[tokio::test]
    async fn missed_events_rebuild_the_cache() {
        let (admin, poll, reloads) = admin_and_cache().await;
        let mut committed = admin.subscribe();
        // A queue of one, fed by the test.
        let (events, received) = broadcast::channel(1);
        keeping(&poll, &admin, received, reloads).await;
        let mut changes = poll.changes.subscribe();
        for name in ["/missed", "/queued"] {
            admin
                .create_selector(selector_dto("5", name, 1))
                .await
                .unwrap();
        }
        let expected = rebuilt_json(&admin.snapshot().await.unwrap(), ConfigGroup::Selector);
        // Both sent before the keeper runs again (one thread): the first is lost.
        events.send(committed.try_recv().unwrap()).unwrap();
        events.send(committed.try_recv().unwrap()).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while poll.entry(ConfigGroup::Selector).json != expected.as_bytes() {
            let change = tokio::time::timeout_at(deadline, changes.recv()).await;
            assert!(
                change.is_ok(),
                "the cache never held both selectors: {:?}",
                poll.entry(ConfigGroup::Selector).json
            );
        }
    }

    /// One group of a fetch answer, as the handler used to write it through serde.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct FetchGroup {
        md5: String,
        last_modify_time: i64,
        data: Box<RawValue>,
    }

    /// A wall clock stepped back (or run ahead and corrected back) never stamps a change
    /// before the group's last stamp; with the emulated bug the stamp follows the clock back.
    #[test]
    fn a_clock_gone_back_still_stamps_each_change_later() {
        use std::cell::Cell;
        use std::rc::Rc;
        use std::time::UNIX_EPOCH;

        for compare_times in [false, true] {
            let millis = Rc::new(Cell::new(1_800_000_000_000_u64));
            let clock = Rc::clone(&millis);
            let _world =
                model::world::install(1, move || UNIX_EPOCH + Duration::from_millis(clock.get()));
            let (poll, _) = LongPoll::new(Duration::ZERO, None);
            poll.compare_times.store(compare_times, Ordering::Relaxed);
            let stamp = |json: &str| {
                poll.install([(ConfigGroup::Selector, json.to_owned())]);
                poll.entry(ConfigGroup::Selector).last_modify_time
            };
            let first = stamp("[1]");
            millis.set(millis.get() + 3_600_000);
            let ahead = stamp("[2]");
            assert_eq!(ahead, first + 3_600_000);
            millis.set(millis.get() - 3_600_000 - 60_000);
            let back = stamp("[3]");
            if compare_times {
                assert_eq!(back, first - 60_000, "the bug stamps by the clock as it is");
            } else {
                assert_eq!(back, ahead + 1, "after the last stamp, whatever the clock");
            }
        }
    }

    #[test]
    fn the_fetch_body_is_byte_for_byte_the_serde_answer() {
        let entry = |json: &str, ts| {
            Arc::new(Entry {
                json: Bytes::from(json.to_owned()),
                md5: hex::encode(Md5::digest(json.as_bytes())),
                last_modify_time: ts,
            })
        };
        let entries = BTreeMap::from([
            (
                "SELECTOR",
                entry(r#"[{"id":"1","name":"a\"b"}]"#, 1_718_000_000_456),
            ),
            ("APP_AUTH", entry("[]", 1)),
            (
                "PLUGIN",
                entry(r#"[{"id":"5"},{"id":"6"}]"#, 1_718_000_000_123),
            ),
        ]);
        let expected: BTreeMap<&str, FetchGroup> = entries
            .iter()
            .map(|(name, e)| {
                let data = std::str::from_utf8(&e.json).unwrap().to_owned();
                let group = FetchGroup {
                    md5: e.md5.clone(),
                    last_modify_time: e.last_modify_time,
                    data: RawValue::from_string(data).unwrap(),
                };
                (*name, group)
            })
            .collect();
        let expected = serde_json::to_string(&AdminResult::success("success", expected)).unwrap();
        assert_eq!(String::from_utf8(fetch_body(&entries)).unwrap(), expected);
        let one = BTreeMap::from([("RULE", entry("[]", 7))]);
        assert_eq!(
            String::from_utf8(fetch_body(&one)).unwrap(),
            format!(
                r#"{{"code":200,"message":"success","data":{{"RULE":{{"md5":"{}","lastModifyTime":7,"data":[]}}}}}}"#,
                one["RULE"].md5
            )
        );
    }
}
