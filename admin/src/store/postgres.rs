//! The PostgreSQL [`Store`](super::Store): the same schema and statements as SQLite, with
//! PostgreSQL's `$n` placeholders.

use model::BuiltinPlugin;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{FromRow, Postgres, Transaction};

use super::rows::{AppAuthRow, RuleRow, SelectorRow, rows};
use super::{
    AppAuthRecord, Batch, MetaRecord, PluginRecord, RuleRecord, SelectorRecord, Store, StoreError,
    StoreResult, list_json,
};

/// A PostgreSQL database.
#[derive(Debug, Clone)]
pub(crate) struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://...`) and migrates it.
    pub(crate) async fn open(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new().max_connections(8).connect(url).await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }

    async fn selectors_in(
        tx: &mut Transaction<'static, Postgres>,
        ids: &[String],
    ) -> Result<Vec<SelectorRecord>, StoreError> {
        let mut found = Vec::new();
        for id in ids {
            let row: Option<SelectorRow> = sqlx::query_as(
                "SELECT id, plugin_id, name, selector_type, match_mode, sort, enabled, loged, \
                 continued, match_restful, handle, conditions, date_created, date_updated \
                 FROM selector WHERE id = $1",
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
        tx: &mut Transaction<'static, Postgres>,
        found: Vec<RuleRow>,
    ) -> Result<Vec<RuleRecord>, StoreError> {
        let deleted: Vec<RuleRecord> = rows(found)?;
        for rule in &deleted {
            sqlx::query("DELETE FROM rule WHERE id = $1")
                .bind(&rule.id)
                .execute(&mut **tx)
                .await?;
        }
        Ok(deleted)
    }
}

/// Runs `update` (an `UPDATE .. SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ..`)
/// for every id in one transaction; rolls back and names the id when one is unknown.
async fn set_enabled<R, T>(
    pool: &PgPool,
    update: &'static str,
    ids: &[String],
    enabled: bool,
    now: &str,
    convert: fn(R) -> Result<T, StoreError>,
) -> Result<Batch<T>, StoreError>
where
    R: for<'r> FromRow<'r, PgRow> + Send + Unpin,
{
    let mut tx = pool.begin().await?;
    let mut updated = Vec::new();
    for id in ids {
        let row: Option<R> = sqlx::query_as(update)
            .bind(enabled)
            .bind(now)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        match row {
            Some(row) => updated.push(convert(row)?),
            // Dropping the transaction rolls it back.
            None => return Ok(Err(id.clone())),
        }
    }
    tx.commit().await?;
    Ok(Ok(updated))
}

/// Runs `delete` (a `DELETE .. WHERE id = $1 RETURNING ..`) for every id in one transaction;
/// unknown ids are skipped.
async fn delete_all<R, T>(
    pool: &PgPool,
    delete: &'static str,
    ids: &[String],
    convert: fn(R) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError>
where
    R: for<'r> FromRow<'r, PgRow> + Send + Unpin,
{
    let mut tx = pool.begin().await?;
    let mut deleted = Vec::new();
    for id in ids {
        let row: Option<R> = sqlx::query_as(delete)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = row {
            deleted.push(convert(row)?);
        }
    }
    tx.commit().await?;
    Ok(deleted)
}

impl Store for PostgresStore {
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
                     date_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
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
                 FROM plugin WHERE id = $1",
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
                    "UPDATE plugin SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING id, \
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
                 FROM selector WHERE id = $1",
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
                 date_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
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
            .bind(list_json(&s.conditions))
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
                     FROM rule WHERE selector_id = $1 ORDER BY sort, id",
                )
                .bind(&selector.id)
                .fetch_all(&mut *tx)
                .await?;
                rules.extend(Self::delete_rules_where(&mut tx, found).await?);
                sqlx::query("DELETE FROM selector WHERE id = $1")
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
                 handle, conditions, date_created, date_updated FROM rule WHERE id = $1",
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
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
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
            .bind(list_json(&r.conditions))
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
                     FROM rule WHERE id = $1",
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

    fn update_plugin<'a>(&'a self, p: &'a PluginRecord) -> StoreResult<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(
                "UPDATE plugin SET name = $1, role = $2, sort = $3, enabled = $4, config = $5, \
                 date_updated = $6 WHERE id = $7",
            )
            .bind(&p.name)
            .bind(&p.role)
            .bind(p.sort)
            .bind(p.enabled)
            .bind(&p.config)
            .bind(&p.date_updated)
            .bind(&p.id)
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    fn set_selectors_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<SelectorRecord>> {
        Box::pin(set_enabled(
            &self.pool,
            "UPDATE selector SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING id, \
             plugin_id, name, selector_type, match_mode, sort, enabled, loged, continued, \
             match_restful, handle, conditions, date_created, date_updated",
            ids,
            enabled,
            now,
            SelectorRecord::try_from as fn(SelectorRow) -> _,
        ))
    }

    fn set_rules_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<RuleRecord>> {
        Box::pin(set_enabled(
            &self.pool,
            "UPDATE rule SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING id, \
             selector_id, name, match_mode, sort, enabled, loged, match_restful, handle, \
             conditions, date_created, date_updated",
            ids,
            enabled,
            now,
            RuleRecord::try_from as fn(RuleRow) -> _,
        ))
    }

    fn meta_data(&self) -> StoreResult<'_, Vec<MetaRecord>> {
        Box::pin(async move {
            Ok(sqlx::query_as(
                "SELECT id, app_name, context_path, path, path_desc, rpc_type, service_name, \
                 method_name, parameter_types, rpc_ext, rule_name, enabled, date_created, \
                 date_updated FROM meta_data ORDER BY id",
            )
            .fetch_all(&self.pool)
            .await?)
        })
    }

    fn meta<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<MetaRecord>> {
        Box::pin(async move {
            Ok(sqlx::query_as(
                "SELECT id, app_name, context_path, path, path_desc, rpc_type, service_name, \
                 method_name, parameter_types, rpc_ext, rule_name, enabled, date_created, \
                 date_updated FROM meta_data WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
        })
    }

    fn put_meta<'a>(&'a self, m: &'a MetaRecord) -> StoreResult<'a, ()> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO meta_data (id, app_name, context_path, path, path_desc, rpc_type, \
                 service_name, method_name, parameter_types, rpc_ext, rule_name, enabled, \
                 date_created, date_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
                 ON CONFLICT (id) DO UPDATE SET app_name = excluded.app_name, \
                 context_path = excluded.context_path, path = excluded.path, \
                 path_desc = excluded.path_desc, rpc_type = excluded.rpc_type, \
                 service_name = excluded.service_name, method_name = excluded.method_name, \
                 parameter_types = excluded.parameter_types, rpc_ext = excluded.rpc_ext, \
                 rule_name = excluded.rule_name, enabled = excluded.enabled, \
                 date_updated = excluded.date_updated",
            )
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
            .bind(m.enabled)
            .bind(&m.date_created)
            .bind(&m.date_updated)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn delete_meta<'a>(&'a self, ids: &'a [String]) -> StoreResult<'a, Vec<MetaRecord>> {
        Box::pin(delete_all(
            &self.pool,
            "DELETE FROM meta_data WHERE id = $1 RETURNING id, app_name, context_path, path, \
             path_desc, rpc_type, service_name, method_name, parameter_types, rpc_ext, \
             rule_name, enabled, date_created, date_updated",
            ids,
            Ok as fn(MetaRecord) -> _,
        ))
    }

    fn set_meta_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<MetaRecord>> {
        Box::pin(set_enabled(
            &self.pool,
            "UPDATE meta_data SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING id, \
             app_name, context_path, path, path_desc, rpc_type, service_name, method_name, \
             parameter_types, rpc_ext, rule_name, enabled, date_created, date_updated",
            ids,
            enabled,
            now,
            Ok as fn(MetaRecord) -> _,
        ))
    }

    fn app_auths(&self) -> StoreResult<'_, Vec<AppAuthRecord>> {
        Box::pin(async move {
            let found: Vec<AppAuthRow> = sqlx::query_as(
                "SELECT id, app_key, app_secret, user_id, phone, ext_info, open, enabled, \
                 params, paths, date_created, date_updated FROM app_auth ORDER BY app_key",
            )
            .fetch_all(&self.pool)
            .await?;
            rows(found)
        })
    }

    fn app_auth<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<AppAuthRecord>> {
        Box::pin(async move {
            let row: Option<AppAuthRow> = sqlx::query_as(
                "SELECT id, app_key, app_secret, user_id, phone, ext_info, open, enabled, \
                 params, paths, date_created, date_updated FROM app_auth WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
            row.map(AppAuthRecord::try_from).transpose()
        })
    }

    fn put_app_auth<'a>(&'a self, a: &'a AppAuthRecord) -> StoreResult<'a, ()> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO app_auth (id, app_key, app_secret, user_id, phone, ext_info, open, \
                 enabled, params, paths, date_created, date_updated) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                 ON CONFLICT (id) DO UPDATE SET app_key = excluded.app_key, \
                 app_secret = excluded.app_secret, user_id = excluded.user_id, \
                 phone = excluded.phone, ext_info = excluded.ext_info, open = excluded.open, \
                 enabled = excluded.enabled, params = excluded.params, paths = excluded.paths, \
                 date_updated = excluded.date_updated",
            )
            .bind(&a.id)
            .bind(&a.app_key)
            .bind(&a.app_secret)
            .bind(&a.user_id)
            .bind(&a.phone)
            .bind(&a.ext_info)
            .bind(a.open)
            .bind(a.enabled)
            .bind(list_json(&a.params))
            .bind(list_json(&a.paths))
            .bind(&a.date_created)
            .bind(&a.date_updated)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn delete_app_auths<'a>(&'a self, ids: &'a [String]) -> StoreResult<'a, Vec<AppAuthRecord>> {
        Box::pin(delete_all(
            &self.pool,
            "DELETE FROM app_auth WHERE id = $1 RETURNING id, app_key, app_secret, user_id, \
             phone, ext_info, open, enabled, params, paths, date_created, date_updated",
            ids,
            AppAuthRecord::try_from as fn(AppAuthRow) -> _,
        ))
    }

    fn set_app_auths_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<AppAuthRecord>> {
        Box::pin(set_enabled(
            &self.pool,
            "UPDATE app_auth SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING id, \
             app_key, app_secret, user_id, phone, ext_info, open, enabled, params, paths, \
             date_created, date_updated",
            ids,
            enabled,
            now,
            AppAuthRecord::try_from as fn(AppAuthRow) -> _,
        ))
    }
}
