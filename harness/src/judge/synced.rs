//! The synced judge: the gateway holds a setup selector with exactly these upstreams and
//! weights, as its `GET /actuator/selectorData` shows (gantry's gateway serves it, and so does
//! ShenYu's: `[{pluginName: [SelectorData]}]`, the divide upstreams in each selector's
//! `handle`). The selector is found by the id the admin gave it; each upstream by the address
//! the case routes to (`upstreamUrl`). What the gateway holds arrives by sync, so the dump is
//! read until it matches or `within` passes; then the check fails with what it held last. A
//! gateway that serves no such dump skips the check.

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use model::DivideUpstream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ValidateCx};
use super::sync_status::POLL_EVERY;
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::{DurationText, opt_duration};

/// The default `within`.
const WITHIN: Duration = Duration::from_secs(10);

/// The gateway's dump of the selectors it holds.
pub(crate) const SELECTOR_DATA_PATH: &str = "/actuator/selectorData";

/// `synced:` the gateway holds the setup selector `selector` with exactly the upstreams of
/// `weights`, each with its weight, e.g. `synced: { selector: split, weights: { alpha: 80,
/// beta: 20 } }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncedSpec {
    /// The selector, by name (made by setup or a `createSelector`).
    pub selector: String,
    /// Every upstream the gateway must hold for it (scenario upstream names), with its
    /// weight; an upstream it holds beyond these is a miss too.
    pub weights: BTreeMap<String, i32>,
    /// How long the gateway's dump is read for them (default 10s).
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub within: Option<Duration>,
}

impl SyncedSpec {
    /// How long the dump is read.
    pub(crate) fn within(&self) -> Duration {
        self.within.unwrap_or(WITHIN)
    }
}

/// The expected upstreams of one selector on the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncedJudge<'a> {
    /// The selector's name.
    pub selector: &'a str,
    /// The id the admin gave it.
    pub id: &'a str,
    /// Upstream name → weight.
    pub weights: &'a BTreeMap<String, i32>,
    /// Address the gateway routes to (`host:port`) → scenario upstream name.
    pub names: &'a BTreeMap<String, String>,
}

/// What the gateway held last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Dumps read.
    pub reads: u32,
    /// The selector's upstreams and weights in the last dump (absent: it held no such
    /// selector).
    pub held: Option<BTreeMap<String, i32>>,
}

impl SyncedJudge<'_> {
    /// The selector's upstreams (by name; an address of no upstream of the case as it is)
    /// and weights in `dump`; `None` when it holds no selector with that id. `Err`: the dump
    /// or the selector's handle is not what a gateway serves.
    fn held(&self, dump: &serde_json::Value) -> Result<Option<BTreeMap<String, i32>>, String> {
        // ShenYu's shape is a one-element array around the map; accept the bare map too.
        let map = match dump {
            serde_json::Value::Array(items) => items.first(),
            other => Some(other),
        }
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| format!("{SELECTOR_DATA_PATH} is not a map of plugins to selectors"))?;
        let selector = (map.values())
            .filter_map(serde_json::Value::as_array)
            .flatten()
            .find(|s| s["id"].as_str() == Some(self.id));
        let Some(selector) = selector else {
            return Ok(None);
        };
        let handle = selector["handle"].as_str().unwrap_or_default();
        let upstreams = DivideUpstream::parse_list(handle)
            .map_err(|e| format!("its handle {handle:?} is not a list of upstreams: {e}"))?;
        Ok(Some(
            upstreams
                .into_iter()
                .map(|u| {
                    let name = self.names.get(&u.upstream_url).cloned();
                    (name.unwrap_or(u.upstream_url), u.weight)
                })
                .collect(),
        ))
    }
}

/// `alpha 80, beta 20`.
fn describe(weights: &BTreeMap<String, i32>) -> String {
    if weights.is_empty() {
        return "no upstream".to_owned();
    }
    let parts: Vec<String> = weights.iter().map(|(n, w)| format!("{n} {w}")).collect();
    parts.join(", ")
}

impl Judge for SyncedJudge<'_> {
    /// The gateway's last dump, and how many were read.
    type Observation = (serde_json::Value, u32);

    fn judge(&self, (dump, reads): &Self::Observation) -> Verdict {
        let mut failures = Vec::new();
        let head = format!("selector `{}` (id {})", self.selector, self.id);
        let held = match self.held(dump) {
            Ok(held) => held,
            Err(e) => {
                failures.push(format!("{head}: {e}"));
                None
            }
        };
        match &held {
            Some(held) if held == self.weights => {}
            Some(held) => failures.push(format!(
                "{head}: expected {}, the gateway holds {}",
                describe(self.weights),
                describe(held)
            )),
            None if failures.is_empty() => failures.push(format!(
                "{head}: expected {}, the gateway holds no such selector",
                describe(self.weights)
            )),
            None => {}
        }
        Verdict {
            failures,
            measurements: Measurements::Synced(Stats {
                reads: *reads,
                held,
            }),
        }
    }
}

/// The gateway's dump, as [`CheckSpec::request`]: an actuator path, which no selector routes.
static DUMP_REQUEST: LazyLock<RequestSpec> = LazyLock::new(|| RequestSpec {
    method: "GET".to_owned(),
    path: SELECTOR_DATA_PATH.to_owned(),
    headers: Default::default(),
    query: Default::default(),
    body: None,
});

impl CheckSpec for SyncedSpec {
    fn request(&self) -> &RequestSpec {
        &DUMP_REQUEST
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.selector(&self.selector, at);
        if self.weights.is_empty() {
            cx.problem(
                format!("{at}.weights"),
                "name at least one upstream and its weight".into(),
            );
        }
        for (name, weight) in &self.weights {
            let path = format!("{at}.weights.{name}");
            cx.upstream(name, path.clone());
            if *weight < 0 {
                cx.problem(path, format!("a weight is at least 0, not {weight}"));
            }
        }
        if self.within() < POLL_EVERY {
            cx.problem(
                format!("{at}.within"),
                format!("must be at least {POLL_EVERY:?}"),
            );
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        let held = self.held.as_ref().map_or_else(
            || "no such selector".to_owned(),
            |h| format!("held {}", describe(h)),
        );
        format!("{held} after {} reads", self.reads)
    }
}

/// What the synced check asks of the runner.
pub(crate) trait SyncedCx {
    /// The id the admin gave the setup selector `name`.
    fn selector_id(&mut self, name: &str) -> Result<String, NoVerdict>;

    /// The case's upstreams by the address the gateway routes to (`host:port` → name).
    fn upstreams_by_address(&self) -> BTreeMap<String, String>;

    /// The gateway's [`SELECTOR_DATA_PATH`] dump; `NoVerdict::Skip` when it serves none.
    async fn selector_data(&self) -> Result<serde_json::Value, NoVerdict>;
}

impl<C: SyncedCx> Observe<C> for SyncedSpec {
    /// Reads the dump every [`POLL_EVERY`] until the judge passes or `within` is over.
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let id = cx.selector_id(&self.selector)?;
        let names = cx.upstreams_by_address();
        let judge = SyncedJudge {
            selector: &self.selector,
            id: &id,
            weights: &self.weights,
            names: &names,
        };
        let deadline = tokio::time::Instant::now() + self.within();
        let mut reads = 0;
        loop {
            let dump = cx.selector_data().await?;
            reads += 1;
            let verdict = judge.judge(&(dump, reads));
            if verdict.passed() || tokio::time::Instant::now() >= deadline {
                return Ok(verdict);
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dump(handle: &str) -> serde_json::Value {
        json!([{ "divide": [
            { "id": "7", "name": "other", "handle": "[]" },
            { "id": "11", "name": "gantry-1-split", "handle": handle },
        ] }])
    }

    #[test]
    fn the_held_weights_must_be_the_expected_ones() {
        let weights = BTreeMap::from([("alpha".to_owned(), 80), ("beta".to_owned(), 20)]);
        let names = BTreeMap::from([
            ("127.0.0.1:1001".to_owned(), "alpha".to_owned()),
            ("127.0.0.1:1002".to_owned(), "beta".to_owned()),
        ]);
        let j = SyncedJudge {
            selector: "split",
            id: "11",
            weights: &weights,
            names: &names,
        };
        let right = r#"[{"upstreamUrl":"127.0.0.1:1001","weight":80,"status":true},
                        {"upstreamUrl":"127.0.0.1:1002","weight":20,"status":true}]"#;
        let v = j.judge(&(dump(right), 1));
        assert!(v.passed(), "{:?}", v.failures);
        // The bare map (no array around it) reads the same.
        assert!(j.judge(&(dump(right)[0].clone(), 1)).passed());
        let wrong = right.replace("\"weight\":20", "\"weight\":50");
        let v = j.judge(&(dump(&wrong), 3));
        assert_eq!(
            v.failures,
            ["selector `split` (id 11): expected alpha 80, beta 20, the gateway holds alpha 80, beta 50"]
        );
        assert_eq!(v.measurements.summary(), "held alpha 80, beta 50 after 3 reads");
        let extra = r#"[{"upstreamUrl":"127.0.0.1:1001","weight":80},{"upstreamUrl":"127.0.0.1:1002","weight":20},{"upstreamUrl":"10.0.0.9:80","weight":1}]"#;
        let v = j.judge(&(dump(extra), 1));
        assert!(v.failures[0].ends_with("holds 10.0.0.9:80 1, alpha 80, beta 20"), "{:?}", v.failures);
        let gone = json!([{ "divide": [] }]);
        assert_eq!(
            j.judge(&(gone, 1)).failures,
            ["selector `split` (id 11): expected alpha 80, beta 20, the gateway holds no such selector"]
        );
        let v = j.judge(&(dump("not json"), 1));
        assert!(v.failures[0].contains("is not a list of upstreams"), "{:?}", v.failures);
        assert!(!j.judge(&(json!("nope"), 1)).passed());
    }
}
