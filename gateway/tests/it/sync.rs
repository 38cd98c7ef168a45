//! End to end: the gateway's `serve` against an in-test fake admin (websocket) and an in-test
//! upstream. Every wait polls a condition until a deadline; nothing sleeps a fixed time.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use futures_util::SinkExt;
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use model::{
    ConditionData, ConfigSet, DataEvent, DataEventType, EventPayload, PluginData, RuleData,
    SelectorData,
};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{AdminConn, Gateway, await_myself, eventually, fake_admin, next_session};

/// An upstream echoing what it received; `/api/slow` never answers.
pub(crate) async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|req: Request| async move {
        if req.uri().path() == "/api/slow" {
            std::future::pending::<()>().await;
        }
        let header = |name: &str| {
            req.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let body = json!({
            "method": req.method().as_str(),
            "path": req.uri().path(),
            "query": req.uri().query(),
            "host": header("host"),
            "xff": header("x-forwarded-for"),
            "connection": header("connection"),
        });
        ([("x-gantry-upstream", "up")], axum::Json(body))
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

struct Http(Client<HttpConnector, Body>);

impl Http {
    async fn get(&self, url: String) -> (StatusCode, HeaderMap, Value) {
        let req = http::Request::get(url)
            .header("connection", "x-drop")
            .body(Body::empty())
            .unwrap();
        let resp = self.0.request(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (parts.status, parts.headers, value)
    }
}

pub(crate) fn plugin() -> PluginData {
    PluginData {
        id: "5".into(),
        name: "divide".into(),
        enabled: true,
        sort: 200,
        ..Default::default()
    }
}

pub(crate) fn selector(id: &str, prefix: &str, upstream: SocketAddr) -> SelectorData {
    SelectorData {
        id: id.into(),
        name: format!("sel-{id}"),
        enabled: true,
        sort: 1,
        plugin_id: "5".into(),
        plugin_name: "divide".into(),
        handle: Some(format!(
            r#"[{{"upstreamUrl":"{upstream}","protocol":"http://","weight":50,"status":true}}]"#
        )),
        condition_list: vec![ConditionData::new("uri", "startsWith", "/", prefix)],
        ..Default::default()
    }
}

pub(crate) fn rule(id: &str, selector_id: &str, pattern: &str) -> RuleData {
    RuleData {
        id: id.into(),
        name: format!("rule-{id}"),
        enabled: true,
        sort: 1,
        plugin_name: "divide".into(),
        selector_id: selector_id.into(),
        handle: Some(r#"{"loadBalance":"random","timeout":300}"#.into()),
        condition_data_list: vec![ConditionData::new("uri", "match", "/", pattern)],
        ..Default::default()
    }
}

async fn send(conn: &mut AdminConn, event: DataEvent) {
    conn.send(Message::text(event.to_websocket_text()))
        .await
        .unwrap();
}

/// Answers `MYSELF` the way gantry's admin does: all five groups, even empty ones.
pub(crate) async fn full_sync(conn: &mut AdminConn, config: &ConfigSet) {
    for event in DataEvent::full_sync(DataEventType::Myself, config.clone(), Vec::new()) {
        send(conn, event).await;
    }
}

#[tokio::test]
async fn websocket_sync_drives_routing() {
    let (admin, mut sessions) = fake_admin().await;
    let up = upstream().await;
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    // The first admin refuses: the subscriber moves on to the next.
    let config = gateway::Config::new(
        model::SyncMode::Websocket,
        vec![format!("http://{refused}"), format!("http://{admin}")],
    );
    let gateway = Gateway::start(config).await;
    let gw = gateway.addr;
    let http = Http(Client::builder(TokioExecutor::new()).build(HttpConnector::new()));
    let url = |path: &str| format!("http://{gw}{path}");

    // Before any config: divide is absent → -106.
    let (status, _, body) = http.get(url("/api/hello")).await;
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::NOT_FOUND, Some(-106))
    );

    // Full sync with one route.
    let mut conn = next_session(&mut sessions).await;
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors: vec![selector("1", "/api", up), selector("3", "/down", refused)],
        rules: vec![rule("2", "1", "/api/**"), rule("4", "3", "/down/**")],
        meta_data: Vec::new(),
    };
    full_sync(&mut conn, &config).await;
    let (headers, body) = eventually("route to the upstream", || async {
        let (status, headers, body) = http.get(url("/api/hello%20x?b=1&a=%2F")).await;
        (status == StatusCode::OK).then_some((headers, body))
    })
    .await;
    assert_eq!(headers["x-gantry-upstream"], "up");
    assert_eq!(headers["x-gantry-selector-id"], "1");
    assert_eq!(headers["x-gantry-rule-id"], "2");
    assert_eq!(body["path"], "/api/hello%20x");
    assert_eq!(body["query"], "b=1&a=%2F");
    assert_eq!(body["host"], up.to_string());
    assert_eq!(body["xff"], "127.0.0.1");
    assert_eq!(body["connection"], Value::Null);

    let applied = http.get(url("/actuator/digest")).await.2;
    assert_eq!(applied["digest"], config.digest());
    assert_eq!(
        (applied["selectors"].as_u64(), applied["rules"].as_u64()),
        (Some(2), Some(2))
    );
    let (_, _, health) = http.get(url("/actuator/health")).await;
    assert_eq!(health["status"], "UP");
    assert_eq!(health["sync"]["connected"], true);
    assert_eq!(health["sync"]["fullSyncs"], 5);
    let (_, _, selectors) = http.get(url("/actuator/selectorData")).await;
    assert_eq!(selectors[0]["divide"].as_array().map(Vec::len), Some(2));

    // No rule matches → -102; refused upstream → 502 -103; slow upstream → 504.
    let (status, _, body) = http.get(url("/apix")).await;
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::NOT_FOUND, Some(-102))
    );
    let (status, _, body) = http.get(url("/down/x")).await;
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::BAD_GATEWAY, Some(-103))
    );
    let (status, _, body) = http.get(url("/api/slow")).await;
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::GATEWAY_TIMEOUT, Some(504))
    );

    // Malformed frames are rejected; the last good config keeps serving.
    conn.send(Message::text("{not json")).await.unwrap();
    conn.send(Message::text(
        r#"{"groupType":"SELECTOR","eventType":"UPDATE","data":[{"sort":"x"}]}"#,
    ))
    .await
    .unwrap();
    eventually("two rejected frames", || async {
        let (_, _, h) = http.get(url("/actuator/health")).await;
        (h["sync"]["eventsRejected"] == 2).then_some(())
    })
    .await;
    // Nothing changed: the same digest, version and applied time.
    assert_eq!(http.get(url("/actuator/digest")).await.2, applied);
    let (status, _, _) = http.get(url("/api/hello")).await;
    assert_eq!(status, StatusCode::OK);

    // DELETE the selector → -107.
    send(
        &mut conn,
        DataEvent::new(
            DataEventType::Delete,
            EventPayload::Selector(vec![selector("1", "/api", up)]),
        ),
    )
    .await;
    eventually("selector deleted", || async {
        let (status, _, body) = http.get(url("/api/hello")).await;
        (status == StatusCode::NOT_FOUND && body["code"] == -107).then_some(())
    })
    .await;
    assert_eq!(http.get(url("/actuator/digest")).await.2["rules"], 1);

    // The admin drops the connection: the gateway reconnects and asks for MYSELF again; the
    // full sync brings the route back.
    drop(conn);
    eventually("disconnect noticed", || async {
        let (_, _, h) = http.get(url("/actuator/health")).await;
        (h["sync"]["connected"] == false).then_some(())
    })
    .await;
    let mut conn = next_session(&mut sessions).await;
    full_sync(&mut conn, &config).await;
    eventually("route restored after reconnect", || async {
        let (status, _, _) = http.get(url("/api/hello")).await;
        (status == StatusCode::OK).then_some(())
    })
    .await;
    eventually("resync recorded", || async {
        let (_, _, h) = http.get(url("/actuator/health")).await;
        (h["sync"]["fullSyncs"] == 10 && h["sync"]["connected"] == true).then_some(())
    })
    .await;
    // The same config again: the same digest, a newer version (the delete and the resync's
    // groups each changed the served config; how many swaps the resync takes depends on how
    // its frames arrive) and a later time at which it went live.
    let reapplied = http.get(url("/actuator/digest")).await.2;
    assert_eq!(reapplied["digest"], applied["digest"]);
    assert!(
        reapplied["version"].as_u64() > applied["version"].as_u64(),
        "{reapplied} after {applied}"
    );
    assert!(reapplied["appliedAtUs"].as_u64() > applied["appliedAtUs"].as_u64());

    let stopped = gateway.stop();
    drop(http);
    stopped.await;
}

/// An upstream that answers every request with a 5-byte body: `split`, in two pieces, as
/// streaming and chunked upstreams do (the head, then 2 ms later, the upstream's own pace,
/// the body); else in one write, after the same 2 ms.
async fn piece_upstream(split: bool) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            stream.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                loop {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        let head = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-gantry-upstream: two\r\n\r\n";
                        if split && stream.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        let rest = if split {
                            b"hello".to_vec()
                        } else {
                            [head.as_bytes(), b"hello"].concat()
                        };
                        if stream.write_all(&rest).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// A keep-alive client through the gateway to an upstream that writes its head and body
/// separately gets its answers in a few ms: the gateway's client socket must not wait for
/// delayed ACKs (Nagle), which costs ~40 ms per answer without `TCP_NODELAY`. The baseline
/// is measured in the same test: the same client through the same gateway to an upstream that
/// answers in one piece, the two routes called in turn, so that a loaded machine slows both.
#[tokio::test]
async fn a_two_piece_answer_is_not_held_back() {
    let (admin, mut sessions) = fake_admin().await;
    let up = piece_upstream(true).await;
    let whole = piece_upstream(false).await;
    let config = gateway::Config::new(model::SyncMode::Websocket, vec![format!("http://{admin}")]);
    let gateway = Gateway::start(config).await;
    let gw = gateway.addr;
    let mut conn = next_session(&mut sessions).await;
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors: vec![selector("1", "/api", up), selector("3", "/whole", whole)],
        rules: vec![rule("2", "1", "/api/**"), rule("4", "3", "/whole/**")],
        meta_data: Vec::new(),
    };
    full_sync(&mut conn, &config).await;
    // One keep-alive connection, as a browser or an SDK client would use.
    let client: Client<HttpConnector, Body> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(1)
        .build(HttpConnector::new());
    let client = &client;
    let get = |path: &'static str| async move {
        let started = tokio::time::Instant::now();
        let resp = client
            .request(
                http::Request::get(format!("http://{gw}{path}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, body, started.elapsed())
    };
    eventually("the routes", || async {
        (get("/api/x").await.0 == StatusCode::OK && get("/whole/x").await.0 == StatusCode::OK)
            .then_some(())
    })
    .await;
    let (mut split, mut baseline) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        for (path, times) in [("/api/x", &mut split), ("/whole/x", &mut baseline)] {
            let (status, body, took) = get(path).await;
            assert_eq!(
                (status, &body[..]),
                (StatusCode::OK, &b"hello"[..]),
                "{path}"
            );
            times.push(took);
        }
    }
    split.sort();
    baseline.sort();
    // The medians of nine: one slow answer on a loaded machine does not decide it, a stall on
    // every two-piece answer does. A delayed-ACK stall costs ~40 ms whatever the load, so the
    // two-piece answers may take the one-piece ones' median (the same gateway, client and
    // 2 ms upstream pace, measured in turn) plus half a stall, and no more.
    let bound = baseline[4] + Duration::from_millis(20);
    assert!(
        split[4] < bound,
        "two-piece median {:?} over the one-piece median {:?} + 20 ms (two-piece: {split:?}, \
         one-piece: {baseline:?})",
        split[4],
        baseline[4]
    );
    let stopped = gateway.stop();
    drop(conn);
    stopped.await;
}

/// `--sync-style full`: an increment is only a signal. The gateway asks for `MYSELF` again,
/// holds the increment (the config it serves does not change), and the full sync that
/// answers replaces every group.
#[tokio::test]
async fn full_style_takes_an_increment_as_a_signal_to_resync() {
    let (admin, mut sessions) = fake_admin().await;
    let up = upstream().await;
    let mut config =
        gateway::Config::new(model::SyncMode::Websocket, vec![format!("http://{admin}")]);
    config.sync_style = model::SyncStyle::Full;
    let gateway = Gateway::start(config).await;
    let http = Http(Client::builder(TokioExecutor::new()).build(HttpConnector::new()));
    let url = |path: &str| format!("http://{}{path}", gateway.addr);

    let mut conn = next_session(&mut sessions).await;
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors: vec![selector("1", "/api", up)],
        rules: vec![rule("2", "1", "/api/**")],
        meta_data: Vec::new(),
    };
    full_sync(&mut conn, &config).await;
    eventually("route to the upstream", || async {
        let (status, _, _) = http.get(url("/api/hello")).await;
        (status == StatusCode::OK).then_some(())
    })
    .await;

    // An increment deleting the selector: the gateway asks for the whole config instead.
    send(
        &mut conn,
        DataEvent::new(
            DataEventType::Delete,
            EventPayload::Selector(vec![selector("1", "/api", up)]),
        ),
    )
    .await;
    await_myself(&mut conn).await;
    let (status, _, _) = http.get(url("/api/hello")).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the increment is not applied on its own"
    );

    // The full sync without the selector replaces the groups.
    let without = ConfigSet {
        selectors: Vec::new(),
        rules: Vec::new(),
        ..config
    };
    full_sync(&mut conn, &without).await;
    eventually("selector gone after the full sync", || async {
        let (status, _, body) = http.get(url("/api/hello")).await;
        (status == StatusCode::NOT_FOUND && body["code"] == -107).then_some(())
    })
    .await;
    let (_, _, health) = http.get(url("/actuator/health")).await;
    assert_eq!(health["sync"]["fullSyncs"], 10, "{health}");

    let stopped = gateway.stop();
    drop(http);
    stopped.await;
}
