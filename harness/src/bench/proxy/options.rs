//! What a proxy bench runs.

use std::time::Duration;

use super::super::baseline::Baseline;
use super::super::upstream::UpstreamKind;

/// The default `--baseline-threshold`: what the bench's run-to-run spread on a quiet
/// 2-core machine stays above (two consecutive runs of one build agree within ~10%).
pub(crate) const DEFAULT_BASELINE_THRESHOLD: f64 = 0.9;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
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
    /// Another revision's binaries, measured as `baseline-<selectors>` in the same rounds.
    pub baseline: Option<Baseline>,
    /// Below this throughput ratio to the baseline the bench fails.
    pub baseline_threshold: f64,
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
            baseline: None,
            baseline_threshold: DEFAULT_BASELINE_THRESHOLD,
        }
    }
}
