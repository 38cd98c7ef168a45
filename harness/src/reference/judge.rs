//! The operators (ShenYu's `PredicateJudge` SPI, semantics §2 and §4). Every judge except
//! `isBlank` compares the **Java-trimmed** condition value `v` with the **untrimmed** request
//! value `r`, which the caller has already found non-blank.

use chrono::NaiveDateTime;
use model::ConditionData;

use super::dialect::{self, Dialect, Flavor};
use super::path_pattern;
use super::{Failure, ant_path, java, time};

/// A judge, found by its SPI name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judge {
    Equals,
    Contains,
    StartsWith,
    EndsWith,
    Match,
    Regex,
    TimeAfter,
    TimeBefore,
    Exclude,
    PathPattern,
    IsBlank,
}

impl Judge {
    /// The SPI lookup: `=` is `equals`; names are case-sensitive; `>` and `<` (listed by
    /// ShenYu with `support=false`) and anything else have no judge (an
    /// `IllegalArgumentException`: HTTP 400).
    pub(crate) fn lookup(operator: &str) -> Result<Judge, Failure> {
        Ok(match operator {
            "=" | "equals" => Judge::Equals,
            "contains" => Judge::Contains,
            "startsWith" => Judge::StartsWith,
            "endsWith" => Judge::EndsWith,
            "match" => Judge::Match,
            "regex" => Judge::Regex,
            "TimeAfter" => Judge::TimeAfter,
            "TimeBefore" => Judge::TimeBefore,
            "exclude" => Judge::Exclude,
            "pathPattern" => Judge::PathPattern,
            "isBlank" => Judge::IsBlank,
            other => {
                return Err(Failure::bad_request(format!(
                    "No implementation for PredicateJudge `{other}`"
                )));
            }
        })
    }

    /// Judges `real` (non-blank unless this is `isBlank`) against condition `c`; `now` is the
    /// gateway's local time.
    pub(crate) fn judge(
        self,
        c: &ConditionData,
        real: Option<&str>,
        now: NaiveDateTime,
    ) -> Result<bool, Failure> {
        if self == Judge::IsBlank {
            return Ok(java::is_blank(real));
        }
        let r = real.unwrap_or_default();
        let v = java::trim(&c.param_value);
        let on_uri = c.param_type == "uri";
        Ok(match self {
            Judge::Equals => r == v,
            Judge::Contains => r.contains(v),
            Judge::StartsWith => r.starts_with(v),
            Judge::EndsWith => r.ends_with(v),
            Judge::Match if on_uri => ant(v, r)?,
            Judge::Exclude if on_uri => !ant(v, r)?,
            Judge::PathPattern if on_uri => path_pattern::matches(v, r).map_err(|e| match e {
                path_pattern::Error::Parse(m) | path_pattern::Error::Decode(m) => {
                    Failure::bad_request(m)
                }
                path_pattern::Error::Unmodelled(m) => Failure::Unmodelled(m),
            })?,
            // On any other param type these three are substring tests (no pattern parsing).
            Judge::Match | Judge::PathPattern => r.contains(v),
            Judge::Exclude => !r.contains(v),
            Judge::Regex => dialect::full_match(v, Flavor::Re2j)
                .map_err(dialect_failure)?
                .is_match(r),
            Judge::TimeBefore => {
                // `paramName` null or empty → compare now.
                let subject = if c.param_name.is_empty() {
                    now
                } else {
                    date(r)?
                };
                subject < date(v)?
            }
            Judge::TimeAfter => {
                // ShenYu uses `now` only for a null `paramName` and parses the request value
                // for `""`; gantry uses `now` for `""` too (README, "Compatibility notes":
                // `TimeAfter` with an empty `paramName`). The model follows gantry.
                let subject = if c.param_name.is_empty() {
                    now
                } else {
                    date(r)?
                };
                subject > date(v)?
            }
            Judge::IsBlank => unreachable!("handled above"),
        })
    }
}

fn ant(pattern: &str, path: &str) -> Result<bool, Failure> {
    ant_path::matches(pattern, path).map_err(dialect_failure)
}

/// A pattern the dialect rejects is a `PatternSyntaxException`: HTTP 500.
fn dialect_failure(e: Dialect) -> Failure {
    match e {
        Dialect::Syntax(m) => Failure::internal(m),
        Dialect::Unmodelled(m) => Failure::Unmodelled(m),
    }
}

/// `DateTimeParseException`: HTTP 500.
fn date(s: &str) -> Result<NaiveDateTime, Failure> {
    time::parse(s).map_err(Failure::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> NaiveDateTime {
        time::parse("2026-06-01 12:00:00").unwrap()
    }

    fn judge(t: &str, op: &str, name: &str, value: &str, real: &str) -> Result<bool, Failure> {
        let c = ConditionData::new(t, op, name, value);
        Judge::lookup(op)?.judge(&c, Some(real), now())
    }

    fn yes(t: &str, op: &str, value: &str, real: &str) -> bool {
        judge(t, op, "x", value, real).unwrap()
    }

    #[test]
    fn string_judges_trim_the_value_only() {
        assert!(yes("header", "=", " a\t", "a"));
        assert!(!yes("header", "=", "a", " a"));
        assert!(yes("header", "=", "\u{1}a\u{1}", "a"));
        assert!(!yes("header", "=", "\u{a0}a", "a"));
        assert!(yes("header", "contains", "  ", "abc"));
        assert!(yes("header", "startsWith", "ab", "abc"));
        assert!(!yes("header", "startsWith", "AB", "abc"));
        assert!(yes("header", "endsWith", "bc", "abc"));
    }

    #[test]
    fn patterns_only_on_uri() {
        assert!(yes("uri", "match", "/a/**", "/a/b"));
        assert!(!yes("header", "match", "/a/**", "/a/b"));
        assert!(yes("header", "match", "/a/**", "x/a/**y"));
        assert!(!yes("uri", "exclude", "/a/**", "/a/b"));
        assert!(yes("header", "exclude", "q", "abc"));
        assert!(yes("uri", "pathPattern", "/te st", "/te%20st"));
        assert!(yes("header", "pathPattern", "/a/**/b", "/a/**/b"));
        assert_eq!(
            judge("uri", "pathPattern", "/", "/a/**/b", "/a")
                .unwrap_err()
                .status(),
            Some(400)
        );
    }

    #[test]
    fn regex_is_re2j() {
        assert!(yes("header", "regex", "a.*", "abc"));
        assert!(!yes("header", "regex", "b", "abc"));
        assert!(!yes("header", "regex", r"\d", "\u{663}"));
        assert_eq!(
            judge("header", "regex", "x", "(?x)a b", "ab")
                .unwrap_err()
                .status(),
            Some(500)
        );
    }

    #[test]
    fn times() {
        assert!(yes(
            "header",
            "TimeBefore",
            "2030-01-01 00:00:00",
            "2020-01-01 00:00:00"
        ));
        assert!(!yes(
            "header",
            "TimeBefore",
            "2020-01-01 00:00:00",
            "2020-01-01 00:00:00"
        ));
        assert!(yes(
            "header",
            "TimeAfter",
            "2018-02-30 10:00:00",
            "2018-03-01 00:00:00"
        ));
        assert!(!yes(
            "header",
            "TimeAfter",
            "2018-02-30 10:00:00",
            "2018-02-28 10:00:00"
        ));
        assert_eq!(
            judge("header", "TimeAfter", "x", "2018-01-01 00:00:00", "soon")
                .unwrap_err()
                .status(),
            Some(500)
        );
        // An empty name compares now (2026-06-01 here), for both.
        assert!(judge("uri", "TimeBefore", "", "2030-01-01 00:00:00", "/a").unwrap());
        assert!(judge("uri", "TimeAfter", "", "2020-01-01 00:00:00", "/a").unwrap());
        assert!(!judge("uri", "TimeAfter", "", "2030-01-01 00:00:00", "/a").unwrap());
        // A name of one space is not empty: the path is parsed, and fails.
        assert_eq!(
            judge("uri", "TimeBefore", " ", "2030-01-01 00:00:00", "/a")
                .unwrap_err()
                .status(),
            Some(500)
        );
    }

    #[test]
    fn unknown_operators() {
        for op in [">", "<", "Equals", "SpEL", ""] {
            assert_eq!(Judge::lookup(op).unwrap_err().status(), Some(400), "{op}");
        }
    }
}
