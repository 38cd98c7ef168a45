//! Prometheus metrics at `GET /metrics`, rendered by hand in the text exposition format
//! (version 0.0.4). Request-path updates are relaxed atomics; nothing locks.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `gantry_gateway_sync_events_total` | counter | `mode`, `result` = `applied` / `rejected` |
//! | `gantry_gateway_sync_full_syncs_total` | counter | `mode` |
//! | `gantry_gateway_sync_connected` | gauge | `mode` |
//! | `gantry_gateway_config_version` | gauge (applied changes) | |
//! | `gantry_gateway_config_info` | gauge (1) | `digest` |
//! | `gantry_gateway_rejected_selector_handles_total` | counter (synced handles refused) | |
//! | `gantry_gateway_inspection_renders_total` | counter (dumps rendered) | `dump` |
//! | `gantry_gateway_requests_total` | counter | `outcome` = `routed` or the error code |
//! | `gantry_gateway_upstream_latency_seconds` | histogram | |
//! | `gantry_gateway_overhead_seconds` | histogram (time the gateway added) | |
//! | `gantry_gateway_rate_limiter_failures_total` | counter (failure policy decided) | |
//! | `gantry_gateway_rate_limiter_release_failures_total` | counter (concurrent slot not freed) | |

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use model::Rejections;

use crate::plugin::Registry;
use crate::snapshot::Dump;
use crate::sync::SyncHealth;

/// Request outcomes counted by `gantry_gateway_requests_total`, by label.
const OUTCOMES: [&str; 14] = [
    "routed", "-107", "-102", "-119", "-106", "502", "503", "504", "431", "413", "429", "400",
    "500", "other",
];

/// Histogram bucket bounds, seconds.
const BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// A fixed-bucket histogram of durations.
#[derive(Debug, Default)]
struct Histogram {
    /// Non-cumulative counts per bound, then the overflow bucket.
    buckets: [AtomicU64; BOUNDS.len() + 1],
    sum_us: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let seconds = d.as_secs_f64();
        let i = BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, bound) in BOUNDS.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[BOUNDS.len()].load(Ordering::Relaxed);
        let sum = self.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
    }
}

/// The gateway's request metrics.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: [AtomicU64; OUTCOMES.len()],
    upstream: Histogram,
    overhead: Histogram,
    /// Renderings per [`Dump`], by [`Dump::index`].
    renders: [AtomicU64; Dump::ALL.len()],
}

impl Metrics {
    /// Counts one request: `outcome` is `routed` or an error code (`-107`, `504`, …).
    pub(crate) fn request(&self, outcome: &str, upstream: Option<Duration>, overhead: Duration) {
        let i = OUTCOMES
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(OUTCOMES.len() - 1);
        self.requests[i].fetch_add(1, Ordering::Relaxed);
        if let Some(d) = upstream {
            self.upstream.observe(d);
        }
        self.overhead.observe(overhead);
    }

    /// Counts one rendering of `dump`.
    pub(crate) fn dump_rendered(&self, dump: Dump) {
        self.renders[dump.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text.
    pub(crate) fn render(
        &self,
        sync: &SyncHealth,
        digest: &str,
        rejected: &Rejections,
        plugins: &Registry,
    ) -> String {
        let mut out = String::new();
        let mode = sync.mode;
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_sync_events_total Sync events (frames, fetched groups) by result.\n\
             # TYPE gantry_gateway_sync_events_total counter\n\
             gantry_gateway_sync_events_total{{mode=\"{mode}\",result=\"applied\"}} {}\n\
             gantry_gateway_sync_events_total{{mode=\"{mode}\",result=\"rejected\"}} {}",
            sync.events_applied, sync.events_rejected
        );
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_sync_full_syncs_total Full syncs applied (one per group).\n\
             # TYPE gantry_gateway_sync_full_syncs_total counter\n\
             gantry_gateway_sync_full_syncs_total{{mode=\"{mode}\"}} {}",
            sync.full_syncs
        );
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_sync_connected Whether an admin session is up.\n\
             # TYPE gantry_gateway_sync_connected gauge\n\
             gantry_gateway_sync_connected{{mode=\"{mode}\"}} {}",
            u8::from(sync.connected)
        );
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_config_version Config changes applied since start.\n\
             # TYPE gantry_gateway_config_version gauge\n\
             gantry_gateway_config_version {}",
            sync.events_applied
        );
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_config_info The applied config's digest.\n\
             # TYPE gantry_gateway_config_info gauge\n\
             gantry_gateway_config_info{{digest=\"{}\"}} 1",
            escape(digest)
        );
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_rejected_selector_handles_total Synced selector handles refused (the last good upstreams kept).\n\
             # TYPE gantry_gateway_rejected_selector_handles_total counter\n\
             gantry_gateway_rejected_selector_handles_total {}",
            rejected.count
        );
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_inspection_renders_total Inspection dumps rendered (once per snapshot at most).\n\
             # TYPE gantry_gateway_inspection_renders_total counter"
        );
        for (dump, n) in Dump::ALL.iter().zip(&self.renders) {
            let _ = writeln!(
                out,
                "gantry_gateway_inspection_renders_total{{dump=\"{}\"}} {}",
                dump.name(),
                n.load(Ordering::Relaxed)
            );
        }
        plugins.render_metrics(&mut out);
        let _ = writeln!(
            out,
            "# HELP gantry_gateway_requests_total Routed requests by outcome (routed or error code).\n\
             # TYPE gantry_gateway_requests_total counter"
        );
        for (outcome, n) in OUTCOMES.iter().zip(&self.requests) {
            let _ = writeln!(
                out,
                "gantry_gateway_requests_total{{outcome=\"{outcome}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
        self.upstream.render(
            &mut out,
            "gantry_gateway_upstream_latency_seconds",
            "Time waiting for upstream response heads (all attempts).",
        );
        self.overhead.render(
            &mut out,
            "gantry_gateway_overhead_seconds",
            "Time the gateway added: total minus upstream time.",
        );
        out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::SyncMode;

    #[test]
    fn exposition() {
        let m = Metrics::default();
        m.request(
            "routed",
            Some(Duration::from_millis(3)),
            Duration::from_micros(50),
        );
        m.request("-107", None, Duration::from_micros(20));
        m.request("999", None, Duration::from_secs(9));
        let sync = SyncHealth {
            mode: SyncMode::Http,
            connected: true,
            full_syncs: 5,
            events_applied: 7,
            events_rejected: 1,
            session: None,
        };
        m.dump_rendered(Dump::Rules);
        let rejected = Rejections {
            count: 2,
            last: None,
        };
        let text = m.render(&sync, "ab\"c", &rejected, &Registry::standard());
        for line in [
            "gantry_gateway_sync_events_total{mode=\"http\",result=\"applied\"} 7",
            "gantry_gateway_sync_events_total{mode=\"http\",result=\"rejected\"} 1",
            "gantry_gateway_config_version 7",
            "gantry_gateway_config_info{digest=\"ab\\\"c\"} 1",
            "gantry_gateway_rejected_selector_handles_total 2",
            "gantry_gateway_inspection_renders_total{dump=\"ruleData\"} 1",
            "gantry_gateway_inspection_renders_total{dump=\"selectorData\"} 0",
            "gantry_gateway_requests_total{outcome=\"routed\"} 1",
            "gantry_gateway_requests_total{outcome=\"-107\"} 1",
            "gantry_gateway_requests_total{outcome=\"other\"} 1",
            "gantry_gateway_upstream_latency_seconds_bucket{le=\"0.0025\"} 0",
            "gantry_gateway_upstream_latency_seconds_bucket{le=\"0.005\"} 1",
            "gantry_gateway_upstream_latency_seconds_count 1",
            "gantry_gateway_overhead_seconds_bucket{le=\"5\"} 2",
            "gantry_gateway_overhead_seconds_bucket{le=\"+Inf\"} 3",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing `{line}` in\n{text}"
            );
        }
    }
}
