//! [`RateLimiter`]: the `rateLimiter` plugin of the chain. Per request it finds the matched
//! rule (a non-continued selector runs ShenYu's `default_rule` with the default handle),
//! resolves the limiter id from the rule's key resolver, asks the [`Limiter`] (one Redis
//! script call) and either lets the request on, keeping a concurrent slot until the response
//! is over, or answers HTTP 429 with ShenYu's body. Its Redis comes from the plugin's synced
//! `config` ([`Plugin::configure`]).

use std::fmt::Write as _;

use http::StatusCode;
use model::{GatewayError, RateLimiterConfig, RateLimiterHandle, RuleData, SelectorData};

use super::{Limiter, key};
use crate::EmulatedBug;
use crate::plugin::{Decision, Guard, Outcome, Plugin, Rejection, Table, matched_rule, now};
use crate::router::RequestView;
use crate::router::select::{DEFAULT_RULE_ID, RuleChoice};

/// The plugin's name.
const NAME: &str = "rateLimiter";

/// ShenYu's message for a denied request.
const RESTRICTED: &str = "You have been restricted, please try again later!";

/// The rateLimiter plugin: one [`Limiter`] shared by every request.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    limiter: Limiter,
}

impl RateLimiter {
    /// The plugin, with no Redis until its config arrives.
    pub(crate) fn new() -> Self {
        Self {
            limiter: Limiter::new(),
        }
    }
}

/// A rule's handle as compiled: usable, or why not (the failure policy then applies).
pub(crate) type CompiledHandle = Result<RateLimiterHandle, String>;

impl Plugin for RateLimiter {
    const NAME: &'static str = NAME;
    const CLASS_NAME: &'static str = "org.apache.shenyu.plugin.ratelimiter.RateLimiterPlugin";
    const ORDER: i32 = 20;
    type Selector = ();
    /// The rule's handle: ShenYu's default when blank; an error when it cannot be used.
    type Rule = CompiledHandle;

    fn selector(_: &SelectorData, _: Option<&()>) {}

    fn rule(r: &RuleData) -> CompiledHandle {
        let text = r.handle.as_deref().map(str::trim).unwrap_or("");
        if text.is_empty() {
            return Ok(RateLimiterHandle::default());
        }
        let handle = RateLimiterHandle::parse(text).map_err(|e| e.to_string())?;
        handle
            .validate()
            .map_err(|(field, message)| format!("{field}: {message}"))?;
        Ok(handle)
    }

    fn configure(&self, config: Option<&str>) {
        let parsed = match config.map(str::trim).filter(|c| !c.is_empty()) {
            None => None,
            Some(text) => match RateLimiterConfig::parse(text) {
                Ok(config) => Some(config),
                Err(e) => {
                    tracing::warn!(error = %e, "unreadable rateLimiter config; Redis dropped");
                    self.limiter.configure(None).ok();
                    return;
                }
            },
        };
        if let Err(e) = self.limiter.configure(parsed.as_ref()) {
            tracing::warn!(error = %e, "unusable rateLimiter config; the failure policy applies");
        }
    }

    fn metrics(&self, out: &mut String) {
        let stats = self.limiter.stats();
        let _ = write!(
            out,
            "# HELP gantry_gateway_rate_limiter_failures_total Requests the rate limiter's \
             failure policy decided (Redis unreachable or failing, no config, unusable handle).\n\
             # TYPE gantry_gateway_rate_limiter_failures_total counter\n\
             gantry_gateway_rate_limiter_failures_total {}\n\
             # HELP gantry_gateway_rate_limiter_release_failures_total Concurrent slots whose \
             release failed (they expire after concurrentSlotTtl).\n\
             # TYPE gantry_gateway_rate_limiter_release_failures_total counter\n\
             gantry_gateway_rate_limiter_release_failures_total {}\n",
            stats.failures(),
            stats.release_failures()
        );
    }

    /// Under [`EmulatedBug::LimiterForgetsReleases`] a concurrent slot is taken and its
    /// release forgotten: it stays taken until `concurrentSlotTtl` expires it.
    fn execute<'a>(
        &'a self,
        table: &'a Table<Self>,
        req: RequestView<'a>,
        bug: Option<EmulatedBug>,
    ) -> Decision<'a> {
        let (rule_id, handle): (&str, Result<&RateLimiterHandle, &str>) =
            match matched_rule(table, &req) {
                Err(r) => return now(Outcome::Reject(r)),
                Ok(None) => return now(Outcome::Continue(None)),
                Ok(Some(RuleChoice::Default)) => (DEFAULT_RULE_ID, Ok(default_handle())),
                Ok(Some(RuleChoice::Rule(rule))) => {
                    (&rule.id, rule.handle.as_ref().map_err(String::as_str))
                }
            };
        let handle = match handle {
            Ok(handle) => handle,
            Err(why) => {
                tracing::warn!(rule = rule_id, error = why, "unusable rateLimiter handle");
                return now(outcome(self.limiter.unusable_handle()));
            }
        };
        let id = key::limiter_id(
            rule_id,
            handle.key_resolver_name,
            req.headers,
            req.peer,
            req.peer_trusted,
        );
        futures_util::future::Either::Right(Box::pin(async move {
            let mut decision = self.limiter.check(&id, handle).await;
            if let Some(release) = &mut decision.release
                && bug == Some(EmulatedBug::LimiterForgetsReleases)
            {
                release.forget();
            }
            outcome(decision)
        }))
    }
}

/// ShenYu's handle for the synthesized `default_rule`.
fn default_handle() -> &'static RateLimiterHandle {
    static DEFAULT: std::sync::LazyLock<RateLimiterHandle> =
        std::sync::LazyLock::new(RateLimiterHandle::default);
    &DEFAULT
}

/// What the chain does with a limiter decision.
fn outcome(decision: super::Decision) -> Outcome {
    tracing::debug!(
        allowed = decision.allowed,
        remaining = decision.remaining,
        "rate limiter decision"
    );
    if decision.allowed {
        Outcome::Continue(decision.release.map(|r| Box::new(r) as Guard))
    } else {
        Outcome::Reject(Rejection::new(
            StatusCode::TOO_MANY_REQUESTS,
            GatewayError::new(429, RESTRICTED),
        ))
    }
}
