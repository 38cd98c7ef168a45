//! The gateway's edge over raw TCP: client connection limits, request bodies the client
//! breaks, `Host` rules and dot-segments, against a real gateway fed by an in-test fake admin
//! (websocket) and routing to an in-test upstream. Every wait polls a condition until a
//! deadline; nothing sleeps a fixed time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::Request;
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use model::{
    ConditionData, ConfigSet, DataEvent, DataEventType, PluginData, RuleData, SelectorData,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use crate::common::{DEADLINE, Gateway, eventually, fake_admin, next_session};

/// A gateway routing `/g/**` to an echo upstream (which counts requests), with `timeouts`.
struct Edge {
    gateway: Gateway,
    upstream_hits: Arc<AtomicUsize>,
}

impl Edge {
    async fn start(timeouts: netserve::Timeouts) -> Edge {
        let (upstream, upstream_hits) = upstream().await;
        let (admin_addr, mut sessions) = fake_admin().await;
        tokio::spawn(async move {
            let mut ws = next_session(&mut sessions).await;
            for event in config(upstream) {
                ws.send(Message::text(event.to_websocket_text()))
                    .await
                    .unwrap();
            }
            // Keep the session open.
            while ws.next().await.is_some() {}
        });
        let config = gateway::Config {
            timeouts,
            ..gateway::Config::new(
                model::SyncMode::Websocket,
                vec![format!("http://{admin_addr}")],
            )
        };
        let edge = Edge {
            gateway: Gateway::start(config).await,
            upstream_hits,
        };
        eventually("the route to go live", || async {
            (edge.get("/g/ready").await.0 == 200).then_some(())
        })
        .await;
        edge
    }

    /// Sends `raw` (a request asking for `Connection: close`, or one the gateway cannot
    /// continue) and reads the answer to the end: status and JSON body.
    async fn exchange(&self, raw: &[u8]) -> (u16, Value) {
        let mut conn = TcpStream::connect(self.gateway.addr).await.unwrap();
        conn.write_all(raw).await.unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(DEADLINE, conn.read_to_end(&mut answer))
            .await
            .expect("an answer within the deadline")
            .unwrap();
        let text = String::from_utf8_lossy(&answer);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let raw = format!("GET {path} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
        self.exchange(raw.as_bytes()).await
    }

    /// Waits until `gantry_gateway_requests_total` for `outcome` is `n`.
    async fn wait_requests(&self, outcome: &str, n: u64) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let seen = self.requests(outcome).await;
            if seen == n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{seen} requests with outcome {outcome}, not {n}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `gantry_gateway_requests_total` for `outcome`.
    async fn requests(&self, outcome: &str) -> u64 {
        let url = self.gateway.url("/metrics");
        let text = reqwest::get(url).await.unwrap().text().await.unwrap();
        let prefix = format!("gantry_gateway_requests_total{{outcome=\"{outcome}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in {text}"))
    }
}

/// An upstream echoing the path and body it received; it counts requests.
async fn upstream() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().fallback(move |req: Request| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            let path = req.uri().path().to_owned();
            let body = match req.into_body().collect().await {
                Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
                Err(e) => format!("broken: {e}"),
            };
            axum::Json(json!({"path": path, "body": body}))
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, hits)
}

/// divide with one selector (`/g/` prefix) and one rule (`/g/**`, no retries) to `upstream`.
fn config(upstream: SocketAddr) -> [DataEvent; 5] {
    let plugin = PluginData {
        id: "5".into(),
        name: "divide".into(),
        enabled: true,
        sort: 200,
        ..Default::default()
    };
    let selector = SelectorData {
        id: "1".into(),
        name: "g".into(),
        enabled: true,
        sort: 1,
        plugin_id: "5".into(),
        plugin_name: "divide".into(),
        handle: Some(format!(
            r#"[{{"upstreamUrl":"{upstream}","protocol":"http://","weight":50,"status":true}}]"#
        )),
        condition_list: vec![ConditionData::new("uri", "startsWith", "/", "/g/")],
        ..Default::default()
    };
    let rule = RuleData {
        id: "2".into(),
        name: "g".into(),
        enabled: true,
        sort: 1,
        plugin_name: "divide".into(),
        selector_id: "1".into(),
        // No retries: bodies stream to the upstream instead of being buffered for replay.
        handle: Some(r#"{"loadBalance":"random","timeout":3000,"retry":0}"#.into()),
        condition_data_list: vec![ConditionData::new("uri", "match", "/", "/g/**")],
        ..Default::default()
    };
    let config = ConfigSet {
        plugins: vec![plugin],
        selectors: vec![selector],
        rules: vec![rule],
        meta_data: Vec::new(),
    };
    DataEvent::full_sync(DataEventType::Myself, config, Vec::new())
}

#[tokio::test]
async fn a_slow_header_client_is_disconnected() {
    let timeouts = netserve::Timeouts {
        header_read: Duration::from_millis(300),
        idle: Duration::from_secs(60),
    };
    let edge = Edge::start(timeouts).await;
    let started = Instant::now();
    let mut conn = TcpStream::connect(edge.gateway.addr).await.unwrap();
    conn.write_all(b"GET /g/x HTTP/1.1\r\nHost: gw\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(DEADLINE, conn.read(&mut buf))
        .await
        .expect("the gateway closes a connection whose head never completes");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() >= timeouts.header_read);
}

/// A request with no route whose body is still arriving when the gateway knows its answer:
/// the gateway reads the body before answering, so the connection closes with nothing unread
/// and the client gets its 404 (a close with unread bytes is a reset, which can take the
/// answer with it: `--run-mode slice` found it).
#[tokio::test]
async fn a_rejected_request_is_answered_after_its_body() {
    let edge = Edge::start(netserve::Timeouts::default()).await;
    for _ in 0..20 {
        let mut conn = TcpStream::connect(edge.gateway.addr).await.unwrap();
        let head = "GET /nowhere HTTP/1.1\r\nHost: gw\r\nContent-Length: 4000\r\nConnection: close\r\n\r\n";
        conn.write_all(head.as_bytes()).await.unwrap();
        // The body in pieces, as a slow link delivers it: a gateway that answered and closed
        // already resets the connection, and a later piece fails to send (an HTTP client
        // then reports the send error, not the answer).
        for piece in 0..40 {
            let sent = conn.write_all(&[b'x'; 100]).await;
            assert!(sent.is_ok(), "piece {piece} of the body: {sent:?}");
            tokio::task::yield_now().await;
        }
        let mut answer = Vec::new();
        let read = tokio::time::timeout(DEADLINE, conn.read_to_end(&mut answer))
            .await
            .expect("an answer within the deadline");
        let text = String::from_utf8_lossy(&answer);
        assert!(read.is_ok(), "{read:?} after {text:?}");
        assert!(text.starts_with("HTTP/1.1 404"), "{text:?}");
    }
}

#[tokio::test]
async fn a_request_body_the_client_breaks_is_a_400_not_an_upstream_error() {
    let edge = Edge::start(netserve::Timeouts::default()).await;
    // A chunk size that is not hex: answered 400.
    let bad_chunk = b"POST /g/x HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n";
    let (status, body) = edge.exchange(bad_chunk).await;
    assert_eq!((status, &body["code"]), (400, &json!(400)), "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("cannot read the request body"),
        "{message}"
    );
    // 10 bytes of 100, then the client closes: nobody is left to answer, but the request
    // counts as a 400 too, not as an upstream failure.
    let before = edge.upstream_hits.load(Ordering::SeqCst);
    let mut conn = TcpStream::connect(edge.gateway.addr).await.unwrap();
    conn.write_all(b"POST /g/x HTTP/1.1\r\nHost: gw\r\nContent-Length: 100\r\n\r\n0123456789")
        .await
        .unwrap();
    // Closed once the upstream has the request (its head went out first).
    let deadline = Instant::now() + DEADLINE;
    while edge.upstream_hits.load(Ordering::SeqCst) == before {
        assert!(
            Instant::now() < deadline,
            "the request never reached the upstream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(conn);
    edge.wait_requests("400", 2).await;
    assert_eq!(
        edge.requests("502").await,
        0,
        "counted as upstream failures"
    );
    // A whole body still goes through.
    let whole = b"POST /g/x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    let (status, body) = edge.exchange(whole).await;
    assert_eq!((status, &body["body"]), (200, &json!("abc")), "{body}");
}

#[tokio::test]
async fn an_http11_request_needs_exactly_one_host() {
    let edge = Edge::start(netserve::Timeouts::default()).await;
    let before = edge.upstream_hits.load(Ordering::SeqCst);
    for raw in [
        &b"GET /g/x HTTP/1.1\r\nConnection: close\r\n\r\n"[..],
        b"GET /g/x HTTP/1.1\r\nHost: gw\r\nHost: other\r\nConnection: close\r\n\r\n",
        b"GET /g/x HTTP/1.0\r\nHost: gw\r\nHost: gw\r\n\r\n",
    ] {
        let (status, body) = edge.exchange(raw).await;
        assert_eq!(
            (status, &body["code"]),
            (400, &json!(400)),
            "{}: {body}",
            String::from_utf8_lossy(raw)
        );
    }
    assert_eq!(edge.upstream_hits.load(Ordering::SeqCst), before);
    // HTTP/1.0 may leave Host out.
    let (status, body) = edge.exchange(b"GET /g/x HTTP/1.0\r\n\r\n").await;
    assert_eq!((status, &body["path"]), (200, &json!("/g/x")), "{body}");
}

#[tokio::test]
async fn a_path_with_dot_segments_is_refused_not_forwarded() {
    let edge = Edge::start(netserve::Timeouts::default()).await;
    let before = edge.upstream_hits.load(Ordering::SeqCst);
    for path in [
        "/g/../down/x",
        "/g/%2e%2E/down/x",
        "/g/.%2e/down/x",
        "/g/./x",
        "/g/x/..",
    ] {
        let (status, body) = edge.get(path).await;
        assert_eq!(
            (status, &body["code"]),
            (400, &json!(400)),
            "{path}: {body}"
        );
    }
    assert_eq!(
        edge.upstream_hits.load(Ordering::SeqCst),
        before,
        "a dot-segment path reached the upstream"
    );
    // Dots inside a segment are plain characters.
    for path in ["/g/file.json", "/g/..x/y", "/g/%2ex"] {
        let (status, body) = edge.get(path).await;
        assert_eq!((status, &body["path"]), (200, &json!(path)), "{body}");
    }
}

/// Issue 35: `/pub/..%2Fadmin` reached `/admin` on a Jetty upstream, `/npub/..\admin` on a
/// Node one. What Spring Security's `StrictHttpFirewall` refuses is refused, unforwarded.
#[tokio::test]
async fn paths_the_firewall_refuses_are_not_forwarded() {
    let edge = Edge::start(netserve::Timeouts::default()).await;
    let before = edge.upstream_hits.load(Ordering::SeqCst);
    for path in [
        "/g/..%2Fdown/x",
        "/g/..%2fdown/x",
        "/g/..\\down/x",
        "/g/..%5Cdown/x",
        "/g/x;jsessionid=1",
        "/g/x%3Bv=1",
        "/g/%252e%252e/x",
        "/g/x%00",
    ] {
        let (status, body) = edge.get(path).await;
        assert_eq!(
            (status, &body["code"]),
            (400, &json!(400)),
            "{path}: {body}"
        );
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("the path has"), "{path}: {message}");
    }
    assert_eq!(
        edge.upstream_hits.load(Ordering::SeqCst),
        before,
        "a refused path reached the upstream"
    );
    for path in ["/g/te%73t", "/g/a%20b", "/g/x.y"] {
        let (status, body) = edge.get(path).await;
        assert_eq!((status, &body["path"]), (200, &json!(path)), "{body}");
    }
}

/// Issue 35: `Host: a b`, `Host: a, b` and a 64 KB `Host` were routed.
#[tokio::test]
async fn a_host_that_is_not_an_authority_is_refused() {
    let edge = Edge::start(netserve::Timeouts::default()).await;
    let before = edge.upstream_hits.load(Ordering::SeqCst);
    let long = "h".repeat(64 * 1024);
    for host in ["a b", "a, b", long.as_str()] {
        let raw = format!("GET /g/x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        let (status, body) = edge.exchange(raw.as_bytes()).await;
        assert_eq!(
            (status, &body["code"]),
            (400, &json!(400)),
            "{}: {body}",
            &host[..host.len().min(20)]
        );
    }
    assert_eq!(edge.upstream_hits.load(Ordering::SeqCst), before);
    for host in ["gw", "gw:9195", "127.0.0.1:9195", "[::1]:9195"] {
        let raw = format!("GET /g/x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        let (status, body) = edge.exchange(raw.as_bytes()).await;
        assert_eq!(
            (status, &body["path"]),
            (200, &json!("/g/x")),
            "{host}: {body}"
        );
    }
}
