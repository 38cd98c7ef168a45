//! [`ApiError`], the one error type of the REST API (with ShenYu's error envelope as its
//! response), and [`ok`], the success envelope. The extractors whose rejection it is are in
//! `crate::api::extract`.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::{AdminResult, admin_code};

use crate::service::ServiceError;
use crate::store::StoreError;

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
    /// Storage failure: HTTP 500, code 500; a database whose disk is full: HTTP 507, code
    /// 507, the message starting `database disk is full`; a database that cannot be reached
    /// (connection broken, none within the pool's timeout): HTTP 503, code 503, the message
    /// starting `database unavailable`.
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
            ApiError::Store(e) if e.is_disk_full() => {
                tracing::error!(error = %e, "database disk is full: a write was refused");
                (
                    StatusCode::INSUFFICIENT_STORAGE,
                    status_code(StatusCode::INSUFFICIENT_STORAGE),
                )
            }
            ApiError::Store(e) if e.is_unavailable() => {
                tracing::error!(error = %e, "database unavailable: a request was refused");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    status_code(StatusCode::SERVICE_UNAVAILABLE),
                )
            }
            ApiError::Store(e) => {
                tracing::error!(error = %e, "storage failure");
                (StatusCode::INTERNAL_SERVER_ERROR, admin_code::ERROR)
            }
            ApiError::Internal(e) => {
                tracing::error!(error = %e, "internal failure");
                (StatusCode::INTERNAL_SERVER_ERROR, admin_code::ERROR)
            }
        };
        let message = match &self {
            ApiError::Store(e) if e.is_disk_full() => {
                format!("database disk is full: nothing was changed ({e})")
            }
            ApiError::Store(e) if e.is_unavailable() => {
                format!("database unavailable, try again ({e})")
            }
            _ => self.to_string(),
        };
        let mut response = (status, Json(AdminResult::<()>::error(code, message))).into_response();
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
