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
}
