//! What a fanout bench runs: subscriber kinds, counts, changes and bounds.

use std::time::Duration;

use model::SyncMode;
use serde::Serialize;

/// A subscriber kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FanoutKind {
    /// Websocket sessions.
    Websocket,
    /// HTTP long polling.
    Http,
}

impl FanoutKind {
    pub(super) fn mode(self) -> SyncMode {
        match self {
            FanoutKind::Websocket => SyncMode::Websocket,
            FanoutKind::Http => SyncMode::Http,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            FanoutKind::Websocket => "websocket",
            FanoutKind::Http => "http",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FanoutOptions {
    /// Subscriber counts, each on a fresh admin.
    pub sizes: Vec<usize>,
    /// Subscriber kinds.
    pub kinds: Vec<FanoutKind>,
    /// Changes timed per run.
    pub changes: u32,
    /// A run keeps up when the median time until all hold a change is at most this, ms.
    pub keep_up_ms: u64,
    /// Subscribers connecting at once.
    pub connect_concurrency: usize,
    /// How long to wait for everyone to connect, and for everyone to hold one change.
    pub timeout: Duration,
    /// Keep the temp dirs.
    pub keep: bool,
}

impl Default for FanoutOptions {
    fn default() -> Self {
        Self {
            sizes: vec![1000, 10_000],
            kinds: vec![FanoutKind::Websocket, FanoutKind::Http],
            changes: 5,
            keep_up_ms: 1000,
            connect_concurrency: 256,
            timeout: Duration::from_secs(60),
            keep: false,
        }
    }
}
