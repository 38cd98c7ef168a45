//! The rateLimiter plugin's types (semantics doc §8): the rule handle
//! ([`RateLimiterHandle`]) with its [`Algorithm`] and [`KeyResolver`] names, and the plugin's
//! Redis config ([`RateLimiterConfig`], ShenYu's `RedisConfigProperties`) with gantry's
//! failure policy.
//!
//! Both read what ShenYu's dashboard writes: numbers as JSON numbers or as numeric strings
//! (the dashboard sends `"replenishRate":"10"`; Gson reads either), `null` as absent.
//! `validate()` says which field is wrong: `Err((field, message))` with the JSON field name.

use serde::{Deserialize, Deserializer, Serialize};

use crate::wire_enum::wire_enum;

wire_enum! {
    /// Rate limiter algorithms (ShenYu's `RateLimiterAlgorithm` SPI names).
    Algorithm, "rate limiter algorithm" {
        /// Token bucket: `replenishRate` tokens/s, at most `burstCapacity`, each request
        /// takes `requestCount`.
        TokenBucket = "tokenBucket",
        /// At most `burstCapacity` requests per `burstCapacity / replenishRate` seconds.
        SlidingWindow = "slidingWindow",
        /// A bucket of `burstCapacity` that leaks `replenishRate`/s; each request pours
        /// `requestCount`.
        LeakyBucket = "leakyBucket",
        /// At most `burstCapacity` requests in flight.
        Concurrent = "concurrent",
    }
}

impl Algorithm {
    /// The Redis key prefix ShenYu uses for the algorithm (`<keyName>.{<id>}.tokens`).
    pub fn key_name(self) -> &'static str {
        match self {
            Algorithm::TokenBucket => "request_rate_limiter",
            Algorithm::SlidingWindow => "sliding_window_request_rate_limiter",
            Algorithm::LeakyBucket => "request_leaky_rate_limiter",
            Algorithm::Concurrent => "concurrent_request_rate_limiter",
        }
    }

    /// Whether the algorithm uses `replenishRate` (the concurrent limiter does not).
    pub fn uses_rate(self) -> bool {
        self != Algorithm::Concurrent
    }
}

wire_enum! {
    /// What a limiter counts per (ShenYu's `RateLimiterKeyResolver` SPI names).
    KeyResolver, "key resolver" {
        /// One limiter for the whole rule.
        Whole = "WHOLE_KEY_RESOLVER",
        /// One limiter per client address (forwarding headers, else the socket peer).
        RemoteAddress = "REMOTE_ADDRESS_KEY_RESOLVER",
    }
}

wire_enum! {
    /// How the Redis server is deployed (ShenYu's `RedisModeEnum`).
    RedisMode, "redis mode" {
        /// One server: `url` is `host:port`.
        Standalone = "standalone",
        /// Sentinels: `url` is `host:port;host:port…`, `master` the master's name.
        Sentinel = "sentinel",
        /// A cluster: `url` is `host:port;host:port…`.
        Cluster = "cluster",
    }
}

/// Reads a JSON number, a numeric string (what ShenYu's dashboard writes) or `null` (as the
/// default).
fn lenient_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(f64),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Number(n)) => Ok(Some(n)),
        Some(Raw::Text(s)) if s.trim().is_empty() => Ok(None),
        Some(Raw::Text(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("expected a number, got `{s}`"))),
    }
}

/// [`lenient_f64`] with a default for absent values.
macro_rules! lenient_with_default {
    ($name:ident, $default:expr) => {
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
            Ok(lenient_f64(d)?.unwrap_or($default))
        }
    };
}
lenient_with_default!(f64_or_zero, 0.0);
lenient_with_default!(f64_or_one, 1.0);

/// Reads an integer as [`lenient_f64`] does; a fraction is an error.
fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match lenient_f64(d)? {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Ok(Some(n as i64)),
        Some(n) => Err(serde::de::Error::custom(format!(
            "expected an integer, got {n}"
        ))),
    }
}

/// Reads a JSON boolean, `"true"` / `"false"` or `null` (false).
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(false),
        Some(Raw::Bool(b)) => Ok(b),
        Some(Raw::Text(s)) => match s.trim() {
            "true" => Ok(true),
            "false" | "" => Ok(false),
            _ => Err(serde::de::Error::custom(format!(
                "expected true or false, got `{s}`"
            ))),
        },
    }
}

/// Reads a blank string as absent.
fn non_blank_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.trim().is_empty()))
}

/// A rateLimiter rule's `handle` (ShenYu `RateLimiterHandle`). Missing numbers take Java's
/// defaults (0, `requestCount` 1); a missing `algorithmName` is kept as `None` and refused by
/// [`validate`](Self::validate) (ShenYu throws a NullPointerException on it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimiterHandle {
    /// The algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm_name: Option<Algorithm>,
    /// Tokens (or requests, or leak) per second.
    #[serde(default, deserialize_with = "f64_or_zero")]
    pub replenish_rate: f64,
    /// Bucket size, window limit or concurrency limit.
    #[serde(default, deserialize_with = "f64_or_zero")]
    pub burst_capacity: f64,
    /// What one request costs (token and leaky bucket; 1 by default).
    #[serde(default = "one", deserialize_with = "f64_or_one")]
    pub request_count: f64,
    /// Per what the limit counts; `None` is one limiter for the rule (ShenYu appends nothing
    /// to the limiter id then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_resolver_name: Option<KeyResolver>,
}

/// `requestCount`'s default.
fn one() -> f64 {
    1.0
}

impl Default for RateLimiterHandle {
    /// ShenYu's `RateLimiterHandle.newDefaultInstance()` (a selector's default rule):
    /// sliding window, 1/s, capacity 100.
    fn default() -> Self {
        Self {
            algorithm_name: Some(Algorithm::SlidingWindow),
            replenish_rate: 1.0,
            burst_capacity: 100.0,
            request_count: 1.0,
            key_resolver_name: None,
        }
    }
}

/// `value` is finite and above `min` (or at least `min` when `inclusive`).
fn positive(
    field: &'static str,
    value: f64,
    min: f64,
    inclusive: bool,
) -> Result<(), (&'static str, String)> {
    let ok = value.is_finite() && if inclusive { value >= min } else { value > min };
    if ok {
        Ok(())
    } else {
        let bound = if inclusive { ">=" } else { ">" };
        Err((
            field,
            format!("must be a finite number {bound} {min}, got {value}"),
        ))
    }
}

impl RateLimiterHandle {
    /// Parses a handle. Blank is an error: a rateLimiter rule needs at least an algorithm.
    pub fn parse(handle: &str) -> Result<RateLimiterHandle, serde_json::Error> {
        serde_json::from_str(handle)
    }

    /// Why this handle cannot work, naming the field: no `algorithmName`; a rate that is not
    /// positive (all but the concurrent limiter divide by it); a `burstCapacity` that is not
    /// positive; a `requestCount` that is not positive or, for the buckets, above the
    /// capacity (no request could ever pass).
    pub fn validate(&self) -> Result<Algorithm, (&'static str, String)> {
        let algorithm = self
            .algorithm_name
            .ok_or(("algorithmName", "must not be null".to_owned()))?;
        if algorithm.uses_rate() {
            positive("replenishRate", self.replenish_rate, 0.0, false)?;
        } else {
            positive("replenishRate", self.replenish_rate, 0.0, true)?;
        }
        positive("burstCapacity", self.burst_capacity, 0.0, false)?;
        positive("requestCount", self.request_count, 0.0, false)?;
        if matches!(algorithm, Algorithm::TokenBucket | Algorithm::LeakyBucket)
            && self.request_count > self.burst_capacity
        {
            return Err((
                "requestCount",
                format!(
                    "must be <= burstCapacity ({}) or no request can pass, got {}",
                    self.burst_capacity, self.request_count
                ),
            ));
        }
        Ok(algorithm)
    }
}

/// The rateLimiter plugin's `config` (ShenYu `RedisConfigProperties`, formerly
/// `RateLimiterConfig`) plus gantry's failure policy and concurrent-slot lifetime.
///
/// `maxIdle`, `minIdle`, `maxActive` and `maxWait` size ShenYu's Lettuce pool; gantry reads
/// and keeps them but uses one multiplexed, self-reconnecting connection instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimiterConfig {
    /// Deployment mode; `standalone` by default.
    #[serde(default = "standalone", deserialize_with = "mode_or_standalone")]
    pub mode: RedisMode,
    /// `host:port` (standalone) or `host:port;host:port…` (sentinel, cluster).
    #[serde(
        default,
        deserialize_with = "non_blank_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub url: Option<String>,
    /// The sentinel master's name (sentinel mode).
    #[serde(
        default,
        deserialize_with = "non_blank_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub master: Option<String>,
    /// The Redis password; none when absent or blank.
    #[serde(
        default,
        deserialize_with = "non_blank_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub password: Option<String>,
    /// Database number; 0 by default.
    #[serde(default, deserialize_with = "i64_or_zero")]
    pub database: i64,
    /// Pool setting (ShenYu default 8); not used by gantry.
    #[serde(default = "eight", deserialize_with = "i64_or_eight")]
    pub max_idle: i64,
    /// Pool setting (ShenYu default 0); not used by gantry.
    #[serde(default, deserialize_with = "i64_or_zero")]
    pub min_idle: i64,
    /// Pool setting (ShenYu default 8); not used by gantry.
    #[serde(default = "eight", deserialize_with = "i64_or_eight")]
    pub max_active: i64,
    /// Pool wait in ms (ShenYu default -1); not used by gantry.
    #[serde(default = "minus_one", deserialize_with = "i64_or_minus_one")]
    pub max_wait: i64,
    /// gantry: what a request gets when Redis cannot decide (unreachable, timeout, script
    /// error, unusable handle). `false` (the default, ShenYu's behaviour): it is let through.
    /// `true`: it is denied.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub fail_closed: bool,
    /// gantry: seconds after which a concurrent limiter's slot counts as leaked and is freed
    /// even if its request never released it (ShenYu keeps leaked slots forever); 300 by
    /// default, 1–86400.
    #[serde(default = "default_slot_ttl", deserialize_with = "i64_or_slot_ttl")]
    pub concurrent_slot_ttl: i64,
}

/// The default [`RateLimiterConfig::concurrent_slot_ttl`], seconds.
pub const DEFAULT_CONCURRENT_SLOT_TTL: i64 = 300;

/// `mode`'s default.
fn standalone() -> RedisMode {
    RedisMode::Standalone
}
/// `maxIdle`'s and `maxActive`'s default.
fn eight() -> i64 {
    8
}
/// `maxWait`'s default.
fn minus_one() -> i64 {
    -1
}
/// `concurrentSlotTtl`'s default.
fn default_slot_ttl() -> i64 {
    DEFAULT_CONCURRENT_SLOT_TTL
}

/// [`lenient_i64`] with a default for absent values.
macro_rules! int_with_default {
    ($name:ident, $default:expr) => {
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
            Ok(lenient_i64(d)?.unwrap_or($default))
        }
    };
}
int_with_default!(i64_or_zero, 0);
int_with_default!(i64_or_eight, 8);
int_with_default!(i64_or_minus_one, -1);
int_with_default!(i64_or_slot_ttl, DEFAULT_CONCURRENT_SLOT_TTL);

/// Reads `mode`: a [`RedisMode`] name; `null` or blank is standalone.
fn mode_or_standalone<'de, D: Deserializer<'de>>(d: D) -> Result<RedisMode, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(RedisMode::Standalone),
        Some(s) if s.trim().is_empty() => Ok(RedisMode::Standalone),
        Some(s) => s.trim().parse().map_err(serde::de::Error::custom),
    }
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        Self {
            mode: RedisMode::Standalone,
            url: None,
            master: None,
            password: None,
            database: 0,
            max_idle: 8,
            min_idle: 0,
            max_active: 8,
            max_wait: -1,
            fail_closed: false,
            concurrent_slot_ttl: DEFAULT_CONCURRENT_SLOT_TTL,
        }
    }
}

/// Whether `addr` is `host:port` with a non-zero port.
fn is_host_port(addr: &str) -> bool {
    match addr.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && !host.contains(['/', ' '])
                && port.parse::<u16>().is_ok_and(|p| p != 0)
        }
        None => false,
    }
}

impl RateLimiterConfig {
    /// Parses a plugin config; blank means all defaults (no `url`, which
    /// [`validate`](Self::validate) refuses).
    pub fn parse(config: &str) -> Result<RateLimiterConfig, serde_json::Error> {
        if config.trim().is_empty() {
            return Ok(RateLimiterConfig::default());
        }
        serde_json::from_str(config)
    }

    /// The `url`'s addresses: `;`-separated, trimmed, blanks dropped.
    pub fn addresses(&self) -> Vec<&str> {
        self.url
            .as_deref()
            .unwrap_or_default()
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect()
    }

    /// Why this config cannot work, naming the field: no `url`, an address that is not
    /// `host:port`, several addresses in standalone mode, no `master` in sentinel mode, a
    /// negative `database`, a `concurrentSlotTtl` outside 1–86400.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let addresses = self.addresses();
        if addresses.is_empty() {
            return Err(("url", "must not be blank".to_owned()));
        }
        if let Some(bad) = addresses.iter().find(|a| !is_host_port(a)) {
            return Err(("url", format!("expected `host:port`, got `{bad}`")));
        }
        if self.mode == RedisMode::Standalone && addresses.len() > 1 {
            return Err((
                "url",
                format!(
                    "standalone mode takes one `host:port`, got {}",
                    addresses.len()
                ),
            ));
        }
        if self.mode == RedisMode::Sentinel && self.master.is_none() {
            return Err(("master", "must not be blank in sentinel mode".to_owned()));
        }
        if self.database < 0 {
            return Err(("database", format!("must be >= 0, got {}", self.database)));
        }
        if !(1..=86_400).contains(&self.concurrent_slot_ttl) {
            return Err((
                "concurrentSlotTtl",
                format!(
                    "must be within 1..=86400 seconds, got {}",
                    self.concurrent_slot_ttl
                ),
            ));
        }
        Ok(())
    }

    /// Whether `other` connects to the same server the same way (the failure policy and slot
    /// lifetime can change without a new connection).
    pub fn same_connection(&self, other: &RateLimiterConfig) -> bool {
        (
            self.mode,
            &self.url,
            &self.master,
            &self.password,
            self.database,
        ) == (
            other.mode,
            &other.url,
            &other.master,
            &other.password,
            other.database,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_reads_the_dashboards_strings_and_numbers() {
        let h = RateLimiterHandle::parse(
            r#"{"algorithmName":"tokenBucket","replenishRate":"10","burstCapacity":100,"keyResolverName":"REMOTE_ADDRESS_KEY_RESOLVER","loged":false}"#,
        )
        .unwrap();
        assert_eq!(h.algorithm_name, Some(Algorithm::TokenBucket));
        assert_eq!((h.replenish_rate, h.burst_capacity), (10.0, 100.0));
        assert_eq!(h.request_count, 1.0);
        assert_eq!(h.key_resolver_name, Some(KeyResolver::RemoteAddress));
        assert_eq!(h.validate(), Ok(Algorithm::TokenBucket));
        let nulls = RateLimiterHandle::parse(
            r#"{"algorithmName":"concurrent","replenishRate":null,"burstCapacity":"5","requestCount":""}"#,
        )
        .unwrap();
        assert_eq!((nulls.replenish_rate, nulls.request_count), (0.0, 1.0));
        assert_eq!(nulls.validate(), Ok(Algorithm::Concurrent));
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"algorithmName":"tokenBucket","replenishRate":10.0,"burstCapacity":100.0,"requestCount":1.0,"keyResolverName":"REMOTE_ADDRESS_KEY_RESOLVER"}"#
        );
    }

    #[test]
    fn handle_refuses_unknown_names_and_bad_numbers() {
        for (bad, needle) in [
            (
                r#"{"algorithmName":"fixedWindow"}"#,
                "unknown rate limiter algorithm `fixedWindow`",
            ),
            (
                r#"{"algorithmName":"tokenBucket","keyResolverName":"IP"}"#,
                "unknown key resolver `IP`",
            ),
            (
                r#"{"algorithmName":"tokenBucket","replenishRate":"ten"}"#,
                "expected a number, got `ten`",
            ),
            (
                r#"{"algorithmName":"tokenBucket","burstCapacity":[1]}"#,
                "did not match",
            ),
        ] {
            let e = RateLimiterHandle::parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn handle_validation_names_the_field() {
        let h = |json: &str| RateLimiterHandle::parse(json).unwrap().validate();
        let field = |json: &str| h(json).unwrap_err().0;
        assert_eq!(
            field(r#"{"replenishRate":1,"burstCapacity":1}"#),
            "algorithmName"
        );
        assert_eq!(
            field(r#"{"algorithmName":"slidingWindow","replenishRate":0,"burstCapacity":1}"#),
            "replenishRate"
        );
        assert_eq!(
            field(r#"{"algorithmName":"leakyBucket","replenishRate":-1,"burstCapacity":1}"#),
            "replenishRate"
        );
        assert_eq!(
            field(r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":0}"#),
            "burstCapacity"
        );
        assert_eq!(
            field(r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":"1e400"}"#),
            "burstCapacity"
        );
        assert_eq!(
            field(
                r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":2,"requestCount":3}"#
            ),
            "requestCount"
        );
        assert_eq!(
            field(
                r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":2,"requestCount":0}"#
            ),
            "requestCount"
        );
        // The concurrent limiter ignores the rate (0 is fine) and the sliding window the
        // request count.
        assert!(h(r#"{"algorithmName":"concurrent","replenishRate":0,"burstCapacity":1}"#).is_ok());
        assert!(
            h(r#"{"algorithmName":"slidingWindow","replenishRate":1,"burstCapacity":1,"requestCount":5}"#)
                .is_ok()
        );
        assert_eq!(
            RateLimiterHandle::default().validate(),
            Ok(Algorithm::SlidingWindow)
        );
    }

    #[test]
    fn algorithm_key_names_are_shenyus() {
        let names: Vec<_> = Algorithm::ALL.iter().map(|a| a.key_name()).collect();
        assert_eq!(
            names,
            [
                "request_rate_limiter",
                "sliding_window_request_rate_limiter",
                "request_leaky_rate_limiter",
                "concurrent_request_rate_limiter"
            ]
        );
    }

    #[test]
    fn config_reads_shenyus_seed_and_defaults() {
        let c = RateLimiterConfig::parse(
            r#"{"master":"mymaster","mode":"standalone","url":"192.168.1.1:6379","password":"abc"}"#,
        )
        .unwrap();
        assert_eq!(c.mode, RedisMode::Standalone);
        assert_eq!(c.addresses(), ["192.168.1.1:6379"]);
        assert_eq!(c.password.as_deref(), Some("abc"));
        assert_eq!(
            (c.database, c.max_idle, c.max_active, c.max_wait),
            (0, 8, 8, -1)
        );
        assert!(!c.fail_closed);
        assert_eq!(c.concurrent_slot_ttl, DEFAULT_CONCURRENT_SLOT_TTL);
        assert_eq!(c.validate(), Ok(()));
        let strings = RateLimiterConfig::parse(
            r#"{"url":"r:6379","password":"","database":"2","failClosed":"true","concurrentSlotTtl":"30","mode":""}"#,
        )
        .unwrap();
        assert_eq!(strings.password, None);
        assert_eq!((strings.database, strings.concurrent_slot_ttl), (2, 30));
        assert!(strings.fail_closed);
        assert_eq!(strings.mode, RedisMode::Standalone);
        assert!(c.same_connection(&RateLimiterConfig {
            fail_closed: true,
            concurrent_slot_ttl: 5,
            ..c.clone()
        }));
        assert!(!c.same_connection(&strings));
    }

    #[test]
    fn config_validation_names_the_field() {
        let field = |json: &str| {
            RateLimiterConfig::parse(json)
                .unwrap()
                .validate()
                .unwrap_err()
                .0
        };
        assert_eq!(field("{}"), "url");
        assert_eq!(field(r#"{"url":"  "}"#), "url");
        assert_eq!(field(r#"{"url":"redis://h:6379"}"#), "url");
        assert_eq!(field(r#"{"url":"h:0"}"#), "url");
        assert_eq!(field(r#"{"url":"a:1;b:2"}"#), "url");
        assert_eq!(field(r#"{"mode":"sentinel","url":"a:1;b:2"}"#), "master");
        assert_eq!(field(r#"{"url":"a:1","database":-1}"#), "database");
        assert_eq!(
            field(r#"{"url":"a:1","concurrentSlotTtl":0}"#),
            "concurrentSlotTtl"
        );
        let ok = |json: &str| RateLimiterConfig::parse(json).unwrap().validate();
        assert_eq!(ok(r#"{"mode":"cluster","url":"a:1; b:2;"}"#), Ok(()));
        assert_eq!(
            ok(r#"{"mode":"sentinel","url":"a:1","master":"m"}"#),
            Ok(())
        );
        for (bad, needle) in [
            (r#"{"mode":"single"}"#, "unknown redis mode `single`"),
            (r#"{"database":1.5}"#, "expected an integer"),
            (r#"{"failClosed":"yes"}"#, "expected true or false"),
        ] {
            let e = RateLimiterConfig::parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
