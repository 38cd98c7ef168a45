//! [`ServiceError`], why a write of the service layer was refused or failed. The HTTP layer
//! turns it into an answer (`impl From<ServiceError> for ApiError` in `crate::error`).

use crate::store::{Batch, StoreError};
use crate::validate::FieldError;

/// A refused or failed write.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServiceError {
    /// A request field is not valid; the message names it.
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The request is valid but cannot be carried out against what is stored (a built-in
    /// plugin it needs is gone).
    #[error("{0}")]
    Unsatisfiable(String),
    /// A record the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Storage failure.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ServiceError {
    /// The error that `field` is not valid, saying why.
    pub(crate) fn field(field: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        ServiceError::Invalid(FieldError::new(field, message))
    }

    /// The error that the `what` with id `id` does not exist.
    pub(crate) fn not_found(what: &str, id: impl std::fmt::Display) -> Self {
        ServiceError::NotFound(format!("{what} `{id}` does not exist"))
    }
}

/// Turns an all-or-nothing batch outcome into the updated records or a not-found error naming
/// the id.
pub(crate) fn all_found<T>(what: &str, batch: Batch<T>) -> Result<Vec<T>, ServiceError> {
    batch.map_err(|id| ServiceError::not_found(what, id))
}
