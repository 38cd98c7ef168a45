//! The round-robin judge: smooth weighted round robin (nginx/Dubbo, ShenYu's
//! `RoundRobinLoadBalancer`, semantics §7), modelled here from the description — per pick each
//! upstream's `current += weight` in list order, the highest `current` wins (strict `>`: ties
//! to the earliest), the winner's `current −= Σweight` — gives one period of
//! `Σweight / gcd(weights)` picks. The observed sequence must follow that cycle from some
//! point in it: balancer state survives earlier requests (the wait probe's), so the judge
//! accepts any rotation, and nothing else.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::label;
use super::spec::{
    CheckSpec, Intent, Measured, NoVerdict, Observe, ObserveCx, ValidateCx, config_note,
};
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::UpstreamRef;
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::three;

/// `roundRobin:` send `rounds` whole cycles one at a time; the upstreams must follow the
/// intended cycle from any point in it: `cycle` as written, or smooth weighted round robin's
/// cycle over the `weights` written (in the selector's upstream order); without either, the
/// cycle the selector's weights give (which cannot catch a mistake in them).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CycleSpec {
    /// The request.
    pub request: RequestSpec,
    /// The setup selector the requests reach; its upstreams' order orders `weights`, and
    /// without `cycle` or `weights` its upstreams (weights, order) make the cycle.
    pub selector: String,
    /// Whole cycles to observe (default 3).
    #[serde(default = "three")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub rounds: u32,
    /// The intended cycle, one period by upstream name (`[alpha, alpha, beta]`); any rotation
    /// of it passes. Instead of `weights`.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub cycle: Option<Vec<String>>,
    /// The intended weights by upstream name (`{alpha: 3, beta: 1}`): the cycle is smooth
    /// weighted round robin's over them, in the selector's upstream order (an upstream left
    /// out gets weight 0). Instead of `cycle`.
    #[serde(default)]
    pub weights: Option<BTreeMap<String, u32>>,
}

/// The selector's `upstreams` re-weighted as `weights` says, in the selector's order (one
/// left out gets 0, and every listed one is enabled); names the selector lacks go last, in
/// name order.
fn reweighted(upstreams: &[UpstreamRef], weights: &BTreeMap<String, u32>) -> Vec<UpstreamRef> {
    let weight = |name: &str| {
        weights
            .get(name)
            .map_or(0, |w| i32::try_from(*w).unwrap_or(i32::MAX))
    };
    let known: Vec<&str> = upstreams.iter().map(|u| u.upstream.as_str()).collect();
    let extra = weights.keys().filter(|n| !known.contains(&n.as_str()));
    (known.iter().copied().chain(extra.map(String::as_str)))
        .map(|name| UpstreamRef {
            upstream: name.to_owned(),
            weight: weight(name),
            status: true,
        })
        .collect()
}

/// One period of smooth weighted round robin over the enabled `upstreams`, in list order,
/// from the zero state (gantry never picks a disabled upstream; one upstream is always it).
pub(crate) fn cycle(upstreams: &[UpstreamRef]) -> Vec<String> {
    let enabled: Vec<(&str, i64)> = upstreams
        .iter()
        .filter(|u| u.status)
        .map(|u| (u.upstream.as_str(), i64::from(u.weight.max(0))))
        .collect();
    let total: i64 = enabled.iter().map(|(_, w)| w).sum();
    let g = enabled.iter().fold(0, |g, (_, w)| gcd(g, *w));
    let period = if g == 0 { 1 } else { total / g };
    let mut current = vec![0i64; enabled.len()];
    let mut out = Vec::new();
    for _ in 0..period {
        let mut best: Option<usize> = None;
        for (i, (_, w)) in enabled.iter().enumerate() {
            current[i] += w;
            if best.is_none_or(|b| current[i] > current[b]) {
                best = Some(i);
            }
        }
        let Some(b) = best else { break };
        current[b] -= total;
        out.push(enabled[b].0.to_owned());
    }
    out
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The expected cycle, where it comes from, and the cycle the selector's weights give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CycleJudge {
    /// One period, from the zero state.
    pub cycle: Vec<String>,
    /// Where `cycle` comes from (`cycle:` or `weights:` written, or the selector's weights).
    pub intent: Intent,
    /// One period of the cycle the selector's weights give (as the case sent them): equal to
    /// `cycle` when that is read from them.
    pub implied: Vec<String>,
}

impl CycleJudge {
    /// The judge of the cycle the selector's `upstreams` give.
    pub(crate) fn from_selector(upstreams: &[UpstreamRef]) -> Self {
        let implied = cycle(upstreams);
        Self {
            cycle: implied.clone(),
            intent: Intent::Config {
                what: "the cycle",
                keys: "`cycle:` or `weights:`",
            },
            implied,
        }
    }

    /// The judge of what `spec` writes (`cycle` or `weights`), beside the selector's
    /// `upstreams`; the selector's cycle when it writes neither.
    pub(crate) fn new(spec: &CycleSpec, upstreams: &[UpstreamRef]) -> Self {
        let from_selector = Self::from_selector(upstreams);
        let (cycle, what) = match (&spec.cycle, &spec.weights) {
            (Some(c), _) => (c.clone(), "the cycle you wrote"),
            (None, Some(w)) => (
                cycle(&reweighted(upstreams, w)),
                "the cycle the weights you wrote give",
            ),
            (None, None) => return from_selector,
        };
        Self {
            cycle,
            intent: Intent::Written(what),
            implied: from_selector.implied,
        }
    }

    /// For a written cycle that the selector's weights do not give (in any rotation): the one
    /// they give, so a failure names both.
    fn weights_disagree(&self) -> Option<String> {
        let n = self.cycle.len();
        let same = self.implied.len() == n
            && (0..n).any(|r| (0..n).all(|i| self.implied[i] == self.cycle[(r + i) % n]));
        (matches!(self.intent, Intent::Written(_)) && !same).then(|| {
            format!(
                "; the selector's weights (as the case sent them to the admin) give [{}]",
                self.implied.join(" ")
            )
        })
    }
}

/// What the round-robin check measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Stats {
    /// One period of the expected cycle.
    pub expected_cycle: Vec<String>,
    /// The upstreams that answered, in order (errors as `HTTP <status>`).
    pub observed: Vec<String>,
    /// Where in the cycle the observation started, if it followed it.
    pub rotation: Option<usize>,
}

impl Judge for CycleJudge {
    /// The upstream (or error description) of each answer, in the order sent.
    type Observation = Vec<String>;

    fn judge(&self, observed: &Vec<String>) -> Verdict {
        let period = self.cycle.len();
        let rotation = (0..period).find(|r| {
            observed
                .iter()
                .enumerate()
                .all(|(i, up)| *up == self.cycle[(r + i) % period])
        });
        let failures = match rotation {
            Some(_) => Vec::new(),
            None => {
                // Name the first divergence from the rotation that lasts longest.
                let (r, at) = (0..period.max(1))
                    .map(|r| {
                        let at = observed
                            .iter()
                            .enumerate()
                            .position(|(i, up)| *up != self.cycle[(r + i) % period])
                            .unwrap_or(observed.len());
                        (r, at)
                    })
                    .max_by_key(|(_, at)| *at)
                    .unwrap_or((0, 0));
                let message = format!(
                    "the answers do not follow {} [{}] from any point: best from position \
                     {r}, request {} went to {} instead of {}; observed [{}]{}",
                    self.intent.compared_with(),
                    self.cycle.join(" "),
                    at + 1,
                    observed.get(at).map_or("nothing", String::as_str),
                    self.cycle
                        .get((r + at) % period.max(1))
                        .map_or("nothing", String::as_str),
                    observed.join(" "),
                    self.weights_disagree().unwrap_or_default(),
                );
                vec![match self.intent.hint() {
                    Some(hint) => format!("{message}; {hint}"),
                    None => message,
                }]
            }
        };
        Verdict {
            failures,
            measurements: Measurements::RoundRobin(Stats {
                expected_cycle: self.cycle.clone(),
                observed: observed.clone(),
                rotation,
            }),
        }
    }
}

impl CheckSpec for CycleSpec {
    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.selector(&self.selector, at);
        cx.min_count(self.rounds, at, "rounds");
        match (&self.cycle, &self.weights) {
            (Some(_), Some(_)) => cx.problem(
                format!("{at}.weights"),
                "write `cycle` or `weights`, not both".to_owned(),
            ),
            (None, None) => cx.warning(at.to_owned(), config_note("`cycle:` or `weights:`")),
            _ => {}
        }
        if let Some(cycle) = &self.cycle {
            if cycle.is_empty() {
                cx.problem(
                    format!("{at}.cycle"),
                    "name at least one upstream".to_owned(),
                );
            }
            for (i, name) in cycle.iter().enumerate() {
                cx.upstream(name, format!("{at}.cycle[{i}]"));
            }
        }
        if let Some(weights) = &self.weights {
            for name in weights.keys() {
                cx.upstream(name, format!("{at}.weights.{name}"));
            }
            if weights.values().all(|w| *w == 0) {
                cx.problem(
                    format!("{at}.weights"),
                    "at least one weight must be positive".to_owned(),
                );
            }
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "cycle [{}], {} answers{}",
            self.expected_cycle.join(" "),
            self.observed.len(),
            self.rotation
                .map_or_else(String::new, |r| format!(", from position {r}"))
        )
    }
}

impl<C: ObserveCx> Observe<C> for CycleSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let judge = CycleJudge::new(self, &cx.upstreams(&self.selector)?);
        let mut observed = Vec::new();
        for _ in 0..self.rounds as usize * judge.cycle.len() {
            observed.push(label(&cx.send(&self.request).await));
        }
        Ok(judge.judge(&observed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ups(spec: &[(&str, i32, bool)]) -> Vec<UpstreamRef> {
        spec.iter()
            .map(|(n, w, s)| UpstreamRef {
                upstream: (*n).to_owned(),
                weight: *w,
                status: *s,
            })
            .collect()
    }

    fn seq(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_cycles_of_the_semantics_doc() {
        assert_eq!(
            cycle(&ups(&[("a", 5, true), ("b", 1, true), ("c", 1, true)])),
            seq("a a b a c a a")
        );
        assert_eq!(cycle(&ups(&[("a", 50, true), ("b", 50, true)])), seq("a b"));
        assert_eq!(cycle(&ups(&[("a", 0, true), ("b", 0, true)])), seq("a"));
        assert_eq!(
            cycle(&ups(&[("a", 2, true), ("x", 9, false), ("b", 1, true)])),
            seq("a b a")
        );
    }

    #[test]
    fn any_rotation_passes() {
        let j = CycleJudge::from_selector(&ups(&[("a", 5, true), ("b", 1, true), ("c", 1, true)]));
        let v = j.judge(&seq("b a c a a a a b a c a a a a"));
        assert!(v.passed(), "{:?}", v.failures);
        let Measurements::RoundRobin(s) = v.measurements else {
            panic!()
        };
        assert_eq!(s.rotation, Some(2));
    }

    #[test]
    fn a_wrong_cycle_fails_and_names_the_request() {
        let j = CycleJudge::from_selector(&ups(&[("a", 5, true), ("b", 1, true), ("c", 1, true)]));
        // Plain alternation is not the weighted cycle.
        let v = j.judge(&seq("a b a c a b a c"));
        assert_eq!(v.failures.len(), 1);
        assert!(
            v.failures[0].contains(
                "do not follow the cycle the selector's weights imply (as the case sent them \
                 to the admin) [a a b a c a a]"
            ),
            "{}",
            v.failures[0]
        );
        assert!(
            v.failures[0].ends_with(
                "the expectation is read from the selector's weights, so a mistake in them \
                 passes; write `cycle:` or `weights:` with the outcome you intend to catch one"
            ),
            "{}",
            v.failures[0]
        );
        // One swapped pick in the third period.
        let v = j.judge(&seq("a a b a c a a a a b a c a a a a c a b a a"));
        assert!(
            v.failures[0].contains("request 17 went to c instead of b"),
            "{}",
            v.failures[0]
        );
    }

    fn spec(cycle: Option<&str>, weights: Option<&[(&str, u32)]>) -> CycleSpec {
        CycleSpec {
            request: RequestSpec {
                method: "GET".into(),
                path: "/lb/rr/x".into(),
                headers: BTreeMap::new(),
                query: BTreeMap::new(),
                body: None,
            },
            selector: "rr".into(),
            rounds: 3,
            cycle: cycle.map(seq),
            weights: weights.map(|w| w.iter().map(|(n, w)| ((*n).to_owned(), *w)).collect()),
        }
    }

    /// Weights swapped in the selector (1:3 where 3:1 is meant): read from the selector the
    /// mistake passes; the intended `weights` or `cycle` catch it, naming the expected, the
    /// observed and the selector's cycle.
    #[test]
    fn written_intent_catches_swapped_weights() {
        let swapped = ups(&[("alpha", 1, true), ("beta", 3, true)]);
        let observed = seq("beta alpha beta beta beta alpha beta beta");
        assert!(CycleJudge::from_selector(&swapped).judge(&observed).passed());
        let by_weights = CycleJudge::new(&spec(None, Some(&[("alpha", 3), ("beta", 1)])), &swapped);
        assert_eq!(by_weights.cycle, seq("alpha alpha beta alpha"));
        let by_cycle = CycleJudge::new(&spec(Some("alpha alpha beta alpha"), None), &swapped);
        for (j, what) in [
            (by_weights, "the cycle the weights you wrote give [alpha alpha beta alpha]"),
            (by_cycle, "the cycle you wrote [alpha alpha beta alpha]"),
        ] {
            let v = j.judge(&observed);
            assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
            let f = &v.failures[0];
            assert!(f.contains(&format!("do not follow {what} from any point")), "{f}");
            assert!(f.contains("observed [beta alpha beta beta beta alpha beta beta]"), "{f}");
            assert!(
                f.ends_with(
                    "; the selector's weights (as the case sent them to the admin) give \
                     [beta alpha beta beta]"
                ),
                "{f}"
            );
        }
    }

    #[test]
    fn written_weights_follow_the_selector_order_and_leave_out_zero() {
        let sel = ups(&[("b", 1, true), ("x", 4, false), ("a", 1, true)]);
        // Ties go to the earliest in the selector's order: b before a; x is left out.
        let j = CycleJudge::new(&spec(None, Some(&[("a", 1), ("b", 1)])), &sel);
        assert_eq!(j.cycle, seq("b a"));
        // A written cycle the selector also gives (in a rotation) names no disagreement.
        let j = CycleJudge::new(&spec(Some("a b"), None), &sel);
        let v = j.judge(&seq("a a"));
        assert!(!v.failures[0].contains("selector's weights"), "{}", v.failures[0]);
    }
}
