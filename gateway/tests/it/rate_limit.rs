//! The rate limiter's per-client key against spoofed forwarding headers (issue 35 row 6):
//! gateways fed by an in-test fake admin, counting in a real `redis-server`, routing to an
//! in-test upstream. ShenYu keys `REMOTE_ADDRESS_KEY_RESOLVER` on `X-Forwarded-For` & co.
//! from anyone: a new value per request is never limited, and every value (of any length)
//! becomes two Redis keys. gantry believes those headers only from `--trusted-proxies`, and
//! only when they hold an IP address.
//!
//! Each gateway has its own rateLimiter plugin (its own Redis config and counters), so other
//! tests of this binary may configure theirs.

use std::net::{SocketAddr, TcpListener as StdListener};
use std::process::{Child, Command, Stdio};

use futures_util::{SinkExt, StreamExt};
use model::{
    ConditionData, ConfigSet, DataEvent, DataEventType, PluginData, RuleData, SelectorData,
};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{Gateway, eventually, fake_admin, next_session};

/// A `redis-server` on a free loopback port, killed on drop.
struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    async fn start() -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let port = StdListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        let redis = Redis {
            child,
            port,
            _dir: dir,
        };
        eventually("redis-server to answer PING", || async {
            let mut conn = redis.conn().await?;
            let pong: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut conn).await;
            pong.ok()
        })
        .await;
        redis
    }

    async fn conn(&self) -> Option<redis::aio::MultiplexedConnection> {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.port))
            .ok()?
            .get_multiplexed_async_connection()
            .await
            .ok()
    }

    /// Every key.
    async fn keys(&self) -> Vec<String> {
        let mut conn = self.conn().await.expect("redis is up");
        redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut conn)
            .await
            .unwrap()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An upstream answering 200 to everything.
async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|| async { "ok" });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// rateLimiter on `redis` (`/g/limited/`: a token bucket of 3 per client address, no refill
/// to speak of) and divide (`/g/` to `upstream`).
fn config(redis: u16, upstream: SocketAddr) -> [DataEvent; 5] {
    let plugin = |id: &str, name: &str, sort, config: Option<String>| PluginData {
        id: id.into(),
        name: name.into(),
        enabled: true,
        sort,
        config,
        ..Default::default()
    };
    let selector =
        |id: &str, plugin_id: &str, plugin_name: &str, prefix: &str, handle| SelectorData {
            id: id.into(),
            name: id.into(),
            enabled: true,
            sort: 1,
            plugin_id: plugin_id.into(),
            plugin_name: plugin_name.into(),
            handle,
            condition_list: vec![ConditionData::new("uri", "startsWith", "/", prefix)],
            ..Default::default()
        };
    let rule = |id: &str, selector_id: &str, plugin_name: &str, handle: &str| RuleData {
        id: id.into(),
        name: id.into(),
        enabled: true,
        sort: 1,
        plugin_name: plugin_name.into(),
        selector_id: selector_id.into(),
        handle: Some(handle.into()),
        condition_data_list: vec![ConditionData::new("uri", "startsWith", "/", "/g/")],
        ..Default::default()
    };
    let config = ConfigSet {
        plugins: vec![
            plugin(
                "9",
                "rateLimiter",
                20,
                Some(format!(
                    r#"{{"mode":"standalone","url":"127.0.0.1:{redis}"}}"#
                )),
            ),
            plugin("5", "divide", 200, None),
        ],
        selectors: vec![
            selector("limits", "9", "rateLimiter", "/g/limited/", None),
            selector(
                "route",
                "5",
                "divide",
                "/g/",
                Some(format!(
                    r#"[{{"upstreamUrl":"{upstream}","protocol":"http://","weight":50,"status":true}}]"#
                )),
            ),
        ],
        rules: vec![
            rule(
                "per-client",
                "limits",
                "rateLimiter",
                r#"{"algorithmName":"tokenBucket","replenishRate":0.001,"burstCapacity":3,"requestCount":1,"keyResolverName":"REMOTE_ADDRESS_KEY_RESOLVER"}"#,
            ),
            rule(
                "route",
                "route",
                "divide",
                r#"{"loadBalance":"random","timeout":3000,"retry":0}"#,
            ),
        ],
        meta_data: Vec::new(),
    };
    DataEvent::full_sync(DataEventType::Myself, config, Vec::new())
}

/// A gateway trusting `trusted` as proxies, synced with [`config`], once it routes (the rules
/// arrive in one event, so the limiter's with divide's).
async fn gateway(config_events: [DataEvent; 5], trusted: &str) -> Gateway {
    let (admin_addr, mut sessions) = fake_admin().await;
    tokio::spawn(async move {
        let mut ws = next_session(&mut sessions).await;
        for event in config_events {
            ws.send(Message::text(event.to_websocket_text()))
                .await
                .unwrap();
        }
        while ws.next().await.is_some() {}
    });
    let config = gateway::Config {
        trusted_proxies: trusted.parse().unwrap(),
        ..gateway::Config::new(
            model::SyncMode::Websocket,
            vec![format!("http://{admin_addr}")],
        )
    };
    let gateway = Gateway::start(config).await;
    eventually("the route to go live", || async {
        let probe = reqwest::get(gateway.url("/g/probe")).await.ok()?;
        (probe.status() == 200).then_some(())
    })
    .await;
    gateway
}

/// The statuses of `GET /g/limited/x` sent with `X-Forwarded-For: <value>` for each value.
async fn statuses(gateway: &Gateway, values: &[String]) -> Vec<u16> {
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for value in values {
        let response = client
            .get(gateway.url("/g/limited/x"))
            .header("x-forwarded-for", value)
            .send()
            .await
            .unwrap();
        out.push(response.status().as_u16());
    }
    out
}

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn forwarding_headers_key_the_limiter_only_from_trusted_proxies() {
    let redis = Redis::start().await;
    let upstream = upstream().await;
    let untrusted = gateway(config(redis.port, upstream), "").await;
    let spoofed: Vec<String> = (1..=20).map(|i| format!("10.9.0.{i}")).collect();
    let got = statuses(&untrusted, &spoofed).await;
    let passed = got.iter().filter(|s| **s == 200).count();
    assert_eq!(
        (passed, &got[..3]),
        (3, &[200, 200, 200][..]),
        "a new X-Forwarded-For per request from an untrusted peer: {got:?}"
    );

    let trusted = gateway(config(redis.port, upstream), "127.0.0.0/8,::1").await;
    // Keys follow the header: each address has its own bucket of three.
    let got = statuses(&trusted, &spoofed).await;
    assert!(got.iter().all(|s| *s == 200), "{got:?}");
    let again: Vec<String> = std::iter::repeat_n("10.9.0.1".to_owned(), 3).collect();
    assert_eq!(statuses(&trusted, &again).await, [200, 200, 429]);
    // A value that is not an address counts as the peer, 127.0.0.1, whose bucket is empty.
    let garbage = vec![
        "unknown,UNKNOWN".to_owned(),
        "not-an-ip".to_owned(),
        format!("x{}", "a".repeat(8 * 1024)),
    ];
    assert_eq!(statuses(&trusted, &garbage).await, [429, 429, 429]);
    // Keys stay bounded: an address after the rule id.
    let keys = redis.keys().await;
    let longest = keys.iter().map(String::len).max().unwrap_or(0);
    assert!(longest <= 80, "a key of {longest} bytes: {keys:?}");
    // Two keys per client seen: 127.0.0.1 and the twenty spoofed addresses.
    assert_eq!(keys.len(), 2 * 21, "{keys:?}");
}
