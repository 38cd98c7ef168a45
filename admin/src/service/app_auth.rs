//! App auth entries: apply (with a fresh secret), update, enable, delete, and an entry as
//! synced.

use model::{AppAuthData, DEFAULT_NAMESPACE_ID, DataEventType, EventPayload};

use super::Admin;
use super::error::{ServiceError, all_found};
use crate::dto::{AppAuthDto, AuthApplyDto};
use crate::store::AppAuthRecord;
use crate::validate;
use model::time::now;

/// An app auth entry as synced.
pub(super) fn app_auth_data(a: &AppAuthRecord) -> AppAuthData {
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

/// A fresh app secret: 32 upper-case hex digits, as ShenYu makes them.
fn new_secret() -> String {
    hex::encode_upper(model::world::random_bytes::<16>())
}

impl Admin {
    async fn check_app_key_free(&self, record: &AppAuthRecord) -> Result<(), ServiceError> {
        let all = self.store.app_auths().await?;
        match all
            .iter()
            .find(|a| a.app_key == record.app_key && a.id != record.id)
        {
            Some(_) => Err(ServiceError::field(
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
    ) -> Result<AppAuthRecord, ServiceError> {
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
    pub(crate) async fn update_app_auth(&self, dto: AppAuthDto) -> Result<(), ServiceError> {
        let _write = self.write_lock().await;
        let id = dto
            .id
            .clone()
            .filter(|id| !id.trim().is_empty())
            .ok_or_else(|| ServiceError::field("id", "must not be blank"))?;
        let old = self
            .store
            .app_auth(id.trim())
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("app auth `{id}` does not exist")))?;
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
    pub(crate) async fn delete_app_auths(&self, ids: &[String]) -> Result<usize, ServiceError> {
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
    ) -> Result<(), ServiceError> {
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
}
