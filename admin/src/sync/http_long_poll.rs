//! HTTP long-polling sync (ShenYu `ConfigController`, protocol §4): `GET /configs/fetch`
//! serves whole groups with their md5 and `lastModifyTime`; `POST /configs/listener` answers
//! the groups whose md5 differs from the client's, holding the request until one changes.
//!
//! The admin keeps one cache entry per group: the exact JSON text of the group's list (served
//! as is by `fetch`), its md5 and the time it last changed. The cache is rebuilt from a
//! committed snapshot after every change event (which includes other admins' commits on the
//! same database, once noticed: `service::peers`), every `refresh` interval, and when a client
//! shows a newer timestamp than this admin has (§4.5: the change comes from another admin and
//! was not noticed yet); a rebuild that changes a group answers the held listeners at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use model::lock::MutexExt;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use md5::{Digest, Md5};
use model::{AdminResult, ConfigGroup, DataEvent, SyncFaultKind, SyncMode};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, watch};

use super::fault::{self, SyncFaults};
use super::{Publisher, closed};
use crate::AppState;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::service::{Admin, Snapshot};
use crate::store::StoreError;

/// How many group changes a held listener may miss before it just re-compares everything.
const CHANGE_CAPACITY: usize = 64;

/// One group as cached: the JSON served, its md5 and when it last changed.
#[derive(Debug)]
struct Entry {
    json: String,
    md5: String,
    last_modify_time: i64,
}

/// The long-polling state shared by the two endpoints and the refresh task.
#[derive(Debug)]
pub(crate) struct LongPoll {
    cache: Mutex<HashMap<ConfigGroup, Arc<Entry>>>,
    /// Every group whose md5 changed, as it changes.
    changes: broadcast::Sender<ConfigGroup>,
    /// Serialises cache rebuilds, so a rebuild from an older snapshot never lands after a
    /// newer one, and many stale clients cause one database read, not many.
    rebuild: tokio::sync::Mutex<()>,
    /// Becomes true once the cache holds every group.
    ready: watch::Sender<bool>,
    hold: Duration,
    /// The test-only protocol fault hook, when on.
    faults: Option<Arc<SyncFaults>>,
}

/// Serves `/configs/fetch` and `/configs/listener`.
#[derive(Debug)]
pub(crate) struct HttpLongPollPublisher {
    poll: Arc<LongPoll>,
}

fn millis_now() -> i64 {
    i64::try_from(model::world::since_epoch().as_millis()).unwrap_or(i64::MAX)
}

/// The JSON text of each group's list in `snapshot`; groups gantry does not model are `[]`.
fn group_json(snapshot: &Snapshot, group: ConfigGroup) -> String {
    let config = &snapshot.config;
    let json = match group {
        ConfigGroup::Plugin => serde_json::to_string(&config.plugins),
        ConfigGroup::Selector => serde_json::to_string(&config.selectors),
        ConfigGroup::Rule => serde_json::to_string(&config.rules),
        ConfigGroup::MetaData => serde_json::to_string(&config.meta_data),
        ConfigGroup::AppAuth => serde_json::to_string(&snapshot.app_auth),
        ConfigGroup::ProxySelector | ConfigGroup::AiProxyApiKey | ConfigGroup::DiscoverUpstream => {
            Ok("[]".to_owned())
        }
    };
    json.expect("model types always serialise")
}

impl HttpLongPollPublisher {
    /// Starts serving `admin`'s committed data: listeners are held up to `hold`, and the cache
    /// is loaded now (in the background), then rebuilt after every change and at least every
    /// `refresh`, until the admin is dropped; with the test-only protocol `faults` hook when
    /// given.
    pub(crate) fn start(
        admin: &Arc<Admin>,
        hold: Duration,
        refresh: Duration,
        faults: Option<Arc<SyncFaults>>,
    ) -> Self {
        let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
        let (ready, _) = watch::channel(false);
        let poll = Arc::new(LongPoll {
            cache: Mutex::new(HashMap::new()),
            changes,
            rebuild: tokio::sync::Mutex::new(()),
            ready,
            hold,
            faults,
        });
        // Subscribed now, so no change committed from here on can be missed.
        let events = admin.subscribe();
        tokio::spawn(keep_current(
            Arc::clone(&poll),
            Arc::downgrade(admin),
            events,
            refresh,
        ));
        Self { poll }
    }
}

/// Loads the cache, then rebuilds it after every change event and every `refresh` (and
/// retries a failed load then), until the admin is gone.
async fn keep_current(
    poll: Arc<LongPoll>,
    admin: Weak<Admin>,
    mut events: broadcast::Receiver<DataEvent>,
    refresh: Duration,
) {
    if let Some(admin) = admin.upgrade()
        && let Err(e) = poll.rebuild_after_events(&admin, &mut events).await
    {
        tracing::error!(error = %e, "cannot load the long-polling cache");
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + refresh, refresh);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                // A lagged receiver just rebuilds everything, which is what it does anyway.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => {}
        }
        let Some(admin) = admin.upgrade() else { return };
        if let Err(e) = poll.rebuild_after_events(&admin, &mut events).await {
            tracing::error!(error = %e, "cannot refresh the long-polling cache");
        }
    }
}

impl LongPoll {
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

    /// Replaces the entries whose md5 changed, then tells the waiting clients.
    fn install(&self, snapshot: &Snapshot) {
        let mut changed = Vec::new();
        {
            let mut cache = self.cache.locked();
            for &group in ConfigGroup::ALL {
                let json = group_json(snapshot, group);
                let md5 = hex::encode(Md5::digest(json.as_bytes()));
                let previous = cache.get(&group);
                if previous.is_some_and(|p| p.md5 == md5) {
                    continue;
                }
                let last_modify_time =
                    previous.map_or(millis_now(), |p| millis_now().max(p.last_modify_time + 1));
                if previous.is_some() {
                    changed.push(group);
                }
                let entry = Entry {
                    json,
                    md5,
                    last_modify_time,
                };
                cache.insert(group, Arc::new(entry));
            }
        }
        self.ready.send_replace(true);
        for group in changed {
            tracing::debug!(%group, "long-poll group changed");
            // No waiting client is not an error.
            let _ = self.changes.send(group);
        }
    }

    /// Rebuilds from a snapshot that includes every event queued in `events` (which are
    /// dropped).
    async fn rebuild_after_events(
        &self,
        admin: &Admin,
        events: &mut broadcast::Receiver<DataEvent>,
    ) -> Result<(), StoreError> {
        let _rebuild = self.rebuild.lock().await;
        let snapshot = admin.snapshot_for(events).await?;
        self.install(&snapshot);
        Ok(())
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
        if client_md5 == seen.md5 {
            return Ok(false);
        }
        if seen.last_modify_time >= client_ts {
            return Ok(true);
        }
        // The client saw a newer version than this admin has: another admin changed the
        // database. Reload, unless someone else already did while we waited for the lock.
        let _rebuild = self.rebuild.lock().await;
        let current = self.entry(group);
        if Arc::ptr_eq(&current, &seen) {
            tracing::info!(%group, "a client is ahead of this admin; reloading from the database");
            // The other publishers pass the change on too.
            admin.reconcile().await?;
            self.install(&admin.snapshot().await?);
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
    }
}

/// Query and form parameters as `(name, value)` pairs.
fn pairs(text: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_bytes(text)
        .map_err(|e| ApiError::BadRequest(format!("malformed parameters: {e}")))
}

/// One group of a fetch answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FetchGroup {
    md5: String,
    last_modify_time: i64,
    data: Box<RawValue>,
}

/// `GET /configs/fetch?groupKeys=PLUGIN&groupKeys=SELECTOR` (comma-separated lists work too).
async fn fetch(
    _: Authorized,
    Extension(poll): Extension<Arc<LongPoll>>,
    RawQuery(query): RawQuery,
) -> Result<Json<AdminResult<BTreeMap<&'static str, FetchGroup>>>, ApiError> {
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
    let mut data = BTreeMap::new();
    for group in groups {
        let entry = poll.entry(group);
        let json =
            RawValue::from_string(entry.json.clone()).expect("the cache holds serialised JSON");
        data.insert(
            group.as_str(),
            FetchGroup {
                md5: entry.md5.clone(),
                last_modify_time: entry.last_modify_time,
                data: json,
            },
        );
    }
    Ok(Json(AdminResult::success("success", data)))
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
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
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
            return Ok(listener_response(&poll.stale_groups(admin, &wanted).await?));
        };
        // A change the client already has (it came from another admin and this one just
        // reloaded it) is no news to it; any other change of a group is.
        let current = poll.entry(group);
        let has_it = wanted
            .iter()
            .any(|(g, md5, _)| *g == group && *md5 == current.md5);
        if !has_it {
            return Ok(poll.answer(&[group]).await);
        }
    }
}
