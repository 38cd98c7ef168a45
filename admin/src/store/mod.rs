//! Storage: one query layer for SQLite and PostgreSQL.
//!
//! [`Store`] reaches either database through sqlx's `Any` driver, so every statement is
//! written once: `$1, $2, …` placeholders (SQLite reads them as numbered parameters),
//! `INSERT … ON CONFLICT … DO UPDATE SET … = excluded.…` for upserts, `RETURNING` for batch
//! results. The schema is one set of portable migrations in `admin/migrations`.
//!
//! Each file below holds one kind of record and every query on it; `database` holds the pool,
//! the migration and the shared helpers; `changes` notices commits other processes make.
//!
//! [`Store::memory`] keeps the same records in this process's memory instead (`memory`), for
//! deterministic simulation; every method answers as it does on SQLite.

mod app_auths;
mod changes;
mod database;
mod error;
mod memory;
mod meta;
mod plugin_handles;
mod plugins;
mod rules;
mod selectors;
#[cfg(test)]
pub(crate) mod tests;
mod users;

pub(crate) use app_auths::AppAuthRecord;
use database::Backend;
pub(crate) use database::{Location, Store, open};
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

impl Store {
    /// Writes what one client registration creates, in one transaction: all of it or none.
    pub(crate) async fn put_registration(
        &self,
        selectors: &[SelectorRecord],
        rules: &[RuleRecord],
        meta: Option<&MetaRecord>,
    ) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_registration(selectors, rules, meta),
            Backend::Sql { pool, .. } => pool,
        };
        let mut tx = pool.begin().await?;
        for s in selectors {
            selectors::put_selector(&mut tx, s).await?;
        }
        for r in rules {
            rules::put_rule(&mut tx, r).await?;
        }
        if let Some(m) = meta {
            meta::put_meta(&mut tx, m).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
