//! The scenario file's shape (docs/scenarios.md). Unknown keys and values fail at parse time.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use model::{
    ContextMappingRuleHandle, DivideRuleHandle, LoadBalance, Operator, ParamType, RetryStrategy,
    SyncMode,
};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;

mod behaviour;
mod check;
mod clock;
mod logs;
mod network;
mod regression;
pub(crate) mod request;
mod resource;
mod run_modes;
mod setup;
mod step;
mod topology;
mod traffic;
mod upstream;
mod wait;

pub use behaviour::*;
pub use check::*;
pub use clock::*;
pub use logs::*;
pub use model::SyncFaultKind;
pub use network::*;
pub use regression::*;
pub use request::*;
pub use resource::*;
pub use run_modes::*;
pub use setup::*;
pub use step::*;
pub use topology::*;
pub use traffic::*;
pub use upstream::*;
pub use wait::*;

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Unique name; tests are named `<name>@<mode>`.
    pub name: String,
    /// What the scenario proves.
    #[serde(default)]
    pub description: String,
    /// The conformance features the scenario exercises (the closed list in
    /// `conformance/features.yaml`); they decide the profiles it belongs to (`gantry run
    /// --profile`, conformance/README.md).
    #[serde(default)]
    #[schemars(schema_with = "features_schema")]
    pub features: Vec<String>,
    /// Sync modes this scenario runs under.
    pub modes: Vec<SyncMode>,
    /// Backends this scenario runs on (default: every backend). A scenario that depends on
    /// where the client runs (e.g. `ip = 127.0.0.1`) names only `host`.
    #[serde(default = "every_backend")]
    #[schemars(schema_with = "backends_schema", default = "every_backend_names")]
    pub backends: Vec<crate::BackendKind>,
    /// Servers the case needs besides admin, gateway and upstreams, started for it in every
    /// mode (e.g. `[redis]`); their addresses fill the placeholders of `setup.plugins`.
    #[serde(default)]
    pub components: Vec<Component>,
    /// How many admins and gateways run, and on which storage (default: one admin on SQLite,
    /// one gateway).
    #[serde(default)]
    pub topology: TopologySpec,
    /// The scenario's upstreams: a name (an echo upstream) or `{ name, behave }`.
    #[serde(default)]
    pub upstreams: Vec<UpstreamDecl>,
    /// What to create on the admin.
    #[serde(default)]
    pub setup: Setup,
    /// The probe that proves the new config is live.
    pub wait: Wait,
    /// Requests and their expected answers.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// Admin changes after the checks, each proven live by its own wait and checks.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// Background traffic across steps: each entry sent from the start of step `from` to
    /// the end of step `until`, judged as one check (`traffic[i]`).
    #[serde(default)]
    pub traffic: Vec<Traffic>,
    /// Extra probes after teardown.
    #[serde(default)]
    pub teardown: Teardown,
    /// The WARN and ERROR lines the admins and gateways may log during the case: any other
    /// fails it (unless the run has `--allow-logs`).
    #[serde(default)]
    pub expect_logs: Vec<ExpectLog>,
    /// What makes the case a named regression (cases/regressions/, docs/regressions.md).
    #[serde(default)]
    pub regression: Option<Regression>,
    /// Run modes (`gantry run --run-mode`) the case opts out of, each with its reason
    /// (reported as the case's skip reason under that mode).
    #[serde(default)]
    pub run_modes: RunModeOptOuts,
    /// What its containers may use: a memory limit per role (docker backend).
    #[serde(default)]
    pub resources: Resources,
}

impl Scenario {
    /// Every expectation the scenario judges answers by: its waits', checks', `during`,
    /// `traffic` and teardown probes'.
    pub fn expectations(&self) -> impl Iterator<Item = &Expect> {
        let checks = self.all_checks().filter_map(|c| c.kind.expect());
        self.probes().map(|p| &p.expect).chain(checks)
    }

    /// Every request the scenario sends the gateway: its waits', `during` and teardown
    /// probes' and its checks' (a check of several requests counted once).
    pub fn requests(&self) -> impl Iterator<Item = &RequestSpec> {
        (self.probes().map(|p| &p.request)).chain(self.all_checks().map(|c| c.kind.request()))
    }

    /// The waits', `during`, `traffic` and teardown probes.
    fn probes(&self) -> impl Iterator<Item = &Probe> {
        let waits = std::iter::once(&self.wait)
            .chain(self.steps.iter().map(|s| &s.wait))
            .flat_map(|w| &w.probes);
        let during = (self.steps.iter().filter_map(|s| s.during.as_ref())).map(|d| &d.load);
        let loads = during.chain(self.traffic.iter().map(|t| &t.load));
        (waits.chain(loads.map(|l| &l.probe))).chain(&self.teardown.probes)
    }

    /// The checks after the wait and those of every step.
    fn all_checks(&self) -> impl Iterator<Item = &Check> {
        (self.checks.iter()).chain(self.steps.iter().flat_map(|s| &s.checks))
    }

    /// The declared upstreams' names, in order.
    pub fn upstream_names(&self) -> impl Iterator<Item = &str> {
        self.upstreams.iter().map(|u| u.name.as_str())
    }
}

pub(crate) fn three() -> u32 {
    3
}

fn ten_ms() -> Duration {
    Duration::from_millis(10)
}

pub(crate) fn ten_s() -> Duration {
    Duration::from_secs(10)
}

pub(crate) fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s)
        .map_err(|e| serde::de::Error::custom(format!("invalid duration `{s}`: {e}")))
}

/// How a duration is written: humantime text (`10ms`, `1.5s`, `1m 30s`). Stands for the
/// `Duration` fields in the schema (they deserialize with [`duration`]).
pub(crate) struct DurationText;

impl JsonSchema for DurationText {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A duration: numbers with units, e.g. `10ms`, `1.5s`, `1m 30s` (units: ns, us, µs, ms, s, m, h, d, and their long names).",
            "type": "string",
            "pattern": r"^\s*([0-9]+(\.[0-9]+)?\s*[A-Za-zµ]+\s*)+$",
        })
    }
}

fn ten_ms_text() -> &'static str {
    "10ms"
}

pub(crate) fn ten_s_text() -> &'static str {
    "10s"
}

pub(crate) fn fifty_ms_text() -> &'static str {
    "50ms"
}

pub(crate) fn one_ms_text() -> &'static str {
    "1ms"
}

/// `backends`: the backend names (`crate::BackendKind` lives with the backends).
fn backends_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": ["host", "docker", "swarm", "external"] },
    })
}

/// `features`: the names of the closed list, as an enum.
fn features_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = (crate::conformance::catalog().features.iter())
        .map(|f| f.name.as_str())
        .collect();
    json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": names },
        "uniqueItems": true,
    })
}

fn every_backend_names() -> [&'static str; 4] {
    ["host", "docker", "swarm", "external"]
}

pub(crate) fn opt_duration<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// A limit left out is no limit; `null` is not a duration, so it is no default either.
pub(crate) fn no_null_defaults(schema: &mut Schema) {
    let properties = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut);
    for property in properties.into_iter().flat_map(|p| p.values_mut()) {
        if let Some(p) = property.as_object_mut()
            && p.get("default").is_some_and(serde_json::Value::is_null)
        {
            p.remove("default");
        }
    }
}

fn every_backend() -> Vec<crate::BackendKind> {
    vec![
        crate::BackendKind::Host,
        crate::BackendKind::Docker,
        crate::BackendKind::Swarm,
        crate::BackendKind::External,
    ]
}
