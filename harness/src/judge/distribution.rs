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

use super::spec::{
    CheckSpec, Intent, Measured, NoVerdict, Observe, ObserveCx, Shares, ValidateCx, config_note,
};
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
/// `shares` written (the intent; without them, the shares the selector's weights imply, which
/// cannot catch a mistake in those weights) with a χ² goodness-of-fit test at significance
/// `alpha`; upstreams with an expected share of 0 must get no request at all.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DistributionSpec {
    /// The request.
    pub request: RequestSpec,
    /// The setup selector the requests reach; without `shares`, its upstreams (weight,
    /// status) imply the expected shares.
    pub selector: String,
    /// How many requests (default 2000; see docs/scenarios.md for the test's power).
    #[serde(default = "two_thousand")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub requests: u32,
    /// Requests in flight at once (default 8).
    #[serde(default = "eight")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub concurrency: u32,
    /// The intended shares by upstream name (normalised; an upstream left out must get
    /// nothing). Written, they catch a mistake in the selector's weights; left out, the
    /// weights imply the shares and a mistake in them passes (`gantry validate` warns).
    #[serde(default)]
    pub shares: Option<BTreeMap<String, f64>>,
    /// The significance level: a correct gateway fails with this probability (default 1e-6).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Seeds the reference gateway's random picks for this check's requests (its gantry-only
    /// `PUT /actuator/seed`), so that with `concurrency: 1` a run replays: the same seed gives
    /// the same counts. Logged and reported; a gateway without that endpoint runs unseeded and
    /// the report says so.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// What a distribution check asks of the runner beside [`ObserveCx`].
pub(crate) trait SeedCx {
    /// Seeds the random picks of every running gateway with `seed` (`None`: back to their
    /// random source), or says why a gateway cannot be seeded.
    async fn seed_picks(&mut self, seed: Option<u64>) -> Result<(), String>;
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

/// Expected shares (normalised), where they come from, what the selector's weights imply,
/// and the significance level.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DistributionJudge {
    /// Share per upstream; 0 means "must get nothing".
    pub expected: BTreeMap<String, f64>,
    /// Where `expected` comes from (`shares:` written, or the selector's weights).
    pub intent: Intent,
    /// The shares the selector's weights imply (normalised), keyed by every upstream of the
    /// selector: equal to `expected` when that is read from them.
    pub implied: BTreeMap<String, f64>,
    /// Significance level of the χ² test.
    pub alpha: f64,
}

/// What the failures call shares written in the check.
const WRITTEN: &str = "the shares you wrote";

impl DistributionJudge {
    /// A judge for the shares the selector's `upstreams` imply, at `alpha`.
    pub(crate) fn from_selector(upstreams: &[UpstreamRef], alpha: f64) -> Self {
        let implied = shares_from_weights(upstreams);
        Self {
            expected: implied.clone(),
            intent: Intent::Config {
                what: "the shares",
                keys: "`shares:`",
            },
            implied,
            alpha,
        }
    }

    /// A judge for the `shares` written in the check (normalised here) at `alpha`, beside
    /// the selector's `upstreams` (to tell an upstream left out of `shares` from one that is
    /// not the selector's, and to name the weights when they disagree).
    pub(crate) fn written(
        shares: BTreeMap<String, f64>,
        upstreams: &[UpstreamRef],
        alpha: f64,
    ) -> Self {
        Self {
            expected: normalised(shares),
            intent: Intent::Written(WRITTEN),
            implied: shares_from_weights(upstreams),
            alpha,
        }
    }

    /// `message`, ended with the note that the expectation came from the config, if it did.
    fn failure(&self, message: String) -> String {
        match self.intent.hint() {
            Some(hint) => format!("{message}; {hint}"),
            None => message,
        }
    }

    /// For written shares that the selector's weights do not imply: what they imply, so a
    /// failure names both.
    fn weights_disagree(&self) -> Option<String> {
        let differs = |k: &String| {
            let e = self.expected.get(k).copied().unwrap_or(0.0);
            let i = self.implied.get(k).copied().unwrap_or(0.0);
            (e - i).abs() > 1e-9
        };
        let disagree = matches!(self.intent, Intent::Written(_))
            && self.expected.keys().chain(self.implied.keys()).any(differs);
        disagree.then(|| {
            format!(
                "; the selector's weights (as the case sent them to the admin) imply {}, \
                 not the shares you wrote",
                render_shares(&self.implied)
            )
        })
    }
}

/// `shares` over their total (all 0 when the total is not positive).
fn normalised(shares: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let total: f64 = shares.values().sum();
    shares
        .into_iter()
        .map(|(k, v)| (k, if total > 0.0 { v / total } else { 0.0 }))
        .collect()
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
    /// The seed the check asked for (`seed:`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Why the check ran unseeded although it asked for a seed (a gateway without the
    /// seed endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseeded: Option<String>,
}

impl Stats {
    /// `, seed 42` or `, seed 42 not applied (why)`; empty without a seed.
    fn seed_note(&self) -> String {
        match (self.seed, &self.unseeded) {
            (None, _) => String::new(),
            (Some(seed), None) => format!(", seed {seed}"),
            (Some(seed), Some(why)) => format!(", seed {seed} not applied, ran unseeded ({why})"),
        }
    }
}

impl Judge for DistributionJudge {
    type Observation = Counts;

    fn judge(&self, counts: &Counts) -> Verdict {
        let mut failures: Vec<String> = counts.error_failure().into_iter().collect();
        let n = counts.upstreams.values().sum::<u64>();
        for (up, hits) in &counts.upstreams {
            match self.expected.get(up) {
                None if self.implied.contains_key(up) => failures.push(format!(
                    "{up} answered {hits} requests but `shares` gives it none (left out of \
                     `shares` means it must get nothing)"
                )),
                None => failures.push(format!(
                    "{up} answered {hits} requests but is not one of the selector's upstreams"
                )),
                Some(s) if *s == 0.0 => failures.push(self.failure(format!(
                    "{up} answered {hits} requests but must get none ({} give it 0)",
                    self.intent.compared_with()
                ))),
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
                failures.push(self.failure(format!(
                    "χ² = {stat:.2} with {df} degrees of freedom, p = {p:.3e} < α = {:e}: \
                     observed {} against {} {}{}",
                    self.alpha,
                    render_shares(&observed_shares(counts, n)),
                    self.intent.compared_with(),
                    render_shares(&self.expected),
                    self.weights_disagree().unwrap_or_default(),
                )));
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
                seed: None,
                unseeded: None,
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
        cx.min_count(self.requests, at, "requests");
        cx.min_count(self.concurrency, at, "concurrency");
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
        } else {
            cx.warning(at.to_owned(), config_note("`shares:`"));
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "χ² = {}, df {}, p = {} over {} requests{}",
            self.chi_square
                .map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            self.degrees_of_freedom,
            self.p_value
                .map_or_else(|| "-".into(), |p| format!("{p:.3}")),
            self.requests,
            self.seed_note()
        )
    }

    fn terminal(&self) -> Option<String> {
        let (chi, p) = self.chi_square.zip(self.p_value)?;
        Some(format!(
            "χ² = {chi:.2}, df {}, p = {p:.3} (α {:e}, {} requests{})",
            self.degrees_of_freedom,
            self.alpha,
            self.requests,
            self.seed_note()
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

impl<C: ObserveCx + SeedCx> Observe<C> for DistributionSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let upstreams = cx.upstreams(&self.selector)?;
        let judge = match &self.shares {
            Some(s) => DistributionJudge::written(s.clone(), &upstreams, self.alpha),
            None => DistributionJudge::from_selector(&upstreams, self.alpha),
        };
        let mut unseeded = None;
        if let Some(seed) = self.seed {
            tracing::info!(seed, selector = %self.selector, "distribution check: seeding the gateway's random picks");
            if let Err(why) = cx.seed_picks(Some(seed)).await {
                tracing::warn!(seed, "distribution check runs unseeded: {why}");
                unseeded = Some(why);
            }
        }
        let counts = cx
            .count(&self.request, self.requests, self.concurrency)
            .await;
        if self.seed.is_some()
            && unseeded.is_none()
            && let Err(why) = cx.seed_picks(None).await
        {
            tracing::warn!("could not clear the gateway's seed: {why}");
        }
        let mut verdict = judge.judge(&counts);
        if let Measurements::Distribution(stats) = &mut verdict.measurements {
            stats.seed = self.seed;
            stats.unseeded = unseeded;
        }
        Ok(verdict)
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

    /// The judge of a 3:1 selector with a disabled third upstream, from its weights.
    fn judge() -> DistributionJudge {
        DistributionJudge::from_selector(
            &[up("a", 3, true), up("b", 1, true), up("c", 9, false)],
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
        assert!(
            v.failures[0].contains(
                "observed a 0.500, b 0.500 against the shares the selector's weights imply \
                 (as the case sent them to the admin) a 0.750, b 0.250, c 0.000; the \
                 expectation is read from the selector's weights, so a mistake in them \
                 passes; write `shares:`"
            ),
            "{}",
            v.failures[0]
        );
    }

    /// A split written 20/80 by mistake where 80/20 is meant: only `shares` catches it, and
    /// the failure names the shares written, those observed and those the weights imply.
    #[test]
    fn written_shares_catch_swapped_weights() {
        let swapped = [up("alpha", 20, true), up("beta", 80, true)];
        let intended = BTreeMap::from([("alpha".into(), 80.0), ("beta".into(), 20.0)]);
        let observed = counts(&[("alpha", 402), ("beta", 1598)]);
        // Read from the weights, the mistake passes.
        assert!(
            DistributionJudge::from_selector(&swapped, 1e-6)
                .judge(&observed)
                .passed()
        );
        let v = DistributionJudge::written(intended.clone(), &swapped, 1e-6).judge(&observed);
        assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
        assert!(
            v.failures[0].contains(
                "observed alpha 0.201, beta 0.799 against the shares you wrote alpha 0.800, \
                 beta 0.200; the selector's weights (as the case sent them to the admin) \
                 imply alpha 0.200, beta 0.800, not the shares you wrote"
            ),
            "{}",
            v.failures[0]
        );
        // Weights that agree with the shares are not named.
        let right = [up("alpha", 80, true), up("beta", 20, true)];
        let v = DistributionJudge::written(intended, &right, 1e-6).judge(&observed);
        assert!(!v.failures[0].contains("imply"), "{}", v.failures[0]);
    }

    #[test]
    fn an_upstream_left_out_of_shares_is_named_as_such() {
        let ups = [up("alpha", 1, true), up("beta", 1, true)];
        let j = DistributionJudge::written(BTreeMap::from([("alpha".into(), 1.0)]), &ups, 1e-6);
        let v = j.judge(&counts(&[("alpha", 90), ("beta", 10)]));
        assert_eq!(
            v.failures,
            vec![
                "beta answered 10 requests but `shares` gives it none (left out of `shares` \
                 means it must get nothing)"
            ]
        );
        let v = j.judge(&counts(&[("alpha", 90), ("zeta", 10)]));
        assert_eq!(
            v.failures,
            vec!["zeta answered 10 requests but is not one of the selector's upstreams"]
        );
        assert!(j.judge(&counts(&[("alpha", 100)])).passed());
    }

    #[test]
    fn one_request_to_a_zero_share_upstream_fails_exactly() {
        let v = judge().judge(&counts(&[("a", 1500), ("b", 500), ("c", 1)]));
        assert_eq!(v.failures.len(), 1);
        assert!(
            v.failures[0].starts_with(
                "c answered 1 requests but must get none (the shares the selector's weights \
                 imply (as the case sent them to the admin) give it 0); the expectation is read"
            ),
            "{}",
            v.failures[0]
        );
        let v = judge().judge(&counts(&[("a", 1500), ("b", 500), ("zeta", 2)]));
        assert!(v.failures[0].contains("not one of the selector's upstreams"));
    }

    #[test]
    fn errors_fail_and_a_single_upstream_needs_every_request() {
        let single = DistributionJudge::from_selector(&[up("a", 1, true)], 1e-6);
        assert!(single.judge(&counts(&[("a", 10)])).passed());
        let mut c = counts(&[("a", 9)]);
        c.errors.insert("HTTP 502 code -103".into(), 1);
        let v = single.judge(&c);
        assert_eq!(
            v.failures,
            vec!["answers without an upstream: 1 × HTTP 502 code -103"]
        );
    }

    #[test]
    fn the_summary_names_the_seed_and_an_unseeded_run() {
        let v = judge().judge(&counts(&[("a", 1500), ("b", 500)]));
        let Measurements::Distribution(mut s) = v.measurements else {
            panic!()
        };
        assert!(!s.summary().contains("seed"), "{}", s.summary());
        s.seed = Some(42);
        assert!(s.summary().ends_with("over 2000 requests, seed 42"), "{}", s.summary());
        assert!(s.terminal().unwrap().ends_with("2000 requests, seed 42)"));
        s.unseeded = Some("gateway has no seed endpoint".into());
        assert!(
            s.summary()
                .ends_with("seed 42 not applied, ran unseeded (gateway has no seed endpoint)"),
            "{}",
            s.summary()
        );
    }

    /// A runner that answers every request from `alpha` and has no seed endpoint.
    struct NoSeedEndpoint {
        seeded: Vec<Option<u64>>,
    }

    impl ObserveCx for NoSeedEndpoint {
        async fn send(&self, _: &RequestSpec) -> Result<crate::probe::ProbeResponse, String> {
            super::super::test_support::from("alpha")
        }

        async fn count(&self, _: &RequestSpec, n: u32, _: u32) -> Counts {
            counts(&[("alpha", u64::from(n))])
        }

        fn upstreams(&mut self, _: &str) -> Result<Vec<UpstreamRef>, NoVerdict> {
            Ok(vec![up("alpha", 1, true)])
        }
    }

    impl SeedCx for NoSeedEndpoint {
        async fn seed_picks(&mut self, seed: Option<u64>) -> Result<(), String> {
            self.seeded.push(seed);
            Err("gateway[0] has no seed endpoint: PUT /actuator/seed answered 404".into())
        }
    }

    /// On a gateway without the seed endpoint the check runs unseeded, says so, and does not
    /// try to clear a seed it never set.
    #[test]
    fn a_gateway_without_the_endpoint_runs_unseeded_and_says_so() {
        let spec: DistributionSpec = serde_norway::from_str(
            "{ request: { path: /x }, selector: s, requests: 10, seed: 7 }",
        )
        .unwrap();
        let mut cx = NoSeedEndpoint { seeded: vec![] };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let Ok(v) = rt.block_on(spec.observe(&mut cx)) else {
            panic!("no verdict")
        };
        assert!(v.passed(), "{:?}", v.failures);
        assert_eq!(cx.seeded, vec![Some(7)]);
        let Measurements::Distribution(s) = v.measurements else {
            panic!()
        };
        assert_eq!(s.seed, Some(7));
        assert!(
            s.summary().ends_with(
                "seed 7 not applied, ran unseeded (gateway[0] has no seed endpoint: PUT \
                 /actuator/seed answered 404)"
            ),
            "{}",
            s.summary()
        );
    }
}
