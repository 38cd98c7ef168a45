//! Metadata: [`MetaRecord`] and its queries.

use sqlx::AnyConnection;

use super::database::{Backend, Flag, Unknown, delete_by_id, set_enabled};
use super::{Batch, Store, StoreError};

/// Stored metadata.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct MetaRecord {
    pub(crate) id: String,
    pub(crate) app_name: Option<String>,
    pub(crate) context_path: Option<String>,
    pub(crate) path: String,
    pub(crate) path_desc: Option<String>,
    pub(crate) rpc_type: Option<String>,
    pub(crate) service_name: Option<String>,
    pub(crate) method_name: Option<String>,
    pub(crate) parameter_types: Option<String>,
    pub(crate) rpc_ext: Option<String>,
    pub(crate) rule_name: Option<String>,
    #[sqlx(try_from = "Flag")]
    pub(crate) enabled: bool,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// The columns of a [`MetaRecord`], for `SELECT` and `RETURNING` lists.
macro_rules! columns {
    () => {
        "id, app_name, context_path, path, path_desc, rpc_type, service_name, method_name, \
         parameter_types, rpc_ext, rule_name, enabled, date_created, date_updated"
    };
}

impl Store {
    /// All metadata, ordered by id.
    pub(crate) async fn meta_data(&self) -> Result<Vec<MetaRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.meta_data()),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM meta_data ORDER BY id"
        ))
        .fetch_all(pool)
        .await?)
    }

    /// One metadata entry.
    pub(crate) async fn meta(&self, id: &str) -> Result<Option<MetaRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.meta(id)),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM meta_data WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?)
    }

    /// The metadata entry for `path` (a unique, indexed column).
    pub(crate) async fn meta_by_path(&self, path: &str) -> Result<Option<MetaRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.meta_by_path(path)),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM meta_data WHERE path = $1"
        ))
        .bind(path)
        .fetch_optional(pool)
        .await?)
    }

    /// Inserts metadata, or replaces the entry with the same id (keeping its creation date).
    pub(crate) async fn put_meta(&self, m: &MetaRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_meta(m),
            Backend::Sql { pool, .. } => pool,
        };
        let mut conn = pool.acquire().await?;
        put_meta(&mut conn, m).await
    }

    /// Deletes metadata in one transaction; returns what was deleted (unknown ids are
    /// skipped).
    pub(crate) async fn delete_meta(&self, ids: &[String]) -> Result<Vec<MetaRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.delete_meta(ids)),
            Backend::Sql { pool, .. } => pool,
        };
        let deleted = delete_by_id(
            pool,
            concat!("DELETE FROM meta_data WHERE id = $1 RETURNING ", columns!()),
            ids,
            Unknown::Skip,
            Ok,
        )
        .await?;
        // Skipping never refuses.
        Ok(deleted.unwrap_or_default())
    }

    /// Sets `enabled` on the given metadata and returns them updated: all or none.
    pub(crate) async fn set_meta_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Result<Batch<MetaRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.set_meta_enabled(ids, enabled, now)),
            Backend::Sql { pool, .. } => pool,
        };
        set_enabled(
            pool,
            concat!(
                "UPDATE meta_data SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ",
                columns!()
            ),
            ids,
            enabled,
            now,
            Ok,
        )
        .await
    }
}

/// Inserts MetaRecord `m`, or replaces the one with the same id (keeping its creation date),
/// on `conn` (a pooled connection or a transaction).
pub(super) async fn put_meta(conn: &mut AnyConnection, m: &MetaRecord) -> Result<(), StoreError> {
    sqlx::query(concat!(
        "INSERT INTO meta_data (",
        columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (id) DO UPDATE SET app_name = excluded.app_name, \
         context_path = excluded.context_path, path = excluded.path, \
         path_desc = excluded.path_desc, rpc_type = excluded.rpc_type, \
         service_name = excluded.service_name, method_name = excluded.method_name, \
         parameter_types = excluded.parameter_types, rpc_ext = excluded.rpc_ext, \
         rule_name = excluded.rule_name, enabled = excluded.enabled, \
         date_updated = excluded.date_updated"
    ))
    .bind(&m.id)
    .bind(&m.app_name)
    .bind(&m.context_path)
    .bind(&m.path)
    .bind(&m.path_desc)
    .bind(&m.rpc_type)
    .bind(&m.service_name)
    .bind(&m.method_name)
    .bind(&m.parameter_types)
    .bind(&m.rpc_ext)
    .bind(&m.rule_name)
    .bind(Flag(m.enabled))
    .bind(&m.date_created)
    .bind(&m.date_updated)
    .execute(conn)
    .await?;
    Ok(())
}
