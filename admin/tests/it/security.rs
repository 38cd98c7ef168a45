//! Authentication: every REST and long-polling endpoint needs a valid, unexpired token; the
//! websocket needs the sync token when one is configured.

use std::time::{Duration, Instant};

use crate::common::{Client, DEADLINE, Served};
use futures_util::{SinkExt, StreamExt};
use model::SyncMode;
use reqwest::Method;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// Every endpoint behind the token, with a body that would be valid enough to reach it.
const PROTECTED: &[(&str, &str)] = &[
    ("GET", "/plugin"),
    ("GET", "/plugin/all"),
    ("GET", "/plugin/5"),
    ("PUT", "/plugin/5"),
    ("POST", "/plugin/enabled"),
    ("GET", "/selector"),
    ("POST", "/selector"),
    ("GET", "/selector/1"),
    ("PUT", "/selector/1"),
    ("DELETE", "/selector/batch"),
    ("POST", "/selector/list/search"),
    ("POST", "/selector/batchEnabled"),
    ("GET", "/rule"),
    ("POST", "/rule"),
    ("GET", "/rule/1"),
    ("PUT", "/rule/1"),
    ("DELETE", "/rule/batch"),
    ("POST", "/rule/list/search"),
    ("POST", "/rule/batchEnabled"),
    ("GET", "/meta-data/queryList"),
    ("GET", "/meta-data/findAll"),
    ("GET", "/meta-data/1"),
    ("POST", "/meta-data/createOrUpdate"),
    ("DELETE", "/meta-data/batchDeleted"),
    ("POST", "/meta-data/batchEnabled"),
    ("POST", "/appAuth/apply"),
    ("GET", "/appAuth/findPageByQuery"),
    ("GET", "/appAuth/detail?id=1"),
    ("POST", "/appAuth/updateDetail"),
    ("POST", "/appAuth/batchDelete"),
    ("POST", "/appAuth/batchEnabled"),
    ("GET", "/configs/fetch?groupKeys=PLUGIN"),
    ("POST", "/configs/listener?PLUGIN=x,0"),
];

fn config(token_ttl: Duration) -> admin::Config {
    admin::Config {
        sync: vec![SyncMode::Websocket, SyncMode::Http],
        token_ttl,
        long_poll_hold: Duration::from_millis(100),
        ..admin::Config::new(":memory:")
    }
}

async fn status_with(
    served: &Served,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method.parse().unwrap(), served.url(path))
        .header("content-type", "application/json")
        .body("{}");
    if let Some(token) = token {
        request = request.header("X-Access-Token", token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn every_endpoint_needs_a_valid_token() {
    let served = Served::start(config(Duration::from_secs(3600))).await;
    for (method, path) in PROTECTED {
        for token in [None, Some("not-a-token")] {
            let (status, body) = status_with(&served, method, path, token).await;
            assert_eq!(status, 401, "{method} {path} with {token:?}");
            assert_eq!(
                body,
                json!({"code":600,"message":"token is error","data":null})
            );
        }
    }
    let client = Client::login(&served).await;
    let (status, _) = client.send(Method::GET, "/plugin/all", None).await;
    assert_eq!(status, 200);
    served.stop().await;
}

#[tokio::test]
async fn tokens_expire() {
    let ttl = Duration::from_millis(1000);
    let served = Served::start(config(ttl)).await;
    let login: Value = reqwest::Client::new()
        .post(served.url("/platform/login"))
        .json(&json!({"userName":"admin","password":"123456"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(login["data"]["expiredTime"], 1000);
    let token = login["data"]["token"].as_str().unwrap().to_owned();
    let (status, _) = status_with(&served, "GET", "/plugin/all", Some(&token)).await;
    assert_eq!(status, 200, "the token is valid at first");
    let deadline = Instant::now() + ttl + DEADLINE;
    loop {
        let (status, _) = status_with(&served, "GET", "/plugin/all", Some(&token)).await;
        match status {
            200 => assert!(Instant::now() < deadline, "the token never expired"),
            401 => break,
            other => panic!("unexpected status {other}"),
        }
        // Poll the condition without busy-spinning the server.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (method, path) in PROTECTED {
        let (status, _) = status_with(&served, method, path, Some(&token)).await;
        assert_eq!(status, 401, "{method} {path} with an expired token");
    }
    served.stop().await;
}

async fn connect(served: &Served, token: Option<&str>) -> Result<(), WsError> {
    let mut request = format!("ws://{}/websocket", served.addr)
        .into_client_request()
        .unwrap();
    if let Some(token) = token {
        request
            .headers_mut()
            .insert("X-Shenyu-Sync-Token", token.parse().unwrap());
    }
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    socket.send(Message::text("MYSELF")).await.unwrap();
    let frame = tokio::time::timeout(DEADLINE, socket.next())
        .await
        .expect("a frame in time")
        .expect("open")
        .unwrap();
    let frame: Value = serde_json::from_str(frame.to_text().unwrap()).unwrap();
    assert_eq!(frame["groupType"], "PLUGIN");
    Ok(())
}

fn assert_refused(result: Result<(), WsError>) {
    match result {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 401),
        other => panic!("expected an HTTP 401, got {other:?}"),
    }
}

#[tokio::test]
async fn the_websocket_needs_the_sync_token_when_one_is_set() {
    let served = Served::start(admin::Config {
        sync_token: Some("sync-s3cret".to_owned()),
        ..config(Duration::from_secs(60))
    })
    .await;
    assert_refused(connect(&served, None).await);
    assert_refused(connect(&served, Some("sync-s3cre")).await);
    assert_refused(connect(&served, Some("sync-s3cret-")).await);
    connect(&served, Some("sync-s3cret")).await.unwrap();
    let (status, _) = status_with(&served, "GET", "/websocket", None).await;
    assert_eq!(
        status, 401,
        "a plain GET is refused before the upgrade check"
    );
    served.stop().await;

    let open = Served::start(config(Duration::from_secs(60))).await;
    connect(&open, None).await.unwrap();
    connect(&open, Some("anything")).await.unwrap();
    open.stop().await;
}

#[tokio::test]
async fn a_hashed_password_can_be_configured() {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
    let params = argon2::Params::new(4096, 1, 1, None).unwrap();
    let phc = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
        .hash_password(b"from-a-hash", &salt)
        .unwrap()
        .to_string();
    let served = Served::start(admin::Config {
        password: Some(phc),
        ..config(Duration::from_secs(60))
    })
    .await;
    let login = |password: &'static str| {
        let url = served.url("/platform/login");
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&json!({"userName":"admin","password":password}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(login("from-a-hash").await, 200);
    assert_eq!(login("123456").await, 401);
    served.stop().await;
}

async fn login_status(served: &Served, user: &str, password: &str) -> u16 {
    reqwest::Client::new()
        .post(served.url("/platform/login"))
        .json(&json!({"userName": user, "password": password}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Every byte the SQLite database left in `dir` (the file and any WAL or shared-memory file).
fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test]
async fn the_password_lives_in_the_database_as_a_hash() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("admin.db");
    let with_password = |password: Option<&str>| admin::Config {
        password: password.map(str::to_owned),
        ..config(Duration::from_secs(60))
    };
    let on_file = |config: admin::Config| admin::Config {
        db: db.to_str().unwrap().to_owned(),
        ..config
    };

    // A new user without --password gets ShenYu's default.
    let served = Served::start(on_file(with_password(None))).await;
    assert_eq!(login_status(&served, "admin", "123456").await, 200);
    served.stop().await;

    let served = Served::start(on_file(with_password(Some("first-Pa55word")))).await;
    assert_eq!(login_status(&served, "admin", "first-Pa55word").await, 200);
    assert_eq!(login_status(&served, "admin", "123456").await, 401);
    served.stop().await;

    // Without the flag the stored password is kept across a restart.
    let served = Served::start(on_file(with_password(None))).await;
    assert_eq!(login_status(&served, "admin", "first-Pa55word").await, 200);
    assert_eq!(login_status(&served, "admin", "123456").await, 401);
    assert_eq!(login_status(&served, "root", "first-Pa55word").await, 401);
    served.stop().await;

    // A new flag rotates it.
    let served = Served::start(on_file(with_password(Some("second-Pa55word")))).await;
    assert_eq!(login_status(&served, "admin", "second-Pa55word").await, 200);
    assert_eq!(login_status(&served, "admin", "first-Pa55word").await, 401);
    served.stop().await;

    let bytes = database_bytes(dir.path());
    assert!(contains(&bytes, "$argon2id$"), "the hash is stored");
    for password in ["first-Pa55word", "second-Pa55word"] {
        assert!(
            !contains(&bytes, password),
            "{password} is in the database files"
        );
    }
}

/// `config` whose logins lock out after `max_failures` failures for `lockout` (doubling),
/// delayed by at most 200 ms.
fn throttled(max_failures: u32, lockout: Duration) -> admin::Config {
    admin::Config {
        login_throttle: admin::LoginThrottle {
            max_failures,
            lockout,
            max_lockout: lockout * 8,
            max_delay: Duration::from_millis(200),
        },
        ..config(Duration::from_secs(60))
    }
}

/// A login sent from loopback address `local`: status, body and `Retry-After`.
async fn login_from(
    served: &Served,
    local: &str,
    user: &str,
    password: &str,
) -> (u16, Value, Option<String>) {
    let response = reqwest::Client::builder()
        .local_address(local.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
        .post(served.url("/platform/login"))
        .json(&json!({"userName": user, "password": password}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, response.json().await.unwrap(), retry_after)
}

#[tokio::test]
async fn failed_logins_lock_out_the_user_from_that_address_only() {
    let served = Served::start(throttled(3, Duration::from_secs(60))).await;
    for _ in 0..3 {
        let (status, ..) = login_from(&served, "127.0.0.2", "admin", "wrong").await;
        assert_eq!(status, 401);
    }
    // The right password from the failing address: that pair is locked out.
    let (status, body, retry_after) = login_from(&served, "127.0.0.2", "admin", "123456").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body,
        json!({
            "code": 429,
            "message": "too many failed logins for this user from this address; try again in 60 s",
            "data": null
        })
    );
    assert_eq!(retry_after.as_deref(), Some("60"));
    // The right password from another address is let in; another user from the failing
    // address is only delayed.
    let (status, body, _) = login_from(&served, "127.0.0.3", "admin", "123456").await;
    assert_eq!(status, 200, "{body}");
    let (status, ..) = login_from(&served, "127.0.0.2", "root", "123456").await;
    assert_eq!(status, 401, "root does not exist: a plain wrong login");
    served.stop().await;
}

#[tokio::test]
async fn guesses_from_many_addresses_never_refuse_the_right_password() {
    let served = Served::start(throttled(2, Duration::from_secs(60))).await;
    // Every guesser locks itself out; the user collects far more failures than allowed.
    for i in 10..20 {
        let guesser = format!("127.0.0.{i}");
        for _ in 0..2 {
            let (status, ..) = login_from(&served, &guesser, "admin", "wrong").await;
            assert_eq!(status, 401);
        }
        let (status, ..) = login_from(&served, &guesser, "admin", "wrong").await;
        assert_eq!(status, 429);
        // Between guesses, the right password from elsewhere still gets in.
        let (status, body, _) = login_from(&served, "127.0.0.9", "admin", "123456").await;
        assert_eq!(status, 200, "after guesses from {guesser}: {body}");
    }
    served.stop().await;
}

#[tokio::test]
async fn long_user_names_are_refused() {
    let served = Served::start(throttled(2, Duration::from_secs(60))).await;
    let long = "a".repeat(257);
    for _ in 0..5 {
        let (status, body, _) = login_from(&served, "127.0.0.5", &long, "wrong").await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(
            body,
            json!({"code": 500, "message": "userName: longer than 256 bytes", "data": null})
        );
    }
    let (status, ..) = login_from(&served, "127.0.0.5", &long[..256], "wrong").await;
    assert_eq!(status, 401, "256 bytes is a name like any other");
    served.stop().await;
}

/// `config` with the sync user `gantry-sync:sync-Pa55word`.
fn with_sync_user(config: admin::Config) -> admin::Config {
    admin::Config {
        sync_user: Some("gantry-sync:sync-Pa55word".parse().unwrap()),
        ..config
    }
}

#[tokio::test]
async fn the_sync_user_opens_only_the_sync_endpoints() {
    let served = Served::start(with_sync_user(throttled(2, Duration::from_secs(60)))).await;
    // The dashboard user is locked out from this address...
    for _ in 0..2 {
        let (status, ..) = login_from(&served, "127.0.0.6", "admin", "wrong").await;
        assert_eq!(status, 401);
    }
    let (status, ..) = login_from(&served, "127.0.0.6", "admin", "123456").await;
    assert_eq!(status, 429);
    // ...the sync user is not.
    let (status, body, _) = login_from(&served, "127.0.0.6", "gantry-sync", "sync-Pa55word").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["userName"], "gantry-sync");
    let token = body["data"]["token"].as_str().unwrap().to_owned();
    let (status, body) = status_with(
        &served,
        "GET",
        "/configs/fetch?groupKeys=PLUGIN",
        Some(&token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = status_with(
        &served,
        "POST",
        "/configs/listener?PLUGIN=x,0",
        Some(&token),
    )
    .await;
    assert_eq!(status, 200);
    for (method, path) in PROTECTED
        .iter()
        .filter(|(_, p)| !p.starts_with("/configs/"))
    {
        let (status, _) = status_with(&served, method, path, Some(&token)).await;
        assert_eq!(status, 401, "{method} {path} with the sync user's token");
    }
    let (status, ..) = login_from(&served, "127.0.0.7", "gantry-sync", "123456").await;
    assert_eq!(status, 401);
    served.stop().await;
}

#[tokio::test]
async fn a_lockout_ends_and_a_success_starts_over() {
    // Long enough to outlast the second failure's password check on a loaded machine.
    let served = Served::start(throttled(2, Duration::from_secs(3))).await;
    for _ in 0..2 {
        let (status, ..) = login_from(&served, "127.0.0.4", "admin", "wrong").await;
        assert_eq!(status, 401);
    }
    let (status, _, retry_after) = login_from(&served, "127.0.0.4", "admin", "123456").await;
    assert_eq!(status, 429);
    let retry_after: u64 = retry_after.unwrap().parse().unwrap();
    assert!((1..=3).contains(&retry_after), "{retry_after}");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (status, body, _) = login_from(&served, "127.0.0.4", "admin", "123456").await;
        match status {
            429 => assert!(Instant::now() < deadline, "the lockout never ended"),
            200 => break,
            other => panic!("unexpected status {other}: {body}"),
        }
        // Poll the condition without busy-spinning the server.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The success cleared the count: one failure is again just a failure.
    let (status, ..) = login_from(&served, "127.0.0.4", "admin", "wrong").await;
    assert_eq!(status, 401);
    let (status, ..) = login_from(&served, "127.0.0.4", "admin", "123456").await;
    assert_eq!(status, 200);
    served.stop().await;
}
