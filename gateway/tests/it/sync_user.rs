//! HTTP long polling with the admin's sync user, against the real admin served in-process:
//! while `admin` is locked out from the gateway's own address and the sync user's name is
//! being guessed from another, the gateway logs in as the sync user, logs in again as its
//! tokens expire, and keeps receiving changes. Every wait polls a condition until a deadline.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use model::SyncMode;
use serde_json::{Value, json};

use crate::common::{DEADLINE, Gateway, InProcessAdmin, eventually};

const SYNC_USER: &str = "gantry-sync";
const SYNC_PASSWORD: &str = "sync-Pa55word";

/// `POST /platform/login` to the admin at `admin` from loopback address `local`.
async fn login(admin: SocketAddr, local: &str, user: &str, password: &str) -> (u16, Value) {
    let response = reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().unwrap())
        .timeout(DEADLINE)
        .build()
        .unwrap()
        .post(format!("http://{admin}/platform/login"))
        .json(&json!({"userName": user, "password": password}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// `method` `path` on the admin with `token`: the status and the body.
async fn call(
    admin: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let response = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("http://{admin}{path}"))
        .header("X-Access-Token", token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_gateway_logs_in_again_as_the_sync_user_while_admin_is_locked_out() {
    let ttl = Duration::from_millis(1000);
    let config = admin::Config {
        sync: vec![SyncMode::Http],
        sync_user: Some(format!("{SYNC_USER}:{SYNC_PASSWORD}").parse().unwrap()),
        token_ttl: ttl,
        long_poll_hold: Duration::from_millis(200),
        login_throttle: admin::LoginThrottle {
            max_failures: 2,
            lockout: Duration::from_secs(60),
            max_lockout: Duration::from_secs(600),
            max_delay: Duration::from_millis(200),
        },
        ..admin::Config::new(":memory:")
    };
    let served = InProcessAdmin::start(config).await;
    let admin = served.addr;

    // `admin` is locked out from the gateway's address; the sync user is guessed at from
    // another one.
    for _ in 0..2 {
        assert_eq!(login(admin, "127.0.0.1", "admin", "guess").await.0, 401);
    }
    let (status, body) = login(admin, "127.0.0.1", "admin", "123456").await;
    assert_eq!(status, 429, "{body}");
    for _ in 0..4 {
        let (status, _) = login(admin, "127.0.0.2", SYNC_USER, "guess").await;
        assert!(status == 401 || status == 429, "{status}");
    }

    let gateway = Gateway::start(gateway::Config {
        username: SYNC_USER.to_owned(),
        password: SYNC_PASSWORD.to_owned(),
        ..gateway::Config::new(SyncMode::Http, vec![format!("http://{admin}")])
    })
    .await;
    eventually("the full sync", || async {
        let sync = gateway.sync_health().await;
        (sync["connected"] == true && sync["fullSyncs"].as_u64() >= Some(5)).then_some(())
    })
    .await;

    // A sync token taken now expires with the gateway's first one.
    let (status, body) = login(admin, "127.0.0.3", SYNC_USER, SYNC_PASSWORD).await;
    assert_eq!(status, 200, "{body}");
    let first = body["data"]["token"].as_str().unwrap().to_owned();
    eventually("the first sync token to expire", || async {
        let (status, _) = call(
            admin,
            "GET",
            "/configs/fetch?groupKeys=PLUGIN",
            &first,
            Value::Null,
        )
        .await;
        (status == 401).then_some(())
    })
    .await;

    // A change made now reaches the gateway only through a token it logged in for again.
    let before = gateway.sync_health().await["fullSyncs"].as_u64().unwrap();
    let (status, body) = login(admin, "127.0.0.3", "admin", "123456").await;
    assert_eq!(status, 200, "{body}");
    let token = body["data"]["token"].as_str().unwrap().to_owned();
    let (status, plugins) = call(admin, "GET", "/plugin/all", &token, Value::Null).await;
    assert_eq!(status, 200, "{plugins}");
    let id = plugins["data"][0]["id"].as_str().unwrap().to_owned();
    let enabled = plugins["data"][0]["enabled"].as_bool().unwrap();
    let (status, body) = call(
        admin,
        "POST",
        "/plugin/enabled",
        &token,
        json!({"ids": [id], "enabled": !enabled}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    eventually("the change at the gateway", || async {
        let sync = gateway.sync_health().await;
        (sync["connected"] == true && sync["fullSyncs"].as_u64() > Some(before)).then_some(())
    })
    .await;

    gateway.stop().await;
    served.stop().await;
}
