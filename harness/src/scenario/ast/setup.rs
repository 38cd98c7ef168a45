//! The config a scenario creates: plugins, registrations, selectors and their rules.

use super::*;

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
