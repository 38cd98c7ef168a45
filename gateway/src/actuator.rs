//! Inspection endpoints, answered before the plugin chain. The ShenYu-shaped ones answer a
//! one-element JSON array (protocol §10); `health`, `digest` and `/metrics` are gantry's.
//!
//! The config dumps (`pluginData`, `selectorData`, `ruleData`, `metadata`; 4.5 MB of JSON at
//! 10k selectors) share the data plane's port, so they are rendered once per snapshot
//! (`snapshot::Dumps`: concurrent callers wait for the same rendering and share its bytes), one
//! rendering at a time in the process, on a blocking thread so routing does not wait for it.
//!
//! The handlers are generic over the gateway's network `C` only because the router's state is
//! `App<C>` (the proxy's); none of them opens a connection.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{StatusCode, header};
use model::AppliedDigest;
use netserve::Connect;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::snapshot::{Dump, Snapshot};
use crate::state::App;

/// One rendering of a dump at a time, across dumps and snapshots.
static RENDERING: Semaphore = Semaphore::const_new(1);

/// Answers dump `which` of the current snapshot: rendered by the first caller, shared with
/// the others (503 when rendering fails).
async fn dump<C>(app: &App<C>, which: Dump) -> Response {
    let snapshot: Arc<Snapshot> = Arc::clone(&app.sync.snapshot());
    let cell = snapshot.dumps.cell(which);
    let rendered = cell
        .get_or_try_init(|| async {
            let _one = RENDERING.acquire().await.map_err(|e| e.to_string())?;
            app.metrics.dump_rendered(which);
            let source = snapshot.clone();
            tokio::task::spawn_blocking(move || which.render(&source))
                .await
                .map_err(|e| e.to_string())?
                .map(Bytes::from)
                .map_err(|e| e.to_string())
        })
        .await;
    match rendered {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes.clone()).into_response(),
        Err(e) => {
            tracing::warn!(dump = which.name(), error = %e, "cannot render an inspection dump");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    }
}

/// `GET /actuator/health`.
pub(crate) async fn health<C: Connect>(State(app): State<Arc<App<C>>>) -> Json<Value> {
    Json(json!({ "status": "UP", "sync": app.sync.health() }))
}

/// `GET /actuator/digest`: over the applied config, with its version and when it went live.
pub(crate) async fn digest<C: Connect>(State(app): State<Arc<App<C>>>) -> Json<AppliedDigest> {
    Json(app.sync.snapshot().applied_digest())
}

/// The body of `PUT /actuator/seed` and the answer of both seed endpoints.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SeedSetting {
    /// The seed of the balancers' random picks; `null`: the random source.
    pub(crate) seed: Option<u64>,
}

/// `GET /actuator/seed` (gantry-only): the seed of the balancers' random picks, if one is set.
pub(crate) async fn seed() -> Json<SeedSetting> {
    Json(SeedSetting {
        seed: crate::balance::seed::current(),
    })
}

/// `PUT /actuator/seed` (gantry-only): `{"seed": 42}` makes the balancers' random picks
/// replayable (each from a hash of the seed, the selector and the pick number, counted from
/// here); `{"seed": null}` goes back to the random source.
pub(crate) async fn set_seed(Json(setting): Json<SeedSetting>) -> Json<SeedSetting> {
    crate::balance::seed::set(setting.seed);
    tracing::info!(seed = ?setting.seed, "balancer seed set");
    Json(setting)
}

/// `GET /actuator/plugins`: `{"<class>@gantry": order}` for the chain's plugins.
pub(crate) async fn plugins<C: Connect>(State(app): State<Arc<App<C>>>) -> Json<Value> {
    let map: BTreeMap<String, i32> = app
        .plugins
        .plugins()
        .map(|p| (format!("{}@gantry", p.class_name()), p.order()))
        .collect();
    Json(json!([map]))
}

/// `GET /actuator/pluginData`: `{name: PluginData}`.
pub(crate) async fn plugin_data<C: Connect>(State(app): State<Arc<App<C>>>) -> Response {
    dump(&app, Dump::Plugins).await
}

/// `GET /actuator/selectorData`: `{pluginName: [SelectorData sorted by sort]}`.
pub(crate) async fn selector_data<C: Connect>(State(app): State<Arc<App<C>>>) -> Response {
    dump(&app, Dump::Selectors).await
}

/// `GET /actuator/ruleData`: `{selectorId: [RuleData sorted by sort]}`.
pub(crate) async fn rule_data<C: Connect>(State(app): State<Arc<App<C>>>) -> Response {
    dump(&app, Dump::Rules).await
}

/// `GET /actuator/metadata`: `{id: MetaData}`.
pub(crate) async fn metadata<C: Connect>(State(app): State<Arc<App<C>>>) -> Response {
    dump(&app, Dump::MetaData).await
}

/// `GET /metrics`: Prometheus text exposition.
pub(crate) async fn metrics<C: Connect>(State(app): State<Arc<App<C>>>) -> impl IntoResponse {
    let snapshot = app.sync.snapshot();
    let text = app.metrics.render(
        &app.sync.health(),
        &snapshot.digest.digest,
        &snapshot.rejected,
        &app.plugins,
    );
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}
