//! Inspection endpoints, answered before the plugin chain. The ShenYu-shaped ones answer a
//! one-element JSON array (protocol §10); `health`, `digest` and `/metrics` are gantry's.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use http::header;
use model::AppliedDigest;
use serde_json::{Value, json};

use crate::App;

/// `GET /actuator/health`.
pub(crate) async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({ "status": "UP", "sync": app.sync.health() }))
}

/// `GET /actuator/digest`: over the applied config, with its version and when it went live.
pub(crate) async fn digest(State(app): State<Arc<App>>) -> Json<AppliedDigest> {
    Json(app.sync.snapshot().applied_digest())
}

/// `GET /actuator/plugins`: `{"<class>@gantry": order}` for the chain's plugins.
pub(crate) async fn plugins(State(app): State<Arc<App>>) -> Json<Value> {
    let map: BTreeMap<String, i32> = app
        .chain
        .plugins()
        .map(|p| (format!("{}@gantry", p.class_name()), p.order()))
        .collect();
    Json(json!([map]))
}

/// `GET /actuator/pluginData`: `{name: PluginData}`.
pub(crate) async fn plugin_data(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!([app.sync.snapshot().data.plugins]))
}

/// `GET /actuator/selectorData`: `{pluginName: [SelectorData sorted by sort]}`.
pub(crate) async fn selector_data(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!([app.sync.snapshot().data.selectors.by_owner()]))
}

/// `GET /actuator/ruleData`: `{selectorId: [RuleData sorted by sort]}`.
pub(crate) async fn rule_data(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!([app.sync.snapshot().data.rules.by_owner()]))
}

/// `GET /actuator/metadata`: `{id: MetaData}`.
pub(crate) async fn metadata(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!([app.sync.snapshot().data.meta_data]))
}

/// `GET /metrics`: Prometheus text exposition.
pub(crate) async fn metrics(State(app): State<Arc<App>>) -> impl IntoResponse {
    let text = app
        .metrics
        .render(&app.sync.health(), &app.sync.snapshot().digest.digest);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}
