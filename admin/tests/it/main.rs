//! The admin's integration tests, one binary with a module per area (each test binary links
//! the whole admin, so one binary instead of nine saves that link eight times).

mod api;
mod common;
mod handles;
mod http_long_poll;
mod openapi;
mod postgres;
mod register;
mod restart;
mod security;
mod sync_status;
mod timeouts;
mod websocket;
