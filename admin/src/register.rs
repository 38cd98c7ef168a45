//! HTTP registration center (protocol §9): `/shenyu-client/register-metadata`,
//! `/shenyu-client/register-uri` and `/shenyu-client/offline`. Each needs a token and answers
//! the bare text `success`. Registration creates or updates the divide selector named by the
//! context path (condition `uri startsWith {contextPath}/`), a rule per API path, the
//! contextPath plugin's selector and rule, the selector's upstreams and (on request) metadata,
//! and publishes every change.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::error::{AdminJson, ApiError};
use crate::service::Admin;
pub(crate) use model::{MetaDataRegister, UriRegister};

/// The operator and value of a registered rule's `uri` condition for API `path` (§9): path
/// variables become `**`; then a trailing `/` gives `startsWith`, a trailing `/**`
/// `pathPattern`, any other `*` after the first character `match`, and anything else `=`.
pub(crate) fn rule_condition(path: &str) -> (&'static str, String) {
    let mut value = String::with_capacity(path.len());
    let mut in_variable = false;
    for c in path.chars() {
        match (c, in_variable) {
            ('{', false) => in_variable = true,
            ('}', true) => {
                in_variable = false;
                value.push_str("**");
            }
            (_, true) => {}
            (c, false) => value.push(c),
        }
    }
    let operator = if value.ends_with('/') {
        "startsWith"
    } else if value.ends_with("/**") {
        "pathPattern"
    } else if value.get(1..).is_some_and(|rest| rest.contains('*')) {
        "match"
    } else {
        "="
    };
    (operator, value)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_follows_the_path() {
        assert_eq!(
            rule_condition("/http/order/findById"),
            ("=", "/http/order/findById".to_owned())
        );
        assert_eq!(
            rule_condition("/http/order/"),
            ("startsWith", "/http/order/".to_owned())
        );
        assert_eq!(
            rule_condition("/http/order/**"),
            ("pathPattern", "/http/order/**".to_owned())
        );
        assert_eq!(
            rule_condition("/http/order/{id}"),
            ("pathPattern", "/http/order/**".to_owned())
        );
        assert_eq!(
            rule_condition("/http/{id}/name"),
            ("match", "/http/**/name".to_owned())
        );
        assert_eq!(
            rule_condition("/http/a*b"),
            ("match", "/http/a*b".to_owned())
        );
    }
}
