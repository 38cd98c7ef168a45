//! Checks: each fits its kind, its request, the objects it names and its number ranges (each
//! kind validates its own spec, [`crate::judge::spec::CheckSpec::validate`]).

use super::*;
use crate::judge::spec::ValidateCx;

impl<'s> Validator<'s> {
    /// A check fits its kind: its request is valid, the selector and upstreams it names exist
    /// at that point, and its numbers are in range.
    pub(super) fn check(&mut self, c: &Check, at: &str, selectors: &HashSet<&str>) {
        // A probe's keys stand beside `name`; a judge's under its key.
        let base = match &c.kind {
            CheckKind::Probe(_) => at.to_owned(),
            kind => format!("{at}.{}", kind.name()),
        };
        self.request(c.kind.request(), &format!("{base}.request"));
        c.kind.spec().validate(
            &mut CheckCx {
                validator: self,
                selectors,
            },
            &base,
        );
    }
}

/// The validator as a check kind sees it: with the selectors that exist at the check.
struct CheckCx<'v, 's> {
    validator: &'v mut Validator<'s>,
    selectors: &'v HashSet<&'v str>,
}

impl ValidateCx for CheckCx<'_, '_> {
    fn problem(&mut self, path: String, message: String) {
        self.validator.report(path, message);
    }

    fn warning(&mut self, path: String, message: String) {
        self.validator.warn(path, message);
    }

    fn has_selector(&self, name: &str) -> bool {
        self.selectors.contains(name)
    }

    fn upstream(&mut self, name: &str, path: String) {
        self.validator.known(name, path);
    }

    fn expectation(&mut self, expect: &Expect, path: &str) {
        self.validator.expectation(expect, path);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::{validate, warnings};
    use crate::scenario::ast::Scenario;

    /// A scenario whose wait is `wait` and whose only check is `check` (flow YAML).
    fn scenario(wait: &str, check: &str) -> Scenario {
        let src = format!(
            "
name: t
modes: [websocket]
upstreams: [alpha, beta]
setup:
  selectors:
    - name: s
      plugin: divide
      conditions: [{{ paramType: uri, operator: startsWith, paramValue: /x }}]
      upstreams: [{{ upstream: alpha }}, {{ upstream: beta }}]
      rules:
        - name: r
          conditions: [{{ paramType: uri, operator: startsWith, paramValue: /x }}]
wait: {wait}
checks:
  - {{ name: c, {check} }}
"
        );
        serde_norway::from_str(&src).unwrap_or_else(|e| panic!("{e}\n{src}"))
    }

    const WAIT: &str = "{ probe: { request: { path: /x }, expect: { status: 200 } } }";
    const REQ: &str = "request: { path: /x }";

    /// A bounded field: its schema definition and property, the scenario with the field set
    /// to a value, and the path the validator reports it at.
    type Bounded = (
        &'static str,
        &'static str,
        Box<dyn Fn(u32) -> Scenario>,
        String,
    );

    /// Every field the validator bounds.
    fn bounded() -> Vec<Bounded> {
        let check = |def, prop: &'static str, key: &'static str, other: &'static str| {
            let make =
                move |v: u32| scenario(WAIT, &format!("{key}: {{ {REQ}, {other}{prop}: {v} }}"));
            let path = format!("checks[0].{key}.{prop}");
            (
                def,
                prop,
                Box::new(make) as Box<dyn Fn(u32) -> Scenario>,
                path,
            )
        };
        const CHURN: &str = "expect: { status: 200 }, ";
        vec![
            check(
                "DistributionSpec",
                "requests",
                "distribution",
                "selector: s, ",
            ),
            check(
                "DistributionSpec",
                "concurrency",
                "distribution",
                "selector: s, ",
            ),
            check("CycleSpec", "rounds", "roundRobin", "selector: s, "),
            check("HashSpec", "clients", "hash", "selector: s, "),
            check("HashSpec", "repeat", "hash", "selector: s, "),
            check(
                "SteerSpec",
                "requests",
                "steer",
                "selector: s, slow: alpha, maxShare: 0.5, ",
            ),
            check(
                "SteerSpec",
                "concurrency",
                "steer",
                "selector: s, slow: alpha, maxShare: 0.5, ",
            ),
            check("LatencySpec", "consecutive", "latency", "selector: s, "),
            check("ChurnSpec", "rate", "churn", CHURN),
            check("ChurnSpec", "connections", "churn", CHURN),
            check("ChurnSpec", "requestRate", "churn", CHURN),
            check("ChurnSpec", "held", "churn", CHURN),
            (
                "LatencySpec",
                "changes",
                // Even values only: the bound is the least even count.
                Box::new(|v: u32| {
                    let v = if v % 2 == 1 { v - 1 } else { v };
                    scenario(
                        WAIT,
                        &format!("latency: {{ {REQ}, selector: s, changes: {v} }}"),
                    )
                }),
                "checks[0].latency.changes".into(),
            ),
            (
                "BurstSpec",
                "requests",
                Box::new(|v: u32| {
                    scenario(
                        WAIT,
                        &format!("burst: {{ {REQ}, requests: {v}, statuses: {{ 200: {v} }} }}"),
                    )
                }),
                "checks[0].burst.requests".into(),
            ),
            (
                "ChurnBurst",
                "changes",
                Box::new(|v: u32| {
                    scenario(
                        WAIT,
                        &format!("churn: {{ {REQ}, {CHURN}burst: {{ every: 1s, changes: {v} }} }}"),
                    )
                }),
                "checks[0].churn.burst.changes".into(),
            ),
            (
                "Check",
                "repeat",
                Box::new(|v: u32| {
                    scenario(
                        WAIT,
                        &format!("{REQ}, expect: {{ status: 200 }}, repeat: {v}"),
                    )
                }),
                "checks[0].repeat".into(),
            ),
            (
                "Wait",
                "consecutive",
                Box::new(|v: u32| {
                    scenario(
                        &format!(
                            "{{ probe: {{ {REQ}, expect: {{ status: 200 }} }}, consecutive: {v} }}"
                        ),
                        &format!("{REQ}, expect: {{ status: 200 }}"),
                    )
                }),
                "wait.consecutive".into(),
            ),
        ]
    }

    /// `(definition, property) → (minimum, maximum)` for every property of the generated
    /// schema that states a bound beyond its integer type's (a minimum above 0, a maximum
    /// below the type's largest value).
    fn schema_bounds() -> std::collections::BTreeMap<(String, String), (u64, Option<u64>)> {
        let schema = serde_json::to_value(crate::scenario::schema::schema()).unwrap();
        let mut out = std::collections::BTreeMap::new();
        for (def, body) in schema["definitions"].as_object().unwrap() {
            let Some(props) = body["properties"].as_object() else {
                continue;
            };
            for (prop, p) in props {
                let min = p["minimum"].as_u64().unwrap_or(0);
                let max = p["maximum"]
                    .as_u64()
                    .filter(|m| ![255, 65_535, u64::from(u32::MAX)].contains(m));
                if min > 0 || max.is_some() {
                    out.insert((def.clone(), prop.clone()), (min, max));
                }
            }
        }
        out
    }

    fn problem_at(s: &Scenario, path: &str) -> Option<String> {
        validate(s)
            .into_iter()
            .find(|p| p.path == path)
            .map(|p| p.message)
    }

    /// The schema's bounds are the validator's: each bounded field passes the validator at the
    /// schema's minimum (and maximum) and fails one past it, and the schema bounds no field
    /// that is not listed here.
    #[test]
    fn the_schema_carries_the_validators_bounds() {
        let schema = schema_bounds();
        let mut listed = BTreeSet::new();
        for (def, prop, make, path) in bounded() {
            let key = (def.to_owned(), prop.to_owned());
            let Some(&(min, max)) = schema.get(&key) else {
                panic!("the schema states no bound for {def}.{prop}, the validator does ({path})")
            };
            listed.insert(key);
            let min = u32::try_from(min).unwrap();
            assert_eq!(problem_at(&make(min), &path), None, "{def}.{prop} = {min}");
            if let Some(below) = min.checked_sub(1) {
                assert!(
                    problem_at(&make(below), &path).is_some(),
                    "{def}.{prop} = {below} is below the schema's minimum but the validator takes it"
                );
            }
            if let Some(max) = max {
                let max = u32::try_from(max).unwrap();
                assert_eq!(problem_at(&make(max), &path), None, "{def}.{prop} = {max}");
                assert!(
                    problem_at(&make(max + 1), &path).is_some(),
                    "{def}.{prop} = {} is above the schema's maximum but the validator takes it",
                    max + 1
                );
            }
        }
        let unlisted: Vec<_> = schema.keys().filter(|k| !listed.contains(*k)).collect();
        assert!(
            unlisted.is_empty(),
            "the schema bounds fields no case of this test covers: {unlisted:?}"
        );
    }

    /// A balance check that reads its expectation from the selector's weights is warned about,
    /// one that writes its intent is not, and neither is a problem.
    #[test]
    fn balance_checks_without_intent_are_warned_about() {
        let note = "the expectation is read from the selector's weights, so a mistake in them \
                    passes; write";
        for (check, warned) in [
            (
                format!("distribution: {{ {REQ}, selector: s }}"),
                Some("`shares:`"),
            ),
            (
                format!("roundRobin: {{ {REQ}, selector: s }}"),
                Some("`cycle:` or `weights:`"),
            ),
            (
                format!("distribution: {{ {REQ}, selector: s, shares: {{ alpha: 1 }} }}"),
                None,
            ),
            (
                format!("roundRobin: {{ {REQ}, selector: s, cycle: [alpha, beta] }}"),
                None,
            ),
            (
                format!("roundRobin: {{ {REQ}, selector: s, weights: {{ alpha: 2 }} }}"),
                None,
            ),
        ] {
            let s = scenario(WAIT, &check);
            assert_eq!(validate(&s), vec![], "{check}");
            let found = warnings(&s);
            match warned {
                Some(keys) => {
                    assert_eq!(found.len(), 1, "{check}: {found:?}");
                    assert!(found[0].path.starts_with("checks[0]."), "{:?}", found[0]);
                    assert!(
                        found[0].message.starts_with(note) && found[0].message.contains(keys),
                        "{}",
                        found[0].message
                    );
                }
                None => assert_eq!(found, vec![], "{check}"),
            }
        }
    }

    #[test]
    fn a_round_robin_intent_is_validated() {
        let s = scenario(
            WAIT,
            &format!(
                "roundRobin: {{ {REQ}, selector: s, cycle: [alpha, zeta], weights: {{ alpha: 0 }} }}"
            ),
        );
        let problems: Vec<(String, String)> = validate(&s)
            .into_iter()
            .map(|p| (p.path, p.message))
            .collect();
        assert!(
            problems
                .iter()
                .any(|(p, m)| p == "checks[0].roundRobin.weights"
                    && m == "write `cycle` or `weights`, not both"),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|(p, _)| p == "checks[0].roundRobin.cycle[1]"),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|(p, m)| p == "checks[0].roundRobin.weights"
                    && m == "at least one weight must be positive"),
            "{problems:?}"
        );
    }
}
