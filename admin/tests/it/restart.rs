//! A file database survives a restart: same selector, same digest.

use crate::common::{Client, Served, selector_body};
use reqwest::Method;
use serde_json::Value;

async fn digest(served: &Served) -> Value {
    reqwest::get(served.url("/actuator/digest"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn data_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nested-admin.db");
    let config = admin::Config::new(db.to_str().unwrap());

    let served = Served::start(config.clone()).await;
    let client = Client::login(&served).await;
    let (status, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/persisted")))
        .await;
    assert_eq!(status, 200, "{created}");
    let id = created["data"].as_str().unwrap().to_owned();
    let before = digest(&served).await;
    assert_eq!(before["selectors"], 1);
    served.stop().await;
    assert!(db.exists(), "the database file was created");

    let served = Served::start(config).await;
    let client = Client::login(&served).await;
    let (status, detail) = client
        .send(Method::GET, &format!("/selector/{id}"), None)
        .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["data"]["name"], "/persisted");
    let plugins = client.send(Method::GET, "/plugin/all", None).await.1;
    assert_eq!(
        plugins["data"].as_array().unwrap().len(),
        model::BUILTIN_PLUGINS.len(),
        "seeding is idempotent"
    );
    assert_eq!(digest(&served).await, before);
    served.stop().await;
}
