//! Rules: create, update, enable, delete, and a rule as synced.

use std::collections::HashMap;

use model::{DEFAULT_NAMESPACE_ID, DataEventType, EventPayload, MatchMode, RuleData, RuleDto};

use super::Admin;
use super::error::{ServiceError, all_found};
use crate::store::{RuleRecord, StoreError};
use crate::validate;
use model::time::now;

/// A rule as synced; `plugin_name` is its selector's plugin's name.
pub(super) fn rule_data(r: &RuleRecord, plugin_name: &str) -> RuleData {
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

impl Admin {
    /// The plugin name of every selector, by selector id.
    pub(super) async fn selector_plugins(&self) -> Result<HashMap<String, String>, StoreError> {
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
    pub(crate) async fn enable_rules(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ServiceError> {
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

    async fn validated_rule(&self, dto: RuleDto) -> Result<(RuleRecord, String), ServiceError> {
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
    pub(crate) async fn create_rule(&self, dto: RuleDto) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        self.create_rule_locked(dto).await
    }

    /// [`Self::create_rule`] for a caller holding the write lock.
    async fn create_rule_locked(&self, dto: RuleDto) -> Result<(), ServiceError> {
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
    pub(crate) async fn update_rule(&self, id: &str, dto: RuleDto) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        let old = self
            .store
            .rule(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("rule `{id}` does not exist")))?;
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
    pub(crate) async fn delete_rules(&self, ids: &[String]) -> Result<usize, ServiceError> {
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
}
