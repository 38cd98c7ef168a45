//! Plugin handle definitions (the dashboard's form fields for a plugin's handles): create,
//! replace, delete. They are not synced.

use super::Admin;
use super::error::{ServiceError, all_found};
use crate::dto::PluginHandleDto;
use crate::validate;
use model::time::now;

impl Admin {
    /// Creates (`id` None) or replaces plugin handle definition `id`. Handle definitions are
    /// not synced: nothing is published.
    pub(crate) async fn save_plugin_handle(
        &self,
        id: Option<&str>,
        dto: PluginHandleDto,
    ) -> Result<(), ServiceError> {
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
                    ServiceError::NotFound(format!("plugin handle `{id}` does not exist"))
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
            Err(e) if e.is_unique_violation() => Err(ServiceError::field(
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
    pub(crate) async fn delete_plugin_handles(
        &self,
        ids: &[String],
    ) -> Result<usize, ServiceError> {
        let _write = self.write_lock().await;
        let deleted = all_found(
            "plugin handle",
            self.store.delete_plugin_handles(ids).await?,
        )?;
        Ok(deleted.len())
    }
}
