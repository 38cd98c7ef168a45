//! A script of store calls whose every answer, refusals included, must read the same on the
//! in-memory store ([`Store::memory`]) as on SQLite.

use std::fmt::Debug;

use model::BUILTIN_PLUGINS;

use super::parity::{app_auth, builtin, contents, database_error, meta, plugin, user};
use super::{NOW, handle, ids, memory, rule, selector, sqlite};
use crate::store::{
    MetaRecord, PluginHandleRecord, PluginRecord, RuleRecord, SelectorRecord, Store, StoreError,
};

/// An answer as the script logs it: the value, or the refusal with its kind and code.
fn answer<T: Debug>(result: Result<T, StoreError>) -> String {
    match result {
        Ok(value) => format!("{value:?}"),
        Err(e) => match database_error(&e) {
            Some(db) => format!("refused ({:?}, code {:?}): {e}", db.kind(), db.code()),
            None => format!("failed: {e}"),
        },
    }
}

/// Runs `$call` (a store call) and logs it with its answer.
macro_rules! step {
    ($log:ident, $call:expr) => {
        $log.push(format!("{} -> {}", stringify!($call), answer($call.await)))
    };
}

/// Every method, on the cases where a store could go wrong: ties, duplicate ids in a batch,
/// each constraint, the order every list comes in.
async fn script(store: &Store) -> Vec<String> {
    let mut log = Vec::new();
    let renamed = |id: &str, name: &str, sort| SelectorRecord {
        name: name.to_owned(),
        ..selector(id, sort)
    };
    let orphan = SelectorRecord {
        plugin_id: "nope".to_owned(),
        ..selector("s1", 1)
    };

    step!(log, store.plugins());
    step!(log, store.plugin_named("divide"));
    step!(log, store.plugin("nope"));
    step!(log, store.insert_plugin(&plugin("5", "divide", 1)));
    step!(log, store.insert_plugin(&plugin("p1", "divide", 1)));
    step!(log, store.insert_plugin(&plugin("5", "other", 1)));
    step!(log, store.insert_plugin(&plugin("p1", "custom", 7)));
    step!(log, store.update_plugin(&plugin("p1", "divide", 7)));
    step!(log, store.update_plugin(&plugin("nope", "nope", 7)));
    let edited = PluginRecord {
        enabled: true,
        config: Some("{}".to_owned()),
        date_created: "later".to_owned(),
        ..plugin("p1", "custom2", 0)
    };
    step!(log, store.update_plugin(&edited));
    step!(log, store.plugin("p1"));
    step!(log, store.seed_plugins(&[builtin("p2", "custom2")], NOW));
    let seeds = [builtin("p1", "other"), builtin("p3", "custom3")];
    step!(log, store.seed_plugins(&seeds, NOW));
    step!(log, store.plugins());

    step!(log, store.put_selector(&orphan));
    for s in [selector("s3", 2), selector("s1", 1), selector("s2", 1)] {
        step!(log, store.put_selector(&s));
    }
    step!(log, store.put_selector(&renamed("s0", "/s1", 1)));
    step!(log, store.selector_named("5", "/s1"));
    step!(log, store.put_selector(&renamed("s9", "/s1", 0)));
    step!(log, store.selector_named("5", "/s1"));
    step!(log, store.selector_named("1", "/s1"));
    step!(log, store.put_selector(&orphan));
    step!(log, store.selectors());

    step!(log, store.put_rule(&rule("r0", "nope", 1)));
    for r in [
        rule("r3", "s1", 2),
        rule("r1", "s1", 1),
        rule("r2", "s2", 1),
    ] {
        step!(log, store.put_rule(&r));
    }
    let same_name = RuleRecord {
        name: "/r1".to_owned(),
        ..rule("r0", "s1", 1)
    };
    step!(log, store.put_rule(&same_name));
    step!(log, store.rule_named("s1", "/r1"));
    step!(log, store.rule_named("s2", "/r1"));
    step!(log, store.put_rule(&rule("r1", "nope", 1)));
    step!(log, store.rules());
    step!(log, store.rule("r1"));

    step!(
        log,
        store.set_selectors_enabled(&ids(&["s1", "s1"]), false, "t1")
    );
    step!(
        log,
        store.set_selectors_enabled(&ids(&["s1", "nope"]), true, "t2")
    );
    step!(
        log,
        store.set_rules_enabled(&ids(&["r2", "r1"]), true, "t3")
    );
    step!(log, store.set_rules_enabled(&ids(&["nope"]), true, "t4"));
    step!(
        log,
        store.set_plugins_enabled(&ids(&["p1", "5"]), false, "t5")
    );
    step!(log, store.set_plugins_enabled(&[], false, "t6"));
    step!(log, store.delete_rules(&ids(&["r3", "nope", "r0", "r0"])));
    step!(
        log,
        store.delete_selectors(&ids(&["s1", "nope", "s1", "s2"]))
    );
    step!(log, store.rules());

    step!(log, store.put_meta(&meta("m2", "/a")));
    step!(log, store.put_meta(&meta("m1", "/b")));
    step!(log, store.put_meta(&meta("m3", "/a")));
    let moved = MetaRecord {
        path: "/c".to_owned(),
        date_created: "later".to_owned(),
        ..meta("m2", "/a")
    };
    step!(log, store.put_meta(&moved));
    step!(log, store.put_meta(&meta("m3", "/a")));
    step!(log, store.meta_data());
    step!(log, store.meta_by_path("/c"));
    step!(log, store.meta("m9"));
    step!(
        log,
        store.set_meta_enabled(&ids(&["m1", "m1"]), false, "t7")
    );
    step!(log, store.set_meta_enabled(&ids(&["m1", "m9"]), true, "t8"));
    step!(log, store.delete_meta(&ids(&["m1", "nope", "m1"])));

    step!(log, store.put_app_auth(&app_auth("a1", "zkey")));
    step!(log, store.put_app_auth(&app_auth("a2", "akey")));
    step!(log, store.put_app_auth(&app_auth("a3", "zkey")));
    step!(log, store.app_auths());
    step!(log, store.app_auth("a1"));
    step!(
        log,
        store.set_app_auths_enabled(&ids(&["a2", "a1"]), false, "t9")
    );
    step!(log, store.set_app_auths_enabled(&ids(&["a3"]), false, "t9"));
    step!(log, store.delete_app_auths(&ids(&["a1", "a3"])));

    step!(log, store.put_plugin_handle(&handle("h1", "1", "f1")));
    step!(log, store.put_plugin_handle(&handle("h2", "1", "f2")));
    step!(log, store.put_plugin_handle(&handle("h2", "1", "f1")));
    step!(log, store.put_plugin_handle(&handle("h3", "1", "f1")));
    step!(log, store.put_plugin_handle(&handle("h3", "nope", "f1")));
    step!(log, store.put_plugin_handle(&handle("h1", "nope", "f3")));
    step!(log, store.plugin_handles());
    step!(log, store.delete_plugin_handles(&ids(&["h1", "h1"])));
    step!(log, store.delete_plugin_handles(&ids(&["h2", "h1"])));
    // Seeding skips a definition whose plugin, field and type another id holds.
    step!(log, store.delete_plugin_handles(&ids(&["1005103"])));
    let moved = PluginHandleRecord {
        handle_type: 1,
        ..handle("hx", "5", "upstreamUrl")
    };
    step!(log, store.put_plugin_handle(&moved));
    step!(log, store.seed_plugins(BUILTIN_PLUGINS, NOW));
    step!(log, store.plugin_handles());

    step!(log, store.insert_user_if_absent(&user("u1", "admin", "x1")));
    step!(log, store.insert_user_if_absent(&user("u1", "other", "x2")));
    step!(log, store.insert_user_if_absent(&user("u2", "admin", "x3")));
    step!(log, store.insert_user_if_absent(&user("u2", "bob", "x4")));
    step!(log, store.put_user_password(&user("u1", "carol", "x5")));
    step!(log, store.put_user_password(&user("u9", "admin", "x6")));
    step!(log, store.put_user_password(&user("u3", "dave", "x7")));
    step!(log, store.set_user_enabled("admin", false, "t10"));
    step!(log, store.set_user_enabled("nobody", false, "t10"));
    step!(log, store.users());
    step!(log, store.user_named("admin"));

    let (g1, g2) = (selector("g1", 1), selector("g2", 2));
    let (q1, q2) = (rule("q1", "g1", 1), rule("q2", "g2", 1));
    let (one_selector, one_rule) = ([g1.clone()], [q1.clone()]);
    let stray = [q1.clone(), rule("q3", "nope", 1)];
    step!(log, store.put_registration(&one_selector, &stray, None));
    let taken = meta("m5", "/c");
    step!(
        log,
        store.put_registration(&one_selector, &one_rule, Some(&taken))
    );
    step!(
        log,
        store.put_registration(&[g1.clone(), orphan], &[], None)
    );
    let fresh = meta("m5", "/new");
    step!(
        log,
        store.put_registration(&[g1, g2], &[q1, q2], Some(&fresh))
    );

    step!(log, store.delete_plugins(&ids(&["p1", "p1"])));
    step!(log, store.delete_plugins(&ids(&["5", "nope"])));
    step!(log, store.delete_plugins(&ids(&["5", "p1"])));
    log.push(contents(store).await);
    log
}

#[tokio::test]
async fn memory_answers_as_sqlite_does() {
    let (sqlite, memory) = (sqlite().await, memory().await);
    let expected = script(&sqlite.store).await;
    let got = script(&memory.store).await;
    for (sqlite, memory) in expected.iter().zip(&got) {
        assert_eq!(memory, sqlite);
    }
    assert_eq!(got.len(), expected.len());
    sqlite.drop().await;
    memory.drop().await;
}

#[tokio::test]
async fn memory_stores_share_their_tables_with_their_clones() {
    let store = Store::memory();
    let clone = store.clone();
    clone.put_meta(&meta("m1", "/a")).await.unwrap();
    assert_eq!(store.meta_data().await.unwrap(), [meta("m1", "/a")]);
    let feed = store.change_feed(std::time::Duration::from_millis(1)).await;
    assert!(feed.unwrap().is_none(), "nothing else writes to it");
}
