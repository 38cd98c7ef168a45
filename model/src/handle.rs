//! Divide handles: the selector's upstream list ([`DivideUpstream`]) and the rule's
//! [`DivideRuleHandle`].

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::de::{null_default, null_true};
use crate::wire_enum::wire_enum;

/// One upstream in a divide selector's `handle` (ShenYu `DivideUpstream`, 2.6.0 model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DivideUpstream {
    /// `"http://"` or `"https://"` (scheme plus `://`).
    #[serde(deserialize_with = "null_default")]
    pub protocol: String,
    /// Informational host name; the admin writes `localhost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_host: Option<String>,
    /// `host:port`, no scheme.
    #[serde(deserialize_with = "null_default")]
    pub upstream_url: String,
    /// Load-balancing weight (0 when absent; the admin default is 50).
    #[serde(deserialize_with = "null_default")]
    pub weight: i32,
    /// Warm-up period in ms.
    #[serde(deserialize_with = "null_default")]
    pub warmup: i32,
    /// Upstream alive (true when absent).
    #[serde(deserialize_with = "null_true")]
    pub status: bool,
    /// Registration time in ms, for warm-up.
    #[serde(deserialize_with = "null_default")]
    pub timestamp: i64,
    /// Gray release flag.
    #[serde(deserialize_with = "null_default")]
    pub gray: bool,
    /// Health checks enabled (true when absent).
    #[serde(deserialize_with = "null_true")]
    pub health_check_enabled: bool,
    /// Namespace id (ShenYu ≥2.7.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

impl DivideUpstream {
    /// Why this upstream cannot be used, naming the field: an `upstreamUrl` that is not
    /// `host:port`, a negative `weight` or `warmup`.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !is_host_port(&self.upstream_url) {
            return Err((
                "upstreamUrl",
                format!("expected `host:port`, got `{}`", self.upstream_url),
            ));
        }
        if self.weight < 0 {
            return Err(("weight", format!("must be >= 0, got {}", self.weight)));
        }
        if self.warmup < 0 {
            return Err(("warmup", format!("must be >= 0, got {}", self.warmup)));
        }
        Ok(())
    }
}

/// Whether `url` is `host:port`.
fn is_host_port(url: &str) -> bool {
    match url.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && !host.contains('/')
                && !host.contains(' ')
                && port.parse::<u16>().is_ok()
        }
        None => false,
    }
}

impl Default for DivideUpstream {
    fn default() -> Self {
        Self {
            protocol: "http://".to_owned(),
            upstream_host: None,
            upstream_url: String::new(),
            weight: 0,
            warmup: 0,
            status: true,
            timestamp: 0,
            gray: false,
            health_check_enabled: true,
            namespace_id: None,
        }
    }
}

impl DivideUpstream {
    /// Parses a divide selector handle: a JSON array of upstreams. Blank means none.
    pub fn parse_list(handle: &str) -> Result<Vec<DivideUpstream>, serde_json::Error> {
        if handle.trim().is_empty() {
            return Ok(Vec::new());
        }
        serde_json::from_str(handle)
    }

    /// The upstream's base URL, `protocol + upstreamUrl` (protocol defaults to `http://`).
    pub fn base_url(&self) -> String {
        let protocol = if self.protocol.is_empty() {
            "http://"
        } else {
            &self.protocol
        };
        format!("{protocol}{}", self.upstream_url)
    }
}

wire_enum! {
    /// Load-balancer names (ShenYu `LoadBalanceEnum`).
    LoadBalance, "load balancer" {
        /// Consistent hash on the client IP.
        Hash = "hash",
        /// Weighted random (the default).
        Random = "random",
        /// Smooth weighted round robin.
        RoundRobin = "roundRobin",
        /// Least active.
        LeastActive = "leastActive",
        /// Power of two choices.
        P2c = "p2c",
        /// Shortest response.
        ShortestResponse = "shortestResponse",
    }
}

wire_enum! {
    /// Retry strategies (ShenYu `RetryEnum`).
    RetryStrategy, "retry strategy" {
        /// Retry the same upstream (the default).
        Current = "current",
        /// Retry other upstreams.
        Failover = "failover",
    }
}

/// A divide rule's `handle` (ShenYu `DivideRuleHandle`); missing fields take ShenYu's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DivideRuleHandle {
    /// Balancer name; `random` by default.
    pub load_balance: LoadBalance,
    /// Retry strategy; `current` by default.
    pub retry_strategy: RetryStrategy,
    /// Retry count; 3 by default.
    pub retry: i32,
    /// Upstream timeout in ms; 3000 by default.
    pub timeout: i64,
    /// Maximum summed header value bytes; 0 = unlimited.
    pub header_max_size: i64,
    /// Maximum Content-Length; 0 = unlimited.
    pub request_max_size: i64,
}

impl Default for DivideRuleHandle {
    fn default() -> Self {
        Self {
            load_balance: LoadBalance::Random,
            retry_strategy: RetryStrategy::Current,
            retry: 3,
            timeout: 3000,
            header_max_size: 0,
            request_max_size: 0,
        }
    }
}

// Bounds of a divide rule handle's numbers. ShenYu's dashboard (`plugin_handle` seed rows)
// gives them no range (`"rule":""`) and its admin stores any integer; these keep one request
// from retrying forever (`retry: 2147483647` spins a core) and refuse negatives. The admin
// refuses handles outside them; the gateway clamps what reaches it from elsewhere.

/// `retry`: retries after the first attempt.
pub const RETRY_BOUNDS: RangeInclusive<i64> = 0..=10;
/// `timeout` in ms; 0 takes the default 3000 (as the gateway reads it); at most 10 min.
pub const TIMEOUT_MS_BOUNDS: RangeInclusive<i64> = 0..=600_000;
/// `headerMaxSize` and `requestMaxSize` in bytes; 0 = unlimited.
pub(crate) const MAX_SIZE_BOUNDS: RangeInclusive<i64> = 0..=i64::MAX;

impl DivideRuleHandle {
    /// Why this handle cannot work, naming the field: a number outside [`RETRY_BOUNDS`],
    /// [`TIMEOUT_MS_BOUNDS`] or [`MAX_SIZE_BOUNDS`].
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        within("retry", i64::from(self.retry), &RETRY_BOUNDS)?;
        within("timeout", self.timeout, &TIMEOUT_MS_BOUNDS)?;
        within("headerMaxSize", self.header_max_size, &MAX_SIZE_BOUNDS)?;
        within("requestMaxSize", self.request_max_size, &MAX_SIZE_BOUNDS)
    }

    /// Parses a divide rule handle; blank means all defaults.
    pub fn parse(handle: &str) -> Result<DivideRuleHandle, serde_json::Error> {
        if handle.trim().is_empty() {
            return Ok(DivideRuleHandle::default());
        }
        serde_json::from_str(handle)
    }
}

/// `value` of field `field` within `range`, or why not.
fn within(
    field: &'static str,
    value: i64,
    range: &RangeInclusive<i64>,
) -> Result<(), (&'static str, String)> {
    if range.contains(&value) {
        return Ok(());
    }
    let expected = if *range.end() == i64::MAX {
        format!(">= {}", range.start())
    } else {
        format!("within {range:?}")
    };
    Err((field, format!("must be {expected}, got {value}")))
}
