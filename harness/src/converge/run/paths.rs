//! The paths a case's routes and registered applications live on.

/// Route `key` of case `case`.
pub(crate) fn route_path(case: u64, key: u8) -> String {
    format!("/conv/{case}/{key}")
}

/// The context path registered application `key` of case `case` registers.
pub(super) fn context_path(case: u64, key: u8) -> String {
    format!("/reg/{case}/{key}")
}

/// The one API path registered application `key` of case `case` registers (and is probed
/// on; the registered rule's condition is `uri = ` it).
pub(crate) fn registered_path(case: u64, key: u8) -> String {
    format!("{}/get", context_path(case, key))
}
