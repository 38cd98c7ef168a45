//! Metadata: create or replace, enable, delete, and metadata as synced.

use model::{DEFAULT_NAMESPACE_ID, DataEventType, EventPayload, MetaData};

use super::Admin;
use super::error::{ServiceError, all_found};
use crate::dto::MetaDataDto;
use crate::store::MetaRecord;
use crate::validate;
use model::time::now;

/// Metadata as synced.
pub(super) fn meta_data(m: &MetaRecord) -> MetaData {
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

impl Admin {
    /// Creates metadata (no or blank `id`) or replaces it; publishes META_DATA/UPDATE. Paths
    /// are unique. Returns the id.
    pub(crate) async fn save_meta(&self, dto: MetaDataDto) -> Result<String, ServiceError> {
        let _write = self.write_lock().await;
        let mut record = validate::meta(dto)?;
        let all = self.store.meta_data().await?;
        if let Some(clash) = all
            .iter()
            .find(|m| m.path == record.path && m.id != record.id)
        {
            return Err(ServiceError::field(
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
                ServiceError::NotFound(format!("metadata `{}` does not exist", record.id))
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
    pub(crate) async fn delete_meta(&self, ids: &[String]) -> Result<usize, ServiceError> {
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
    pub(crate) async fn enable_meta(
        &self,
        ids: &[String],
        enabled: bool,
    ) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        let batch = self.store.set_meta_enabled(ids, enabled, &now()).await?;
        let updated = all_found("metadata", batch)?;
        self.publish(
            DataEventType::Update,
            EventPayload::MetaData(updated.iter().map(meta_data).collect()),
        );
        Ok(())
    }
}
