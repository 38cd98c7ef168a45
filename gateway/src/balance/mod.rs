//! Load balancing over a divide selector's upstreams (semantics §7).
//!
//! [`Upstream`] is a divide upstream parsed once per snapshot (target URI parts ready for the
//! proxy). A [`Pool`] holds a selector's upstreams and the balancers' state (round-robin
//! weights, active-request counters, response times, p2c lag); it lives with the compiled
//! selector and is carried over to the next snapshot while the selector's handle is unchanged,
//! so a config change elsewhere does not reset it. [`Pool::pick`] follows ShenYu's
//! `AbstractLoadBalancer.select` (empty → none, one → it, else the rule's `loadBalance`) and
//! hands out a [`Lease`]: the request counts as active until the lease is dropped, which
//! records its time (the proxy drops it when the response body is finished).
//!
//! Differences from ShenYu (listed in the README): upstreams with `status == false` are never
//! chosen by any balancer (ShenYu's hash, leastActive and p2c choose them); leastActive counts
//! real in-flight requests (ShenYu never decrements, so it cycles); shortestResponse and p2c
//! time each request (ShenYu shares one `beginTime` field between concurrent requests); state
//! is per selector (ShenYu's balancers are process-wide singletons keyed by upstream URL).

mod hash;
mod least_active;
mod p2c;
mod random;
mod round_robin;
pub(crate) mod seed;
mod shortest_response;

use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

use http::HeaderValue;
use http::uri::{Authority, Scheme};
use model::{DivideUpstream, LoadBalance};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::EmulatedBug;
use model::lock::MutexExt;

/// An upstream ready to be proxied to.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    /// The upstream as synced.
    pub(crate) data: DivideUpstream,
    /// `http` or `https`.
    pub(crate) scheme: Scheme,
    /// `host:port`.
    pub(crate) authority: Authority,
    /// The Host header to send.
    pub(crate) host: HeaderValue,
}

impl Upstream {
    /// Parses a divide selector handle into its usable upstreams (`status == true`). An
    /// unreadable handle or upstream URL is logged and gives no upstream.
    pub(crate) fn parse_handle(handle: &str, selector_id: &str) -> Vec<Upstream> {
        let list = match DivideUpstream::parse_list(handle) {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(selector = %selector_id, error = %e, "unreadable divide selector handle");
                return Vec::new();
            }
        };
        list.into_iter()
            .filter(|u| u.status)
            .filter_map(|u| match Upstream::new(u) {
                Ok(up) => Some(up),
                Err(e) => {
                    tracing::warn!(selector = %selector_id, error = %e, "unusable upstream url");
                    None
                }
            })
            .collect()
    }

    pub(crate) fn new(data: DivideUpstream) -> Result<Upstream, String> {
        let url = data.base_url();
        let uri: http::Uri = url.parse().map_err(|e| format!("`{url}`: {e}"))?;
        let (Some(scheme), Some(authority)) = (uri.scheme().cloned(), uri.authority().cloned())
        else {
            return Err(format!("`{url}` has no scheme or host"));
        };
        let host =
            HeaderValue::from_str(authority.as_str()).map_err(|e| format!("`{url}`: {e}"))?;
        Ok(Upstream {
            data,
            scheme,
            authority,
            host,
        })
    }
}

/// What a balancer may look at besides the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PickContext {
    /// Wall clock in ms (warm-up, p2c).
    pub(crate) now_ms: i64,
    /// The client address (hash): the socket peer.
    pub(crate) client_ip: IpAddr,
    /// The ShenYu-style bug the gateway emulates (`--emulate-bug`), `None` normally; the
    /// balancers read the ones that are theirs.
    pub(crate) bug: Option<EmulatedBug>,
}

impl PickContext {
    /// Whether the gateway emulates `bug`.
    fn emulates(&self, bug: EmulatedBug) -> bool {
        self.bug == Some(bug)
    }
}

/// Per-upstream counters, updated with atomics only.
#[derive(Debug, Default)]
struct Stats {
    /// Requests leased and not finished.
    active: AtomicU64,
    /// Requests that got a response.
    succeeded: AtomicU64,
    /// Their summed time, µs.
    succeeded_us: AtomicU64,
    /// Wall-clock ms of the last pick (p2c).
    last_picked_ms: AtomicI64,
    /// Wall-clock ms of the last finished response (p2c).
    last_response_ms: AtomicI64,
    /// p2c's smoothed latency in ms, as `f64` bits.
    lag_bits: AtomicU64,
}

/// A selector's upstreams with the balancers' state.
#[derive(Debug)]
pub(crate) struct Pool {
    handle: String,
    upstreams: Vec<Upstream>,
    stats: Vec<Stats>,
    round_robin: Mutex<round_robin::State>,
    ring: hash::Ring,
}

impl Pool {
    /// A pool from a divide selector handle (see [`Upstream::parse_handle`]).
    pub(crate) fn from_handle(handle: &str, selector_id: &str) -> Pool {
        let mut pool = Pool::new(Upstream::parse_handle(handle, selector_id));
        handle.clone_into(&mut pool.handle);
        pool
    }

    /// A pool over upstreams.
    pub(crate) fn new(upstreams: Vec<Upstream>) -> Pool {
        Pool {
            handle: String::new(),
            stats: upstreams.iter().map(|_| Stats::default()).collect(),
            round_robin: Mutex::new(round_robin::State::new(upstreams.len())),
            ring: hash::Ring::new(&upstreams),
            upstreams,
        }
    }

    /// The handle this pool was parsed from (to reuse it while unchanged).
    pub(crate) fn handle(&self) -> &str {
        &self.handle
    }

    /// Chooses an upstream index with `kind` (`None` only for an empty pool); one upstream is
    /// returned as is.
    pub(crate) fn choose(
        &self,
        kind: LoadBalance,
        ctx: &PickContext,
        rng: &mut impl Rng,
    ) -> Option<usize> {
        match self.upstreams.len() {
            0 => None,
            1 => Some(0),
            _ => Some(match kind {
                LoadBalance::Random => random::pick(
                    &self.upstreams,
                    ctx.now_ms,
                    ctx.emulates(EmulatedBug::RandomIgnoresWeights),
                    rng,
                ),
                LoadBalance::RoundRobin => self.round_robin.locked().pick(
                    &self.upstreams,
                    ctx.now_ms,
                    ctx.emulates(EmulatedBug::RoundRobinIgnoresWeights),
                ),
                LoadBalance::Hash => self
                    .ring
                    .pick(ctx.client_ip, ctx.emulates(EmulatedBug::HashRingOffByOne)),
                LoadBalance::LeastActive => least_active::pick(
                    self,
                    ctx.now_ms,
                    ctx.emulates(EmulatedBug::LeastActiveIgnoresInFlight),
                    rng,
                ),
                LoadBalance::P2c => p2c::pick(self, ctx.now_ms, rng),
                LoadBalance::ShortestResponse => shortest_response::pick(self, ctx.now_ms, rng),
            }),
        }
    }

    /// Chooses and leases an upstream; while a seed is set ([`seed`]) the choice's random
    /// draws come from the seeded sequence.
    pub(crate) fn pick(self: &Arc<Self>, kind: LoadBalance, ctx: &PickContext) -> Option<Lease> {
        let index = match seed::next() {
            Some(s) => self.choose(kind, ctx, &mut StdRng::seed_from_u64(s)),
            None => model::world::with_rng(|mut rng| self.choose(kind, ctx, &mut rng)),
        }?;
        Some(self.lease(index, ctx.now_ms))
    }

    /// Leases upstream `index` (which must exist): it counts as active until the lease drops.
    pub(crate) fn lease(self: &Arc<Self>, index: usize, now_ms: i64) -> Lease {
        let stats = &self.stats[index];
        stats.active.fetch_add(1, Ordering::Relaxed);
        stats.last_picked_ms.store(now_ms, Ordering::Relaxed);
        Lease {
            pool: self.clone(),
            index,
            started: Instant::now(),
            responded: false,
        }
    }

    /// The index of the upstream whose `upstreamUrl` is `url` (ShenYu's `specify-domain`).
    pub(crate) fn find(&self, url: &str) -> Option<usize> {
        self.upstreams
            .iter()
            .position(|u| u.data.upstream_url == url)
    }

    /// Failover: a weighted-random upstream not in `tried`, if any is left.
    pub(crate) fn failover(&self, tried: &[usize], now_ms: i64) -> Option<usize> {
        let left: Vec<usize> = (0..self.upstreams.len())
            .filter(|i| !tried.contains(i))
            .collect();
        (!left.is_empty()).then(|| {
            model::world::with_rng(|mut rng| {
                weighted_among(&self.upstreams, &left, now_ms, &mut rng)
            })
        })
    }

    fn active(&self, index: usize) -> u64 {
        self.stats[index].active.load(Ordering::Relaxed)
    }

    fn finish(&self, index: usize, elapsed_us: u64, responded: bool) {
        let stats = &self.stats[index];
        let _ = stats
            .active
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if responded {
            stats.succeeded.fetch_add(1, Ordering::Relaxed);
            stats.succeeded_us.fetch_add(elapsed_us, Ordering::Relaxed);
            p2c::record(stats, now_ms(), elapsed_us);
        }
    }
}

/// A leased upstream: counted as active until dropped; the drop records the request's time.
#[derive(Debug)]
pub(crate) struct Lease {
    pool: Arc<Pool>,
    index: usize,
    started: Instant,
    responded: bool,
}

impl Lease {
    /// The upstream's index in its pool.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The pool the upstream belongs to.
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The upstream.
    pub(crate) fn upstream(&self) -> &Upstream {
        &self.pool.upstreams[self.index]
    }

    /// Marks that the upstream answered (its time then counts for shortestResponse and p2c).
    pub(crate) fn responded(&mut self) {
        self.responded = true;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let elapsed = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.pool.finish(self.index, elapsed, self.responded);
    }
}

/// Wall clock in ms.
pub(crate) fn now_ms() -> i64 {
    i64::try_from(model::world::since_epoch().as_millis()).unwrap_or(i64::MAX)
}

/// ShenYu's effective weight: `status == false` → 0; during warm-up the weight ramps up
/// linearly (single-precision, clamped to `[1, weight]`, uptime cast to 32 bits as in Java).
pub(crate) fn effective_weight(u: &DivideUpstream, now_ms: i64) -> i32 {
    if !u.status {
        return 0;
    }
    if u.weight > 0 && u.timestamp > 0 {
        let uptime = now_ms.wrapping_sub(u.timestamp) as i32;
        if uptime > 0 && uptime < u.warmup {
            let w = (uptime as f32 / (u.warmup as f32 / u.weight as f32)) as i32;
            return w.clamp(1, u.weight);
        }
    }
    u.weight
}

/// Weighted random among `candidates` (indices into `upstreams`), ShenYu's random rule: all
/// weights equal (including all 0) → uniform, else P(i) = wᵢ / Σw.
fn weighted_among(
    upstreams: &[Upstream],
    candidates: &[usize],
    now_ms: i64,
    rng: &mut impl Rng,
) -> usize {
    let weights: Vec<i32> = candidates
        .iter()
        .map(|&i| effective_weight(&upstreams[i].data, now_ms))
        .collect();
    candidates[random::weighted(&weights, rng)]
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// An upstream `url` (`host:port`) with a weight.
    pub(crate) fn up(url: &str, weight: i32) -> Upstream {
        Upstream::new(DivideUpstream {
            upstream_url: url.to_owned(),
            protocol: "http://".to_owned(),
            weight,
            status: true,
            ..Default::default()
        })
        .unwrap()
    }

    /// A context at time 0 from 127.0.0.1.
    pub(crate) fn ctx() -> PickContext {
        PickContext {
            now_ms: 0,
            client_ip: [127, 0, 0, 1].into(),
            bug: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{ctx, up};
    use super::*;
    use proptest::prelude::{ProptestConfig, any, prop, prop_assert, proptest};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const ALL: [LoadBalance; 6] = [
        LoadBalance::Random,
        LoadBalance::RoundRobin,
        LoadBalance::Hash,
        LoadBalance::LeastActive,
        LoadBalance::P2c,
        LoadBalance::ShortestResponse,
    ];

    #[test]
    fn empty_and_single() {
        let mut rng = StdRng::seed_from_u64(1);
        for kind in ALL {
            assert_eq!(Pool::new(vec![]).choose(kind, &ctx(), &mut rng), None);
            let one = Pool::new(vec![up("a:1", 0)]);
            assert_eq!(one.choose(kind, &ctx(), &mut rng), Some(0));
        }
    }

    #[test]
    fn leases_count_active_until_dropped() {
        let pool = Arc::new(Pool::new(vec![up("a:1", 1), up("b:1", 1)]));
        let mut lease = pool.lease(1, 0);
        assert_eq!(lease.upstream().data.upstream_url, "b:1");
        assert_eq!((pool.active(0), pool.active(1)), (0, 1));
        lease.responded();
        drop(lease);
        assert_eq!(pool.active(1), 0);
        assert_eq!(pool.stats[1].succeeded.load(Ordering::Relaxed), 1);
        drop(pool.lease(0, 0));
        assert_eq!(pool.stats[0].succeeded.load(Ordering::Relaxed), 0);
        assert_eq!(pool.find("b:1"), Some(1));
        assert_eq!(pool.find("c:1"), None);
    }

    /// A context's bug reaches its own balancer and no other.
    #[test]
    fn an_emulated_bug_reaches_its_balancer_only() {
        let sequence = |bug| {
            let pool = Pool::new(vec![up("a:1", 2), up("b:1", 1)]);
            let ctx = PickContext { bug, ..ctx() };
            let mut rng = StdRng::seed_from_u64(1);
            (0..6)
                .map(|_| {
                    let i = pool
                        .choose(LoadBalance::RoundRobin, &ctx, &mut rng)
                        .unwrap();
                    char::from(b'a' + i as u8)
                })
                .collect::<String>()
        };
        assert_eq!(sequence(None), "abaaba");
        assert_eq!(sequence(Some(EmulatedBug::HashRingOffByOne)), "abaaba");
        assert_eq!(
            sequence(Some(EmulatedBug::RoundRobinIgnoresWeights)),
            "ababab"
        );
    }

    #[test]
    fn warmup_ramps_weight() {
        let mut u = up("a:1", 100).data;
        u.timestamp = 1_000;
        u.warmup = 10_000;
        assert_eq!(effective_weight(&u, 6_000), 50);
        assert_eq!(effective_weight(&u, 1_001), 1);
        assert_eq!(effective_weight(&u, 20_000), 100);
        u.status = false;
        assert_eq!(effective_weight(&u, 20_000), 0);
    }

    /// A handle of `(weight, status)` upstreams named `u0:80`, `u1:80`, ….
    fn handle(list: &[(i32, bool)]) -> String {
        let items: Vec<String> = list
            .iter()
            .enumerate()
            .map(|(i, (w, s))| {
                format!(
                    r#"{{"upstreamUrl":"u{i}:80","protocol":"http://","weight":{w},"status":{s}}}"#
                )
            })
            .collect();
        format!("[{}]", items.join(","))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// No balancer ever picks an upstream with `status == false`, whatever the load.
        #[test]
        fn disabled_upstreams_are_never_picked(
            list in prop::collection::vec((0..100i32, any::<bool>()), 1..8),
            seed in any::<u64>(),
            ip in any::<u32>(),
        ) {
            let pool = Arc::new(Pool::from_handle(&handle(&list), "s"));
            let mut rng = StdRng::seed_from_u64(seed);
            let ctx = PickContext { now_ms: 0, client_ip: IpAddr::from(ip.to_be_bytes()), bug: None };
            let mut held = Vec::new();
            for kind in ALL {
                for _ in 0..50 {
                    let Some(i) = pool.choose(kind, &ctx, &mut rng) else {
                        prop_assert!(list.iter().all(|(_, s)| !s));
                        continue;
                    };
                    let name = &pool.upstreams[i].data.upstream_url;
                    let original: usize = name[1..name.len() - 3].parse().unwrap();
                    prop_assert!(list[original].1, "{kind} picked disabled {name}");
                    // Keep some requests in flight so load-aware balancers see load.
                    if rng.random_bool(0.3) {
                        held.push(pool.lease(i, 0));
                    }
                }
            }
        }
    }
}
