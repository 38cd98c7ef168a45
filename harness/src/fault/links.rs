//! The fault proxies on a topology's links: the gateway's sync connection, one proxy in
//! front of each upstream (the gateway's connections to it), one in front of each gateway
//! (the harness's requests), one in front of the admins' PostgreSQL, one in front of the case's
//! Redis (the gateway's rate limiter). A link gets its proxies
//! when a case's step faults it, or when the `slice` run mode slices every link. A `network`
//! change sets toxics on every proxy of its link; a `heal` ends them on all.
//!
//! On the host backend every proxy runs in the harness ([`LinkProxy::Local`]). On docker the
//! proxies of the links inside the run's networks (sync, upstream) are containers of their
//! own ([`LinkProxy::Container`]; Redis's too), and the client link's proxy runs in the harness, in front
//! of the gateway's published port, beside the client it stands for.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::container::ProxyContainer;
use super::{FaultProxy, Toxics};
use crate::error::BackendError;
use crate::scenario::ast::Link;

/// One proxy on a link: in the harness, or in a container on the run's network.
#[derive(Debug)]
pub(crate) enum LinkProxy {
    /// In the harness (host backend; docker's client link).
    Local(FaultProxy),
    /// A `gantry fault-proxy` container (docker's sync and upstream links; boxed: it holds
    /// the container's handle).
    Container(Box<ProxyContainer>),
}

impl LinkProxy {
    /// Where its peers connect: `ip:port` on the host, `name:port` on the run's network.
    pub(crate) fn address(&self) -> String {
        match self {
            LinkProxy::Local(proxy) => proxy.addr().to_string(),
            LinkProxy::Container(proxy) => proxy.address(),
        }
    }

    /// The toxics set now.
    pub(crate) fn toxics(&self) -> Toxics {
        match self {
            LinkProxy::Local(proxy) => proxy.toxics(),
            LinkProxy::Container(proxy) => proxy.toxics(),
        }
    }

    /// Replaces its toxics.
    pub(crate) async fn set_toxics(&self, toxics: Toxics) -> Result<(), BackendError> {
        match self {
            LinkProxy::Local(proxy) => {
                proxy.set_toxics(toxics);
                Ok(())
            }
            LinkProxy::Container(proxy) => proxy.set_toxics(toxics).await,
        }
    }

    /// Ends its faults ([`FaultProxy::heal`]).
    pub(crate) async fn heal(&self) -> Result<(), BackendError> {
        match self {
            LinkProxy::Local(proxy) => {
                proxy.heal();
                Ok(())
            }
            LinkProxy::Container(proxy) => proxy.heal().await,
        }
    }

    /// Its container, if it is one (to remove with the others).
    pub(crate) fn into_container(self) -> Option<crate::backend::Container> {
        match self {
            LinkProxy::Local(_) => None,
            LinkProxy::Container(proxy) => Some(proxy.into_container()),
        }
    }

    /// The proxy in the harness, if it is one (the host's sync proxy, which partitions).
    pub(crate) fn local(&self) -> Option<&FaultProxy> {
        match self {
            LinkProxy::Local(proxy) => Some(proxy),
            LinkProxy::Container(_) => None,
        }
    }
}

/// The proxies of one topology, by link.
#[derive(Debug, Default)]
pub(crate) struct LinkProxies {
    /// On the gateway's sync connection (to the admin, or to ZooKeeper or etcd).
    pub(crate) sync: Option<LinkProxy>,
    /// In front of each upstream, by name.
    pub(crate) upstreams: BTreeMap<String, LinkProxy>,
    /// In front of each gateway, in index order (empty: the client link is direct).
    pub(crate) clients: Vec<LinkProxy>,
    /// In front of the admins' PostgreSQL.
    pub(crate) database: Option<LinkProxy>,
    /// In front of the case's Redis.
    pub(crate) redis: Option<LinkProxy>,
}

impl LinkProxies {
    /// The proxies on `link`.
    pub(crate) fn on(&self, link: Link) -> Vec<&LinkProxy> {
        match link {
            Link::Sync => self.sync.iter().collect(),
            Link::Upstream => self.upstreams.values().collect(),
            Link::Client => self.clients.iter().collect(),
            Link::Database => self.database.iter().collect(),
            Link::Redis => self.redis.iter().collect(),
        }
    }

    /// Every proxy of the topology, to keep.
    pub(crate) fn into_all(self) -> impl Iterator<Item = LinkProxy> {
        let LinkProxies {
            sync,
            upstreams,
            clients,
            database,
            redis,
        } = self;
        sync.into_iter()
            .chain(upstreams.into_values())
            .chain(clients)
            .chain(database)
            .chain(redis)
    }

    /// Every proxy of the topology.
    pub(crate) fn all(&self) -> impl Iterator<Item = &LinkProxy> {
        Link::ALL.into_iter().flat_map(|link| self.on(link))
    }
}

/// A proxy in front of `target` (`what` names it in an error), slicing every byte from the
/// start when `sliced` holds ([`Toxics::sliced`], kept across a heal).
pub(crate) async fn start(
    target: SocketAddr,
    what: &str,
    sliced: Option<Toxics>,
) -> Result<LinkProxy, BackendError> {
    let mut proxy = FaultProxy::start(target)
        .await
        .map_err(|source| BackendError::Io {
            what: format!("starting the fault proxy on {what} ({target})"),
            source,
        })?;
    if let Some(toxics) = sliced {
        proxy.keep(toxics);
    }
    Ok(LinkProxy::Local(proxy))
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
