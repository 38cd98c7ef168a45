//! [`ChangeFeed`]: noticing commits that other processes (another admin sharing the database)
//! make, so this admin can pass them on within a fraction of a second instead of at a periodic
//! refresh.
//!
//! - SQLite: `PRAGMA data_version`, read on a connection of the feed's own, changes whenever
//!   any other connection (in this process or another) commits; the feed reads it every
//!   `poll`.
//! - PostgreSQL: statement triggers on the synced tables call `pg_notify` ([`CHANNEL`]), which
//!   PostgreSQL delivers at commit to every `LISTEN`ing session; the feed listens on a
//!   connection of its own. A lost connection is reported as a change, since notifications
//!   sent while it was down are gone.
//!
//! - In memory ([`Store::memory`]): no feed. Only this process writes the tables, so there
//!   are no foreign commits to notice.
//!
//! Both see this admin's own commits too; the caller compares what the database holds with
//! what it has published, so those cost a read and publish nothing.

use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{AnyPool, ConnectOptions};
use tokio::time::Instant;

use super::database::with_statement_logging;
use super::{Location, Store, StoreError};

/// The PostgreSQL channel the triggers notify.
pub(crate) const CHANNEL: &str = "gantry_config";

/// The tables whose rows gateways receive.
const SYNCED_TABLES: [&str; 5] = ["plugin", "selector", "rule", "meta_data", "app_auth"];

/// Installs (or replaces) the notify function and one statement trigger per synced table.
/// Serialised by a transaction-scoped advisory lock, so admins starting together do not
/// replace the function under each other.
pub(super) async fn install_notify_triggers(pool: &AnyPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(7164250387)")
        .execute(&mut *tx)
        .await?;
    // Built from constants only.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE OR REPLACE FUNCTION gantry_notify_change() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_notify('{CHANNEL}', TG_TABLE_NAME); RETURN NULL; END $$"
    )))
    .execute(&mut *tx)
    .await?;
    for table in SYNCED_TABLES {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE OR REPLACE TRIGGER gantry_notify_change AFTER INSERT OR UPDATE OR DELETE \
             OR TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION gantry_notify_change()"
        )))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Tells when the database may have changed.
#[derive(Debug)]
pub(crate) enum ChangeFeed {
    /// A SQLite file, polled.
    Sqlite {
        /// The feed's own connection (`data_version` is per connection).
        connection: SqliteConnection,
        /// The version last seen.
        version: i64,
        /// How often to read it.
        poll: Duration,
    },
    /// A PostgreSQL server, listened to.
    Postgres(Box<PgListener>),
}

impl Store {
    /// A feed of this database's commits, reading SQLite every `poll`; `None` for an
    /// in-memory database (SQLite's `:memory:` or [`Store::memory`]), which nothing else can
    /// change.
    pub(crate) async fn change_feed(
        &self,
        poll: Duration,
    ) -> Result<Option<ChangeFeed>, StoreError> {
        let Some(location) = self.sql_location() else {
            return Ok(None);
        };
        Ok(Some(match location {
            Location::SqliteMemory => return Ok(None),
            Location::SqliteFile(path) => {
                let mut connection =
                    with_statement_logging(SqliteConnectOptions::new().filename(path))
                        .connect()
                        .await?;
                let version = data_version(&mut connection).await?;
                ChangeFeed::Sqlite {
                    connection,
                    version,
                    poll,
                }
            }
            Location::Postgres(url) => {
                let mut listener = PgListener::connect(url).await?;
                listener.listen(CHANNEL).await?;
                ChangeFeed::Postgres(Box::new(listener))
            }
        }))
    }
}

async fn data_version(connection: &mut SqliteConnection) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar("PRAGMA data_version")
        .fetch_one(connection)
        .await?)
}

impl ChangeFeed {
    /// Completes once something may have changed since the last call (or since the feed was
    /// made), or at `deadline`. Notifications that arrived together count once.
    pub(crate) async fn changed(&mut self, deadline: Instant) -> Result<(), StoreError> {
        match self {
            ChangeFeed::Sqlite {
                connection,
                version,
                poll,
            } => {
                // Never cancelled inside a query: the deadline is checked between reads.
                while Instant::now() < deadline {
                    tokio::time::sleep_until(deadline.min(Instant::now() + *poll)).await;
                    let now = data_version(connection).await?;
                    if now != *version {
                        *version = now;
                        break;
                    }
                }
                Ok(())
            }
            ChangeFeed::Postgres(listener) => {
                match tokio::time::timeout_at(deadline, listener.try_recv()).await {
                    Err(_) | Ok(Ok(Some(_))) => {}
                    Ok(Ok(None)) => tracing::warn!(
                        "lost the database's change notifications; reconnecting (changes made \
                         meanwhile are read now)"
                    ),
                    Ok(Err(e)) => return Err(e.into()),
                }
                while listener.next_buffered().is_some() {}
                Ok(())
            }
        }
    }
}
