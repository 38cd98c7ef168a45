//! HTTP long-polling sync (protocol §4) driven directly: fetch, listener (query and form
//! parameters), holds, wake-ups, and the §4.5 stale-admin reload between two admins.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::{Client, DEADLINE, Served, is_id, rule_body, selector_body};
use md5::{Digest, Md5};
use model::SyncMode;
use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

fn config(db: &str, hold: Duration) -> admin::Config {
    admin::Config {
        sync: vec![SyncMode::Websocket, SyncMode::Http],
        long_poll_hold: hold,
        ..admin::Config::new(db)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Group {
    md5: String,
    last_modify_time: i64,
    data: Box<RawValue>,
}

#[derive(Debug, Deserialize)]
struct Fetched {
    code: i32,
    data: BTreeMap<String, Group>,
}

async fn fetch(client: &Client, query: &str) -> Fetched {
    let response = client
        .request(Method::GET, &format!("/configs/fetch?{query}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// `GROUP=md5,ts` pairs for every fetched group.
fn current(fetched: &Fetched) -> String {
    fetched
        .data
        .iter()
        .map(|(group, g)| format!("{group}={},{}", g.md5, g.last_modify_time))
        .collect::<Vec<_>>()
        .join("&")
}

async fn listen(client: &Client, query: &str, form: Option<&str>) -> (Value, Duration) {
    let started = Instant::now();
    let mut request = client
        .request(Method::POST, &format!("/configs/listener?{query}"))
        .header("content-type", "application/x-www-form-urlencoded");
    if let Some(form) = form {
        request = request.body(form.to_owned());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-cache,no-store");
    let text = response.text().await.unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    (serde_json::from_str(&text).unwrap(), started.elapsed())
}

const ALL: &str =
    "groupKeys=PLUGIN&groupKeys=SELECTOR&groupKeys=RULE&groupKeys=META_DATA&groupKeys=APP_AUTH";

#[tokio::test]
async fn fetch_serves_each_group_with_the_md5_of_its_exact_json() {
    let served = Served::start(config(":memory:", DEADLINE)).await;
    let client = Client::login(&served).await;
    let fetched = fetch(&client, ALL).await;
    assert_eq!(fetched.code, 200);
    assert_eq!(fetched.data.len(), 5);
    for (group, g) in &fetched.data {
        assert_eq!(
            g.md5,
            hex::encode(Md5::digest(g.data.get().as_bytes())),
            "{group}"
        );
        assert!(g.last_modify_time > 0);
    }
    let plugins: Vec<Value> = serde_json::from_str(fetched.data["PLUGIN"].data.get()).unwrap();
    assert!(plugins.iter().any(|p| p["name"] == "divide"));
    assert_eq!(fetched.data["SELECTOR"].data.get(), "[]");

    let (_, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/http")))
        .await;
    let id = created["data"].as_str().unwrap().to_owned();
    // The cache follows the change dispatcher; wait for it with a deadline.
    let deadline = Instant::now() + DEADLINE;
    let after = loop {
        let after = fetch(&client, "groupKeys=SELECTOR,PLUGIN").await;
        if after.data["SELECTOR"].md5 != fetched.data["SELECTOR"].md5 {
            break after;
        }
        assert!(
            Instant::now() < deadline,
            "the SELECTOR group never changed"
        );
        tokio::task::yield_now().await;
    };
    let (old, new) = (&fetched.data["SELECTOR"], &after.data["SELECTOR"]);
    assert!(new.last_modify_time > old.last_modify_time);
    assert!(new.data.get().contains(&id));
    assert_eq!(after.data["PLUGIN"].md5, fetched.data["PLUGIN"].md5);
    assert_eq!(
        after.data["PLUGIN"].last_modify_time, fetched.data["PLUGIN"].last_modify_time,
        "an unchanged group keeps its timestamp"
    );

    let response = reqwest::get(served.url("/configs/fetch?groupKeys=PLUGIN"))
        .await
        .unwrap();
    assert_eq!(response.status(), 401, "fetch needs a token");
    let response = reqwest::Client::new()
        .post(served.url("/configs/listener?PLUGIN=x,0"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401, "listener needs a token");
    let response = client
        .request(Method::GET, "/configs/fetch?groupKeys=NOPE")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    served.stop().await;
}

#[tokio::test]
async fn listener_answers_stale_groups_at_once_from_query_or_form() {
    let served = Served::start(config(":memory:", DEADLINE * 3)).await;
    let client = Client::login(&served).await;
    let fetched = fetch(&client, ALL).await;
    let plugin = &fetched.data["PLUGIN"];
    let fresh = format!("PLUGIN={},{}", plugin.md5, plugin.last_modify_time);

    let (answer, took) = listen(
        &client,
        &format!("{fresh}&SELECTOR=0000,0&namespaceId=x"),
        None,
    )
    .await;
    assert_eq!(answer["data"], serde_json::json!(["SELECTOR"]));
    assert!(took < DEADLINE, "{took:?}");
    let (answer, _) = listen(
        &client,
        "",
        Some(&format!("{fresh}&RULE=abc,1&META_DATA=abc,1")),
    )
    .await;
    assert_eq!(answer["data"], serde_json::json!(["RULE", "META_DATA"]));
    let (answer, _) = listen(&client, "APP_AUTH=abc,1", Some(&fresh)).await;
    assert_eq!(
        answer["data"],
        serde_json::json!(["APP_AUTH"]),
        "query and form parameters combine"
    );

    let response = client
        .request(Method::POST, "/configs/listener?PLUGIN=nocomma")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    served.stop().await;
}

#[tokio::test]
async fn a_held_listener_is_answered_when_a_selector_is_created() {
    let hold = Duration::from_secs(30);
    let served = Served::start(config(":memory:", hold)).await;
    let client = Client::login(&served).await;
    let query = current(&fetch(&client, ALL).await);
    let waiting = {
        let client = Client::login(&served).await;
        tokio::spawn(async move { listen(&client, &query, None).await })
    };
    let (_, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/wake")))
        .await;
    assert_eq!(created["code"], 200);
    let (answer, took) = tokio::time::timeout(DEADLINE, waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        serde_json::json!({"code":200,"message":"success","data":["SELECTOR"]})
    );
    assert!(took < hold / 3, "answered after {took:?}");
    served.stop().await;
}

#[tokio::test]
async fn a_listener_with_current_md5s_gets_an_empty_answer_after_the_hold() {
    let hold = Duration::from_millis(300);
    let served = Served::start(config(":memory:", hold)).await;
    let client = Client::login(&served).await;
    let query = current(&fetch(&client, ALL).await);
    let (answer, took) = listen(&client, &query, None).await;
    assert_eq!(
        answer,
        serde_json::json!({"code":200,"message":"success","data":[]})
    );
    assert!(took >= hold, "returned after {took:?}, before the hold");
    served.stop().await;
}

#[tokio::test]
async fn payload_shapes() {
    let served = Served::start(config(":memory:", Duration::from_millis(50))).await;
    let client = Client::login(&served).await;
    let (_, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/http")))
        .await;
    let selector = created["data"].as_str().unwrap().to_owned();
    client
        .send(
            Method::POST,
            "/rule",
            Some(rule_body(&selector, "/http/order")),
        )
        .await;
    let deadline = Instant::now() + DEADLINE;
    let fetched: Value = loop {
        let response = client
            .request(
                Method::GET,
                "/configs/fetch?groupKeys=SELECTOR,RULE,APP_AUTH",
            )
            .send()
            .await
            .unwrap();
        let value: Value = response.json().await.unwrap();
        if value["data"]["RULE"]["data"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            break value;
        }
        assert!(
            Instant::now() < deadline,
            "the rule never reached the cache"
        );
        tokio::task::yield_now().await;
    };
    insta::assert_json_snapshot!("fetch", fetched, {
        ".data.*.md5" => "[md5]",
        ".data.*.lastModifyTime" => "[ts]",
        ".data.SELECTOR.data[].id" => is_id(&selector, "[selector id]"),
        ".data.RULE.data[].id" => "[id]",
        ".data.RULE.data[].selectorId" => is_id(&selector, "[selector id]"),
    });
    let (answer, _) = listen(&client, "SELECTOR=stale,0&RULE=stale,0", None).await;
    insta::assert_json_snapshot!("listener", answer);
    served.stop().await;
}

#[tokio::test]
async fn a_stale_admin_reloads_when_a_client_has_seen_newer_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let db = db.to_str().unwrap();
    let hold = Duration::from_millis(300);
    let stale = Served::start(config(db, hold)).await;
    let stale_client = Client::login(&stale).await;
    let before = fetch(&stale_client, "groupKeys=SELECTOR").await;
    let fresh = Served::start(config(db, hold)).await;
    let fresh_client = Client::login(&fresh).await;
    fresh_client
        .send(
            Method::POST,
            "/selector",
            Some(selector_body("/other-admin")),
        )
        .await;
    let deadline = Instant::now() + DEADLINE;
    let seen = loop {
        let seen = fetch(&fresh_client, "groupKeys=SELECTOR").await;
        if seen.data["SELECTOR"].md5 != before.data["SELECTOR"].md5 {
            break seen;
        }
        assert!(
            Instant::now() < deadline,
            "the fresh admin never saw its own change"
        );
        tokio::task::yield_now().await;
    };
    let newest = &seen.data["SELECTOR"];
    assert!(newest.last_modify_time > before.data["SELECTOR"].last_modify_time);

    // The gateway holds the fresh admin's SELECTOR and polls the stale one: the stale admin
    // must reload from the database rather than send the gateway back to its old data.
    let query = format!("SELECTOR={},{}", newest.md5, newest.last_modify_time);
    let (answer, took) = listen(&stale_client, &query, None).await;
    assert_eq!(
        answer["data"],
        serde_json::json!([]),
        "after reloading, the client is current"
    );
    assert!(took >= hold);
    let reloaded = fetch(&stale_client, "groupKeys=SELECTOR").await;
    assert_eq!(reloaded.data["SELECTOR"].md5, newest.md5);
    assert_eq!(reloaded.data["SELECTOR"].data.get(), newest.data.get());
    fresh.stop().await;
    stale.stop().await;
}
