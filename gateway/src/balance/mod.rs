//! Load balancing over a divide selector's upstreams.
//!
//! [`Upstream`] is a divide upstream parsed once per snapshot (target URI parts ready for the
//! proxy). [`pick`] follows ShenYu's `AbstractLoadBalancer.select`: empty → none, one → it,
//! else weighted `random` (the only balancer implemented; other names use it too).

mod random;

use http::HeaderValue;
use http::uri::{Authority, Scheme};
use model::DivideUpstream;

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

    fn new(data: DivideUpstream) -> Result<Upstream, String> {
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

/// Chooses an upstream (`None` only for an empty list). The rule's `loadBalance` name is not
/// consulted yet: every balancer is weighted random.
pub(crate) fn pick(upstreams: &[Upstream], now_ms: i64) -> Option<&Upstream> {
    match upstreams {
        [] => None,
        [only] => Some(only),
        _ => random::pick(upstreams, now_ms, &mut rand::rng()).map(|i| &upstreams[i]),
    }
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
