//! Rules: [`RuleRecord`] and its queries.

use model::ConditionData;
use sqlx::AnyConnection;

use super::database::{
    Backend, Flag, Unknown, delete_by_id, list_json, parse_list, records, set_enabled,
};
use super::{Batch, Store, StoreError};

/// A stored rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleRecord {
    pub(crate) id: String,
    pub(crate) selector_id: String,
    pub(crate) name: String,
    pub(crate) match_mode: i32,
    pub(crate) sort: i32,
    pub(crate) enabled: bool,
    pub(crate) loged: bool,
    pub(crate) match_restful: bool,
    pub(crate) handle: Option<String>,
    pub(crate) conditions: Vec<ConditionData>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// A rule as stored: its conditions are JSON text.
#[derive(sqlx::FromRow)]
pub(super) struct RuleRow {
    id: String,
    selector_id: String,
    name: String,
    match_mode: i32,
    sort: i32,
    #[sqlx(try_from = "Flag")]
    enabled: bool,
    #[sqlx(try_from = "Flag")]
    loged: bool,
    #[sqlx(try_from = "Flag")]
    match_restful: bool,
    handle: Option<String>,
    conditions: String,
    date_created: String,
    date_updated: String,
}

impl TryFrom<RuleRow> for RuleRecord {
    type Error = StoreError;

    fn try_from(row: RuleRow) -> Result<Self, StoreError> {
        let conditions = parse_list("rule", &row.id, &row.conditions)?;
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

/// The columns of a [`RuleRow`], for `SELECT` and `RETURNING` lists.
macro_rules! columns {
    () => {
        "id, selector_id, name, match_mode, sort, enabled, loged, match_restful, handle, \
         conditions, date_created, date_updated"
    };
}

/// The rules of selector `selector_id`, ordered by sort, then id (for deleting a selector).
pub(super) async fn rules_of(
    conn: &mut AnyConnection,
    selector_id: &str,
) -> Result<Vec<RuleRecord>, StoreError> {
    let rows: Vec<RuleRow> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM rule WHERE selector_id = $1 ORDER BY sort, id"
    ))
    .bind(selector_id)
    .fetch_all(conn)
    .await?;
    records(rows)
}

impl Store {
    /// All rules, ordered by sort, then id.
    pub(crate) async fn rules(&self) -> Result<Vec<RuleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.rules()),
            Backend::Sql { pool, .. } => pool,
        };
        let rows: Vec<RuleRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM rule ORDER BY sort, id"
        ))
        .fetch_all(pool)
        .await?;
        records(rows)
    }

    /// The rules of selector `selector_id`, ordered by sort, then id.
    pub(crate) async fn selector_rules(
        &self,
        selector_id: &str,
    ) -> Result<Vec<RuleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.selector_rules(selector_id)),
            Backend::Sql { pool, .. } => pool,
        };
        let mut conn = pool.acquire().await?;
        rules_of(&mut conn, selector_id).await
    }

    /// One rule.
    pub(crate) async fn rule(&self, id: &str) -> Result<Option<RuleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.rule(id)),
            Backend::Sql { pool, .. } => pool,
        };
        let row: Option<RuleRow> =
            sqlx::query_as(concat!("SELECT ", columns!(), " FROM rule WHERE id = $1"))
                .bind(id)
                .fetch_optional(pool)
                .await?;
        row.map(RuleRecord::try_from).transpose()
    }

    /// The first rule (by sort, then id) of selector `selector_id` named `name`, found through
    /// the `rule (selector_id, name)` index.
    pub(crate) async fn rule_named(
        &self,
        selector_id: &str,
        name: &str,
    ) -> Result<Option<RuleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.rule_named(selector_id, name)),
            Backend::Sql { pool, .. } => pool,
        };
        let row: Option<RuleRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM rule WHERE selector_id = $1 AND name = $2 ORDER BY sort, id LIMIT 1"
        ))
        .bind(selector_id)
        .bind(name)
        .fetch_optional(pool)
        .await?;
        row.map(RuleRecord::try_from).transpose()
    }

    /// Inserts a rule, or replaces the one with the same id (keeping its creation date).
    pub(crate) async fn put_rule(&self, r: &RuleRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_rule(r),
            Backend::Sql { pool, .. } => pool,
        };
        let mut conn = pool.acquire().await?;
        put_rule(&mut conn, r).await
    }

    /// Deletes rules in one transaction; returns what was deleted (unknown ids are skipped).
    pub(crate) async fn delete_rules(&self, ids: &[String]) -> Result<Vec<RuleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.delete_rules(ids)),
            Backend::Sql { pool, .. } => pool,
        };
        let deleted = delete_by_id(
            pool,
            concat!("DELETE FROM rule WHERE id = $1 RETURNING ", columns!()),
            ids,
            Unknown::Skip,
            <RuleRecord as TryFrom<RuleRow>>::try_from,
        )
        .await?;
        // Skipping never refuses.
        Ok(deleted.unwrap_or_default())
    }

    /// Sets `enabled` on the given rules and returns them updated: all or none.
    pub(crate) async fn set_rules_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Result<Batch<RuleRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.set_rules_enabled(ids, enabled, now)),
            Backend::Sql { pool, .. } => pool,
        };
        set_enabled(
            pool,
            concat!(
                "UPDATE rule SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ",
                columns!()
            ),
            ids,
            enabled,
            now,
            <RuleRecord as TryFrom<RuleRow>>::try_from,
        )
        .await
    }
}

/// Inserts RuleRecord `r`, or replaces the one with the same id (keeping its creation date),
/// on `conn` (a pooled connection or a transaction).
pub(super) async fn put_rule(conn: &mut AnyConnection, r: &RuleRecord) -> Result<(), StoreError> {
    sqlx::query(concat!(
        "INSERT INTO rule (",
        columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (id) DO UPDATE SET selector_id = excluded.selector_id, \
         name = excluded.name, match_mode = excluded.match_mode, sort = excluded.sort, \
         enabled = excluded.enabled, loged = excluded.loged, \
         match_restful = excluded.match_restful, handle = excluded.handle, \
         conditions = excluded.conditions, date_updated = excluded.date_updated"
    ))
    .bind(&r.id)
    .bind(&r.selector_id)
    .bind(&r.name)
    .bind(r.match_mode)
    .bind(r.sort)
    .bind(Flag(r.enabled))
    .bind(Flag(r.loged))
    .bind(Flag(r.match_restful))
    .bind(&r.handle)
    .bind(list_json(&r.conditions))
    .bind(&r.date_created)
    .bind(&r.date_updated)
    .execute(conn)
    .await?;
    Ok(())
}
