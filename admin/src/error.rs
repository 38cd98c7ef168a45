//! [`ApiError`], the one error type of the REST API, and the extractors whose rejection it is
//! ([`AdminJson`], [`AdminForm`], [`AdminQuery`]).

use axum::Json;
use axum::body::Bytes;
use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Multipart, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::{AdminResult, admin_code};
use serde::de::DeserializeOwned;

use crate::service::ServiceError;
use crate::store::StoreError;
use crate::validate::json_message;

/// A failed REST call. Its response is ShenYu's `{code, message, data: null}` envelope with a
/// real HTTP status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// Bad input: HTTP 400, code 500; the message names the field.
    #[error("{0}")]
    BadRequest(String),
    /// Missing, invalid or expired token, or a wrong login: HTTP 401, code 600.
    #[error("{0}")]
    Unauthorized(String),
    /// Unknown id or path: HTTP 404, code 404.
    #[error("{0}")]
    NotFound(String),
    /// A known path with the wrong method: HTTP 405, code 500.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// A request body over the admin's limit: HTTP 413, code 413.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Too many failed logins: HTTP 429, code 429, with a `Retry-After` header (seconds).
    #[error("{message}")]
    TooManyRequests {
        /// What is refused and for how long.
        message: String,
        /// Whole seconds until a new attempt can succeed (at least 1).
        retry_after_secs: u64,
    },
    /// Storage failure: HTTP 500, code 500.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Another internal failure: HTTP 500, code 500.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// A bad-input error for `field`.
    pub(crate) fn field(field: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        ApiError::BadRequest(format!("{field}: {message}"))
    }
}

impl From<ServiceError> for ApiError {
    /// Invalid or unsatisfiable requests are bad input (400), missing records 404.
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(_) | ServiceError::Unsatisfiable(_) => {
                ApiError::BadRequest(e.to_string())
            }
            ServiceError::NotFound(message) => ApiError::NotFound(message),
            ServiceError::Store(e) => ApiError::Store(e),
        }
    }
}

/// The envelope `code` of a 413 or 429: ShenYu defines none, so the HTTP status itself.
fn status_code(status: StatusCode) -> i32 {
    i32::from(status.as_u16())
}

impl From<BytesRejection> for ApiError {
    /// An unreadable body is bad input, unless it is over the size limit (413).
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(format!("request body too large: {}", rejection.body_text()))
        } else {
            ApiError::BadRequest(format!(
                "cannot read the request body: {}",
                rejection.body_text()
            ))
        }
    }
}

/// A multipart failure with `status` (axum's own, 413 for a body over the limit) as an error.
fn multipart_error(status: StatusCode, text: &str) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge(format!("request body too large: {text}"))
    } else {
        ApiError::BadRequest(format!("invalid multipart body: {text}"))
    }
}

impl From<MultipartRejection> for ApiError {
    fn from(rejection: MultipartRejection) -> Self {
        multipart_error(rejection.status(), &rejection.body_text())
    }
}

impl From<axum::extract::multipart::MultipartError> for ApiError {
    fn from(e: axum::extract::multipart::MultipartError) -> Self {
        multipart_error(e.status(), &e.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = match &self {
            ApiError::TooManyRequests {
                retry_after_secs, ..
            } => Some(HeaderValue::from(*retry_after_secs)),
            _ => None,
        };
        let (status, code) = match &self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, admin_code::ERROR),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, admin_code::TOKEN_ERROR),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, admin_code::NOT_FOUND),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, admin_code::ERROR),
            ApiError::PayloadTooLarge(_) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                status_code(StatusCode::PAYLOAD_TOO_LARGE),
            ),
            ApiError::TooManyRequests { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                status_code(StatusCode::TOO_MANY_REQUESTS),
            ),
            ApiError::Store(e) => {
                tracing::error!(error = %e, "storage failure");
                (StatusCode::INTERNAL_SERVER_ERROR, admin_code::ERROR)
            }
            ApiError::Internal(e) => {
                tracing::error!(error = %e, "internal failure");
                (StatusCode::INTERNAL_SERVER_ERROR, admin_code::ERROR)
            }
        };
        let mut response = (
            status,
            Json(AdminResult::<()>::error(code, self.to_string())),
        )
            .into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, seconds);
        }
        response
    }
}

/// A success envelope.
pub(crate) fn ok<T>(message: &str, data: T) -> Json<AdminResult<T>> {
    Json(AdminResult::success(message, data))
}

/// A JSON body. A body that is not JSON, or whose shape is wrong, is an [`ApiError`] naming
/// the path of the offending field (`sort: invalid type: string "x", expected i32`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AdminJson<T>(pub(crate) T);

impl<S, T> FromRequest<S> for AdminJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await?;
        parse_json(&bytes).map(AdminJson)
    }
}

/// Parses a JSON body, naming the failing field.
fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| json_error(&e.path().to_string(), e.inner()))?;
    de.end().map_err(|e| json_error(".", &e))?;
    Ok(value)
}

fn json_error(path: &str, inner: &serde_json::Error) -> ApiError {
    let message = json_message(inner);
    if inner.is_data() && path != "." {
        ApiError::BadRequest(format!("{path}: {message}"))
    } else {
        ApiError::BadRequest(format!("invalid JSON body: {message}"))
    }
}

/// A body given as JSON, as an urlencoded form, or as multipart form fields, the way ShenYu's
/// `@ModelAttribute` endpoints (`POST`/`PUT /plugin`) take it. Form values are text read into
/// `T`'s types; an error names the field. A file part is refused: gantry loads no plugin jars.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AdminForm<T>(pub(crate) T);

impl<S, T> FromRequest<S> for AdminForm<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let content_type = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("multipart/form-data") {
            let mut multipart = Multipart::from_request(req, state).await?;
            let mut fields = Vec::new();
            while let Some(field) = multipart.next_field().await? {
                let name = field.name().unwrap_or_default().to_owned();
                if field.file_name().is_some() {
                    return Err(ApiError::field(
                        name,
                        "file uploads are not supported (gantry loads no plugin jars)",
                    ));
                }
                let text = field.text().await.map_err(|e| {
                    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                        ApiError::from(e)
                    } else {
                        ApiError::field(&name, format!("unreadable part: {e}"))
                    }
                })?;
                fields.push((name, text));
            }
            let encoded = serde_urlencoded::to_string(&fields)
                .map_err(|e| ApiError::BadRequest(format!("invalid multipart body: {e}")))?;
            return parse_form(encoded.as_bytes()).map(AdminForm);
        }
        let bytes = Bytes::from_request(req, state).await?;
        if content_type.starts_with("application/x-www-form-urlencoded") {
            parse_form(&bytes).map(AdminForm)
        } else {
            parse_json(&bytes).map(AdminForm)
        }
    }
}

/// Parses urlencoded form fields, naming the failing field.
fn parse_form<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(bytes));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            ApiError::BadRequest(format!("invalid form body: {}", e.inner()))
        } else {
            ApiError::field(path, e.inner())
        }
    })
}

/// Query-string parameters; a malformed query string is an [`ApiError`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AdminQuery<T>(pub(crate) T);

impl<S, T> FromRequestParts<S> for AdminQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(value) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        Ok(AdminQuery(value))
    }
}

/// Parses an optional query parameter; absent or empty means `None`.
pub(crate) fn query_param<T>(name: &str, value: Option<&str>) -> Result<Option<T>, ApiError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|e| ApiError::field(name, format!("`{v}`: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::SelectorDto;

    fn message(body: &str) -> String {
        parse_json::<SelectorDto>(body.as_bytes())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn json_errors_name_the_field() {
        assert_eq!(
            message(r#"{"sort":"x"}"#),
            r#"sort: invalid type: string "x", expected i32"#
        );
        assert_eq!(
            message(r#"{"selectorConditions":[{},{"operator":5}]}"#),
            "selectorConditions[1].operator: invalid type: integer `5`, expected a string"
        );
        assert!(
            message("{nope").starts_with("invalid JSON body: "),
            "{}",
            message("{nope")
        );
        assert!(message(r#"{} x"#).starts_with("invalid JSON body: "));
    }
}
