//! HTTP registration center (protocol §9): `/shenyu-client/register-metadata`,
//! `/shenyu-client/register-uri` and `/shenyu-client/offline`. Each needs a token and answers
//! the bare text `success`; the registration itself is the service's
//! (`crate::service::register`).

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::extract::AdminJson;
use crate::error::ApiError;
use crate::service::Admin;
use model::{MetaDataRegister, UriRegister};

/// The bare `success` ShenYu's registration endpoints answer.
fn success() -> Response {
    "success".into_response()
}

/// `POST /shenyu-client/register-metadata`.
pub(crate) async fn register_metadata(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<MetaDataRegister>,
) -> Result<Response, ApiError> {
    admin.register_metadata(dto).await?;
    Ok(success())
}

/// `POST /shenyu-client/register-uri`.
pub(crate) async fn register_uri(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<UriRegister>,
) -> Result<Response, ApiError> {
    let event = dto
        .event_type
        .as_deref()
        .map(str::trim)
        .unwrap_or("REGISTER");
    match event {
        "" | "REGISTER" => admin.register_uri(dto, true).await?,
        "OFFLINE" => admin.register_uri(dto, false).await?,
        // ShenYu 2.6's URI executor acts on nothing else; DELETED goes through `offline`.
        other => tracing::debug!(event = other, "registration event ignored"),
    }
    Ok(success())
}

/// `POST /shenyu-client/offline`.
pub(crate) async fn offline(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<UriRegister>,
) -> Result<Response, ApiError> {
    admin.register_uri(dto, false).await?;
    Ok(success())
}
