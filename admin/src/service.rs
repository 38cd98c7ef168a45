//! [`Admin`]: the write path (validate, store, publish under one lock) and the read path that
//! builds the synced shapes. The same functions build what is published and what is digested.

use std::collections::HashMap;
use std::sync::Arc;

use model::{
    AppAuthData, ConfigSet, DEFAULT_NAMESPACE_ID, DataEvent, DataEventType, EventPayload,
    MatchMode, PluginData, RuleData, RuleDto, SelectorData, SelectorDto, SelectorType,
};
use tokio::sync::{Mutex, broadcast};

use crate::error::ApiError;
use crate::id::IdGenerator;
use crate::store::{PluginRecord, RuleRecord, SelectorRecord, Store, StoreError};
use crate::validate;

/// How many events a slow session may fall behind before it is closed.
const DISPATCH_CAPACITY: usize = 1024;

/// The admin's core: storage plus the change dispatcher.
#[derive(Debug)]
pub(crate) struct Admin {
    store: Arc<dyn Store>,
    events: broadcast::Sender<DataEvent>,
    /// Held across every write and its publish, so events leave in commit order.
    write: Mutex<()>,
    ids: IdGenerator,
}

/// The current time as ShenYu shows it.
fn now() -> String {
    chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string()
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

/// Everything committed, in synced shapes.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) config: ConfigSet,
    pub(crate) app_auth: Vec<AppAuthData>,
}

impl Admin {
    /// An admin over `store`, seeding the built-in plugins that are absent.
    pub(crate) async fn new(store: Arc<dyn Store>) -> Result<Self, StoreError> {
        store.seed_plugins(model::BUILTIN_PLUGINS, &now()).await?;
        let (events, _) = broadcast::channel(DISPATCH_CAPACITY);
        Ok(Self {
            store,
            events,
            write: Mutex::new(()),
            ids: IdGenerator::default(),
        })
    }

    /// The store, for reads.
    pub(crate) fn store(&self) -> &dyn Store {
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
            meta_data: self.store.meta_data().await?,
        };
        Ok(Snapshot {
            config,
            app_auth: self.store.app_auth().await?,
        })
    }

    /// A consistent snapshot of everything committed.
    pub(crate) async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let _write = self.write.lock().await;
        self.read_snapshot().await
    }

    /// A snapshot for a sync session subscribed with `events`: the events already queued are
    /// dropped because the snapshot contains them, so the queue then holds exactly the
    /// changes committed after the snapshot.
    pub(crate) async fn snapshot_for(
        &self,
        events: &mut broadcast::Receiver<DataEvent>,
    ) -> Result<Snapshot, StoreError> {
        let _write = self.write.lock().await;
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
        self.read_snapshot().await
    }

    /// Enables or disables plugins; publishes PLUGIN/UPDATE.
    pub(crate) async fn enable_plugins(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ApiError> {
        let _write = self.write.lock().await;
        match self.store.set_plugins_enabled(ids, enabled, &now()).await? {
            Ok(updated) => {
                self.publish(
                    DataEventType::Update,
                    EventPayload::Plugin(updated.iter().map(plugin_data).collect()),
                );
                Ok(())
            }
            Err(id) => Err(ApiError::NotFound(format!("plugin `{id}` does not exist"))),
        }
    }

    async fn plugin_for(&self, dto: &SelectorDto) -> Result<Option<PluginRecord>, StoreError> {
        match dto.plugin_id.as_deref() {
            Some(id) => self.store.plugin(id.trim()).await,
            None => Ok(None),
        }
    }

    /// Creates a selector; publishes SELECTOR/UPDATE. Returns the new id.
    pub(crate) async fn create_selector(&self, dto: SelectorDto) -> Result<String, ApiError> {
        let _write = self.write.lock().await;
        let plugin = self.plugin_for(&dto).await?;
        let mut record = validate::selector(dto, plugin.as_ref())?;
        let plugin = plugin.expect("validation checked the plugin");
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        self.store.put_selector(&record).await?;
        let data = selector_data(&record, &plugin.name);
        self.publish(DataEventType::Update, EventPayload::Selector(vec![data]));
        Ok(record.id)
    }

    /// Replaces selector `id`; publishes SELECTOR/UPDATE with the old conditions as
    /// `beforeConditionList`.
    pub(crate) async fn update_selector(&self, id: &str, dto: SelectorDto) -> Result<(), ApiError> {
        let _write = self.write.lock().await;
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
        let _write = self.write.lock().await;
        let names = self.plugin_names().await?;
        let (selectors, rules) = self.store.delete_selectors(ids).await?;
        let plugin_of = |s: &SelectorRecord| names.get(&s.plugin_id).cloned().unwrap_or_default();
        let selector_plugin: HashMap<&str, String> = selectors
            .iter()
            .map(|s| (s.id.as_str(), plugin_of(s)))
            .collect();
        if !selectors.is_empty() {
            let data = selectors
                .iter()
                .map(|s| selector_data(s, &plugin_of(s)))
                .collect();
            self.publish(DataEventType::Delete, EventPayload::Selector(data));
        }
        if !rules.is_empty() {
            let data = rules
                .iter()
                .map(|r| {
                    rule_data(
                        r,
                        selector_plugin
                            .get(r.selector_id.as_str())
                            .map_or("", String::as_str),
                    )
                })
                .collect();
            self.publish(DataEventType::Delete, EventPayload::Rule(data));
        }
        Ok(selectors.len())
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
        let _write = self.write.lock().await;
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
        let _write = self.write.lock().await;
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
        let _write = self.write.lock().await;
        let names = self.plugin_names().await?;
        let mut selector_plugin = HashMap::new();
        for selector in self.store.selectors().await? {
            let name = names.get(&selector.plugin_id).cloned().unwrap_or_default();
            selector_plugin.insert(selector.id, name);
        }
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
}
