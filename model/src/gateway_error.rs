//! [`GatewayError`]: the error bodies the gateway answers with.

use serde::{Deserialize, Serialize};

/// A gateway error body, `{"code": .., "message": ..}` (ShenYu `DefaultShenyuEntity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayError {
    /// ShenYu's error code, e.g. -107.
    pub code: i32,
    /// ShenYu's message.
    pub message: String,
}

impl GatewayError {
    /// Divide found no selector (-107).
    pub const SELECTOR_NOT_FOUND: i32 = -107;
    /// Divide found no rule (-102).
    pub const RULE_NOT_FOUND: i32 = -102;
    /// Divide found no healthy upstream (-119).
    pub const NO_HEALTHY_UPSTREAM: i32 = -119;
    /// No URL to forward to: divide did not run (-106).
    pub const CANNOT_FIND_URL: i32 = -106;
    /// The upstream could not be reached or failed (-103, ShenYu's "service result error").
    pub const UPSTREAM_ERROR: i32 = -103;
    /// The upstream did not answer within the rule's timeout (504).
    pub const TIMEOUT: i32 = 504;
    /// The phrase ShenYu's e2e uses to tell a missing route from a real answer.
    pub const CONFIG_HINT: &'static str = "please check your configuration!";

    /// -107: no divide selector matched.
    pub fn selector_not_found(plugin: &str) -> Self {
        Self::new(
            Self::SELECTOR_NOT_FOUND,
            format!("{plugin}:Can not find selector, please check your configuration!"),
        )
    }

    /// -102: a selector matched but no rule did.
    pub fn rule_not_found(plugin: &str) -> Self {
        Self::new(Self::RULE_NOT_FOUND, format!("{plugin}:Rule not found!"))
    }

    /// -119: the selector has no usable upstream.
    pub fn no_healthy_upstream() -> Self {
        Self::new(
            Self::NO_HEALTHY_UPSTREAM,
            "Can not find healthy upstream url, please check your configuration!",
        )
    }

    /// -106: no plugin produced a URL (divide is disabled or absent).
    pub fn cannot_find_url() -> Self {
        Self::new(
            Self::CANNOT_FIND_URL,
            "Can not find url, please check your configuration!",
        )
    }

    /// -103: the upstream refused the connection or broke it.
    pub fn upstream_error(detail: &str) -> Self {
        Self::new(Self::UPSTREAM_ERROR, format!("upstream error: {detail}"))
    }

    /// 504: the upstream took longer than the rule's timeout.
    pub fn timeout(timeout_ms: i64) -> Self {
        Self::new(
            Self::TIMEOUT,
            format!("Response took longer than timeout: {timeout_ms}ms"),
        )
    }

    /// An error from code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status gantry's gateway answers this error with. ShenYu answers its error
    /// bodies with HTTP 200 (protocol, "Gateway error bodies come with HTTP 200"); the harness
    /// reads such an answer from a ShenYu target as if it had come with this status. Codes
    /// that are HTTP statuses (400, 429, 504...) are their own; `None` for a code gantry
    /// does not answer with.
    pub fn gantry_status(&self) -> Option<u16> {
        match self.code {
            Self::SELECTOR_NOT_FOUND | Self::RULE_NOT_FOUND | Self::CANNOT_FIND_URL => Some(404),
            Self::NO_HEALTHY_UPSTREAM => Some(503),
            Self::UPSTREAM_ERROR => Some(502),
            code @ 400..=599 => u16::try_from(code).ok(),
            _ => None,
        }
    }

    /// Whether this body says "the route does not exist" (no selector, no rule).
    pub fn is_route_missing(&self) -> bool {
        self.code == Self::SELECTOR_NOT_FOUND || self.code == Self::RULE_NOT_FOUND
    }
}

#[cfg(test)]
mod tests {
    use super::GatewayError;

    #[test]
    fn gantry_status_is_the_status_gantry_answers_with() {
        assert_eq!(
            GatewayError::selector_not_found("divide").gantry_status(),
            Some(404)
        );
        assert_eq!(
            GatewayError::rule_not_found("divide").gantry_status(),
            Some(404)
        );
        assert_eq!(
            GatewayError::no_healthy_upstream().gantry_status(),
            Some(503)
        );
        assert_eq!(GatewayError::upstream_error("x").gantry_status(), Some(502));
        assert_eq!(GatewayError::timeout(10).gantry_status(), Some(504));
        assert_eq!(GatewayError::new(429, "").gantry_status(), Some(429));
        assert_eq!(GatewayError::new(-999, "").gantry_status(), None);
    }
}
