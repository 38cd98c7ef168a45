//! End to end: the gateway's `serve` in HTTP long-polling mode against an in-test fake admin
//! (login, `/configs/fetch`, `/configs/listener`) and an in-test upstream. Every wait polls a
//! condition until a deadline; nothing sleeps a fixed time.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use model::{ConditionData, PluginData, RuleData, SelectorData};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::common::{Gateway, eventually, timer_lateness};

/// How long the fake admin holds a listener request with no change (ShenYu: 60 s).
const HOLD: Duration = Duration::from_millis(500);

/// One group as the fake admin serves it.
#[derive(Debug, Clone)]
struct Group {
    md5: String,
    last_modify_time: i64,
    data: Value,
}

/// The fake admin's state, shared across restarts.
#[derive(Debug)]
struct Admin {
    groups: Mutex<HashMap<String, Group>>,
    /// Bumped on every change; held listeners wake up.
    changes: watch::Sender<u64>,
    token: Mutex<String>,
    logins: AtomicUsize,
    fetches: AtomicUsize,
    unauthorized: AtomicUsize,
    malformed_fetch: AtomicBool,
    /// A silent partition: every request (those already held included) goes unanswered,
    /// its connection left open.
    silent: AtomicBool,
}

impl Admin {
    fn new(groups: HashMap<String, Group>) -> Arc<Admin> {
        Arc::new(Admin {
            groups: Mutex::new(groups),
            changes: watch::channel(0).0,
            token: Mutex::new("token-1".to_owned()),
            logins: AtomicUsize::new(0),
            fetches: AtomicUsize::new(0),
            unauthorized: AtomicUsize::new(0),
            malformed_fetch: AtomicBool::new(false),
            silent: AtomicBool::new(false),
        })
    }

    fn set(&self, name: &str, group: Group) {
        self.groups.lock().unwrap().insert(name.to_owned(), group);
        self.changes.send_modify(|v| *v += 1);
    }

    /// Never returns while the admin is [`Admin::silent`].
    async fn stall_if_silent(&self) {
        if self.silent.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let ok = headers
            .get("x-access-token")
            .is_some_and(|t| t.as_bytes() == self.token.lock().unwrap().as_bytes());
        if !ok {
            self.unauthorized.fetch_add(1, Ordering::SeqCst);
        }
        ok
    }

    /// Groups of the listener's form whose md5 differs.
    fn changed(&self, form: &HashMap<String, String>) -> Vec<String> {
        let groups = self.groups.lock().unwrap();
        let mut changed: Vec<String> = form
            .iter()
            .filter(|(name, value)| {
                let md5 = value.split(',').next().unwrap_or("");
                groups.get(*name).is_some_and(|g| g.md5 != md5)
            })
            .map(|(name, _)| name.clone())
            .collect();
        changed.sort();
        changed
    }
}

fn unauthorized() -> (StatusCode, axum::Json<Value>) {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"code": 600, "message": "token is error", "data": null})),
    )
}

async fn login(
    State(admin): State<Arc<Admin>>,
    axum::Json(body): axum::Json<Value>,
) -> axum::Json<Value> {
    admin.stall_if_silent().await;
    if body != json!({"userName": "admin", "password": "123456"}) {
        return axum::Json(json!({"code": 500, "message": "bad credentials", "data": null}));
    }
    admin.logins.fetch_add(1, Ordering::SeqCst);
    let token = admin.token.lock().unwrap().clone();
    axum::Json(json!({
        "code": 200, "message": "login dashboard user success",
        "data": {"id": "1", "userName": "admin", "role": 1, "enabled": true,
                 "token": token, "expiredTime": 86_400_000}
    }))
}

async fn fetch(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<String, (StatusCode, axum::Json<Value>)> {
    admin.stall_if_silent().await;
    if !admin.authorized(&headers) {
        return Err(unauthorized());
    }
    admin.fetches.fetch_add(1, Ordering::SeqCst);
    if admin.malformed_fetch.load(Ordering::SeqCst) {
        return Ok(r#"{"code":200,"message":"success","data":{"SELECTOR":{"md5":1}}"#.to_owned());
    }
    let groups = admin.groups.lock().unwrap();
    let mut data = serde_json::Map::new();
    for pair in query.unwrap_or_default().split('&') {
        if let Some(name) = pair.strip_prefix("groupKeys=")
            && let Some(g) = groups.get(name)
        {
            data.insert(
                name.to_owned(),
                json!({"md5": g.md5, "lastModifyTime": g.last_modify_time, "data": g.data}),
            );
        }
    }
    Ok(json!({"code": 200, "message": "success", "data": data}).to_string())
}

async fn listen(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    body: String,
) -> Result<axum::Json<Value>, (StatusCode, axum::Json<Value>)> {
    if !admin.authorized(&headers) {
        return Err(unauthorized());
    }
    assert_eq!(
        headers["content-type"], "application/x-www-form-urlencoded",
        "listener content type"
    );
    let form: HashMap<String, String> = body
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.replace("%2C", ",")))
        .collect();
    assert_eq!(form.len(), 5, "all five groups: {body}");
    admin.stall_if_silent().await;
    let mut rx = admin.changes.subscribe();
    let mut changed = admin.changed(&form);
    if changed.is_empty() {
        let _ = tokio::time::timeout(HOLD, rx.changed()).await;
        // A partition that began during the hold swallows the answer.
        admin.stall_if_silent().await;
        changed = admin.changed(&form);
    }
    Ok(axum::Json(
        json!({"code": 200, "message": "success", "data": changed}),
    ))
}

/// Serves the fake admin on `listener` until the returned handle is aborted; aborting also
/// drops every open connection (an admin that went away).
fn serve_admin(admin: Arc<Admin>, listener: TcpListener) -> tokio::task::JoinHandle<()> {
    let app = Router::new()
        .route("/platform/login", post(login))
        .route("/configs/fetch", get(fetch))
        .route("/configs/listener", post(listen))
        .with_state(admin);
    tokio::spawn(async move {
        let mut connections = JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            let service = TowerToHyperService::new(app.clone());
            connections.spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

/// An upstream answering its own name.
async fn upstream(name: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(move || async move { name });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn group(version: i64, items: Value) -> Group {
    Group {
        md5: format!("{version:032x}"),
        last_modify_time: 1_000 + version,
        data: items,
    }
}

/// Plugin divide, one selector with prefix `prefix` to `up`, one catch-all rule.
fn config(prefix: &str, up: SocketAddr) -> HashMap<String, Group> {
    let plugin = PluginData {
        id: "5".into(),
        name: "divide".into(),
        enabled: true,
        sort: 200,
        ..Default::default()
    };
    let rule = RuleData {
        id: "r".into(),
        name: "rule".into(),
        enabled: true,
        sort: 1,
        plugin_name: "divide".into(),
        selector_id: "s".into(),
        condition_data_list: vec![ConditionData::new("uri", "match", "/", "/**")],
        ..Default::default()
    };
    HashMap::from([
        ("PLUGIN".to_owned(), group(1, json!([plugin]))),
        ("SELECTOR".to_owned(), group(1, selectors(prefix, up))),
        ("RULE".to_owned(), group(1, json!([rule]))),
        ("META_DATA".to_owned(), group(1, json!([]))),
        ("APP_AUTH".to_owned(), group(1, json!([]))),
    ])
}

fn selectors(prefix: &str, up: SocketAddr) -> Value {
    json!([SelectorData {
        id: "s".into(),
        name: "sel".into(),
        enabled: true,
        sort: 1,
        plugin_id: "5".into(),
        plugin_name: "divide".into(),
        handle: Some(format!(
            r#"[{{"upstreamUrl":"{up}","protocol":"http://","weight":50,"status":true}}]"#
        )),
        condition_list: vec![ConditionData::new("uri", "startsWith", "/", prefix)],
        ..Default::default()
    }])
}

/// A gateway long-polling `admins`, and the client the test talks to it with.
struct Polling {
    gateway: Gateway,
    http: reqwest::Client,
}

impl Polling {
    async fn start(admins: Vec<String>) -> Polling {
        let config = gateway::Config::new(model::SyncMode::Http, admins);
        Polling {
            gateway: Gateway::start(config).await,
            http: reqwest::Client::new(),
        }
    }

    /// Status and body text of `GET path`.
    async fn get(&self, path: &str) -> (u16, String) {
        let resp = self.http.get(self.gateway.url(path)).send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    async fn health(&self) -> Value {
        serde_json::from_str(&self.get("/actuator/health").await.1).unwrap()
    }

    /// Waits until `path` is answered by upstream `name`.
    async fn wait_routed(&self, path: &str, name: &str) {
        eventually(&format!("{path} → {name}"), || async {
            (self.get(path).await == (200, name.to_owned())).then_some(())
        })
        .await;
    }

    async fn stop(self) {
        let stopped = self.gateway.stop();
        drop(self.http);
        stopped.await;
    }
}

#[tokio::test]
async fn fetch_then_listener_changes_routes_and_follows_the_admin_when_its_clock_goes_back() {
    let up = upstream("up").await;
    let admin = Admin::new(config("/a", up));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_addr = listener.local_addr().unwrap();
    let _server = serve_admin(admin.clone(), listener);
    let gw = Polling::start(vec![format!("http://{admin_addr}/")]).await;

    // Initial fetch applies all groups.
    gw.wait_routed("/a/x", "up").await;
    let h = gw.health().await;
    assert_eq!(h["sync"]["mode"], "http");
    assert_eq!(h["sync"]["connected"], true);
    assert_eq!(h["sync"]["fullSyncs"], 5);
    assert_eq!(admin.logins.load(Ordering::SeqCst), 1);

    // The listener answers ["SELECTOR"] → refetch → the route moves.
    admin.set("SELECTOR", group(2, selectors("/b", up)));
    gw.wait_routed("/b/x", "up").await;
    assert_eq!(gw.get("/a/x").await.0, 404);
    assert_eq!(gw.health().await["sync"]["fullSyncs"], 6);

    // A different md5 with an older lastModifyTime from the admin whose data is held: its
    // clock went back (one admin's answers never do), so it is taken (ShenYu refuses it).
    let mut earlier = group(3, selectors("/c", up));
    earlier.last_modify_time = 1_000;
    admin.set("SELECTOR", earlier);
    gw.wait_routed("/c/x", "up").await;
    assert_eq!(gw.get("/b/x").await.0, 404);
    assert_eq!(gw.health().await["sync"]["fullSyncs"], 7);

    // Newer data is accepted too.
    admin.set("SELECTOR", group(4, selectors("/d", up)));
    gw.wait_routed("/d/x", "up").await;

    // Every routed answer says how long the gateway itself took; /metrics counts it all.
    let resp = gw.http.get(gw.gateway.url("/d/x")).send().await.unwrap();
    let took: u64 = resp.headers()["x-gantry-gateway-time-us"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(took < 5_000_000, "{took}");
    assert_eq!(gw.get("/nowhere").await.0, 404);
    let digest: Value = serde_json::from_str(&gw.get("/actuator/digest").await.1).unwrap();
    let (status, metrics) = gw.get("/metrics").await;
    assert_eq!(status, 200);
    let has = |line: &str| metrics.lines().any(|l| l == line);
    let value = |prefix: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{prefix}` in\n{metrics}"))
    };
    assert!(has(&format!(
        "gantry_gateway_config_info{{digest=\"{}\"}} 1",
        digest["digest"].as_str().unwrap()
    )));
    assert_eq!(value("gantry_gateway_config_version "), 8);
    assert_eq!(
        value("gantry_gateway_sync_events_total{mode=\"http\",result=\"applied\"} "),
        8
    );
    assert!(value("gantry_gateway_requests_total{outcome=\"routed\"} ") >= 5);
    assert!(value("gantry_gateway_requests_total{outcome=\"-107\"} ") >= 2);
    assert!(value("gantry_gateway_upstream_latency_seconds_count ") >= 5);
    gw.stop().await;
}

#[tokio::test]
async fn a_stale_admin_does_not_roll_the_config_back() {
    let up = upstream("up").await;
    let (fresh, stale) = (Admin::new(config("/a", up)), Admin::new(config("/a", up)));
    let mut urls = Vec::new();
    let mut servers = Vec::new();
    for admin in [&fresh, &stale] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/", listener.local_addr().unwrap()));
        servers.push(serve_admin(Arc::clone(admin), listener));
    }
    let gw = Polling::start(urls).await;
    gw.wait_routed("/a/x", "up").await;

    // One admin has a newer commit: taken from it.
    fresh.set("SELECTOR", group(2, selectors("/b", up)));
    gw.wait_routed("/b/x", "up").await;

    // The other, behind, offers other data with an older time: fetched, refused, asked
    // again with back-off; the config stays.
    let mut behind = group(3, selectors("/c", up));
    behind.last_modify_time = 1_000;
    let fetches = stale.fetches.load(Ordering::SeqCst);
    stale.set("SELECTOR", behind);
    eventually("the stale admin's data fetched twice", || async {
        (stale.fetches.load(Ordering::SeqCst) >= fetches + 2).then_some(())
    })
    .await;
    assert_eq!(gw.get("/c/x").await.0, 404);
    gw.wait_routed("/b/x", "up").await;

    // The admin whose data is held is followed even when its clock went back.
    let mut back = group(4, selectors("/d", up));
    back.last_modify_time = 1_001;
    fresh.set("SELECTOR", back);
    gw.wait_routed("/d/x", "up").await;
    gw.stop().await;
}

#[tokio::test]
async fn malformed_fetch_is_counted_and_keeps_the_last_good_config() {
    let up = upstream("up").await;
    let admin = Admin::new(config("/a", up));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_addr = listener.local_addr().unwrap();
    let _server = serve_admin(admin.clone(), listener);
    let gw = Polling::start(vec![format!("http://{admin_addr}")]).await;
    gw.wait_routed("/a/x", "up").await;

    admin.malformed_fetch.store(true, Ordering::SeqCst);
    admin.set("SELECTOR", group(2, selectors("/b", up)));
    eventually("a rejected fetch", || async {
        let h = gw.health().await;
        (h["sync"]["eventsRejected"].as_u64() >= Some(1)).then_some(())
    })
    .await;
    gw.wait_routed("/a/x", "up").await;

    // Fixed admin: the change arrives.
    admin.malformed_fetch.store(false, Ordering::SeqCst);
    gw.wait_routed("/b/x", "up").await;
    gw.stop().await;
}

#[tokio::test]
async fn admin_going_away_and_coming_back_with_a_new_token() {
    let up = upstream("up").await;
    let admin = Admin::new(config("/a", up));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_addr = listener.local_addr().unwrap();
    // A second admin URL that refuses connections: polled independently, never blocks the
    // first.
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let server = serve_admin(admin.clone(), listener);
    let gw = Polling::start(vec![
        format!("http://{refused}"),
        format!("http://{admin_addr}"),
    ])
    .await;
    gw.wait_routed("/a/x", "up").await;

    // The admin goes away; routing continues from the held config.
    server.abort();
    let _ = server.await;
    eventually("disconnect noticed", || async {
        (gw.health().await["sync"]["connected"] == false).then_some(())
    })
    .await;
    gw.wait_routed("/a/x", "up").await;

    // It comes back on the same port with a new config and a new token: the old token gets
    // 401, the gateway logs in again and fetches.
    *admin.token.lock().unwrap() = "token-2".to_owned();
    admin.set("SELECTOR", group(2, selectors("/b", up)));
    let listener = TcpListener::bind(admin_addr).await.unwrap();
    let _server = serve_admin(admin.clone(), listener);
    gw.wait_routed("/b/x", "up").await;
    assert!(admin.logins.load(Ordering::SeqCst) >= 2);
    assert!(admin.unauthorized.load(Ordering::SeqCst) >= 1);
    eventually("reconnect noticed", || async {
        (gw.health().await["sync"]["connected"] == true).then_some(())
    })
    .await;
    gw.stop().await;
}

#[tokio::test]
async fn a_silent_admin_is_noticed_after_the_hold_and_the_config_keeps_serving() {
    let silence = Duration::from_millis(400);
    let up = upstream("up").await;
    let admin = Admin::new(config("/a", up));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_addr = listener.local_addr().unwrap();
    let _server = serve_admin(admin.clone(), listener);
    let mut settings =
        gateway::Config::new(model::SyncMode::Http, vec![format!("http://{admin_addr}")]);
    settings.sync_timeouts = gateway::SyncTimeouts {
        silence,
        long_poll_hold: HOLD,
    };
    let gw = Polling {
        gateway: Gateway::start(settings).await,
        http: reqwest::Client::new(),
    };
    gw.wait_routed("/a/x", "up").await;
    assert_eq!(gw.health().await["sync"]["connected"], true);

    // The held listener request and every later one go unanswered, connections open: the
    // read timeout (hold + silence) ends the session.
    admin.silent.store(true, Ordering::SeqCst);
    let partitioned = tokio::time::Instant::now();
    let lateness = timer_lateness(HOLD + silence);
    eventually("health to say disconnected", || async {
        (gw.health().await["sync"]["connected"] == false).then_some(())
    })
    .await;
    let detected_after = partitioned.elapsed();
    // 600 ms for the health polls, plus thrice the scheduling delay a reference timer of the
    // read timeout, started with the partition, measured on this runtime.
    let lateness = lateness.await.unwrap();
    let bound = HOLD + silence + Duration::from_millis(600) + 3 * lateness;
    assert!(
        detected_after <= bound,
        "noticed after {detected_after:?}, bound {bound:?} (a reference timer {lateness:?} late)"
    );
    assert_eq!(
        gw.get("/a/x").await,
        (200, "up".to_owned()),
        "still serving"
    );

    // A change made during the partition arrives once the admin answers again.
    admin.set("SELECTOR", group(2, selectors("/b", up)));
    admin.silent.store(false, Ordering::SeqCst);
    gw.wait_routed("/b/x", "up").await;
    eventually("connected again", || async {
        (gw.health().await["sync"]["connected"] == true).then_some(())
    })
    .await;
    gw.stop().await;
}
