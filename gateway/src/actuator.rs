//! Inspection endpoints, answered before the plugin chain. The ShenYu-shaped ones answer a
//! one-element JSON array (protocol §10); `health` and `digest` are gantry's.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use model::DigestReport;
use serde_json::{Value, json};

use crate::App;

/// `GET /actuator/health`.
pub(crate) async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({ "status": "UP", "sync": app.sync.health() }))
}

/// `GET /actuator/digest`: over the applied config.
pub(crate) async fn digest(State(app): State<Arc<App>>) -> Json<DigestReport> {
    Json(app.sync.snapshot().digest.clone())
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
    Json(json!([app.sync.snapshot().data.selectors]))
}

/// `GET /actuator/ruleData`: `{selectorId: [RuleData sorted by sort]}`.
pub(crate) async fn rule_data(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!([app.sync.snapshot().data.rules]))
}

/// `GET /actuator/metadata`: `{id: MetaData}`.
pub(crate) async fn metadata(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!([app.sync.snapshot().data.meta_data]))
}
