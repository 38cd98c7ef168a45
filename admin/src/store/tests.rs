//! The store against every database: SQLite in memory and the in-memory store
//! ([`Store::memory`]) always, and PostgreSQL when `GANTRY_TEST_POSTGRES_URL` is set (each
//! test in a schema of its own, dropped afterwards).

use model::{BUILTIN_PLUGINS, ConditionData};

use super::plugin_handles::BUILTIN_HANDLES;
use super::{PluginHandleRecord, RuleRecord, SelectorRecord, Store, UserRecord};

mod parity;
mod script;

use parity::{
    constraints_are_refused, failed_batches_change_nothing, plugins_are_deleted_with_what_they_own,
    registrations_are_all_or_none,
};

const NOW: &str = "2024-01-01 00:00:00";

/// A database to test on, and how to clean it up.
struct Backend {
    name: &'static str,
    store: Store,
    /// PostgreSQL: the schema to drop.
    schema: Option<PgSchema>,
}

impl Backend {
    async fn drop(self) {
        self.store.close().await;
        if let Some(schema) = self.schema {
            schema.drop().await;
        }
    }
}

/// A schema of its own on `GANTRY_TEST_POSTGRES_URL`, for one test: [`PgSchema::url`] reaches
/// it; [`PgSchema::drop`] removes it. Without the variable the tests that use it are built
/// ignored (admin/build.rs) unless `GANTRY_REQUIRE` names postgres; then this fails.
pub(crate) struct PgSchema {
    server: String,
    name: String,
    /// The server URL with the schema as search path.
    pub(crate) url: String,
}

impl PgSchema {
    /// Creates a fresh schema.
    pub(crate) async fn create() -> PgSchema {
        let server = std::env::var("GANTRY_TEST_POSTGRES_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .expect("GANTRY_REQUIRE names postgres, but GANTRY_TEST_POSTGRES_URL is not set");
        let name = format!("gantry_store_test_{}", rand::random::<u64>());
        let pool = sqlx::PgPool::connect(&server).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}")))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
        let separator = if server.contains('?') { '&' } else { '?' };
        let url = format!("{server}{separator}options[search_path]={name}");
        PgSchema { server, name, url }
    }

    /// Drops the schema and everything in it.
    pub(crate) async fn drop(self) {
        let pool = sqlx::PgPool::connect(&self.server).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA {} CASCADE",
            self.name
        )))
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
}

/// A fresh, seeded in-memory SQLite database.
async fn sqlite() -> Backend {
    seeded(Backend {
        name: "sqlite",
        store: Store::open(":memory:").await.unwrap(),
        schema: None,
    })
    .await
}

/// A fresh, seeded in-memory store ([`Store::memory`]).
async fn memory() -> Backend {
    seeded(Backend {
        name: "memory",
        store: Store::memory(),
        schema: None,
    })
    .await
}

/// A fresh, seeded schema on `GANTRY_TEST_POSTGRES_URL` ([`PgSchema`]).
async fn postgres() -> Backend {
    let schema = PgSchema::create().await;
    seeded(Backend {
        name: "postgres",
        store: Store::open(&schema.url).await.unwrap(),
        schema: Some(schema),
    })
    .await
}

async fn seeded(backend: Backend) -> Backend {
    backend
        .store
        .seed_plugins(BUILTIN_PLUGINS, NOW)
        .await
        .unwrap();
    backend
}

/// Each test runs on SQLite, on the in-memory store, and as its own test on PostgreSQL
/// (ignored with the reason when no server is configured; see admin/build.rs).
macro_rules! on_every_database {
    ($($test:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::sqlite().await).await;
                }
            )*
        }
        mod on_memory {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::memory().await).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test]
                #[cfg_attr(
                    gantry_postgres_skip,
                    ignore = "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
                )]
                async fn $test() {
                    super::$test(super::postgres().await).await;
                }
            )*
        }
    };
}

on_every_database!(
    records_round_trip_with_their_flags_and_order,
    batches_are_all_or_none_and_deletes_take_rules_along,
    handle_definitions_are_seeded_where_absent,
    handle_definitions_are_put_and_deleted,
    users_are_inserted_once_and_their_passwords_replaced,
    failed_batches_change_nothing,
    registrations_are_all_or_none,
    plugins_are_deleted_with_what_they_own,
    constraints_are_refused,
);

/// A divide selector record `/{id}` (`uri startsWith /{id}/`, no handle), for tests that
/// write rows through the store.
pub(crate) fn selector(id: &str, sort: i32) -> SelectorRecord {
    SelectorRecord {
        id: id.to_owned(),
        plugin_id: "5".to_owned(),
        name: format!("/{id}"),
        selector_type: 1,
        match_mode: 0,
        sort,
        enabled: true,
        loged: false,
        continued: true,
        match_restful: false,
        handle: None,
        conditions: vec![ConditionData {
            param_type: "uri".to_owned(),
            operator: "startsWith".to_owned(),
            param_name: "/".to_owned(),
            param_value: format!("/{id}/"),
        }],
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

/// A disabled rule record `/{id}` of `selector_id`, handle `{}`, no conditions.
pub(crate) fn rule(id: &str, selector_id: &str, sort: i32) -> RuleRecord {
    RuleRecord {
        id: id.to_owned(),
        selector_id: selector_id.to_owned(),
        name: format!("/{id}"),
        match_mode: 0,
        sort,
        enabled: false,
        loged: true,
        match_restful: true,
        handle: Some("{}".to_owned()),
        conditions: Vec::new(),
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

fn handle(id: &str, plugin_id: &str, field: &str) -> PluginHandleRecord {
    PluginHandleRecord {
        id: id.to_owned(),
        plugin_id: plugin_id.to_owned(),
        field: field.to_owned(),
        label: field.to_owned(),
        data_type: 2,
        handle_type: 3,
        sort: 1,
        ext_obj: None,
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|id| (*id).to_owned()).collect()
}

async fn records_round_trip_with_their_flags_and_order(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    let b = selector("b", 1);
    let a = SelectorRecord {
        enabled: false,
        loged: true,
        continued: false,
        match_restful: true,
        ..selector("a", 2)
    };
    let c = selector("c", 1);
    for s in [&a, &b, &c] {
        store.put_selector(s).await.unwrap();
    }
    assert_eq!(
        store.selector("a").await.unwrap().as_ref(),
        Some(&a),
        "{name}"
    );
    let order: Vec<String> = store
        .selectors()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(order, ["b", "c", "a"], "{name}: by sort, then id");

    // Replacing keeps the creation date.
    let renamed = SelectorRecord {
        name: "/renamed".to_owned(),
        date_created: "later".to_owned(),
        ..a.clone()
    };
    store.put_selector(&renamed).await.unwrap();
    let stored = store.selector("a").await.unwrap().unwrap();
    assert_eq!(
        (stored.name.as_str(), stored.date_created.as_str()),
        ("/renamed", NOW)
    );

    let r = rule("r1", "b", 1);
    store.put_rule(&r).await.unwrap();
    store.put_rule(&rule("r2", "b", 0)).await.unwrap();
    assert_eq!(store.rule("r1").await.unwrap(), Some(r), "{name}");

    let plugin = store.plugin("5").await.unwrap().unwrap();
    assert!(plugin.enabled, "{name}: divide is enabled by default");
    assert!(
        !store.plugin("1").await.unwrap().unwrap().enabled,
        "{name}: sign is not"
    );
    backend.drop().await;
}

async fn batches_are_all_or_none_and_deletes_take_rules_along(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    store.put_selector(&selector("s1", 1)).await.unwrap();
    store.put_selector(&selector("s2", 2)).await.unwrap();
    store.put_rule(&rule("r1", "s1", 2)).await.unwrap();
    store.put_rule(&rule("r2", "s1", 1)).await.unwrap();
    store.put_rule(&rule("r3", "s2", 1)).await.unwrap();

    let refused = store
        .set_selectors_enabled(&ids(&["s1", "nope", "s2"]), false, NOW)
        .await
        .unwrap();
    assert_eq!(refused, Err("nope".to_owned()), "{name}");
    assert!(
        store.selector("s1").await.unwrap().unwrap().enabled,
        "{name}: rolled back"
    );
    let done = store
        .set_selectors_enabled(&ids(&["s1", "s2"]), false, "then")
        .await
        .unwrap()
        .unwrap();
    assert!(
        done.iter().all(|s| !s.enabled && s.date_updated == "then"),
        "{name}"
    );
    assert_eq!(
        store
            .set_plugins_enabled(&ids(&["1", "0"]), true, NOW)
            .await
            .unwrap(),
        Err("0".to_owned())
    );

    let (selectors, rules) = store.delete_selectors(&ids(&["s1", "nope"])).await.unwrap();
    assert_eq!(selectors.len(), 1, "{name}");
    let deleted: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        deleted,
        ["r2", "r1"],
        "{name}: the selector's rules, by sort"
    );
    let left: Vec<String> = store
        .rules()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(left, ["r3"], "{name}");
    let gone = store.delete_rules(&ids(&["nope", "r3"])).await.unwrap();
    assert_eq!(gone.len(), 1, "{name}: unknown ids are skipped");
    backend.drop().await;
}

async fn handle_definitions_are_seeded_where_absent(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    let seeded = store.plugin_handles().await.unwrap();
    assert_eq!(seeded.len(), BUILTIN_HANDLES.len(), "{name}");
    let mut sorted = seeded.clone();
    sorted.sort_by(|a, b| {
        (&a.plugin_id, a.handle_type, a.sort, &a.id).cmp(&(
            &b.plugin_id,
            b.handle_type,
            b.sort,
            &b.id,
        ))
    });
    assert_eq!(
        seeded, sorted,
        "{name}: ordered by plugin id, type, sort, id"
    );
    let url = seeded
        .iter()
        .find(|h| h.plugin_id == "5" && h.field == "upstreamUrl")
        .unwrap();
    assert_eq!(
        (url.id.as_str(), url.data_type, url.handle_type),
        ("1005103", 2, 1)
    );
    for h in &seeded {
        if let Some(ext) = &h.ext_obj {
            serde_json::from_str::<serde_json::Value>(ext).unwrap();
        }
    }

    // An edited definition is kept; a deleted one comes back at the next start.
    let edited = PluginHandleRecord {
        label: "upstream".to_owned(),
        ..url.clone()
    };
    store.put_plugin_handle(&edited).await.unwrap();
    let weight = ids(&["1005104"]);
    assert_eq!(
        store
            .delete_plugin_handles(&weight)
            .await
            .unwrap()
            .unwrap()
            .len(),
        1
    );
    store.seed_plugins(BUILTIN_PLUGINS, NOW).await.unwrap();
    assert_eq!(
        store.plugin_handle(&url.id).await.unwrap(),
        Some(edited),
        "{name}"
    );
    assert!(
        store.plugin_handle("1005104").await.unwrap().is_some(),
        "{name}"
    );
    assert_eq!(
        store.plugin_handles().await.unwrap().len(),
        BUILTIN_HANDLES.len()
    );
    backend.drop().await;
}

async fn handle_definitions_are_put_and_deleted(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    let a = handle("h1", "1", "signRequestBody");
    store.put_plugin_handle(&a).await.unwrap();
    assert_eq!(
        store.plugin_handle("h1").await.unwrap().as_ref(),
        Some(&a),
        "{name}"
    );
    let replaced = PluginHandleRecord {
        ext_obj: Some(r#"{"required":"1"}"#.to_owned()),
        date_created: "later".to_owned(),
        ..a.clone()
    };
    store.put_plugin_handle(&replaced).await.unwrap();
    let stored = store.plugin_handle("h1").await.unwrap().unwrap();
    assert_eq!(stored.ext_obj, replaced.ext_obj, "{name}");
    assert_eq!(stored.date_created, NOW, "{name}: the creation date stays");

    // Same plugin, field and type under another id: refused as a duplicate.
    let duplicate = store
        .put_plugin_handle(&handle("h2", "1", "signRequestBody"))
        .await
        .unwrap_err();
    assert!(duplicate.is_unique_violation(), "{name}: {duplicate}");
    // An unknown plugin: refused, but not as a duplicate.
    let orphan = store
        .put_plugin_handle(&handle("h3", "no-such-plugin", "x"))
        .await
        .unwrap_err();
    assert!(!orphan.is_unique_violation(), "{name}: {orphan}");

    store
        .put_plugin_handle(&handle("h2", "1", "other"))
        .await
        .unwrap();
    let refused = store
        .delete_plugin_handles(&ids(&["h1", "nope"]))
        .await
        .unwrap();
    assert_eq!(refused, Err("nope".to_owned()), "{name}");
    assert!(
        store.plugin_handle("h1").await.unwrap().is_some(),
        "{name}: all or none"
    );
    let deleted = store
        .delete_plugin_handles(&ids(&["h2", "h1"]))
        .await
        .unwrap()
        .unwrap();
    let deleted: Vec<&str> = deleted.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(deleted, ["h2", "h1"], "{name}");
    assert_eq!(store.plugin_handle("h1").await.unwrap(), None, "{name}");
    backend.drop().await;
}

async fn users_are_inserted_once_and_their_passwords_replaced(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    let user = UserRecord {
        id: "u1".to_owned(),
        user_name: "admin".to_owned(),
        password: "$argon2id$first".to_owned(),
        role: 1,
        enabled: true,
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    };
    assert!(store.insert_user_if_absent(&user).await.unwrap(), "{name}");
    let other = UserRecord {
        id: "u2".to_owned(),
        password: "$argon2id$second".to_owned(),
        role: 2,
        enabled: false,
        date_updated: "later".to_owned(),
        ..user.clone()
    };
    assert!(
        !store.insert_user_if_absent(&other).await.unwrap(),
        "{name}"
    );
    assert_eq!(
        store.user_named("admin").await.unwrap().as_ref(),
        Some(&user)
    );

    store.put_user_password(&other).await.unwrap();
    let stored = store.user_named("admin").await.unwrap().unwrap();
    assert_eq!(
        (
            stored.id.as_str(),
            stored.password.as_str(),
            stored.role,
            stored.enabled
        ),
        ("u1", "$argon2id$second", 1, true),
        "{name}: only the password (and update date) change"
    );
    assert_eq!(stored.date_updated, "later", "{name}");
    assert!(store.set_user_enabled("admin", false, NOW).await.unwrap());
    assert!(
        !store.user_named("admin").await.unwrap().unwrap().enabled,
        "{name}"
    );
    assert_eq!(store.users().await.unwrap().len(), 1, "{name}");
    assert_eq!(store.user_named("root").await.unwrap(), None, "{name}");
    backend.drop().await;
}
