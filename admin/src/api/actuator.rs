//! `/actuator/*`: health and the config digest.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use model::DigestReport;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::service::Admin;

/// `GET /actuator/health`.
pub(crate) async fn health() -> Json<Value> {
    Json(json!({ "status": "UP" }))
}

/// `GET /actuator/digest`: over what is committed, computed once per committed version
/// ([`Admin::digest`]).
pub(crate) async fn digest(
    State(admin): State<Arc<Admin>>,
) -> Result<Json<DigestReport>, ApiError> {
    let report = admin.digest().await?;
    Ok(Json(DigestReport::clone(&report)))
}
