//! A narrow public facade over the gateway's internals for the criterion benches in
//! `gateway/benches/` (the internals are crate-private). Not a stable API.

use std::net::IpAddr;
use std::sync::Arc;

use futures_util::FutureExt;
use http::{HeaderMap, Method};
use model::{ConfigSet, DataEvent, DataEventType, LoadBalance};

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
        Matcher {
            snapshot: full_sync(config),
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
            peer_trusted: false,
        };
        self.chain
            .run(&self.snapshot.active, &view)
            .now_or_never()
            .expect("gantry's plugins decide without waiting")
            .map(|f| f.selector_id)
            .map_err(|r| r.body.code)
    }
}

/// The snapshot a full sync of `config` compiles.
fn full_sync(config: ConfigSet) -> Snapshot {
    let mut data = ConfigData::default();
    for event in DataEvent::full_sync(DataEventType::Myself, config, Vec::new()) {
        data.apply(event);
    }
    Snapshot::build(data)
}

/// A held config, to time applying one sync event to it.
#[derive(Debug)]
pub struct Applier {
    snapshot: Snapshot,
}

impl Applier {
    /// Holds `config`, compiled the way a full sync does.
    pub fn new(config: ConfigSet) -> Applier {
        Applier {
            snapshot: full_sync(config),
        }
    }

    /// What one sync event costs the gateway: copy the held data, apply `event`, compile
    /// the next snapshot (the held one stays as it was). Answers the next snapshot's number
    /// of selectors.
    pub fn apply(&self, event: DataEvent) -> usize {
        let mut data = self.snapshot.data.clone();
        let changes = data.apply(event);
        Snapshot::next(data, &changes, &self.snapshot)
            .digest
            .selectors
    }

    /// What one sync event costs a gateway that recompiles everything per event
    /// (`--emulate-bug rebuild-per-change`): [`Applier::apply`] with the next snapshot compiled
    /// from nothing.
    pub fn rebuild(&self, event: DataEvent) -> usize {
        let mut data = self.snapshot.data.clone();
        data.apply(event);
        Snapshot::from_scratch(data, &self.snapshot)
            .digest
            .selectors
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
            bug: None,
        };
        self.pool.pick(self.kind, &ctx).map_or(0, |mut lease| {
            lease.responded();
            lease.upstream().data.upstream_url.len()
        })
    }
}
