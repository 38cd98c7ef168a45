//! The admin on a real PostgreSQL (`GANTRY_TEST_POSTGRES_URL`, e.g.
//! `postgres://user:pw@127.0.0.1:5432/gantry_test`). The test drops gantry's tables in that
//! database first, so point it at a throwaway database. Without the variable the tests are
//! reported as ignored, with the reason (admin/build.rs); `GANTRY_REQUIRE=postgres` makes them
//! fail instead.

use std::time::{Duration, Instant};

use crate::common::{Client, DEADLINE, Served, rule_body, selector_body};
use model::SyncMode;
use reqwest::Method;
use serde_json::{Value, json};

/// The server the tests use; they are built ignored without it unless `GANTRY_REQUIRE` names
/// postgres, which makes this fail.
fn postgres_url() -> String {
    std::env::var("GANTRY_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .expect("GANTRY_REQUIRE names postgres, but GANTRY_TEST_POSTGRES_URL is not set")
}

async fn wipe(url: &str) {
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    sqlx::query(
        "DROP TABLE IF EXISTS rule, selector, plugin_handle, plugin, meta_data, app_auth, \
         dashboard_user, _sqlx_migrations CASCADE",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

fn config(url: &str) -> admin::Config {
    admin::Config {
        sync: vec![SyncMode::Websocket, SyncMode::Http],
        long_poll_hold: Duration::from_millis(300),
        ..admin::Config::new(url)
    }
}

async fn digest(served: &Served) -> Value {
    reqwest::get(served.url("/actuator/digest"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn ok(client: &Client, method: Method, path: &str, body: Option<Value>) -> Value {
    let (status, value) = client.send(method, path, body).await;
    assert_eq!(status, 200, "{path}: {value}");
    value
}

async fn fetch_selector(client: &Client) -> (String, i64, String) {
    let fetched = ok(
        client,
        Method::GET,
        "/configs/fetch?groupKeys=SELECTOR",
        None,
    )
    .await;
    let group = &fetched["data"]["SELECTOR"];
    (
        group["md5"].as_str().unwrap().to_owned(),
        group["lastModifyTime"].as_i64().unwrap(),
        group["data"].to_string(),
    )
}

#[tokio::test]
#[cfg_attr(
    gantry_postgres_skip,
    ignore = "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
)]
async fn the_admin_runs_on_postgres() {
    let url = postgres_url();
    let _guard = SERIAL.lock().await;
    wipe(&url).await;

    let served = Served::start(config(&url)).await;
    let client = Client::login(&served).await;
    let selector = ok(
        &client,
        Method::POST,
        "/selector",
        Some(selector_body("/pg")),
    )
    .await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let doomed = ok(
        &client,
        Method::POST,
        "/selector",
        Some(selector_body("/doomed")),
    )
    .await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    for (owner, name) in [(&selector, "kept"), (&doomed, "d1"), (&doomed, "d2")] {
        ok(&client, Method::POST, "/rule", Some(rule_body(owner, name))).await;
    }
    ok(
        &client,
        Method::PUT,
        "/plugin/5",
        Some(json!({"role":"Proxy","sort":200,"enabled":true,"config":"{}"})),
    )
    .await;
    ok(
        &client,
        Method::POST,
        "/meta-data/createOrUpdate",
        Some(
            json!({"appName":"a","path":"/pg/x","rpcType":"http","serviceName":"s",
                    "methodName":"m","enabled":true}),
        ),
    )
    .await;
    ok(
        &client,
        Method::POST,
        "/appAuth/apply",
        Some(json!({"appName":"a","pathList":["/pg/**"]})),
    )
    .await;

    // A batch naming an unknown id is one transaction: nothing changes.
    let (status, _) = client
        .send(
            Method::POST,
            "/selector/batchEnabled",
            Some(json!({"ids":[selector, "nope"],"enabled":false})),
        )
        .await;
    assert_eq!(status, 404);
    let detail = ok(&client, Method::GET, &format!("/selector/{selector}"), None).await;
    assert_eq!(detail["data"]["enabled"], true);

    // Deleting a selector takes its rules in the same transaction.
    let deleted = ok(
        &client,
        Method::DELETE,
        "/selector/batch",
        Some(json!({"ids":[doomed]})),
    )
    .await;
    assert_eq!(deleted["data"], 1);
    let rules = ok(&client, Method::GET, "/rule", None).await;
    assert_eq!(rules["data"]["page"]["totalCount"], 1);

    let before = digest(&served).await;
    assert_eq!(
        (&before["selectors"], &before["rules"], &before["metaData"]),
        (&json!(1), &json!(1), &json!(1))
    );
    served.stop().await;
    let again = Served::start(config(&url)).await;
    assert_eq!(digest(&again).await, before, "the data survives a restart");
    again.stop().await;
}

#[tokio::test]
#[cfg_attr(
    gantry_postgres_skip,
    ignore = "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
)]
async fn two_admins_on_one_postgres_give_consistent_long_poll_answers() {
    let url = postgres_url();
    let _guard = SERIAL.lock().await;
    wipe(&url).await;
    let stale = Served::start(config(&url)).await;
    let stale_client = Client::login(&stale).await;
    let (old_md5, old_ts, _) = fetch_selector(&stale_client).await;
    let fresh = Served::start(config(&url)).await;
    let fresh_client = Client::login(&fresh).await;
    ok(
        &fresh_client,
        Method::POST,
        "/selector",
        Some(selector_body("/elsewhere")),
    )
    .await;
    let deadline = Instant::now() + DEADLINE;
    let (md5, ts, data) = loop {
        let seen = fetch_selector(&fresh_client).await;
        if seen.0 != old_md5 {
            break seen;
        }
        assert!(
            Instant::now() < deadline,
            "the fresh admin never saw its change"
        );
        tokio::task::yield_now().await;
    };
    assert!(ts > old_ts);
    let answer: Value = stale_client
        .request(
            Method::POST,
            &format!("/configs/listener?SELECTOR={md5},{ts}"),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["data"],
        json!([]),
        "the stale admin reloads instead of sending the client back"
    );
    let (reloaded_md5, _, reloaded) = fetch_selector(&stale_client).await;
    assert_eq!((reloaded_md5, reloaded), (md5, data));
    assert_eq!(digest(&stale).await, digest(&fresh).await);
    fresh.stop().await;
    stale.stop().await;
}

/// The tests share one database, so they take turns.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
#[cfg_attr(
    gantry_postgres_skip,
    ignore = "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
)]
async fn admins_on_one_postgres_share_the_stored_password() {
    let url = postgres_url();
    let _guard = SERIAL.lock().await;
    wipe(&url).await;
    let login = |served: &Served, password: &'static str| {
        let url = served.url("/platform/login");
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&json!({"userName": "admin", "password": password}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let setter = Served::start(admin::Config {
        password: Some("pg-Pa55word".to_owned()),
        ..config(&url)
    })
    .await;
    let other = Served::start(config(&url)).await;
    assert_eq!(
        login(&other, "pg-Pa55word").await,
        200,
        "kept, not reset to the default"
    );
    assert_eq!(login(&other, "123456").await, 401);
    other.stop().await;
    setter.stop().await;
}
