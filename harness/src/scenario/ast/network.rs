//! The `network` change: a Toxiproxy-style fault on one link of the topology (latency,
//! bandwidth, slicing, a slow close, a data limit, a loss of connections, a one-way or
//! two-way blackhole), in one direction or both, until a `heal`.

use super::*;

/// `network`: one toxic on one link (exactly one of `latency`, `bandwidth`, `slice`,
/// `slowClose`, `limitData`, `loss`, `blackhole`); several entries stack on a link. `heal`
/// ends them all, on every link. Host backend only.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkFault {
    /// The link the proxy sits on (default `sync`).
    #[serde(default)]
    pub link: Link,
    /// Which bytes the toxic acts on (default `both`).
    #[serde(default)]
    pub direction: NetworkDirection,
    /// Each chunk held `delay` ± `jitter` (uniform, seeded per connection).
    #[serde(default)]
    pub latency: Option<Latency>,
    /// At most `bytesPerSecond`.
    #[serde(default)]
    pub bandwidth: Option<Bandwidth>,
    /// Each chunk cut into pieces of `bytes`, written `every` apart.
    #[serde(default)]
    pub slice: Option<Slice>,
    /// An EOF (a close) passed on `delay` late.
    #[serde(default)]
    pub slow_close: Option<SlowClose>,
    /// A connection closed once `bytes` went that way since the fault was set (new
    /// connections count from zero).
    #[serde(default)]
    pub limit_data: Option<LimitData>,
    /// Each new connection closed at once (accepted, then closed) with probability `rate`;
    /// open connections are left alone. `direction: both` only.
    #[serde(default)]
    pub loss: Option<Loss>,
    /// Nothing forwarded that way; bytes sent meanwhile wait and arrive after the `heal`.
    /// With `direction: request` or `answer`, a one-way partition.
    #[serde(default)]
    pub blackhole: Option<Blackhole>,
}

/// A link of the topology a `network` fault sits on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Link {
    /// The gateway's sync connection: to the admin (websocket, http), to ZooKeeper or etcd.
    #[default]
    Sync,
    /// The gateway's connections to the upstreams (every upstream of the case).
    Upstream,
    /// The harness's requests to the gateways (checks, probes, traffic, digest reads).
    Client,
    /// The admins' connections to their PostgreSQL database (`topology.storage: postgres`;
    /// a SQLite file has no link).
    Database,
    /// The gateway's connections to the case's Redis (`components: [redis]`: the rate
    /// limiter's counters).
    Redis,
}

impl Link {
    /// Every link, in order.
    pub const ALL: [Link; 5] = [
        Link::Sync,
        Link::Upstream,
        Link::Client,
        Link::Database,
        Link::Redis,
    ];

    /// Its name in case files.
    pub fn name(self) -> &'static str {
        match self {
            Link::Sync => "sync",
            Link::Upstream => "upstream",
            Link::Client => "client",
            Link::Database => "database",
            Link::Redis => "redis",
        }
    }
}

/// Which bytes of a link's connections a `network` fault acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NetworkDirection {
    /// Both ways.
    #[default]
    Both,
    /// From the side that opened the connection (the gateway on the sync link).
    Request,
    /// Back to the side that opened the connection.
    Answer,
}

/// `latency`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// The mean delay of each chunk.
    #[serde(deserialize_with = "duration")]
    #[schemars(with = "DurationText")]
    pub delay: Duration,
    /// The half-width of the uniform spread (at most `delay`; default none).
    #[serde(default, deserialize_with = "duration")]
    #[schemars(with = "DurationText")]
    pub jitter: Duration,
}

/// `bandwidth`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Bandwidth {
    /// The rate (at least 1).
    pub bytes_per_second: u64,
}

/// `slice`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slice {
    /// The size of a piece (at least 1).
    pub bytes: usize,
    /// The pause after each piece (`0ms`: each piece its own write).
    #[serde(deserialize_with = "duration")]
    #[schemars(with = "DurationText")]
    pub every: Duration,
}

/// `slowClose`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowClose {
    /// How late a close is passed on.
    #[serde(deserialize_with = "duration")]
    #[schemars(with = "DurationText")]
    pub delay: Duration,
}

/// `limitData`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitData {
    /// How many bytes pass before the connection is closed.
    pub bytes: u64,
}

/// `loss`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Loss {
    /// The probability (0 to 1) that a new connection is closed at once.
    pub rate: f64,
}

/// `blackhole: {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Blackhole {}

impl NetworkFault {
    /// The keys of the toxics the entry sets (exactly one in a valid file).
    pub fn kinds(&self) -> Vec<&'static str> {
        [
            ("latency", self.latency.is_some()),
            ("bandwidth", self.bandwidth.is_some()),
            ("slice", self.slice.is_some()),
            ("slowClose", self.slow_close.is_some()),
            ("limitData", self.limit_data.is_some()),
            ("loss", self.loss.is_some()),
            ("blackhole", self.blackhole.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect()
    }

    /// Whether it may keep config from the gateway (a blackhole either way, a data limit, a
    /// loss of connections): the gateway is then not expected in sync until the heal.
    pub fn cuts_off(&self) -> bool {
        self.link == Link::Sync
            && (self.blackhole.is_some() || self.limit_data.is_some() || self.loss.is_some())
    }
}
