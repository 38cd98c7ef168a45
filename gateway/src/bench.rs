//! A narrow public facade over the gateway's internals for the criterion benches in
//! `gateway/benches/` (the internals are crate-private). Not a stable API.

use std::net::IpAddr;
use std::sync::Arc;

use http::{HeaderMap, Method};
use model::{ConfigSet, DataEvent, DataEventType, EventPayload, LoadBalance};

use crate::balance::{PickContext, Pool, now_ms};
use crate::plugin::Chain;
use crate::router::RequestView;
use crate::snapshot::{ConfigData, Snapshot};

/// A compiled config and the plugin chain, to time request matching.
#[derive(Debug)]
pub struct Matcher {
    snapshot: Snapshot,
    chain: Chain,
}

impl Matcher {
    /// Compiles `config` the way a full sync does.
    pub fn new(config: ConfigSet) -> Matcher {
        let mut data = ConfigData::default();
        let t = DataEventType::Myself;
        data.apply(DataEvent::new(t, EventPayload::Plugin(config.plugins)));
        data.apply(DataEvent::new(t, EventPayload::Selector(config.selectors)));
        data.apply(DataEvent::new(t, EventPayload::Rule(config.rules)));
        data.apply(DataEvent::new(t, EventPayload::MetaData(config.meta_data)));
        Matcher {
            snapshot: Snapshot::build(data),
            chain: Chain::standard(),
        }
    }

    /// Runs the chain for `GET path` (no query, no headers): the chosen selector id, or the
    /// error code.
    pub fn route(&self, path: &str) -> Result<Arc<str>, i32> {
        let headers = HeaderMap::new();
        let view = RequestView {
            method: &Method::GET,
            path,
            query: None,
            authority: None,
            headers: &headers,
            peer: [127, 0, 0, 1].into(),
        };
        self.chain
            .run(&self.snapshot, &view)
            .map(|f| f.selector_id)
            .map_err(|r| r.body.code)
    }
}

/// A selector's upstream pool, to time one balancer.
#[derive(Debug)]
pub struct Balancer {
    pool: Arc<Pool>,
    kind: LoadBalance,
}

impl Balancer {
    /// A pool parsed from a divide selector handle, balanced by `kind`.
    pub fn new(handle: &str, kind: LoadBalance) -> Balancer {
        Balancer {
            pool: Arc::new(Pool::from_handle(handle, "bench")),
            kind,
        }
    }

    /// Picks and leases an upstream for `client`, then ends the lease as a finished
    /// request would; answers the upstream URL's length (to keep the work observable).
    pub fn pick(&self, client: IpAddr) -> usize {
        let ctx = PickContext {
            now_ms: now_ms(),
            client_ip: client,
        };
        self.pool.pick(self.kind, &ctx).map_or(0, |mut lease| {
            lease.responded();
            lease.upstream().data.upstream_url.len()
        })
    }
}
