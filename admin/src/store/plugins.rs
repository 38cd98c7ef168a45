//! Plugins: [`PluginRecord`] and its queries.

use model::BuiltinPlugin;

use super::database::{Backend, Flag, set_enabled};
use super::plugin_handles::{BUILTIN_HANDLES, seed_handle};
use super::rules::rules_of;
use super::selectors::selectors_of;
use super::{Batch, RuleRecord, SelectorRecord, Store, StoreError};

/// What deleting plugins removed: the plugins, their selectors and those selectors' rules.
pub(crate) type DeletedPlugins = (Vec<PluginRecord>, Vec<SelectorRecord>, Vec<RuleRecord>);

/// A stored plugin.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct PluginRecord {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) role: String,
    pub(crate) sort: i32,
    #[sqlx(try_from = "Flag")]
    pub(crate) enabled: bool,
    pub(crate) config: Option<String>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// The columns of a [`PluginRecord`], for `SELECT` and `RETURNING` lists.
macro_rules! columns {
    () => {
        "id, name, role, sort, enabled, config, date_created, date_updated"
    };
}

impl Store {
    /// Inserts the built-in plugins that are absent, and the handle definitions
    /// ([`BUILTIN_HANDLES`]) of those plugins that are absent; existing rows are left alone.
    pub(crate) async fn seed_plugins(
        &self,
        plugins: &[BuiltinPlugin],
        now: &str,
    ) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.seed_plugins(plugins, now),
            Backend::Sql { pool, .. } => pool,
        };
        let mut tx = pool.begin().await?;
        for p in plugins {
            sqlx::query(
                "INSERT INTO plugin (id, name, role, sort, enabled, config, date_created, \
                 date_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING",
            )
            .bind(p.id)
            .bind(p.name)
            .bind(p.role)
            .bind(p.sort)
            .bind(Flag(p.enabled))
            .bind(p.config)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        for handle in BUILTIN_HANDLES {
            if let Some(plugin) = plugins.iter().find(|p| p.name == handle.plugin) {
                seed_handle(&mut tx, plugin.id, handle, now).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// All plugins, ordered by sort, then id.
    pub(crate) async fn plugins(&self) -> Result<Vec<PluginRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.plugins()),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM plugin ORDER BY sort, id"
        ))
        .fetch_all(pool)
        .await?)
    }

    /// One plugin.
    pub(crate) async fn plugin(&self, id: &str) -> Result<Option<PluginRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.plugin(id)),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(
            sqlx::query_as(concat!("SELECT ", columns!(), " FROM plugin WHERE id = $1"))
                .bind(id)
                .fetch_optional(pool)
                .await?,
        )
    }

    /// The plugin named `name` (a unique, indexed column).
    pub(crate) async fn plugin_named(
        &self,
        name: &str,
    ) -> Result<Option<PluginRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.plugin_named(name)),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM plugin WHERE name = $1"
        ))
        .bind(name)
        .fetch_optional(pool)
        .await?)
    }

    /// Replaces plugin `plugin.id` (all but its creation date); `false` if it does not exist.
    pub(crate) async fn update_plugin(&self, p: &PluginRecord) -> Result<bool, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.update_plugin(p),
            Backend::Sql { pool, .. } => pool,
        };
        let done = sqlx::query(
            "UPDATE plugin SET name = $1, role = $2, sort = $3, enabled = $4, config = $5, \
             date_updated = $6 WHERE id = $7",
        )
        .bind(&p.name)
        .bind(&p.role)
        .bind(p.sort)
        .bind(Flag(p.enabled))
        .bind(&p.config)
        .bind(&p.date_updated)
        .bind(&p.id)
        .execute(pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Inserts a new plugin.
    pub(crate) async fn insert_plugin(&self, p: &PluginRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.insert_plugin(p),
            Backend::Sql { pool, .. } => pool,
        };
        sqlx::query(concat!(
            "INSERT INTO plugin (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&p.id)
        .bind(&p.name)
        .bind(&p.role)
        .bind(p.sort)
        .bind(Flag(p.enabled))
        .bind(&p.config)
        .bind(&p.date_created)
        .bind(&p.date_updated)
        .execute(pool)
        .await?;
        Ok(())
    }

    /// Deletes plugins in one transaction, with their selectors, rules and handle definitions
    /// (ON DELETE CASCADE), and returns what went: all or none (an unknown id deletes nothing
    /// and comes back as `Err(id)`).
    pub(crate) async fn delete_plugins(
        &self,
        ids: &[String],
    ) -> Result<Result<DeletedPlugins, String>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.delete_plugins(ids)),
            Backend::Sql { pool, .. } => pool,
        };
        let mut tx = pool.begin().await?;
        let (mut plugins, mut selectors, mut rules) = (Vec::new(), Vec::new(), Vec::new());
        for id in ids {
            let owned = selectors_of(&mut tx, id).await?;
            for selector in &owned {
                rules.extend(rules_of(&mut tx, &selector.id).await?);
            }
            let row: Option<PluginRecord> = sqlx::query_as(concat!(
                "DELETE FROM plugin WHERE id = $1 RETURNING ",
                columns!()
            ))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(plugin) = row else {
                tx.rollback().await?;
                return Ok(Err(id.clone()));
            };
            plugins.push(plugin);
            selectors.extend(owned);
        }
        tx.commit().await?;
        Ok(Ok((plugins, selectors, rules)))
    }

    /// Sets `enabled` on the given plugins and returns them updated: all or none.
    pub(crate) async fn set_plugins_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Result<Batch<PluginRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.set_plugins_enabled(ids, enabled, now)),
            Backend::Sql { pool, .. } => pool,
        };
        set_enabled(
            pool,
            concat!(
                "UPDATE plugin SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ",
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
