//! Storage: the [`Store`] trait the admin writes through, its records and [`StoreError`].
//!
//! Every backend implements the same trait, so the service code above it does not change when
//! a backend is added (SQLite now, PostgreSQL later).

mod sqlite;

use std::fmt;

use futures_util::future::BoxFuture;
use model::{AppAuthData, BuiltinPlugin, ConditionData, MetaData};

pub(crate) use sqlite::SqliteStore;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database answered with an error.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema migration failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored value could not be read back.
    #[error("corrupt stored {what} `{id}`: {reason}")]
    Corrupt {
        /// The kind of record.
        what: &'static str,
        /// The record id.
        id: String,
        /// What is wrong.
        reason: String,
    },
}

/// A stored plugin.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct PluginRecord {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) role: String,
    pub(crate) sort: i32,
    pub(crate) enabled: bool,
    pub(crate) config: Option<String>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

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

/// Result of a store call.
pub(crate) type StoreResult<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// What the admin needs from a database. Lists come ordered by `sort`, then `id`.
pub(crate) trait Store: Send + Sync + fmt::Debug {
    /// Inserts the built-in plugins that are absent; existing rows are left alone.
    fn seed_plugins<'a>(
        &'a self,
        plugins: &'a [BuiltinPlugin],
        now: &'a str,
    ) -> StoreResult<'a, ()>;
    /// All plugins.
    fn plugins(&self) -> StoreResult<'_, Vec<PluginRecord>>;
    /// One plugin.
    fn plugin<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<PluginRecord>>;
    /// Sets `enabled` on the given plugins (all must exist) and returns them updated, or
    /// `Err(id)` naming the first unknown id, in which case nothing changed.
    fn set_plugins_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Result<Vec<PluginRecord>, String>>;
    /// All selectors.
    fn selectors(&self) -> StoreResult<'_, Vec<SelectorRecord>>;
    /// One selector.
    fn selector<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<SelectorRecord>>;
    /// Inserts a selector, or replaces the one with the same id.
    fn put_selector<'a>(&'a self, selector: &'a SelectorRecord) -> StoreResult<'a, ()>;
    /// Deletes selectors and their rules in one transaction; returns what was deleted.
    fn delete_selectors<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreResult<'a, (Vec<SelectorRecord>, Vec<RuleRecord>)>;
    /// All rules.
    fn rules(&self) -> StoreResult<'_, Vec<RuleRecord>>;
    /// One rule.
    fn rule<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<RuleRecord>>;
    /// Inserts a rule, or replaces the one with the same id.
    fn put_rule<'a>(&'a self, rule: &'a RuleRecord) -> StoreResult<'a, ()>;
    /// Deletes rules in one transaction; returns what was deleted.
    fn delete_rules<'a>(&'a self, ids: &'a [String]) -> StoreResult<'a, Vec<RuleRecord>>;
    /// All metadata.
    fn meta_data(&self) -> StoreResult<'_, Vec<MetaData>>;
    /// All app auth entries.
    fn app_auth(&self) -> StoreResult<'_, Vec<AppAuthData>>;
}

/// Reads a stored condition list.
fn parse_conditions(
    what: &'static str,
    id: &str,
    json: &str,
) -> Result<Vec<ConditionData>, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt {
        what,
        id: id.to_owned(),
        reason: e.to_string(),
    })
}

/// Writes a condition list for storage.
fn conditions_json(conditions: &[ConditionData]) -> String {
    serde_json::to_string(conditions).expect("conditions always serialise")
}
