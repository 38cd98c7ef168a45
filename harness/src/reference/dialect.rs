//! Regular expressions in ShenYu's two dialects, run on the Rust `regex` engine:
//! **re2j** for the `regex` operator (semantics §4) and **java.util.regex** for the
//! `{var:regex}` constraints of `AntPathMatcher` and `PathPattern` (§5).
//!
//! Both differ from Rust's defaults in ways that matter for matching: `\d`, `\w` and `\s` are
//! ASCII-only (Rust: Unicode), and re2j knows only the flags `i`, `m`, `s`, `U` (Rust also
//! takes `x`, `u`, `R`, which re2j rejects with a `PatternSyntaxException`). The translation
//! rewrites the class escapes to explicit ASCII classes and checks the flags. Constructs whose
//! dialect behaviour this model does not know (`\b`, `\Q…\E`, back-references, set operations
//! in classes, negated class escapes inside a class) are reported as [`Dialect::Unmodelled`]
//! rather than guessed.

use regex::Regex;

/// Which engine's syntax a pattern is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// com.google.re2j 1.8 (the `regex` operator).
    Re2j,
    /// java.util.regex (path-pattern variable constraints).
    Java,
}

/// Why a pattern has no Rust translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// The dialect's compiler rejects it (re2j `PatternSyntaxException`).
    Syntax(String),
    /// The model does not know how the dialect treats it.
    Unmodelled(String),
}

/// Compiles `pattern` (dialect `flavor`) as a Rust regex that matches only the **whole**
/// input, like Java's `Pattern.matches` / `Matcher.matches`.
pub(crate) fn full_match(pattern: &str, flavor: Flavor) -> Result<Regex, Dialect> {
    whole(&translate(pattern, flavor)?, pattern)
}

/// Compiles an already translated `body` to match whole inputs; `shown` names the pattern in
/// the error.
pub(crate) fn whole(body: &str, shown: &str) -> Result<Regex, Dialect> {
    Regex::new(&format!(r"\A(?:{body})\z"))
        .map_err(|e| Dialect::Syntax(format!("`{shown}` does not compile: {e}")))
}

/// The number of capturing groups of `pattern` (already translated by [`full_match`]).
pub(crate) fn group_count(re: &Regex) -> usize {
    re.captures_len() - 1
}

fn class_escape(c: char, flavor: Flavor, in_class: bool) -> Result<Option<String>, Dialect> {
    let space = match flavor {
        Flavor::Re2j => r"\t\n\f\r ",
        Flavor::Java => r"\t\n\x0B\f\r ",
    };
    let (set, negated) = match c {
        'd' => ("0-9".to_owned(), false),
        'D' => ("0-9".to_owned(), true),
        'w' => ("0-9A-Za-z_".to_owned(), false),
        'W' => ("0-9A-Za-z_".to_owned(), true),
        's' => (space.to_owned(), false),
        'S' => (space.to_owned(), true),
        _ => return Ok(None),
    };
    Ok(Some(match (in_class, negated) {
        (false, false) => format!("[{set}]"),
        (false, true) => format!("[^{set}]"),
        (true, false) => set,
        (true, true) => {
            return Err(Dialect::Unmodelled(format!(
                "`\\{c}` inside a character class"
            )));
        }
    }))
}

/// Rewrites `pattern` (dialect `flavor`) as Rust regex syntax with the same meaning.
pub(crate) fn translate(pattern: &str, flavor: Flavor) -> Result<String, Dialect> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    // Depth of `[` classes (Rust and re2j both nest `[[:alpha:]]`).
    let mut class = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&e) = chars.get(i + 1) else {
                    return Err(Dialect::Syntax(format!("`{pattern}`: trailing backslash")));
                };
                if let Some(expansion) = class_escape(e, flavor, class > 0)? {
                    out.push_str(&expansion);
                } else if matches!(e, 'b' | 'B' | 'Q' | 'E' | '<' | '>') || e.is_ascii_digit() {
                    return Err(Dialect::Unmodelled(format!("`\\{e}` in `{pattern}`")));
                } else {
                    out.push('\\');
                    out.push(e);
                }
                i += 2;
                continue;
            }
            '[' => {
                class += 1;
                out.push('[');
                i += 1;
                // `[^]...]` / `[]...]`: a leading `]` is a literal.
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str(r"\]");
                    i += 1;
                }
                continue;
            }
            ']' if class > 0 => class -= 1,
            '&' | '-' | '~' if class > 0 && chars.get(i + 1) == Some(&c) => {
                return Err(Dialect::Unmodelled(format!(
                    "`{c}{c}` inside a class in `{pattern}`"
                )));
            }
            '(' if class == 0 && chars.get(i + 1) == Some(&'?') => {
                check_group(&chars[i + 2..], pattern, flavor)?;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

/// Checks what follows `(?`: flags (`(?i)`, `(?i-s:`), a non-capturing group, a named group.
fn check_group(rest: &[char], pattern: &str, flavor: Flavor) -> Result<(), Dialect> {
    match rest.first() {
        Some(':') => return Ok(()),
        Some('P') if rest.get(1) == Some(&'<') => return Ok(()),
        Some('=' | '!' | '<' | '>') => {
            return match flavor {
                Flavor::Re2j => Err(Dialect::Syntax(format!(
                    "`{pattern}`: re2j has no look-around or atomic groups"
                ))),
                Flavor::Java => Err(Dialect::Unmodelled(format!(
                    "look-around or named group in `{pattern}`"
                ))),
            };
        }
        _ => {}
    }
    let flags: String = rest.iter().take_while(|&&c| c != ')' && c != ':').collect();
    // re2j knows these flags only; for java.util.regex the model knows no others either.
    if let Some(bad) = flags.chars().find(|c| !"imsU-".contains(*c)) {
        return match flavor {
            Flavor::Re2j => Err(Dialect::Syntax(format!(
                "`{pattern}`: re2j has no flag `{bad}` (only i, m, s, U)"
            ))),
            Flavor::Java => Err(Dialect::Unmodelled(format!("flag `{bad}` in `{pattern}`"))),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        full_match(p, Flavor::Re2j).unwrap().is_match(s)
    }

    #[test]
    fn matches_are_whole_string() {
        assert!(m("a.*", "abc"));
        assert!(!m("b", "abc"));
        assert!(m("a|b", "b"));
        assert!(!m("a|b", "ab"));
        assert!(m("(?m)a", "a"));
        assert!(!m("(?m)a$", "a\nb"));
    }

    #[test]
    fn class_escapes_are_ascii() {
        assert!(m(r"\d+", "123"));
        assert!(!m(r"\d+", "\u{663}"));
        assert!(!m(r"\w+", "é"));
        assert!(m(r"\w+", "a_1"));
        assert!(m(r"[\d]+", "42"));
        assert!(m(r"\D", "x"));
        assert!(!m(r"\s", "\u{b}"));
        assert!(full_match(r"\s", Flavor::Java).unwrap().is_match("\u{b}"));
        assert!(!m(r"\s", "\u{a0}"));
        assert!(m(r"(?i)test", "TeSt"));
    }

    #[test]
    fn re2j_rejects_what_rust_accepts() {
        assert!(matches!(
            full_match("(?x)a b", Flavor::Re2j),
            Err(Dialect::Syntax(_))
        ));
        assert!(matches!(
            full_match("(?u)a", Flavor::Re2j),
            Err(Dialect::Syntax(_))
        ));
        assert!(matches!(
            full_match("a(?=b)", Flavor::Re2j),
            Err(Dialect::Syntax(_))
        ));
        assert!(matches!(
            full_match(r"\bab", Flavor::Re2j),
            Err(Dialect::Unmodelled(_))
        ));
        assert!(matches!(
            full_match("[a&&b]", Flavor::Re2j),
            Err(Dialect::Unmodelled(_))
        ));
    }

    #[test]
    fn groups_are_counted() {
        let re = full_match("(a)(?:b)(?P<n>c)", Flavor::Java).unwrap();
        assert_eq!(group_count(&re), 2);
        assert_eq!(group_count(&full_match("[a-z]+", Flavor::Java).unwrap()), 0);
    }
}
