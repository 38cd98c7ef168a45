//! Storage: the [`Store`] trait the admin writes through, its records and [`StoreError`].
//!
//! Every backend implements the same trait, so the service code above it does not change when
//! a backend is added (SQLite and PostgreSQL).

mod postgres;
mod rows;
mod sqlite;

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use model::{AuthParamData, AuthPathData, BuiltinPlugin, ConditionData};

pub(crate) use postgres::PostgresStore;
pub(crate) use sqlite::SqliteStore;

/// Opens the database `db`: PostgreSQL for a `postgres://` or `postgresql://` URL, SQLite
/// otherwise (a file path or `:memory:`).
pub(crate) async fn open(db: &str) -> Result<Arc<dyn Store>, StoreError> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        Ok(Arc::new(PostgresStore::open(db).await?))
    } else {
        Ok(Arc::new(SqliteStore::open(db).await?))
    }
}

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
    pub(crate) enabled: bool,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

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

/// The outcome of a batch update: the updated records, or the first unknown id (in which
/// case nothing changed).
pub(crate) type Batch<T> = Result<Vec<T>, String>;

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
    /// Replaces plugin `plugin.id` (all but its creation date); `false` if it does not exist.
    fn update_plugin<'a>(&'a self, plugin: &'a PluginRecord) -> StoreResult<'a, bool>;
    /// Sets `enabled` on the given selectors, all or none.
    fn set_selectors_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<SelectorRecord>>;
    /// Sets `enabled` on the given rules, all or none.
    fn set_rules_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<RuleRecord>>;
    /// All metadata, ordered by id.
    fn meta_data(&self) -> StoreResult<'_, Vec<MetaRecord>>;
    /// One metadata entry.
    fn meta<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<MetaRecord>>;
    /// Inserts metadata, or replaces the entry with the same id.
    fn put_meta<'a>(&'a self, meta: &'a MetaRecord) -> StoreResult<'a, ()>;
    /// Deletes metadata in one transaction; returns what was deleted.
    fn delete_meta<'a>(&'a self, ids: &'a [String]) -> StoreResult<'a, Vec<MetaRecord>>;
    /// Sets `enabled` on the given metadata, all or none.
    fn set_meta_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<MetaRecord>>;
    /// All app auth entries, ordered by app key.
    fn app_auths(&self) -> StoreResult<'_, Vec<AppAuthRecord>>;
    /// One app auth entry.
    fn app_auth<'a>(&'a self, id: &'a str) -> StoreResult<'a, Option<AppAuthRecord>>;
    /// Inserts an app auth entry, or replaces the one with the same id.
    fn put_app_auth<'a>(&'a self, auth: &'a AppAuthRecord) -> StoreResult<'a, ()>;
    /// Deletes app auth entries in one transaction; returns what was deleted.
    fn delete_app_auths<'a>(&'a self, ids: &'a [String]) -> StoreResult<'a, Vec<AppAuthRecord>>;
    /// Sets `enabled` on the given app auth entries, all or none.
    fn set_app_auths_enabled<'a>(
        &'a self,
        ids: &'a [String],
        enabled: bool,
        now: &'a str,
    ) -> StoreResult<'a, Batch<AppAuthRecord>>;
}

/// Reads a stored JSON list (conditions, auth params or paths).
fn parse_list<T: serde::de::DeserializeOwned>(
    what: &'static str,
    id: &str,
    json: &str,
) -> Result<Vec<T>, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt {
        what,
        id: id.to_owned(),
        reason: e.to_string(),
    })
}

/// Writes a list (conditions, auth params or paths) for storage.
fn list_json<T: serde::Serialize>(items: &[T]) -> String {
    serde_json::to_string(items).expect("model lists always serialise")
}
