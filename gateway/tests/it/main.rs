//! The gateway's integration tests, one binary with a module per area (each test binary
//! links the whole gateway, and these the admin too).

mod common;
mod edge;
mod faults;
mod hardening;
mod http_sync;
mod rate_limit;
mod shenyu_data;
mod sync;
mod sync_token;
mod sync_user;
mod workers;
