//! [`AdminClient`]: login, plugin lookup, and selector and rule CRUD on the admin.
//!
//! The client speaks one `Profile` of ShenYu's admin REST API: 2.6 (gantry's own admin, the
//! default) or 2.7 (namespaces, namespace plugins, discovery-bound divide upstreams). What
//! differs, and the ShenYu sources it follows, is in `docs/profiles.md`.
//!
//! One file per concern: the login and the session's request plumbing (`session`), the
//! admin's response envelope (`envelope`), plugins (`plugins`), selectors
//! (`selectors`) and the 2.7 discovery upstreams bound to divide selectors (`discovery`),
//! rules (`rules`), and registration, the sync channel's test hook and the digest
//! (`sync`).

mod discovery;
mod envelope;
mod plugins;
mod rules;
mod selectors;
mod session;
mod sync;
#[cfg(test)]
mod tests;

pub use session::{ADMIN_PASSWORD, ADMIN_USER, AdminClient};
