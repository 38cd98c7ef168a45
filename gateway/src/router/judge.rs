//! Predicate judges (ShenYu `PredicateJudge` SPI): one compiled [`Judge`] per condition.
//!
//! Every judge except `isBlank` compares against `paramValue` after Java's `String.trim()`.
//! Patterns, regexes and dates are compiled when the snapshot is built; a compile failure is
//! kept and only surfaces (as ShenYu's 400 or 500) when the judge is actually evaluated.

use chrono::NaiveDateTime;
use model::Operator;
use model::time::parse_time;
use regex::Regex;

use super::MatchError;
use super::ant_path::AntPattern;
use model::path_pattern::PathPattern;

/// A compiled operator with its (trimmed) value.
#[derive(Debug, Clone)]
pub(crate) enum Judge {
    /// `=` / `equals`.
    Equals(String),
    /// `contains`, and `match` / `pathPattern` on anything but `uri`.
    Contains(String),
    /// `exclude` on anything but `uri`.
    NotContains(String),
    /// `startsWith`.
    StartsWith(String),
    /// `endsWith`.
    EndsWith(String),
    /// `match` on `uri`.
    Ant(Result<AntPattern, String>),
    /// `exclude` on `uri`.
    NotAnt(Result<AntPattern, String>),
    /// `pathPattern` on `uri`.
    PathPattern(Result<PathPattern, String>),
    /// `regex`: full match, ASCII `\d \w \s`.
    Regex(Result<Regex, String>),
    /// `TimeBefore`: `now` is compared when the condition has no param name.
    TimeBefore {
        /// Compare the current local time instead of the request value.
        use_now: bool,
        /// The parsed condition value.
        value: Result<NaiveDateTime, String>,
    },
    /// `TimeAfter`.
    TimeAfter {
        /// Compare the current local time instead of the request value.
        use_now: bool,
        /// The parsed condition value.
        value: Result<NaiveDateTime, String>,
    },
    /// `isBlank`.
    IsBlank,
}

impl Judge {
    /// Compiles a supported operator. `on_uri` is whether the param type is exactly `uri`.
    pub(crate) fn compile(
        operator: Operator,
        on_uri: bool,
        param_name: &str,
        param_value: &str,
    ) -> Result<Judge, String> {
        let v = java_trim(param_value);
        Ok(match operator {
            Operator::Equals => Judge::Equals(v.to_owned()),
            Operator::Contains => Judge::Contains(v.to_owned()),
            Operator::StartsWith => Judge::StartsWith(v.to_owned()),
            Operator::EndsWith => Judge::EndsWith(v.to_owned()),
            Operator::Match if on_uri => Judge::Ant(AntPattern::compile(v)),
            Operator::Match => Judge::Contains(v.to_owned()),
            Operator::Exclude if on_uri => Judge::NotAnt(AntPattern::compile(v)),
            Operator::Exclude => Judge::NotContains(v.to_owned()),
            Operator::PathPattern if on_uri => Judge::PathPattern(PathPattern::parse(v)),
            Operator::PathPattern => Judge::Contains(v.to_owned()),
            Operator::Regex => Judge::Regex(compile_regex(v)),
            // ShenYu: TimeBefore uses `now` for a null *or empty* name, TimeAfter for null only
            // (semantics §9.5). gantry uses `now` for an empty name in both (the model reads a
            // null name as empty): README, compatibility notes.
            Operator::TimeBefore => Judge::TimeBefore {
                use_now: param_name.is_empty(),
                value: parse_time(v),
            },
            Operator::TimeAfter => Judge::TimeAfter {
                use_now: param_name.is_empty(),
                value: parse_time(v),
            },
            Operator::IsBlank => Judge::IsBlank,
            Operator::Gt | Operator::Lt | Operator::SpEl | Operator::Groovy => {
                return Err(format!("operator `{operator}` has no judge in the gateway"));
            }
        })
    }

    /// Judges a request value; `real` is never blank here except for `isBlank`.
    pub(crate) fn judge(&self, real: Option<&str>) -> Result<bool, MatchError> {
        let r = real.unwrap_or("");
        Ok(match self {
            Judge::Equals(v) => r == v,
            Judge::Contains(v) => r.contains(v.as_str()),
            Judge::NotContains(v) => !r.contains(v.as_str()),
            Judge::StartsWith(v) => r.starts_with(v.as_str()),
            Judge::EndsWith(v) => r.ends_with(v.as_str()),
            Judge::Ant(p) => p.as_ref().map_err(MatchError::internal)?.matches(r),
            Judge::NotAnt(p) => !p.as_ref().map_err(MatchError::internal)?.matches(r),
            Judge::PathPattern(p) => p
                .as_ref()
                .map_err(MatchError::bad_request)?
                .matches(r)
                .map_err(MatchError::bad_request)?,
            Judge::Regex(re) => re.as_ref().map_err(MatchError::internal)?.is_match(r),
            Judge::TimeBefore { use_now, value } => {
                let value = value.as_ref().map_err(MatchError::internal)?;
                left(*use_now, r)? < *value
            }
            Judge::TimeAfter { use_now, value } => {
                let value = value.as_ref().map_err(MatchError::internal)?;
                left(*use_now, r)? > *value
            }
            Judge::IsBlank => is_blank(real),
        })
    }
}

fn left(use_now: bool, real: &str) -> Result<NaiveDateTime, MatchError> {
    if use_now {
        Ok(chrono::DateTime::<chrono::Local>::from(model::world::now()).naive_local())
    } else {
        parse_time(real).map_err(MatchError::internal)
    }
}

/// Compiles a re2j full-match regex (`Pattern.matches`): the pattern is read as re2j reads
/// it ([`model::re2j::translate`]: re2j syntax only, ASCII `\d \w \s \b`, …) and anchored as
/// `^(?:…)$`. A pattern re2j refuses is an error, as is one the `regex` crate cannot build.
pub(crate) fn compile_regex(v: &str) -> Result<Regex, String> {
    let body = model::re2j::translate(v).map_err(|e| format!("invalid regex `{v}`: {e}"))?;
    Regex::new(&format!("^(?:{body})$")).map_err(|e| format!("invalid regex `{v}`: {e}"))
}

/// Java `String.trim()`: strips every char `<= U+0020` from both ends.
pub(crate) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= '\u{20}')
}

/// commons-lang3 `StringUtils.isBlank` with Java's `Character.isWhitespace`.
pub(crate) fn is_blank(s: Option<&str>) -> bool {
    s.is_none_or(|s| s.chars().all(java_whitespace))
}

/// Java `Character.isWhitespace`: ASCII controls 9–13 and 28–31, and the Unicode space,
/// line and paragraph separators except the no-break spaces U+00A0, U+2007 and U+202F.
fn java_whitespace(c: char) -> bool {
    matches!(c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}' | ' '
        | '\u{1680}' | '\u{2000}'..='\u{2006}' | '\u{2008}'..='\u{200A}'
        | '\u{2028}' | '\u{2029}' | '\u{205F}' | '\u{3000}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn judge(op: &str, on_uri: bool, value: &str, real: &str) -> Result<bool, MatchError> {
        Judge::compile(op.parse().unwrap(), on_uri, "name", value)
            .unwrap()
            .judge(Some(real))
    }

    #[rstest]
    #[case("=", true, "/a/b", "/a/b", true)]
    #[case("=", true, "/a/b", "/a/b/", false)]
    #[case("=", false, " x ", "x", true)]
    #[case("=", false, "X", "x", false)]
    #[case("match", true, "/a/**", "/a/b/c", true)]
    #[case("match", true, "/a/*", "/a/b/c", false)]
    #[case("match", false, "abc", "xxabcxx", true)]
    #[case("match", false, "/api/**", "/api/x", false)]
    #[case("pathPattern", true, "/a/{*rest}", "/a/b/c", true)]
    #[case("pathPattern", false, "/a/**/b", "x/a/**/by", true)]
    #[case("startsWith", true, "/http/", "/http/order", true)]
    #[case("startsWith", true, "/HTTP/", "/http/order", false)]
    #[case("endsWith", false, ".json", "a.json", true)]
    #[case("contains", false, "  ", "anything", true)]
    #[case("regex", true, r"/a/\d+", "/a/12", true)]
    #[case("regex", true, r"/a/\d+", "/a/12/x", false)]
    #[case("regex", true, r"/a/\d+", "/a/١٢", false)]
    #[case("regex", false, r"\w+", "héllo", false)]
    #[case("regex", false, r"(?i)abc", "ABC", true)]
    #[case("regex", false, r"a|b", "ab", false)]
    #[case("exclude", true, "/admin/**", "/api/x", true)]
    #[case("exclude", true, "/admin/**", "/admin/x", false)]
    #[case("exclude", false, "bot", "googlebot", false)]
    #[case(
        "TimeBefore",
        false,
        "2099-01-01 00:00:00",
        "2020-01-01 00:00:00",
        true
    )]
    #[case(
        "TimeAfter",
        false,
        "2099-01-01 00:00:00",
        "2020-01-01 00:00:00",
        false
    )]
    #[case("TimeAfter", false, "2000-01-01 00:00:00", "2020-01-01 00:00:00", true)]
    #[case("isBlank", false, "whatever", "x", false)]
    fn judge_vectors(
        #[case] op: &str,
        #[case] on_uri: bool,
        #[case] value: &str,
        #[case] real: &str,
        #[case] want: bool,
    ) {
        assert_eq!(
            judge(op, on_uri, value, real).unwrap(),
            want,
            "{op} {value} {real}"
        );
    }

    #[test]
    fn time_judges_without_name_use_now() {
        let j = Judge::compile(Operator::TimeBefore, false, "", "2099-01-01 00:00:00").unwrap();
        assert!(j.judge(Some("not a date")).unwrap());
        let j = Judge::compile(Operator::TimeBefore, false, "", "2000-01-01 00:00:00").unwrap();
        assert!(!j.judge(Some("x")).unwrap());
        // TimeAfter too (ShenYu compares the request value for an empty name: a 500 here).
        let j = Judge::compile(Operator::TimeAfter, false, "", "2000-01-01 00:00:00").unwrap();
        assert!(j.judge(Some("not a date")).unwrap());
        let j = Judge::compile(Operator::TimeAfter, false, "", "2099-01-01 00:00:00").unwrap();
        assert!(!j.judge(Some("x")).unwrap());
        // With a name, the request value is compared.
        let j = Judge::compile(Operator::TimeAfter, false, "t", "2000-01-01 00:00:00").unwrap();
        assert!(j.judge(Some("2001-01-01 00:00:00")).unwrap());
        assert_eq!(j.judge(Some("x")).unwrap_err().status, 500);
    }

    #[rstest]
    #[case("regex", true, "(a", 500)]
    #[case("regex", true, r"(\w)\1", 500)]
    #[case("regex", true, "(?=a)", 500)]
    #[case("pathPattern", true, "/a/**/b", 400)]
    #[case("match", true, "/a/{x:(}", 500)]
    #[case("TimeBefore", false, "2099-01-01T00:00:00", 500)]
    fn compile_failures_surface_when_judged(
        #[case] op: &str,
        #[case] on_uri: bool,
        #[case] value: &str,
        #[case] status: u16,
    ) {
        let err = judge(op, on_uri, value, "/a/b").unwrap_err();
        assert_eq!(err.status.as_u16(), status);
    }

    /// Rust-only syntax that re2j refuses (`PatternSyntaxException`, HTTP 500), even where
    /// Rust's `regex` would match.
    #[rstest]
    #[case("(?x)a b", "ab")]
    #[case("(?u)a", "a")]
    #[case("(?R)a", "a")]
    #[case("a**", "a")]
    #[case(r"\u0061", "a")]
    #[case(r"\p{letter}", "a")]
    #[case("(?<é>a)", "a")]
    #[case("a{1001}", "a")]
    fn rust_only_regex_syntax_is_500(#[case] pattern: &str, #[case] real: &str) {
        assert!(
            Regex::new(&format!("^(?:{pattern})$")).is_ok(),
            "{pattern} must be valid Rust"
        );
        let err = judge("regex", false, pattern, real).unwrap_err();
        assert_eq!(err.status.as_u16(), 500, "{pattern}");
    }

    /// Full matches of re2j patterns (`model::re2j` translates, the gateway anchors).
    fn re2j_matches(pattern: &str, s: &str) -> bool {
        compile_regex(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(s)
    }

    #[rstest]
    #[case("a", "a", true)]
    #[case("a|b", "ab", false)]
    #[case("(?i)test", "TeSt", true)]
    #[case("a(?i)|b", "B", true)]
    #[case("a(?i)|b", "A", false)]
    #[case("(?i-i)a", "A", false)]
    #[case("(?ii)a", "A", true)]
    #[case("(?)a", "a", true)]
    #[case("(?i:a)b", "AB", false)]
    #[case("(?s).", "\n", true)]
    #[case(".", "\n", false)]
    #[case("(?m)a$\nb", "a\nb", true)]
    #[case("(?U)a*", "aaa", true)]
    #[case("(?P<n>a)(?<m>b)", "ab", true)]
    #[case("(?P<1x>a)", "a", true)]
    // A flag group does not stop the repetition from applying to what came before.
    #[case("a(?i)*", "aaa", true)]
    #[case("a(?i)*b", "aaaB", true)]
    #[case("a{2}(?m)?", "", true)]
    #[case("a*(?i)+", "", true)]
    #[case("\\x00(?-i)+(?i)?", "", true)]
    // ASCII classes.
    #[case(r"\d+", "123", true)]
    #[case(r"\d", "\u{663}", false)]
    #[case(r"\w+", "héllo", false)]
    #[case(r"\s", "\u{b}", false)]
    #[case(r"\s", "\u{c}", true)]
    #[case(r"[\d]+", "42", true)]
    #[case(r"[^\D]", "4", true)]
    #[case(r"(?i)\w", "\u{212A}", true)]
    #[case("[[:alpha:]]+", "abC", true)]
    #[case("[[:alpha:]]", "é", false)]
    #[case("[[:^alpha:]]", "1", true)]
    #[case("[[:space:]]", "\u{b}", true)]
    #[case(r"a\b", "a", true)]
    #[case(r"é\b", "é", false)]
    #[case(r"\Aa\z", "a", true)]
    // Literals Rust would read otherwise.
    #[case(r"\<a\>", "<a>", true)]
    #[case(r"\Qa.b*\E", "a.b*", true)]
    #[case(r"\Qa.b", "a.b", true)]
    #[case(r"a\Q\E*", "aa", true)]
    #[case(r"\Qab\E*", "abbb", true)]
    #[case(r"\012", "\n", true)]
    #[case(r"\0", "\0", true)]
    #[case(r"\08", "\08", true)]
    #[case(r"\é", "é", true)]
    #[case(r"\_", "_", true)]
    #[case(r"\x41\x{1F600}", "A\u{1F600}", true)]
    #[case(r"\a\f\n\r\t\v", "\u{7}\u{c}\n\r\t\u{b}", true)]
    #[case("a{,3}", "a{,3}", true)]
    #[case("a{01}", "a{01}", true)]
    #[case("a{1", "a{1", true)]
    #[case("a{", "a{", true)]
    #[case("{", "{", true)]
    #[case("a}", "a}", true)]
    #[case("]", "]", true)]
    #[case("a{2}", "aa", true)]
    #[case("a{2,}", "aaaa", true)]
    #[case("a{0,1000}", "", true)]
    #[case("a{1,2}?", "aa", true)]
    #[case("a b#c", "a b#c", true)]
    #[case("^*a", "a", true)]
    // Classes: `[`, `&&`, `--`, `~~` are literal chars.
    #[case("[a[b]]", "[]", true)]
    #[case("[a[b]]", "b]", true)]
    #[case("[a&&b]", "&", true)]
    #[case("[a~~b]", "~", true)]
    #[case("[%--b]", "*", true)]
    #[case("[%--b]", "b", true)]
    #[case("[a-c--e]", "-", true)]
    #[case("[]a]", "]", true)]
    #[case("[^]a]", "b", true)]
    #[case("[^a]", "\n", true)]
    #[case("[a-]", "-", true)]
    #[case(r"[\]]", "]", true)]
    #[case(r"[\x41-\x43]", "B", true)]
    #[case(r"[\<]", "<", true)]
    #[case(r"[^\x00-\x{10FFFF}]", "a", false)]
    // Unicode classes from re2j's tables.
    #[case(r"\pL+", "héllo", true)]
    #[case(r"\p{Greek}", "α", true)]
    #[case(r"\P{Greek}", "α", false)]
    #[case(r"\p{^Greek}", "a", true)]
    #[case(r"\P{^Greek}", "α", true)]
    #[case(r"[\p{Lu}\d]+", "A1", true)]
    #[case(r"\p{Any}", "\u{10FFFF}", true)]
    #[case(r"\p{Cs}", "a", false)]
    #[case(r"\P{Cs}", "a", true)]
    #[case(r"[\p{Cs}a]", "a", true)]
    #[case(r"\p{Unknown}", "\u{E000}", true)]
    #[case(r"\x{D800}", "a", false)]
    #[case(r"[\x{D800}-\x{E000}]", "\u{E000}", true)]
    fn translation_matches_like_re2j(#[case] pattern: &str, #[case] s: &str, #[case] want: bool) {
        assert_eq!(re2j_matches(pattern, s), want, "{pattern} ~ {s:?}");
    }

    /// re2j's table names Rust's `regex` knows less well (all of them compile; checked once
    /// against the whole table).
    #[rstest]
    #[case(r"\p{Canadian_Aboriginal}", "\u{1401}")]
    #[case(r"\p{Old_South_Arabian}", "\u{10A60}")]
    #[case(r"\p{Phags_Pa}", "\u{A840}")]
    #[case(r"\p{Nko}", "\u{7C0}")]
    #[case(r"\p{Inherited}", "\u{300}")]
    #[case(r"\p{Zl}", "\u{2028}")]
    #[case(r"\p{Pi}", "\u{AB}")]
    fn table_names(#[case] pattern: &str, #[case] s: &str) {
        assert!(re2j_matches(pattern, s), "{pattern}");
    }

    #[test]
    fn bad_request_date_is_500() {
        assert_eq!(
            judge("TimeAfter", false, "2000-01-01 00:00:00", "tomorrow")
                .unwrap_err()
                .status,
            500
        );
    }

    #[test]
    fn unsupported_operators_do_not_compile() {
        assert!(Judge::compile(Operator::Gt, false, "", "1").is_err());
        assert!(Judge::compile(Operator::SpEl, false, "", "1").is_err());
    }

    #[rstest]
    #[case(None, true)]
    #[case(Some(""), true)]
    #[case(Some(" \t\n\u{0B}\u{0C}\r\u{1C}\u{2003}\u{3000}\u{2028}"), true)]
    #[case(Some("\u{A0}"), false)]
    #[case(Some("\u{2007}"), false)]
    #[case(Some("\u{202F}"), false)]
    #[case(Some("\u{200B}"), false)]
    #[case(Some("\u{85}"), false)]
    #[case(Some(" x "), false)]
    fn java_blank(#[case] s: Option<&str>, #[case] want: bool) {
        assert_eq!(is_blank(s), want);
    }

    /// Java's `String.trim()`, written out: every char <= U+0020 goes from both ends (the C0
    /// controls too), nothing else does (not U+007F, U+0085, U+00A0 nor Unicode spaces), and
    /// nothing inside is touched.
    #[rstest]
    #[case("", "")]
    #[case("   ", "")]
    #[case("\u{0}\u{1F}\u{20}", "")]
    #[case(" a ", "a")]
    #[case("\t\n\r\u{B}\u{C}a b\t", "a b")]
    #[case("\u{0}a\u{0}", "a")]
    #[case("\u{1}\u{20}ab\u{7F}\u{7} ", "ab\u{7F}")]
    #[case("\u{1C}\u{1D}\u{1E}\u{1F}a", "a")]
    #[case("a \u{0} b", "a \u{0} b")]
    #[case("\u{7F}a\u{7F}", "\u{7F}a\u{7F}")]
    #[case("\u{85}a", "\u{85}a")]
    #[case("\u{A0}ab\u{A0}", "\u{A0}ab\u{A0}")]
    #[case("\u{2003}ab", "\u{2003}ab")]
    #[case("\u{3000}ab\u{2028}", "\u{3000}ab\u{2028}")]
    #[case(" \u{A0} a \u{A0} ", "\u{A0} a \u{A0}")]
    #[case("\u{FEFF}a", "\u{FEFF}a")]
    #[case(" é ", "é")]
    fn java_trim_strips_controls_and_space_only(#[case] s: &str, #[case] want: &str) {
        assert_eq!(java_trim(s), want);
    }

    proptest! {
        /// The value is made of letters, `/` and spaces only, so Java's trim is the
        /// stripping of spaces: the oracle is `str::trim_matches(' ')`, not `java_trim`.
        #[test]
        fn starts_with_agrees_with_std(v in "[a-z/ ]{0,6}", r in "[a-z/]{1,10}") {
            let want = r.starts_with(v.trim_matches(' '));
            prop_assert_eq!(judge("startsWith", true, &v, &r).unwrap(), want);
        }

        #[test]
        fn exclude_negates_match(v in "[a-c/*]{0,6}", r in "/[a-c/]{0,8}", on_uri: bool) {
            let m = judge("match", on_uri, &v, &r).unwrap();
            prop_assert_eq!(judge("exclude", on_uri, &v, &r).unwrap(), !m);
        }

        #[test]
        fn regex_literal_matches_itself(s in "[a-z0-9]{1,12}") {
            prop_assert!(judge("regex", false, &s, &s).unwrap());
        }
    }
}
