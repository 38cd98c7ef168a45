//! The closed list of features and the profiles they make up (`conformance/features.yaml`,
//! embedded): parsed once, checked ([`Catalog::problems`]), and asked which features a
//! profile holds or which known name is nearest to an unknown one.

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The embedded `conformance/features.yaml`.
const FEATURES_YAML: &str = include_str!("../../../conformance/features.yaml");

/// Where the catalog lives, relative to the workspace root (for messages).
pub const CATALOG_PATH: &str = "conformance/features.yaml";

/// An area of features; each has one profile of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Area {
    /// Which selector and rule match, and what reaches the upstream.
    Routing,
    /// Load balancing over a selector's upstreams.
    Balance,
    /// Admin changes reaching the gateways.
    Sync,
    /// Process, network and protocol faults.
    Faults,
    /// Client registration.
    Registration,
    /// The rateLimiter plugin.
    RateLimiting,
    /// Admin operations beyond selectors and rules.
    AdminApi,
}

impl Area {
    /// Every area, in the catalog's order.
    pub const ALL: [Area; 7] = [
        Area::Routing,
        Area::Balance,
        Area::Sync,
        Area::Faults,
        Area::Registration,
        Area::RateLimiting,
        Area::AdminApi,
    ];

    /// Its name as features and profiles spell it (`rateLimiting`).
    pub fn as_str(self) -> &'static str {
        match self {
            Area::Routing => "routing",
            Area::Balance => "balance",
            Area::Sync => "sync",
            Area::Faults => "faults",
            Area::Registration => "registration",
            Area::RateLimiting => "rateLimiting",
            Area::AdminApi => "adminApi",
        }
    }
}

impl fmt::Display for Area {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Area {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Area::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| format!("unknown area `{s}`"))
    }
}

/// How much a feature is asked of every implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Level {
    /// What any ShenYu-compatible pair must do (divide, plain sync, common balancers).
    Core,
    /// Optional: faults, topologies, other plugins, gantry's extensions.
    Extended,
}

impl Level {
    /// `core` or `extended`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Core => "core",
            Level::Extended => "extended",
        }
    }
}

/// One feature of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feature {
    /// `<area>.<camelCase>`.
    pub name: String,
    /// Its area (and profile).
    pub area: Area,
    /// Core or extended.
    pub level: Level,
    /// One line on what it is.
    pub description: String,
}

/// One profile: an area's name and what it covers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileDef {
    /// The area it is the profile of.
    pub name: Area,
    /// What the area covers.
    pub description: String,
}

/// The whole catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// One per area.
    pub profiles: Vec<ProfileDef>,
    /// The closed list of features.
    pub features: Vec<Feature>,
}

impl Catalog {
    /// Parses a catalog text (no checks beyond its shape: see [`Catalog::problems`]).
    pub fn parse(text: &str) -> Result<Catalog, String> {
        serde_norway::from_str(text).map_err(|e| format!("{CATALOG_PATH}: {e}"))
    }

    /// What is wrong with the catalog: repeated feature or profile names, a feature whose name
    /// does not start with `<its area>.`, an area without a profile.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut names = HashSet::new();
        for f in &self.features {
            if !names.insert(f.name.as_str()) {
                problems.push(format!("feature `{}` is listed twice", f.name));
            }
            let camel = f.name.strip_prefix(&format!("{}.", f.area)).unwrap_or("");
            if camel.is_empty() || !camel.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
                problems.push(format!(
                    "feature `{}` must be named `{}.<camelCase>` (its area)",
                    f.name, f.area
                ));
            }
        }
        let mut areas = HashSet::new();
        for p in &self.profiles {
            if !areas.insert(p.name) {
                problems.push(format!("profile `{}` is listed twice", p.name));
            }
        }
        for area in Area::ALL {
            if !areas.contains(&area) {
                problems.push(format!("area `{area}` has no profile"));
            }
        }
        problems
    }

    /// The feature called `name`.
    pub fn get(&self, name: &str) -> Option<&Feature> {
        self.features.iter().find(|f| f.name == name)
    }

    /// The names of the features of `area` at `level` (`None`: both levels), sorted.
    pub fn names(&self, area: Option<Area>, level: Option<Level>) -> BTreeSet<String> {
        (self.features.iter())
            .filter(|f| area.is_none_or(|a| f.area == a) && level.is_none_or(|l| f.level == l))
            .map(|f| f.name.clone())
            .collect()
    }

    /// The known feature name closest to `name` (edit distance, case-insensitive), for a
    /// "did you mean".
    pub fn nearest(&self, name: &str) -> Option<&str> {
        let lower = name.to_ascii_lowercase();
        (self.features.iter())
            .map(|f| {
                (
                    distance(&lower, &f.name.to_ascii_lowercase()),
                    f.name.as_str(),
                )
            })
            .min()
            .map(|(_, n)| n)
    }

    /// "unknown feature `x` (did you mean `y`?)": the message for a name not in the catalog.
    pub fn unknown(&self, name: &str) -> String {
        match self.nearest(name) {
            Some(near) => format!(
                "unknown feature `{name}` (did you mean `{near}`?); the closed list is {CATALOG_PATH}"
            ),
            None => format!("unknown feature `{name}`; the closed list is {CATALOG_PATH}"),
        }
    }
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The embedded catalog, parsed and checked once. A broken catalog is a build defect (the
/// unit tests parse it), so it panics with every problem.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let catalog = Catalog::parse(FEATURES_YAML).unwrap_or_else(|e| panic!("{e}"));
        let problems = catalog.problems();
        assert!(
            problems.is_empty(),
            "{CATALOG_PATH}: {}",
            problems.join("; ")
        );
        catalog
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_catalog_parses_and_is_sound() {
        let c = Catalog::parse(FEATURES_YAML).unwrap();
        assert_eq!(c.problems(), Vec::<String>::new());
        assert!(c.features.len() > 40);
        // Every area but those the level rule makes extended-only has core features.
        for area in [Area::Routing, Area::Balance, Area::Sync] {
            assert!(!c.names(Some(area), Some(Level::Core)).is_empty(), "{area}");
        }
    }

    #[test]
    fn the_names_other_helpers_use_are_in_the_list() {
        let agreed = "sync.status sync.incremental sync.fullResync sync.deleteEvents \
            sync.reconnect sync.severalAdmins sync.severalGateways sync.largeFullSync \
            sync.deadStream sync.storeWipe sync.rejectedUpdate sync.ordering sync.churn \
            sync.latency routing.ruleToggle routing.uriStartsWith routing.uriEqual \
            routing.pathPattern routing.methods routing.headers routing.query balance.roundRobin \
            balance.random balance.hash balance.weights faults.partition faults.kill \
            faults.restart faults.stop faults.pause faults.clockSkew faults.storeWipe \
            faults.protocol";
        for name in agreed.split_whitespace() {
            assert!(catalog().get(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_broken_catalog_says_what_is_wrong() {
        let text = "profiles:\n  - { name: routing, description: r }\nfeatures:\n  - { name: routing.a, area: routing, level: core, description: x }\n  - { name: routing.a, area: routing, level: extended, description: y }\n  - { name: sync.b, area: routing, level: core, description: z }\n";
        let problems = Catalog::parse(text).unwrap().problems();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("`routing.a` is listed twice")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("`sync.b` must be named `routing.")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("area `balance` has no profile")),
            "{problems:?}"
        );
        let unknown_area =
            "profiles: []\nfeatures:\n  - { name: x.a, area: x, level: core, description: x }\n";
        assert!(
            Catalog::parse(unknown_area)
                .unwrap_err()
                .contains("unknown variant `x`")
        );
        let unknown_level = "profiles: []\nfeatures:\n  - { name: sync.a, area: sync, level: gold, description: x }\n";
        assert!(Catalog::parse(unknown_level).is_err());
    }

    #[test]
    fn the_nearest_name_is_suggested() {
        let c = catalog();
        assert_eq!(c.nearest("routing.header"), Some("routing.headers"));
        assert_eq!(c.nearest("Balance.RoundRobin"), Some("balance.roundRobin"));
        assert!(
            c.unknown("sync.incremnetal")
                .contains("did you mean `sync.incremental`?")
        );
    }
}
