//! The rateLimiter plugin ([`RateLimiter`], ShenYu order 20) and its core (semantics doc §8):
//! a Redis client built from the plugin's
//! [`RateLimiterConfig`], four Lua scripts (one per [`Algorithm`], written for gantry, with
//! ShenYu's keys and replies and ShenYu's bugs fixed; see `scripts/`), the failure policy, and
//! the key resolvers ([`key::limiter_id`], [`key::remote_address`]) and the peers whose
//! forwarding headers they believe ([`TrustedProxies`]).
//!
//! How the plugin uses it (see [`plugin`]): keep one [`Limiter`]; on every rateLimiter plugin config change
//! call [`Limiter::configure`]; per request, for the matched rule's parsed handle, build the
//! id with [`key::limiter_id`] and call [`Limiter::check`]. Not `allowed`: answer 429 with
//! ShenYu's body. A [`Release`] (concurrent limiter only) frees the request's slot: the
//! proxy awaits [`Release::release`] (through [`Hold`](crate::plugin::Hold)) before the
//! response's last byte (ShenYu's `doFinally`, without its race with the client's next
//! request); dropping it unreleased (a failed or cancelled response) frees the slot from a
//! spawned task. A rule whose handle
//! does not parse (e.g. an unknown `algorithmName` that got past the admin) gets
//! [`Limiter::unusable_handle`]. [`Limiter::stats`] has the failure counters for `/metrics`.
//!
//! Time: the gateway passes `now` in whole seconds (ShenYu's granularity, and what makes the
//! tests deterministic); gateways sharing a Redis need synchronised clocks, as ShenYu's do.
//!
//! Failure policy: when Redis cannot decide (not configured, unreachable, timed out, script
//! error, unusable handle) the request is let through (ShenYu's behaviour, remaining -1)
//! unless the config says `failClosed: true`; each such request is counted. After a Redis
//! failure a [`breaker::Breaker`] lets the policy answer at once for a while (1 s, doubling
//! up to 4 s while probes fail) instead of every request waiting on Redis's timeouts; one
//! request then probes Redis, and its success closes the breaker.

mod breaker;
pub(crate) mod key;
mod plugin;
#[cfg(test)]
mod tests;
mod trusted;

pub(crate) use plugin::RateLimiter;
pub use trusted::{BadCidr, TrustedProxies};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use breaker::{Breaker, Pass};
use model::{Algorithm, RateLimiterConfig, RateLimiterHandle, RedisMode};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{IntoConnectionInfo, RedisConnectionInfo, Script};

/// How long connecting to Redis and each script call may take before the failure policy
/// decides.
const REDIS_TIMEOUT: Duration = Duration::from_secs(1);

/// The script of each algorithm (`EVALSHA`, loaded on first use), as [`wire_code`] sends it.
static SCRIPTS: LazyLock<[Script; 4]> = LazyLock::new(|| {
    [
        include_str!("scripts/token_bucket.lua"),
        include_str!("scripts/sliding_window.lua"),
        include_str!("scripts/leaky_bucket.lua"),
        include_str!("scripts/concurrent.lua"),
    ]
    .map(|source| Script::new(&wire_code(source)))
});

/// `source` without its comment lines, blank lines and indentation: what the first `EVAL` of
/// a script sends is half as long (each script's comments are as long as its code), so it
/// crosses a slow Redis link within [`REDIS_TIMEOUT`] (at 1 ms a byte, the `slice` run mode,
/// 1 KiB did not). The scripts have no comments after code and no multi-line strings.
fn wire_code(source: &str) -> String {
    source
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The script of `algorithm`.
fn script(algorithm: Algorithm) -> &'static Script {
    let i = match algorithm {
        Algorithm::TokenBucket => 0,
        Algorithm::SlidingWindow => 1,
        Algorithm::LeakyBucket => 2,
        Algorithm::Concurrent => 3,
    };
    &SCRIPTS[i]
}

/// Why the limiter could not decide.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LimiterError {
    /// The plugin has no usable Redis config.
    #[error("the rateLimiter plugin has no Redis configured")]
    NotConfigured,
    /// The config names a mode gantry does not connect to.
    #[error("redis mode `{0}` is not supported by gantry's gateway (only standalone)")]
    UnsupportedMode(RedisMode),
    /// The config is not valid (field, message).
    #[error("rateLimiter config: {0}: {1}")]
    Config(&'static str, String),
    /// The rule handle is not usable (field, message).
    #[error("rateLimiter handle: {0}: {1}")]
    Handle(&'static str, String),
    /// Redis failed: unreachable, timed out, or the script failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Redis failed recently: not asked until the breaker lets a probe through.
    #[error("redis failed recently; not asked until the next probe")]
    BreakerOpen,
}

/// The limiter's answer for one request.
#[derive(Debug)]
pub(crate) struct Decision {
    /// Whether the request may proceed.
    pub(crate) allowed: bool,
    /// The script's number: tokens left (token bucket), window capacity left before this
    /// request (sliding window), water level (leaky bucket), requests in flight (concurrent);
    /// -1 when the failure policy decided.
    pub(crate) remaining: i64,
    /// Frees the concurrent slot this request took.
    pub(crate) release: Option<Release>,
}

impl Decision {
    /// The failure policy's answer (`fail_closed`: deny).
    fn by_policy(fail_closed: bool) -> Self {
        Decision {
            allowed: !fail_closed,
            remaining: -1,
            release: None,
        }
    }
}

/// Failure counters, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct LimiterStats {
    /// Requests the failure policy decided (Redis error, no config, unusable handle).
    failures: AtomicU64,
    /// Concurrent slots whose `ZREM` failed (they expire after `concurrentSlotTtl`).
    release_failures: AtomicU64,
}

impl LimiterStats {
    /// Requests the failure policy decided.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Concurrent slot releases that failed.
    pub(crate) fn release_failures(&self) -> u64 {
        self.release_failures.load(Ordering::Relaxed)
    }
}

/// A connected (or connecting) Redis and the config it came from.
struct Backend {
    /// The config the connection was made for (its policy and slot lifetime are used too).
    config: RateLimiterConfig,
    /// The multiplexed, self-reconnecting connection (cloned per request).
    conn: ConnectionManager,
    /// Whether Redis is asked at all (shared by the backends of one connection).
    breaker: Arc<Breaker>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("mode", &self.config.mode)
            .field("url", &self.config.url)
            .finish_non_exhaustive()
    }
}

/// The Redis connection for `config`: standalone only. Lazy: nothing is sent until the first
/// request, and a server that is down is retried in the background, so requests meanwhile
/// meet the failure policy instead of waiting.
fn connect(config: &RateLimiterConfig) -> Result<ConnectionManager, LimiterError> {
    config
        .validate()
        .map_err(|(field, message)| LimiterError::Config(field, message))?;
    if config.mode != RedisMode::Standalone {
        return Err(LimiterError::UnsupportedMode(config.mode));
    }
    let address = config.addresses()[0];
    let (host, port) = address.rsplit_once(':').expect("validated host:port");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().expect("validated port");
    let mut settings = RedisConnectionInfo::default().set_db(config.database);
    if let Some(password) = &config.password {
        settings = settings.set_password(password);
    }
    let info = (host, port)
        .into_connection_info()?
        .set_redis_settings(settings);
    let client = redis::Client::open(info)?;
    let manager_config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(REDIS_TIMEOUT))
        .set_response_timeout(Some(REDIS_TIMEOUT))
        .set_number_of_retries(2);
    Ok(ConnectionManager::new_lazy_with_config(
        client,
        manager_config,
    )?)
}

/// The rate limiter: the current Redis connection, the failure policy, the counters.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    /// The Redis in use; none before the first config and after an unusable one.
    backend: ArcSwapOption<Backend>,
    /// The failure policy: deny (true) or let through (false) when Redis cannot decide.
    fail_closed: AtomicBool,
    /// The failure counters (shared with outstanding [`Release`]s).
    stats: Arc<LimiterStats>,
}

impl Limiter {
    /// A limiter with no Redis: every request meets the failure policy (open) until
    /// [`configure`](Self::configure).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Applies the plugin's config (`None`: the plugin has none or was removed). A config that
    /// connects the same way keeps the connection and only takes the new policy and slot
    /// lifetime; another one replaces the client (the old one closes when its last request
    /// ends). Must run inside the Tokio runtime. An unusable config (invalid, or a mode other
    /// than standalone) drops the connection, keeps its `failClosed`, and says why.
    pub(crate) fn configure(&self, config: Option<&RateLimiterConfig>) -> Result<(), LimiterError> {
        let Some(config) = config else {
            self.fail_closed.store(false, Ordering::Relaxed);
            self.backend.store(None);
            return Ok(());
        };
        self.fail_closed
            .store(config.fail_closed, Ordering::Relaxed);
        let current = self.backend.load_full();
        let (conn, breaker) = match current {
            Some(b) if b.config.same_connection(config) => (b.conn.clone(), b.breaker.clone()),
            _ => match connect(config) {
                Ok(conn) => (conn, Arc::default()),
                Err(e) => {
                    self.backend.store(None);
                    return Err(e);
                }
            },
        };
        self.backend.store(Some(Arc::new(Backend {
            config: config.clone(),
            conn,
            breaker,
        })));
        Ok(())
    }

    /// The failure counters.
    pub(crate) fn stats(&self) -> &LimiterStats {
        &self.stats
    }

    /// The answer for a request whose rule handle could not be used: the failure policy,
    /// counted as a failure.
    pub(crate) fn unusable_handle(&self) -> Decision {
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        Decision::by_policy(self.fail_closed.load(Ordering::Relaxed))
    }

    /// Decides request `id` (from [`key::limiter_id`]) under `handle`, now; when Redis cannot
    /// decide, the failure policy does (and the failure is counted and logged).
    pub(crate) async fn check(&self, id: &str, handle: &RateLimiterHandle) -> Decision {
        let now = model::world::since_epoch().as_secs();
        self.check_at(id, handle, i64::try_from(now).unwrap_or(i64::MAX))
            .await
    }

    /// [`check`](Self::check) at second `now`.
    async fn check_at(&self, id: &str, handle: &RateLimiterHandle, now: i64) -> Decision {
        match self.try_check_at(id, handle, now).await {
            Ok(decision) => decision,
            Err(e) => {
                match e {
                    LimiterError::BreakerOpen => {
                        tracing::debug!(limiter = id, "rate limiter: {e}; failure policy applies");
                    }
                    // Logged where the breaker opened.
                    LimiterError::Redis(_) => {}
                    _ => {
                        tracing::warn!(limiter = id, error = %e, "rate limiter failed; failure policy applies");
                    }
                }
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                Decision::by_policy(self.fail_closed.load(Ordering::Relaxed))
            }
        }
    }

    /// Runs `handle`'s script for limiter `id` at second `now`, without the failure policy.
    async fn try_check_at(
        &self,
        id: &str,
        handle: &RateLimiterHandle,
        now: i64,
    ) -> Result<Decision, LimiterError> {
        let algorithm = handle
            .validate()
            .map_err(|(field, message)| LimiterError::Handle(field, message))?;
        let backend = self
            .backend
            .load_full()
            .ok_or(LimiterError::NotConfigured)?;
        if backend.breaker.pass() == Pass::FailFast {
            return Err(LimiterError::BreakerOpen);
        }
        let key_name = algorithm.key_name();
        let key = format!("{key_name}.{{{id}}}.tokens");
        let second = match algorithm {
            Algorithm::TokenBucket | Algorithm::LeakyBucket => {
                format!("{key_name}.{{{id}}}.timestamp")
            }
            Algorithm::SlidingWindow => {
                format!(
                    "{:032x}.{{{id}}}.timestamp",
                    u128::from_be_bytes(model::world::random_bytes())
                )
            }
            Algorithm::Concurrent => format!(
                "{:032x}.{{{id}}}.request",
                u128::from_be_bytes(model::world::random_bytes())
            ),
        };
        let mut conn = backend.conn.clone();
        let answer: redis::RedisResult<(i64, i64)> = script(algorithm)
            .key(&key)
            .key(&second)
            .arg(handle.replenish_rate)
            .arg(handle.burst_capacity)
            .arg(now)
            .arg(handle.request_count)
            .arg(backend.config.concurrent_slot_ttl)
            .invoke_async(&mut conn)
            .await;
        let (allowed, remaining) = match answer {
            Ok(answer) => {
                backend.breaker.success();
                answer
            }
            Err(e) => {
                let open = backend.breaker.failure();
                tracing::warn!(limiter = id, error = %e, "rate limiter failed; failure policy applies, redis not asked for {open:?}");
                return Err(e.into());
            }
        };
        let allowed = allowed == 1;
        let release = (allowed && algorithm == Algorithm::Concurrent).then(|| Release {
            slot: Some(Slot {
                conn,
                key,
                member: second,
                stats: Arc::clone(&self.stats),
            }),
        });
        Ok(Decision {
            allowed,
            remaining,
            release,
        })
    }
}

/// One concurrent slot to free.
struct Slot {
    /// The connection the slot was taken on.
    conn: ConnectionManager,
    /// The limiter's sorted set.
    key: String,
    /// This request's member in it.
    member: String,
    /// Where a failed release is counted.
    stats: Arc<LimiterStats>,
}

impl Slot {
    /// `ZREM`s the member; a failure is logged and counted (the slot then expires).
    async fn free(mut self) {
        let result: redis::RedisResult<i64> = redis::cmd("ZREM")
            .arg(&self.key)
            .arg(&self.member)
            .query_async(&mut self.conn)
            .await;
        if let Err(e) = result {
            tracing::warn!(key = %self.key, error = %e, "rate limiter: freeing a concurrent slot failed; it expires with concurrentSlotTtl");
            self.stats.release_failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Frees a concurrent limiter slot: [`release`](Self::release) when the response is done;
/// dropped unreleased, it frees the slot from a spawned task (when a runtime is there; if not,
/// the slot expires after `concurrentSlotTtl`).
pub(crate) struct Release {
    /// The slot, until freed.
    slot: Option<Slot>,
}

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Release")
            .field("member", &self.slot.as_ref().map(|s| &s.member))
            .finish()
    }
}

impl Release {
    /// Forgets the slot without freeing it: [`release`](Self::release) and the drop then do
    /// nothing, and the slot stays taken until `concurrentSlotTtl` expires it (the emulated
    /// [`crate::EmulatedBug::LimiterForgetsReleases`]).
    pub(crate) fn forget(&mut self) {
        self.slot = None;
    }

    /// Frees the slot now (`ZREM`); a failure is counted in
    /// [`LimiterStats::release_failures`].
    pub(crate) async fn release(mut self) {
        if let Some(slot) = self.slot.take() {
            slot.free().await;
        }
    }
}

impl crate::plugin::Hold for Release {
    /// The proxy awaits the `ZREM` before the response's last byte: a client's next request
    /// finds the slot free.
    fn finish(self: Box<Self>) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(self.release())
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(slot.free());
        }
    }
}
