//! What a hostile or broken config source cannot do to the gateway (issue 35): an unbounded
//! `retry` spins no core, a selector handle the gateway cannot use does not take a working
//! route down, and the inspection dumps of a large config are rendered once per snapshot.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use model::{ConfigSet, DataEvent, DataEventType, EventPayload, RuleData, SelectorData};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{AdminConn, DEADLINE, Gateway, eventually, fake_admin, next_session};
use crate::sync::{full_sync, plugin, rule, selector, upstream};

/// An upstream that accepts every connection and closes it at once; it counts the accepts.
async fn dead_upstream() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let counter = accepts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (addr, accepts)
}

/// A gateway synced over websocket from a fake admin with `config` (all five groups applied),
/// and the admin's session.
async fn synced(config: &ConfigSet) -> (Gateway, AdminConn) {
    let (admin, mut sessions) = fake_admin().await;
    let gateway = Gateway::start(gateway::Config::new(
        model::SyncMode::Websocket,
        vec![format!("http://{admin}")],
    ))
    .await;
    let mut conn = next_session(&mut sessions).await;
    full_sync(&mut conn, config).await;
    let http = reqwest::Client::new();
    eventually("the full sync applied", || async {
        let health = json(&http, gateway.url("/actuator/health")).await;
        (health["sync"]["fullSyncs"] == 5).then_some(())
    })
    .await;
    (gateway, conn)
}

async fn send(conn: &mut AdminConn, event: DataEvent) {
    conn.send(Message::text(event.to_websocket_text()))
        .await
        .unwrap();
}

async fn json(http: &reqwest::Client, url: String) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

async fn metrics(http: &reqwest::Client, gateway: &Gateway) -> String {
    let response = http.get(gateway.url("/metrics")).send().await.unwrap();
    response.text().await.unwrap()
}

/// The value of series `series` (name and labels) in a metrics text.
fn series(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn divide_rule(id: &str, selector_id: &str, pattern: &str, handle: &str) -> RuleData {
    RuleData {
        handle: Some(handle.into()),
        ..rule(id, selector_id, pattern)
    }
}

/// `retry: 2147483647` from the sync channel against an upstream that closes every connection:
/// the gateway makes at most 1 + 10 attempts (the admin's bound), with back-off, and the
/// request ends within the retry budget (4 rule timeouts); with a short timeout the budget
/// cuts the retries.
#[tokio::test]
async fn an_unbounded_retry_from_the_sync_channel_is_bounded() {
    let (dead, accepts) = dead_upstream().await;
    let (short, short_accepts) = dead_upstream().await;
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors: vec![selector("1", "/api", dead), selector("2", "/short", short)],
        rules: vec![
            divide_rule(
                "11",
                "1",
                "/api/**",
                r#"{"retry":2147483647,"timeout":3000}"#,
            ),
            divide_rule(
                "12",
                "2",
                "/short/**",
                r#"{"retry":2147483647,"timeout":100}"#,
            ),
        ],
        meta_data: Vec::new(),
    };
    let (gateway, _conn) = synced(&config).await;
    let http = reqwest::Client::new();

    let started = Instant::now();
    let response = tokio::time::timeout(DEADLINE, http.get(gateway.url("/api/x")).send())
        .await
        .expect("the request ends")
        .unwrap();
    let took = started.elapsed();
    assert_eq!(response.status(), 502);
    assert_eq!(
        accepts.load(Ordering::SeqCst),
        1 + 10,
        "1 + the bounded retries"
    );
    assert!(took < Duration::from_secs(12), "took {took:?}, budget 12 s");
    // The back-off spaces the 10 retries: 10 + 20 + 40 + 80 + 6 × 100 ms.
    assert!(took >= Duration::from_millis(750), "took {took:?}");

    // timeout 100 ms → a 400 ms budget: the back-off alone (750 ms for 10 retries) exceeds it.
    let response = tokio::time::timeout(DEADLINE, http.get(gateway.url("/short/x")).send())
        .await
        .expect("the request ends")
        .unwrap();
    assert_eq!(response.status(), 502);
    let attempts = short_accepts.load(Ordering::SeqCst);
    assert!((1..11).contains(&attempts), "{attempts} attempts");
    gateway.stop().await;
}

/// A synced selector whose handle the gateway cannot read keeps its last good upstreams (as
/// ShenYu keeps its upstream cache when the handle fails to parse) and is counted in
/// `/metrics` and `/actuator/digest`.
#[tokio::test]
async fn an_unusable_selector_handle_keeps_the_last_good_upstreams_and_is_counted() {
    let up = upstream().await;
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors: vec![selector("1", "/api", up)],
        rules: vec![rule("2", "1", "/api/**")],
        meta_data: Vec::new(),
    };
    let (gateway, mut conn) = synced(&config).await;
    let http = reqwest::Client::new();
    let status = |path: &'static str| {
        let (http, url) = (http.clone(), gateway.url(path));
        async move { http.get(url).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status("/api/x").await, 200);
    let before = json(&http, gateway.url("/actuator/digest")).await;

    let broken = SelectorData {
        handle: Some("[{not json".into()),
        ..selector("1", "/api", up)
    };
    send(
        &mut conn,
        DataEvent::new(DataEventType::Update, EventPayload::Selector(vec![broken])),
    )
    .await;
    let digest = eventually("the broken handle is applied", || async {
        let digest = json(&http, gateway.url("/actuator/digest")).await;
        (digest["digest"] != before["digest"]).then_some(digest)
    })
    .await;
    assert_eq!(status("/api/x").await, 200, "the old upstream still serves");
    assert_eq!(before["rejected"]["count"], 0, "{before}");
    assert_eq!(digest["rejected"]["count"], 1, "{digest}");
    let last = digest["rejected"]["last"].as_str().unwrap_or_default();
    assert!(
        last.starts_with("selector 1: unreadable handle: "),
        "{digest}"
    );
    let text = metrics(&http, &gateway).await;
    assert_eq!(
        series(&text, "gantry_gateway_rejected_selector_handles_total"),
        Some(1),
        "{text}"
    );
    gateway.stop().await;
}

/// At 10k selectors, repeated and concurrent `selectorData` calls render the dump once per
/// applied snapshot; a config change renders it anew.
#[tokio::test]
async fn inspection_dumps_are_rendered_once_per_snapshot() {
    let up = upstream().await;
    let selectors: Vec<SelectorData> = (0..10_000)
        .map(|i| selector(&format!("s{i}"), &format!("/p{i}"), up))
        .collect();
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors,
        rules: Vec::new(),
        meta_data: Vec::new(),
    };
    let (gateway, mut conn) = synced(&config).await;
    let http = reqwest::Client::new();
    let renders = "gantry_gateway_inspection_renders_total{dump=\"selectorData\"}";
    let before = series(&metrics(&http, &gateway).await, renders).expect(renders);
    let calls = (0..4).map(|_| json(&http, gateway.url("/actuator/selectorData")));
    let dumps = futures_util::future::join_all(calls).await;
    for dump in &dumps {
        assert_eq!(dump[0]["divide"].as_array().map(Vec::len), Some(10_000));
    }
    let again = json(&http, gateway.url("/actuator/selectorData")).await;
    assert_eq!(again, dumps[0]);
    let text = metrics(&http, &gateway).await;
    assert_eq!(series(&text, renders), Some(before + 1), "{text}");

    send(
        &mut conn,
        DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![selector("new", "/new", up)]),
        ),
    )
    .await;
    eventually("the change reaches the dump", || async {
        let dump = json(&http, gateway.url("/actuator/selectorData")).await;
        (dump[0]["divide"].as_array().map(Vec::len) == Some(10_001)).then_some(())
    })
    .await;
    let text = metrics(&http, &gateway).await;
    assert_eq!(series(&text, renders), Some(before + 2), "{text}");
    gateway.stop().await;
}
