//! The HTTP registration center (protocol §9): a client registers metadata and its address;
//! the admin creates the selector, rules, upstreams and metadata and publishes them.

use std::time::Instant;

use crate::common::{Client, DEADLINE, Served};
use model::SyncMode;
use reqwest::Method;
use serde_json::{Value, json};

async fn register(client: &Client, path: &str, body: Value) -> (u16, String) {
    let response = client
        .request(Method::POST, path)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn metadata(path: &str) -> Value {
    json!({"appName":"http-demo","contextPath":"/http","path":path,"pathDesc":"d",
           "rpcType":"http","serviceName":"org.example.Order","methodName":"find",
           "ruleName":path,"parameterTypes":"java.lang.String","rpcExt":"","enabled":true,
           "host":"127.0.0.1","port":8189,"pluginNames":[],"registerMetaData":true,
           "timeMillis":1718000000000_i64,"addPrefixed":false,
           "namespaceId":"649330b6-c2d7-4edc-be8e-8a54df9eb385"})
}

fn uri(port: u16, event: &str) -> Value {
    json!({"protocol":"http://","appName":"http-demo","contextPath":"/http","rpcType":"http",
           "host":"127.0.0.1","port":port,"eventType":event})
}

async fn list(client: &Client, path: &str) -> Vec<Value> {
    let (status, body) = client.send(Method::GET, path, None).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["dataList"].as_array().unwrap().clone()
}

/// The upstream urls of the published `/http` divide selector, once they equal `expected`.
async fn published_upstreams(client: &Client, expected: &[&str]) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (_, fetched) = client
            .send(Method::GET, "/configs/fetch?groupKeys=SELECTOR", None)
            .await;
        let urls: Vec<String> = fetched["data"]["SELECTOR"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["pluginName"] == "divide")
            .flat_map(|s| {
                let handle = s["handle"].as_str().unwrap_or("[]");
                let list: Vec<Value> = serde_json::from_str(handle).unwrap();
                list.into_iter()
                    .map(|u| u["upstreamUrl"].as_str().unwrap().to_owned())
            })
            .collect();
        if urls == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "published upstreams {urls:?} != {expected:?}"
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_client_registers_its_apis_and_address() {
    let served = Served::start(admin::Config {
        sync: vec![SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;

    let anonymous = reqwest::Client::new()
        .post(served.url("/shenyu-client/register-metadata"))
        .json(&metadata("/http/order/findById"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    for path in ["/http/order/findById", "/http/order/{id}", "/http/pay/"] {
        let (status, text) =
            register(&client, "/shenyu-client/register-metadata", metadata(path)).await;
        assert_eq!((status, text.as_str()), (200, "success"));
    }
    let selectors = list(&client, "/selector?pluginId=5").await;
    assert_eq!(selectors.len(), 1, "one selector per context path");
    let selector = &selectors[0];
    assert_eq!(selector["name"], "/http");
    assert_eq!(
        (
            &selector["type"],
            &selector["loged"],
            &selector["continued"]
        ),
        (&json!(1), &json!(true), &json!(true))
    );
    let condition = &selector["selectorConditions"][0];
    assert_eq!(
        (&condition["operator"], &condition["paramValue"]),
        (&json!("startsWith"), &json!("/http/"))
    );
    let id = selector["id"].as_str().unwrap();
    let rules = list(&client, &format!("/rule?selectorId={id}")).await;
    let conditions: Vec<(String, String, String)> = rules
        .iter()
        .map(|r| {
            let c = &r["ruleConditions"][0];
            (
                r["name"].as_str().unwrap().to_owned(),
                c["operator"].as_str().unwrap().to_owned(),
                c["paramValue"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            (
                "/http/order/findById".to_owned(),
                "=".to_owned(),
                "/http/order/findById".to_owned()
            ),
            (
                "/http/order/{id}".to_owned(),
                "pathPattern".to_owned(),
                "/http/order/**".to_owned()
            ),
            (
                "/http/pay/".to_owned(),
                "startsWith".to_owned(),
                "/http/pay/".to_owned()
            ),
        ]
    );
    let context = list(&client, "/selector?pluginId=14").await;
    assert_eq!(context.len(), 1);
    let context_id = context[0]["id"].as_str().unwrap();
    let context_rules = list(&client, &format!("/rule?selectorId={context_id}")).await;
    assert_eq!(
        context_rules[0]["handle"],
        r#"{"addPrefixed":false,"contextPath":"/http"}"#
    );
    let (_, meta) = client.send(Method::GET, "/meta-data/findAll", None).await;
    assert_eq!(meta["data"].as_array().unwrap().len(), 3);

    for port in [8189, 8190] {
        let (status, text) = register(
            &client,
            "/shenyu-client/register-uri",
            uri(port, "REGISTER"),
        )
        .await;
        assert_eq!((status, text.as_str()), (200, "success"));
    }
    published_upstreams(&client, &["127.0.0.1:8189", "127.0.0.1:8190"]).await;
    let detail = client
        .send(Method::GET, &format!("/selector/{id}"), None)
        .await
        .1;
    let handle: Vec<Value> =
        serde_json::from_str(detail["data"]["handle"].as_str().unwrap()).unwrap();
    assert_eq!(
        (
            &handle[0]["weight"],
            &handle[0]["warmup"],
            &handle[0]["status"]
        ),
        (&json!(50), &json!(600000), &json!(true))
    );

    let (status, text) = register(&client, "/shenyu-client/offline", uri(8189, "DELETED")).await;
    assert_eq!((status, text.as_str()), (200, "success"));
    published_upstreams(&client, &["127.0.0.1:8190"]).await;
    register(&client, "/shenyu-client/register-uri", uri(8190, "OFFLINE")).await;
    published_upstreams(&client, &[]).await;

    let (status, text) = register(
        &client,
        "/shenyu-client/register-metadata",
        json!({"contextPath":"http","path":"/x"}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("contextPath: "), "{text}");
    served.stop().await;
}

#[tokio::test]
async fn a_refused_registration_leaves_nothing_behind() {
    let served = Served::start(admin::Config {
        sync: vec![SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;
    let mut body = metadata("/http/order/findById");
    body.as_object_mut().unwrap().remove("serviceName");
    let (status, text) = register(&client, "/shenyu-client/register-metadata", body).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("serviceName: "), "{text}");
    // Neither the divide nor the contextPath selector (nor so their rules), nor the
    // metadata, was written: the store is read directly.
    let selectors = list(&client, "/selector?currentPage=1&pageSize=100").await;
    assert_eq!(
        selectors,
        Vec::<Value>::new(),
        "selectors after a refused registration"
    );
    let meta = list(&client, "/meta-data/queryList?currentPage=1&pageSize=100").await;
    assert_eq!(
        meta,
        Vec::<Value>::new(),
        "metadata after a refused registration"
    );
    served.stop().await;
}

/// What a refused `register-uri` must leave as it was: the selectors, the published
/// SELECTOR group and the digest.
async fn state(client: &Client) -> (Vec<Value>, Value, Value) {
    let selectors = list(client, "/selector?currentPage=1&pageSize=100").await;
    let (_, fetched) = client
        .send(Method::GET, "/configs/fetch?groupKeys=SELECTOR", None)
        .await;
    let (_, digest) = client.send(Method::GET, "/actuator/digest", None).await;
    (
        selectors,
        fetched["data"]["SELECTOR"]["data"].clone(),
        digest,
    )
}

/// A `register-uri` on a new context path that is refused (a bad host, port or protocol)
/// creates no selector: nothing is stored, published or digested (it used to leave an empty
/// selector behind, published, before refusing the address).
#[tokio::test]
async fn a_refused_uri_registration_leaves_nothing_behind() {
    let served = Served::start(admin::Config {
        sync: vec![SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;
    let before = state(&client).await;
    for (field, value) in [
        ("host", json!("bad host")),
        ("host", json!("evil.example/#")),
        ("port", json!(0)),
        ("protocol", json!("http://127.0.0.1:9/#")),
    ] {
        let mut body = uri(8189, "REGISTER");
        body["contextPath"] = json!("/fresh");
        body[field] = value.clone();
        let (status, text) = register(&client, "/shenyu-client/register-uri", body).await;
        assert_eq!(status, 400, "{field} {value}: {text}");
        assert!(text.contains(&format!("{field}: ")), "{text}");
        assert_eq!(state(&client).await, before, "after {field} {value}");
    }
    served.stop().await;
}

/// `protocol` is one ShenYu clients send (`http://`, `https://`, or none: `http://`) and
/// `host` a host name or IP address: a protocol carrying an authority of its own, or a host
/// with a path, fragment, user info, space or control character, would send the traffic
/// somewhere the upstream url does not say.
#[tokio::test]
async fn uri_registrations_take_only_plain_protocols_and_hosts() {
    let served = Served::start(admin::Config {
        sync: vec![SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;
    let refused = [
        ("protocol", json!("http://127.0.0.1:9/#")),
        ("protocol", json!("ftp://")),
        ("protocol", json!("http")),
        ("protocol", json!("ws://")),
        ("host", json!("127.0.0.1:9/#")),
        ("host", json!("user@evil.example")),
        ("host", json!("a?b")),
        ("host", json!("a\\b")),
        ("host", json!("a\nb")),
        ("host", json!("a\u{1b}[31mb")),
        ("host", json!("[::1")),
    ];
    for (field, value) in refused {
        let mut body = uri(8189, "REGISTER");
        body[field] = value.clone();
        let (status, text) = register(&client, "/shenyu-client/register-uri", body).await;
        assert_eq!(status, 400, "{field} {value}: {text}");
        assert!(text.contains(&format!("{field}: ")), "{text}");
    }
    let accepted = [
        (8189, "protocol", json!("https://")),
        (8190, "protocol", Value::Null),
        (8191, "host", json!("svc-1.internal.example")),
        (8192, "host", json!("[::1]")),
    ];
    for (port, field, value) in accepted {
        let mut body = uri(port, "REGISTER");
        body[field] = value.clone();
        let (status, text) = register(&client, "/shenyu-client/register-uri", body).await;
        assert_eq!((status, text.as_str()), (200, "success"), "{field} {value}");
    }
    published_upstreams(
        &client,
        &[
            "127.0.0.1:8189",
            "127.0.0.1:8190",
            "svc-1.internal.example:8191",
            "[::1]:8192",
        ],
    )
    .await;
    served.stop().await;
}
