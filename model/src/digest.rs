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

#[derive(Serialize)]
struct Canonical<'a> {
    plugins: Vec<&'a PluginData>,
    selectors: Vec<SelectorData>,
    rules: Vec<RuleData>,
    meta_data: Vec<&'a MetaData>,
}

impl ConfigSet {
    /// The canonical content digest: lower-case hex SHA-256 of the config with every list
    /// sorted by key (plugins by name, the rest by id) and the `before…` condition lists
    /// (which only describe the previous version) left out. Admin and gateway compute it the
    /// same way, so equal digests mean the gateway holds exactly what the admin committed.
    pub fn digest(&self) -> String {
        let mut plugins: Vec<&PluginData> = self.plugins.iter().collect();
        plugins.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
        let mut selectors: Vec<SelectorData> = self
            .selectors
            .iter()
            .map(|s| SelectorData {
                before_condition_list: Vec::new(),
                ..s.clone()
            })
            .collect();
        selectors.sort_by(|a, b| a.id.cmp(&b.id));
        let mut rules: Vec<RuleData> = self
            .rules
            .iter()
            .map(|r| RuleData {
                before_condition_data_list: Vec::new(),
                ..r.clone()
            })
            .collect();
        rules.sort_by(|a, b| a.id.cmp(&b.id));
        let mut meta_data: Vec<&MetaData> = self.meta_data.iter().collect();
        meta_data.sort_by(|a, b| a.id.cmp(&b.id));
        let canonical = Canonical {
            plugins,
            selectors,
            rules,
            meta_data,
        };
        let bytes = serde_json::to_vec(&canonical).expect("model types always serialise");
        hex::encode(Sha256::digest(&bytes))
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
}

impl From<&ConfigSet> for DigestReport {
    fn from(set: &ConfigSet) -> Self {
        Self {
            digest: set.digest(),
            plugins: set.plugins.len(),
            selectors: set.selectors.len(),
            rules: set.rules.len(),
            meta_data: set.meta_data.len(),
        }
    }
}
