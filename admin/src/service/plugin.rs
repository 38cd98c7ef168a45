//! Plugins: create, update, enable, delete (with their selectors, rules and handle
//! definitions), and the plugin as synced.

use model::{DataEventType, EventPayload, PluginData};

use super::Admin;
use super::error::{ServiceError, all_found};
use crate::dto::PluginDto;
use crate::store::PluginRecord;
use crate::validate;
use model::time::now;

/// A plugin as synced.
pub(super) fn plugin_data(p: &PluginRecord) -> PluginData {
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

impl Admin {
    /// Enables or disables plugins; publishes PLUGIN/UPDATE.
    pub(crate) async fn enable_plugins(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ServiceError> {
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
    pub(crate) async fn update_plugin(&self, id: &str, dto: PluginDto) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        let old = self
            .store
            .plugin(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("plugin `{id}` does not exist")))?;
        let mut record = validate::plugin(dto, &old)?;
        record.date_updated = now();
        if !self.store.update_plugin(&record).await? {
            return Err(ServiceError::NotFound(format!(
                "plugin `{id}` does not exist"
            )));
        }
        self.publish(
            DataEventType::Update,
            EventPayload::Plugin(vec![plugin_data(&record)]),
        );
        Ok(())
    }

    /// Creates a plugin (the name must be free); publishes PLUGIN/CREATE.
    pub(crate) async fn create_plugin(&self, dto: PluginDto) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        let mut record = validate::new_plugin(dto)?;
        if self
            .store
            .plugins()
            .await?
            .iter()
            .any(|p| p.name == record.name)
        {
            return Err(ServiceError::field(
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
    pub(crate) async fn delete_plugins(&self, ids: &[String]) -> Result<usize, ServiceError> {
        let _write = self.write_lock().await;
        let (plugins, selectors, rules) = self
            .store
            .delete_plugins(ids)
            .await?
            .map_err(|id| ServiceError::NotFound(format!("plugin `{id}` does not exist")))?;
        let names = plugins
            .iter()
            .map(|p| (p.id.clone(), p.name.clone()))
            .collect();
        self.publish_deleted_selectors(&selectors, &rules, &names);
        let data = plugins.iter().map(plugin_data).collect();
        self.publish(DataEventType::Delete, EventPayload::Plugin(data));
        Ok(plugins.len())
    }
}
