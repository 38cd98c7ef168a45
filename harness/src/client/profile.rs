//! [`Profile`]: which Apache ShenYu admin REST API the [`AdminClient`](super::AdminClient)
//! speaks. `docs/profiles.md` lists what each profile sends and where in ShenYu it comes from.

use std::fmt;
use std::str::FromStr;

/// The ShenYu admin version whose REST API the admin client speaks.
///
/// Parsed from `2.6`, `2.6.0`, `2.7`, `2.7.1`, `2.7.x`, `v2.7.0.1`, ... (a leading `v`, any
/// further numeric or `x` components and a `-SUFFIX` such as `-SNAPSHOT` are accepted);
/// displayed as `2.6` or `2.7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// ShenYu 2.6.0, gantry's target (and its own admin's API): no namespaces, plugins at
    /// `/plugin`, divide upstreams in the selector handle. The default.
    #[default]
    V2_6,
    /// ShenYu 2.7.x: every selector, rule, batch and list call carries a `namespaceId`, plugins
    /// are looked up and enabled per namespace (`/namespace-plugin`), login is
    /// `GET /platform/login`, and divide selectors' upstreams are bound through discovery
    /// (`/proxy-selector/binding`, `/discovery-upstream/{handlerId}`).
    V2_7,
}

/// The profile strings [`Profile::from_str`] accepts, for error and help texts.
pub const ACCEPTED_PROFILES: &str = "2.6 (or 2.6.x) and 2.7 (or 2.7.x)";

/// A string that names no [`Profile`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ShenYu profile `{given}`: expected {ACCEPTED_PROFILES}")]
pub struct UnknownProfile {
    /// The string as given.
    pub given: String,
}

impl Profile {
    /// Every profile, oldest first.
    pub const ALL: [Profile; 2] = [Profile::V2_6, Profile::V2_7];

    /// `"2.6"` or `"2.7"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::V2_6 => "2.6",
            Profile::V2_7 => "2.7",
        }
    }

    /// Whether the admin's data is split by namespace (`namespaceId` on bodies and queries).
    pub fn has_namespaces(self) -> bool {
        self == Profile::V2_7
    }

    /// Whether divide selectors' upstreams must be bound through the admin's discovery API
    /// instead of living in the selector handle alone.
    pub fn binds_discovery_upstreams(self) -> bool {
        self == Profile::V2_7
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownProfile {
            given: s.to_owned(),
        };
        let text = s.trim();
        let text = text
            .strip_prefix('v')
            .or_else(|| text.strip_prefix('V'))
            .unwrap_or(text);
        // `2.7.2-SNAPSHOT`: the suffix names no other API.
        let text = text.split_once('-').map_or(text, |(version, _)| version);
        let mut parts = text.split('.');
        let profile = match (parts.next(), parts.next()) {
            (Some("2"), Some("6")) => Profile::V2_6,
            (Some("2"), Some("7")) => Profile::V2_7,
            _ => return Err(unknown()),
        };
        let rest_ok = parts.all(|p| {
            p.eq_ignore_ascii_case("x") || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        });
        if rest_ok { Ok(profile) } else { Err(unknown()) }
    }
}

impl serde::Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Accepts a string (`"2.7"`, `"2.7.1"`) or a number (YAML `profile: 2.7`).
impl<'de> serde::Deserialize<'de> for Profile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Profile;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a ShenYu profile: {ACCEPTED_PROFILES}")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Profile, E> {
                v.parse().map_err(E::custom)
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Profile, E> {
                self.visit_str(&v.to_string())
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_accepted_version_strings() {
        for (text, want) in [
            ("2.6", Profile::V2_6),
            ("2.6.0", Profile::V2_6),
            ("2.6.1", Profile::V2_6),
            ("2.6.x", Profile::V2_6),
            (" 2.6 ", Profile::V2_6),
            ("2.7", Profile::V2_7),
            ("2.7.0", Profile::V2_7),
            ("2.7.1", Profile::V2_7),
            ("2.7.x", Profile::V2_7),
            ("2.7.X", Profile::V2_7),
            ("v2.7.0.1", Profile::V2_7),
            ("2.7.2-SNAPSHOT", Profile::V2_7),
        ] {
            assert_eq!(text.parse::<Profile>(), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn rejects_other_versions_naming_the_accepted_ones() {
        for text in [
            "", "2", "2.5", "2.5.1", "2.8", "3.0", "27", "2.7.", "2.7.y", "2.67", "latest",
        ] {
            let err = text.parse::<Profile>().expect_err(text);
            assert_eq!(err.given, text);
            let message = err.to_string();
            assert!(message.contains(&format!("`{text}`")), "{message}");
            assert!(
                message.contains("2.6") && message.contains("2.7.x"),
                "{message}"
            );
        }
    }

    #[test]
    fn displays_round_trip_and_default_is_2_6() {
        assert_eq!(Profile::default(), Profile::V2_6);
        for profile in Profile::ALL {
            assert_eq!(profile.to_string().parse::<Profile>(), Ok(profile));
        }
        assert_eq!(Profile::V2_7.to_string(), "2.7");
        assert!(Profile::V2_7.has_namespaces() && !Profile::V2_6.has_namespaces());
    }

    #[test]
    fn deserializes_from_strings_and_numbers() {
        let p: Profile = serde_json::from_str(r#""2.7.1""#).unwrap();
        assert_eq!(p, Profile::V2_7);
        let p: Profile = serde_json::from_str("2.6").unwrap();
        assert_eq!(p, Profile::V2_6);
        let p: Profile = serde_norway::from_str("2.7").unwrap();
        assert_eq!(p, Profile::V2_7);
        let err = serde_json::from_str::<Profile>(r#""2.5""#).unwrap_err();
        assert!(
            err.to_string().contains("unknown ShenYu profile `2.5`"),
            "{err}"
        );
        assert_eq!(serde_json::to_string(&Profile::V2_7).unwrap(), r#""2.7""#);
    }
}
