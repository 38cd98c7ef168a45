//! The extractors every handler takes its input through: [`AdminJson`], [`AdminForm`] and
//! [`AdminQuery`], whose rejection is an [`ApiError`] naming the bad field (axum's `AppJson`
//! pattern), plus [`query_param`] for optional query parameters given as text.

use axum::body::Bytes;
use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Multipart, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::validate::json_message;

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
