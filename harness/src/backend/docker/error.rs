//! How an engine call's failure becomes a [`BackendError`].

use crate::error::BackendError;

/// A `map_err` callback: an engine error (bollard's or testcontainers') while doing `what`.
pub(super) fn docker_err<E: std::fmt::Display>(
    what: impl Into<String>,
) -> impl FnOnce(E) -> BackendError {
    let what = what.into();
    move |e| BackendError::Docker {
        what,
        detail: e.to_string(),
    }
}
