//! `GET /v3/api-docs`: an OpenAPI 3.1 description of the admin's HTTP API, built from one
//! table of operations, [`operations::OPERATIONS`]. Each entry names its request (a JSON or
//! form body type, or typed query parameters), its success response type and its guards (who
//! may call it, whether it can miss an id); every schema they need becomes a component and
//! every error answer follows from the guards. Tests (in `tests.rs` and `tests/it/openapi.rs`)
//! check that every operation listed is routed, that every schema reference resolves, and
//! that the schemas' field names are the ones serde reads and writes.
//!
//! Adding an operation is one entry in [`operations::OPERATIONS`], whose types are the
//! handler's own (`AdminJson<T>` in, `Json<T>` out), e.g.
//!
//! ```text
//! op("PUT", "/plugin/{id}", "plugin", "Update role, sort, enabled, config", Token,
//!    json_or_form::<PluginDto>(), answers::<AdminResult<i32>>()).by_id(),
//! ```
//!
//! A type the document has not seen before also needs `utoipa::ToSchema` (derived; in
//! `model` under `#[cfg_attr(feature = "openapi", ...)]`) and its name in the `component!`
//! list in `schema.rs`; the compiler says so when it is missing.
//!
//! Files: `operations.rs` (the table and what an entry declares), `schema.rs` (how types become
//! schemas and components), `document.rs` (the document built from the table).

mod document;
mod operations;
mod schema;

pub(crate) use self::document::api_docs;

#[cfg(test)]
mod tests;
