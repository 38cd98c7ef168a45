//! The config dumps of one snapshot (`/actuator/{pluginData,selectorData,ruleData,metadata}`),
//! kept with the snapshot so that each is rendered at most once per snapshot. The actuator
//! serves them; the metrics count their renderings.

use bytes::Bytes;
use tokio::sync::OnceCell;

use super::Snapshot;

/// A config dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dump {
    /// `pluginData`.
    Plugins,
    /// `selectorData`.
    Selectors,
    /// `ruleData`.
    Rules,
    /// `metadata`.
    MetaData,
}

impl Dump {
    /// Every dump, in [`Dump::index`] order.
    pub(crate) const ALL: [Dump; 4] = [Dump::Plugins, Dump::Selectors, Dump::Rules, Dump::MetaData];

    /// The endpoint's last path segment.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Dump::Plugins => "pluginData",
            Dump::Selectors => "selectorData",
            Dump::Rules => "ruleData",
            Dump::MetaData => "metadata",
        }
    }

    /// Its position in [`Dump::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The JSON of this dump of `snapshot`.
    pub(crate) fn render(self, snapshot: &Snapshot) -> serde_json::Result<Vec<u8>> {
        let data = &snapshot.data;
        match self {
            Dump::Plugins => serde_json::to_vec(&[&data.plugins]),
            Dump::Selectors => serde_json::to_vec(&[data.selectors.by_owner()]),
            Dump::Rules => serde_json::to_vec(&[data.rules.by_owner()]),
            Dump::MetaData => serde_json::to_vec(&[&data.meta_data]),
        }
    }
}

/// The rendered dumps of one snapshot, each rendered on first use.
#[derive(Debug, Default)]
pub(crate) struct Dumps([OnceCell<Bytes>; 4]);

impl Dumps {
    /// Where dump `which` is kept once rendered.
    pub(crate) fn cell(&self, which: Dump) -> &OnceCell<Bytes> {
        &self.0[which.index()]
    }
}
