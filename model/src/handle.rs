//! Divide handles: the selector's upstream list ([`DivideUpstream`]) and the rule's
//! [`DivideRuleHandle`].

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

impl DivideRuleHandle {
    /// Parses a divide rule handle; blank means all defaults.
    pub fn parse(handle: &str) -> Result<DivideRuleHandle, serde_json::Error> {
        if handle.trim().is_empty() {
            return Ok(DivideRuleHandle::default());
        }
        serde_json::from_str(handle)
    }
}
