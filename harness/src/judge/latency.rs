//! The sync-latency judge: per change, the time from the admin's 2xx to (a) the moment the
//! gateway swapped in the config with that change (the `appliedAtUs` of its
//! `/actuator/digest`, on the host's clock) and (b) the first pass of the probe streak that
//! shows it; quantiles from an HDR histogram (µs resolution), limits on both: the applied
//! time is the gateway's own word, the probe time is what the harness saw.

use std::time::Duration;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::{
    DurationText, duration, no_null_defaults, one_ms_text, opt_duration, ten_s, ten_s_text,
};

fn twenty() -> u32 {
    20
}

fn one_ms() -> Duration {
    Duration::from_millis(1)
}

/// `latency:` toggle the selector's `enabled` flag `changes` times; for each change record the
/// time from the admin's 2xx to the gateway applying it (its `/actuator/digest` applied time)
/// and to the first pass of a `consecutive` streak of the probe (route present when enabled,
/// absent when disabled), polled every `interval` (at most 1ms); judge the applied times'
/// quantiles against `limits` and the probe times' against `probeLimits` (a p95 limit needs
/// at least 20 changes, a p99 one at least 100: with fewer the quantile is the maximum).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LatencySpec {
    /// The setup selector whose `enabled` flag is toggled (it ends as it started).
    pub selector: String,
    /// The probe: routed while the selector is enabled, absent while it is disabled.
    pub request: RequestSpec,
    /// How many changes (even, default 20).
    #[serde(default = "twenty")]
    #[schemars(range(min = MIN_CHANGES))]
    pub changes: u32,
    /// Passes in a row that make a change visible (default 1).
    #[serde(default = "one_u32")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub consecutive: u32,
    /// Probe poll period (default and at most 1ms).
    #[serde(default = "one_ms", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "one_ms_text")]
    pub interval: Duration,
    /// Deadline per change (default 10s).
    #[serde(default = "ten_s", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "ten_s_text")]
    pub timeout: Duration,
    /// Upper bounds on the applied latency's quantiles (the gateway's own apply time).
    #[serde(default)]
    pub limits: LatencyLimits,
    /// Upper bounds on the probe latency's quantiles (what the harness saw).
    #[serde(default)]
    pub probe_limits: LatencyLimits,
}

fn one_u32() -> u32 {
    1
}

/// Upper bounds for sync latency quantiles; each optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = no_null_defaults)]
pub struct LatencyLimits {
    /// Median.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "DurationText")]
    pub p50: Option<Duration>,
    /// 95th percentile.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "DurationText")]
    pub p95: Option<Duration>,
    /// 99th percentile.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "DurationText")]
    pub p99: Option<Duration>,
    /// Maximum.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "DurationText")]
    pub max: Option<Duration>,
}

/// One change's times, in µs after the admin's 2xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChangeLatency {
    /// To the gateway applying it (0 when it applied before the harness saw the 2xx).
    pub applied_us: u64,
    /// To the first pass of the probe streak.
    pub probe_us: u64,
}

/// Quantiles of a latency series, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

impl Quantiles {
    /// The quantiles of `us` (µs values); all 0 for an empty series.
    pub fn of(us: impl IntoIterator<Item = u64>) -> Quantiles {
        // 1 µs to one hour at 3 significant figures; longer values are recorded as an hour.
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)
            .expect("the bounds and precision are valid");
        for v in us {
            h.saturating_record(v);
        }
        let ms = |v: u64| v as f64 / 1000.0;
        Quantiles {
            p50: ms(h.value_at_quantile(0.50)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}

/// The limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LatencyJudge {
    /// Upper bounds on the applied-latency quantiles.
    pub limits: LatencyLimits,
    /// Upper bounds on the probe-latency quantiles.
    pub probe_limits: LatencyLimits,
}

/// What the latency check measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Stats {
    /// Changes measured.
    pub changes: usize,
    /// Admin 2xx → gateway applied, ms.
    pub applied: Quantiles,
    /// Admin 2xx → first pass of the probe streak, ms.
    pub probe: Quantiles,
    /// The limits on `applied`, ms.
    pub limits: Limits,
    /// The limits on `probe`, ms.
    pub probe_limits: Limits,
    /// Every change's applied latency, ms, in order (for histograms).
    pub applied_samples: Vec<f64>,
}

/// [`LatencyLimits`] in ms, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Limits {
    /// On the median.
    pub p50: Option<f64>,
    /// On the 95th percentile.
    pub p95: Option<f64>,
    /// On the 99th percentile.
    pub p99: Option<f64>,
    /// On the maximum.
    pub max: Option<f64>,
}

impl From<LatencyLimits> for Limits {
    fn from(l: LatencyLimits) -> Limits {
        let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
        Limits {
            p50: ms(l.p50),
            p95: ms(l.p95),
            p99: ms(l.p99),
            max: ms(l.max),
        }
    }
}

/// A failure for each quantile of `got` over its limit; `what` names the series, `of` what
/// it was measured over (`20 changes`).
pub(crate) fn over(what: &str, got: &Quantiles, limits: &Limits, of: &str) -> Vec<String> {
    [
        ("p50", got.p50, limits.p50),
        ("p95", got.p95, limits.p95),
        ("p99", got.p99, limits.p99),
        ("max", got.max, limits.max),
    ]
    .into_iter()
    .filter_map(|(name, got, limit)| {
        let limit = limit.filter(|&limit| got > limit)?;
        Some(format!(
            "{what} latency {name} {got:.3} ms is over the limit {limit} ms ({of})"
        ))
    })
    .collect()
}

impl Judge for LatencyJudge {
    type Observation = Vec<ChangeLatency>;

    fn judge(&self, changes: &Vec<ChangeLatency>) -> Verdict {
        let applied = Quantiles::of(changes.iter().map(|c| c.applied_us));
        let probe = Quantiles::of(changes.iter().map(|c| c.probe_us));
        let limits = Limits::from(self.limits);
        let probe_limits = Limits::from(self.probe_limits);
        let of = format!("{} changes", changes.len());
        let mut failures = over("applied", &applied, &limits, &of);
        failures.extend(over("probe", &probe, &probe_limits, &of));
        Verdict {
            failures,
            measurements: Measurements::Latency(Stats {
                changes: changes.len(),
                applied,
                probe,
                limits,
                probe_limits,
                applied_samples: changes
                    .iter()
                    .map(|c| c.applied_us as f64 / 1000.0)
                    .collect(),
            }),
        }
    }
}

/// The longest probe interval of a latency check.
const MAX_LATENCY_INTERVAL: Duration = Duration::from_millis(1);
/// The fewest changes a latency check with a p95 limit makes (5% of them is one change).
const MIN_P95_CHANGES: u32 = 20;
/// The fewest changes a latency check makes: one off and one on, so the selector ends as it
/// started (the validator's bound and the schema's `minimum`).
const MIN_CHANGES: u32 = 2;
/// The fewest changes a latency check with a p99 limit makes (1% of them is one change).
const MIN_P99_CHANGES: u32 = 100;

impl CheckSpec for LatencySpec {
    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.selector(&self.selector, at);
        cx.min_count(self.consecutive, at, "consecutive");
        if self.changes < MIN_CHANGES || !self.changes.is_multiple_of(2) {
            cx.problem(
                format!("{at}.changes"),
                format!(
                    "must be an even number ≥ {MIN_CHANGES} (the selector ends as it started), \
                     got {}",
                    self.changes
                ),
            );
        }
        for (field, limits) in [
            ("limits", &self.limits),
            ("probeLimits", &self.probe_limits),
        ] {
            for (q, set, least) in [
                ("p95", limits.p95.is_some(), MIN_P95_CHANGES),
                ("p99", limits.p99.is_some(), MIN_P99_CHANGES),
            ] {
                if set && self.changes < least {
                    cx.problem(
                        format!("{at}.{field}.{q}"),
                        format!(
                            "a {q} limit needs `changes` ≥ {least} (with fewer the {q} is \
                             the maximum), got {}",
                            self.changes
                        ),
                    );
                }
            }
        }
        if self.interval.is_zero() || self.interval > MAX_LATENCY_INTERVAL {
            cx.problem(
                format!("{at}.interval"),
                format!(
                    "must be between 1µs and 1ms (a latency is not quantised by its probe), got {}",
                    humantime::format_duration(self.interval)
                ),
            );
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "applied p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; probe p50 {:.2} ms ({} changes)",
            self.applied.p50, self.applied.p99, self.applied.max, self.probe.p50, self.changes
        )
    }

    fn terminal(&self) -> Option<String> {
        Some(format!(
            "applied p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
             probe p50 {:.2} ms, p99 {:.2} ms ({} changes)",
            self.applied.p50,
            self.applied.p99,
            self.applied.max,
            self.probe.p50,
            self.probe.p99,
            self.changes
        ))
    }

    fn sync_samples(&self) -> &[f64] {
        &self.applied_samples
    }
}

/// What the latency check asks of the runner.
pub(crate) trait LatencyCx {
    /// Toggles the selector's `enabled` flag `changes` times, timing each change (skipped
    /// where the gateway has no config digest).
    async fn changes(&mut self, spec: &LatencySpec) -> Result<Vec<ChangeLatency>, NoVerdict>;
}

impl<C: LatencyCx> Observe<C> for LatencySpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let changes = cx.changes(self).await?;
        Ok(LatencyJudge {
            limits: self.limits,
            probe_limits: self.probe_limits,
        }
        .judge(&changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(applied_ms: &[u64]) -> Vec<ChangeLatency> {
        applied_ms
            .iter()
            .map(|ms| ChangeLatency {
                applied_us: ms * 1000,
                probe_us: ms * 1000 + 400,
            })
            .collect()
    }

    #[test]
    fn quantiles_of_a_series() {
        let q = Quantiles::of((1..=100).map(|v| v * 1000));
        assert!((q.p50 - 50.0).abs() < 0.1, "{q:?}");
        assert!((q.p99 - 99.0).abs() < 0.1, "{q:?}");
        assert!((q.max - 100.0).abs() < 0.1, "{q:?}");
    }

    #[test]
    fn under_the_limits_passes_and_an_exceeded_threshold_fails() {
        let judge = LatencyJudge {
            limits: LatencyLimits {
                p50: Some(Duration::from_millis(5)),
                p99: Some(Duration::from_millis(20)),
                ..Default::default()
            },
            probe_limits: LatencyLimits::default(),
        };
        let v = judge.judge(&series(&[1, 2, 2, 3, 4]));
        assert!(v.passed(), "{:?}", v.failures);
        let Measurements::Latency(s) = &v.measurements else {
            panic!()
        };
        assert!((s.probe.max - 4.4).abs() < 0.01, "{s:?}");
        let v = judge.judge(&series(&[1, 2, 2, 3, 40]));
        assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
        assert!(
            v.failures[0].starts_with("applied latency p99 40.0"),
            "{}",
            v.failures[0]
        );
    }

    #[test]
    fn a_probe_latency_over_its_limit_fails_while_the_applied_one_passes() {
        let judge = LatencyJudge {
            limits: LatencyLimits {
                p99: Some(Duration::from_millis(20)),
                ..Default::default()
            },
            probe_limits: LatencyLimits {
                p95: Some(Duration::from_millis(50)),
                ..Default::default()
            },
        };
        // Applied at once, seen 200 ms later: the gateway's word is fine, the probe is not.
        let late: Vec<ChangeLatency> = (0..20)
            .map(|_| ChangeLatency {
                applied_us: 1_000,
                probe_us: 200_000,
            })
            .collect();
        let v = judge.judge(&late);
        assert_eq!(
            v.failures,
            ["probe latency p95 200.063 ms is over the limit 50 ms (20 changes)"]
        );
        let Measurements::Latency(s) = &v.measurements else {
            panic!()
        };
        assert_eq!((s.limits.p99, s.probe_limits.p95), (Some(20.0), Some(50.0)));
        assert!(judge.judge(&series(&[1, 2, 3])).passed());
    }
}
