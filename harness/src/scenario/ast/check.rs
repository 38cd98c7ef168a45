//! Checks: probes and the judge kinds, each judged by its module under `judge/`.

use super::*;

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
