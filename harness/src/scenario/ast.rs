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

pub use model::SyncFaultKind;

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Unique name; tests are named `<name>@<mode>`.
    pub name: String,
    /// What the scenario proves.
    #[serde(default)]
    pub description: String,
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
    /// Extra probes after teardown.
    #[serde(default)]
    pub teardown: Teardown,
}

impl Scenario {
    /// Every expectation the scenario judges answers by: its waits', checks', `during` and
    /// teardown probes'.
    pub fn expectations(&self) -> impl Iterator<Item = &Expect> {
        let checks = self.all_checks().filter_map(|c| match &c.kind {
            CheckKind::Probe(p) => Some(&p.expect),
            CheckKind::Churn(c) => Some(&c.expect),
            _ => None,
        });
        self.probes().map(|p| &p.expect).chain(checks)
    }

    /// Every request the scenario sends the gateway: its waits', `during` and teardown
    /// probes' and its checks' (a check of several requests counted once).
    pub fn requests(&self) -> impl Iterator<Item = &RequestSpec> {
        (self.probes().map(|p| &p.request)).chain(self.all_checks().map(|c| c.kind.request()))
    }

    /// The waits', `during` and teardown probes.
    fn probes(&self) -> impl Iterator<Item = &Probe> {
        let waits = std::iter::once(&self.wait)
            .chain(self.steps.iter().map(|s| &s.wait))
            .flat_map(|w| &w.probes);
        (waits.chain(self.steps.iter().filter_map(|s| s.during.as_ref())))
            .chain(&self.teardown.probes)
    }

    /// The checks after the wait and those of every step.
    fn all_checks(&self) -> impl Iterator<Item = &Check> {
        (self.checks.iter()).chain(self.steps.iter().flat_map(|s| &s.checks))
    }

    /// Whether an expectation names the selector or rule that must match (`selector:`,
    /// `rule:`), which the gateway's `x-gantry-selector-id` / `x-gantry-rule-id` show.
    pub fn expects_route_names(&self) -> bool {
        self.expectations()
            .any(|e| e.selector.is_some() || e.rule.is_some())
    }

    /// The declared upstreams' names, in order.
    pub fn upstream_names(&self) -> impl Iterator<Item = &str> {
        self.upstreams.iter().map(|u| u.name.as_str())
    }
}

/// One entry of `upstreams`: `alpha` (an echo upstream) or `{ name: slow, behave: [...] }`.
/// Read by hand rather than as an untagged enum, so that a wrong key in the map is reported
/// as such.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpstreamDecl {
    /// The upstream's name (`x-gantry-upstream`).
    pub name: String,
    /// How it answers besides echoing (empty: an echo upstream).
    pub behave: Vec<crate::upstream::Behaviour>,
}

impl UpstreamDecl {
    /// An echo upstream.
    pub fn echo(name: &str) -> UpstreamDecl {
        UpstreamDecl {
            name: name.to_owned(),
            behave: Vec::new(),
        }
    }
}

/// The map form of an `upstreams` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UpstreamWithBehaviour {
    /// The upstream's name (`x-gantry-upstream`).
    name: String,
    /// How it answers: the first entry whose `path` and `method` match a request decides; a
    /// request no entry matches gets the echo.
    #[serde(default)]
    behave: Vec<crate::upstream::Behaviour>,
}

impl<'de> Deserialize<'de> for UpstreamDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UpstreamDecl;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an upstream name or `{ name, behave }`")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<UpstreamDecl, E> {
                Ok(UpstreamDecl::echo(name))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<UpstreamDecl, A::Error> {
                let u = UpstreamWithBehaviour::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(UpstreamDecl {
                    name: u.name,
                    behave: u.behave,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl JsonSchema for UpstreamDecl {
    fn schema_name() -> Cow<'static, str> {
        "UpstreamDecl".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let object = generator.subschema_for::<UpstreamWithBehaviour>();
        json_schema!({
            "description": "An upstream: a name (an echo upstream) or `{ name, behave }`.",
            "anyOf": [{ "type": "string" }, object],
        })
    }
}

/// A server a case asks for with `components`, started per case beside the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    /// A Redis server (`redis-server`); its `host:port` as the gateway reaches it is
    /// `${redis.url}`.
    Redis,
}

impl Component {
    /// The name in case files, `GANTRY_REQUIRE` and messages.
    pub fn name(self) -> &'static str {
        match self {
            Component::Redis => "redis",
        }
    }
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `topology`: the admins and gateways of a case. Every gateway lists every admin URL, in
/// order (it fails over from one to the next); the admins share one database.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TopologySpec {
    /// Where the admins keep their data: one SQLite file they share (default), or a
    /// throwaway PostgreSQL cluster the harness starts (Debian `postgresql`).
    #[serde(default)]
    pub storage: Storage,
    /// How many admins (1 to 3).
    #[serde(default = "one_process")]
    pub admins: u8,
    /// How many gateways (1 to 4).
    #[serde(default = "one_process")]
    pub gateways: u8,
    /// Gateways (by index) not started before setup: a step's `start: gateway[i]` starts
    /// them, and they must converge by a full sync on their first connection.
    #[serde(default)]
    pub late: Vec<u8>,
}

fn one_process() -> u8 {
    1
}

impl Default for TopologySpec {
    fn default() -> Self {
        Self {
            storage: Storage::Sqlite,
            admins: 1,
            gateways: 1,
            late: Vec::new(),
        }
    }
}

impl TopologySpec {
    /// The most admins a case may ask for.
    pub const MAX_ADMINS: u8 = 3;
    /// The most gateways a case may ask for.
    pub const MAX_GATEWAYS: u8 = 4;

    /// Whether it is the default: one admin on SQLite, one gateway started before setup.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Where the admins keep their data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// One SQLite file in the topology's directory, shared by the admins (they watch it for
    /// each other's changes).
    #[default]
    Sqlite,
    /// A PostgreSQL cluster the harness starts on a free port (the admins notify each other
    /// with LISTEN/NOTIFY).
    Postgres,
}

impl Storage {
    /// The name in case files, `GANTRY_REQUIRE` and messages.
    pub fn name(self) -> &'static str {
        match self {
            Storage::Sqlite => "sqlite",
            Storage::Postgres => "postgres",
        }
    }
}

/// The config a scenario creates.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Setup {
    /// Plugin settings applied before the selectors (`PUT /plugin/{id}`), restored at the end.
    #[serde(default)]
    pub plugins: Vec<PluginSetup>,
    /// Selectors, each with its rules.
    #[serde(default)]
    pub selectors: Vec<SelectorSpec>,
    /// Client registrations through the admin's registration center, made after the
    /// selectors.
    #[serde(default)]
    pub registrations: Vec<RegistrationSpec>,
}

/// A plugin's config and enabled flag, set during setup.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PluginSetup {
    /// Plugin name, e.g. `rateLimiter`.
    pub name: String,
    /// The plugin's config, a JSON object as text; placeholders such as `${redis.url}` are
    /// replaced by the addresses of the case's `components` when the case runs.
    #[serde(default)]
    pub config: Option<String>,
    /// The new enabled flag (unchanged when absent).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// What a ShenYu http client registers at start (protocol §9): metadata per API path, then
/// its address. The admin creates the divide selector `contextPath` (with a rule per path)
/// and the contextPath plugin's selector and rule that strip the context path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegistrationSpec {
    /// Application name; defaults to the scenario name.
    #[serde(default)]
    pub app_name: Option<String>,
    /// The application's context path, e.g. `/http`.
    pub context_path: String,
    /// The upstream (a name from `upstreams`) that registers its address.
    pub upstream: String,
    /// API paths, e.g. `/http/order/findById` or `/http/order/{id}/name`.
    pub paths: Vec<String>,
}

/// `custom` or `full` (ShenYu's selector type names).
// Serialize only so that the schema shows the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SelectorKind {
    /// Conditions decide.
    #[default]
    Custom,
    /// Matches every request.
    Full,
}

/// `and` or `or`.
// Serialize only so that the schema shows the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MatchModeName {
    /// All conditions must match.
    #[default]
    And,
    /// One condition must match.
    Or,
}

impl From<MatchModeName> for model::MatchMode {
    fn from(m: MatchModeName) -> Self {
        match m {
            MatchModeName::And => model::MatchMode::And,
            MatchModeName::Or => model::MatchMode::Or,
        }
    }
}

fn every_backend() -> Vec<crate::BackendKind> {
    vec![
        crate::BackendKind::Host,
        crate::BackendKind::Docker,
        crate::BackendKind::External,
    ]
}

fn one() -> i32 {
    1
}

fn yes() -> bool {
    true
}

fn fifty() -> i32 {
    50
}

/// A selector to create.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SelectorSpec {
    /// Display name (unique within the scenario).
    pub name: String,
    /// Plugin name, e.g. `divide`.
    pub plugin: String,
    /// Selector type.
    #[serde(default, rename = "type")]
    pub kind: SelectorKind,
    /// How conditions combine.
    #[serde(default)]
    pub match_mode: MatchModeName,
    /// Ordering key.
    #[serde(default = "one")]
    pub sort: i32,
    /// Whether rules are evaluated.
    #[serde(default = "yes")]
    pub continued: bool,
    /// Enabled.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Conditions.
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    /// Divide upstreams, by scenario upstream name.
    #[serde(default)]
    pub upstreams: Vec<UpstreamRef>,
    /// Rules.
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
}

/// A condition, as in ShenYu.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConditionSpec {
    /// Where the value comes from.
    pub param_type: ParamType,
    /// How it compares.
    pub operator: Operator,
    /// Header, query or cookie name; defaults to `/`.
    #[serde(default)]
    pub param_name: Option<String>,
    /// The value compared with.
    #[serde(default)]
    pub param_value: String,
}

impl ConditionSpec {
    /// The admin's wire shape.
    pub fn to_dto(&self) -> model::ConditionDto {
        model::ConditionDto::new(
            self.param_type.as_str(),
            self.operator.as_str(),
            self.param_name.as_deref().unwrap_or("/"),
            &self.param_value,
        )
    }
}

/// A divide upstream of a selector.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpstreamRef {
    /// A name from the scenario's `upstreams`.
    pub upstream: String,
    /// Load-balancing weight.
    #[serde(default = "fifty")]
    pub weight: i32,
    /// Alive.
    #[serde(default = "yes")]
    pub status: bool,
}

/// A rule to create under its selector.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleSpec {
    /// Display name (unique within its selector).
    pub name: String,
    /// How conditions combine.
    #[serde(default)]
    pub match_mode: MatchModeName,
    /// Ordering key.
    #[serde(default = "one")]
    pub sort: i32,
    /// Enabled.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Conditions.
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    /// Divide rule handle; missing fields take ShenYu's defaults.
    #[serde(default)]
    pub handle: RuleHandleSpec,
    /// The rule handle of a contextPath plugin rule (instead of `handle`).
    #[serde(default)]
    pub context_path: Option<ContextPathSpec>,
    /// The rule handle of a rateLimiter plugin rule (instead of `handle`).
    #[serde(default)]
    pub rate_limiter: Option<RateLimiterSpec>,
}

impl RuleSpec {
    /// The rule's handle JSON: the contextPath or rateLimiter handle when given, else the
    /// divide handle.
    pub fn handle_json(&self) -> String {
        match (&self.context_path, &self.rate_limiter) {
            (Some(cp), _) => serde_json::to_string(&cp.to_handle()),
            (None, Some(rl)) => Ok(rl.to_json()),
            (None, None) => serde_json::to_string(&self.handle.to_handle()),
        }
        .expect("handles serialise")
    }
}

/// A rateLimiter rule handle (ShenYu `RateLimiterHandle`, semantics §8).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateLimiterSpec {
    /// `tokenBucket`, `slidingWindow`, `leakyBucket` or `concurrent`.
    pub algorithm_name: String,
    /// Tokens (requests) per second.
    pub replenish_rate: f64,
    /// Bucket size, window limit or concurrency limit.
    pub burst_capacity: f64,
    /// Tokens one request takes (default 1).
    pub request_count: Option<f64>,
    /// `WHOLE_KEY_RESOLVER` or `REMOTE_ADDRESS_KEY_RESOLVER`; absent: one limit per rule.
    pub key_resolver_name: Option<String>,
}

impl RateLimiterSpec {
    /// The wire handle, as ShenYu's dashboard sends it.
    pub fn to_json(&self) -> String {
        let mut handle = serde_json::json!({
            "algorithmName": self.algorithm_name,
            "replenishRate": self.replenish_rate,
            "burstCapacity": self.burst_capacity,
            "requestCount": self.request_count.unwrap_or(1.0),
        });
        if let Some(resolver) = &self.key_resolver_name {
            handle["keyResolverName"] = resolver.clone().into();
        }
        handle.to_string()
    }

    /// What the admin would refuse: the field and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let handle = model::RateLimiterHandle::parse(&self.to_json())
            .map_err(|e| ("algorithmName", e.to_string()))?;
        handle.validate().map(|_| ())
    }
}

/// A contextPath rule handle (protocol §11.4); every field optional.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContextPathSpec {
    /// Leading part cut from the path before forwarding.
    pub context_path: Option<String>,
    /// Put before the remaining path.
    pub add_prefix: Option<String>,
    /// What later plugins match on instead of `contextPath`.
    pub rewrite_context_path: Option<String>,
    /// Share of requests (0–100) that get `rewriteContextPath`.
    pub percentage: Option<i32>,
}

impl ContextPathSpec {
    /// The wire handle.
    pub fn to_handle(&self) -> ContextMappingRuleHandle {
        ContextMappingRuleHandle {
            context_path: self.context_path.clone(),
            add_prefix: self.add_prefix.clone(),
            add_prefixed: None,
            rewrite_context_path: self.rewrite_context_path.clone(),
            percentage: self.percentage,
        }
    }
}

/// A divide rule handle with every field optional.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleHandleSpec {
    /// Balancer.
    pub load_balance: Option<LoadBalance>,
    /// Retry strategy.
    pub retry_strategy: Option<RetryStrategy>,
    /// Retry count.
    pub retry: Option<i32>,
    /// Upstream timeout in ms.
    pub timeout: Option<i64>,
    /// Maximum summed header bytes.
    pub header_max_size: Option<i64>,
    /// Maximum Content-Length.
    pub request_max_size: Option<i64>,
}

impl RuleHandleSpec {
    /// The full handle with ShenYu's defaults filled in.
    pub fn to_handle(&self) -> DivideRuleHandle {
        let d = DivideRuleHandle::default();
        DivideRuleHandle {
            load_balance: self.load_balance.unwrap_or(d.load_balance),
            retry_strategy: self.retry_strategy.unwrap_or(d.retry_strategy),
            retry: self.retry.unwrap_or(d.retry),
            timeout: self.timeout.unwrap_or(d.timeout),
            header_max_size: self.header_max_size.unwrap_or(d.header_max_size),
            request_max_size: self.request_max_size.unwrap_or(d.request_max_size),
        }
    }
}

/// The convergence wait: one probe (`probe:`) or several (`probes:`), all of which must pass
/// together `consecutive` times in a row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawWait")]
pub struct Wait {
    /// The probes that must all pass (one or more).
    pub probes: Vec<Probe>,
    /// Whether the file lists them (`probes:`) rather than giving one (`probe:`): decides the
    /// field paths of messages.
    pub listed: bool,
    /// Passes in a row needed.
    pub consecutive: u32,
    /// Poll period (at most 50ms).
    pub interval: Duration,
    /// Hard deadline.
    pub timeout: Duration,
}

impl Wait {
    /// The field path of probe `i` below the wait (`probe` or `probes[i]`).
    pub fn probe_path(&self, i: usize) -> String {
        match self.listed {
            true => format!("probes[{i}]"),
            false => "probe".to_owned(),
        }
    }
}

/// The convergence wait as written: `probe` or `probes`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawWait {
    /// The probe that must pass.
    probe: Option<Probe>,
    /// Several probes that must all pass (instead of `probe`), e.g. both routes a change
    /// touches.
    probes: Option<Vec<Probe>>,
    /// Passes in a row needed (every probe passing is one pass).
    #[serde(default = "three")]
    consecutive: u32,
    /// Poll period (at most 50ms).
    #[serde(default = "ten_ms", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "ten_ms_text")]
    interval: Duration,
    /// Hard deadline.
    #[serde(default = "ten_s", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "ten_s_text")]
    timeout: Duration,
}

impl TryFrom<RawWait> for Wait {
    type Error = String;

    fn try_from(raw: RawWait) -> Result<Self, String> {
        let (probes, listed) = match (raw.probe, raw.probes) {
            (Some(p), None) => (vec![p], false),
            (None, Some(ps)) if !ps.is_empty() => (ps, true),
            (None, Some(_)) => return Err("`probes` needs at least one probe".to_owned()),
            (None, None) => return Err("give `probe` or `probes`".to_owned()),
            (Some(_), Some(_)) => {
                return Err("give `probe` or `probes`, not both".to_owned());
            }
        };
        Ok(Wait {
            probes,
            listed,
            consecutive: raw.consecutive,
            interval: raw.interval,
            timeout: raw.timeout,
        })
    }
}

/// In the schema a wait is what [`RawWait`] reads, with exactly one of `probe` and `probes`.
impl JsonSchema for Wait {
    fn schema_name() -> Cow<'static, str> {
        "Wait".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = RawWait::json_schema(generator);
        schema.insert(
            "description".into(),
            "The convergence wait: `probe` or `probes` (all must pass), polled until they pass \
             `consecutive` times in a row."
                .into(),
        );
        schema.insert(
            "oneOf".into(),
            serde_json::json!([{ "required": ["probe"] }, { "required": ["probes"] }]),
        );
        schema
    }
}

fn three() -> u32 {
    3
}

fn ten_ms() -> Duration {
    Duration::from_millis(10)
}

fn ten_s() -> Duration {
    Duration::from_secs(10)
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
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

fn ten_s_text() -> &'static str {
    "10s"
}

fn fifty_ms_text() -> &'static str {
    "50ms"
}

fn one_ms_text() -> &'static str {
    "1ms"
}

/// `backends`: the backend names (`crate::BackendKind` lives with the backends).
fn backends_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": ["host", "docker", "external"] },
    })
}

fn every_backend_names() -> [&'static str; 3] {
    ["host", "docker", "external"]
}

/// A request and what its answer must be.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probe {
    /// The request.
    pub request: RequestSpec,
    /// The expectation.
    pub expect: Expect,
}

/// A named check: one kind of judgement (docs/scenarios.md, "Checks"). In a file a check is
/// `name` plus either `request` + `expect` (a probe) or exactly one judge key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawCheck")]
pub struct Check {
    /// What it proves.
    pub name: String,
    /// What is judged.
    pub kind: CheckKind,
}

/// The kinds of check, each judged by its module under `harness/src/judge/`.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckKind {
    /// One request (or `repeat` of them), each answer judged against `expect`.
    Probe(ProbeCheck),
    /// Counts per upstream against the configured shares (χ² goodness of fit).
    Distribution(DistributionSpec),
    /// Round robin's exact weighted cycle, up to rotation.
    RoundRobin(CycleSpec),
    /// Consistent hashing on the client address: each client's upstream as ShenYu's ring says.
    Hash(HashSpec),
    /// A slow upstream gets at most a share of concurrent traffic (leastActive,
    /// shortestResponse, p2c).
    Steer(SteerSpec),
    /// Sync latency over repeated changes: admin commit → gateway applied → probe passes.
    Latency(LatencySpec),
    /// Requests sent all at once; the answers counted per HTTP status must be exactly the
    /// expected counts (a concurrency limit's allowed/denied split).
    Burst(BurstSpec),
    /// Steady load on a stable route, first without and then during churn on other routes:
    /// every answer must meet the expectation.
    Churn(ChurnSpec),
}

impl CheckKind {
    /// The key that names the kind in a file (`probe` for request + expect).
    pub fn name(&self) -> &'static str {
        match self {
            CheckKind::Probe(_) => "probe",
            CheckKind::Distribution(_) => "distribution",
            CheckKind::RoundRobin(_) => "roundRobin",
            CheckKind::Hash(_) => "hash",
            CheckKind::Steer(_) => "steer",
            CheckKind::Latency(_) => "latency",
            CheckKind::Burst(_) => "burst",
            CheckKind::Churn(_) => "churn",
        }
    }

    /// The request the check sends (the latency check's probe).
    pub fn request(&self) -> &RequestSpec {
        match self {
            CheckKind::Probe(p) => &p.request,
            CheckKind::Distribution(d) => &d.request,
            CheckKind::RoundRobin(c) => &c.request,
            CheckKind::Hash(h) => &h.request,
            CheckKind::Steer(s) => &s.request,
            CheckKind::Latency(l) => &l.request,
            CheckKind::Burst(b) => &b.request,
            CheckKind::Churn(c) => &c.request,
        }
    }
}

/// A check as written: `name` and the keys of one kind.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCheck {
    /// What the check proves (unique among its checks).
    name: String,
    /// A probe's request (with `expect`).
    request: Option<RequestSpec>,
    /// A probe's expectation (with `request`).
    expect: Option<Expect>,
    /// How many times a probe is sent; every answer must pass (default 1).
    repeat: Option<u32>,
    /// A probe's attempts: how many requests each named upstream must receive for each
    /// request sent (its request journal; host backend only).
    attempts: Option<BTreeMap<String, u32>>,
    /// Counts per upstream against the configured shares (χ² test).
    distribution: Option<DistributionSpec>,
    /// Round robin's exact weighted cycle, up to rotation.
    round_robin: Option<CycleSpec>,
    /// Each client address reaches its hash ring successor.
    hash: Option<HashSpec>,
    /// A slow upstream gets at most a share of concurrent traffic.
    steer: Option<SteerSpec>,
    /// Sync latency over repeated changes.
    latency: Option<LatencySpec>,
    /// Requests sent at once, answers counted per status.
    burst: Option<BurstSpec>,
    /// A stable route under load while other routes change.
    churn: Option<ChurnSpec>,
}

/// The judge keys of a check; with the probe (`request` + `expect`) exactly one kind is given.
const JUDGE_KEYS: [&str; 7] = [
    "distribution",
    "roundRobin",
    "hash",
    "steer",
    "latency",
    "burst",
    "churn",
];

/// In the schema a check is what [`RawCheck`] reads, plus what `TryFrom<RawCheck>` enforces:
/// exactly one of the probe (`request` + `expect`, `repeat` only with them) or a judge key.
impl JsonSchema for Check {
    fn schema_name() -> Cow<'static, str> {
        "Check".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = RawCheck::json_schema(generator);
        schema.insert(
            "description".into(),
            "A named check: `name` plus either a probe (`request` + `expect`, optionally \
             `repeat`) or exactly one judge key."
                .into(),
        );
        one_kind_of_check(&mut schema);
        schema
    }
}

fn one_kind_of_check(schema: &mut Schema) {
    let mut kinds = vec![json_schema!({ "required": ["request", "expect"] })];
    kinds.extend(JUDGE_KEYS.map(|k| json_schema!({ "required": [k] })));
    schema.insert(
        "oneOf".into(),
        serde_json::to_value(kinds).expect("schemas serialise"),
    );
    schema.insert(
        "dependencies".into(),
        serde_json::json!({
            "request": ["expect"],
            "expect": ["request"],
            "repeat": ["request"],
            "attempts": ["request"],
        }),
    );
}

impl TryFrom<RawCheck> for Check {
    type Error = String;

    fn try_from(raw: RawCheck) -> Result<Self, String> {
        let mut kinds: Vec<CheckKind> = Vec::new();
        kinds.extend(raw.distribution.map(CheckKind::Distribution));
        kinds.extend(raw.round_robin.map(CheckKind::RoundRobin));
        kinds.extend(raw.hash.map(CheckKind::Hash));
        kinds.extend(raw.steer.map(CheckKind::Steer));
        kinds.extend(raw.latency.map(CheckKind::Latency));
        kinds.extend(raw.burst.map(CheckKind::Burst));
        kinds.extend(raw.churn.map(CheckKind::Churn));
        let judge_keys = JUDGE_KEYS.join(", ");
        let probe = match (raw.request, raw.expect) {
            (Some(request), Some(expect)) => Some(ProbeCheck {
                request,
                expect,
                repeat: raw.repeat.unwrap_or(1),
                attempts: raw.attempts.unwrap_or_default(),
            }),
            (None, None) if raw.repeat.is_none() && raw.attempts.is_none() => None,
            (Some(_), None) => {
                return Err(format!("check `{}`: `request` needs `expect`", raw.name));
            }
            _ => {
                return Err(format!(
                    "check `{}`: `expect`, `repeat` and `attempts` go with a `request`",
                    raw.name
                ));
            }
        };
        kinds.extend(probe.map(CheckKind::Probe));
        match kinds.len() {
            1 => Ok(Check {
                name: raw.name,
                kind: kinds.remove(0),
            }),
            0 => Err(format!(
                "check `{}` judges nothing: give `request` + `expect`, or one of {judge_keys}",
                raw.name
            )),
            _ => Err(format!(
                "check `{}` has several kinds ({}): one check judges one thing",
                raw.name,
                kinds
                    .iter()
                    .map(CheckKind::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// A request and its expectation, sent `repeat` times (each answer must pass).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeCheck {
    /// The request.
    pub request: RequestSpec,
    /// The expectation.
    pub expect: Expect,
    /// How many times to send it (default 1).
    pub repeat: u32,
    /// Requests each named upstream must receive per request sent (empty: not judged).
    pub attempts: BTreeMap<String, u32>,
}

fn two_thousand() -> u32 {
    2000
}

fn eight() -> u32 {
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

fn sixteen() -> u32 {
    16
}

/// `hash:` requests from `clients` distinct client addresses (127.x.y.z, drawn from the
/// case's seed), each sent `repeat` times: every client must always reach the upstream that
/// ShenYu's hash ring over the selector's upstreams gives its address. Host backend only.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HashSpec {
    /// The request.
    pub request: RequestSpec,
    /// The setup selector whose upstreams make the ring.
    pub selector: String,
    /// Distinct client addresses (default 16).
    #[serde(default = "sixteen")]
    pub clients: u32,
    /// Requests per client (default 3).
    #[serde(default = "three")]
    pub repeat: u32,
}

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
    pub requests: u32,
    /// Requests in flight at once (default 8).
    #[serde(default = "eight")]
    pub concurrency: u32,
    /// The most the slow upstream may get, as a share of all requests.
    pub max_share: f64,
    /// The least every other upstream must get (default 0: only that the slow one is avoided).
    #[serde(default)]
    pub min_share: f64,
}

/// `burst:` send `requests` copies of `request` at once (each on its own connection) and count
/// the answers per HTTP status: the counts must be exactly `statuses`. Slow answers that keep
/// requests in flight come from the echo upstream's delay header
/// (`headers: { x-gantry-delay: alpha=2s }`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BurstSpec {
    /// The request.
    pub request: RequestSpec,
    /// How many copies are in flight at once (1 to 256).
    pub requests: u32,
    /// The expected number of answers per HTTP status, e.g. `{ 200: 3, 429: 2 }`; they add
    /// up to `requests`.
    pub statuses: BTreeMap<u16, u32>,
}

fn twenty() -> u32 {
    20
}

fn fifty_u32() -> u32 {
    50
}

fn four() -> u32 {
    4
}

fn four_hundred() -> u32 {
    400
}

fn five_s() -> Duration {
    Duration::from_secs(5)
}

fn five_s_text() -> &'static str {
    "5s"
}

/// `churn:` send `requestRate` requests a second (over at most `connections` in flight) on a
/// stable route, first for `duration` without churn (the baseline), then for `duration` while
/// the harness makes `rate` admin changes a second (plus `burst`s) on routes of its own under
/// `/gantry-churn/`: every answer in both phases must meet `expect`, and the admin must have
/// acknowledged at least half the asked change rate. The stable route's latency with and
/// without churn is reported, not judged. Everything the check made is deleted before it ends.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChurnSpec {
    /// The stable route's request.
    pub request: RequestSpec,
    /// What every answer on the stable route must meet.
    pub expect: Expect,
    /// Admin changes per second on the churned routes (default 50).
    #[serde(default = "fifty_u32")]
    pub rate: u32,
    /// How long each phase lasts, the baseline and the churn (default 5s).
    #[serde(default = "five_s", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "five_s_text")]
    pub duration: Duration,
    /// Extra changes made back to back every so often, on top of `rate`.
    #[serde(default)]
    pub burst: Option<ChurnBurst>,
    /// Requests in flight at most at once on the stable route (default 4).
    #[serde(default = "four")]
    pub connections: u32,
    /// Requests per second on the stable route, spread over the connections (default 400):
    /// steady traffic that leaves the machine room to churn, not a saturation test.
    #[serde(default = "four_hundred")]
    pub request_rate: u32,
}

impl ChurnSpec {
    /// Admin changes per second asked for, bursts included.
    pub fn asked_rate(&self) -> f64 {
        f64::from(self.rate)
            + self
                .burst
                .map_or(0.0, |b| f64::from(b.changes) / b.every.as_secs_f64())
    }
}

/// `churn.burst:` `changes` extra admin changes, made at once every `every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChurnBurst {
    /// The period.
    #[serde(deserialize_with = "duration")]
    #[schemars(with = "DurationText")]
    pub every: Duration,
    /// Changes per burst.
    pub changes: u32,
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
    pub changes: u32,
    /// Passes in a row that make a change visible (default 1).
    #[serde(default = "one_u32")]
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

fn opt_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// A limit left out is no limit; `null` is not a duration, so it is no default either.
fn no_null_defaults(schema: &mut Schema) {
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

/// One step: admin changes and component stops/starts, a wait that proves them live, then
/// checks.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepSpec {
    /// What the step does.
    pub name: String,
    /// Applied in order; each a single-key map (`- deleteSelector: name`).
    #[serde(with = "serde_norway::with::singleton_map_recursive")]
    #[schemars(with = "Vec<Change>")]
    pub changes: Vec<Change>,
    /// The admin the step's admin changes go to (`admin[i]`; default: the first running
    /// one). It must be running when they are made.
    #[serde(default)]
    pub via: Option<Target>,
    /// The probe that proves the changes are live (required).
    pub wait: Wait,
    /// A request sent back to back from before the first change until the gateway has
    /// converged: every answer must meet its expectation (availability through the step).
    #[serde(default)]
    pub during: Option<Probe>,
    /// How long the step's config change must stay away from the gateway (`isolated: 1s`,
    /// a partition's claim): from the end of its changes, every running gateway's digest is
    /// polled with the admin's for that long and must differ from it every time (equal means
    /// the change arrived); `during` keeps being sent meanwhile. Reported as the check
    /// `steps[i].isolated`; skipped on a target without a config digest. Needs a change of
    /// the config in the step.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub isolated: Option<Duration>,
    /// For a step with faults: the most its wait and the digest equality after it may take,
    /// from the end of its last change (default 5s).
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub converge: Option<Duration>,
    /// Requests and their expected answers after the wait.
    #[serde(default)]
    pub checks: Vec<Check>,
}

impl StepSpec {
    /// Whether a change of the step is a fault (a partition and a heal are too).
    pub fn has_faults(&self) -> bool {
        self.changes.iter().any(|c| {
            c.fault().is_some()
                || matches!(
                    c,
                    Change::Partition(_)
                        | Change::Heal
                        | Change::SyncFault(_)
                        | Change::Compact(_)
                        | Change::ExpireSession(_)
                )
        })
    }

    /// Whether a change arms a protocol fault (the admin then needs its test-only hook).
    pub fn arms_sync_faults(&self) -> bool {
        self.changes
            .iter()
            .any(|c| matches!(c, Change::SyncFault(_)))
    }

    /// Whether a change partitions the gateway.
    pub fn partitions(&self) -> bool {
        self.changes
            .iter()
            .any(|c| matches!(c, Change::Partition(_)))
    }

    /// The bound on convergence after its faults (`converge`, default 5s).
    pub fn converge_bound(&self) -> Duration {
        self.converge.unwrap_or(Duration::from_secs(5))
    }
}

/// One change of a step: an admin change (names refer to setup objects) or a fault: a
/// process of the topology stopped, killed, started, restarted, paused or resumed.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Change {
    /// `POST /selector`: a selector with its rules, as in `setup.selectors`; later steps,
    /// checks and expectations name it like a setup selector, and teardown deletes it.
    CreateSelector(SelectorSpec),
    /// `POST /rule`: a rule under a live selector, as in a selector's `rules`.
    CreateRule(CreateRule),
    /// A client registration through the admin's registration center, as in
    /// `setup.registrations`; teardown deletes the selectors the admin made for it.
    Register(RegistrationSpec),
    /// `PUT /selector/{id}` with the given fields replaced.
    UpdateSelector(UpdateSelector),
    /// `PUT /rule/{id}` with the given fields replaced.
    UpdateRule(UpdateRule),
    /// `POST /plugin/enabled`; restored in teardown.
    EnablePlugin(EnablePlugin),
    /// `DELETE /selector/batch` (its rules go too).
    DeleteSelector(String),
    /// `DELETE /rule/batch`.
    DeleteRule(RuleRef),
    /// `PUT /plugin/{id}`: a plugin's config (placeholders filled in) and enabled flag, as in
    /// `setup.plugins`; restored in teardown.
    UpdatePlugin(PluginSetup),
    /// Stops a process of the topology: the admin or gateway gracefully (stdin closed, as on
    /// a shutdown), ZooKeeper, etcd and Redis at once; it keeps its address for a `start`.
    Stop(Target),
    /// Kills a process (SIGKILL); it keeps its address for a `start`.
    Kill(Target),
    /// Starts a stopped or killed process again at the same address and waits until it
    /// answers (Redis comes back empty; the admin keeps its database).
    Start(Target),
    /// `stop` then `start`.
    Restart(Target),
    /// Freezes a process (SIGSTOP): it holds its connections and answers nothing.
    Pause(Target),
    /// Thaws a paused process (SIGCONT).
    Resume(Target),
    /// Cuts the gateway off from where it syncs (the admin in the websocket and http modes,
    /// ZooKeeper or etcd in theirs), through a proxy on that connection: `blackhole` (a
    /// silent partition: connections stay open, nothing passes), `cut` (closed) or `reset`;
    /// or slows it down: `{ delay: 300ms }`.
    Partition(PartitionHow),
    /// Ends the partition: the sync connection passes again (a blackholed connection
    /// resumes; the gateway reconnects after a cut or reset).
    Heal,
    /// Arms a protocol fault on the sync channel for the admin's next pushes, through the
    /// admin's test-only hook (host backend; `docs/faults.md`).
    SyncFault(SyncFault),
    /// Compacts the store to its current revision (`etcd` only, etcd mode, host backend): a
    /// watch resuming from an older revision is cancelled and must read everything again.
    Compact(Target),
    /// Expires a gateway's ZooKeeper session as a long stall does: pauses the gateway
    /// (SIGSTOP) until ZooKeeper has expired its session and no longer lists it; the gateway
    /// stays paused until a `resume` (zookeeper mode, host backend).
    ExpireSession(Target),
}

/// A protocol fault on the sync channel (`syncFault`): the admin's next `count` pushes
/// (websocket increments, long-poll listener answers naming changed groups) go wrong as
/// `kind` says.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncFault {
    /// What goes wrong.
    pub kind: SyncFaultKind,
    /// How many pushes it applies to (1 to 100; default 1).
    #[serde(default = "one_push")]
    pub count: u32,
    /// `lateAnswer` only (required there): how long each answer waits.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub delay: Option<Duration>,
}

fn one_push() -> u32 {
    1
}

/// How a `partition` breaks the gateway's sync connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartitionHow {
    /// Connections stay open and nothing passes either way.
    Blackhole,
    /// Connections are closed (FIN), new ones closed on accept.
    Cut,
    /// Connections are reset (RST), new ones reset on accept.
    Reset,
    /// Everything passes, each chunk this long late (`partition: { delay: 300ms }`): a slow
    /// link rather than a broken one; the gateway stays in sync, late.
    Delay(
        #[serde(deserialize_with = "duration")]
        #[schemars(with = "DurationText")]
        Duration,
    ),
}

impl PartitionHow {
    /// Its name in case files.
    pub fn name(self) -> &'static str {
        match self {
            PartitionHow::Blackhole => "blackhole",
            PartitionHow::Cut => "cut",
            PartitionHow::Reset => "reset",
            PartitionHow::Delay(_) => "delay",
        }
    }

    /// Whether the gateway is cut off from its config (no digest equality meanwhile).
    pub fn cuts_off(self) -> bool {
        !matches!(self, PartitionHow::Delay(_))
    }
}

/// What a fault in a step does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// `stop`.
    Stop,
    /// `kill`.
    Kill,
    /// `start`.
    Start,
    /// `restart`.
    Restart,
    /// `pause`.
    Pause,
    /// `resume`.
    Resume,
}

impl FaultAction {
    /// The key in a file (`kill`).
    pub fn name(self) -> &'static str {
        match self {
            FaultAction::Stop => "stop",
            FaultAction::Kill => "kill",
            FaultAction::Start => "start",
            FaultAction::Restart => "restart",
            FaultAction::Pause => "pause",
            FaultAction::Resume => "resume",
        }
    }
}

/// A process of the topology a step can stop, kill, start, restart, pause or resume:
/// `admin`, `gateway` (when the topology runs one), `admin[i]`, `gateway[i]`, `zookeeper`,
/// `etcd` or `redis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// An admin: `admin` (`None`, the only one) or `admin[i]`.
    Admin(Option<u8>),
    /// A gateway: `gateway` (`None`, the only one) or `gateway[i]`.
    Gateway(Option<u8>),
    /// The ZooKeeper server (cases that run only in the zookeeper mode).
    Zookeeper,
    /// The etcd server (cases that run only in the etcd mode).
    Etcd,
    /// The case's Redis (`components: [redis]`).
    Redis,
}

impl Target {
    /// The kind's name in case files and messages, without an index.
    pub fn name(self) -> &'static str {
        match self {
            Target::Admin(_) => "admin",
            Target::Gateway(_) => "gateway",
            Target::Zookeeper => "zookeeper",
            Target::Etcd => "etcd",
            Target::Redis => "redis",
        }
    }

    /// The index of an admin or gateway (`admin` alone is the first).
    pub fn index(self) -> Option<usize> {
        match self {
            Target::Admin(i) | Target::Gateway(i) => Some(usize::from(i.unwrap_or(0))),
            _ => None,
        }
    }

    /// The same process with its index spelled out (`admin` → `admin[0]`), so that both
    /// spellings name one process.
    pub fn resolved(self) -> Target {
        match self {
            Target::Admin(i) => Target::Admin(Some(i.unwrap_or(0))),
            Target::Gateway(i) => Target::Gateway(Some(i.unwrap_or(0))),
            other => other,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Admin(Some(i)) | Target::Gateway(Some(i)) => write!(f, "{}[{i}]", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (kind, index) = match text.split_once('[') {
            Some((kind, rest)) => {
                let index = rest
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<u8>().ok())
                    .ok_or_else(|| format!("`{text}`: an index is written `{kind}[0]`"))?;
                (kind, Some(index))
            }
            None => (text, None),
        };
        match (kind, index) {
            ("admin", i) => Ok(Target::Admin(i)),
            ("gateway", i) => Ok(Target::Gateway(i)),
            ("zookeeper", None) => Ok(Target::Zookeeper),
            ("etcd", None) => Ok(Target::Etcd),
            ("redis", None) => Ok(Target::Redis),
            (kind @ ("zookeeper" | "etcd" | "redis"), Some(_)) => {
                Err(format!("`{text}`: there is one {kind}, without an index"))
            }
            _ => Err(format!(
                "unknown process `{text}`, expected admin, gateway, admin[i], gateway[i], \
                 zookeeper, etcd or redis"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Target {
    fn schema_name() -> Cow<'static, str> {
        "Target".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A process of the topology: admin, gateway (when there is one), \
                            admin[i], gateway[i], zookeeper, etcd or redis.",
            "type": "string",
            "pattern": "^((admin|gateway)(\\[[0-9]+\\])?|zookeeper|etcd|redis)$"
        })
    }
}

impl Change {
    /// The key that names the change in a file (`deleteSelector`).
    pub fn name(&self) -> &'static str {
        match self {
            Change::CreateSelector(_) => "createSelector",
            Change::CreateRule(_) => "createRule",
            Change::Register(_) => "register",
            Change::UpdateSelector(_) => "updateSelector",
            Change::UpdateRule(_) => "updateRule",
            Change::EnablePlugin(_) => "enablePlugin",
            Change::DeleteSelector(_) => "deleteSelector",
            Change::DeleteRule(_) => "deleteRule",
            Change::UpdatePlugin(_) => "updatePlugin",
            Change::Partition(_) => "partition",
            Change::Heal => "heal",
            Change::SyncFault(_) => "syncFault",
            Change::Compact(_) => "compact",
            Change::ExpireSession(_) => "expireSession",
            change => change.fault().map_or("", |(action, _)| action.name()),
        }
    }

    /// Whether it changes the admin's config (and so makes the admin push): an update, an
    /// enable or a delete.
    pub fn is_admin_change(&self) -> bool {
        matches!(
            self,
            Change::CreateSelector(_)
                | Change::CreateRule(_)
                | Change::Register(_)
                | Change::UpdateSelector(_)
                | Change::UpdateRule(_)
                | Change::EnablePlugin(_)
                | Change::DeleteSelector(_)
                | Change::DeleteRule(_)
                | Change::UpdatePlugin(_)
        )
    }

    /// The fault this change is, if it is one: what it does and to which process.
    pub fn fault(&self) -> Option<(FaultAction, Target)> {
        Some(match *self {
            Change::Stop(t) => (FaultAction::Stop, t),
            Change::Kill(t) => (FaultAction::Kill, t),
            Change::Start(t) => (FaultAction::Start, t),
            Change::Restart(t) => (FaultAction::Restart, t),
            Change::Pause(t) => (FaultAction::Pause, t),
            Change::Resume(t) => (FaultAction::Resume, t),
            _ => return None,
        })
    }
}

/// A rule to create under a live selector (`createRule`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateRule {
    /// The selector (from setup or a `createSelector`) that gets the rule.
    pub selector: String,
    /// The rule, as in a selector's `rules`.
    pub rule: RuleSpec,
}

/// Fields of a selector to replace; the ones not given keep their values.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateSelector {
    /// The selector's name (from setup or a `createSelector`).
    pub name: String,
    /// New divide upstreams (the selector's handle).
    pub upstreams: Option<Vec<UpstreamRef>>,
    /// New enabled flag.
    pub enabled: Option<bool>,
    /// New conditions. A route moved to another path usually needs its rules' conditions
    /// changed too (`updateRule`): the rules match the request again after the selector.
    pub conditions: Option<Vec<ConditionSpec>>,
    /// New ordering key.
    pub sort: Option<i32>,
    /// New match mode.
    pub match_mode: Option<MatchModeName>,
    /// New `continued` flag.
    pub continued: Option<bool>,
    /// New selector type.
    #[serde(rename = "type")]
    pub kind: Option<SelectorKind>,
}

/// Fields of a rule to replace; the ones not given keep their values.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateRule {
    /// The selector holding the rule (from setup or a `createSelector`).
    pub selector: String,
    /// The rule's name.
    pub name: String,
    /// New enabled flag.
    pub enabled: Option<bool>,
    /// New conditions.
    pub conditions: Option<Vec<ConditionSpec>>,
    /// New ordering key.
    pub sort: Option<i32>,
    /// New match mode.
    pub match_mode: Option<MatchModeName>,
    /// New handle (missing fields take ShenYu's defaults).
    pub handle: Option<RuleHandleSpec>,
    /// New contextPath handle (instead of `handle`).
    pub context_path: Option<ContextPathSpec>,
    /// New rateLimiter handle (instead of `handle`).
    pub rate_limiter: Option<RateLimiterSpec>,
}

/// A plugin's enabled flag.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnablePlugin {
    /// Plugin name, e.g. `divide`.
    pub name: String,
    /// The new flag.
    pub enabled: bool,
}

/// A setup rule by selector and rule name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleRef {
    /// The setup selector holding the rule.
    pub selector: String,
    /// The rule's name.
    pub name: String,
}

/// Teardown extras.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Teardown {
    /// Probes run after the deletes have converged.
    #[serde(default)]
    pub probes: Vec<Probe>,
}

fn get() -> String {
    "GET".to_owned()
}

/// A request sent to the gateway.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestSpec {
    /// HTTP method.
    #[serde(default = "get")]
    pub method: String,
    /// Path, possibly with a query string.
    pub path: String,
    /// Headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Query parameters appended to the path.
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Body.
    #[serde(default)]
    pub body: Option<String>,
}

/// Whether an upstream answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Route {
    /// An upstream answered.
    Present,
    /// The gateway answered -107 or -102.
    Absent,
}

/// What an answer must be; every key given must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// HTTP status.
    pub status: Option<u16>,
    /// The upstream that answered: a name, one of several (`[alpha, beta]`), or any but
    /// some (`{ not: alpha }`, `{ not: [alpha, beta] }`); an upstream must answer.
    pub upstream: Option<UpstreamExpect>,
    /// Route present or absent.
    pub route: Option<Route>,
    /// Gateway error code.
    pub code: Option<i32>,
    /// A fragment of the body.
    pub body_contains: Option<String>,
    /// A text the body must not contain.
    pub body_not_contains: Option<String>,
    /// Response headers the answer must carry, with these values (names case-insensitive),
    /// e.g. `x-gantry-upstream`. The ids in `x-gantry-selector-id` and `x-gantry-rule-id`
    /// are the admin's: judge them by name with `selector` and `rule`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON values the body must hold, by path (`$`, `$.a.b`, `$.list[0].name`, `$['odd key']`):
    /// each path must exist and its value equal the given one.
    #[serde(default)]
    pub json: BTreeMap<String, serde_json::Value>,
    /// What the upstream received.
    pub received: Option<Received>,
    /// The setup selector that matched (by name; the gateway's `x-gantry-selector-id`).
    pub selector: Option<String>,
    /// The setup rule that matched (by name, unique in the scenario or of `selector`; the
    /// gateway's `x-gantry-rule-id`).
    pub rule: Option<String>,
}

impl Expect {
    /// Whether the expectation constrains anything (an empty one accepts every answer).
    pub fn is_empty(&self) -> bool {
        *self == Expect::default()
    }
}

/// `expect.upstream`: which upstreams may have answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamExpect {
    /// One of these (`alpha` or `[alpha, beta]`).
    AnyOf(Vec<String>),
    /// Any upstream but these (`{ not: alpha }` or `{ not: [alpha, beta] }`).
    NoneOf(Vec<String>),
}

impl UpstreamExpect {
    /// The upstream names it mentions.
    pub fn names(&self) -> &[String] {
        match self {
            UpstreamExpect::AnyOf(names) | UpstreamExpect::NoneOf(names) => names,
        }
    }

    /// Whether an answer from `got` (`None`: no upstream answered) meets it.
    pub fn accepts(&self, got: Option<&str>) -> bool {
        let Some(got) = got else { return false };
        match self {
            UpstreamExpect::AnyOf(names) => names.iter().any(|n| n == got),
            UpstreamExpect::NoneOf(names) => names.iter().all(|n| n != got),
        }
    }
}

impl From<&str> for UpstreamExpect {
    fn from(name: &str) -> Self {
        UpstreamExpect::AnyOf(vec![name.to_owned()])
    }
}

impl std::fmt::Display for UpstreamExpect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamExpect::AnyOf(names) => f.write_str(&names.join(" or ")),
            UpstreamExpect::NoneOf(names) => write!(f, "any upstream but {}", names.join(", ")),
        }
    }
}

/// One name or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
enum OneOrMany {
    /// One name.
    One(String),
    /// Several names.
    Many(Vec<String>),
}

impl From<OneOrMany> for Vec<String> {
    fn from(names: OneOrMany) -> Self {
        match names {
            OneOrMany::One(name) => vec![name],
            OneOrMany::Many(names) => names,
        }
    }
}

/// The map form of `expect.upstream`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NotUpstream {
    /// The upstreams that must not answer.
    not: OneOrMany,
}

impl<'de> Deserialize<'de> for UpstreamExpect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UpstreamExpect;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an upstream name, a list of names, or `{ not: name }`")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<UpstreamExpect, E> {
                Ok(UpstreamExpect::from(name))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<UpstreamExpect, A::Error> {
                let names =
                    Vec::<String>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(UpstreamExpect::AnyOf(names))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<UpstreamExpect, A::Error> {
                let not =
                    NotUpstream::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(UpstreamExpect::NoneOf(not.not.into()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl JsonSchema for UpstreamExpect {
    fn schema_name() -> Cow<'static, str> {
        "UpstreamExpect".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let not = generator.subschema_for::<NotUpstream>();
        json_schema!({
            "description": "The upstream that answered: a name, a list of names (one of them), \
                            or `{ not: name-or-list }` (any upstream but those).",
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                not,
            ],
        })
    }
}

/// What the upstream must have received.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Received {
    /// Method.
    pub method: Option<String>,
    /// Raw path.
    pub path: Option<String>,
    /// Raw query string.
    pub query: Option<String>,
    /// Headers (names case-insensitive).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}
