//! The distribution judge: counts per upstream against expected shares with a χ²
//! goodness-of-fit test (statrs) at significance α; an upstream whose expected share is 0
//! (disabled, weight 0 beside positive weights, left out of `shares`) must get nothing at all.
//!
//! Power at the default N = 2000 and α = 1e-6 (critical χ²₁ ≈ 23.9): against 50/50, a 60/40
//! gateway gives a non-centrality λ = 4Nδ² = 80 and is caught with probability ≈ 0.9999; a
//! 55/45 one (λ = 20) only with ≈ 0.34. A correct gateway fails with probability α.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ObserveCx, Shares, ValidateCx};
use super::{Counts, Judge, Measurements, Verdict, share};
use crate::scenario::ast::UpstreamRef;
use crate::scenario::ast::request::RequestSpec;

fn two_thousand() -> u32 {
    2000
}

pub(super) fn eight() -> u32 {
    8
}

fn default_alpha() -> f64 {
    1e-6
}

/// `distribution:` send `requests` requests and judge the counts per upstream against the
/// shares the selector's upstreams imply (or `shares`) with a χ² goodness-of-fit test at
/// significance `alpha`; upstreams with an expected share of 0 must get no request at all.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DistributionSpec {
    /// The request.
    pub request: RequestSpec,
    /// The setup selector whose upstreams (weight, status) imply the expected shares.
    pub selector: String,
    /// How many requests (default 2000; see docs/scenarios.md for the test's power).
    #[serde(default = "two_thousand")]
    pub requests: u32,
    /// Requests in flight at once (default 8).
    #[serde(default = "eight")]
    pub concurrency: u32,
    /// Expected shares by upstream name, instead of the ones the weights imply (normalised;
    /// an upstream left out must get nothing).
    #[serde(default)]
    pub shares: Option<BTreeMap<String, f64>>,
    /// The significance level: a correct gateway fails with this probability (default 1e-6).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
}

/// The shares a weighted balancer (random; round robin in the long run) gives `upstreams`:
/// disabled ones get 0 (gantry never picks them); if every enabled weight is equal (all 0
/// included) the enabled ones share equally; otherwise each gets its weight over the total
/// and weights ≤ 0 get 0 (ShenYu's `RandomLoadBalancer`, semantics §7).
pub(crate) fn shares_from_weights(upstreams: &[UpstreamRef]) -> BTreeMap<String, f64> {
    let mut shares: BTreeMap<String, f64> = upstreams
        .iter()
        .map(|u| (u.upstream.clone(), 0.0))
        .collect();
    let enabled: Vec<&UpstreamRef> = upstreams.iter().filter(|u| u.status).collect();
    let equal = enabled.windows(2).all(|w| w[0].weight == w[1].weight);
    let total: f64 = enabled.iter().map(|u| f64::from(u.weight.max(0))).sum();
    for u in &enabled {
        let s = if equal || total <= 0.0 {
            1.0 / enabled.len() as f64
        } else {
            f64::from(u.weight.max(0)) / total
        };
        *shares.entry(u.upstream.clone()).or_default() += s;
    }
    shares
}

/// Expected shares (normalised) and the significance level.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DistributionJudge {
    /// Share per upstream; 0 means "must get nothing".
    pub expected: BTreeMap<String, f64>,
    /// Significance level of the χ² test.
    pub alpha: f64,
}

impl DistributionJudge {
    /// A judge for `shares` (normalised here) at `alpha`.
    pub(crate) fn new(shares: BTreeMap<String, f64>, alpha: f64) -> Self {
        let total: f64 = shares.values().sum();
        let expected = shares
            .into_iter()
            .map(|(k, v)| (k, if total > 0.0 { v / total } else { 0.0 }))
            .collect();
        Self { expected, alpha }
    }
}

/// What the distribution check measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Stats {
    /// Requests answered.
    pub requests: u64,
    /// Requests per upstream.
    pub observed: BTreeMap<String, u64>,
    /// Observed shares.
    pub observed_shares: BTreeMap<String, f64>,
    /// Expected shares.
    pub expected_shares: BTreeMap<String, f64>,
    /// The χ² statistic over the upstreams with a positive expected share (none when fewer
    /// than two).
    pub chi_square: Option<f64>,
    /// Degrees of freedom (positive-share upstreams − 1).
    pub degrees_of_freedom: u64,
    /// P(χ² ≥ the statistic) for a correct gateway.
    pub p_value: Option<f64>,
    /// The significance level.
    pub alpha: f64,
}

impl Judge for DistributionJudge {
    type Observation = Counts;

    fn judge(&self, counts: &Counts) -> Verdict {
        let mut failures: Vec<String> = counts.error_failure().into_iter().collect();
        let n = counts.upstreams.values().sum::<u64>();
        for (up, hits) in &counts.upstreams {
            match self.expected.get(up) {
                None => failures.push(format!(
                    "{up} answered {hits} requests but is not one of the selector's upstreams"
                )),
                Some(s) if *s == 0.0 => failures.push(format!(
                    "{up} answered {hits} requests but must get none (expected share 0)"
                )),
                Some(_) => {}
            }
        }
        let positive: Vec<(&String, f64)> = self
            .expected
            .iter()
            .filter(|(_, s)| **s > 0.0)
            .map(|(k, s)| (k, *s))
            .collect();
        let (mut chi_square, mut p_value) = (None, None);
        let df = positive.len().saturating_sub(1) as u64;
        if positive.len() >= 2 && n > 0 {
            let stat: f64 = positive
                .iter()
                .map(|(up, s)| {
                    let e = s * n as f64;
                    let o = counts.upstreams.get(*up).copied().unwrap_or(0) as f64;
                    (o - e).powi(2) / e
                })
                .sum();
            let p = ChiSquared::new(df as f64).expect("df ≥ 1").sf(stat);
            if p < self.alpha {
                failures.push(format!(
                    "χ² = {stat:.2} with {df} degrees of freedom, p = {p:.3e} < α = {:e}: \
                     observed {} against expected {}",
                    self.alpha,
                    render_shares(&observed_shares(counts, n)),
                    render_shares(&self.expected),
                ));
            }
            chi_square = Some(stat);
            p_value = Some(p);
        }
        Verdict {
            failures,
            measurements: Measurements::Distribution(Stats {
                requests: counts.total(),
                observed: counts.upstreams.clone(),
                observed_shares: observed_shares(counts, n),
                expected_shares: self.expected.clone(),
                chi_square,
                degrees_of_freedom: df,
                p_value,
                alpha: self.alpha,
            }),
        }
    }
}

fn observed_shares(counts: &Counts, n: u64) -> BTreeMap<String, f64> {
    counts
        .upstreams
        .iter()
        .map(|(k, v)| (k.clone(), share(*v, n)))
        .collect()
}

fn render_shares(shares: &BTreeMap<String, f64>) -> String {
    shares
        .iter()
        .map(|(k, v)| format!("{k} {:.3}", v))
        .collect::<Vec<_>>()
        .join(", ")
}

impl CheckSpec for DistributionSpec {
    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.selector(&self.selector, at);
        cx.at_least(self.requests, 1, at, "requests");
        cx.at_least(self.concurrency, 1, at, "concurrency");
        cx.fraction(self.alpha, at, "alpha", true);
        if let Some(shares) = &self.shares {
            for (name, share) in shares {
                let path = format!("{at}.shares.{name}");
                cx.upstream(name, path.clone());
                if !(share.is_finite() && *share >= 0.0) {
                    cx.problem(path, format!("must be a number ≥ 0, got {share}"));
                }
            }
            if shares.values().sum::<f64>() <= 0.0 {
                cx.problem(
                    format!("{at}.shares"),
                    "at least one share must be positive".to_owned(),
                );
            }
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "χ² = {}, df {}, p = {} over {} requests",
            self.chi_square
                .map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            self.degrees_of_freedom,
            self.p_value
                .map_or_else(|| "-".into(), |p| format!("{p:.3}")),
            self.requests
        )
    }

    fn terminal(&self) -> Option<String> {
        let (chi, p) = self.chi_square.zip(self.p_value)?;
        Some(format!(
            "χ² = {chi:.2}, df {}, p = {p:.3} (α {:e}, {} requests)",
            self.degrees_of_freedom, self.alpha, self.requests
        ))
    }

    fn shares(&self) -> Option<Shares> {
        let categories = self
            .expected_shares
            .iter()
            .map(|(up, e)| {
                (
                    up.clone(),
                    self.observed_shares.get(up).copied().unwrap_or(0.0),
                    *e,
                )
            })
            .collect();
        let note = self
            .p_value
            .map_or_else(String::new, |p| format!(", p = {p:.3}"));
        Some(Shares { note, categories })
    }
}

impl<C: ObserveCx> Observe<C> for DistributionSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let shares = match &self.shares {
            Some(s) => s.clone(),
            None => shares_from_weights(&cx.upstreams(&self.selector)?),
        };
        let counts = cx
            .count(&self.request, self.requests, self.concurrency)
            .await;
        Ok(DistributionJudge::new(shares, self.alpha).judge(&counts))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::counts;
    use super::*;

    fn up(name: &str, weight: i32, status: bool) -> UpstreamRef {
        UpstreamRef {
            upstream: name.to_owned(),
            weight,
            status,
        }
    }

    #[test]
    fn shares_follow_weights_status_and_equal_weights() {
        let s = shares_from_weights(&[up("a", 3, true), up("b", 1, true), up("c", 9, false)]);
        assert_eq!(
            s,
            BTreeMap::from([("a".into(), 0.75), ("b".into(), 0.25), ("c".into(), 0.0)])
        );
        let s = shares_from_weights(&[up("a", 0, true), up("b", 0, true)]);
        assert_eq!(s["a"], 0.5);
        let s = shares_from_weights(&[up("a", 0, true), up("b", 4, true)]);
        assert_eq!((s["a"], s["b"]), (0.0, 1.0));
    }

    fn judge() -> DistributionJudge {
        DistributionJudge::new(
            BTreeMap::from([("a".into(), 3.0), ("b".into(), 1.0), ("c".into(), 0.0)]),
            1e-6,
        )
    }

    #[test]
    fn counts_near_the_shares_pass_with_their_statistics() {
        let v = judge().judge(&counts(&[("a", 1510), ("b", 490)]));
        assert!(v.passed(), "{:?}", v.failures);
        let Measurements::Distribution(s) = v.measurements else {
            panic!()
        };
        assert_eq!(s.degrees_of_freedom, 1);
        // (1510-1500)²/1500 + (490-500)²/500
        assert!((s.chi_square.unwrap() - 0.2667).abs() < 1e-3);
        assert!(s.p_value.unwrap() > 0.5);
        assert_eq!(s.expected_shares["a"], 0.75);
    }

    #[test]
    fn a_skewed_count_fails() {
        let v = judge().judge(&counts(&[("a", 1000), ("b", 1000)]));
        assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
        assert!(
            v.failures[0].starts_with("χ² = 666.67 with 1 degrees of freedom, p = "),
            "{}",
            v.failures[0]
        );
        assert!(v.failures[0].contains("observed a 0.500, b 0.500 against expected a 0.750"));
    }

    #[test]
    fn one_request_to_a_zero_share_upstream_fails_exactly() {
        let v = judge().judge(&counts(&[("a", 1500), ("b", 500), ("c", 1)]));
        assert_eq!(
            v.failures,
            vec!["c answered 1 requests but must get none (expected share 0)"]
        );
        let v = judge().judge(&counts(&[("a", 1500), ("b", 500), ("zeta", 2)]));
        assert!(v.failures[0].contains("not one of the selector's upstreams"));
    }

    #[test]
    fn errors_fail_and_a_single_upstream_needs_every_request() {
        let single = DistributionJudge::new(BTreeMap::from([("a".into(), 1.0)]), 1e-6);
        assert!(single.judge(&counts(&[("a", 10)])).passed());
        let mut c = counts(&[("a", 9)]);
        c.errors.insert("HTTP 502 code -103".into(), 1);
        let v = single.judge(&c);
        assert_eq!(
            v.failures,
            vec!["answers without an upstream: 1 × HTTP 502 code -103"]
        );
    }
}
