//! App auth entries (the sign plugin's keys): [`AppAuthRecord`] and its queries.

use model::{AuthParamData, AuthPathData};

use super::database::{
    Backend, Flag, Unknown, delete_by_id, list_json, parse_list, records, set_enabled,
};
use super::{Batch, Store, StoreError};

/// A stored app auth entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppAuthRecord {
    pub(crate) id: String,
    pub(crate) app_key: String,
    pub(crate) app_secret: String,
    pub(crate) user_id: Option<String>,
    pub(crate) phone: Option<String>,
    pub(crate) ext_info: Option<String>,
    pub(crate) open: bool,
    pub(crate) enabled: bool,
    pub(crate) params: Vec<AuthParamData>,
    pub(crate) paths: Vec<AuthPathData>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// An app auth entry as stored: its params and paths are JSON text.
#[derive(sqlx::FromRow)]
pub(super) struct AppAuthRow {
    id: String,
    app_key: String,
    app_secret: String,
    user_id: Option<String>,
    phone: Option<String>,
    ext_info: Option<String>,
    #[sqlx(try_from = "Flag")]
    open: bool,
    #[sqlx(try_from = "Flag")]
    enabled: bool,
    params: String,
    paths: String,
    date_created: String,
    date_updated: String,
}

impl TryFrom<AppAuthRow> for AppAuthRecord {
    type Error = StoreError;

    fn try_from(row: AppAuthRow) -> Result<Self, StoreError> {
        Ok(AppAuthRecord {
            params: parse_list("app auth", &row.id, &row.params)?,
            paths: parse_list("app auth", &row.id, &row.paths)?,
            id: row.id,
            app_key: row.app_key,
            app_secret: row.app_secret,
            user_id: row.user_id,
            phone: row.phone,
            ext_info: row.ext_info,
            open: row.open,
            enabled: row.enabled,
            date_created: row.date_created,
            date_updated: row.date_updated,
        })
    }
}

/// The columns of an [`AppAuthRow`], for `SELECT` and `RETURNING` lists.
macro_rules! columns {
    () => {
        "id, app_key, app_secret, user_id, phone, ext_info, open, enabled, params, paths, \
         date_created, date_updated"
    };
}

impl Store {
    /// All app auth entries, ordered by app key.
    pub(crate) async fn app_auths(&self) -> Result<Vec<AppAuthRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.app_auths()),
            Backend::Sql { pool, .. } => pool,
        };
        let rows: Vec<AppAuthRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM app_auth ORDER BY app_key"
        ))
        .fetch_all(pool)
        .await?;
        records(rows)
    }

    /// One app auth entry.
    pub(crate) async fn app_auth(&self, id: &str) -> Result<Option<AppAuthRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.app_auth(id)),
            Backend::Sql { pool, .. } => pool,
        };
        let row: Option<AppAuthRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM app_auth WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?;
        row.map(AppAuthRecord::try_from).transpose()
    }

    /// Inserts an app auth entry, or replaces the one with the same id (keeping its creation
    /// date).
    pub(crate) async fn put_app_auth(&self, a: &AppAuthRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_app_auth(a),
            Backend::Sql { pool, .. } => pool,
        };
        sqlx::query(concat!(
            "INSERT INTO app_auth (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (id) DO UPDATE SET app_key = excluded.app_key, \
             app_secret = excluded.app_secret, user_id = excluded.user_id, \
             phone = excluded.phone, ext_info = excluded.ext_info, open = excluded.open, \
             enabled = excluded.enabled, params = excluded.params, paths = excluded.paths, \
             date_updated = excluded.date_updated"
        ))
        .bind(&a.id)
        .bind(&a.app_key)
        .bind(&a.app_secret)
        .bind(&a.user_id)
        .bind(&a.phone)
        .bind(&a.ext_info)
        .bind(Flag(a.open))
        .bind(Flag(a.enabled))
        .bind(list_json(&a.params))
        .bind(list_json(&a.paths))
        .bind(&a.date_created)
        .bind(&a.date_updated)
        .execute(pool)
        .await?;
        Ok(())
    }

    /// Deletes app auth entries in one transaction; returns what was deleted (unknown ids are
    /// skipped).
    pub(crate) async fn delete_app_auths(
        &self,
        ids: &[String],
    ) -> Result<Vec<AppAuthRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.delete_app_auths(ids)),
            Backend::Sql { pool, .. } => pool,
        };
        let deleted = delete_by_id(
            pool,
            concat!("DELETE FROM app_auth WHERE id = $1 RETURNING ", columns!()),
            ids,
            Unknown::Skip,
            <AppAuthRecord as TryFrom<AppAuthRow>>::try_from,
        )
        .await?;
        // Skipping never refuses.
        Ok(deleted.unwrap_or_default())
    }

    /// Sets `enabled` on the given app auth entries and returns them updated: all or none.
    pub(crate) async fn set_app_auths_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Result<Batch<AppAuthRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.set_app_auths_enabled(ids, enabled, now)),
            Backend::Sql { pool, .. } => pool,
        };
        set_enabled(
            pool,
            concat!(
                "UPDATE app_auth SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ",
                columns!()
            ),
            ids,
            enabled,
            now,
            <AppAuthRecord as TryFrom<AppAuthRow>>::try_from,
        )
        .await
    }
}
