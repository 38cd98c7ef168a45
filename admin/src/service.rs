//! [`Admin`]: the write path (validate, store, publish under one lock) and the read path that
//! builds the synced shapes. The same functions build what is published and what is digested.

use std::collections::HashMap;
use std::sync::Arc;

use model::{
    AppAuthData, ConditionDto, ConfigSet, DEFAULT_NAMESPACE_ID, DataEvent, DataEventType,
    DivideRuleHandle, DivideUpstream, EventPayload, MatchMode, MetaData, PluginData, RuleData,
    RuleDto, SelectorData, SelectorDto, SelectorType,
};
use tokio::sync::{Mutex, MutexGuard, broadcast, watch};

use crate::dto::{AppAuthDto, AuthApplyDto, MetaDataDto, PluginDto, PluginHandleDto};
use crate::error::ApiError;
use crate::id::IdGenerator;
use crate::register::{self, MetaDataRegister, UriRegister};
use crate::store::{
    AppAuthRecord, Batch, MetaRecord, PluginRecord, RuleRecord, SelectorRecord, Store, StoreError,
};
use crate::validate;
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
    events: broadcast::Sender<DataEvent>,
    /// Held across every write and its publish, so events leave in commit order. Taken only
    /// through [`Admin::write_lock`].
    write: Mutex<()>,
    /// Counts the times `write` was taken and released: odd while a write is in progress,
    /// even otherwise. Snapshots read without the lock and check it did not move
    /// ([`Admin::snapshot_for`]).
    writes: watch::Sender<u64>,
    ids: IdGenerator,
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

/// A plugin as synced.
pub(crate) fn plugin_data(p: &PluginRecord) -> PluginData {
    PluginData {
        id: p.id.clone(),
        name: p.name.clone(),
        enabled: p.enabled,
        sort: p.sort,
        config: p.config.clone(),
        role: Some(p.role.clone()),
        plugin_jar: None,
        namespace_id: None,
    }
}

/// A selector as synced; `plugin_name` is its plugin's name.
pub(crate) fn selector_data(s: &SelectorRecord, plugin_name: &str) -> SelectorData {
    SelectorData {
        id: s.id.clone(),
        name: s.name.clone(),
        enabled: s.enabled,
        sort: s.sort,
        namespace_id: Some(DEFAULT_NAMESPACE_ID.to_owned()),
        plugin_id: s.plugin_id.clone(),
        plugin_name: plugin_name.to_owned(),
        match_mode: MatchMode::from_code(s.match_mode.into()),
        selector_type: SelectorType::from_code(s.selector_type.into()),
        logged: s.loged,
        continued: s.continued,
        handle: s.handle.clone(),
        condition_list: s.conditions.clone(),
        before_condition_list: Vec::new(),
        match_restful: s.match_restful,
    }
}

/// A rule as synced; `plugin_name` is its selector's plugin's name.
pub(crate) fn rule_data(r: &RuleRecord, plugin_name: &str) -> RuleData {
    RuleData {
        id: r.id.clone(),
        name: r.name.clone(),
        enabled: r.enabled,
        sort: r.sort,
        namespace_id: Some(DEFAULT_NAMESPACE_ID.to_owned()),
        plugin_name: plugin_name.to_owned(),
        selector_id: r.selector_id.clone(),
        match_mode: MatchMode::from_code(r.match_mode.into()),
        loged: r.loged,
        handle: r.handle.clone(),
        condition_data_list: r.conditions.clone(),
        before_condition_data_list: Vec::new(),
        match_restful: r.match_restful,
    }
}

/// Metadata as synced.
pub(crate) fn meta_data(m: &MetaRecord) -> MetaData {
    MetaData {
        id: m.id.clone(),
        app_name: m.app_name.clone(),
        context_path: m.context_path.clone(),
        path: m.path.clone(),
        rpc_type: m.rpc_type.clone(),
        service_name: m.service_name.clone(),
        method_name: m.method_name.clone(),
        parameter_types: m.parameter_types.clone(),
        rpc_ext: m.rpc_ext.clone(),
        enabled: m.enabled,
        namespace_id: Some(DEFAULT_NAMESPACE_ID.to_owned()),
    }
}

/// An app auth entry as synced.
pub(crate) fn app_auth_data(a: &AppAuthRecord) -> AppAuthData {
    AppAuthData {
        app_key: a.app_key.clone(),
        app_secret: a.app_secret.clone(),
        enabled: a.enabled,
        open: a.open,
        param_data_list: a.params.clone(),
        path_data_list: a.paths.clone(),
        namespace_id: Some(DEFAULT_NAMESPACE_ID.to_owned()),
    }
}

/// A stored selector as a request, for updates that change only some fields.
fn selector_dto(s: &SelectorRecord) -> SelectorDto {
    SelectorDto {
        id: Some(s.id.clone()),
        plugin_id: Some(s.plugin_id.clone()),
        name: Some(s.name.clone()),
        selector_type: Some(s.selector_type),
        match_mode: Some(s.match_mode),
        sort: Some(s.sort),
        enabled: Some(s.enabled),
        loged: Some(s.loged),
        continued: Some(s.continued),
        match_restful: Some(s.match_restful),
        handle: s.handle.clone(),
        selector_conditions: Some(
            s.conditions
                .iter()
                .map(|c| {
                    ConditionDto::new(&c.param_type, &c.operator, &c.param_name, &c.param_value)
                })
                .collect(),
        ),
        namespace_id: None,
    }
}

/// The selector a registration creates for `context_path` under `plugin_id` (§9).
fn registered_selector(plugin_id: &str, context_path: &str) -> SelectorDto {
    SelectorDto {
        plugin_id: Some(plugin_id.to_owned()),
        name: Some(context_path.to_owned()),
        selector_type: Some(1),
        match_mode: Some(0),
        sort: Some(1),
        enabled: Some(true),
        loged: Some(true),
        continued: Some(true),
        match_restful: Some(false),
        selector_conditions: Some(vec![ConditionDto::new(
            "uri",
            "startsWith",
            "/",
            &format!("{context_path}/"),
        )]),
        ..Default::default()
    }
}

/// What one `register-metadata` writes: new selectors and rules, each with its plugin's name,
/// and the metadata entry; validated before anything is written.
#[derive(Debug, Default)]
struct Registration {
    selectors: Vec<(SelectorRecord, String)>,
    rules: Vec<(RuleRecord, String)>,
    meta: Option<MetaRecord>,
}

/// The rule a registration creates under `selector_id` (§9).
fn registered_rule(
    selector_id: &str,
    name: &str,
    handle: String,
    condition: ConditionDto,
) -> RuleDto {
    RuleDto {
        selector_id: Some(selector_id.to_owned()),
        name: Some(name.to_owned()),
        match_mode: Some(0),
        sort: Some(1),
        enabled: Some(true),
        loged: Some(true),
        match_restful: Some(false),
        handle: Some(handle),
        rule_conditions: Some(vec![condition]),
        ..Default::default()
    }
}

/// A registered context path: non-blank, starting with `/`, without a trailing `/`.
fn context_path(field: &str, value: Option<&str>) -> Result<String, ApiError> {
    let value = value.map(str::trim).unwrap_or_default();
    let trimmed = value.trim_end_matches('/');
    if trimmed.is_empty() || !trimmed.starts_with('/') {
        return Err(ApiError::field(
            field,
            format!("`{value}` must be a path like `/http`"),
        ));
    }
    Ok(trimmed.to_owned())
}

/// A fresh app secret: 32 upper-case hex digits, as ShenYu makes them.
fn new_secret() -> String {
    hex::encode_upper(rand::random::<[u8; 16]>())
}

/// Turns an all-or-nothing batch outcome into the updated records or a 404 naming the id.
fn all_found<T>(what: &str, batch: Batch<T>) -> Result<Vec<T>, ApiError> {
    batch.map_err(|id| ApiError::NotFound(format!("{what} `{id}` does not exist")))
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
        Ok(Self {
            store,
            events,
            write: Mutex::new(()),
            writes: watch::Sender::new(0),
            ids: IdGenerator::default(),
        })
    }

    /// The store, for reads.
    pub(crate) fn store(&self) -> &Store {
        self.store.as_ref()
    }

    /// A new subscription to every committed change.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<DataEvent> {
        self.events.subscribe()
    }

    fn publish(&self, event_type: DataEventType, payload: EventPayload) {
        let event = DataEvent::new(event_type, payload);
        tracing::debug!(group = %event.group(), kind = %event.event_type, items = event.len(), "publish");
        // No subscriber is not an error: nobody is listening yet.
        let _ = self.events.send(event);
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
        events: &mut broadcast::Receiver<DataEvent>,
    ) -> Result<Snapshot, StoreError> {
        self.consistent_snapshot(|| {
            while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
        })
        .await
    }

    /// Reads a snapshot consistent with the writes (see [`Self::snapshot_for`]); `drain` runs
    /// just before each read.
    async fn consistent_snapshot(&self, mut drain: impl FnMut()) -> Result<Snapshot, StoreError> {
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
                return Ok(snapshot);
            }
            tracing::debug!("a write changed the data during a snapshot read; reading again");
        }
        // Not through `write_lock`: a read leaves the write counter alone.
        let _write = self.write.lock().await;
        drain();
        self.read_snapshot().await
    }

    /// Enables or disables plugins; publishes PLUGIN/UPDATE.
    pub(crate) async fn enable_plugins(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let batch = self.store.set_plugins_enabled(ids, enabled, &now()).await?;
        let updated = all_found("plugin", batch)?;
        self.publish(
            DataEventType::Update,
            EventPayload::Plugin(updated.iter().map(plugin_data).collect()),
        );
        Ok(())
    }

    /// Updates plugin `id` (role, sort, enabled, config); publishes PLUGIN/UPDATE.
    pub(crate) async fn update_plugin(&self, id: &str, dto: PluginDto) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let old = self
            .store
            .plugin(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("plugin `{id}` does not exist")))?;
        let mut record = validate::plugin(dto, &old)?;
        record.date_updated = now();
        if !self.store.update_plugin(&record).await? {
            return Err(ApiError::NotFound(format!("plugin `{id}` does not exist")));
        }
        self.publish(
            DataEventType::Update,
            EventPayload::Plugin(vec![plugin_data(&record)]),
        );
        Ok(())
    }

    /// Creates a plugin (the name must be free); publishes PLUGIN/CREATE.
    pub(crate) async fn create_plugin(&self, dto: PluginDto) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let mut record = validate::new_plugin(dto)?;
        if self
            .store
            .plugins()
            .await?
            .iter()
            .any(|p| p.name == record.name)
        {
            return Err(ApiError::field(
                "name",
                format!("plugin `{}` already exists", record.name),
            ));
        }
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated = record.date_created.clone();
        self.store.insert_plugin(&record).await?;
        self.publish(
            DataEventType::Create,
            EventPayload::Plugin(vec![plugin_data(&record)]),
        );
        Ok(())
    }

    /// Deletes plugins with their selectors, rules and handle definitions, all or none (an
    /// unknown id is a 404 and deletes nothing); publishes SELECTOR, RULE and PLUGIN
    /// DELETE events. Answers how many plugins went.
    pub(crate) async fn delete_plugins(&self, ids: &[String]) -> Result<usize, ApiError> {
        let _write = self.write_lock().await;
        let (plugins, selectors, rules) = self
            .store
            .delete_plugins(ids)
            .await?
            .map_err(|id| ApiError::NotFound(format!("plugin `{id}` does not exist")))?;
        let names = plugins
            .iter()
            .map(|p| (p.id.clone(), p.name.clone()))
            .collect();
        self.publish_deleted_selectors(&selectors, &rules, &names);
        let data = plugins.iter().map(plugin_data).collect();
        self.publish(DataEventType::Delete, EventPayload::Plugin(data));
        Ok(plugins.len())
    }

    /// Creates (`id` None) or replaces plugin handle definition `id`. Handle definitions are
    /// not synced: nothing is published.
    pub(crate) async fn save_plugin_handle(
        &self,
        id: Option<&str>,
        dto: PluginHandleDto,
    ) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let plugin = match dto.plugin_id.as_deref() {
            Some(plugin_id) => self.store.plugin(plugin_id.trim()).await?,
            None => None,
        };
        let mut record = validate::plugin_handle(dto, plugin.as_ref())?;
        let now = now();
        match id {
            Some(id) => {
                let old = self.store.plugin_handle(id).await?.ok_or_else(|| {
                    ApiError::NotFound(format!("plugin handle `{id}` does not exist"))
                })?;
                record.id = old.id;
                record.date_created = old.date_created;
            }
            None => {
                record.id = self.ids.next_id();
                record.date_created = now.clone();
            }
        }
        record.date_updated = now;
        match self.store.put_plugin_handle(&record).await {
            Err(e) if e.is_unique_violation() => Err(ApiError::field(
                "field",
                format!(
                    "plugin `{}` already has a type-{} handle field `{}`",
                    record.plugin_id, record.handle_type, record.field
                ),
            )),
            other => Ok(other?),
        }
    }

    /// Deletes plugin handle definitions, all or none; answers how many went.
    pub(crate) async fn delete_plugin_handles(&self, ids: &[String]) -> Result<usize, ApiError> {
        let _write = self.write_lock().await;
        let deleted = all_found(
            "plugin handle",
            self.store.delete_plugin_handles(ids).await?,
        )?;
        Ok(deleted.len())
    }

    /// Enables or disables selectors (all must exist); publishes SELECTOR/UPDATE.
    pub(crate) async fn enable_selectors(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let names = self.plugin_names().await?;
        let batch = self
            .store
            .set_selectors_enabled(ids, enabled, &now())
            .await?;
        let updated = all_found("selector", batch)?;
        let data = updated
            .iter()
            .map(|s| selector_data(s, names.get(&s.plugin_id).map_or("", String::as_str)))
            .collect();
        self.publish(DataEventType::Update, EventPayload::Selector(data));
        Ok(())
    }

    /// The plugin name of every selector, by selector id.
    async fn selector_plugins(&self) -> Result<HashMap<String, String>, StoreError> {
        let names = self.plugin_names().await?;
        Ok(self
            .store
            .selectors()
            .await?
            .into_iter()
            .map(|s| {
                let name = names.get(&s.plugin_id).cloned().unwrap_or_default();
                (s.id, name)
            })
            .collect())
    }

    /// Enables or disables rules (all must exist); publishes RULE/UPDATE.
    pub(crate) async fn enable_rules(&self, ids: &[String], enabled: bool) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let selector_plugin = self.selector_plugins().await?;
        let batch = self.store.set_rules_enabled(ids, enabled, &now()).await?;
        let updated = all_found("rule", batch)?;
        let data = updated
            .iter()
            .map(|r| {
                let plugin = selector_plugin.get(&r.selector_id);
                rule_data(r, plugin.map_or("", String::as_str))
            })
            .collect();
        self.publish(DataEventType::Update, EventPayload::Rule(data));
        Ok(())
    }

    /// Creates metadata (no or blank `id`) or replaces it; publishes META_DATA/UPDATE. Paths
    /// are unique. Returns the id.
    pub(crate) async fn save_meta(&self, dto: MetaDataDto) -> Result<String, ApiError> {
        let _write = self.write_lock().await;
        let mut record = validate::meta(dto)?;
        let all = self.store.meta_data().await?;
        if let Some(clash) = all
            .iter()
            .find(|m| m.path == record.path && m.id != record.id)
        {
            return Err(ApiError::field(
                "path",
                format!(
                    "`{}` is already used by metadata `{}`",
                    record.path, clash.id
                ),
            ));
        }
        let stamp = now();
        if record.id.is_empty() {
            record.id = self.ids.next_id();
            record.date_created.clone_from(&stamp);
        } else {
            let old = all.iter().find(|m| m.id == record.id).ok_or_else(|| {
                ApiError::NotFound(format!("metadata `{}` does not exist", record.id))
            })?;
            record.date_created.clone_from(&old.date_created);
        }
        record.date_updated = stamp;
        self.store.put_meta(&record).await?;
        self.publish(
            DataEventType::Update,
            EventPayload::MetaData(vec![meta_data(&record)]),
        );
        Ok(record.id)
    }

    /// Deletes metadata; publishes META_DATA/DELETE. Returns the number deleted.
    pub(crate) async fn delete_meta(&self, ids: &[String]) -> Result<usize, ApiError> {
        let _write = self.write_lock().await;
        let deleted = self.store.delete_meta(ids).await?;
        if !deleted.is_empty() {
            self.publish(
                DataEventType::Delete,
                EventPayload::MetaData(deleted.iter().map(meta_data).collect()),
            );
        }
        Ok(deleted.len())
    }

    /// Enables or disables metadata (all must exist); publishes META_DATA/UPDATE.
    pub(crate) async fn enable_meta(&self, ids: &[String], enabled: bool) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let batch = self.store.set_meta_enabled(ids, enabled, &now()).await?;
        let updated = all_found("metadata", batch)?;
        self.publish(
            DataEventType::Update,
            EventPayload::MetaData(updated.iter().map(meta_data).collect()),
        );
        Ok(())
    }

    async fn check_app_key_free(&self, record: &AppAuthRecord) -> Result<(), ApiError> {
        let all = self.store.app_auths().await?;
        match all
            .iter()
            .find(|a| a.app_key == record.app_key && a.id != record.id)
        {
            Some(_) => Err(ApiError::field(
                "appKey",
                format!("`{}` is already in use", record.app_key),
            )),
            None => Ok(()),
        }
    }

    /// Creates an app auth entry with a fresh secret (and key, unless given); publishes
    /// APP_AUTH/UPDATE.
    pub(crate) async fn apply_app_auth(
        &self,
        dto: AuthApplyDto,
    ) -> Result<AppAuthRecord, ApiError> {
        let _write = self.write_lock().await;
        let mut record = validate::apply(dto)?;
        record.id = self.ids.next_id();
        if record.app_key.is_empty() {
            record.app_key = new_secret();
        }
        self.check_app_key_free(&record).await?;
        record.app_secret = new_secret();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        self.store.put_app_auth(&record).await?;
        self.publish(
            DataEventType::Update,
            EventPayload::AppAuth(vec![app_auth_data(&record)]),
        );
        Ok(record)
    }

    /// Replaces app auth entry `dto.id`; publishes APP_AUTH/UPDATE (and APP_AUTH/DELETE of
    /// the old key when the key changed).
    pub(crate) async fn update_app_auth(&self, dto: AppAuthDto) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let id = dto
            .id
            .clone()
            .filter(|id| !id.trim().is_empty())
            .ok_or_else(|| ApiError::field("id", "must not be blank"))?;
        let old = self
            .store
            .app_auth(id.trim())
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("app auth `{id}` does not exist")))?;
        let mut record = validate::app_auth(dto, &old)?;
        self.check_app_key_free(&record).await?;
        record.date_updated = now();
        self.store.put_app_auth(&record).await?;
        if old.app_key != record.app_key {
            self.publish(
                DataEventType::Delete,
                EventPayload::AppAuth(vec![app_auth_data(&old)]),
            );
        }
        self.publish(
            DataEventType::Update,
            EventPayload::AppAuth(vec![app_auth_data(&record)]),
        );
        Ok(())
    }

    /// Deletes app auth entries; publishes APP_AUTH/DELETE. Returns the number deleted.
    pub(crate) async fn delete_app_auths(&self, ids: &[String]) -> Result<usize, ApiError> {
        let _write = self.write_lock().await;
        let deleted = self.store.delete_app_auths(ids).await?;
        if !deleted.is_empty() {
            self.publish(
                DataEventType::Delete,
                EventPayload::AppAuth(deleted.iter().map(app_auth_data).collect()),
            );
        }
        Ok(deleted.len())
    }

    /// Enables or disables app auth entries (all must exist); publishes APP_AUTH/UPDATE.
    pub(crate) async fn enable_app_auths(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let batch = self
            .store
            .set_app_auths_enabled(ids, enabled, &now())
            .await?;
        let updated = all_found("app auth", batch)?;
        self.publish(
            DataEventType::Update,
            EventPayload::AppAuth(updated.iter().map(app_auth_data).collect()),
        );
        Ok(())
    }

    async fn plugin_for(&self, dto: &SelectorDto) -> Result<Option<PluginRecord>, StoreError> {
        match dto.plugin_id.as_deref() {
            Some(id) => self.store.plugin(id.trim()).await,
            None => Ok(None),
        }
    }

    /// Creates a selector; publishes SELECTOR/UPDATE. Returns the new id.
    pub(crate) async fn create_selector(&self, dto: SelectorDto) -> Result<String, ApiError> {
        let _write = self.write_lock().await;
        Ok(self.create_selector_locked(dto).await?.id)
    }

    /// [`Self::create_selector`] for a caller holding the write lock.
    async fn create_selector_locked(&self, dto: SelectorDto) -> Result<SelectorRecord, ApiError> {
        let plugin = self.plugin_for(&dto).await?;
        let mut record = validate::selector(dto, plugin.as_ref())?;
        let plugin = plugin.expect("validation checked the plugin");
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        self.store.put_selector(&record).await?;
        let data = selector_data(&record, &plugin.name);
        self.publish(DataEventType::Update, EventPayload::Selector(vec![data]));
        Ok(record)
    }

    /// Replaces selector `id`; publishes SELECTOR/UPDATE with the old conditions as
    /// `beforeConditionList`.
    pub(crate) async fn update_selector(&self, id: &str, dto: SelectorDto) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        self.update_selector_locked(id, dto).await
    }

    /// [`Self::update_selector`] for a caller holding the write lock.
    async fn update_selector_locked(&self, id: &str, dto: SelectorDto) -> Result<(), ApiError> {
        let old = self
            .store
            .selector(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("selector `{id}` does not exist")))?;
        let plugin = self.plugin_for(&dto).await?;
        let mut record = validate::selector(dto, plugin.as_ref())?;
        let plugin = plugin.expect("validation checked the plugin");
        record.id = old.id;
        record.date_created = old.date_created;
        record.date_updated = now();
        self.store.put_selector(&record).await?;
        let mut data = selector_data(&record, &plugin.name);
        data.before_condition_list = old.conditions;
        self.publish(DataEventType::Update, EventPayload::Selector(vec![data]));
        Ok(())
    }

    /// Deletes selectors with their rules; publishes SELECTOR/DELETE, then RULE/DELETE when
    /// rules went too. Returns the number of selectors deleted.
    pub(crate) async fn delete_selectors(&self, ids: &[String]) -> Result<usize, ApiError> {
        let _write = self.write_lock().await;
        let names = self.plugin_names().await?;
        let (selectors, rules) = self.store.delete_selectors(ids).await?;
        self.publish_deleted_selectors(&selectors, &rules, &names);
        Ok(selectors.len())
    }

    /// Publishes SELECTOR/DELETE and RULE/DELETE (each when non-empty) for selectors deleted
    /// with their rules; `plugin_names` maps plugin ids to names.
    fn publish_deleted_selectors(
        &self,
        selectors: &[SelectorRecord],
        rules: &[RuleRecord],
        plugin_names: &HashMap<String, String>,
    ) {
        let plugin_of =
            |s: &SelectorRecord| plugin_names.get(&s.plugin_id).map_or("", String::as_str);
        let selector_plugin: HashMap<&str, &str> = selectors
            .iter()
            .map(|s| (s.id.as_str(), plugin_of(s)))
            .collect();
        if !selectors.is_empty() {
            let data = selectors
                .iter()
                .map(|s| selector_data(s, plugin_of(s)))
                .collect();
            self.publish(DataEventType::Delete, EventPayload::Selector(data));
        }
        if !rules.is_empty() {
            let data = rules
                .iter()
                .map(|r| {
                    let plugin = selector_plugin.get(r.selector_id.as_str()).copied();
                    rule_data(r, plugin.unwrap_or(""))
                })
                .collect();
            self.publish(DataEventType::Delete, EventPayload::Rule(data));
        }
    }

    async fn validated_rule(&self, dto: RuleDto) -> Result<(RuleRecord, String), ApiError> {
        let selector = match dto.selector_id.as_deref() {
            Some(id) => self.store.selector(id.trim()).await?,
            None => None,
        };
        let plugin_name = match &selector {
            Some(s) => self
                .store
                .plugin(&s.plugin_id)
                .await?
                .map(|p| p.name)
                .unwrap_or_default(),
            None => String::new(),
        };
        let record = validate::rule(dto, selector.as_ref(), &plugin_name)?;
        Ok((record, plugin_name))
    }

    /// Creates a rule; publishes RULE/UPDATE.
    pub(crate) async fn create_rule(&self, dto: RuleDto) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        self.create_rule_locked(dto).await
    }

    /// [`Self::create_rule`] for a caller holding the write lock.
    async fn create_rule_locked(&self, dto: RuleDto) -> Result<(), ApiError> {
        let (mut record, plugin_name) = self.validated_rule(dto).await?;
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        self.store.put_rule(&record).await?;
        self.publish(
            DataEventType::Update,
            EventPayload::Rule(vec![rule_data(&record, &plugin_name)]),
        );
        Ok(())
    }

    /// Replaces rule `id`; publishes RULE/UPDATE with the old conditions as
    /// `beforeConditionDataList`.
    pub(crate) async fn update_rule(&self, id: &str, dto: RuleDto) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let old = self
            .store
            .rule(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("rule `{id}` does not exist")))?;
        let (mut record, plugin_name) = self.validated_rule(dto).await?;
        record.id = old.id;
        record.date_created = old.date_created;
        record.date_updated = now();
        self.store.put_rule(&record).await?;
        let mut data = rule_data(&record, &plugin_name);
        data.before_condition_data_list = old.conditions;
        self.publish(DataEventType::Update, EventPayload::Rule(vec![data]));
        Ok(())
    }

    /// Deletes rules; publishes RULE/DELETE. Returns the number deleted.
    pub(crate) async fn delete_rules(&self, ids: &[String]) -> Result<usize, ApiError> {
        let _write = self.write_lock().await;
        let selector_plugin = self.selector_plugins().await?;
        let rules = self.store.delete_rules(ids).await?;
        if !rules.is_empty() {
            let data = rules
                .iter()
                .map(|r| {
                    rule_data(
                        r,
                        selector_plugin
                            .get(&r.selector_id)
                            .map_or("", String::as_str),
                    )
                })
                .collect();
            self.publish(DataEventType::Delete, EventPayload::Rule(data));
        }
        Ok(rules.len())
    }

    async fn plugin_named(&self, name: &str) -> Result<Option<PluginRecord>, StoreError> {
        Ok(self
            .store
            .plugins()
            .await?
            .into_iter()
            .find(|p| p.name == name))
    }

    async fn selector_named(
        &self,
        plugin: &PluginRecord,
        name: &str,
    ) -> Result<Option<SelectorRecord>, StoreError> {
        Ok(self
            .store
            .selectors()
            .await?
            .into_iter()
            .find(|s| s.plugin_id == plugin.id && s.name == name))
    }

    /// The selector of `plugin` named `context_path`, created as §9 says when absent.
    async fn registered_selector_locked(
        &self,
        plugin: &PluginRecord,
        context_path: &str,
    ) -> Result<SelectorRecord, ApiError> {
        match self.selector_named(plugin, context_path).await? {
            Some(selector) => Ok(selector),
            None => {
                self.create_selector_locked(registered_selector(&plugin.id, context_path))
                    .await
            }
        }
    }

    /// `register-metadata` (§9): the divide selector and rule for the API, the contextPath
    /// plugin's selector and rule, and the metadata when `registerMetaData` is set. Everything
    /// is validated first and written in one transaction; the changes are published after it
    /// commits, so a refused registration leaves nothing behind.
    pub(crate) async fn register_metadata(&self, dto: MetaDataRegister) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        let rpc_type = dto.rpc_type.clone().unwrap_or_else(|| "http".to_owned());
        if rpc_type.trim() != "http" {
            return Err(ApiError::field(
                "rpcType",
                format!("only `http` clients can register (got `{rpc_type}`)"),
            ));
        }
        let context = context_path("contextPath", dto.context_path.as_deref())?;
        let path = dto
            .path
            .clone()
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| ApiError::field("path", "must not be blank"))?;
        let path = path.trim().to_owned();
        let rule_name = dto
            .rule_name
            .clone()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| path.clone());
        let mut plan = Registration::default();
        if dto.register_meta_data == Some(true) {
            plan.meta = Some(
                self.registered_meta(&dto, &context, &path, &rpc_type, &rule_name)
                    .await?,
            );
        }
        let divide = self
            .plugin_named("divide")
            .await?
            .ok_or_else(|| ApiError::BadRequest("the divide plugin does not exist".to_owned()))?;
        let (operator, value) = register::rule_condition(&path);
        let selector = self.plan_selector(&divide, &context, &mut plan).await?;
        let divide_handle =
            serde_json::to_string(&DivideRuleHandle::default()).expect("handles serialise");
        let rule = registered_rule(
            &selector.id,
            &rule_name,
            divide_handle,
            ConditionDto::new("uri", operator, "/", &value),
        );
        self.plan_rule(&selector, &divide.name, rule, &mut plan)
            .await?;
        if let Some(plugin) = self.plugin_named("contextPath").await? {
            let selector = self.plan_selector(&plugin, &context, &mut plan).await?;
            let handle = serde_json::json!({
                "contextPath": context,
                "addPrefixed": dto.add_prefixed.unwrap_or(false),
            })
            .to_string();
            let rule = registered_rule(
                &selector.id,
                &context,
                handle,
                ConditionDto::new("uri", "startsWith", "/", &format!("{context}/")),
            );
            self.plan_rule(&selector, &plugin.name, rule, &mut plan)
                .await?;
        }
        let Registration {
            selectors,
            rules,
            meta,
        } = plan;
        let selector_records: Vec<SelectorRecord> =
            selectors.iter().map(|(r, _)| r.clone()).collect();
        let rule_records: Vec<RuleRecord> = rules.iter().map(|(r, _)| r.clone()).collect();
        self.store
            .put_registration(&selector_records, &rule_records, meta.as_ref())
            .await?;
        if !selectors.is_empty() {
            let data = selectors
                .iter()
                .map(|(r, plugin)| selector_data(r, plugin))
                .collect();
            self.publish(DataEventType::Update, EventPayload::Selector(data));
        }
        if !rules.is_empty() {
            let data = rules
                .iter()
                .map(|(r, plugin)| rule_data(r, plugin))
                .collect();
            self.publish(DataEventType::Update, EventPayload::Rule(data));
        }
        if let Some(record) = &meta {
            self.publish(
                DataEventType::Update,
                EventPayload::MetaData(vec![meta_data(record)]),
            );
        }
        Ok(())
    }

    /// The metadata record a registration writes (validated; the existing entry for the
    /// path keeps its id and creation date).
    async fn registered_meta(
        &self,
        dto: &MetaDataRegister,
        context: &str,
        path: &str,
        rpc_type: &str,
        rule_name: &str,
    ) -> Result<MetaRecord, ApiError> {
        let mut record = validate::meta(MetaDataDto {
            id: None,
            app_name: dto.app_name.clone(),
            context_path: Some(context.to_owned()),
            path: Some(path.to_owned()),
            path_desc: dto.path_desc.clone(),
            rpc_type: Some(rpc_type.to_owned()),
            service_name: dto.service_name.clone(),
            method_name: dto.method_name.clone(),
            parameter_types: dto.parameter_types.clone(),
            rpc_ext: dto.rpc_ext.clone(),
            rule_name: Some(rule_name.to_owned()),
            enabled: Some(dto.enabled.unwrap_or(true)),
        })?;
        let existing = self
            .store
            .meta_data()
            .await?
            .into_iter()
            .find(|m| m.path == record.path);
        let stamp = now();
        match existing {
            Some(old) => {
                record.id = old.id;
                record.date_created = old.date_created;
            }
            None => {
                record.id = self.ids.next_id();
                record.date_created.clone_from(&stamp);
            }
        }
        record.date_updated = stamp;
        Ok(record)
    }

    /// The selector named `context_path` of `plugin`: the stored one, or a new one (validated,
    /// added to `plan`, not written).
    async fn plan_selector(
        &self,
        plugin: &PluginRecord,
        context_path: &str,
        plan: &mut Registration,
    ) -> Result<SelectorRecord, ApiError> {
        if let Some(selector) = self.selector_named(plugin, context_path).await? {
            return Ok(selector);
        }
        let mut record =
            validate::selector(registered_selector(&plugin.id, context_path), Some(plugin))?;
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        plan.selectors.push((record.clone(), plugin.name.clone()));
        Ok(record)
    }

    /// Adds rule `dto` of `selector` to `plan` (validated, not written) unless the selector
    /// already has a rule with that name.
    async fn plan_rule(
        &self,
        selector: &SelectorRecord,
        plugin_name: &str,
        dto: RuleDto,
        plan: &mut Registration,
    ) -> Result<(), ApiError> {
        let name = dto.name.clone().unwrap_or_default();
        let exists = self
            .store
            .rules()
            .await?
            .iter()
            .any(|r| r.selector_id == selector.id && r.name == name);
        if exists {
            return Ok(());
        }
        let mut record = validate::rule(dto, Some(selector), plugin_name)?;
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        plan.rules.push((record, plugin_name.to_owned()));
        Ok(())
    }

    /// `register-uri` / `offline` (§9): adds (`add`) or removes the client's `host:port` in
    /// the upstream list of the divide selector named by its context path (or app name),
    /// creating the selector on a first registration. Publishes SELECTOR/UPDATE on a change.
    pub(crate) async fn register_uri(&self, dto: UriRegister, add: bool) -> Result<(), ApiError> {
        let _write = self.write_lock().await;
        if let Some(rpc_type) = dto.rpc_type.as_deref().map(str::trim)
            && !rpc_type.is_empty()
            && rpc_type != "http"
        {
            return Err(ApiError::field(
                "rpcType",
                format!("only `http` clients can register (got `{rpc_type}`)"),
            ));
        }
        let name = match (&dto.context_path, &dto.app_name) {
            (Some(context), _) if !context.trim().is_empty() => {
                context_path("contextPath", Some(context))?
            }
            (_, Some(app)) if !app.trim().is_empty() => {
                context_path("appName", Some(&format!("/{}", app.trim())))?
            }
            _ => return Err(ApiError::field("contextPath", "must not be blank")),
        };
        let host = dto
            .host
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .ok_or_else(|| ApiError::field("host", "must not be blank"))?;
        let port = dto
            .port
            .filter(|p| *p != 0)
            .ok_or_else(|| ApiError::field("port", "must be a port number"))?;
        let url = format!("{host}:{port}");
        let divide = self
            .plugin_named("divide")
            .await?
            .ok_or_else(|| ApiError::BadRequest("the divide plugin does not exist".to_owned()))?;
        let selector = match self.selector_named(&divide, &name).await? {
            Some(selector) => selector,
            None if add => self.registered_selector_locked(&divide, &name).await?,
            None => return Ok(()),
        };
        let mut upstreams = DivideUpstream::parse_list(selector.handle.as_deref().unwrap_or(""))
            .map_err(|e| ApiError::field("handle", format!("stored upstream list: {e}")))?;
        let before = upstreams.clone();
        upstreams.retain(|u| u.upstream_url != url);
        if add {
            upstreams.push(DivideUpstream {
                protocol: dto.protocol.clone().unwrap_or_else(|| "http://".to_owned()),
                upstream_host: Some("localhost".to_owned()),
                upstream_url: url,
                weight: 50,
                warmup: 600_000,
                status: true,
                timestamp: chrono::Utc::now().timestamp_millis(),
                ..DivideUpstream::default()
            });
        }
        let same = |a: &[DivideUpstream], b: &[DivideUpstream]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.upstream_url == y.upstream_url && x.protocol == y.protocol)
        };
        if same(&before, &upstreams) {
            return Ok(());
        }
        let mut request = selector_dto(&selector);
        request.handle = Some(serde_json::to_string(&upstreams).expect("upstreams serialise"));
        self.update_selector_locked(&selector.id, request).await
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Waker};
    use std::time::Duration;

    use super::*;

    fn selector(name: &str) -> SelectorDto {
        SelectorDto {
            plugin_id: Some("5".to_owned()),
            name: Some(name.to_owned()),
            selector_type: Some(0),
            sort: Some(1),
            ..Default::default()
        }
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
        let EventPayload::Selector(data) = event.payload else {
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
