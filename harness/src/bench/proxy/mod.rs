//! `gantry bench proxy`: what the gateway adds to a request, against nginx and against no
//! proxy at all.
//!
//! Set-up: one upstream runtime ([`super::upstream`]) with a listener per target, so each
//! target's upstream connections are counted apart; per selector count (default 1, 100,
//! 10,000) an admin (websocket sync, SQLite) loaded through its REST API with one routing
//! selector (`uri startsWith /bench/`, with its rule) and decoys (`uri startsWith /decoy/<i>/`,
//! distinct), then a gateway started on it (one full sync; the time to the equal digest is
//! reported); and nginx ([`super::nginx`]) with `worker_processes` = this machine's CPUs (the
//! gateway's tokio worker count) when its binary is installed (else skipped with a note).
//!
//! Per upstream kind (`whole`, `split`), every target is warmed up, then `rounds` rounds run,
//! each target in turn (direct, nginx, gantry per selector count) getting the same passes from
//! one load generator ([`super::load`]): a closed-loop pass (`connections` connections for
//! `duration`: max throughput) and an open-loop pass per rate (coordinated-omission-corrected
//! latency). Each figure is the median over the rounds; added latency is the target's p50
//! minus direct's p50 in the same round (median over rounds); the gantry/nginx ratios are
//! ratios of those medians. The upstream counts the connections and requests each target
//! brought; a target with fewer than two requests per connection is flagged as opening a
//! connection per request.
//!
//! The bench's parts: what to run ([`options`]), starting a loaded gateway ([`setup`]),
//! driving the passes against every target ([`drive`]), the medians, added latency, ratios
//! and warnings ([`summary`]), and the report with its tables ([`report`]).

mod drive;
mod options;
mod report;
mod setup;
mod summary;
#[cfg(test)]
mod tests;

pub(crate) use drive::run;
pub(crate) use options::{DEFAULT_BASELINE_THRESHOLD, ProxyOptions};
pub(crate) use report::render;
pub(crate) use summary::regressions;
