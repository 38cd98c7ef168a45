//! The fault proxies on a topology's links (host backend): the gateway's sync connection,
//! one proxy in front of each upstream (the gateway's connections to it), one in front of each
//! gateway (the harness's requests), one in front of the admins' PostgreSQL. A link gets its
//! proxies when a case's step faults it, or when the `slice` run mode slices every link.
//! A `network` change sets toxics on every proxy of its link; a `heal` ends them on all.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::{FaultProxy, Toxics};
use crate::error::BackendError;
use crate::scenario::ast::Link;

/// The proxies of one topology, by link.
#[derive(Debug, Default)]
pub(crate) struct LinkProxies {
    /// On the gateway's sync connection (to the admin, or to ZooKeeper or etcd).
    pub(crate) sync: Option<FaultProxy>,
    /// In front of each upstream, by name.
    pub(crate) upstreams: BTreeMap<String, FaultProxy>,
    /// In front of each gateway, in index order (empty: the client link is direct).
    pub(crate) clients: Vec<FaultProxy>,
    /// In front of the admins' PostgreSQL.
    pub(crate) database: Option<FaultProxy>,
}

impl LinkProxies {
    /// The proxies on `link`.
    pub(crate) fn on(&self, link: Link) -> Vec<&FaultProxy> {
        match link {
            Link::Sync => self.sync.iter().collect(),
            Link::Upstream => self.upstreams.values().collect(),
            Link::Client => self.clients.iter().collect(),
            Link::Database => self.database.iter().collect(),
        }
    }

    /// Every proxy of the topology.
    pub(crate) fn all(&self) -> impl Iterator<Item = &FaultProxy> {
        Link::ALL.into_iter().flat_map(|link| self.on(link))
    }
}

/// A proxy in front of `target` (`what` names it in an error), slicing every byte from the
/// start when `sliced` holds ([`Toxics::sliced`], kept across a heal).
pub(crate) async fn start(
    target: SocketAddr,
    what: &str,
    sliced: Option<Toxics>,
) -> Result<FaultProxy, BackendError> {
    let mut proxy = FaultProxy::start(target)
        .await
        .map_err(|source| BackendError::Io {
            what: format!("starting the fault proxy on {what} ({target})"),
            source,
        })?;
    if let Some(toxics) = sliced {
        proxy.keep(toxics);
    }
    Ok(proxy)
}

/// `host:port` of an `http://host:port` URL, for a proxy's target (`what` names the URL in
/// an error).
pub(crate) fn url_addr(url: &str, what: &str) -> Result<SocketAddr, BackendError> {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    addr.parse().map_err(|_| BackendError::Io {
        what: format!("reading {what}'s address {addr} for its fault proxy"),
        source: std::io::Error::other("not ip:port"),
    })
}
