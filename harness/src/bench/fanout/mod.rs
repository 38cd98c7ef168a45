//! `gantry bench fanout`: how many subscribers one admin keeps up with.
//!
//! Per subscriber kind and count (default 1,000 and 10,000), a fresh admin (`--sync websocket`
//! or `--sync http`, SQLite) and that many lightweight simulated subscribers in this process,
//! each on its own TCP connection:
//!
//! - `websocket`: connect to `/websocket` with the run's `X-Shenyu-Sync-Token`, send `MYSELF`,
//!   read the five full-sync frames, then read increment frames.
//! - `http`: as the gateway's long-poll subscriber does (docs/interfaces.md): one login (the
//!   token is shared), `GET /configs/fetch` of the five groups, then `POST /configs/listener`
//!   with the form body `GROUP=md5%2ClastModifyTime&…`; a non-empty answer → fetch those groups
//!   → listen again.
//!
//! Subscribers connect (and fully sync) at most [`FanoutOptions::connect_concurrency`] at a
//! time. Then `changes` selectors are created, one at a time; a subscriber holds change `k` when
//! a frame (websocket) or a fetched group (http) carries the selector `fanout-change-<k>`. Per
//! change: the time from the admin's 2xx until each subscriber holds it (p50, p99, all), and
//! the admin's CPU time (from `/proc/<pid>/stat`) spent on it; per run the admin's RSS and peak
//! RSS (`/proc/<pid>/status`) and this process's CPU time (the simulated subscribers share the
//! machine with the admin). A run keeps up when every subscriber connected, none was lost,
//! and the median time until all hold a change is within `keep_up_ms`.
//!
//! 10,000 sockets need that many file descriptors here and in the admin: the bench raises its
//! own `RLIMIT_NOFILE` (soft, and hard when it must and may) before starting the admin, which
//!
//! The bench's parts: what to run ([`options`]), the descriptor limit ([`fd_limit`]), the
//! simulated subscribers ([`subscribers`]), driving the runs and timing the changes
//! ([`drive`]), and the report with its verdict and table ([`report`]). With `--backend
//! swarm` the subscribers are real gateways instead, as tasks of a Swarm service ([`tasks`]).

mod drive;
mod fd_limit;
mod options;
mod report;
mod subscribers;
pub(crate) mod tasks;
#[cfg(test)]
mod tests;

pub(crate) use drive::run;
pub(crate) use options::{FanoutKind, FanoutOptions};
pub(crate) use report::render;
