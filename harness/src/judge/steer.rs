//! The steer judge: balancers that look at load (leastActive counts requests in flight,
//! shortestResponse and p2c time responses) must send little concurrent traffic to an upstream
//! that answers slowly, and keep using the others. The judge bounds the slow upstream's share
//! from above and every other enabled upstream's share from below.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::distribution::eight;
use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ObserveCx, ValidateCx};
use super::{Counts, Judge, Measurements, Verdict, share};
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::{DurationText, duration, fifty_ms_text};
use crate::upstream::DELAY_HEADER;

fn two_hundred() -> u32 {
    200
}

fn fifty_ms() -> Duration {
    Duration::from_millis(50)
}

/// `steer:` send `requests` requests, `concurrency` at a time, with upstream `slow` answering
/// after `delay`; the slow upstream may get at most `maxShare` of them, and every other
/// upstream of the selector at least `minShare`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SteerSpec {
    /// The request (the harness adds the delay header).
    pub request: RequestSpec,
    /// The setup selector whose upstreams are judged.
    pub selector: String,
    /// The upstream made slow.
    pub slow: String,
    /// How long it takes to answer (default 50ms).
    #[serde(default = "fifty_ms", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "fifty_ms_text")]
    pub delay: Duration,
    /// How many requests (default 200).
    #[serde(default = "two_hundred")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub requests: u32,
    /// Requests in flight at once (default 8).
    #[serde(default = "eight")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub concurrency: u32,
    /// The most the slow upstream may get, as a share of all requests.
    pub max_share: f64,
    /// The least every other upstream must get (default 0: only that the slow one is avoided).
    #[serde(default)]
    pub min_share: f64,
}

/// The bounds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SteerJudge {
    /// The slow upstream.
    pub slow: String,
    /// The most it may get.
    pub max_share: f64,
    /// The other enabled upstreams of the selector.
    pub others: Vec<String>,
    /// The least each of them must get.
    pub min_share: f64,
}

/// What the steer check measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Stats {
    /// Requests answered.
    pub requests: u64,
    /// Requests per upstream.
    pub observed: BTreeMap<String, u64>,
    /// The slow upstream.
    pub slow: String,
    /// Its share.
    pub slow_share: f64,
    /// The bound on it.
    pub max_share: f64,
    /// The bound on each other upstream.
    pub min_share: f64,
}

impl Judge for SteerJudge {
    type Observation = Counts;

    fn judge(&self, counts: &Counts) -> Verdict {
        let mut failures: Vec<String> = counts.error_failure().into_iter().collect();
        let total = counts.total();
        let of = |name: &str| share(counts.upstreams.get(name).copied().unwrap_or(0), total);
        let slow_share = of(&self.slow);
        if slow_share > self.max_share {
            failures.push(format!(
                "slow upstream {} got {:.3} of {total} requests, more than maxShare {}",
                self.slow, slow_share, self.max_share
            ));
        }
        for other in &self.others {
            let s = of(other);
            if s < self.min_share {
                failures.push(format!(
                    "{other} got {s:.3} of {total} requests, less than minShare {}",
                    self.min_share
                ));
            }
        }
        Verdict {
            failures,
            measurements: Measurements::Steer(Stats {
                requests: total,
                observed: counts.upstreams.clone(),
                slow: self.slow.clone(),
                slow_share,
                max_share: self.max_share,
                min_share: self.min_share,
            }),
        }
    }
}

impl CheckSpec for SteerSpec {
    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.selector(&self.selector, at);
        cx.upstream(&self.slow, format!("{at}.slow"));
        cx.min_count(self.requests, at, "requests");
        cx.min_count(self.concurrency, at, "concurrency");
        cx.fraction(self.max_share, at, "maxShare", false);
        cx.fraction(self.min_share, at, "minShare", false);
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "slow upstream share {:.3} (max {}) of {}",
            self.slow_share, self.max_share, self.requests
        )
    }
}

/// Concurrent requests with the slow upstream delayed by the echo upstreams' delay header.
impl<C: ObserveCx> Observe<C> for SteerSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let upstreams = cx.upstreams(&self.selector)?;
        let mut request = self.request.clone();
        request.headers.insert(
            DELAY_HEADER.to_owned(),
            format!("{}={}ms", self.slow, self.delay.as_millis()),
        );
        let counts = cx.count(&request, self.requests, self.concurrency).await;
        Ok(SteerJudge {
            slow: self.slow.clone(),
            max_share: self.max_share,
            others: upstreams
                .iter()
                .filter(|u| u.status && u.upstream != self.slow)
                .map(|u| u.upstream.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            min_share: self.min_share,
        }
        .judge(&counts))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::counts;
    use super::*;

    fn judge() -> SteerJudge {
        SteerJudge {
            slow: "slow".into(),
            max_share: 0.2,
            others: vec!["a".into(), "b".into()],
            min_share: 0.1,
        }
    }

    #[test]
    fn avoiding_the_slow_upstream_passes() {
        let v = judge().judge(&counts(&[("slow", 4), ("a", 100), ("b", 96)]));
        assert!(v.passed(), "{:?}", v.failures);
    }

    #[test]
    fn an_even_spread_fails_and_a_starved_upstream_fails() {
        // What a plain random balancer does.
        let v = judge().judge(&counts(&[("slow", 66), ("a", 67), ("b", 67)]));
        assert_eq!(
            v.failures,
            vec!["slow upstream slow got 0.330 of 200 requests, more than maxShare 0.2"]
        );
        let v = judge().judge(&counts(&[("slow", 2), ("a", 190), ("b", 8)]));
        assert_eq!(
            v.failures,
            vec!["b got 0.040 of 200 requests, less than minShare 0.1"]
        );
    }
}
