//! [`Store`]: the connection pool (SQLite or PostgreSQL behind sqlx's `Any` driver) or the
//! in-memory tables ([`super::memory`]), the schema migration, and the helpers the query files
//! share.

use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyArguments, AnyConnectOptions, AnyPoolOptions, AnyRow, AnyTypeInfo};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::query::QueryAs;
use sqlx::{Any, AnyPool, ConnectOptions, Decode, Encode, FromRow, Type};

use super::memory::Memory;
use super::{Batch, StoreError};

/// The admin's database: SQLite (a file or `:memory:`) or PostgreSQL, through one set of
/// queries, or tables in this process's memory for deterministic simulation
/// ([`Store::memory`]). Each `store/*.rs` file holds the queries for one kind of record; each
/// method makes one `match` on the [`Backend`]. Clones share the database.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub(super) backend: Backend,
}

/// What a [`Store`] keeps its records in.
#[derive(Debug, Clone)]
pub(super) enum Backend {
    /// SQLite or PostgreSQL.
    Sql {
        /// The connection pool.
        pool: AnyPool,
        /// Where the database is, for the connections beside the pool ([`super::changes`]).
        location: Location,
    },
    /// Tables in this process's memory ([`super::memory`]).
    Memory(Arc<Memory>),
}

/// Which database a [`Store`] opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A PostgreSQL server, by URL.
    Postgres(String),
    /// A SQLite file, by path.
    SqliteFile(String),
    /// A private in-memory SQLite database: no other process can reach it.
    SqliteMemory,
}

impl Store {
    /// Where the SQL database is (for the connections beside the pool, [`super::changes`]);
    /// `None` for tables in memory.
    pub(super) fn sql_location(&self) -> Option<&Location> {
        match &self.backend {
            Backend::Sql { location, .. } => Some(location),
            Backend::Memory(_) => None,
        }
    }

    /// Opens the database `db` and migrates it: PostgreSQL for a `postgres://` or
    /// `postgresql://` URL; otherwise a SQLite file (created if missing), or a private
    /// in-memory SQLite database for `:memory:`.
    pub(crate) async fn open(db: &str) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let location = if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            Location::Postgres(db.to_owned())
        } else if db == ":memory:" {
            Location::SqliteMemory
        } else {
            Location::SqliteFile(db.to_owned())
        };
        let pool = if let Location::Postgres(url) = &location {
            AnyPoolOptions::new()
                .max_connections(8)
                .connect_with(with_statement_logging(url.parse::<AnyConnectOptions>()?))
                .await?
        } else if location == Location::SqliteMemory {
            // One connection that never closes: every query sees the same in-memory database.
            AnyPoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(with_statement_logging(
                    "sqlite::memory:".parse::<AnyConnectOptions>()?,
                ))
                .await?
        } else {
            // Every connection opened up front (three descriptors each: the file, its WAL
            // and its shared memory): a pool that grew lazily under a later burst read as a
            // leak of descriptors under `--run-mode leak`.
            let pool = AnyPoolOptions::new()
                .max_connections(4)
                .min_connections(4)
                .connect_with(with_statement_logging(
                    sqlite_file_url(db).parse::<AnyConnectOptions>()?,
                ))
                .await?;
            // WAL lets readers run beside the writer; the mode is stored in the file, so once
            // is enough.
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&pool)
                .await?;
            pool
        };
        sqlx::migrate!("./migrations").run(&pool).await?;
        if matches!(location, Location::Postgres(_)) {
            super::changes::install_notify_triggers(&pool).await?;
        }
        Ok(Self {
            backend: Backend::Sql { pool, location },
        })
    }

    /// An empty store kept in this process's memory, as [`Store::open`] leaves a fresh
    /// database (migrated, nothing seeded), for deterministic simulation: no threads, no
    /// clock, no I/O. Its clones, and every `Arc` holding it, share the one set of tables,
    /// which lives as long as any of them; see [`super::memory`] for what it does not do.
    pub(crate) fn memory() -> Self {
        Self {
            backend: Backend::Memory(Arc::default()),
        }
    }

    /// Closes the connection pool (nothing to do in memory).
    #[cfg(test)]
    pub(super) async fn close(&self) {
        if let Backend::Sql { pool, .. } = &self.backend {
            pool.close().await;
        }
    }
}

/// Opens the database `db` (see [`Store::open`]).
pub(crate) async fn open(db: &str) -> Result<Arc<Store>, StoreError> {
    Ok(Arc::new(Store::open(db).await?))
}

/// How long a statement runs before sqlx logs it as slow.
const SLOW_STATEMENT: Duration = Duration::from_secs(1);

/// `options` with sqlx's slow-statement line at INFO instead of its default WARN: a SQLite
/// commit waits on the disk, and on a loaded two-core machine (a build beside the run) it
/// takes 1–3 s; that is the machine, not an admin fault, and a WARN there failed the cases'
/// log check (docs/scenarios.md "Log assertions"). The line is still written, at INFO, with
/// the statement and its time.
pub(super) fn with_statement_logging<O: ConnectOptions>(options: O) -> O {
    options.log_slow_statements(log::LevelFilter::Info, SLOW_STATEMENT)
}

/// The `Any` URL of the SQLite file at `path`, created if missing. Every byte but
/// `[A-Za-z0-9._~-]` is percent-encoded (`/` too), so the URL keeps an opaque path that the
/// URL parser never normalises (no `..` folding) and sqlx decodes back to `path` exactly.
fn sqlite_file_url(path: &str) -> String {
    let mut url = String::from("sqlite:");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'~' | b'-') {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url.push_str("?mode=rwc");
    url
}

/// A boolean column. Booleans are stored as INTEGER 0/1 on every database, because sqlx's
/// `Any` driver cannot read SQLite's BOOLEAN columns; bind and read them through this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Flag(pub(super) bool);

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0
    }
}

impl Type<Any> for Flag {
    fn type_info() -> AnyTypeInfo {
        <i32 as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <i32 as Type<Any>>::compatible(ty)
    }
}

impl Encode<'_, Any> for Flag {
    fn encode_by_ref(
        &self,
        buf: &mut <Any as sqlx::Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        <i32 as Encode<'_, Any>>::encode(i32::from(self.0), buf)
    }
}

impl<'r> Decode<'r, Any> for Flag {
    fn decode(value: <Any as sqlx::Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Flag(<i64 as Decode<'r, Any>>::decode(value)? != 0))
    }
}

/// Reads a stored JSON list (conditions, auth params or paths).
pub(super) fn parse_list<T: serde::de::DeserializeOwned>(
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
pub(super) fn list_json<T: serde::Serialize>(items: &[T]) -> String {
    serde_json::to_string(items).expect("model lists always serialise")
}

/// Converts fetched rows into records.
pub(super) fn records<R, T>(rows: Vec<R>) -> Result<Vec<T>, StoreError>
where
    T: TryFrom<R, Error = StoreError>,
{
    rows.into_iter().map(T::try_from).collect()
}

/// What a batch does with an id that matches no row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unknown {
    /// Skip it.
    Skip,
    /// Roll everything back and name it.
    Refuse,
}

/// Runs `update` (`UPDATE .. SET enabled = $1, date_updated = $2 WHERE id = $3 RETURNING ..`)
/// for every id in one transaction, all or none, and returns the rows through `convert`.
pub(super) async fn set_enabled<R, T>(
    pool: &AnyPool,
    update: &'static str,
    ids: &[String],
    enabled: bool,
    now: &str,
    convert: fn(R) -> Result<T, StoreError>,
) -> Result<Batch<T>, StoreError>
where
    R: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let query = |id| {
        sqlx::query_as(update)
            .bind(Flag(enabled))
            .bind(now)
            .bind(id)
    };
    each_id(pool, ids, Unknown::Refuse, query, convert).await
}

/// Runs `delete` (`DELETE .. WHERE id = $1 RETURNING ..`) for every id in one transaction and
/// returns the rows through `convert`.
pub(super) async fn delete_by_id<R, T>(
    pool: &AnyPool,
    delete: &'static str,
    ids: &[String],
    unknown: Unknown,
    convert: fn(R) -> Result<T, StoreError>,
) -> Result<Batch<T>, StoreError>
where
    R: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let query = |id| sqlx::query_as(delete).bind(id);
    each_id(pool, ids, unknown, query, convert).await
}

/// Runs `statement(id)` for every id in one transaction and returns the rows it yields,
/// each through `convert`. With [`Unknown::Refuse`] an id that yields no row rolls the
/// transaction back and comes back as `Err(id)`.
async fn each_id<'q, R, T>(
    pool: &AnyPool,
    ids: &'q [String],
    unknown: Unknown,
    statement: impl Fn(&'q str) -> QueryAs<'q, Any, R, AnyArguments>,
    convert: fn(R) -> Result<T, StoreError>,
) -> Result<Batch<T>, StoreError>
where
    R: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let mut tx = pool.begin().await?;
    let mut done = Vec::new();
    for id in ids {
        match statement(id).fetch_optional(&mut *tx).await? {
            Some(row) => done.push(convert(row)?),
            None if unknown == Unknown::Skip => {}
            // Dropping the transaction rolls it back.
            None => return Ok(Err(id.clone())),
        }
    }
    tx.commit().await?;
    Ok(Ok(done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_statement_is_logged_at_info() {
        let options: AnyConnectOptions = "sqlite::memory:".parse().unwrap();
        assert_eq!(
            options.log_settings.slow_statements_level,
            log::LevelFilter::Warn,
            "sqlx's default, which this changes"
        );
        let options = with_statement_logging(options);
        assert_eq!(
            options.log_settings.slow_statements_level,
            log::LevelFilter::Info
        );
        assert_eq!(
            options.log_settings.slow_statements_duration,
            SLOW_STATEMENT
        );
    }

    #[test]
    fn sqlite_paths_become_opaque_urls() {
        assert_eq!(sqlite_file_url("admin.db"), "sqlite:admin.db?mode=rwc");
        let odd = sqlite_file_url("/tmp/a b/../x?y#z%.db");
        assert_eq!(odd, "sqlite:%2Ftmp%2Fa%20b%2F..%2Fx%3Fy%23z%25.db?mode=rwc");
        let parsed: AnyConnectOptions = odd.parse().unwrap();
        assert_eq!(
            parsed.database_url.as_str(),
            odd,
            "the URL parser leaves it alone"
        );
    }

    /// SQLite's `max_page_count` makes the database full as a full disk does (`SQLITE_FULL`,
    /// "database or disk is full"): the write is refused as a full disk, leaves nothing, and
    /// goes through once there is room again.
    #[tokio::test]
    async fn a_full_database_refuses_a_write_whole_and_takes_it_once_there_is_room() {
        let store = Store::open(":memory:").await.unwrap();
        let Backend::Sql { pool, .. } = &store.backend else {
            unreachable!("`:memory:` is SQLite")
        };
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(pool)
            .await
            .unwrap();
        let set_max = |max: i64| {
            let pragma = format!("PRAGMA max_page_count = {max}");
            sqlx::query(sqlx::AssertSqlSafe(pragma)).execute(pool)
        };
        set_max(pages).await.unwrap();
        let now = "2026-01-01 00:00:00";
        let full = store.seed_plugins(model::BUILTIN_PLUGINS, now).await;
        let err = full.expect_err("no room for the plugins");
        assert!(err.is_disk_full(), "{err}");
        assert!(
            store.plugins().await.unwrap().is_empty(),
            "nothing half-written"
        );
        set_max(pages * 100).await.unwrap();
        store
            .seed_plugins(model::BUILTIN_PLUGINS, now)
            .await
            .unwrap();
        assert_eq!(
            store.plugins().await.unwrap().len(),
            model::BUILTIN_PLUGINS.len()
        );
    }

    #[tokio::test]
    async fn odd_file_paths_open_where_they_point() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a b")).unwrap();
        let path = dir.path().join("a b").join("..").join("x?#%.db");
        let store = Store::open(path.to_str().unwrap()).await.unwrap();
        store.close().await;
        assert!(dir.path().join("x?#%.db").is_file());
    }
}
