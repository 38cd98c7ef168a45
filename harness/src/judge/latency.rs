//! The sync-latency judge: per change, the time from the admin's 2xx to (a) the moment the
//! gateway swapped in the config with that change (the `appliedAtUs` of its
//! `/actuator/digest`, on the host's clock) and (b) the first pass of the probe streak that
//! shows it; quantiles from an HDR histogram (µs resolution), limits on both: the applied
//! time is the gateway's own word, the probe time is what the harness saw.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::LatencyLimits;

/// One change's times, in µs after the admin's 2xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeLatency {
    /// To the gateway applying it (0 when it applied before the harness saw the 2xx).
    pub applied_us: u64,
    /// To the first pass of the probe streak.
    pub probe_us: u64,
}

/// Quantiles of a latency series, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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
pub struct LatencyJudge {
    /// Upper bounds on the applied-latency quantiles.
    pub limits: LatencyLimits,
    /// Upper bounds on the probe-latency quantiles.
    pub probe_limits: LatencyLimits,
}

/// What the latency check measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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

/// A failure for each quantile of `got` over its limit; `what` names the series.
fn over(what: &str, got: &Quantiles, limits: &Limits, changes: usize) -> Vec<String> {
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
            "{what} latency {name} {got:.3} ms is over the limit {limit} ms ({changes} changes)"
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
        let mut failures = over("applied", &applied, &limits, changes.len());
        failures.extend(over("probe", &probe, &probe_limits, changes.len()));
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
