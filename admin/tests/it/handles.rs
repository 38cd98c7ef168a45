//! Selector and rule handles through the REST API: a divide upstream's `protocol` and host,
//! and the JSON of every other plugin's handles.

use crate::common::{Client, Served, rule_body, selector_body};
use model::SyncMode;
use reqwest::Method;
use serde_json::{Value, json};

async fn served() -> (Served, Client) {
    let served = Served::start(admin::Config {
        sync: vec![SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;
    (served, client)
}

/// A divide selector body whose one upstream has `protocol` and `upstreamUrl`.
fn divide_selector(name: &str, protocol: &Value, upstream_url: &str) -> Value {
    let mut body = selector_body(name);
    let upstream = json!([{"upstreamUrl": upstream_url, "protocol": protocol, "weight": 50}]);
    body["handle"] = json!(upstream.to_string());
    body
}

/// A divide upstream's `protocol` is `http://`, `https://` or empty (`http://`), as ShenYu
/// writes them, and its host a host name or IP address: `http://127.0.0.1:9/#` with an
/// innocent `upstreamUrl` would send the traffic to another server.
#[tokio::test]
async fn divide_upstreams_take_only_plain_protocols_and_hosts() {
    let (served, client) = served().await;
    let refused = [
        (
            json!("http://127.0.0.1:9/#"),
            "10.0.0.5:8189",
            "handle[0].protocol: ",
        ),
        (json!("http:"), "10.0.0.5:8189", "handle[0].protocol: "),
        (
            json!("http://"),
            "evil@10.0.0.5:8189",
            "handle[0].upstreamUrl: ",
        ),
        (
            json!("http://"),
            "10.0.0.5#:8189",
            "handle[0].upstreamUrl: ",
        ),
        (json!("http://"), "a\u{7f}b:8189", "handle[0].upstreamUrl: "),
        (json!("http://"), "a?b:8189", "handle[0].upstreamUrl: "),
    ];
    for (protocol, url, message) in refused {
        let body = divide_selector("/bad", &protocol, url);
        let (status, answer) = client.send(Method::POST, "/selector", Some(body)).await;
        assert_eq!(status, 400, "{protocol} {url}: {answer}");
        let text = answer["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{protocol} {url}: {answer}");
    }
    let accepted = [
        (json!("http://"), "10.0.0.5:8189"),
        (json!("https://"), "upstream-1.example:443"),
        (json!(""), "up_stream:80"),
        (Value::Null, "[::1]:8080"),
    ];
    for (i, (protocol, url)) in accepted.into_iter().enumerate() {
        let body = divide_selector(&format!("/ok{i}"), &protocol, url);
        let (status, answer) = client.send(Method::POST, "/selector", Some(body)).await;
        assert_eq!(status, 200, "{protocol} {url}: {answer}");
    }
    served.stop().await;
}

/// Every plugin's handles are JSON: a selector or rule handle of a plugin whose fields are
/// not checked in depth (here waf, plugin 2) is refused when it is not JSON at all.
#[tokio::test]
async fn handles_of_every_plugin_must_be_json() {
    let (served, client) = served().await;
    let mut selector = selector_body("/waf");
    selector["pluginId"] = json!("2");
    selector["handle"] = json!("{not json");
    let (status, answer) = client
        .send(Method::POST, "/selector", Some(selector.clone()))
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().starts_with("handle: "),
        "{answer}"
    );
    selector["handle"] = json!(r#"{"permission":"reject","statusCode":"403"}"#);
    let (status, answer) = client.send(Method::POST, "/selector", Some(selector)).await;
    assert_eq!(status, 200, "{answer}");
    let selector_id = answer["data"].as_str().unwrap().to_owned();

    let mut rule = rule_body(&selector_id, "/waf/rule");
    for nonsense in ["reject", "{\"permission\":", "[1,]", "{} {}"] {
        rule["handle"] = json!(nonsense);
        let (status, answer) = client.send(Method::POST, "/rule", Some(rule.clone())).await;
        assert_eq!(status, 400, "{nonsense}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().starts_with("handle: "),
            "{nonsense}: {answer}"
        );
    }
    rule["handle"] = json!(r#"{"permission":"reject","statusCode":"403"}"#);
    let (status, answer) = client.send(Method::POST, "/rule", Some(rule)).await;
    assert_eq!(status, 200, "{answer}");
    served.stop().await;
}
