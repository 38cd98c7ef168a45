//! The requests' shapes under each profile, against a wiremock admin that answers only the
//! shape the profile must send (a fake admin: nothing here checks ShenYu's behaviour).

use serde_json::{Value, json};
use wiremock::matchers::{body_json, body_partial_json, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use model::{RuleDto, SelectorDto};

use super::discovery::DiscoveryUpstream;
use super::session::query_value;
use super::{ADMIN_PASSWORD, ADMIN_USER, AdminClient};
use crate::client::Profile;

const NS: &str = model::DEFAULT_NAMESPACE_ID;

/// A success envelope around `data`.
fn ok(data: Value) -> ResponseTemplate {
    let mut body = json!({"code": 200, "message": "ok"});
    body["data"] = data;
    ResponseTemplate::new(200).set_body_json(body)
}

/// A `CommonPager` of `list`.
fn page(list: Value) -> Value {
    let mut page = json!({"page": {"currentPage": 1, "prePage": 1, "nextPage": 1,
                                   "pageSize": 100, "offset": 0, "totalPage": 1,
                                   "totalCount": 1}});
    page["dataList"] = list;
    page
}

fn login_data() -> Value {
    json!({"id": "1", "userName": "admin", "role": 1, "enabled": true,
           "token": "tok", "expiredTime": 86_400_000})
}

/// A client logged in at a fresh fake admin (both profiles log in with `GET`).
async fn client(profile: Profile) -> (MockServer, AdminClient) {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/platform/login"))
        .and(query_param("userName", "admin"))
        .and(query_param("password", "123456"))
        .respond_with(ok(login_data()))
        .expect(1)
        .named("login")
        .mount(&server)
        .await;
    let admin = AdminClient::login_as(&server.uri(), ADMIN_USER, ADMIN_PASSWORD, profile)
        .await
        .expect("login");
    assert_eq!(admin.profile(), profile);
    (server, admin)
}

/// The fake admin says plugin `5` is `name` (the 2.7 profile asks before binding).
async fn plugin_5_is(server: &MockServer, name: &str) {
    Mock::given(method("GET"))
        .and(path("/plugin-template/5"))
        .respond_with(ok(json!({"id": "5", "name": name})))
        .mount(server)
        .await;
}

/// `server.verify()` fails if anything is bound through `/proxy-selector/binding`.
async fn nothing_bound(server: &MockServer) {
    Mock::given(path("/proxy-selector/binding"))
        .respond_with(ok(json!(null)))
        .expect(0)
        .mount(server)
        .await;
}

fn divide_selector() -> SelectorDto {
    SelectorDto {
        plugin_id: Some("5".into()),
        name: Some("/http".into()),
        selector_type: Some(1),
        match_mode: Some(0),
        sort: Some(1),
        enabled: Some(true),
        loged: Some(true),
        continued: Some(true),
        match_restful: Some(false),
        handle: Some(
            r#"[{"upstreamUrl":"127.0.0.1:8189","protocol":"http://","weight":50,"status":true,"warmup":10},
                {"upstreamUrl":"127.0.0.1:8190","status":false}]"#
                .into(),
        ),
        selector_conditions: Some(vec![model::ConditionDto::new(
            "uri", "startsWith", "/", "/http/",
        )]),
        ..Default::default()
    }
}

fn has_namespace(req: &Request) -> bool {
    serde_json::from_slice::<Value>(&req.body).is_ok_and(|body| body.get("namespaceId").is_some())
}

#[tokio::test]
async fn v2_7_login_is_a_get_with_encoded_credentials() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/platform/login"))
        .and(query_param("userName", "a b&c"))
        .and(query_param("password", "p=1%"))
        .respond_with(ok(login_data()))
        .expect(1)
        .mount(&server)
        .await;
    let admin = AdminClient::login_as(&server.uri(), "a b&c", "p=1%", Profile::V2_7)
        .await
        .expect("login");
    assert_eq!(admin.namespace_id(), NS);
    // The same fake admin refuses the 2.6 login (no POST route).
    assert!(
        AdminClient::login(&server.uri(), "a b&c", "p=1%")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn v2_7_create_divide_selector_sends_namespace_and_binds_its_upstreams() {
    let (server, admin) = client(Profile::V2_7).await;
    Mock::given(method("POST"))
        .and(path("/selector"))
        .and(body_partial_json(
            json!({"namespaceId": NS, "name": "/http", "pluginId": "5"}),
        ))
        .respond_with(ok(json!("sel-1")))
        .expect(1)
        .mount(&server)
        .await;
    plugin_5_is(&server, "divide").await;
    Mock::given(method("POST"))
        .and(path("/proxy-selector/binding"))
        .and(body_json(json!({
            "selectorId": "sel-1", "name": "/http", "pluginName": "divide", "type": "http",
            "namespaceId": NS,
            "discovery": {"discoveryType": "local", "props": "{}"},
            "discoveryUpstreams": [
                {"protocol": "http://", "url": "127.0.0.1:8189", "status": 0, "weight": 50,
                 "props": r#"{"warmup":"10"}"#, "namespaceId": NS},
                {"protocol": "http://", "url": "127.0.0.1:8190", "status": 1, "weight": 50,
                 "props": "{}", "namespaceId": NS},
            ],
        })))
        .respond_with(ok(json!(null)))
        .expect(1)
        .mount(&server)
        .await;
    assert_eq!(
        admin.create_selector(&divide_selector()).await.unwrap(),
        "sel-1"
    );
    server.verify().await;
}

#[tokio::test]
async fn v2_7_does_not_bind_upstreams_of_other_plugins() {
    let (server, admin) = client(Profile::V2_7).await;
    Mock::given(method("POST"))
        .and(path("/selector"))
        .and(body_partial_json(json!({"namespaceId": NS})))
        .respond_with(ok(json!("sel-2")))
        .mount(&server)
        .await;
    plugin_5_is(&server, "websocket").await;
    nothing_bound(&server).await;
    assert_eq!(
        admin.create_selector(&divide_selector()).await.unwrap(),
        "sel-2"
    );
    server.verify().await;
}

#[tokio::test]
async fn v2_7_update_divide_selector_replaces_its_discovery_upstreams() {
    let (server, admin) = client(Profile::V2_7).await;
    Mock::given(method("PUT"))
        .and(path("/selector/sel-1"))
        .and(body_partial_json(json!({"namespaceId": NS})))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    plugin_5_is(&server, "divide").await;
    Mock::given(method("GET"))
        .and(path("/selector/sel-1"))
        .respond_with(ok(
            json!({"id": "sel-1", "discoveryHandler": {"id": "h-1"}}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/discovery-upstream/h-1"))
        .and(body_partial_json(json!([
            {"discoveryHandlerId": "h-1", "namespaceId": NS, "url": "127.0.0.1:8189",
             "status": 0, "weight": 50, "props": r#"{"warmup":"10"}"#},
            {"discoveryHandlerId": "h-1", "url": "127.0.0.1:8190", "status": 1},
        ])))
        .respond_with(ok(json!(0)))
        .expect(1)
        .mount(&server)
        .await;
    nothing_bound(&server).await;
    admin
        .update_selector("sel-1", &divide_selector())
        .await
        .unwrap();
    server.verify().await;
}

#[tokio::test]
async fn v2_6_selector_bodies_have_no_namespace_and_nothing_is_bound() {
    let (server, admin) = client(Profile::V2_6).await;
    Mock::given(method("POST"))
        .and(path("/selector"))
        .and(|req: &Request| !has_namespace(req))
        .and(body_partial_json(
            json!({"name": "/http", "handle": divide_selector().handle}),
        ))
        .respond_with(ok(json!("sel-1")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/selector/sel-1"))
        .and(|req: &Request| !has_namespace(req))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/selector/batch"))
        .and(body_json(json!({"ids": ["sel-1"]})))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/selector"))
        .and(|req: &Request| !req.url.query().unwrap_or_default().contains("namespaceId"))
        .respond_with(ok(page(json!([]))))
        .expect(1)
        .mount(&server)
        .await;
    let id = admin.create_selector(&divide_selector()).await.unwrap();
    admin
        .update_selector(&id, &divide_selector())
        .await
        .unwrap();
    assert!(admin.list_selectors("5").await.unwrap().is_empty());
    assert_eq!(admin.delete_selectors(&[id]).await.unwrap(), 1);
    server.verify().await;
    let unexpected: Vec<_> = server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.url.path().to_owned())
        .filter(|p| p.starts_with("/proxy-selector") || p.starts_with("/plugin-template"))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
}

#[tokio::test]
async fn v2_7_lists_and_batch_deletes_carry_the_namespace() {
    let (server, admin) = client(Profile::V2_7).await;
    let admin = admin.with_namespace("ns 1");
    Mock::given(method("GET"))
        .and(path("/selector"))
        .and(query_param("pluginId", "5"))
        .and(query_param("namespaceId", "ns 1"))
        .respond_with(ok(page(json!([]))))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/selector/batch"))
        .and(body_json(json!({"ids": ["sel-1"], "namespaceId": "ns 1"})))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/rule"))
        .and(query_param("selectorId", "sel-1"))
        .and(query_param("namespaceId", "ns 1"))
        .respond_with(ok(page(json!([]))))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/rule/batch"))
        .and(body_json(json!({"ids": ["rule-1"], "namespaceId": "ns 1"})))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    assert!(admin.list_selectors("5").await.unwrap().is_empty());
    assert_eq!(admin.delete_selectors(&["sel-1".into()]).await.unwrap(), 1);
    assert!(admin.list_rules("sel-1", "").await.unwrap().is_empty());
    assert_eq!(admin.delete_rules(&["rule-1".into()]).await.unwrap(), 1);
    server.verify().await;
}

#[tokio::test]
async fn v2_7_rule_bodies_carry_the_namespace() {
    let (server, admin) = client(Profile::V2_7).await;
    let rule = RuleDto {
        selector_id: Some("sel-1".into()),
        name: Some("/http/get".into()),
        ..Default::default()
    };
    Mock::given(method("POST"))
        .and(path("/rule"))
        .and(body_partial_json(
            json!({"namespaceId": NS, "selectorId": "sel-1"}),
        ))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/rule/rule-1"))
        .and(body_partial_json(json!({"namespaceId": NS})))
        .respond_with(ok(json!(1)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/rule"))
        .and(query_param("namespaceId", NS))
        .respond_with(ok(page(json!([{
            "id": "rule-1", "selectorId": "sel-1", "name": "/http/get", "matchMode": 0,
            "matchModeName": "and", "sort": 1, "enabled": true, "loged": true,
            "matchRestful": false, "handle": null, "ruleConditions": [],
            "namespaceId": NS, "dateCreated": "", "dateUpdated": ""}]))))
        .mount(&server)
        .await;
    assert_eq!(
        admin.create_rule(&rule).await.unwrap().as_deref(),
        Some("rule-1")
    );
    admin.update_rule("rule-1", &rule).await.unwrap();
    server.verify().await;
}

#[tokio::test]
async fn v2_7_plugins_are_looked_up_enabled_and_updated_per_namespace() {
    let (server, admin) = client(Profile::V2_7).await;
    Mock::given(method("GET"))
        .and(path("/namespace-plugin"))
        .and(query_param("name", "divide"))
        .and(query_param("namespaceId", NS))
        .respond_with(ok(page(json!([{
            "id": "rel-5", "pluginId": "5", "pluginRelId": "rel-5", "name": "divide",
            "role": "Proxy", "sort": 200, "enabled": false, "config": null,
            "namespaceId": NS, "dateCreated": "2024-01-01 00:00:00.0",
            "dateUpdated": "2024-01-01 00:00:00.0"}]))))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/namespace-plugin/enabledByNamespace"))
        .and(body_json(
            json!({"ids": ["5"], "enabled": true, "namespaceId": NS}),
        ))
        .respond_with(ok(json!(null)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/namespace-plugin/rel-5"))
        .and(body_json(
            json!({"pluginId": "5", "name": "divide", "sort": 10,
                              "enabled": true, "config": "{}", "namespaceId": NS}),
        ))
        .respond_with(ok(json!("update success")))
        .expect(1)
        .mount(&server)
        .await;
    assert_eq!(
        admin.plugin_id("divide").await.unwrap().as_deref(),
        Some("5")
    );
    let mut plugin = admin.plugin("divide").await.unwrap().expect("divide");
    assert_eq!(
        (plugin.id.as_str(), plugin.sort, plugin.enabled),
        ("5", 200, false)
    );
    admin
        .enable_plugins(&[plugin.id.clone()], true)
        .await
        .unwrap();
    plugin.sort = 10;
    plugin.enabled = true;
    plugin.config = Some("{}".into());
    admin.update_plugin(&plugin).await.unwrap();
    server.verify().await;
}

#[tokio::test]
async fn v2_7_missing_selector_is_none_and_long_poll_names_the_namespace() {
    let (server, admin) = client(Profile::V2_7).await;
    Mock::given(method("GET"))
        .and(path("/selector/nope"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"code": 500, "message": "selector is not existed", "data": null}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/configs/fetch"))
        .and(query_param("groupKeys", "SELECTOR"))
        .and(query_param("namespaceId", NS))
        .respond_with(ok(
            json!({"SELECTOR": {"md5": "abc", "lastModifyTime": 1, "data": []}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    assert_eq!(admin.get_selector("nope").await.unwrap(), None);
    assert_eq!(
        admin
            .long_poll_md5(model::ConfigGroup::Selector)
            .await
            .unwrap(),
        "abc"
    );
    server.verify().await;
}

#[test]
fn divide_handles_become_discovery_upstreams() {
    let ups = DiscoveryUpstream::from_handle(
        r#"[{"upstreamUrl":"h:1","protocol":"https://","weight":7,"status":false,"gray":true,"healthCheckEnabled":false}]"#,
    )
    .unwrap();
    assert_eq!(
        ups,
        [DiscoveryUpstream {
            protocol: "https://".into(),
            url: "h:1".into(),
            status: 1,
            weight: 7,
            props: r#"{"gray":"true","healthCheckEnabled":"false"}"#.into(),
        }]
    );
    assert_eq!(DiscoveryUpstream::from_handle("[]"), Some(vec![]));
    assert_eq!(
        DiscoveryUpstream::from_handle(r#"{"loadBalance":"random"}"#),
        None
    );
    assert_eq!(DiscoveryUpstream::from_handle(r#"[{"host":"h"}]"#), None);
    assert_eq!(query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
}
