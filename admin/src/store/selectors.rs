//! Selectors: [`SelectorRecord`] and its queries.

use model::ConditionData;
use sqlx::AnyConnection;

use super::database::{Backend, Flag, list_json, parse_list, records, set_enabled};
use super::rules::rules_of;
use super::{Batch, RuleRecord, Store, StoreError};

/// A stored selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SelectorRecord {
    pub(crate) id: String,
    pub(crate) plugin_id: String,
    pub(crate) name: String,
    pub(crate) selector_type: i32,
    pub(crate) match_mode: i32,
    pub(crate) sort: i32,
    pub(crate) enabled: bool,
    pub(crate) loged: bool,
    pub(crate) continued: bool,
    pub(crate) match_restful: bool,
    pub(crate) handle: Option<String>,
    pub(crate) conditions: Vec<ConditionData>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// A selector as stored: its conditions are JSON text.
#[derive(sqlx::FromRow)]
pub(super) struct SelectorRow {
    id: String,
    plugin_id: String,
    name: String,
    selector_type: i32,
    match_mode: i32,
    sort: i32,
    #[sqlx(try_from = "Flag")]
    enabled: bool,
    #[sqlx(try_from = "Flag")]
    loged: bool,
    #[sqlx(try_from = "Flag")]
    continued: bool,
    #[sqlx(try_from = "Flag")]
    match_restful: bool,
    handle: Option<String>,
    conditions: String,
    date_created: String,
    date_updated: String,
}

impl TryFrom<SelectorRow> for SelectorRecord {
    type Error = StoreError;

    fn try_from(row: SelectorRow) -> Result<Self, StoreError> {
        let conditions = parse_list("selector", &row.id, &row.conditions)?;
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

/// The columns of a [`SelectorRow`], for `SELECT` and `RETURNING` lists.
macro_rules! columns {
    () => {
        "id, plugin_id, name, selector_type, match_mode, sort, enabled, loged, continued, \
         match_restful, handle, conditions, date_created, date_updated"
    };
}

/// The selectors of plugin `plugin_id`, ordered by sort, then id, read on `conn` (inside a
/// transaction).
pub(super) async fn selectors_of(
    conn: &mut AnyConnection,
    plugin_id: &str,
) -> Result<Vec<SelectorRecord>, StoreError> {
    let rows: Vec<SelectorRow> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM selector WHERE plugin_id = $1 ORDER BY sort, id"
    ))
    .bind(plugin_id)
    .fetch_all(conn)
    .await?;
    records(rows)
}

impl Store {
    /// All selectors, ordered by sort, then id.
    pub(crate) async fn selectors(&self) -> Result<Vec<SelectorRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.selectors()),
            Backend::Sql { pool, .. } => pool,
        };
        let rows: Vec<SelectorRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM selector ORDER BY sort, id"
        ))
        .fetch_all(pool)
        .await?;
        records(rows)
    }

    /// One selector.
    pub(crate) async fn selector(&self, id: &str) -> Result<Option<SelectorRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.selector(id)),
            Backend::Sql { pool, .. } => pool,
        };
        let row: Option<SelectorRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM selector WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?;
        row.map(SelectorRecord::try_from).transpose()
    }

    /// The first selector (by sort, then id) of plugin `plugin_id` named `name`, found through
    /// the `selector (plugin_id, name)` index.
    pub(crate) async fn selector_named(
        &self,
        plugin_id: &str,
        name: &str,
    ) -> Result<Option<SelectorRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.selector_named(plugin_id, name)),
            Backend::Sql { pool, .. } => pool,
        };
        let row: Option<SelectorRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM selector WHERE plugin_id = $1 AND name = $2 ORDER BY sort, id LIMIT 1"
        ))
        .bind(plugin_id)
        .bind(name)
        .fetch_optional(pool)
        .await?;
        row.map(SelectorRecord::try_from).transpose()
    }

    /// Inserts a selector, or replaces the one with the same id (keeping its creation date).
    pub(crate) async fn put_selector(&self, s: &SelectorRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_selector(s),
            Backend::Sql { pool, .. } => pool,
        };
        let mut conn = pool.acquire().await?;
        put_selector(&mut conn, s).await
    }

    /// Deletes selectors and their rules in one transaction; returns what was deleted
    /// (unknown ids are skipped).
    pub(crate) async fn delete_selectors(
        &self,
        ids: &[String],
    ) -> Result<(Vec<SelectorRecord>, Vec<RuleRecord>), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.delete_selectors(ids)),
            Backend::Sql { pool, .. } => pool,
        };
        let mut tx = pool.begin().await?;
        let mut selectors = Vec::new();
        let mut rules = Vec::new();
        for id in ids {
            let owned = rules_of(&mut tx, id).await?;
            let row: Option<SelectorRow> = sqlx::query_as(concat!(
                "DELETE FROM selector WHERE id = $1 RETURNING ",
                columns!()
            ))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = row {
                // Its rules went with it (ON DELETE CASCADE).
                selectors.push(SelectorRecord::try_from(row)?);
                rules.extend(owned);
            }
        }
        tx.commit().await?;
        Ok((selectors, rules))
    }

    /// Sets `enabled` on the given selectors and returns them updated: all or none.
    pub(crate) async fn set_selectors_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Result<Batch<SelectorRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.set_selectors_enabled(ids, enabled, now)),
            Backend::Sql { pool, .. } => pool,
        };
        set_enabled(
            pool,
            concat!(
                "UPDATE selector SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ",
                columns!()
            ),
            ids,
            enabled,
            now,
            <SelectorRecord as TryFrom<SelectorRow>>::try_from,
        )
        .await
    }
}

/// Inserts SelectorRecord `s`, or replaces the one with the same id (keeping its creation date),
/// on `conn` (a pooled connection or a transaction).
pub(super) async fn put_selector(
    conn: &mut AnyConnection,
    s: &SelectorRecord,
) -> Result<(), StoreError> {
    sqlx::query(concat!(
        "INSERT INTO selector (",
        columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (id) DO UPDATE SET plugin_id = excluded.plugin_id, \
         name = excluded.name, selector_type = excluded.selector_type, \
         match_mode = excluded.match_mode, sort = excluded.sort, \
         enabled = excluded.enabled, loged = excluded.loged, \
         continued = excluded.continued, match_restful = excluded.match_restful, \
         handle = excluded.handle, conditions = excluded.conditions, \
         date_updated = excluded.date_updated"
    ))
    .bind(&s.id)
    .bind(&s.plugin_id)
    .bind(&s.name)
    .bind(s.selector_type)
    .bind(s.match_mode)
    .bind(s.sort)
    .bind(Flag(s.enabled))
    .bind(Flag(s.loged))
    .bind(Flag(s.continued))
    .bind(Flag(s.match_restful))
    .bind(&s.handle)
    .bind(list_json(&s.conditions))
    .bind(&s.date_created)
    .bind(&s.date_updated)
    .execute(conn)
    .await?;
    Ok(())
}
