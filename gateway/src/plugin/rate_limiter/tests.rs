//! The scripts against a real `redis-server` (one per test, on a free port, in a temp dir,
//! killed on drop), with `now` passed explicitly: no sleeps. Each bug-fix test names the
//! ShenYu behaviour that would fail it. Without `redis-server` on PATH these are built ignored
//! (gateway/build.rs) unless `GANTRY_REQUIRE` names `redis`; then they fail.

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue};
use model::{Algorithm, KeyResolver, RateLimiterConfig, RateLimiterHandle, RedisMode};

use super::key::limiter_id;
use super::{Decision, Limiter, LimiterError};

/// A `redis-server` of its own, killed (and its directory removed) on drop.
struct RedisServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

impl RedisServer {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let server = RedisServer {
            child: spawn_redis(port, dir.path()),
            port,
            _dir: dir,
        };
        server.answering().await;
        server
    }

    /// Kills the server (its data is gone).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts an empty server again on the same port.
    async fn restart(&mut self) {
        self.child = spawn_redis(self.port, self._dir.path());
        self.answering().await;
    }

    /// Waits until the server answers `PING`.
    async fn answering(&self) {
        let port = self.port;
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        loop {
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                let pong: redis::RedisResult<String> =
                    redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING in 10 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A standalone config for this server.
    fn config(&self) -> RateLimiterConfig {
        RateLimiterConfig {
            url: Some(format!("127.0.0.1:{}", self.port)),
            ..RateLimiterConfig::default()
        }
    }

    /// A limiter on this server.
    fn limiter(&self) -> Limiter {
        let limiter = Limiter::new();
        limiter.configure(Some(&self.config())).unwrap();
        limiter
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `redis-server` on `127.0.0.1:port`, keeping nothing on disk but in `dir`.
fn spawn_redis(port: u16, dir: &std::path::Path) -> Child {
    Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server on PATH (GANTRY_REQUIRE names redis, or gateway/build.rs found it)")
}

/// A handle of `algorithm` with `rate` and `capacity`, requestCount 1, no key resolver.
fn handle(algorithm: Algorithm, rate: f64, capacity: f64) -> RateLimiterHandle {
    RateLimiterHandle {
        algorithm_name: Some(algorithm),
        replenish_rate: rate,
        burst_capacity: capacity,
        request_count: 1.0,
        key_resolver_name: None,
    }
}

/// The allowed/denied pattern of one request per entry of `seconds`, and the script numbers;
/// concurrent slots taken are never released.
async fn pattern(
    limiter: &Limiter,
    id: &str,
    h: &RateLimiterHandle,
    seconds: &[i64],
) -> Vec<(bool, i64)> {
    let mut out = Vec::new();
    for now in seconds {
        let d = limiter
            .try_check_at(id, h, *now)
            .await
            .expect("redis decides");
        out.push((d.allowed, d.remaining));
        // A concurrent slot stays taken (as if its request never ended); dropping the
        // release would free it from a spawned task, racing the next check.
        std::mem::forget(d.release);
    }
    out
}

/// Allowed.
const Y: bool = true;
/// Denied.
const N: bool = false;

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn token_bucket_refills_at_the_rate_up_to_the_capacity() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let h = handle(Algorithm::TokenBucket, 1.0, 2.0);
    assert_eq!(
        pattern(&limiter, "r", &h, &[100, 100, 100, 101, 101, 110, 110, 110]).await,
        [
            (Y, 1),
            (Y, 0),
            (N, 0),
            (Y, 0),
            (N, 0),
            (Y, 1),
            (Y, 0),
            (N, 0)
        ]
    );
    // requestCount: a request of 2 takes the whole bucket.
    let heavy = RateLimiterHandle {
        request_count: 2.0,
        ..h
    };
    assert_eq!(
        pattern(&limiter, "heavy", &heavy, &[200, 200, 201, 202]).await,
        [(Y, 0), (N, 0), (N, 1), (Y, 0)]
    );
}

/// ShenYu: ttl = floor(2c/r) = 0 when c/r < 0.5, SETEX fails, the error fails open: every
/// request passes.
#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn token_bucket_with_a_tiny_fill_time_still_limits() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let h = handle(Algorithm::TokenBucket, 10.0, 2.0);
    assert_eq!(
        pattern(&limiter, "r", &h, &[100, 100, 100, 100]).await,
        [(Y, 1), (Y, 0), (N, 0), (N, 0)]
    );
    assert_eq!(limiter.stats().failures(), 0);
}

/// ShenYu counts before evicting: at 102 both entries of 100 are still counted (the key's
/// ceil(window) TTL is wall-clock and has not run out), a spurious denial.
#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn sliding_window_evicts_before_counting() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    // 2 requests per 2 s.
    let h = handle(Algorithm::SlidingWindow, 1.0, 2.0);
    assert_eq!(
        pattern(&limiter, "r", &h, &[100, 100, 100, 101, 102, 102, 102]).await,
        [(Y, 2), (Y, 1), (N, 0), (N, 0), (Y, 2), (Y, 1), (N, 0)]
    );
    // requestCount is ignored, as in ShenYu.
    let heavy = RateLimiterHandle {
        request_count: 2.0,
        ..h
    };
    assert_eq!(
        pattern(&limiter, "heavy", &heavy, &[100, 100, 100]).await,
        [(Y, 2), (Y, 1), (N, 0)]
    );
}

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn leaky_bucket_leaks_at_the_rate_and_stores_nothing_on_denial() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let h = handle(Algorithm::LeakyBucket, 1.0, 2.0);
    // The number is the water level with this request; a denial reports the overflow.
    assert_eq!(
        pattern(&limiter, "r", &h, &[100, 100, 100, 101, 101, 103]).await,
        [(Y, 1), (Y, 2), (N, 3), (Y, 2), (N, 3), (Y, 1)]
    );
    // The denial at 105 stores nothing: at 106 the leak counts from 104.
    let full = RateLimiterHandle {
        request_count: 2.0,
        ..h.clone()
    };
    assert_eq!(
        pattern(&limiter, "r", &full, &[104, 105]).await,
        [(Y, 2), (N, 3)]
    );
    assert_eq!(pattern(&limiter, "r", &full, &[106]).await, [(Y, 2)]);
}

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn concurrent_slots_are_released_and_dropped_releases_free_them_too() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let h = handle(Algorithm::Concurrent, 0.0, 2.0);
    let first = limiter.try_check_at("r", &h, 100).await.unwrap();
    let second = limiter.try_check_at("r", &h, 100).await.unwrap();
    assert_eq!((first.allowed, first.remaining), (Y, 1));
    assert_eq!((second.allowed, second.remaining), (Y, 2));
    let third = limiter.try_check_at("r", &h, 100).await.unwrap();
    assert_eq!((third.allowed, third.remaining), (N, 2));
    assert!(third.release.is_none(), "a denied request holds no slot");
    first.release.expect("a slot").release().await;
    let fourth = limiter.try_check_at("r", &h, 101).await.unwrap();
    assert_eq!((fourth.allowed, fourth.remaining), (Y, 2));
    // A cancelled request drops its release: the slot is freed from a spawned task.
    drop(second);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let d = limiter.try_check_at("r", &h, 101).await.unwrap();
        if d.allowed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dropped release never freed its slot"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(limiter.stats().release_failures(), 0);
}

/// `EmulatedBug::LimiterForgetsReleases`: the response ends and releases (as the proxy does),
/// but the forgotten slot stays taken.
#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn a_forgotten_release_keeps_its_slot() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let h = handle(Algorithm::Concurrent, 0.0, 1.0);
    let first = limiter.try_check_at("r", &h, 100).await.unwrap();
    assert_eq!((first.allowed, first.remaining), (Y, 1));
    let mut release = first.release.expect("a slot");
    release.forget();
    release.release().await;
    let second = limiter.try_check_at("r", &h, 101).await.unwrap();
    assert_eq!((second.allowed, second.remaining), (N, 1));
}

/// ShenYu: no expiry; slots of requests that never released stay until someone deletes the
/// key, and the limiter denies forever.
#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn leaked_concurrent_slots_expire_after_the_slot_ttl() {
    let redis = RedisServer::start().await;
    let limiter = Limiter::new();
    let config = RateLimiterConfig {
        concurrent_slot_ttl: 30,
        ..redis.config()
    };
    limiter.configure(Some(&config)).unwrap();
    let h = handle(Algorithm::Concurrent, 0.0, 2.0);
    for now in [100, 110] {
        let d = limiter.try_check_at("r", &h, now).await.unwrap();
        assert!(d.allowed);
        // A crash: the release never runs, not even on drop.
        std::mem::forget(d.release);
    }
    assert_eq!(
        pattern(&limiter, "r", &h, &[129, 130, 130, 140]).await,
        [(N, 2), (Y, 2), (N, 2), (Y, 2)]
    );
}

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn limiters_are_isolated_by_id_and_algorithm_and_use_shenyus_keys() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let one = handle(Algorithm::TokenBucket, 1.0, 1.0);
    let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut headers = HeaderMap::new();
    let by_address = RateLimiterHandle {
        key_resolver_name: Some(KeyResolver::RemoteAddress),
        ..one.clone()
    };
    headers.insert("x-forwarded-for", HeaderValue::from_static("1.1.1.1"));
    let a = limiter_id("rule", by_address.key_resolver_name, &headers, peer, true);
    headers.insert("x-forwarded-for", HeaderValue::from_static("2.2.2.2"));
    let b = limiter_id("rule", by_address.key_resolver_name, &headers, peer, true);
    assert_eq!((a.as_str(), b.as_str()), ("rule-1.1.1.1", "rule-2.2.2.2"));
    assert_eq!(
        pattern(&limiter, &a, &by_address, &[100, 100]).await,
        [(Y, 0), (N, 0)]
    );
    assert_eq!(pattern(&limiter, &b, &by_address, &[100]).await, [(Y, 0)]);
    // The same id under another algorithm has its own keys.
    let leaky = handle(Algorithm::LeakyBucket, 1.0, 1.0);
    assert_eq!(pattern(&limiter, &a, &leaky, &[100]).await, [(Y, 1)]);
    let client = redis::Client::open(format!("redis://127.0.0.1:{}", redis.port)).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "request_leaky_rate_limiter.{rule-1.1.1.1}.timestamp",
            "request_leaky_rate_limiter.{rule-1.1.1.1}.tokens",
            "request_rate_limiter.{rule-1.1.1.1}.timestamp",
            "request_rate_limiter.{rule-1.1.1.1}.tokens",
            "request_rate_limiter.{rule-2.2.2.2}.timestamp",
            "request_rate_limiter.{rule-2.2.2.2}.tokens",
        ]
    );
}

/// Everything the failure policy decides, open and closed.
#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn redis_down_fails_open_by_default_and_closed_when_configured() {
    let redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let h = handle(Algorithm::TokenBucket, 1.0, 1.0);
    let live = limiter.check("r", &h).await;
    assert!(live.allowed && live.remaining == 0);
    let config = redis.config();
    drop(redis);

    let by_policy = |d: Decision| (d.allowed, d.remaining);
    assert_eq!(by_policy(limiter.check("r", &h).await), (Y, -1));
    assert_eq!(limiter.stats().failures(), 1);

    let closed = RateLimiterConfig {
        fail_closed: true,
        ..config
    };
    limiter.configure(Some(&closed)).unwrap();
    assert_eq!(by_policy(limiter.check("r", &h).await), (N, -1));
    assert_eq!(by_policy(limiter.unusable_handle()), (N, -1));
    // An invalid handle never reaches Redis; the policy answers.
    let bad = handle(Algorithm::TokenBucket, 0.0, 1.0);
    assert!(matches!(
        limiter.try_check_at("r", &bad, 1).await,
        Err(LimiterError::Handle("replenishRate", _))
    ));
    assert_eq!(by_policy(limiter.check("r", &bad).await), (N, -1));
    assert_eq!(limiter.stats().failures(), 4);

    // No config: fail open.
    limiter.configure(None).unwrap();
    assert!(matches!(
        limiter.try_check_at("r", &h, 1).await,
        Err(LimiterError::NotConfigured)
    ));
    assert_eq!(by_policy(limiter.check("r", &h).await), (Y, -1));
    assert_eq!(by_policy(limiter.unusable_handle()), (Y, -1));
}

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn a_new_config_replaces_the_client_and_a_bad_one_says_why() {
    let first = RedisServer::start().await;
    let second = RedisServer::start().await;
    let limiter = first.limiter();
    let h = handle(Algorithm::TokenBucket, 1.0, 1.0);
    assert_eq!(
        pattern(&limiter, "r", &h, &[100, 100]).await,
        [(Y, 0), (N, 0)]
    );
    // Same connection, other policy: the state stays.
    let closed = RateLimiterConfig {
        fail_closed: true,
        ..first.config()
    };
    limiter.configure(Some(&closed)).unwrap();
    assert_eq!(pattern(&limiter, "r", &h, &[100]).await, [(N, 0)]);
    // Another server: fresh state.
    limiter.configure(Some(&second.config())).unwrap();
    assert_eq!(pattern(&limiter, "r", &h, &[100]).await, [(Y, 0)]);

    let sentinel = RateLimiterConfig {
        mode: RedisMode::Sentinel,
        master: Some("mymaster".to_owned()),
        ..second.config()
    };
    let e = limiter.configure(Some(&sentinel)).unwrap_err();
    assert!(matches!(
        e,
        LimiterError::UnsupportedMode(RedisMode::Sentinel)
    ));
    assert!(e.to_string().contains("`sentinel` is not supported"), "{e}");
    let cluster = RateLimiterConfig {
        mode: RedisMode::Cluster,
        ..second.config()
    };
    assert!(matches!(
        limiter.configure(Some(&cluster)),
        Err(LimiterError::UnsupportedMode(RedisMode::Cluster))
    ));
    let no_url = RateLimiterConfig::default();
    assert!(matches!(
        limiter.configure(Some(&no_url)),
        Err(LimiterError::Config("url", _))
    ));
    // After a refused config the limiter has no Redis: the policy answers.
    assert!(matches!(
        limiter.try_check_at("r", &h, 100).await,
        Err(LimiterError::NotConfigured)
    ));
}

#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn password_and_database_are_used() {
    let redis = RedisServer::start().await;
    let admin = redis::Client::open(format!("redis://127.0.0.1:{}", redis.port)).unwrap();
    let mut conn = admin.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("s3cret")
        .query_async(&mut conn)
        .await
        .unwrap();
    let limiter = redis.limiter();
    let h = handle(Algorithm::TokenBucket, 1.0, 1.0);
    assert_eq!(
        limiter.check("r", &h).await.remaining,
        -1,
        "no password: refused"
    );
    let config = RateLimiterConfig {
        password: Some("s3cret".to_owned()),
        database: 3,
        ..redis.config()
    };
    limiter.configure(Some(&config)).unwrap();
    assert_eq!(pattern(&limiter, "r", &h, &[100]).await, [(Y, 0)]);
    let db3 = format!("redis://:s3cret@127.0.0.1:{}/3", redis.port);
    let mut conn = redis::Client::open(db3)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let n: i64 = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
    assert_eq!(n, 2);
}

/// Issue 35: with Redis down every limited request waited out the connection's timeouts and
/// retries (about 0.5 s) before the failure policy answered. After the first failure the
/// breaker answers at once; once Redis is back, a probe closes it and limiting resumes.
#[tokio::test]
#[cfg_attr(
    gantry_redis_skip,
    ignore = "redis-server is not on PATH (GANTRY_REQUIRE=redis makes this a failure)"
)]
async fn with_redis_down_the_policy_answers_at_once_until_a_probe_finds_it_back() {
    let mut redis = RedisServer::start().await;
    let limiter = redis.limiter();
    let roomy = handle(Algorithm::TokenBucket, 1.0, 1000.0);
    assert!(limiter.check("roomy", &roomy).await.remaining >= 0);
    redis.stop();
    let by_policy = |d: Decision| (d.allowed, d.remaining);
    let started = Instant::now();
    assert_eq!(by_policy(limiter.check("roomy", &roomy).await), (Y, -1));
    let first = started.elapsed();
    let mut slowest = Duration::ZERO;
    for _ in 0..50 {
        let started = Instant::now();
        assert_eq!(by_policy(limiter.check("roomy", &roomy).await), (Y, -1));
        slowest = slowest.max(started.elapsed());
    }
    assert!(
        slowest < super::REDIS_TIMEOUT / 10,
        "with the breaker open a request took {slowest:?} (the failure that opened it: {first:?})"
    );
    assert_eq!(limiter.stats().failures(), 51);

    redis.restart().await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if limiter.check("roomy", &roomy).await.remaining >= 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Redis back, but the limiter never asked it again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tight = handle(Algorithm::TokenBucket, 0.001, 1.0);
    let results: Vec<(bool, i64)> = [
        limiter.check("tight", &tight).await,
        limiter.check("tight", &tight).await,
    ]
    .into_iter()
    .map(by_policy)
    .collect();
    assert_eq!(results, [(Y, 0), (N, 0)]);
}

/// Every script's first `EVAL` fits a 1 ms-a-byte link within the 1 s Redis timeout: its code
/// alone, under 600 bytes (with the keys and arguments about 700). A script sent with its
/// comments (about 1 KiB each) fails this.
#[test]
fn the_scripts_go_without_their_comments() {
    for source in [
        include_str!("scripts/token_bucket.lua"),
        include_str!("scripts/sliding_window.lua"),
        include_str!("scripts/leaky_bucket.lua"),
        include_str!("scripts/concurrent.lua"),
    ] {
        let code = super::wire_code(source);
        assert!(code.len() < 600, "{} bytes:\n{code}", code.len());
        assert!(code.lines().all(|l| !l.starts_with("--") && l == l.trim()));
        assert!(
            code.lines()
                .last()
                .is_some_and(|l| l.starts_with("return {"))
        );
    }
}
