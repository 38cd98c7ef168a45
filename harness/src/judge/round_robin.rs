//! The round-robin judge: smooth weighted round robin (nginx/Dubbo, ShenYu's
//! `RoundRobinLoadBalancer`, semantics §7), modelled here from the description — per pick each
//! upstream's `current += weight` in list order, the highest `current` wins (strict `>`: ties
//! to the earliest), the winner's `current −= Σweight` — gives one period of
//! `Σweight / gcd(weights)` picks. The observed sequence must follow that cycle from some
//! point in it: balancer state survives earlier requests (the wait probe's), so the judge
//! accepts any rotation, and nothing else.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::label;
use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ObserveCx, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::UpstreamRef;
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::three;

/// `roundRobin:` send `rounds` whole cycles one at a time; the upstreams must follow smooth
/// weighted round robin's cycle over the selector's upstreams, from any point in it.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CycleSpec {
    /// The request.
    pub request: RequestSpec,
    /// The setup selector whose upstreams (weights, order) make the cycle.
    pub selector: String,
    /// Whole cycles to observe (default 3).
    #[serde(default = "three")]
    pub rounds: u32,
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

/// The expected cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CycleJudge {
    /// One period, from the zero state.
    pub cycle: Vec<String>,
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
                vec![format!(
                    "the answers do not follow the weighted cycle [{}] from any point: best \
                     from position {r}, request {} went to {} instead of {}; observed [{}]",
                    self.cycle.join(" "),
                    at + 1,
                    observed.get(at).map_or("nothing", String::as_str),
                    self.cycle
                        .get((r + at) % period.max(1))
                        .map_or("nothing", String::as_str),
                    observed.join(" "),
                )]
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
        cx.at_least(self.rounds, 1, at, "rounds");
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
        let cycle = cycle(&cx.upstreams(&self.selector)?);
        let mut observed = Vec::new();
        for _ in 0..self.rounds as usize * cycle.len() {
            observed.push(label(&cx.send(&self.request).await));
        }
        Ok(CycleJudge { cycle }.judge(&observed))
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
        let j = CycleJudge {
            cycle: seq("a a b a c a a"),
        };
        let v = j.judge(&seq("b a c a a a a b a c a a a a"));
        assert!(v.passed(), "{:?}", v.failures);
        let Measurements::RoundRobin(s) = v.measurements else {
            panic!()
        };
        assert_eq!(s.rotation, Some(2));
    }

    #[test]
    fn a_wrong_cycle_fails_and_names_the_request() {
        let j = CycleJudge {
            cycle: seq("a a b a c a a"),
        };
        // Plain alternation is not the weighted cycle.
        let v = j.judge(&seq("a b a c a b a c"));
        assert_eq!(v.failures.len(), 1);
        assert!(
            v.failures[0].contains("do not follow the weighted cycle [a a b a c a a]"),
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
}
