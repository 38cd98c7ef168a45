//! The REST API in process: `app()` on an in-memory store, driven with `oneshot`.

use crate::common::{rule_body, selector_body};
use admin::SharedEvent;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use model::{ConfigGroup, DataEvent, DataEventType, EventPayload};
use serde_json::{Value, json};
use tokio::sync::broadcast::{self, error::TryRecvError};
use tower::ServiceExt;

struct Api {
    router: Router,
    state: admin::AppState,
    token: Option<String>,
}

impl Api {
    async fn new() -> Api {
        let state = admin::AppState::new(&admin::Config::new(":memory:"))
            .await
            .unwrap();
        let mut api = Api {
            router: admin::app(state.clone()),
            state,
            token: None,
        };
        let (status, body) = api
            .call(
                Method::POST,
                "/platform/login",
                Some(json!({"userName":"admin","password":"123456"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        api.token = Some(body["data"]["token"].as_str().unwrap().to_owned());
        api
    }

    async fn raw(
        &self,
        method: Method,
        uri: &str,
        body: Body,
        token: Option<&str>,
    ) -> (StatusCode, Value) {
        self.typed(method, uri, "application/json", body, token)
            .await
    }

    /// A call with a body of `content_type`.
    async fn typed(
        &self,
        method: Method,
        uri: &str,
        content_type: &str,
        body: Body,
        token: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", content_type);
        if let Some(token) = token {
            request = request.header("X-Access-Token", token);
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{uri}: body is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        (status, value)
    }

    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
        self.raw(method, uri, body, self.token.as_deref()).await
    }

    async fn ok(&self, method: Method, uri: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, uri, body).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {value}");
        assert_eq!(value["code"], 200, "{uri}: {value}");
        value
    }

    async fn selector_count(&self) -> u64 {
        let page = self
            .ok(
                Method::GET,
                "/selector?pluginId=5&currentPage=1&pageSize=12",
                None,
            )
            .await;
        page["data"]["page"]["totalCount"].as_u64().unwrap()
    }

    async fn rule_count(&self) -> u64 {
        let page = self.ok(Method::GET, "/rule", None).await;
        page["data"]["page"]["totalCount"].as_u64().unwrap()
    }

    async fn create_selector(&self, name: &str) -> String {
        let body = self
            .ok(Method::POST, "/selector", Some(selector_body(name)))
            .await;
        assert_eq!(body["message"], "create success");
        body["data"].as_str().unwrap().to_owned()
    }
}

fn assert_bad_request(status: StatusCode, body: &Value, message_start: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], 500, "{body}");
    assert!(body["data"].is_null(), "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(message_start),
        "expected `{message_start}...`, got `{message}`"
    );
}

fn next_event(events: &mut broadcast::Receiver<SharedEvent>) -> DataEvent {
    (*events.try_recv().expect("an event was published")).clone()
}

#[tokio::test]
async fn login_checks_the_password() {
    let api = Api::new().await;
    let (status, body) = api
        .call(
            Method::POST,
            "/platform/login",
            Some(json!({"userName":"admin","password":"123456"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["message"], "login dashboard user success");
    let token = body["data"]["token"].as_str().unwrap();
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(body["data"]["expiredTime"], 86_400_000);
    assert_eq!(body["data"]["userName"], "admin");

    let (status, body) = api
        .call(
            Method::POST,
            "/platform/login",
            Some(json!({"userName":"admin","password":"nope"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], 600);
    assert!(body["data"].is_null());
}

/// ShenYu's deprecated `GET` login (its only one up to 2.7.1): the same answers, and the
/// token it gives works.
#[tokio::test]
async fn login_by_query_checks_the_password() {
    let api = Api::new().await;
    let (status, body) = api
        .raw(
            Method::GET,
            "/platform/login?userName=admin&password=123456",
            Body::empty(),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["message"], "login dashboard user success");
    let token = body["data"]["token"].as_str().unwrap().to_owned();
    let (status, _) = api
        .raw(
            Method::GET,
            "/selector?pluginId=5",
            Body::empty(),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = api
        .raw(
            Method::GET,
            "/platform/login?userName=admin&password=nope",
            Body::empty(),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], 600);
    let (status, body) = api
        .raw(
            Method::GET,
            "/platform/login?userName=admin",
            Body::empty(),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("password"),
        "{body}"
    );
}

#[tokio::test]
async fn rest_endpoints_need_a_valid_token() {
    let api = Api::new().await;
    for token in [None, Some("bad"), Some("")] {
        let (status, body) = api
            .raw(Method::GET, "/selector?pluginId=5", Body::empty(), token)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
        assert_eq!(
            body,
            json!({"code": 600, "message": "token is error", "data": null})
        );
    }
    let (status, _) = api
        .raw(
            Method::POST,
            "/selector",
            Body::from(selector_body("x").to_string()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        api.selector_count().await,
        0,
        "an unauthorised create stores nothing"
    );

    let token = api.token.clone().unwrap();
    let uri = format!("/plugin/all?X-Access-Token={token}");
    let (status, _) = api.raw(Method::GET, &uri, Body::empty(), None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the token may come as a query parameter"
    );

    let (status, body) = api
        .raw(Method::GET, "/actuator/health", Body::empty(), None)
        .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("UP"))
    );
    let (status, body) = api
        .raw(Method::GET, "/actuator/digest", Body::empty(), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["plugins"], model::BUILTIN_PLUGINS.len());
    assert_eq!(body["digest"].as_str().unwrap().len(), 64);
}

#[tokio::test]
async fn plugins_list_and_enable() {
    let api = Api::new().await;
    let mut events = api.state.subscribe();
    let all = api.ok(Method::GET, "/plugin/all", None).await;
    assert_eq!(
        all["data"].as_array().unwrap().len(),
        model::BUILTIN_PLUGINS.len()
    );

    let page = api
        .ok(
            Method::GET,
            "/plugin?name=divide&enabled=&currentPage=1&pageSize=12",
            None,
        )
        .await;
    assert_eq!(page["message"], "query success");
    assert_eq!(page["data"]["page"]["totalCount"], 1);
    assert_eq!(page["data"]["dataList"][0]["id"], "5");
    assert_eq!(page["data"]["dataList"][0]["enabled"], true);

    let body = api
        .ok(
            Method::POST,
            "/plugin/enabled",
            Some(json!({"ids":["5"],"enabled":false})),
        )
        .await;
    assert_eq!(
        body,
        json!({"code":200,"message":"enable success","data":null})
    );
    let detail = api.ok(Method::GET, "/plugin/5", None).await;
    assert_eq!(detail["message"], "detail success");
    assert_eq!(detail["data"]["enabled"], false);
    let event = next_event(&mut events);
    assert_eq!(
        (event.group(), event.event_type),
        (ConfigGroup::Plugin, DataEventType::Update)
    );
    let EventPayload::Plugin(plugins) = event.payload else {
        panic!("plugin payload")
    };
    assert_eq!(
        (plugins[0].name.as_str(), plugins[0].enabled),
        ("divide", false)
    );

    let (status, body) = api
        .call(
            Method::POST,
            "/plugin/enabled",
            Some(json!({"ids":["5","999"],"enabled":true})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::NOT_FOUND, Some(404))
    );
    assert_eq!(
        api.ok(Method::GET, "/plugin/5", None).await["data"]["enabled"],
        false,
        "all or nothing"
    );
    assert!(matches!(events.try_recv(), Err(TryRecvError::Empty)));
    let (status, _) = api.call(Method::GET, "/plugin/999", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn selector_crud() {
    let api = Api::new().await;
    let mut events = api.state.subscribe();
    let id = api.create_selector("/http").await;
    assert_eq!(id.len(), 19);
    assert!(id.bytes().all(|b| b.is_ascii_digit()));

    let event = next_event(&mut events);
    assert_eq!(
        (event.group(), event.event_type),
        (ConfigGroup::Selector, DataEventType::Update)
    );
    let EventPayload::Selector(data) = &event.payload else {
        panic!("selector payload")
    };
    assert_eq!(data[0].id, id);
    assert_eq!(data[0].plugin_name, "divide");
    assert_eq!(
        data[0].namespace_id.as_deref(),
        Some(model::DEFAULT_NAMESPACE_ID)
    );

    let detail = api.ok(Method::GET, &format!("/selector/{id}"), None).await;
    assert_eq!(detail["message"], "detail success");
    assert_eq!(detail["data"]["name"], "/http");
    assert_eq!(detail["data"]["typeName"], "custom");
    assert_eq!(
        detail["data"]["selectorConditions"][0]["operator"],
        "startsWith"
    );

    let mut changed = selector_body("/http2");
    changed["sort"] = json!(7);
    let body = api
        .ok(Method::PUT, &format!("/selector/{id}"), Some(changed))
        .await;
    assert_eq!(
        body,
        json!({"code":200,"message":"update success","data":1})
    );
    let event = next_event(&mut events);
    let EventPayload::Selector(data) = &event.payload else {
        panic!("selector payload")
    };
    assert_eq!((data[0].name.as_str(), data[0].sort), ("/http2", 7));
    assert_eq!(data[0].before_condition_list[0].param_value, "/http/");

    api.create_selector("/other").await;
    next_event(&mut events);
    let page = api
        .ok(
            Method::GET,
            "/selector?pluginId=5&name=http2&currentPage=1&pageSize=12",
            None,
        )
        .await;
    assert_eq!(page["data"]["page"]["totalCount"], 1);
    assert_eq!(page["data"]["dataList"][0]["id"], id.as_str());
    let page = api
        .ok(
            Method::GET,
            "/selector?pluginId=5&currentPage=2&pageSize=1",
            None,
        )
        .await;
    assert_eq!(page["data"]["page"]["totalPage"], 2);
    assert_eq!(page["data"]["dataList"].as_array().unwrap().len(), 1);
    // A page far beyond the end, in pages of any size, is empty (no overflow).
    let max = i64::MAX;
    let page = api
        .ok(
            Method::GET,
            &format!("/selector?pluginId=5&currentPage={max}&pageSize={max}"),
            None,
        )
        .await;
    assert_eq!(page["data"]["page"]["offset"], max);
    assert_eq!(page["data"]["dataList"].as_array().unwrap().len(), 0);

    api.ok(Method::POST, "/rule", Some(rule_body(&id, "r")))
        .await;
    next_event(&mut events);
    let body = api
        .ok(
            Method::DELETE,
            "/selector/batch",
            Some(json!({"ids":[id, "123"]})),
        )
        .await;
    assert_eq!(
        body,
        json!({"code":200,"message":"delete success","data":1})
    );
    let deleted = next_event(&mut events);
    assert_eq!(
        (deleted.group(), deleted.event_type),
        (ConfigGroup::Selector, DataEventType::Delete)
    );
    let rules = next_event(&mut events);
    assert_eq!(
        (rules.group(), rules.event_type, rules.len()),
        (ConfigGroup::Rule, DataEventType::Delete, 1)
    );
    assert_eq!(api.selector_count().await, 1);
    assert_eq!(api.rule_count().await, 0, "the selector's rules went too");
    let (status, body) = api
        .call(Method::GET, &format!("/selector/{id}"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::NOT_FOUND, Some(404))
    );
    let (status, _) = api
        .call(
            Method::PUT,
            &format!("/selector/{id}"),
            Some(selector_body("x")),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn rule_crud() {
    let api = Api::new().await;
    let selector = api.create_selector("/http").await;
    let mut events = api.state.subscribe();
    let body = api
        .ok(
            Method::POST,
            "/rule",
            Some(rule_body(&selector, "/http/order")),
        )
        .await;
    assert_eq!(
        body,
        json!({"code":200,"message":"create success","data":1})
    );
    let event = next_event(&mut events);
    assert_eq!(
        (event.group(), event.event_type),
        (ConfigGroup::Rule, DataEventType::Update)
    );
    let EventPayload::Rule(data) = &event.payload else {
        panic!("rule payload")
    };
    assert_eq!(
        (data[0].plugin_name.as_str(), data[0].selector_id.as_str()),
        ("divide", selector.as_str())
    );

    let page = api
        .ok(
            Method::GET,
            &format!("/rule?selectorId={selector}&name=&currentPage=1&pageSize=12"),
            None,
        )
        .await;
    assert_eq!(page["data"]["page"]["totalCount"], 1);
    let id = page["data"]["dataList"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        page["data"]["dataList"][0]["ruleConditions"][0]["paramValue"],
        "/http/order"
    );

    let mut changed = rule_body(&selector, "/http/order2");
    changed["sort"] = json!(3);
    api.ok(Method::PUT, &format!("/rule/{id}"), Some(changed))
        .await;
    let detail = api.ok(Method::GET, &format!("/rule/{id}"), None).await;
    assert_eq!(
        (
            detail["data"]["name"].as_str(),
            detail["data"]["sort"].as_i64()
        ),
        (Some("/http/order2"), Some(3))
    );
    let event = next_event(&mut events);
    let EventPayload::Rule(data) = &event.payload else {
        panic!("rule payload")
    };
    assert_eq!(data[0].before_condition_data_list.len(), 1);

    let body = api
        .ok(Method::DELETE, "/rule/batch", Some(json!({"ids":[id]})))
        .await;
    assert_eq!(body["data"], 1);
    let event = next_event(&mut events);
    assert_eq!(
        (event.group(), event.event_type, event.len()),
        (ConfigGroup::Rule, DataEventType::Delete, 1)
    );
    assert_eq!(api.rule_count().await, 0);
}

/// ShenYu defines these, so the admin takes them: a rule without conditions (`and`: every
/// request, `or`: none) and a custom selector without conditions (never matches).
#[tokio::test]
async fn conditionless_rules_and_custom_selectors_are_accepted() {
    let api = Api::new().await;
    let mut body = selector_body("/never");
    body["selectorConditions"] = json!([]);
    let created = api.ok(Method::POST, "/selector", Some(body)).await;
    assert_eq!(created["code"], 200, "{created}");
    assert_eq!(api.selector_count().await, 1);
    let selector = api.create_selector("/open").await;
    for mode in [0, 1] {
        let mut rule = rule_body(&selector, &format!("open{mode}"));
        rule["ruleConditions"] = json!([]);
        rule["matchMode"] = json!(mode);
        api.ok(Method::POST, "/rule", Some(rule)).await;
    }
    assert_eq!(api.rule_count().await, 2);
}

#[tokio::test]
async fn rejected_requests_store_and_publish_nothing() {
    let api = Api::new().await;
    let selector = api.create_selector("/kept").await;
    let mut events = api.state.subscribe();

    let with = |f: &dyn Fn(&mut Value)| {
        let mut body = selector_body("/bad");
        f(&mut body);
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            with(&|b| b["sort"] = json!("x")),
            r#"sort: invalid type: string "x", expected i32"#,
        ),
        (
            with(&|b| b["pluginId"] = json!("99")),
            "pluginId: unknown plugin `99`",
        ),
        (
            with(&|b| b["selectorConditions"][0]["operator"] = json!("=~")),
            "selectorConditions[0].operator: unknown operator `=~`",
        ),
        (
            with(&|b| {
                b["selectorConditions"][0]["operator"] = json!("regex");
                b["selectorConditions"][0]["paramValue"] = json!("(a");
            }),
            "selectorConditions[0].paramValue: invalid regex",
        ),
        (
            with(&|b| {
                b.as_object_mut().unwrap().remove("sort");
            }),
            "sort: must not be null",
        ),
        (
            with(&|b| b["selectorConditions"][0]["paramType"] = json!("form-data")),
            "selectorConditions[0].paramType: param type `form-data` is not supported",
        ),
        (with(&|b| b["name"] = json!(" ")), "name: must not be blank"),
        (with(&|b| b["type"] = json!(3)), "type: must be 0 or 1"),
        (
            with(&|b| b["handle"] = json!("[{\"upstreamUrl\":\"http://a:1\"}]")),
            "handle[0].upstreamUrl: expected `host:port`",
        ),
    ];
    for (body, message) in cases {
        let (status, response) = api
            .call(Method::POST, "/selector", Some(body.clone()))
            .await;
        assert_bad_request(status, &response, message);
        let (status, response) = api
            .call(Method::PUT, &format!("/selector/{selector}"), Some(body))
            .await;
        assert_bad_request(status, &response, message);
    }
    let (status, response) = api
        .raw(
            Method::POST,
            "/selector",
            Body::from("{\"name\":"),
            api.token.as_deref(),
        )
        .await;
    assert_bad_request(status, &response, "invalid JSON body: ");

    let (status, response) = api
        .call(Method::POST, "/rule", Some(rule_body("42", "r")))
        .await;
    assert_bad_request(status, &response, "selectorId: unknown selector `42`");
    for (handle, message) in [
        (
            "{\"loadBalance\":\"nope\"}",
            "handle.loadBalance: unknown load balancer `nope`",
        ),
        (
            "{\"retry\":2147483647}",
            "handle.retry: must be within 0..=10, got 2147483647",
        ),
        (
            "{\"timeout\":-1}",
            "handle.timeout: must be within 0..=600000, got -1",
        ),
        ("{\"retry\":", "handle: invalid divide rule handle: "),
    ] {
        let mut bad_handle = rule_body(&selector, "r");
        bad_handle["handle"] = json!(handle);
        let (status, response) = api.call(Method::POST, "/rule", Some(bad_handle)).await;
        assert_bad_request(status, &response, message);
    }

    assert_eq!(api.selector_count().await, 1, "nothing stored");
    assert_eq!(api.rule_count().await, 0, "nothing stored");
    let detail = api
        .ok(Method::GET, &format!("/selector/{selector}"), None)
        .await;
    assert_eq!(
        detail["data"]["name"], "/kept",
        "rejected updates change nothing"
    );

    let good = api.create_selector("/good").await;
    let event = next_event(&mut events);
    let EventPayload::Selector(data) = &event.payload else {
        panic!("the first event is the good create")
    };
    assert_eq!(
        data[0].id, good,
        "the first event published is the good create"
    );
    assert!(matches!(events.try_recv(), Err(TryRecvError::Empty)));
}

/// The one event expected next, with its group and type.
fn expect_event(
    events: &mut broadcast::Receiver<SharedEvent>,
    group: ConfigGroup,
    event_type: DataEventType,
) -> DataEvent {
    let event = next_event(events);
    assert_eq!(
        (event.group(), event.event_type),
        (group, event_type),
        "{event:?}"
    );
    event
}

fn assert_quiet(events: &mut broadcast::Receiver<SharedEvent>) {
    assert!(matches!(events.try_recv(), Err(TryRecvError::Empty)));
}

#[tokio::test]
async fn plugin_update_validates_and_publishes() {
    let api = Api::new().await;
    let mut events = api.state.subscribe();
    let body = json!({"name":"divide","role":"Proxy","sort":210,"enabled":false,
                      "config":"{\"multiSelectorHandle\":\"1\"}","namespaceId":"ignored"});
    let reply = api.ok(Method::PUT, "/plugin/5", Some(body.clone())).await;
    assert_eq!(reply["message"], "update success");
    let event = expect_event(&mut events, ConfigGroup::Plugin, DataEventType::Update);
    let EventPayload::Plugin(data) = &event.payload else {
        unreachable!()
    };
    assert_eq!(
        (data[0].name.as_str(), data[0].sort, data[0].enabled),
        ("divide", 210, false)
    );
    assert_eq!(
        data[0].config.as_deref(),
        Some("{\"multiSelectorHandle\":\"1\"}")
    );
    let detail = api.ok(Method::GET, "/plugin/5", None).await;
    assert_eq!(detail["data"]["sort"], 210);

    for (change, message) in [
        (json!({"name":"other"}), "name: a plugin cannot be renamed"),
        (json!({"config":"[1]"}), "config: must be a JSON object"),
        (json!({"config":"{"}), "config: invalid JSON"),
        (json!({"sort":"x"}), "sort: invalid type"),
        (json!({"role":""}), "role: must not be blank"),
    ] {
        let mut bad = body.clone();
        for (k, v) in change.as_object().unwrap() {
            bad[k] = v.clone();
        }
        let (status, response) = api.call(Method::PUT, "/plugin/5", Some(bad)).await;
        assert_bad_request(status, &response, message);
    }
    let (status, _) = api.call(Method::PUT, "/plugin/999", Some(body)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_quiet(&mut events);
    let detail = api.ok(Method::GET, "/plugin/5", None).await;
    assert_eq!(
        detail["data"]["sort"], 210,
        "rejected updates change nothing"
    );
}

#[tokio::test]
async fn selector_and_rule_search_and_batch_enable() {
    let api = Api::new().await;
    let a = api.create_selector("/alpha").await;
    let b = api.create_selector("/beta").await;
    api.create_selector("/alphabet").await;
    for (selector, name) in [(&a, "ra1"), (&a, "ra2"), (&b, "rb1")] {
        api.ok(Method::POST, "/rule", Some(rule_body(selector, name)))
            .await;
    }
    let mut events = api.state.subscribe();

    let page = api
        .ok(
            Method::POST,
            "/selector/list/search",
            Some(json!({"pageNum":1,"pageSize":1,"condition":{"keyword":"alpha","plugin":["5"],"namespaceId":"x"}})),
        )
        .await;
    let data = &page["data"];
    assert_eq!(
        (
            data["total"].as_i64(),
            data["pages"].as_i64(),
            data["size"].as_i64()
        ),
        (Some(2), Some(2), Some(1))
    );
    assert_eq!(data["list"][0]["name"], "/alpha");
    assert_eq!(
        (data["hasNextPage"].as_bool(), data["isFirstPage"].as_bool()),
        (Some(true), Some(true))
    );
    let none = api
        .ok(
            Method::POST,
            "/selector/list/search",
            Some(json!({"condition":{"plugin":["6"]}})),
        )
        .await;
    assert_eq!(none["data"]["total"], 0);
    let (status, response) = api
        .call(
            Method::POST,
            "/selector/list/search",
            Some(json!({"pageNum":0})),
        )
        .await;
    assert_bad_request(status, &response, "pageNum: must be >= 1");
    let far = api
        .ok(
            Method::POST,
            "/selector/list/search",
            Some(json!({"pageNum":i64::MAX,"pageSize":i64::MAX})),
        )
        .await;
    assert_eq!(far["data"]["list"].as_array().map(Vec::len), Some(0));

    let rules = api
        .ok(
            Method::POST,
            "/rule/list/search",
            Some(json!({"pageNum":1,"pageSize":10,"condition":{"selectors":[a]}})),
        )
        .await;
    assert_eq!(rules["data"]["total"], 2);
    let names: Vec<&str> = rules["data"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ra1", "ra2"]);
    let both = api
        .ok(
            Method::POST,
            "/rule/list/search",
            Some(json!({"condition":{"selectors":[a, b]}})),
        )
        .await;
    assert_eq!(both["data"]["total"], 3);

    // A list of one selector's rules reads that selector's rules only (by its index): the
    // same answers as filtering every rule, in store order, with the name filter applied.
    let listed = |query: String| {
        let api = &api;
        async move {
            let page = api.ok(Method::GET, &query, None).await;
            page["data"]["dataList"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap().to_owned())
                .collect::<Vec<String>>()
        }
    };
    assert_eq!(
        listed(format!("/rule?selectorId={a}")).await,
        ["ra1", "ra2"]
    );
    assert_eq!(listed(format!("/rule?selectorId={b}")).await, ["rb1"]);
    assert_eq!(
        listed(format!("/rule?selectorId=%20{a}%20&name=ra2")).await,
        ["ra2"]
    );
    assert_eq!(listed("/rule?selectorId=nope".to_owned()).await, [""; 0]);
    assert_eq!(listed("/rule?selectorId=".to_owned()).await.len(), 3);

    let reply = api
        .ok(
            Method::POST,
            "/selector/batchEnabled",
            Some(json!({"ids":[a, b],"enabled":false})),
        )
        .await;
    assert_eq!(reply["message"], "enable success");
    let event = expect_event(&mut events, ConfigGroup::Selector, DataEventType::Update);
    let EventPayload::Selector(data) = &event.payload else {
        unreachable!()
    };
    assert_eq!(data.len(), 2);
    assert!(data.iter().all(|s| !s.enabled && s.plugin_name == "divide"));

    let (status, _) = api
        .call(
            Method::POST,
            "/selector/batchEnabled",
            Some(json!({"ids":[a, "nope"],"enabled":true})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let detail = api.ok(Method::GET, &format!("/selector/{a}"), None).await;
    assert_eq!(
        detail["data"]["enabled"], false,
        "a failed batch changes nothing"
    );

    let rule_ids: Vec<String> = rules["data"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    api.ok(
        Method::POST,
        "/rule/batchEnabled",
        Some(json!({"ids":rule_ids,"enabled":false})),
    )
    .await;
    let event = expect_event(&mut events, ConfigGroup::Rule, DataEventType::Update);
    let EventPayload::Rule(data) = &event.payload else {
        unreachable!()
    };
    assert!(
        data.iter()
            .all(|r| !r.enabled && r.plugin_name == "divide" && r.selector_id == a)
    );
    let (status, response) = api
        .call(Method::POST, "/rule/batchEnabled", Some(json!({"ids":[]})))
        .await;
    assert_bad_request(status, &response, "ids: must not be empty");
    assert_quiet(&mut events);
}

fn meta_body(path: &str) -> Value {
    json!({"appName":"http-demo","contextPath":"/http","path":path,"pathDesc":"find",
           "rpcType":"http","serviceName":"org.example.Order","methodName":"find",
           "ruleName":path,"parameterTypes":"java.lang.String","enabled":true,
           "namespaceId":"649330b6-c2d7-4edc-be8e-8a54df9eb385"})
}

#[tokio::test]
async fn metadata_crud_publishes_meta_data_events() {
    let api = Api::new().await;
    let mut events = api.state.subscribe();
    let created = api
        .ok(
            Method::POST,
            "/meta-data/createOrUpdate",
            Some(meta_body("/http/order/find")),
        )
        .await;
    assert_eq!(created["message"], "create success");
    let id = created["data"].as_str().unwrap().to_owned();
    let event = expect_event(&mut events, ConfigGroup::MetaData, DataEventType::Update);
    let EventPayload::MetaData(data) = &event.payload else {
        unreachable!()
    };
    assert_eq!(
        (data[0].id.as_str(), data[0].path.as_str()),
        (id.as_str(), "/http/order/find")
    );

    let (status, response) = api
        .call(
            Method::POST,
            "/meta-data/createOrUpdate",
            Some(meta_body("/http/order/find")),
        )
        .await;
    assert_bad_request(
        status,
        &response,
        "path: `/http/order/find` is already used",
    );
    let mut bad = meta_body("/x");
    bad["rpcType"] = json!("soap");
    let (status, response) = api
        .call(Method::POST, "/meta-data/createOrUpdate", Some(bad))
        .await;
    assert_bad_request(status, &response, "rpcType: unknown rpc type `soap`");
    let (status, response) = api
        .call(
            Method::POST,
            "/meta-data/createOrUpdate",
            Some(meta_body("/a/**/b")),
        )
        .await;
    assert_bad_request(status, &response, "path: path pattern `/a/**/b`");

    let mut update = meta_body("/http/order/get");
    update["id"] = json!(id);
    let updated = api
        .ok(Method::POST, "/meta-data/createOrUpdate", Some(update))
        .await;
    assert_eq!(
        (updated["message"].as_str(), updated["data"].as_str()),
        (Some("update success"), Some(id.as_str()))
    );
    expect_event(&mut events, ConfigGroup::MetaData, DataEventType::Update);
    let second = api
        .ok(
            Method::POST,
            "/meta-data/createOrUpdate",
            Some(meta_body("/http/pay")),
        )
        .await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    expect_event(&mut events, ConfigGroup::MetaData, DataEventType::Update);

    let detail = api.ok(Method::GET, &format!("/meta-data/{id}"), None).await;
    assert_eq!(detail["data"]["path"], "/http/order/get");
    assert_eq!(detail["data"]["pathDesc"], "find");
    let all = api.ok(Method::GET, "/meta-data/findAll", None).await;
    assert_eq!(all["data"].as_array().unwrap().len(), 2);
    let page = api
        .ok(
            Method::GET,
            "/meta-data/queryList?path=order&currentPage=1&pageSize=10",
            None,
        )
        .await;
    assert_eq!(page["data"]["page"]["totalCount"], 1);
    assert_eq!(page["data"]["dataList"][0]["id"], id.as_str());

    api.ok(
        Method::POST,
        "/meta-data/batchEnabled",
        Some(json!({"ids":[id],"enabled":false})),
    )
    .await;
    let event = expect_event(&mut events, ConfigGroup::MetaData, DataEventType::Update);
    let EventPayload::MetaData(data) = &event.payload else {
        unreachable!()
    };
    assert!(!data[0].enabled);

    let (_, digest) = api.call(Method::GET, "/actuator/digest", None).await;
    assert_eq!(digest["metaData"], 2);
    let deleted = api
        .ok(
            Method::DELETE,
            "/meta-data/batchDeleted",
            Some(json!({"ids":[id, second, "nope"]})),
        )
        .await;
    assert_eq!(deleted["data"], 2);
    let event = expect_event(&mut events, ConfigGroup::MetaData, DataEventType::Delete);
    assert_eq!(event.len(), 2);
    let (status, _) = api
        .call(Method::GET, &format!("/meta-data/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_quiet(&mut events);
}

#[tokio::test]
async fn app_auth_lifecycle_publishes_app_auth_events() {
    let api = Api::new().await;
    let mut events = api.state.subscribe();
    let applied = api
        .ok(
            Method::POST,
            "/appAuth/apply",
            Some(
                json!({"userId":"u1","appName":"shop","phone":"123","appParam":"p=1",
                        "extInfo":"x","open":true,"pathList":["/http/order/**"]}),
            ),
        )
        .await;
    let data = &applied["data"];
    let id = data["id"].as_str().unwrap().to_owned();
    let key = data["appKey"].as_str().unwrap().to_owned();
    let secret = data["appSecret"].as_str().unwrap().to_owned();
    assert_eq!((key.len(), secret.len()), (32, 32));
    assert_eq!(data["authPathList"][0]["path"], "/http/order/**");
    let event = expect_event(&mut events, ConfigGroup::AppAuth, DataEventType::Update);
    let EventPayload::AppAuth(synced) = &event.payload else {
        unreachable!()
    };
    assert_eq!(
        (synced[0].app_key.as_str(), synced[0].app_secret.as_str()),
        (key.as_str(), secret.as_str())
    );
    assert!(synced[0].open && synced[0].enabled);
    assert_eq!(synced[0].param_data_list[0].app_param, "p=1");

    let (status, response) = api
        .call(
            Method::POST,
            "/appAuth/apply",
            Some(json!({"appName":"shop","pathList":["http/x"]})),
        )
        .await;
    assert_bad_request(
        status,
        &response,
        "pathList[0]: path pattern `http/x` must start with `/`",
    );
    let (status, response) = api
        .call(
            Method::POST,
            "/appAuth/apply",
            Some(json!({"appName":"shop","appKey":key})),
        )
        .await;
    assert_bad_request(status, &response, "appKey: ");

    let page = api
        .ok(
            Method::GET,
            "/appAuth/findPageByQuery?phone=12&currentPage=1&pageSize=5",
            None,
        )
        .await;
    assert_eq!(page["data"]["page"]["totalCount"], 1);
    let detail = api
        .ok(Method::GET, &format!("/appAuth/detail?id={id}"), None)
        .await;
    assert_eq!(detail["data"]["appKey"], key.as_str());

    let update = json!({"id":id,"appKey":key,"appSecret":"S3CRET","open":false,"enabled":true,
        "authParamList":[{"appName":"shop","appParam":"q"}],
        "authPathList":[{"appName":"shop","path":"/pay/{id}","enabled":true}]});
    let mut bad = update.clone();
    bad["authPathList"][0]["path"] = json!("/pay/{id");
    let (status, response) = api
        .call(Method::POST, "/appAuth/updateDetail", Some(bad))
        .await;
    assert_bad_request(
        status,
        &response,
        "authPathList[0].path: path pattern `/pay/{id`: unclosed",
    );
    api.ok(Method::POST, "/appAuth/updateDetail", Some(update))
        .await;
    let event = expect_event(&mut events, ConfigGroup::AppAuth, DataEventType::Update);
    let EventPayload::AppAuth(synced) = &event.payload else {
        unreachable!()
    };
    assert_eq!(
        (synced[0].app_secret.as_str(), synced[0].open),
        ("S3CRET", false)
    );
    assert_eq!(synced[0].path_data_list[0].path, "/pay/{id}");

    api.ok(
        Method::POST,
        "/appAuth/batchEnabled",
        Some(json!({"ids":[id],"enabled":false})),
    )
    .await;
    let event = expect_event(&mut events, ConfigGroup::AppAuth, DataEventType::Update);
    let EventPayload::AppAuth(synced) = &event.payload else {
        unreachable!()
    };
    assert!(!synced[0].enabled);
    let deleted = api
        .ok(Method::POST, "/appAuth/batchDelete", Some(json!([id])))
        .await;
    assert_eq!(deleted["data"], 1);
    let event = expect_event(&mut events, ConfigGroup::AppAuth, DataEventType::Delete);
    let EventPayload::AppAuth(synced) = &event.payload else {
        unreachable!()
    };
    assert_eq!(synced[0].app_key, key);
    assert_quiet(&mut events);
}

#[tokio::test]
async fn path_pattern_conditions_are_parsed() {
    let api = Api::new().await;
    let mut body = selector_body("/p");
    body["selectorConditions"][0]["operator"] = json!("pathPattern");
    body["selectorConditions"][0]["paramValue"] = json!("/http/**/x");
    let (status, response) = api
        .call(Method::POST, "/selector", Some(body.clone()))
        .await;
    assert_bad_request(
        status,
        &response,
        "selectorConditions[0].paramValue: invalid path pattern `/http/**/x`",
    );
    body["selectorConditions"][0]["paramValue"] = json!("/http/{id}/**");
    api.ok(Method::POST, "/selector", Some(body)).await;
}

/// A multipart body of text fields, plus an optional file part, with its content type.
fn multipart(fields: &[(&str, &str)], file: Option<(&str, &str)>) -> (String, Body) {
    let boundary = "gantry-test-boundary";
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    if let Some((name, content)) = file {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; \
             filename=\"plugin.jar\"\r\nContent-Type: application/java-archive\r\n\r\n\
             {content}\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (
        format!("multipart/form-data; boundary={boundary}"),
        Body::from(body),
    )
}

#[tokio::test]
async fn plugin_create_form_update_and_cascading_delete() {
    let api = Api::new().await;
    let token = api.token.clone();
    let mut events = api.state.subscribe();
    let body = json!({"name":"myPlugin","role":"Custom","sort":500,"enabled":true,
                      "config":"{\"a\":1}"});
    let reply = api.ok(Method::POST, "/plugin", Some(body.clone())).await;
    assert_eq!(reply["message"], "create success");
    let event = expect_event(&mut events, ConfigGroup::Plugin, DataEventType::Create);
    let EventPayload::Plugin(data) = &event.payload else {
        unreachable!()
    };
    assert_eq!((data[0].name.as_str(), data[0].sort), ("myPlugin", 500));
    let id = data[0].id.clone();

    for (change, message) in [
        (json!({}), "name: plugin `myPlugin` already exists"),
        (json!({"name":" "}), "name: must not be blank"),
        (json!({"name":"p2","sort":null}), "sort: must not be null"),
        (
            json!({"name":"p2","config":"[1]"}),
            "config: must be a JSON object",
        ),
    ] {
        let mut bad = body.clone();
        for (k, v) in change.as_object().unwrap() {
            bad[k] = v.clone();
        }
        let (status, response) = api.call(Method::POST, "/plugin", Some(bad)).await;
        assert_bad_request(status, &response, message);
    }
    assert_quiet(&mut events);

    // ShenYu's dashboard sends form fields (`@ModelAttribute`): urlencoded ...
    let uri = format!("/plugin/{id}");
    let form = "name=myPlugin&role=Custom&sort=501&enabled=false&config=%7B%22b%22%3A2%7D";
    let (status, reply) = api
        .typed(
            Method::PUT,
            &uri,
            "application/x-www-form-urlencoded",
            Body::from(form),
            token.as_deref(),
        )
        .await;
    assert_eq!(
        (status, &reply["message"]),
        (StatusCode::OK, &json!("update success"))
    );
    let detail = api.ok(Method::GET, &uri, None).await;
    assert_eq!(
        (
            &detail["data"]["sort"],
            &detail["data"]["enabled"],
            &detail["data"]["config"]
        ),
        (&json!(501), &json!(false), &json!("{\"b\":2}"))
    );
    // ... or multipart.
    let fields = [
        ("name", "myPlugin"),
        ("role", "Custom"),
        ("sort", "502"),
        ("enabled", "true"),
    ];
    let (content_type, body) = multipart(&fields, None);
    let (status, reply) = api
        .typed(Method::PUT, &uri, &content_type, body, token.as_deref())
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(api.ok(Method::GET, &uri, None).await["data"]["sort"], 502);
    expect_event(&mut events, ConfigGroup::Plugin, DataEventType::Update);
    expect_event(&mut events, ConfigGroup::Plugin, DataEventType::Update);
    // Bad form input names the field and changes nothing.
    let (status, reply) = api
        .typed(
            Method::PUT,
            &uri,
            "application/x-www-form-urlencoded",
            Body::from("name=myPlugin&role=Custom&sort=x&enabled=true"),
            token.as_deref(),
        )
        .await;
    assert_bad_request(status, &reply, "sort:");
    let (content_type, body) = multipart(&fields, Some(("file", "PK...")));
    let (status, reply) = api
        .typed(Method::PUT, &uri, &content_type, body, token.as_deref())
        .await;
    assert_bad_request(status, &reply, "file: file uploads are not supported");
    assert_quiet(&mut events);
    assert_eq!(api.ok(Method::GET, &uri, None).await["data"]["sort"], 502);

    // A selector, a rule and a handle definition under the plugin.
    let mut selector = selector_body("mine");
    selector["pluginId"] = json!(id);
    let selector_id = api.ok(Method::POST, "/selector", Some(selector)).await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    api.ok(
        Method::POST,
        "/rule",
        Some(rule_body(&selector_id, "mine-rule")),
    )
    .await;
    let handle =
        json!({"pluginId": id, "field": "f", "label": "F", "dataType": 2, "type": 2, "sort": 1});
    api.ok(Method::POST, "/plugin-handle", Some(handle)).await;
    // ShenYu publishes a created selector or rule as UPDATE.
    expect_event(&mut events, ConfigGroup::Selector, DataEventType::Update);
    expect_event(&mut events, ConfigGroup::Rule, DataEventType::Update);
    assert_quiet(&mut events);

    // All or none: an unknown id deletes nothing.
    let (status, _) = api
        .call(Method::DELETE, "/plugin/batch", Some(json!([id, "nope"])))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_quiet(&mut events);
    api.ok(Method::GET, &uri, None).await;

    let reply = api
        .ok(Method::DELETE, "/plugin/batch", Some(json!([id])))
        .await;
    assert_eq!(reply["data"], 1);
    expect_event(&mut events, ConfigGroup::Selector, DataEventType::Delete);
    expect_event(&mut events, ConfigGroup::Rule, DataEventType::Delete);
    let event = expect_event(&mut events, ConfigGroup::Plugin, DataEventType::Delete);
    let EventPayload::Plugin(data) = &event.payload else {
        unreachable!()
    };
    assert_eq!(data[0].name, "myPlugin");
    assert_eq!(
        api.call(Method::GET, &uri, None).await.0,
        StatusCode::NOT_FOUND
    );
    let selector_uri = format!("/selector/{selector_id}");
    assert_eq!(
        api.call(Method::GET, &selector_uri, None).await.0,
        StatusCode::NOT_FOUND
    );
    let handles = api
        .ok(Method::GET, &format!("/plugin-handle?pluginId={id}"), None)
        .await;
    assert_eq!(handles["data"]["page"]["totalCount"], 0);
}

#[tokio::test]
async fn plugin_handle_definitions_crud() {
    let api = Api::new().await;
    let mut events = api.state.subscribe();
    // Seeded: divide's selector and rule handle fields.
    let selector_fields = api.ok(Method::GET, "/plugin-handle/all/5/1", None).await;
    let fields: Vec<&str> = selector_fields["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"upstreamUrl") && fields.contains(&"weight"),
        "{fields:?}"
    );
    let rule_fields = api.ok(Method::GET, "/plugin-handle/all/5/2", None).await;
    assert!(
        rule_fields["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["field"] == "loadBalance")
    );
    let (status, reply) = api.call(Method::GET, "/plugin-handle/all/5/x", None).await;
    assert_bad_request(status, &reply, "type: `x` is not an integer");

    let body = json!({"pluginId":"5","field":"myField","label":"My field","dataType":2,
                      "type":2,"sort":9,"extObj":"{\"required\":\"0\"}"});
    let reply = api
        .ok(Method::POST, "/plugin-handle", Some(body.clone()))
        .await;
    assert_eq!(reply["message"], "create success");
    for (change, message) in [
        (
            json!({}),
            "field: plugin `5` already has a type-2 handle field `myField`",
        ),
        (json!({"dataType":4}), "dataType: must be one of 1..=3"),
        (json!({"type":0}), "type: must be one of 1..=3"),
        (json!({"pluginId":"999"}), "pluginId: unknown plugin `999`"),
        (json!({"extObj":"[1]"}), "extObj: must be a JSON object"),
        (json!({"label":""}), "label: must not be blank"),
        (json!({"sort":null}), "sort: must not be null"),
    ] {
        let mut bad = body.clone();
        for (k, v) in change.as_object().unwrap() {
            bad[k] = v.clone();
        }
        let (status, response) = api.call(Method::POST, "/plugin-handle", Some(bad)).await;
        assert_bad_request(status, &response, message);
    }
    let page = api
        .ok(Method::GET, "/plugin-handle?pluginId=5&field=myF", None)
        .await;
    assert_eq!(page["data"]["page"]["totalCount"], 1, "{page}");
    let created = &page["data"]["dataList"][0];
    assert_eq!(
        (&created["type"], &created["dataType"]),
        (&json!(2), &json!(2))
    );
    let id = created["id"].as_str().unwrap().to_owned();
    let uri = format!("/plugin-handle/{id}");

    let mut renamed = body.clone();
    renamed["label"] = json!("Renamed");
    api.ok(Method::PUT, &uri, Some(renamed.clone())).await;
    let detail = api.ok(Method::GET, &uri, None).await;
    assert_eq!(detail["data"]["label"], "Renamed");
    assert_eq!(detail["data"]["dateCreated"], created["dateCreated"]);
    let (status, _) = api
        .call(Method::PUT, "/plugin-handle/nope", Some(renamed))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, _) = api
        .call(
            Method::DELETE,
            "/plugin-handle/batch",
            Some(json!([id, "nope"])),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    api.ok(Method::GET, &uri, None).await;
    let reply = api
        .ok(Method::DELETE, "/plugin-handle/batch", Some(json!([id])))
        .await;
    assert_eq!(reply["data"], 1);
    assert_eq!(
        api.call(Method::GET, &uri, None).await.0,
        StatusCode::NOT_FOUND
    );
    // Handle definitions are not synced.
    assert_quiet(&mut events);
}

/// A body over axum's 2 MiB default limit is 413 in ShenYu's envelope, on every way the admin
/// reads a body (JSON, urlencoded and multipart forms, the long-poll listener's form).
#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let state = admin::AppState::new(&admin::Config {
        sync: vec![model::SyncMode::Websocket, model::SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await
    .unwrap();
    let mut api = Api {
        router: admin::app(state.clone()),
        state,
        token: None,
    };
    let (_, login) = api
        .call(
            Method::POST,
            "/platform/login",
            Some(json!({"userName":"admin","password":"123456"})),
        )
        .await;
    api.token = Some(login["data"]["token"].as_str().unwrap().to_owned());
    const LIMIT: usize = 2 * 1024 * 1024;
    let big = "a".repeat(LIMIT);
    let json_body = || Body::from(json!({ "name": big }).to_string());
    let multipart =
        format!("--b\r\ncontent-disposition: form-data; name=\"role\"\r\n\r\n{big}\r\n--b--\r\n");
    let token = api.token.clone();
    let calls = [
        (
            Method::POST,
            "/platform/login",
            "application/json",
            json_body(),
            None,
        ),
        (
            Method::POST,
            "/selector",
            "application/json",
            json_body(),
            token.as_deref(),
        ),
        (
            Method::PUT,
            "/plugin/5",
            "application/json",
            json_body(),
            token.as_deref(),
        ),
        (
            Method::PUT,
            "/plugin/5",
            "application/x-www-form-urlencoded",
            Body::from(format!("role={big}")),
            token.as_deref(),
        ),
        (
            Method::PUT,
            "/plugin/5",
            "multipart/form-data; boundary=b",
            Body::from(multipart),
            token.as_deref(),
        ),
        (
            Method::POST,
            "/configs/listener",
            "application/x-www-form-urlencoded",
            Body::from(format!("PLUGIN={big}")),
            token.as_deref(),
        ),
    ];
    for (method, uri, content_type, body, token) in calls {
        let (status, response) = api.typed(method, uri, content_type, body, token).await;
        assert_eq!(
            status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{uri} ({content_type}): {response}"
        );
        assert_eq!(response["code"], 413, "{uri}: {response}");
        assert!(response["data"].is_null(), "{uri}: {response}");
        assert!(
            response["message"]
                .as_str()
                .unwrap()
                .starts_with("request body too large"),
            "{uri}: {response}"
        );
    }
    // Just under the limit is read (and judged on its content).
    let (status, response) = api
        .raw(
            Method::POST,
            "/selector",
            Body::from(format!("{{\"name\":\"{}\"}}", "a".repeat(LIMIT - 20))),
            api.token.as_deref(),
        )
        .await;
    assert_bad_request(status, &response, "pluginId: must not be blank");
}

/// rateLimiter: rule handles and the plugin's Redis config are checked with field-naming 400s,
/// and the handle definitions the dashboard draws its forms from are seeded.
#[tokio::test]
async fn rate_limiter_handles_and_config_are_validated() {
    let api = Api::new().await;
    let mut body = selector_body("/limited");
    body["pluginId"] = json!("4");
    body["handle"] = Value::Null;
    let created = api.ok(Method::POST, "/selector", Some(body)).await;
    let selector = created["data"].as_str().unwrap().to_owned();
    let rule = |handle: Value| {
        let mut body = rule_body(&selector, "limit");
        body["handle"] = handle;
        body
    };
    let good = r#"{"algorithmName":"tokenBucket","replenishRate":"10","burstCapacity":"20","requestCount":1,"keyResolverName":"REMOTE_ADDRESS_KEY_RESOLVER"}"#;
    let reply = api.ok(Method::POST, "/rule", Some(rule(json!(good)))).await;
    assert_eq!(reply["message"], "create success");
    for (handle, message) in [
        (
            json!(r#"{"algorithmName":"fixedWindow","replenishRate":1,"burstCapacity":1}"#),
            "handle.algorithmName: unknown rate limiter algorithm `fixedWindow`",
        ),
        (
            json!(r#"{"algorithmName":"slidingWindow","replenishRate":0,"burstCapacity":1}"#),
            "handle.replenishRate: must be a finite number > 0, got 0",
        ),
        (
            json!(r#"{"algorithmName":"leakyBucket","replenishRate":1,"burstCapacity":"many"}"#),
            "handle.burstCapacity: expected a number, got `many`",
        ),
        (
            json!(
                r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":1,"keyResolverName":"HEADER"}"#
            ),
            "handle.keyResolverName: unknown key resolver `HEADER`",
        ),
        (Value::Null, "handle: must not be blank"),
    ] {
        let (status, response) = api.call(Method::POST, "/rule", Some(rule(handle))).await;
        assert_bad_request(status, &response, message);
    }
    assert_eq!(api.rule_count().await, 1, "only the good rule is stored");

    let plugin = |config: &str| json!({"name":"rateLimiter","role":"FaultTolerance","sort":60,"enabled":true,"config":config});
    let seed =
        r#"{"master":"mymaster","mode":"standalone","url":"127.0.0.1:6379","password":"abc"}"#;
    let reply = api.ok(Method::PUT, "/plugin/4", Some(plugin(seed))).await;
    assert_eq!(reply["message"], "update success");
    for (config, message) in [
        (r#"{"mode":"standalone"}"#, "config.url: must not be blank"),
        (
            r#"{"mode":"sentinel","url":"a:26379;b:26379"}"#,
            "config.master: must not be blank in sentinel mode",
        ),
        (
            r#"{"mode":"replica","url":"a:1"}"#,
            "config.mode: unknown redis mode `replica`",
        ),
        (
            r#"{"url":"a:1","failClosed":"perhaps"}"#,
            "config.failClosed: expected true or false",
        ),
    ] {
        let (status, response) = api
            .call(Method::PUT, "/plugin/4", Some(plugin(config)))
            .await;
        assert_bad_request(status, &response, message);
    }
    let detail = api.ok(Method::GET, "/plugin/4", None).await;
    assert_eq!(
        detail["data"]["config"], seed,
        "rejected updates change nothing"
    );

    let fields = |reply: Value| -> Vec<String> {
        reply["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["field"].as_str().unwrap().to_owned())
            .collect()
    };
    let rule_fields = fields(api.ok(Method::GET, "/plugin-handle/all/4/2", None).await);
    assert_eq!(
        rule_fields,
        [
            "algorithmName",
            "replenishRate",
            "burstCapacity",
            "keyResolverName",
            "requestCount"
        ]
    );
    let plugin_fields = fields(api.ok(Method::GET, "/plugin-handle/all/4/3", None).await);
    assert_eq!(
        plugin_fields,
        [
            "mode",
            "master",
            "url",
            "password",
            "failClosed",
            "concurrentSlotTtl"
        ]
    );
}
