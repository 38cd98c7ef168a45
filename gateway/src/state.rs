//! The state one gateway serves requests from: its own plugins, config snapshot, proxy and
//! metrics.

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
    pub(crate) proxy: Proxy<C>,
    pub(crate) metrics: Metrics,
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
            proxy: Proxy::over(net),
            metrics: Metrics::default(),
        }
    }
}
