//! `/gantry/*`: gantry's own extensions beside ShenYu's API. `GET /gantry/sync-status`: every
//! gateway this admin syncs and where it stands against the admin's digest
//! ([`crate::sync::status`]). Open like `/actuator/digest`: it shows digests and addresses,
//! no config.

use axum::Json;
use axum::extract::State;
use model::SyncStatusReport;

use crate::AppState;
use crate::error::ApiError;

/// `GET /gantry/sync-status`.
pub(crate) async fn sync_status(
    State(state): State<AppState>,
) -> Result<Json<SyncStatusReport>, ApiError> {
    let digest = state.admin.digest().await?;
    Ok(Json(state.sync_status.report(digest.digest.clone())))
}
