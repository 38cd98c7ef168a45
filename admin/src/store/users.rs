//! Dashboard users (ShenYu's `dashboard_user` table): [`UserRecord`] and its queries.

use std::fmt;

use sqlx::AnyPool;

use super::database::{Backend, Flag};
use super::{Store, StoreError};

/// A stored dashboard user.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct UserRecord {
    pub(crate) id: String,
    pub(crate) user_name: String,
    /// An Argon2 PHC hash of the password, never the password itself.
    pub(crate) password: String,
    /// 1: administrator.
    pub(crate) role: i32,
    #[sqlx(try_from = "Flag")]
    pub(crate) enabled: bool,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

impl fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserRecord")
            .field("id", &self.id)
            .field("user_name", &self.user_name)
            .field("role", &self.role)
            .field("enabled", &self.enabled)
            .field("date_created", &self.date_created)
            .field("date_updated", &self.date_updated)
            .finish_non_exhaustive()
    }
}

/// The columns of a [`UserRecord`], for `SELECT` and `INSERT` lists.
macro_rules! columns {
    () => {
        "id, user_name, password, role, enabled, date_created, date_updated"
    };
}

impl Store {
    /// All users, ordered by name.
    pub(crate) async fn users(&self) -> Result<Vec<UserRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.users()),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM dashboard_user ORDER BY user_name"
        ))
        .fetch_all(pool)
        .await?)
    }

    /// The user called `user_name` (names are unique).
    pub(crate) async fn user_named(
        &self,
        user_name: &str,
    ) -> Result<Option<UserRecord>, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.user_named(user_name)),
            Backend::Sql { pool, .. } => pool,
        };
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM dashboard_user WHERE user_name = $1"
        ))
        .bind(user_name)
        .fetch_optional(pool)
        .await?)
    }

    /// Inserts `user` unless a user with its name (or id) exists; `true` if it was inserted.
    pub(crate) async fn insert_user_if_absent(
        &self,
        user: &UserRecord,
    ) -> Result<bool, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.insert_user_if_absent(user)),
            Backend::Sql { pool, .. } => pool,
        };
        let inserted = write_user(
            pool,
            concat!(
                "INSERT INTO dashboard_user (",
                columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING"
            ),
            user,
        )
        .await?;
        Ok(inserted == 1)
    }

    /// Inserts `user`, or, when a user with its name exists, replaces that user's password
    /// hash (and update date) only: its id, role and `enabled` stay.
    pub(crate) async fn put_user_password(&self, user: &UserRecord) -> Result<(), StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return memory.put_user_password(user),
            Backend::Sql { pool, .. } => pool,
        };
        write_user(
            pool,
            concat!(
                "INSERT INTO dashboard_user (",
                columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_name) DO UPDATE SET \
                 password = excluded.password, date_updated = excluded.date_updated"
            ),
            user,
        )
        .await?;
        Ok(())
    }

    /// Enables or disables user `user_name`; `false` if there is no such user.
    #[allow(dead_code, reason = "for user management endpoints; tested with login")]
    pub(crate) async fn set_user_enabled(
        &self,
        user_name: &str,
        enabled: bool,
        now: &str,
    ) -> Result<bool, StoreError> {
        let pool = match &self.backend {
            Backend::Memory(memory) => return Ok(memory.set_user_enabled(user_name, enabled, now)),
            Backend::Sql { pool, .. } => pool,
        };
        let done = sqlx::query(
            "UPDATE dashboard_user SET enabled = $1, date_updated = $2 WHERE user_name = $3",
        )
        .bind(Flag(enabled))
        .bind(now)
        .bind(user_name)
        .execute(pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

/// Runs `insert` (an `INSERT INTO dashboard_user (columns) VALUES ($1, …, $7) …`) with `user`'s
/// fields on `pool`; answers the rows affected.
async fn write_user(
    pool: &AnyPool,
    insert: &'static str,
    user: &UserRecord,
) -> Result<u64, StoreError> {
    let done = sqlx::query(insert)
        .bind(&user.id)
        .bind(&user.user_name)
        .bind(&user.password)
        .bind(user.role)
        .bind(Flag(user.enabled))
        .bind(&user.date_created)
        .bind(&user.date_updated)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}
