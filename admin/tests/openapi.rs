//! `GET /v3/api-docs`: an OpenAPI document whose every operation is routed.

mod common;

use common::Served;
use model::SyncMode;
use serde_json::Value;

#[tokio::test]
async fn every_documented_operation_exists() {
    let served = Served::start(admin::Config {
        sync: vec![SyncMode::Websocket, SyncMode::Http],
        ..admin::Config::new(":memory:")
    })
    .await;
    let doc: Value = reqwest::get(served.url("/v3/api-docs"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(doc["info"]["title"], "gantry-admin");
    assert_eq!(
        doc["components"]["securitySchemes"]["token"]["name"],
        "X-Access-Token"
    );
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 30, "{}", paths.len());
    let client = reqwest::Client::new();
    let mut checked = 0;
    for (path, item) in paths {
        for (method, operation) in item.as_object().unwrap() {
            let url = served.url(&path.replace("{id}", "1"));
            let response = client
                .request(method.to_uppercase().parse().unwrap(), url)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            assert!(
                status != 405 && body["message"] != "no such endpoint",
                "{method} {path} is documented but not routed ({status} {body})"
            );
            if operation["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("token").is_some()))
            {
                assert_eq!(status, 401, "{method} {path} needs a token");
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
    served.stop().await;
}
