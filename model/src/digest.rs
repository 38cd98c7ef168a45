//! [`ConfigSet`]: a whole config and its canonical content digest.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::meta::MetaData;
use crate::plugin::PluginData;
use crate::rule::RuleData;
use crate::selector::SelectorData;

/// A whole config: what the admin has committed or what a gateway has applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigSet {
    /// Plugins.
    pub plugins: Vec<PluginData>,
    /// Selectors.
    pub selectors: Vec<SelectorData>,
    /// Rules.
    pub rules: Vec<RuleData>,
    /// Metadata.
    pub meta_data: Vec<MetaData>,
}

/// One item of a config, as [`ConfigDigest`] counts it.
#[derive(Debug, Clone, Copy)]
pub enum DigestItem<'a> {
    /// A plugin.
    Plugin(&'a PluginData),
    /// A selector (its `beforeConditionList` is left out).
    Selector(&'a SelectorData),
    /// A rule (its `beforeConditionDataList` is left out).
    Rule(&'a RuleData),
    /// A metadata entry.
    MetaData(&'a MetaData),
}

impl DigestItem<'_> {
    /// SHA-256 of a kind tag and the item's JSON, without the `before…` condition lists
    /// (which only describe the previous version).
    fn hash(self) -> [u8; 32] {
        let (tag, json) = match self {
            DigestItem::Plugin(p) => (b'p', serde_json::to_vec(p)),
            DigestItem::Selector(s) => (
                b's',
                serde_json::to_vec(&SelectorData {
                    before_condition_list: Vec::new(),
                    ..s.clone()
                }),
            ),
            DigestItem::Rule(r) => (
                b'r',
                serde_json::to_vec(&RuleData {
                    before_condition_data_list: Vec::new(),
                    ..r.clone()
                }),
            ),
            DigestItem::MetaData(m) => (b'm', serde_json::to_vec(m)),
        };
        let json = json.expect("model types always serialise");
        let mut hasher = Sha256::new();
        hasher.update([tag]);
        hasher.update(&json);
        hasher.finalize().into()
    }
}

/// The canonical content digest of a config, kept up to date item by item: the wrapping sum,
/// in four 64-bit lanes, of every item's SHA-256 ([`DigestItem`]), plus the item counts.
///
/// The sum does not depend on the order items arrive in, and adding then removing an item
/// leaves it as it was, so a gateway updates it in O(1) per changed item instead of hashing
/// its whole config per event. Admin and gateway compute it the same way: equal digests mean
/// the gateway holds exactly what the admin committed (each id once per kind, as both keep
/// them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConfigDigest {
    lanes: [u64; 4],
    plugins: usize,
    selectors: usize,
    rules: usize,
    meta_data: usize,
}

impl ConfigDigest {
    /// Counts `item` in.
    pub fn add(&mut self, item: DigestItem<'_>) {
        self.step(item, true);
    }

    /// Counts `item` out (it must have been added).
    pub fn remove(&mut self, item: DigestItem<'_>) {
        self.step(item, false);
    }

    fn step(&mut self, item: DigestItem<'_>, add: bool) {
        let hash = item.hash();
        for (lane, chunk) in self.lanes.iter_mut().zip(hash.chunks_exact(8)) {
            let v = u64::from_be_bytes(chunk.try_into().expect("8-byte chunk"));
            *lane = if add {
                lane.wrapping_add(v)
            } else {
                lane.wrapping_sub(v)
            };
        }
        let count = match item {
            DigestItem::Plugin(_) => &mut self.plugins,
            DigestItem::Selector(_) => &mut self.selectors,
            DigestItem::Rule(_) => &mut self.rules,
            DigestItem::MetaData(_) => &mut self.meta_data,
        };
        *count = if add {
            *count + 1
        } else {
            count.saturating_sub(1)
        };
    }

    /// The digest as `/actuator/digest` reports it: lower-case hex SHA-256 of the lanes and
    /// the counts.
    pub fn report(&self) -> DigestReport {
        let mut hasher = Sha256::new();
        for lane in self.lanes {
            hasher.update(lane.to_be_bytes());
        }
        for count in [self.plugins, self.selectors, self.rules, self.meta_data] {
            hasher.update((count as u64).to_be_bytes());
        }
        DigestReport {
            digest: hex::encode(hasher.finalize()),
            plugins: self.plugins,
            selectors: self.selectors,
            rules: self.rules,
            meta_data: self.meta_data,
        }
    }
}

impl ConfigSet {
    /// The canonical content digest ([`ConfigDigest`]) of the whole set.
    pub fn digest(&self) -> String {
        self.digest_state().report().digest
    }

    fn digest_state(&self) -> ConfigDigest {
        let mut digest = ConfigDigest::default();
        self.plugins
            .iter()
            .for_each(|p| digest.add(DigestItem::Plugin(p)));
        self.selectors
            .iter()
            .for_each(|s| digest.add(DigestItem::Selector(s)));
        self.rules
            .iter()
            .for_each(|r| digest.add(DigestItem::Rule(r)));
        self.meta_data
            .iter()
            .for_each(|m| digest.add(DigestItem::MetaData(m)));
        digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::ConditionData;

    fn selector(id: &str) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            plugin_name: "divide".to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn digest_ignores_order_and_before_lists() {
        let a = ConfigSet {
            selectors: vec![selector("1"), selector("2")],
            ..Default::default()
        };
        let mut s2 = selector("2");
        s2.before_condition_list = vec![ConditionData::new("uri", "=", "/", "/x")];
        let b = ConfigSet {
            selectors: vec![s2, selector("1")],
            ..Default::default()
        };
        assert_eq!(a.digest(), b.digest());
    }

    #[test]
    fn digest_sees_content_changes() {
        let a = ConfigSet {
            selectors: vec![selector("1")],
            ..Default::default()
        };
        let mut changed = selector("1");
        changed.sort = 7;
        let b = ConfigSet {
            selectors: vec![changed],
            ..Default::default()
        };
        assert_ne!(a.digest(), b.digest());
        assert_ne!(a.digest(), ConfigSet::default().digest());
    }

    #[test]
    fn kept_up_item_by_item_it_equals_the_whole_sets_digest() {
        let (one, two) = (selector("1"), selector("2"));
        let mut changed = selector("1");
        changed.sort = 3;
        let mut running = ConfigDigest::default();
        running.add(DigestItem::Selector(&one));
        running.add(DigestItem::Selector(&two));
        let before = running;
        // An update: the old version out, the new one in.
        running.remove(DigestItem::Selector(&one));
        running.add(DigestItem::Selector(&changed));
        let whole = ConfigSet {
            selectors: vec![two.clone(), changed.clone()],
            ..Default::default()
        };
        assert_eq!(running.report(), DigestReport::from(&whole));
        running.remove(DigestItem::Selector(&changed));
        running.add(DigestItem::Selector(&one));
        assert_eq!(running, before, "undoing the update restores the digest");
        // The same JSON as another kind is another item.
        let plugin = PluginData::default();
        let mut as_plugin = ConfigDigest::default();
        as_plugin.add(DigestItem::Plugin(&plugin));
        let mut as_meta = ConfigDigest::default();
        as_meta.add(DigestItem::MetaData(&MetaData::default()));
        assert_ne!(as_plugin.report().digest, as_meta.report().digest);
    }
}

/// What `GET /actuator/digest` answers, on the admin and on the gateway alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DigestReport {
    /// [`ConfigSet::digest`] of the whole config.
    pub digest: String,
    /// Number of plugins.
    pub plugins: usize,
    /// Number of selectors.
    pub selectors: usize,
    /// Number of rules.
    pub rules: usize,
    /// Number of metadata entries.
    pub meta_data: usize,
}

/// What the gateway's `GET /actuator/digest` answers: the [`DigestReport`] of the config it
/// serves, plus when that config became live. The harness's sync-latency judge reads
/// `appliedAtUs` (both processes share the host's clock, containers too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedDigest {
    /// The digest of the config being served.
    #[serde(flatten)]
    pub report: DigestReport,
    /// How many times the served config changed since the gateway started (0: the empty
    /// config it starts with). A sync event that leaves the digest as it was does not count.
    pub version: u64,
    /// Wall-clock time, in µs since the Unix epoch, at which the served config (this digest)
    /// was swapped in; the gateway's start time for version 0.
    pub applied_at_us: u64,
    /// Synced items the gateway refused to compile since it started (absent from older
    /// gateways: none).
    #[serde(default)]
    pub rejected: Rejections,
}

/// Synced config items the gateway cannot use (a divide selector handle it cannot read, or
/// whose upstreams all have unusable addresses): it keeps serving what it compiled before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejections {
    /// How many since the gateway started.
    pub count: u64,
    /// Why the last one was refused (`selector <id>: <reason>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

impl From<&ConfigSet> for DigestReport {
    fn from(set: &ConfigSet) -> Self {
        set.digest_state().report()
    }
}
