//! The state one gateway serves requests from: its own plugins, config snapshot, proxy and
//! metrics. A gateway with several workers ([`crate::serve_workers`]) gives each its own
//! [`App::for_worker`]: all shared but the proxy's connection pool.

use std::sync::Arc;

use netserve::Connect;

use crate::TrustedProxies;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::plugin::{Chain, Registry};
use crate::proxy::Proxy;
use crate::sync::SyncState;

/// Shared request-handling state: one gateway's, nothing in it shared with another gateway
/// of the process. `C` is the network its proxy opens upstream connections through
/// (the OS's by default; the simulator's under `gantry sim`).
#[derive(Debug)]
pub(crate) struct App<C = netserve::Tokio> {
    /// [`Config::hide_extras`].
    pub(crate) hide_extras: bool,
    /// [`Config::trusted_proxies`].
    pub(crate) trusted_proxies: TrustedProxies,
    /// The gateway's plugin instances (the snapshots compile with them).
    pub(crate) plugins: Arc<Registry>,
    pub(crate) sync: Arc<SyncState>,
    pub(crate) chain: Chain,
    /// This worker's upstream connections.
    pub(crate) proxy: Proxy<C>,
    pub(crate) metrics: Arc<Metrics>,
    /// The network the proxy opens its connections through.
    net: C,
}

impl App {
    /// [`App::over`] the operating system's network.
    pub(crate) fn new(config: &Config) -> App {
        App::over(config, netserve::Tokio)
    }
}

impl<C: Connect> App<C> {
    /// A gateway's state for `config`, proxying over `net`: the empty config until a
    /// subscriber applies the admin's.
    pub(crate) fn over(config: &Config, net: C) -> App<C> {
        let plugins = Registry::standard();
        let sync = SyncState::new(config.sync, Arc::clone(&plugins))
            .emulating(config.emulate_bug)
            .observed(config.on_apply.clone());
        App {
            hide_extras: config.hide_extras,
            trusted_proxies: config.trusted_proxies.clone(),
            plugins,
            sync: Arc::new(sync),
            chain: Chain::standard().emulating(config.emulate_bug),
            proxy: Proxy::over(net.clone()),
            metrics: Arc::default(),
            net,
        }
    }

    /// The same gateway for another worker: config, plugins, balancers and metrics shared,
    /// and a connection pool of its own, so each upstream connection is driven by the runtime
    /// of the worker whose requests use it (no wake-up crosses threads).
    pub(crate) fn for_worker(&self) -> App<C> {
        App {
            hide_extras: self.hide_extras,
            trusted_proxies: self.trusted_proxies.clone(),
            plugins: Arc::clone(&self.plugins),
            sync: Arc::clone(&self.sync),
            chain: self.chain.clone(),
            proxy: Proxy::over(self.net.clone()),
            metrics: Arc::clone(&self.metrics),
            net: self.net.clone(),
        }
    }
}
