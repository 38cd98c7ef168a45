//! The admin's response envelope (`AdminResult`): decoding it into data or a typed
//! [`ClientError`].

use model::AdminResult;
use serde::de::DeserializeOwned;

use crate::error::ClientError;

/// Decodes an envelope whose HTTP status must be 200 and code 200.
pub(super) fn envelope<T: DeserializeOwned>(
    what: &str,
    status: u16,
    body: String,
) -> Result<Option<T>, ClientError> {
    if status != 200 {
        return Err(ClientError::Status {
            what: what.to_owned(),
            status,
            body,
        });
    }
    match serde_json::from_str::<AdminResult<T>>(&body) {
        Ok(r) if r.code == model::admin_code::SUCCESS => Ok(r.data),
        Ok(r) => Err(ClientError::Body {
            what: what.to_owned(),
            detail: format!("code {}", r.code),
            body,
        }),
        Err(e) => Err(ClientError::Body {
            what: what.to_owned(),
            detail: e.to_string(),
            body,
        }),
    }
}

pub(super) fn required<T>(what: &str, data: Option<T>) -> Result<T, ClientError> {
    data.ok_or_else(|| ClientError::Body {
        what: what.to_owned(),
        detail: "no data".into(),
        body: "null".into(),
    })
}

/// Whether `body` is ShenYu's answer for a missing path id: HTTP 200 with an error code and an
/// `@Existed` message such as `selector is not existed` (ShenYu has no 404 for those).
pub(super) fn is_not_existed(body: &str) -> bool {
    serde_json::from_str::<AdminResult<serde_json::Value>>(body)
        .is_ok_and(|r| r.code != model::admin_code::SUCCESS && r.message.contains("is not existed"))
}
