//! Plugin handle definitions (ShenYu's `plugin_handle` table): which fields a plugin's
//! selector, rule or plugin handle has, for the dashboard's forms. [`PluginHandleRecord`],
//! the built-in definitions ([`BUILTIN_HANDLES`]) and their queries.

use sqlx::AnyConnection;

use self::data_type::{NUMBER, SELECT, STRING};
use self::handle_type::{PLUGIN, RULE, SELECTOR};
use super::database::{Backend, Unknown, delete_by_id};
use super::{Batch, Store, StoreError};

/// A stored handle definition.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct PluginHandleRecord {
    pub(crate) id: String,
    /// The plugin it belongs to (deleting the plugin deletes it).
    pub(crate) plugin_id: String,
    /// The handle's JSON field name, e.g. `upstreamUrl`.
    pub(crate) field: String,
    /// What the dashboard shows, e.g. `ip:port`.
    pub(crate) label: String,
    /// A [`data_type`] value.
    pub(crate) data_type: i32,
    /// A [`handle_type`] value (column `type`).
    #[sqlx(rename = "type")]
    pub(crate) handle_type: i32,
    /// The field's position in the form.
    pub(crate) sort: i32,
    /// Extra settings as JSON text, e.g. `{"required":"1","defaultValue":"50"}`.
    pub(crate) ext_obj: Option<String>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// What a handle field holds ([`PluginHandleRecord::data_type`]).
pub(crate) mod data_type {
    /// A number.
    pub(crate) const NUMBER: i32 = 1;
    /// A string.
    pub(crate) const STRING: i32 = 2;
    /// One of a dictionary's values (a select box).
    pub(crate) const SELECT: i32 = 3;
}

/// Which handle a field belongs to ([`PluginHandleRecord::handle_type`]).
pub(crate) mod handle_type {
    /// A selector's handle.
    pub(crate) const SELECTOR: i32 = 1;
    /// A rule's handle.
    pub(crate) const RULE: i32 = 2;
    /// The plugin's own config.
    pub(crate) const PLUGIN: i32 = 3;
}

/// The columns of a [`PluginHandleRecord`], for `SELECT`, `INSERT` and `RETURNING` lists.
macro_rules! columns {
    () => {
        "id, plugin_id, field, label, data_type, type, sort, ext_obj, date_created, date_updated"
    };
}

/// A built-in handle definition, seeded with its plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BuiltinHandle {
    /// The plugin's name.
    pub(crate) plugin: &'static str,
    pub(crate) field: &'static str,
    pub(crate) label: &'static str,
    pub(crate) data_type: i32,
    pub(crate) handle_type: i32,
    /// Unique per plugin and handle type (the seeded id is built from it).
    pub(crate) sort: i32,
    pub(crate) ext_obj: Option<&'static str>,
}

const fn handle(
    plugin: &'static str,
    handle_type: i32,
    sort: i32,
    field: &'static str,
    label: &'static str,
    data_type: i32,
    ext_obj: &'static str,
) -> BuiltinHandle {
    BuiltinHandle {
        plugin,
        field,
        label,
        data_type,
        handle_type,
        sort,
        ext_obj: Some(ext_obj),
    }
}

/// The handle definitions seeded for the built-in plugins: divide's upstream list (its
/// selector handle, ShenYu's `DivideUpstream`) and rule handle, contextPath's and
/// paramMapping's rule handles (protocol doc §2.12), rateLimiter's rule handle and plugin
/// config (ShenYu's rows, plus `requestCount`, which ShenYu's seed lacks, and gantry's
/// `failClosed` and `concurrentSlotTtl`). Select fields take their options from the dictionary
/// named after the field.
#[rustfmt::skip]
pub(crate) const BUILTIN_HANDLES: &[BuiltinHandle] = &[
    handle("divide", SELECTOR, 1, "upstreamHost", "host", STRING, r#"{"required":"0","defaultValue":"localhost"}"#),
    handle("divide", SELECTOR, 2, "protocol", "protocol", STRING, r#"{"required":"0","defaultValue":"http://"}"#),
    handle("divide", SELECTOR, 3, "upstreamUrl", "ip:port", STRING, r#"{"required":"1","placeholder":"host:port"}"#),
    handle("divide", SELECTOR, 4, "weight", "weight", NUMBER, r#"{"required":"0","defaultValue":"50"}"#),
    handle("divide", SELECTOR, 5, "timestamp", "startupTime", NUMBER, r#"{"required":"0","defaultValue":"0","placeholder":"startup time (ms since the epoch)"}"#),
    handle("divide", SELECTOR, 6, "warmup", "warmupTime", NUMBER, r#"{"required":"0","defaultValue":"600000","placeholder":"warm-up time (ms)"}"#),
    handle("divide", SELECTOR, 7, "status", "status", SELECT, r#"{"required":"0","defaultValue":"true"}"#),
    handle("divide", SELECTOR, 8, "gray", "gray", SELECT, r#"{"required":"0","defaultValue":"false"}"#),
    handle("divide", RULE, 1, "loadBalance", "loadStrategy", SELECT, r#"{"required":"0","defaultValue":"random"}"#),
    handle("divide", RULE, 2, "retryStrategy", "retryStrategy", SELECT, r#"{"required":"0","defaultValue":"current"}"#),
    handle("divide", RULE, 3, "retry", "retryCount", NUMBER, r#"{"required":"0","defaultValue":"3"}"#),
    handle("divide", RULE, 4, "timeout", "timeout", NUMBER, r#"{"required":"0","defaultValue":"3000"}"#),
    handle("divide", RULE, 5, "headerMaxSize", "headerMaxSize", NUMBER, r#"{"required":"0","defaultValue":"0","placeholder":"bytes, 0 = unlimited"}"#),
    handle("divide", RULE, 6, "requestMaxSize", "requestMaxSize", NUMBER, r#"{"required":"0","defaultValue":"0","placeholder":"bytes, 0 = unlimited"}"#),
    handle("contextPath", RULE, 1, "contextPath", "contextPath", STRING, r#"{"required":"0"}"#),
    handle("contextPath", RULE, 2, "addPrefix", "addPrefix", STRING, r#"{"required":"0"}"#),
    handle("contextPath", RULE, 3, "addPrefixed", "addPrefixed", SELECT, r#"{"required":"0","defaultValue":"false"}"#),
    handle("contextPath", RULE, 4, "rewriteContextPath", "rewriteContextPath", STRING, r#"{"required":"0"}"#),
    handle("contextPath", RULE, 5, "percentage", "percentage", NUMBER, r#"{"required":"0","defaultValue":"100"}"#),
    handle("paramMapping", RULE, 1, "addParameterKeys", "addParameterKeys", STRING, r#"{"required":"0","placeholder":"JSON list of {path, key, value}"}"#),
    handle("paramMapping", RULE, 2, "replaceParameterKeys", "replaceParameterKeys", STRING, r#"{"required":"0","placeholder":"JSON list of {path, key, value}: key renamed to value"}"#),
    handle("paramMapping", RULE, 3, "removeParameterKeys", "removeParameterKeys", STRING, r#"{"required":"0","placeholder":"JSON list of JsonPaths"}"#),
    handle("rateLimiter", RULE, 1, "algorithmName", "algorithmName", SELECT, r#"{"required":"1","defaultValue":"slidingWindow","rule":""}"#),
    handle("rateLimiter", RULE, 2, "replenishRate", "replenishRate", STRING, r#"{"required":"1","defaultValue":"10","rule":""}"#),
    handle("rateLimiter", RULE, 3, "burstCapacity", "burstCapacity", STRING, r#"{"required":"1","defaultValue":"100","rule":""}"#),
    handle("rateLimiter", RULE, 4, "keyResolverName", "keyResolverName", SELECT, r#"{"required":"1","defaultValue":"WHOLE_KEY_RESOLVER","rule":""}"#),
    handle("rateLimiter", RULE, 5, "requestCount", "requestCount", NUMBER, r#"{"required":"0","defaultValue":"1","rule":""}"#),
    handle("rateLimiter", PLUGIN, 1, "mode", "mode", SELECT, r#"{"required":"0","defaultValue":"standalone"}"#),
    handle("rateLimiter", PLUGIN, 2, "master", "master", STRING, r#"{"required":"0","placeholder":"sentinel master name"}"#),
    handle("rateLimiter", PLUGIN, 3, "url", "url", STRING, r#"{"required":"1","placeholder":"host:port (sentinel, cluster: host:port;host:port)"}"#),
    handle("rateLimiter", PLUGIN, 4, "password", "password", STRING, r#"{"required":"0"}"#),
    handle("rateLimiter", PLUGIN, 5, "failClosed", "failClosed", SELECT, r#"{"required":"0","defaultValue":"false","placeholder":"gantry: deny when Redis cannot decide"}"#),
    handle("rateLimiter", PLUGIN, 6, "concurrentSlotTtl", "concurrentSlotTtl", NUMBER, r#"{"required":"0","defaultValue":"300","placeholder":"gantry: seconds before a concurrent slot counts as leaked"}"#),
];

/// The id a built-in definition gets: `1`, the plugin id in three digits, the handle type,
/// the sort in two digits (`1005103` is divide's third selector field).
pub(super) fn seed_id(plugin_id: &str, handle: &BuiltinHandle) -> String {
    format!("1{plugin_id:0>3}{}{:02}", handle.handle_type, handle.sort)
}

/// Inserts built-in definition `handle` of plugin `plugin_id` unless one with its id or its
/// plugin, field and type exists (for [`Store::seed_plugins`]).
pub(super) async fn seed_handle(
    conn: &mut AnyConnection,
    plugin_id: &str,
    handle: &BuiltinHandle,
    now: &str,
) -> Result<(), StoreError> {
    sqlx::query(concat!(
        "INSERT INTO plugin_handle (",
        columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT DO NOTHING"
    ))
    .bind(seed_id(plugin_id, handle))
    .bind(plugin_id)
    .bind(handle.field)
    .bind(handle.label)
    .bind(handle.data_type)
    .bind(handle.handle_type)
    .bind(handle.sort)
    .bind(handle.ext_obj)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
    /// All handle definitions, ordered by plugin id, type, sort, then id.
    pub(crate) async fn plugin_handles(&self) -> Result<Vec<PluginHandleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.plugin_handles()),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM plugin_handle ORDER BY plugin_id, type, sort, id"
        ))
        .fetch_all(pool)
        .await?)
    }

    /// One handle definition.
    pub(crate) async fn plugin_handle(
        &self,
        id: &str,
    ) -> Result<Option<PluginHandleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.plugin_handle(id)),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM plugin_handle WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?)
    }

    /// Inserts a handle definition, or replaces the one with the same id (keeping its
    /// creation date). Fails with a unique violation
    /// ([`StoreError::is_unique_violation`](super::StoreError::is_unique_violation)) when
    /// another definition has the same plugin, field and type, and with a foreign key
    /// violation when the plugin does not exist.
    pub(crate) async fn put_plugin_handle(&self, h: &PluginHandleRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_plugin_handle(h),
            Backend::Sql { pool, .. } => pool,
        };
        sqlx::query(concat!(
            "INSERT INTO plugin_handle (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (id) DO UPDATE SET plugin_id = excluded.plugin_id, \
             field = excluded.field, label = excluded.label, data_type = excluded.data_type, \
             type = excluded.type, sort = excluded.sort, ext_obj = excluded.ext_obj, \
             date_updated = excluded.date_updated"
        ))
        .bind(&h.id)
        .bind(&h.plugin_id)
        .bind(&h.field)
        .bind(&h.label)
        .bind(h.data_type)
        .bind(h.handle_type)
        .bind(h.sort)
        .bind(&h.ext_obj)
        .bind(&h.date_created)
        .bind(&h.date_updated)
        .execute(pool)
        .await?;
        Ok(())
    }

    /// Deletes handle definitions in one transaction and returns them: all or none (an
    /// unknown id deletes nothing and comes back as `Err(id)`).
    pub(crate) async fn delete_plugin_handles(
        &self,
        ids: &[String],
    ) -> Result<Batch<PluginHandleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.delete_plugin_handles(ids)),
            Backend::Sql { pool, .. } => pool,
        };
        delete_by_id(
            pool,
            concat!(
                "DELETE FROM plugin_handle WHERE id = $1 RETURNING ",
                columns!()
            ),
            ids,
            Unknown::Refuse,
            Ok,
        )
        .await
    }
}
