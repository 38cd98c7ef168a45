//! What a seed's run observed, in the order it happened: every config the admin committed
//! (as a gateway applies its events in order, without loss: the [`gateway::Follower`]),
//! every gateway process started and every config it swapped in, every request the client
//! sent and its answer, and every step and heal. Its hash is the seed's
//! trace hash: the same seed on the same build hashes the same.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use model::ConfigSet;
use sha2::{Digest, Sha256};

use super::routing::Exchange;

/// A config's digest per sync group: plugins, selectors, rules, metadata. Groups are synced
/// and applied one at a time, so a gateway may hold one group of a newer commit beside
/// another of an older one; each group's own history is what must follow the admin's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Groups(pub(crate) [String; 4]);

/// The groups' names, in [`Groups`] order.
pub(crate) const GROUPS: [&str; 4] = ["plugin", "selector", "rule", "meta"];

impl Groups {
    /// The digests of `set`'s groups.
    pub(crate) fn of(set: &ConfigSet) -> Groups {
        let only = |f: &dyn Fn(&mut ConfigSet)| {
            let mut one = ConfigSet::default();
            f(&mut one);
            one.digest()[..16].to_owned()
        };
        Groups([
            only(&|s| s.plugins.clone_from(&set.plugins)),
            only(&|s| s.selectors.clone_from(&set.selectors)),
            only(&|s| s.rules.clone_from(&set.rules)),
            only(&|s| s.meta_data.clone_from(&set.meta_data)),
        ])
    }
}

/// One observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The admin committed a change (or, first, what it held at the start).
    Commit {
        /// When.
        at: Duration,
        /// The config after it.
        groups: Groups,
        /// The whole config after it, for the report.
        summary: String,
    },
    /// A gateway swapped a config in.
    Applied {
        /// When.
        at: Duration,
        /// The gateway.
        gateway: u8,
        /// Its process: 0, then one more per restart.
        life: u32,
        /// The config it swapped in.
        groups: Groups,
        /// The whole config, for the report.
        summary: String,
        /// The config itself, for the routing checker.
        set: Arc<ConfigSet>,
    },
    /// A gateway process started (holding the empty config until its first swap).
    Started {
        /// When.
        at: Duration,
        /// The gateway.
        gateway: u8,
        /// Its process.
        life: u32,
    },
    /// The client's request was answered (or given up on).
    Request {
        /// When the answer came.
        at: Duration,
        /// The request and its answer.
        exchange: Exchange,
    },
    /// A step of the plan was taken, or a fault healed.
    Step {
        /// When.
        at: Duration,
        /// What happened (`[index] …`).
        what: String,
    },
}

impl Entry {
    /// When it happened.
    pub(crate) fn at(&self) -> Duration {
        match self {
            Entry::Commit { at, .. }
            | Entry::Applied { at, .. }
            | Entry::Started { at, .. }
            | Entry::Request { at, .. }
            | Entry::Step { at, .. } => *at,
        }
    }
}

/// `set` with its lists in id order (a gateway lists them in no fixed order; the digest
/// ignores it, equality does not).
fn canonical(set: &ConfigSet) -> ConfigSet {
    let mut set = set.clone();
    set.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    set.selectors.sort_by(|a, b| a.id.cmp(&b.id));
    set.rules.sort_by(|a, b| a.id.cmp(&b.id));
    set.meta_data.sort_by(|a, b| a.id.cmp(&b.id));
    set
}

/// A short account of a whole config: its counts and its digest's start.
pub(crate) fn summary(set: &ConfigSet) -> String {
    format!(
        "{}p {}s {}r {}m {}",
        set.plugins.iter().filter(|p| p.enabled).count(),
        set.selectors.len(),
        set.rules.len(),
        set.meta_data.len(),
        &set.digest()[..8]
    )
}

/// Everything one run observed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trace {
    /// The observations, in order.
    pub(crate) entries: Vec<Entry>,
}

impl Trace {
    /// Records that the admin committed `set` now.
    pub(crate) fn commit(&mut self, at: Duration, set: &ConfigSet) {
        self.entries.push(Entry::Commit {
            at,
            groups: Groups::of(set),
            summary: summary(set),
        });
    }

    /// Records that `gateway` (in its `life`th process) swapped `set` in now.
    pub(crate) fn applied(&mut self, at: Duration, gateway: u8, life: u32, set: &ConfigSet) {
        self.entries.push(Entry::Applied {
            at,
            gateway,
            life,
            groups: Groups::of(set),
            summary: summary(set),
            set: Arc::new(canonical(set)),
        });
    }

    /// Records that `gateway`'s `life`th process started now.
    pub(crate) fn started(&mut self, at: Duration, gateway: u8, life: u32) {
        self.entries.push(Entry::Started { at, gateway, life });
    }

    /// Records a request's answer, which came now.
    pub(crate) fn request(&mut self, at: Duration, exchange: Exchange) {
        self.entries.push(Entry::Request { at, exchange });
    }

    /// Records a step or a heal.
    pub(crate) fn step(&mut self, at: Duration, what: impl Into<String>) {
        self.entries.push(Entry::Step {
            at,
            what: what.into(),
        });
    }

    /// The trace hash: SHA-256 of every entry as printed, its first 16 hex digits.
    pub(crate) fn hash(&self) -> String {
        let mut hasher = Sha256::new();
        for entry in &self.entries {
            hasher.update(entry.to_string().as_bytes());
            hasher.update(b"\n");
        }
        hex::encode(hasher.finalize())[..16].to_owned()
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.at().as_millis();
        match self {
            Entry::Commit {
                summary, groups, ..
            } => {
                write!(
                    f,
                    "{ms:>7} ms  admin  commit   {summary}  {}",
                    groups.0.join(" ")
                )
            }
            Entry::Applied {
                gateway,
                life,
                summary,
                groups,
                ..
            } => write!(
                f,
                "{ms:>7} ms  gw{gateway}.{life} applied  {summary}  {}",
                groups.0.join(" ")
            ),
            Entry::Started { gateway, life, .. } => {
                write!(f, "{ms:>7} ms  gw{gateway}.{life} started")
            }
            Entry::Request { exchange, .. } => write!(f, "{ms:>7} ms  {exchange}"),
            Entry::Step { what, .. } => write!(f, "{ms:>7} ms  {what}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_moves_with_any_entry() {
        let mut a = Trace::default();
        a.step(Duration::from_millis(5), "[0] put route 1 -> alpha");
        let mut b = a.clone();
        assert_eq!(a.hash(), b.hash());
        assert_eq!(a.hash().len(), 16);
        b.step(Duration::from_millis(6), "heal");
        assert_ne!(a.hash(), b.hash());
    }
}
