//! Which cases a run takes by their features: `--profile` (which features a case may need),
//! `--supported-features` and `--exempt-features` (which of those the implementation offers),
//! and the skip reason that names the missing features.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use super::catalog::{Area, Level, catalog};

/// A `--profile` value: `core` (the core features of every area), `extended` (every
/// feature), an area (its core and extended features), `<area>.core` or `<area>.extended`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProfileName {
    /// The area (`None`: every area).
    pub area: Option<Area>,
    /// Only this level (`None`: `extended` and a bare area: both).
    pub level: Option<Level>,
}

impl ProfileName {
    /// The names of the features the profile holds.
    pub fn features(&self) -> BTreeSet<String> {
        catalog().names(self.area, self.level)
    }

    /// Whether it holds `area`'s features of `level`.
    pub fn covers(&self, area: Area, level: Level) -> bool {
        self.area.is_none_or(|a| a == area) && self.level.is_none_or(|l| l == level)
    }
}

impl fmt::Display for ProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.area, self.level) {
            (None, Some(Level::Core)) => f.write_str("core"),
            (None, _) => f.write_str("extended"),
            (Some(a), None) => write!(f, "{a}"),
            (Some(a), Some(l)) => write!(f, "{a}.{}", l.as_str()),
        }
    }
}

/// The profiles `--profile` accepts, for messages.
fn accepted() -> String {
    let areas: Vec<&str> = Area::ALL.iter().map(|a| a.as_str()).collect();
    format!(
        "core, extended, an area ({}), or <area>.core / <area>.extended",
        areas.join(", ")
    )
}

impl FromStr for ProfileName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.starts_with(|c: char| c.is_ascii_digit())
            || s.starts_with(['v', 'V']) && s[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(format!(
                "`--profile {s}` looks like a ShenYu version: the admin REST API version is now \
                 `--shenyu-version {s}`; `--profile` selects conformance profiles: {}",
                accepted()
            ));
        }
        let level = |l: &str| match l {
            "core" => Some(Level::Core),
            "extended" => Some(Level::Extended),
            _ => None,
        };
        if let Some(l) = level(s) {
            return Ok(ProfileName {
                area: None,
                level: (l == Level::Core).then_some(l),
            });
        }
        let (area, lvl) = match s.split_once('.') {
            Some((a, l)) => (
                a,
                Some(
                    level(l)
                        .ok_or_else(|| format!("unknown profile `{s}`: expected {}", accepted()))?,
                ),
            ),
            None => (s, None),
        };
        let area = area
            .parse::<Area>()
            .map_err(|_| format!("unknown profile `{s}`: expected {}", accepted()))?;
        Ok(ProfileName {
            area: Some(area),
            level: lvl,
        })
    }
}

/// Parses a comma-separated feature list (`--supported-features`, `--exempt-features`); an
/// unknown name is an error naming the nearest known one.
pub fn parse_feature_list(text: &str) -> Result<BTreeSet<String>, String> {
    let catalog = catalog();
    (text.split(',').map(str::trim).filter(|n| !n.is_empty()))
        .map(|n| match catalog.get(n) {
            Some(_) => Ok(n.to_owned()),
            None => Err(catalog.unknown(n)),
        })
        .collect()
}

/// What a run asks of the cases' features.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeatureSelection {
    /// `--profile`: a case runs only when every feature it names is in the profile (`None`:
    /// every case, with or without features).
    pub profile: Option<ProfileName>,
    /// `--supported-features`: the features the implementation offers (`None`: all).
    pub supported: Option<BTreeSet<String>>,
    /// `--exempt-features`: features not to test.
    pub exempt: BTreeSet<String>,
}

impl FeatureSelection {
    /// Whether a case naming `features` belongs to the run's profile. With a profile, a case
    /// that names no feature belongs to none.
    pub fn in_profile(&self, features: &[String]) -> bool {
        let Some(profile) = self.profile else {
            return true;
        };
        let held = profile.features();
        !features.is_empty() && features.iter().all(|f| held.contains(f))
    }

    /// Whether `feature` is offered and not exempt.
    pub fn offers(&self, feature: &str) -> bool {
        !self.exempt.contains(feature)
            && self.supported.as_ref().is_none_or(|s| s.contains(feature))
    }

    /// Why a case naming `features` is skipped: the features it needs that are exempt or not
    /// among the supported ones. `None` when it runs.
    pub fn skip_reason(&self, features: &[String]) -> Option<String> {
        let exempt: Vec<&str> = (features.iter().map(String::as_str))
            .filter(|f| self.exempt.contains(*f))
            .collect();
        if !exempt.is_empty() {
            return Some(unsupported_reason(&exempt, "exempt (--exempt-features)"));
        }
        let unsupported: Vec<&str> = (features.iter().map(String::as_str))
            .filter(|f| !self.offers(f))
            .collect();
        (!unsupported.is_empty())
            .then(|| unsupported_reason(&unsupported, "not among --supported-features"))
    }
}

/// The words every skip for missing features starts with ([`unsupported_reason`]).
const NEEDS: &str = "needs unsupported feature(s) ";

/// A skip reason naming the missing features: `needs unsupported feature(s) a, b: <why>`; the
/// conformance report reads the names back ([`missing_features`]).
pub fn unsupported_reason(missing: &[&str], why: &str) -> String {
    format!("{NEEDS}{}: {why}", missing.join(", "))
}

/// The features a skip reason of [`unsupported_reason`]'s shape names (none for any other).
pub fn missing_features(reason: &str) -> Vec<String> {
    reason
        .strip_prefix(NEEDS)
        .and_then(|rest| rest.split_once(": "))
        .map(|(list, _)| list.split(", ").map(str::to_owned).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn profiles_parse_and_hold_their_features() {
        let core: ProfileName = "core".parse().unwrap();
        assert!(core.features().contains("routing.uriStartsWith"));
        assert!(core.features().contains("sync.incremental"));
        assert!(!core.features().contains("faults.kill"));
        let extended: ProfileName = "extended".parse().unwrap();
        assert_eq!(extended.features(), catalog().names(None, None));
        let routing: ProfileName = "routing".parse().unwrap();
        assert!(routing.features().contains("routing.routeHeaders"));
        assert!(!routing.features().contains("sync.incremental"));
        let faults: ProfileName = "faults.extended".parse().unwrap();
        assert!(faults.features().contains("faults.kill"));
        assert!(
            "rateLimiting.core"
                .parse::<ProfileName>()
                .unwrap()
                .features()
                .is_empty()
        );
        for name in [
            "core",
            "extended",
            "routing",
            "sync.core",
            "faults.extended",
        ] {
            assert_eq!(name.parse::<ProfileName>().unwrap().to_string(), name);
        }
    }

    #[test]
    fn an_old_version_profile_points_to_shenyu_version() {
        for old in ["2.7", "2.6.0", "v2.7"] {
            let e = old.parse::<ProfileName>().unwrap_err();
            assert!(e.contains(&format!("`--shenyu-version {old}`")), "{e}");
        }
        let e = "routng".parse::<ProfileName>().unwrap_err();
        assert!(e.contains("unknown profile `routng`"), "{e}");
        assert!("routing.gold".parse::<ProfileName>().is_err());
    }

    #[test]
    fn a_case_is_in_a_profile_when_all_its_features_are() {
        let s = FeatureSelection {
            profile: Some("core".parse().unwrap()),
            ..FeatureSelection::default()
        };
        assert!(s.in_profile(&names(&["routing.uriStartsWith", "sync.incremental"])));
        assert!(!s.in_profile(&names(&["routing.uriStartsWith", "faults.kill"])));
        assert!(!s.in_profile(&[]));
        assert!(FeatureSelection::default().in_profile(&[]));
    }

    #[test]
    fn unsupported_and_exempt_features_skip_naming_them() {
        let s = FeatureSelection {
            profile: None,
            supported: Some(parse_feature_list("routing.uriStartsWith, sync.incremental").unwrap()),
            exempt: parse_feature_list("routing.headers").unwrap(),
        };
        assert_eq!(s.skip_reason(&names(&["routing.uriStartsWith"])), None);
        let why = s
            .skip_reason(&names(&["routing.uriStartsWith", "balance.hash"]))
            .unwrap();
        assert_eq!(missing_features(&why), ["balance.hash"]);
        let why = s
            .skip_reason(&names(&["routing.headers", "balance.hash"]))
            .unwrap();
        assert!(why.contains("exempt"), "{why}");
        assert_eq!(missing_features(&why), ["routing.headers"]);
        assert!(missing_features("etcd is not installed").is_empty());
        let e = parse_feature_list("routing.uriStartsWith,balance.rondRobin").unwrap_err();
        assert!(e.contains("did you mean `balance.roundRobin`"), "{e}");
    }
}
