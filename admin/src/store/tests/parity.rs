//! What the in-memory store ([`Store::memory`]) must share with the SQL ones, each run on every
//! database: all-or-none batches and registrations, deletes that take what they own along,
//! refused constraints. The records they write and [`contents`] serve `script` too.

use model::{AuthParamData, AuthPathData, BuiltinPlugin};
use sqlx::error::DatabaseError;

use super::{Backend, NOW, handle, ids, rule, selector};
use crate::store::{
    AppAuthRecord, MetaRecord, PluginHandleRecord, PluginRecord, SelectorRecord, Store, StoreError,
    UserRecord,
};

pub(super) fn plugin(id: &str, name: &str, sort: i32) -> PluginRecord {
    PluginRecord {
        id: id.to_owned(),
        name: name.to_owned(),
        role: "Test".to_owned(),
        sort,
        enabled: false,
        config: None,
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

pub(super) fn builtin(id: &'static str, name: &'static str) -> BuiltinPlugin {
    BuiltinPlugin {
        id,
        name,
        sort: 5,
        role: "Test",
        enabled: true,
        config: Some("{}"),
    }
}

pub(super) fn meta(id: &str, path: &str) -> MetaRecord {
    MetaRecord {
        id: id.to_owned(),
        app_name: Some("app".to_owned()),
        context_path: Some("/app".to_owned()),
        path: path.to_owned(),
        path_desc: None,
        rpc_type: Some("http".to_owned()),
        service_name: None,
        method_name: None,
        parameter_types: None,
        rpc_ext: None,
        rule_name: Some(path.to_owned()),
        enabled: true,
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

pub(super) fn app_auth(id: &str, app_key: &str) -> AppAuthRecord {
    AppAuthRecord {
        id: id.to_owned(),
        app_key: app_key.to_owned(),
        app_secret: "secret".to_owned(),
        user_id: None,
        phone: Some("123".to_owned()),
        ext_info: None,
        open: true,
        enabled: true,
        params: vec![AuthParamData {
            app_name: "app".to_owned(),
            app_param: "p".to_owned(),
        }],
        paths: vec![AuthPathData {
            app_name: "app".to_owned(),
            path: "/app/**".to_owned(),
            enabled: true,
        }],
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

pub(super) fn user(id: &str, user_name: &str, password: &str) -> UserRecord {
    UserRecord {
        id: id.to_owned(),
        user_name: user_name.to_owned(),
        password: password.to_owned(),
        role: 1,
        enabled: true,
        date_created: NOW.to_owned(),
        date_updated: NOW.to_owned(),
    }
}

/// Everything the store holds (user passwords too), for comparing before and after.
pub(super) async fn contents(store: &Store) -> String {
    let passwords: Vec<(String, String)> = (store.users().await.unwrap().into_iter())
        .map(|u| (u.id, u.password))
        .collect();
    format!(
        "{:#?}",
        (
            store.plugins().await.unwrap(),
            store.plugin_handles().await.unwrap(),
            store.selectors().await.unwrap(),
            store.rules().await.unwrap(),
            store.meta_data().await.unwrap(),
            store.app_auths().await.unwrap(),
            store.users().await.unwrap(),
            passwords,
        )
    )
}

/// The database's own error behind `e`, if it is one.
pub(super) fn database_error(e: &StoreError) -> Option<&dyn DatabaseError> {
    match e {
        StoreError::Database(sqlx::Error::Database(e)) => Some(&**e),
        _ => None,
    }
}

fn is_foreign_key_violation(e: &StoreError) -> bool {
    database_error(e).is_some_and(DatabaseError::is_foreign_key_violation)
}

pub(super) async fn failed_batches_change_nothing(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    store.put_selector(&selector("s1", 1)).await.unwrap();
    store.put_rule(&rule("r1", "s1", 1)).await.unwrap();
    store.put_meta(&meta("m1", "/m1")).await.unwrap();
    store.put_app_auth(&app_auth("a1", "key")).await.unwrap();
    store
        .put_plugin_handle(&handle("h1", "1", "f"))
        .await
        .unwrap();
    let before = contents(store).await;

    let plugins = store
        .set_plugins_enabled(&ids(&["1", "nope"]), true, "t")
        .await;
    assert_eq!(plugins.unwrap().unwrap_err(), "nope", "{name}");
    let selectors = store
        .set_selectors_enabled(&ids(&["s1", "nope"]), false, "t")
        .await;
    assert_eq!(selectors.unwrap().unwrap_err(), "nope", "{name}");
    let rules = store
        .set_rules_enabled(&ids(&["r1", "nope"]), true, "t")
        .await;
    assert_eq!(rules.unwrap().unwrap_err(), "nope", "{name}");
    let meta = store
        .set_meta_enabled(&ids(&["m1", "nope"]), false, "t")
        .await;
    assert_eq!(meta.unwrap().unwrap_err(), "nope", "{name}");
    let auths = store
        .set_app_auths_enabled(&ids(&["a1", "nope"]), false, "t")
        .await;
    assert_eq!(auths.unwrap().unwrap_err(), "nope", "{name}");
    let handles = store.delete_plugin_handles(&ids(&["h1", "nope"])).await;
    assert_eq!(handles.unwrap().unwrap_err(), "nope", "{name}");
    let twice = store.delete_plugin_handles(&ids(&["h1", "h1"])).await;
    assert_eq!(
        twice.unwrap().unwrap_err(),
        "h1",
        "{name}: the second delete finds nothing"
    );
    let plugins = store.delete_plugins(&ids(&["5", "nope"])).await.unwrap();
    assert_eq!(plugins.unwrap_err(), "nope", "{name}");
    let twice = store.delete_plugins(&ids(&["5", "5"])).await.unwrap();
    assert_eq!(twice.unwrap_err(), "5", "{name}");

    assert_eq!(contents(store).await, before, "{name}: nothing changed");
    backend.drop().await;
}

pub(super) async fn registrations_are_all_or_none(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    store.put_meta(&meta("m1", "/taken")).await.unwrap();
    let before = contents(store).await;

    let orphan_rule = [rule("r1", "s1", 1), rule("r2", "nope", 1)];
    let e = store
        .put_registration(&[selector("s1", 1)], &orphan_rule, None)
        .await
        .unwrap_err();
    assert!(is_foreign_key_violation(&e), "{name}: {e}");
    let orphan_selector = SelectorRecord {
        plugin_id: "nope".to_owned(),
        ..selector("s2", 1)
    };
    let e = store
        .put_registration(&[selector("s1", 1), orphan_selector], &[], None)
        .await
        .unwrap_err();
    assert!(is_foreign_key_violation(&e), "{name}: {e}");
    let e = store
        .put_registration(
            &[selector("s1", 1)],
            &[rule("r1", "s1", 1)],
            Some(&meta("m2", "/taken")),
        )
        .await
        .unwrap_err();
    assert!(e.is_unique_violation(), "{name}: {e}");
    assert_eq!(contents(store).await, before, "{name}: nothing written");

    // A rule may name a selector written before it in the same registration.
    store
        .put_registration(
            &[selector("s1", 1)],
            &[rule("r1", "s1", 1)],
            Some(&meta("m2", "/free")),
        )
        .await
        .unwrap();
    assert!(store.selector("s1").await.unwrap().is_some(), "{name}");
    assert!(store.rule("r1").await.unwrap().is_some(), "{name}");
    assert!(
        store.meta_by_path("/free").await.unwrap().is_some(),
        "{name}"
    );
    backend.drop().await;
}

pub(super) async fn plugins_are_deleted_with_what_they_own(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    let sign = SelectorRecord {
        plugin_id: "1".to_owned(),
        ..selector("s3", 1)
    };
    for s in [selector("s1", 2), selector("s2", 1), sign] {
        store.put_selector(&s).await.unwrap();
    }
    for r in [
        rule("r1", "s1", 1),
        rule("r2", "s2", 2),
        rule("r3", "s2", 1),
        rule("r4", "s3", 1),
    ] {
        store.put_rule(&r).await.unwrap();
    }
    let handles_before = store.plugin_handles().await.unwrap();
    assert!(handles_before.iter().any(|h| h.plugin_id == "5"), "{name}");

    let (plugins, selectors, rules) = store.delete_plugins(&ids(&["5"])).await.unwrap().unwrap();
    let id_list = |ids: Vec<&str>| ids.join(" ");
    assert_eq!(
        id_list(plugins.iter().map(|p| p.id.as_str()).collect()),
        "5"
    );
    let selectors = id_list(selectors.iter().map(|s| s.id.as_str()).collect());
    assert_eq!(selectors, "s2 s1", "{name}: by sort");
    let rules = id_list(rules.iter().map(|r| r.id.as_str()).collect());
    assert_eq!(
        rules, "r3 r2 r1",
        "{name}: selector after selector, by sort"
    );

    assert_eq!(store.plugin("5").await.unwrap(), None, "{name}");
    let left = store.selectors().await.unwrap();
    assert_eq!(id_list(left.iter().map(|s| s.id.as_str()).collect()), "s3");
    let left = store.rules().await.unwrap();
    assert_eq!(id_list(left.iter().map(|r| r.id.as_str()).collect()), "r4");
    let handles: Vec<PluginHandleRecord> = handles_before
        .into_iter()
        .filter(|h| h.plugin_id != "5")
        .collect();
    assert_eq!(store.plugin_handles().await.unwrap(), handles, "{name}");
    let again = store.delete_plugins(&ids(&["5"])).await.unwrap();
    assert_eq!(again.unwrap_err(), "5", "{name}");
    backend.drop().await;
}

pub(super) async fn constraints_are_refused(backend: Backend) {
    let (name, store) = (backend.name, &backend.store);
    let unique = |e: StoreError| assert!(e.is_unique_violation(), "{name}: {e}");
    let foreign = |e: StoreError| assert!(is_foreign_key_violation(&e), "{name}: {e}");

    unique(
        store
            .insert_plugin(&plugin("p1", "divide", 1))
            .await
            .unwrap_err(),
    );
    unique(
        store
            .insert_plugin(&plugin("5", "p1", 1))
            .await
            .unwrap_err(),
    );
    store.insert_plugin(&plugin("p1", "p1", 1)).await.unwrap();
    unique(
        store
            .update_plugin(&plugin("p1", "divide", 1))
            .await
            .unwrap_err(),
    );
    assert!(!store.update_plugin(&plugin("p2", "p2", 1)).await.unwrap());
    let e = store.seed_plugins(&[builtin("p3", "p1")], NOW).await;
    unique(e.unwrap_err());
    assert_eq!(store.plugin("p3").await.unwrap(), None, "{name}");

    let orphan = SelectorRecord {
        plugin_id: "nope".to_owned(),
        ..selector("s1", 1)
    };
    foreign(store.put_selector(&orphan).await.unwrap_err());
    foreign(store.put_rule(&rule("r1", "nope", 1)).await.unwrap_err());

    store.put_meta(&meta("m1", "/a")).await.unwrap();
    unique(store.put_meta(&meta("m2", "/a")).await.unwrap_err());
    store.put_app_auth(&app_auth("a1", "key")).await.unwrap();
    unique(
        store
            .put_app_auth(&app_auth("a2", "key"))
            .await
            .unwrap_err(),
    );

    store
        .put_plugin_handle(&handle("h1", "1", "f1"))
        .await
        .unwrap();
    store
        .put_plugin_handle(&handle("h2", "1", "f2"))
        .await
        .unwrap();
    unique(
        store
            .put_plugin_handle(&handle("h2", "1", "f1"))
            .await
            .unwrap_err(),
    );
    foreign(
        store
            .put_plugin_handle(&handle("h2", "nope", "f2"))
            .await
            .unwrap_err(),
    );

    store
        .put_user_password(&user("u1", "admin", "x"))
        .await
        .unwrap();
    unique(
        store
            .put_user_password(&user("u1", "bob", "y"))
            .await
            .unwrap_err(),
    );
    // The name decides first: the stored user keeps its id.
    store
        .put_user_password(&user("u2", "admin", "z"))
        .await
        .unwrap();
    let admin = store.user_named("admin").await.unwrap().unwrap();
    assert_eq!((admin.id.as_str(), admin.password.as_str()), ("u1", "z"));
    backend.drop().await;
}
