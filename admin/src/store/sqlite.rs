//! The SQLite [`Store`](super::Store).

use std::str::FromStr;

use model::{AppAuthData, BuiltinPlugin, MetaData};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{Sqlite, Transaction};

use super::{
    PluginRecord, RuleRecord, SelectorRecord, Store, StoreError, StoreResult, conditions_json,
    parse_conditions,
};

/// A SQLite database, in a file or in memory.
#[derive(Debug, Clone)]
pub(crate) struct SqliteStore {
    pool: SqlitePool,
}

#[derive(sqlx::FromRow)]
struct SelectorRow {
    id: String,
    plugin_id: String,
    name: String,
    selector_type: i32,
    match_mode: i32,
    sort: i32,
    enabled: bool,
    loged: bool,
    continued: bool,
    match_restful: bool,
    handle: Option<String>,
    conditions: String,
    date_created: String,
    date_updated: String,
}

impl TryFrom<SelectorRow> for SelectorRecord {
    type Error = StoreError;

    fn try_from(row: SelectorRow) -> Result<Self, StoreError> {
        let conditions = parse_conditions("selector", &row.id, &row.conditions)?;
        Ok(SelectorRecord {
            id: row.id,
            plugin_id: row.plugin_id,
            name: row.name,
            selector_type: row.selector_type,
            match_mode: row.match_mode,
            sort: row.sort,
            enabled: row.enabled,
            loged: row.loged,
            continued: row.continued,
            match_restful: row.match_restful,
            handle: row.handle,
            conditions,
            date_created: row.date_created,
            date_updated: row.date_updated,
        })
    }
}

#[derive(sqlx::FromRow)]
struct RuleRow {
    id: String,
    selector_id: String,
    name: String,
    match_mode: i32,
    sort: i32,
    enabled: bool,
    loged: bool,
    match_restful: bool,
    handle: Option<String>,
    conditions: String,
    date_created: String,
    date_updated: String,
}

impl TryFrom<RuleRow> for RuleRecord {
    type Error = StoreError;

    fn try_from(row: RuleRow) -> Result<Self, StoreError> {
        let conditions = parse_conditions("rule", &row.id, &row.conditions)?;
        Ok(RuleRecord {
            id: row.id,
            selector_id: row.selector_id,
            name: row.name,
            match_mode: row.match_mode,
            sort: row.sort,
            enabled: row.enabled,
            loged: row.loged,
            match_restful: row.match_restful,
            handle: row.handle,
            conditions,
            date_created: row.date_created,
            date_updated: row.date_updated,
        })
    }
}

#[derive(sqlx::FromRow)]
struct MetaRow {
    id: String,
    app_name: Option<String>,
    context_path: Option<String>,
    path: String,
    rpc_type: Option<String>,
    service_name: Option<String>,
    method_name: Option<String>,
    parameter_types: Option<String>,
    rpc_ext: Option<String>,
    enabled: bool,
}

#[derive(sqlx::FromRow)]
struct AppAuthRow {
    app_key: String,
    app_secret: String,
    enabled: bool,
    open: bool,
}

fn rows<R, T>(rows: Vec<R>) -> Result<Vec<T>, StoreError>
where
    T: TryFrom<R, Error = StoreError>,
{
    rows.into_iter().map(T::try_from).collect()
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `path`, or a private in-memory database for
    /// `:memory:`, and migrates it.
    pub(crate) async fn open(path: &str) -> Result<Self, StoreError> {
        let pool = if path == ":memory:" {
            // One connection that never closes: every query sees the same in-memory database.
            let options = SqliteConnectOptions::from_str("sqlite::memory:")?;
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await?
        } else {
            let options = SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .foreign_keys(true)
                .journal_mode(SqliteJournalMode::Wal);
            SqlitePoolOptions::new()
                .max_connections(4)
                .connect_with(options)
                .await?
        };
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
    }

    async fn selectors_in(
        tx: &mut Transaction<'static, Sqlite>,
        ids: &[String],
    ) -> Result<Vec<SelectorRecord>, StoreError> {
        let mut found = Vec::new();
        for id in ids {
            let row: Option<SelectorRow> = sqlx::query_as(
                "SELECT id, plugin_id, name, selector_type, match_mode, sort, enabled, loged, \
                 continued, match_restful, handle, conditions, date_created, date_updated \
                 FROM selector WHERE id = ?",
            )
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
            if let Some(row) = row {
                found.push(SelectorRecord::try_from(row)?);
            }
        }
        Ok(found)
    }

    async fn delete_rules_where(
        tx: &mut Transaction<'static, Sqlite>,
        found: Vec<RuleRow>,
    ) -> Result<Vec<RuleRecord>, StoreError> {
        let deleted: Vec<RuleRecord> = rows(found)?;
        for rule in &deleted {
            sqlx::query("DELETE FROM rule WHERE id = ?")
                .bind(&rule.id)
                .execute(&mut **tx)
                .await?;
        }
        Ok(deleted)
    }
}

impl Store for SqliteStore {
    fn seed_plugins<'a>(
        &'a self,
        plugins: &'a [BuiltinPlugin],
        now: &'a str,
    ) -> StoreResult<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            for p in plugins {
                sqlx::query(
                    "INSERT INTO plugin (id, name, role, sort, enabled, config, date_created, \
                     date_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                )
                .bind(p.id)
                .bind(p.name)
                .bind(p.role)
                .bind(p.sort)
                .bind(p.enabled)
                .bind(p.config)
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn plugins(&self) -> StoreResult<'_, Vec<PluginRecord>> {
        Box::pin(async move {
            Ok(sqlx::query_as(
                "SELECT id, name, role, sort, enabled, config, date_created, date_updated \
                 FROM plugin ORDER BY sort, id",
            )
            .fetch_all(&self.pool)
            .await?)
        })
    }

    fn plugin<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<PluginRecord>> {
        Box::pin(async move {
            Ok(sqlx::query_as(
                "SELECT id, name, role, sort, enabled, config, date_created, date_updated \
                 FROM plugin WHERE id = ?",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
        })
    }

    fn set_plugins_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Result<Vec<PluginRecord>, String>> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let mut updated = Vec::new();
            for id in ids {
                let row: Option<PluginRecord> = sqlx::query_as(
                    "UPDATE plugin SET enabled = ?, date_updated = ? WHERE id = ? RETURNING id, \
                     name, role, sort, enabled, config, date_created, date_updated",
                )
                .bind(enabled)
                .bind(now)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                match row {
                    Some(row) => updated.push(row),
                    // Dropping the transaction rolls it back.
                    None => return Ok(Err(id.clone())),
                }
            }
            tx.commit().await?;
            Ok(Ok(updated))
        })
    }

    fn selectors(&self) -> StoreResult<'_, Vec<SelectorRecord>> {
        Box::pin(async move {
            let found: Vec<SelectorRow> = sqlx::query_as(
                "SELECT id, plugin_id, name, selector_type, match_mode, sort, enabled, loged, \
                 continued, match_restful, handle, conditions, date_created, date_updated \
                 FROM selector ORDER BY sort, id",
            )
            .fetch_all(&self.pool)
            .await?;
            rows(found)
        })
    }

    fn selector<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<SelectorRecord>> {
        Box::pin(async move {
            let row: Option<SelectorRow> = sqlx::query_as(
                "SELECT id, plugin_id, name, selector_type, match_mode, sort, enabled, loged, \
                 continued, match_restful, handle, conditions, date_created, date_updated \
                 FROM selector WHERE id = ?",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
            row.map(SelectorRecord::try_from).transpose()
        })
    }

    fn put_selector<'a>(&'a self, s: &'a SelectorRecord) -> StoreResult<'a, ()> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO selector (id, plugin_id, name, selector_type, match_mode, sort, \
                 enabled, loged, continued, match_restful, handle, conditions, date_created, \
                 date_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (id) DO UPDATE SET plugin_id = excluded.plugin_id, \
                 name = excluded.name, selector_type = excluded.selector_type, \
                 match_mode = excluded.match_mode, sort = excluded.sort, \
                 enabled = excluded.enabled, loged = excluded.loged, \
                 continued = excluded.continued, match_restful = excluded.match_restful, \
                 handle = excluded.handle, conditions = excluded.conditions, \
                 date_updated = excluded.date_updated",
            )
            .bind(&s.id)
            .bind(&s.plugin_id)
            .bind(&s.name)
            .bind(s.selector_type)
            .bind(s.match_mode)
            .bind(s.sort)
            .bind(s.enabled)
            .bind(s.loged)
            .bind(s.continued)
            .bind(s.match_restful)
            .bind(&s.handle)
            .bind(conditions_json(&s.conditions))
            .bind(&s.date_created)
            .bind(&s.date_updated)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn delete_selectors<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreResult<'a, (Vec<SelectorRecord>, Vec<RuleRecord>)> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let selectors = Self::selectors_in(&mut tx, ids).await?;
            let mut rules = Vec::new();
            for selector in &selectors {
                let found: Vec<RuleRow> = sqlx::query_as(
                    "SELECT id, selector_id, name, match_mode, sort, enabled, loged, \
                     match_restful, handle, conditions, date_created, date_updated \
                     FROM rule WHERE selector_id = ? ORDER BY sort, id",
                )
                .bind(&selector.id)
                .fetch_all(&mut *tx)
                .await?;
                rules.extend(Self::delete_rules_where(&mut tx, found).await?);
                sqlx::query("DELETE FROM selector WHERE id = ?")
                    .bind(&selector.id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok((selectors, rules))
        })
    }

    fn rules(&self) -> StoreResult<'_, Vec<RuleRecord>> {
        Box::pin(async move {
            let found: Vec<RuleRow> = sqlx::query_as(
                "SELECT id, selector_id, name, match_mode, sort, enabled, loged, match_restful, \
                 handle, conditions, date_created, date_updated FROM rule ORDER BY sort, id",
            )
            .fetch_all(&self.pool)
            .await?;
            rows(found)
        })
    }

    fn rule<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<RuleRecord>> {
        Box::pin(async move {
            let row: Option<RuleRow> = sqlx::query_as(
                "SELECT id, selector_id, name, match_mode, sort, enabled, loged, match_restful, \
                 handle, conditions, date_created, date_updated FROM rule WHERE id = ?",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
            row.map(RuleRecord::try_from).transpose()
        })
    }

    fn put_rule<'a>(&'a self, r: &'a RuleRecord) -> StoreResult<'a, ()> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO rule (id, selector_id, name, match_mode, sort, enabled, loged, \
                 match_restful, handle, conditions, date_created, date_updated) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (id) DO UPDATE SET selector_id = excluded.selector_id, \
                 name = excluded.name, match_mode = excluded.match_mode, sort = excluded.sort, \
                 enabled = excluded.enabled, loged = excluded.loged, \
                 match_restful = excluded.match_restful, handle = excluded.handle, \
                 conditions = excluded.conditions, date_updated = excluded.date_updated",
            )
            .bind(&r.id)
            .bind(&r.selector_id)
            .bind(&r.name)
            .bind(r.match_mode)
            .bind(r.sort)
            .bind(r.enabled)
            .bind(r.loged)
            .bind(r.match_restful)
            .bind(&r.handle)
            .bind(conditions_json(&r.conditions))
            .bind(&r.date_created)
            .bind(&r.date_updated)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn delete_rules<'a>(&'a self, ids: &'a [String]) -> StoreResult<'a, Vec<RuleRecord>> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let mut found = Vec::new();
            for id in ids {
                let row: Option<RuleRow> = sqlx::query_as(
                    "SELECT id, selector_id, name, match_mode, sort, enabled, loged, \
                     match_restful, handle, conditions, date_created, date_updated \
                     FROM rule WHERE id = ?",
                )
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                found.extend(row);
            }
            let deleted = Self::delete_rules_where(&mut tx, found).await?;
            tx.commit().await?;
            Ok(deleted)
        })
    }

    fn meta_data(&self) -> StoreResult<'_, Vec<MetaData>> {
        Box::pin(async move {
            let found: Vec<MetaRow> = sqlx::query_as(
                "SELECT id, app_name, context_path, path, rpc_type, service_name, method_name, \
                 parameter_types, rpc_ext, enabled FROM meta_data ORDER BY id",
            )
            .fetch_all(&self.pool)
            .await?;
            Ok(found
                .into_iter()
                .map(|m| MetaData {
                    id: m.id,
                    app_name: m.app_name,
                    context_path: m.context_path,
                    path: m.path,
                    rpc_type: m.rpc_type,
                    service_name: m.service_name,
                    method_name: m.method_name,
                    parameter_types: m.parameter_types,
                    rpc_ext: m.rpc_ext,
                    enabled: m.enabled,
                    namespace_id: Some(model::DEFAULT_NAMESPACE_ID.to_owned()),
                })
                .collect())
        })
    }

    fn app_auth(&self) -> StoreResult<'_, Vec<AppAuthData>> {
        Box::pin(async move {
            let found: Vec<AppAuthRow> = sqlx::query_as(
                "SELECT app_key, app_secret, enabled, open FROM app_auth ORDER BY app_key",
            )
            .fetch_all(&self.pool)
            .await?;
            Ok(found
                .into_iter()
                .map(|a| AppAuthData {
                    app_key: a.app_key,
                    app_secret: a.app_secret,
                    enabled: a.enabled,
                    open: a.open,
                    namespace_id: Some(model::DEFAULT_NAMESPACE_ID.to_owned()),
                    ..Default::default()
                })
                .collect())
        })
    }
}
