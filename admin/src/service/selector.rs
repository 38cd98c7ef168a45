//! Selectors: create, update, enable, delete (with their rules), and a selector as synced.

use std::collections::HashMap;

use model::{
    ConditionDto, DEFAULT_NAMESPACE_ID, DataEventType, EventPayload, MatchMode, SelectorData,
    SelectorDto, SelectorType,
};

use super::Admin;
use super::error::{ServiceError, all_found};
use super::rule::rule_data;
use crate::store::{PluginRecord, RuleRecord, SelectorRecord, StoreError};
use crate::validate;
use model::time::now;

/// A selector as synced; `plugin_name` is its plugin's name.
pub(super) fn selector_data(s: &SelectorRecord, plugin_name: &str) -> SelectorData {
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

/// A stored selector as a request, for updates that change only some fields.
pub(super) fn selector_dto(s: &SelectorRecord) -> SelectorDto {
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

impl Admin {
    /// Enables or disables selectors (all must exist); publishes SELECTOR/UPDATE.
    pub(crate) async fn enable_selectors(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ServiceError> {
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

    async fn plugin_for(&self, dto: &SelectorDto) -> Result<Option<PluginRecord>, StoreError> {
        match dto.plugin_id.as_deref() {
            Some(id) => self.store.plugin(id.trim()).await,
            None => Ok(None),
        }
    }

    /// Creates a selector; publishes SELECTOR/UPDATE. Returns the new id.
    pub(crate) async fn create_selector(&self, dto: SelectorDto) -> Result<String, ServiceError> {
        let _write = self.write_lock().await;
        Ok(self.create_selector_locked(dto).await?.id)
    }

    /// [`Self::create_selector`] for a caller holding the write lock.
    pub(super) async fn create_selector_locked(
        &self,
        dto: SelectorDto,
    ) -> Result<SelectorRecord, ServiceError> {
        let plugin = self.plugin_for(&dto).await?;
        let plugin = validate::selector_plugin(dto.plugin_id.as_deref(), plugin.as_ref())?;
        let mut record = validate::selector(dto, plugin)?;
        record.id = self.ids.next_id();
        record.date_created = now();
        record.date_updated.clone_from(&record.date_created);
        self.store.put_selector(&record).await?;
        let data = selector_data(&record, &plugin.name);
        self.publish(DataEventType::Update, EventPayload::Selector(vec![data]));
        Ok(record)
    }

    /// Replaces selector `id`; publishes SELECTOR/UPDATE with the old conditions as
    /// `beforeConditionList`. A selector moved to another plugin is first published as
    /// deleted from the old one (SELECTOR/DELETE, then RULE/DELETE for its rules), then as
    /// new (SELECTOR/UPDATE, then RULE/UPDATE for its rules, now named with the new plugin):
    /// ZooKeeper and etcd keep a selector and its rules under the plugin's path, and a
    /// gateway's rules carry their plugin's name.
    pub(crate) async fn update_selector(
        &self,
        id: &str,
        dto: SelectorDto,
    ) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        self.update_selector_locked(id, dto).await
    }

    /// [`Self::update_selector`] for a caller holding the write lock.
    pub(super) async fn update_selector_locked(
        &self,
        id: &str,
        dto: SelectorDto,
    ) -> Result<(), ServiceError> {
        let old = self
            .store
            .selector(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("selector `{id}` does not exist")))?;
        let plugin = self.plugin_for(&dto).await?;
        let plugin = validate::selector_plugin(dto.plugin_id.as_deref(), plugin.as_ref())?;
        let mut record = validate::selector(dto, plugin)?;
        record.id.clone_from(&old.id);
        record.date_created.clone_from(&old.date_created);
        record.date_updated = now();
        let moved = old.plugin_id != record.plugin_id;
        let mut data = selector_data(&record, &plugin.name);
        data.before_condition_list.clone_from(&old.conditions);
        // The emulated bug: the update leaves before its write, which may yet be refused.
        let early = self.publish_before_commit && !moved;
        if early {
            self.publish(
                DataEventType::Update,
                EventPayload::Selector(vec![data.clone()]),
            );
        }
        self.store.put_selector(&record).await?;
        let rules = if moved {
            let rules = self.store.selector_rules(&record.id).await?;
            let names = self.plugin_names().await?;
            self.publish_deleted_selectors(std::slice::from_ref(&old), &rules, &names);
            rules
        } else {
            Vec::new()
        };
        if !early {
            self.publish(DataEventType::Update, EventPayload::Selector(vec![data]));
        }
        if !rules.is_empty() {
            let data = rules.iter().map(|r| rule_data(r, &plugin.name)).collect();
            self.publish(DataEventType::Update, EventPayload::Rule(data));
        }
        Ok(())
    }

    /// Deletes selectors with their rules; publishes SELECTOR/DELETE, then RULE/DELETE when
    /// rules went too. Returns the number of selectors deleted.
    pub(crate) async fn delete_selectors(&self, ids: &[String]) -> Result<usize, ServiceError> {
        let _write = self.write_lock().await;
        let names = self.plugin_names().await?;
        let (selectors, rules) = self.store.delete_selectors(ids).await?;
        self.publish_deleted_selectors(&selectors, &rules, &names);
        Ok(selectors.len())
    }

    /// Publishes SELECTOR/DELETE and RULE/DELETE (each when non-empty) for selectors deleted
    /// with their rules; `plugin_names` maps plugin ids to names.
    pub(super) fn publish_deleted_selectors(
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
}
