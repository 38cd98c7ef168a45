//! Storage: one query layer for SQLite and PostgreSQL.
//!
//! [`Store`] reaches either database through sqlx's `Any` driver, so every statement is
//! written once: `$1, $2, …` placeholders (SQLite reads them as numbered parameters),
//! `INSERT … ON CONFLICT … DO UPDATE SET … = excluded.…` for upserts, `RETURNING` for batch
//! results. The schema is one set of portable migrations in `admin/migrations`.
//!
//! Each file below holds one kind of record and every query on it; `database` holds the pool,
//! the migration and the shared helpers.

mod app_auths;
mod database;
mod error;
mod meta;
mod plugin_handles;
mod plugins;
mod rules;
mod selectors;
#[cfg(test)]
mod tests;
mod users;

pub(crate) use app_auths::AppAuthRecord;
pub(crate) use database::{Store, open};
pub use error::StoreError;
pub(crate) use meta::MetaRecord;
pub(crate) use plugin_handles::{PluginHandleRecord, data_type, handle_type};
pub(crate) use plugins::PluginRecord;
pub(crate) use rules::RuleRecord;
pub(crate) use selectors::SelectorRecord;
pub(crate) use users::UserRecord;

/// The outcome of a batch change: the changed records, or the first unknown id (in which
/// case nothing changed).
pub(crate) type Batch<T> = Result<Vec<T>, String>;
