//! The tables behind [`Store::memory`](super::Store::memory): the admin's records kept in this
//! process's memory, for deterministic simulation (`gantry sim`). There the admin and the
//! gateways run on one thread under a network simulator, and sqlx's SQLite driver would run a
//! worker thread the simulator cannot schedule. SQLite and PostgreSQL remain the real stores;
//! `gantry-admin` never opens this one.
//!
//! Every method answers as its SQL twin does on SQLite:
//! - the same records, and lists in the same order: each is sorted by its query's
//!   `ORDER BY`, with text compared byte by byte as SQLite's BINARY collation compares it (a
//!   PostgreSQL server may sort text by its locale instead). Every query that returns a list
//!   has an `ORDER BY` ending in a unique column, so no order is left open;
//! - the same `None`, `false` or `Err(id)` for unknown ids, and the same handling of an id
//!   named twice in one batch (a second delete of it finds nothing);
//! - batches, seeding and registrations all or nothing: every check is made before the first
//!   change, or the change is made on a copy that replaces the tables only when it is whole;
//! - the schema's constraints (`admin/migrations`: primary keys, the UNIQUE columns, the
//!   foreign keys and their ON DELETE CASCADE): a write that breaks one is refused with the
//!   [`StoreError`] SQLite gives, the same kind
//!   ([`StoreError::is_unique_violation`]), extended code and message ([`Violation`]).
//!   Where one write breaks several, the one SQLite reports first is reported.
//!
//! What it does not do: keep anything past the [`Store`](super::Store) (a simulated admin
//! restart keeps the tables by keeping the `Arc<Store>`), share the tables with another
//! process (so [`Store::change_feed`](super::Store::change_feed) gives no feed: nothing else
//! commits), migrate, or fail the way a database can (a lost connection, a corrupt row). It
//! reads no clock, draws no random number, starts no thread and never waits: each method runs
//! to its end under one `std::sync::Mutex`, which is never held across an `.await`.

mod config;
mod records;
mod routes;

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use model::lock::MutexExt;
use sqlx::error::{DatabaseError, ErrorKind};

use super::{
    AppAuthRecord, Batch, MetaRecord, PluginHandleRecord, PluginRecord, RuleRecord, SelectorRecord,
    StoreError, UserRecord,
};

/// The tables of a [`Store::memory`](super::Store::memory), behind one lock.
#[derive(Debug, Default)]
pub(super) struct Memory {
    tables: Mutex<Tables>,
}

/// One map per table of the schema, each keyed by the row's primary key (`id`).
#[derive(Debug, Default)]
struct Tables {
    plugins: BTreeMap<String, PluginRecord>,
    plugin_handles: BTreeMap<String, PluginHandleRecord>,
    selectors: BTreeMap<String, SelectorRecord>,
    rules: BTreeMap<String, RuleRecord>,
    meta: BTreeMap<String, MetaRecord>,
    app_auths: BTreeMap<String, AppAuthRecord>,
    users: BTreeMap<String, UserRecord>,
}

impl Memory {
    /// The tables, locked under the workspace's lock policy.
    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.locked()
    }
}

/// A stored row: its primary key and its creation date, which an upsert keeps.
trait Row: Clone {
    /// The primary key.
    fn id(&self) -> &str;
    /// The creation date.
    fn created(&mut self) -> &mut String;
}

/// A row with an `enabled` flag, which the batch updates set.
trait Switch: Row {
    /// `SET enabled = $1, date_updated = $2`.
    fn switch(&mut self, enabled: bool, now: &str);
}

macro_rules! rows {
    ($($record:ty),*) => {$(
        impl Row for $record {
            fn id(&self) -> &str {
                &self.id
            }

            fn created(&mut self) -> &mut String {
                &mut self.date_created
            }
        }
    )*};
}

macro_rules! switches {
    ($($record:ty),*) => {$(
        impl Switch for $record {
            fn switch(&mut self, enabled: bool, now: &str) {
                self.enabled = enabled;
                now.clone_into(&mut self.date_updated);
            }
        }
    )*};
}

rows!(
    PluginRecord,
    PluginHandleRecord,
    SelectorRecord,
    RuleRecord,
    MetaRecord,
    AppAuthRecord
);
switches!(
    PluginRecord,
    SelectorRecord,
    RuleRecord,
    MetaRecord,
    AppAuthRecord
);

/// `rows` in `order` (a query's `ORDER BY`).
fn sorted<'a, T: Clone + 'a>(
    rows: impl Iterator<Item = &'a T>,
    order: impl Fn(&T, &T) -> Ordering,
) -> Vec<T> {
    let mut rows: Vec<T> = rows.cloned().collect();
    rows.sort_by(order);
    rows
}

/// The row of `table` that `matches` (a lookup by a UNIQUE column, so at most one does).
fn find<T: Clone>(table: &BTreeMap<String, T>, matches: impl Fn(&T) -> bool) -> Option<T> {
    table.values().find(|row| matches(row)).cloned()
}

/// Whether a row of `table` other than row `id` satisfies `clashes` (holds a value of a
/// UNIQUE column that row `id` is to hold).
fn taken<T>(table: &BTreeMap<String, T>, id: &str, clashes: impl Fn(&T) -> bool) -> bool {
    table.iter().any(|(other, row)| other != id && clashes(row))
}

/// `INSERT .. ON CONFLICT (id) DO UPDATE` every column but the creation date.
fn upsert<T: Row>(table: &mut BTreeMap<String, T>, row: &T) {
    let mut row = row.clone();
    match table.get_mut(row.id()) {
        Some(old) => {
            std::mem::swap(row.created(), old.created());
            *old = row;
        }
        None => {
            table.insert(row.id().to_owned(), row);
        }
    }
}

/// `UPDATE .. SET enabled, date_updated WHERE id = $3 RETURNING ..` for every id, all or
/// none: the first unknown id changes nothing and comes back as `Err(id)`.
fn set_enabled<T: Switch>(
    table: &mut BTreeMap<String, T>,
    ids: &[String],
    enabled: bool,
    now: &str,
) -> Batch<T> {
    if let Some(unknown) = ids.iter().find(|id| !table.contains_key(id.as_str())) {
        return Err(unknown.clone());
    }
    let mut done = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(row) = table.get_mut(id) {
            row.switch(enabled, now);
            done.push(row.clone());
        }
    }
    Ok(done)
}

/// The first of `ids` that deleting them one by one would not find: unknown, or named
/// before.
fn first_missing<'a, T>(table: &BTreeMap<String, T>, ids: &'a [String]) -> Option<&'a String> {
    let mut seen = BTreeSet::new();
    ids.iter()
        .find(|id| !table.contains_key(id.as_str()) || !seen.insert(id.as_str()))
}

/// `DELETE .. WHERE id = $1 RETURNING ..` for every id; unknown ids are skipped.
fn delete_known<T>(table: &mut BTreeMap<String, T>, ids: &[String]) -> Vec<T> {
    ids.iter().filter_map(|id| table.remove(id)).collect()
}

/// A write refused for breaking one of the schema's constraints, coded and worded as SQLite
/// codes and words it (`(code: 2067) UNIQUE constraint failed: plugin.name`), so callers see
/// the same [`StoreError`] from either store.
#[derive(Debug)]
struct Violation {
    /// SQLite's extended result code.
    code: u32,
    /// SQLite's message.
    message: String,
}

/// `SQLITE_CONSTRAINT_FOREIGNKEY`.
const FOREIGN_KEY: u32 = 787;
/// `SQLITE_CONSTRAINT_PRIMARYKEY`.
const PRIMARY_KEY: u32 = 1555;
/// `SQLITE_CONSTRAINT_UNIQUE`.
const UNIQUE: u32 = 2067;

impl Violation {
    /// Row `id` of `table` exists already.
    fn primary_key(table: &str) -> StoreError {
        Self::error(PRIMARY_KEY, format!("UNIQUE constraint failed: {table}.id"))
    }

    /// Another row of `table` has the same `columns` (a UNIQUE constraint).
    fn unique(table: &str, columns: &[&str]) -> StoreError {
        let columns: Vec<String> = columns.iter().map(|c| format!("{table}.{c}")).collect();
        let message = format!("UNIQUE constraint failed: {}", columns.join(", "));
        Self::error(UNIQUE, message)
    }

    /// A row names a parent row that does not exist.
    fn foreign_key() -> StoreError {
        Self::error(FOREIGN_KEY, "FOREIGN KEY constraint failed".to_owned())
    }

    fn error(code: u32, message: String) -> StoreError {
        StoreError::Database(sqlx::Error::Database(Box::new(Violation { code, message })))
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(code: {}) {}", self.code, self.message)
    }
}

impl std::error::Error for Violation {}

impl DatabaseError for Violation {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(self.code.to_string().into())
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        match self.code {
            PRIMARY_KEY | UNIQUE => ErrorKind::UniqueViolation,
            FOREIGN_KEY => ErrorKind::ForeignKeyViolation,
            _ => ErrorKind::Other,
        }
    }
}
