//! What a proxy bench runs.

use std::time::Duration;

use super::super::upstream::UpstreamKind;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProxyOptions {
    /// Load-generator connections per pass.
    pub connections: usize,
    /// Each pass's duration.
    pub duration: Duration,
    /// Warm-up per target and upstream kind (closed loop, not recorded).
    pub warmup: Duration,
    /// Open-loop rates, requests per second.
    pub rates: Vec<u32>,
    /// Rounds (medians are taken over them).
    pub rounds: u32,
    /// Selector counts the gateway is measured with (one gateway each).
    pub selectors: Vec<usize>,
    /// Upstream kinds.
    pub kinds: Vec<UpstreamKind>,
    /// Measure nginx when installed.
    pub nginx: bool,
    /// TCP_NODELAY on the upstream's sockets (off only to see what a missing one costs).
    pub upstream_nodelay: bool,
    /// Concurrent admin writers loading the selectors.
    pub writers: usize,
    /// Keep the temp dirs (`GANTRY_KEEP=1`).
    pub keep: bool,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self {
            connections: 16,
            duration: Duration::from_millis(1000),
            warmup: Duration::from_millis(500),
            rates: vec![1000, 5000],
            rounds: 5,
            selectors: vec![1, 100, 10_000],
            kinds: vec![UpstreamKind::Whole, UpstreamKind::Split],
            nginx: true,
            upstream_nodelay: true,
            writers: 8,
            keep: false,
        }
    }
}
