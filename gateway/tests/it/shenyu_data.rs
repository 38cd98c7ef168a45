//! Data ShenYu's admin publishes but gantry's admin would refuse, synced as raw JSON by an
//! in-test fake admin (websocket), then real requests through the gateway: the gateway gives
//! it ShenYu's runtime meaning (semantics §2, §6, §1.4). An unknown `matchMode` code is
//! evaluated as `and` and scores 0 among several matches; a condition that cannot be
//! evaluated fails only the requests whose evaluation reaches it (`and` / `or` short-circuit
//! left to right), with the gateway's statuses (400 for unknown names and path-pattern parse
//! errors, 500 for a regex that does not compile and a blank param type); blank operators,
//! blank request values and padded values behave as ShenYu's judges. A frame that is not JSON
//! leaves the gateway on its last good config. Every wait polls a condition until a deadline.

use std::net::SocketAddr;

use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{Gateway, eventually, fake_admin, next_session};

/// An upstream answering 200 to everything.
async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|| async { "up" });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A divide selector as ShenYu's admin would publish it, with raw conditions and match mode.
/// `continued: false` runs it with ShenYu's default rule, so only the selector decides.
fn selector(id: &str, sort: i32, match_mode: i64, conditions: &Value, up: SocketAddr) -> Value {
    json!({
        "id": id, "pluginId": "5", "pluginName": "divide", "name": id, "enabled": true,
        "sort": sort, "type": 1, "matchMode": match_mode, "continued": false, "logged": false,
        "handle": json!([{"upstreamUrl": up.to_string(), "protocol": "http://", "weight": 50,
                          "status": true}]).to_string(),
        "conditionList": conditions,
    })
}

/// A condition; `None` is a JSON `null`.
fn cond(
    param_type: Option<&str>,
    operator: Option<&str>,
    param_name: &str,
    param_value: &str,
) -> Value {
    json!({"paramType": param_type, "operator": operator, "paramName": param_name,
           "paramValue": param_value})
}

/// `uri <op> <value>`.
fn uri(operator: &str, value: &str) -> Value {
    cond(Some("uri"), Some(operator), "/", value)
}

fn rule(id: &str, selector_id: &str, sort: i32, match_mode: i64, conditions: &Value) -> Value {
    json!({
        "id": id, "name": id, "pluginName": "divide", "selectorId": selector_id,
        "enabled": true, "sort": sort, "matchMode": match_mode, "loged": false,
        "handle": r#"{"loadBalance":"random","timeout":3000}"#,
        "conditionDataList": conditions,
    })
}

fn frame(group: &str, data: &Value) -> String {
    json!({"groupType": group, "eventType": "MYSELF", "data": data}).to_string()
}

/// A client of the gateway under test.
struct Client {
    addr: SocketAddr,
    http: reqwest::Client,
}

impl Client {
    /// Status, ShenYu body code (when the body is an error body) and the matched ids.
    async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        let mut req = self.http.get(format!("http://{}{path}", self.addr));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let id = |name: &str| {
            resp.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let (selector, rule) = (id("x-gantry-selector-id"), id("x-gantry-rule-id"));
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        Answer {
            status,
            code: body["code"].as_i64(),
            selector,
            rule,
        }
    }

    async fn health(&self) -> Value {
        let url = format!("http://{}/actuator/health", self.addr);
        self.http
            .get(url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The selector ids the gateway holds.
    async fn selector_ids(&self) -> Vec<String> {
        let url = format!("http://{}/actuator/selectorData", self.addr);
        let data: Value = self
            .http
            .get(url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut ids: Vec<String> = data[0]["divide"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["id"].as_str().map(str::to_owned))
            .collect();
        ids.sort();
        ids
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    code: Option<i64>,
    selector: Option<String>,
    rule: Option<String>,
}

/// Routed to `selector` (and `rule`: the default rule of a non-continued selector when `None`).
fn routed(selector: &str, rule: Option<&str>) -> Answer {
    Answer {
        status: 200,
        code: None,
        selector: Some(selector.to_owned()),
        rule: Some(rule.unwrap_or("default_rule").to_owned()),
    }
}

/// A gateway error: HTTP `status` with body code `code`.
fn failed(status: u16, code: i64) -> Answer {
    Answer {
        status,
        code: Some(code),
        selector: None,
        rule: None,
    }
}

const NO_SELECTOR: (u16, i64) = (404, -107);

/// A request path, its headers and the answer it must get.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Answer);

#[tokio::test]
async fn shenyu_data_routes_with_shenyus_runtime_meaning() {
    let (admin, mut sessions) = fake_admin().await;
    let up = upstream().await;
    let config = gateway::Config::new(model::SyncMode::Websocket, vec![format!("http://{admin}")]);
    let gateway = Gateway::start(config).await;
    let gw = Client {
        addr: gateway.addr,
        http: reqwest::Client::new(),
    };
    let mut conn = next_session(&mut sessions).await;
    let plugin = json!([{"id": "5", "name": "divide", "enabled": true, "sort": 200}]);
    conn.send(Message::text(frame("PLUGIN", &plugin)))
        .await
        .unwrap();

    // Phase 1: selectors that each fail or decide only under their own path prefix (`and`,
    // the prefix first), so they can share one config.
    let mut rules_selector = selector("rules", 1, 0, &json!([uri("startsWith", "/rules/")]), up);
    rules_selector["continued"] = json!(true);
    let selectors = Value::Array(vec![
        // matchMode 7: evaluated as `and` (both conditions needed).
        selector(
            "seven",
            1,
            7,
            &json!([
                uri("startsWith", "/seven/"),
                cond(Some("header"), Some("="), "x-k", "v")
            ]),
            up,
        ),
        // `and` stops at the first false condition: the bad regex is reached only under /and/.
        selector(
            "and-regex",
            1,
            0,
            &json!([uri("startsWith", "/and/"), uri("regex", "(")]),
            up,
        ),
        selector(
            "bad-op",
            1,
            0,
            &json!([uri("startsWith", "/op/"), uri("=~", "/op/x")]),
            up,
        ),
        selector(
            "bad-type",
            1,
            0,
            &json!([
                uri("startsWith", "/type/"),
                cond(Some("URI"), Some("="), "/", "/type/x")
            ]),
            up,
        ),
        selector(
            "no-extractor",
            1,
            0,
            &json!([
                uri("startsWith", "/path/"),
                cond(Some("path"), Some("="), "/", "/x")
            ]),
            up,
        ),
        selector(
            "bad-pattern",
            1,
            0,
            &json!([uri("startsWith", "/pp/"), uri("pathPattern", "/pp/**/x")]),
            up,
        ),
        // A blank (or null) param type: ShenYu's SPI lookup throws a NullPointerException.
        selector(
            "blank-type",
            1,
            0,
            &json!([
                uri("startsWith", "/npt/"),
                cond(Some(""), Some("="), "/", "/npt/x")
            ]),
            up,
        ),
        selector(
            "null-type",
            1,
            0,
            &json!([
                uri("startsWith", "/null/"),
                cond(None, Some("="), "/", "/null/x")
            ]),
            up,
        ),
        // A blank (or null) operator: the condition is false.
        selector(
            "blank-op",
            1,
            0,
            &json!([
                uri("startsWith", "/blank/"),
                cond(Some("uri"), Some(" "), "/", "/blank/x")
            ]),
            up,
        ),
        selector(
            "null-op",
            1,
            0,
            &json!([
                uri("startsWith", "/nullop/"),
                cond(Some("uri"), None, "/", "/nullop/x")
            ]),
            up,
        ),
        // Every judge but isBlank is false on a blank request value, `exclude` included.
        selector(
            "exclude",
            1,
            0,
            &json!([
                uri("startsWith", "/ex/"),
                cond(Some("header"), Some("exclude"), "x-e", "bot")
            ]),
            up,
        ),
        selector(
            "is-blank",
            1,
            0,
            &json!([
                uri("startsWith", "/ib/"),
                cond(Some("header"), Some("isBlank"), "x-e", "ignored")
            ]),
            up,
        ),
        // The value is trimmed as Java's `String.trim()` does (every char <= U+0020).
        selector(
            "trimmed",
            1,
            0,
            &json!([uri("=", "\u{1}\t/trim/a \u{1f}")]),
            up,
        ),
        // Scores: the unknown-mode selector (two conditions) scores 0, the `and` one 1.
        selector(
            "seven-wide",
            1,
            7,
            &json!([uri("startsWith", "/score/"), uri("endsWith", "/x")]),
            up,
        ),
        selector(
            "and-narrow",
            2,
            0,
            &json!([uri("startsWith", "/score/")]),
            up,
        ),
        // Rules: an `or` rule matching on its first condition never reaches its bad regex;
        // an `and` rule reaches its bad regex only under /rules/bad (every rule is evaluated).
        rules_selector,
    ]);
    let rules = json!([
        rule(
            "or-short",
            "rules",
            1,
            1,
            &json!([uri("startsWith", "/rules/"), uri("regex", "(")])
        ),
        rule(
            "and-late",
            "rules",
            2,
            0,
            &json!([uri("startsWith", "/rules/bad"), uri("regex", "(")])
        ),
    ]);
    conn.send(Message::text(frame("SELECTOR", &selectors)))
        .await
        .unwrap();
    conn.send(Message::text(frame("RULE", &rules)))
        .await
        .unwrap();
    eventually("phase 1 config", || async {
        (gw.selector_ids().await.len() == 16
            && gw.get("/seven/a", &[("x-k", "v")]).await.status == 200)
            .then_some(())
    })
    .await;
    let h = gw.health().await;
    assert_eq!(h["sync"]["eventsRejected"], 0, "{h}");

    let (n404, c404) = NO_SELECTOR;
    let cases: &[Case<'_>] = &[
        ("/seven/a", &[("x-k", "v")], routed("seven", None)),
        ("/seven/a", &[], failed(n404, c404)),
        ("/seven/a", &[("x-k", "w")], failed(n404, c404)),
        ("/and/x", &[], failed(500, 500)),
        ("/op/x", &[], failed(400, 400)),
        ("/type/x", &[], failed(400, 400)),
        ("/path/x", &[], failed(400, 400)),
        ("/pp/x", &[], failed(400, 400)),
        ("/npt/x", &[], failed(500, 500)),
        ("/null/x", &[], failed(500, 500)),
        ("/blank/x", &[], failed(n404, c404)),
        ("/nullop/x", &[], failed(n404, c404)),
        ("/ex/a", &[], failed(n404, c404)),
        ("/ex/a", &[("x-e", "   ")], failed(n404, c404)),
        ("/ex/a", &[("x-e", "human")], routed("exclude", None)),
        ("/ex/a", &[("x-e", "a bot")], failed(n404, c404)),
        ("/ib/a", &[], routed("is-blank", None)),
        ("/ib/a", &[("x-e", " \t")], routed("is-blank", None)),
        ("/ib/a", &[("x-e", "x")], failed(n404, c404)),
        ("/trim/a", &[], routed("trimmed", None)),
        ("/score/x", &[], routed("and-narrow", None)),
        ("/score/y", &[], routed("and-narrow", None)),
        ("/rules/ok", &[], routed("rules", Some("or-short"))),
        ("/rules/bad", &[], failed(500, 500)),
        ("/rules/other", &[], routed("rules", Some("or-short"))),
        // None of the failing conditions is reached for any other path.
        ("/elsewhere", &[], failed(n404, c404)),
    ];
    for (path, headers, want) in cases {
        assert_eq!(&gw.get(path, headers).await, want, "GET {path} {headers:?}");
    }

    // Phase 2: an `or` selector whose first condition decides never reaches its bad second
    // one; any other request reaches it (every selector is evaluated) and fails.
    let selectors = json!([selector(
        "or-short",
        1,
        1,
        &json!([uri("startsWith", "/or/"), uri("regex", "(")]),
        up
    ),]);
    conn.send(Message::text(frame("SELECTOR", &selectors)))
        .await
        .unwrap();
    eventually("phase 2 config", || async {
        (gw.selector_ids().await == ["or-short"]).then_some(())
    })
    .await;
    assert_eq!(gw.get("/or/x", &[]).await, routed("or-short", None));
    assert_eq!(gw.get("/elsewhere", &[]).await, failed(500, 500));

    // A frame that is not JSON, or not a sync message, is rejected as a whole: the last good
    // config keeps serving.
    conn.send(Message::text("{not json")).await.unwrap();
    conn.send(Message::text(
        r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":{"id":"x"}}"#,
    ))
    .await
    .unwrap();
    eventually("two rejected frames", || async {
        (gw.health().await["sync"]["eventsRejected"] == 2).then_some(())
    })
    .await;
    assert_eq!(gw.selector_ids().await, ["or-short"]);
    assert_eq!(gw.get("/or/x", &[]).await, routed("or-short", None));

    let stopped = gateway.stop();
    drop(conn);
    stopped.await;
}
