//! [`Registry`]: the plugin instances of one gateway.
//!
//! A plugin instance may hold state (the rate limiter's Redis connection, policy and
//! counters), so each gateway owns its registry: two gateways in one process (the integration
//! tests, the `host` backend) share no plugin state. The app creates it and hands it to the
//! sync state, which compiles snapshots with its plugins and gives them their synced config
//! when it swaps a snapshot in.

use std::sync::Arc;

use imbl::OrdMap;
use model::PluginData;

use super::{PluginTable, Registered, context_path, divide, param_mapping, rate_limiter};

/// One instance of each of gantry's plugins, in built-in order.
#[derive(Debug)]
pub(crate) struct Registry {
    plugins: Vec<Arc<dyn Registered>>,
}

impl Registry {
    /// gantry's plugins, new (no state shared with any other registry): the one list a plugin
    /// is registered in.
    pub(crate) fn standard() -> Arc<Registry> {
        Arc::new(Registry::of(vec![
            Arc::new(rate_limiter::RateLimiter::new()),
            Arc::new(param_mapping::ParamMapping),
            Arc::new(context_path::ContextPath),
            Arc::new(divide::Divide),
        ]))
    }

    /// A registry of `plugins`, put in built-in order.
    pub(crate) fn of(mut plugins: Vec<Arc<dyn Registered>>) -> Registry {
        plugins.sort_by_key(|p| p.order());
        Registry { plugins }
    }

    /// The plugins, in built-in order.
    pub(crate) fn plugins(&self) -> impl Iterator<Item = &dyn Registered> {
        self.plugins.iter().map(|p| &**p)
    }

    /// Where plugin `name` is in built-in order (the chain's tie-break); `None` for a plugin
    /// gantry does not run.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.plugins.iter().position(|p| p.name() == name)
    }

    /// An empty table of plugin `name`; `None` for a plugin gantry does not run (its
    /// selectors are kept as data only).
    pub(crate) fn table(&self, name: &str) -> Option<Box<dyn PluginTable>> {
        let at = self.position(name)?;
        Some(Arc::clone(&self.plugins[at]).table())
    }

    /// Gives each plugin whose `PluginData.config` differs between `before` (the previous
    /// snapshot's plugins; `None` at the first) and `now` its new config.
    pub(crate) fn configure_changed(
        &self,
        before: Option<&OrdMap<String, PluginData>>,
        now: &OrdMap<String, PluginData>,
    ) {
        for plugin in &self.plugins {
            let config = |plugins: &OrdMap<String, PluginData>| {
                plugins.get(plugin.name()).and_then(|p| p.config.clone())
            };
            let new = config(now);
            if before.is_none_or(|b| config(b) != new) {
                plugin.configure(new.as_deref());
            }
        }
    }

    /// Appends every plugin's own `/metrics` series to `out`.
    pub(crate) fn render_metrics(&self, out: &mut String) {
        for plugin in &self.plugins {
            plugin.metrics(out);
        }
    }
}
