//! [`StoreError`]: why a storage call failed.

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database answered with an error.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema migration failed. A database made by a gantry-admin older than the single
    /// schema for SQLite and PostgreSQL cannot be migrated: start from a fresh one.
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

impl StoreError {
    /// Whether the database refused a write because it would duplicate a unique key (for
    /// example a second handle definition with the same plugin, field and type).
    pub(crate) fn is_unique_violation(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Database(e)) => e.is_unique_violation(),
            _ => false,
        }
    }

    /// Whether the database refused a write because its disk is full: SQLite's `SQLITE_FULL`
    /// (primary code 13, "database or disk is full") or PostgreSQL's `disk_full` (SQLSTATE
    /// 53100). The write was rolled back: nothing of it is stored.
    pub(crate) fn is_disk_full(&self) -> bool {
        let StoreError::Database(sqlx::Error::Database(e)) = self else {
            return false;
        };
        e.code().is_some_and(|code| disk_full_code(&code))
    }

    /// Whether the database could not be reached: the connection broke (an I/O error, a
    /// protocol error from a cut stream), or no connection came within the pool's timeout.
    /// The statement did not commit: the write was refused whole.
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Database(
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_)
            )
        )
    }
}

/// Whether a database error code means a full disk (see [`StoreError::is_disk_full`]).
fn disk_full_code(code: &str) -> bool {
    const SQLITE_FULL: i32 = 13;
    const POSTGRES_DISK_FULL: &str = "53100";
    code == POSTGRES_DISK_FULL || code.parse::<i32>().is_ok_and(|c| c & 0xff == SQLITE_FULL)
}

#[cfg(test)]
mod tests {
    use super::disk_full_code;

    #[test]
    fn sqlite_full_and_postgres_disk_full_are_a_full_disk_and_nothing_else() {
        assert!(disk_full_code("13"), "SQLITE_FULL");
        assert!(disk_full_code("53100"), "PostgreSQL disk_full");
        assert!(!disk_full_code("2067"), "SQLITE_CONSTRAINT_UNIQUE");
        assert!(!disk_full_code("23505"), "PostgreSQL unique_violation");
        assert!(!disk_full_code("778"), "SQLITE_IOERR_WRITE");
    }
}
