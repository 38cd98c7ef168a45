//! Spring `AntPathMatcher.match(pattern, path)` with its defaults (separator `/`,
//! case-sensitive, tokens not trimmed): the `match` and `exclude` operators on `uri`
//! (semantics §5.1).
//!
//! Both strings are split on `/` with empty segments dropped; `**` matches zero or more whole
//! segments anywhere; within a segment `?` is one char, `*` any run, `{name}` any run and
//! `{name:regex}` a java.util.regex. The path is the raw, undecoded one. The trailing-slash
//! rule of §5.1 also applies when the pattern's last segment is matched from the end after a
//! `**` (Spring ≥ 5.3.11, spring-framework #27506; ShenYu runs Spring 6.1).

use regex::Regex;

use super::dialect::{self, Dialect, Flavor};

/// `AntPathMatcher.match(pattern, path)`. Errors: a `{name:regex}` that does not compile
/// (java `PatternSyntaxException`), or one this model cannot translate.
pub(crate) fn matches(pattern: &str, path: &str) -> Result<bool, Dialect> {
    if path.starts_with('/') != pattern.starts_with('/') {
        return Ok(false);
    }
    let patt: Vec<&str> = tokens(pattern);
    let dirs: Vec<&str> = tokens(path);
    let seg = |p: &str, s: &str| Segment::new(p).and_then(|m| m.matches(s));

    let (mut p_start, mut s_start) = (0usize, 0usize);
    // Signed ends: they may pass below the starts (Java's `idxEnd = length - 1`).
    let mut p_end = patt.len() as isize - 1;
    let mut s_end = dirs.len() as isize - 1;

    // Everything up to the first `**`.
    while (p_start as isize) <= p_end && (s_start as isize) <= s_end {
        if patt[p_start] == "**" {
            break;
        }
        if !seg(patt[p_start], dirs[s_start])? {
            return Ok(false);
        }
        p_start += 1;
        s_start += 1;
    }
    if (s_start as isize) > s_end {
        // The path is used up: only `*` (before a trailing slash) or `**`s may remain.
        if (p_start as isize) > p_end {
            return Ok(pattern.ends_with('/') == path.ends_with('/'));
        }
        if p_start as isize == p_end && patt[p_start] == "*" && path.ends_with('/') {
            return Ok(true);
        }
        return Ok(patt[p_start..].iter().all(|d| *d == "**"));
    }
    if (p_start as isize) > p_end {
        // The pattern is used up but the path is not.
        return Ok(false);
    }

    // From the end back to the last `**`.
    while (p_start as isize) <= p_end && (s_start as isize) <= s_end {
        let d = patt[p_end as usize];
        if d == "**" {
            break;
        }
        if !seg(d, dirs[s_end as usize])? {
            return Ok(false);
        }
        // Spring ≥ 5.3.11 (spring-framework #27506): the last pattern segment also decides the
        // trailing slash here, so `/**/foo` does not match `/en/foo/`.
        if p_end as usize == patt.len() - 1 && pattern.ends_with('/') != path.ends_with('/') {
            return Ok(false);
        }
        p_end -= 1;
        s_end -= 1;
    }
    if (s_start as isize) > s_end {
        return Ok(patt[p_start..=p_end as usize].iter().all(|d| *d == "**"));
    }

    // Between `**`s: find each run of non-`**` segments at its first position.
    while p_start as isize != p_end && (s_start as isize) <= s_end {
        let next_ds = (p_start + 1..=p_end as usize)
            .find(|&i| patt[i] == "**")
            .expect("the loop above stopped at a `**` at p_end");
        if next_ds == p_start + 1 {
            // `**/**`: skip one.
            p_start += 1;
            continue;
        }
        let run = &patt[p_start + 1..next_ds];
        let room = (s_end - s_start as isize + 1) as usize;
        let mut found = None;
        if run.len() <= room {
            'shift: for shift in 0..=room - run.len() {
                for (j, p) in run.iter().enumerate() {
                    if !seg(p, dirs[s_start + shift + j])? {
                        continue 'shift;
                    }
                }
                found = Some(s_start + shift);
                break;
            }
        }
        let Some(at) = found else {
            return Ok(false);
        };
        p_start = next_ds;
        s_start = at + run.len();
    }
    Ok(patt[p_start..=p_end as usize].iter().all(|d| *d == "**"))
}

/// `StringUtils.tokenizeToStringArray(s, "/", false, true)`.
fn tokens(s: &str) -> Vec<&str> {
    s.split('/').filter(|t| !t.is_empty()).collect()
}

/// One pattern segment (`AntPathStringMatcher`): exact text, or a regex built from its globs.
enum Segment {
    Exact(String),
    Glob(Regex),
}

impl Segment {
    fn new(pattern: &str) -> Result<Segment, Dialect> {
        // Spring's GLOB_PATTERN: `?`, `*`, or `{…}` (one level of nested braces, escaped braces).
        let glob = Regex::new(r"\?|\*|\{((?:\{[^/]+?\}|[^/{}]|\\[{}])+?)\}")
            .expect("the glob pattern compiles");
        let mut body = String::from("(?s)");
        let mut end = 0;
        for m in glob.find_iter(pattern) {
            body.push_str(&regex::escape(&pattern[end..m.start()]));
            let text = m.as_str();
            match text {
                "?" => body.push('.'),
                "*" => body.push_str(".*"),
                _ => match text[1..text.len() - 1].split_once(':') {
                    None => body.push_str("(.*)"),
                    Some((_, constraint)) => {
                        body.push('(');
                        body.push_str(&dialect::translate(constraint, Flavor::Java)?);
                        body.push(')');
                    }
                },
            }
            end = m.end();
        }
        if end == 0 {
            return Ok(Segment::Exact(pattern.to_owned()));
        }
        body.push_str(&regex::escape(&pattern[end..]));
        dialect::whole(&body, pattern).map(Segment::Glob)
    }

    fn matches(&self, segment: &str) -> Result<bool, Dialect> {
        Ok(match self {
            Segment::Exact(text) => text == segment,
            Segment::Glob(re) => re.is_match(segment),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        matches(p, s).unwrap()
    }

    #[test]
    fn semantics_table_5_2() {
        // The AntPathMatcher column of the table in semantics §5.2.
        assert!(m("/http/**", "/http"));
        assert!(!m("/http/test", "/http/test/"));
        assert!(m("/http/*", "/http/"));
        assert!(m("/http/**/end", "/http/a/end"));
        assert!(!m("/http/test", "/http/te%73t"));
        assert!(!m("/http/test", "/http/test;v=1"));
        assert!(m("/http/test", "//http/test"));
        assert!(!m("/HTTP/**", "/http/a"));
    }

    #[test]
    fn leading_slash_must_agree() {
        assert!(!m("a/b", "/a/b"));
        assert!(!m("/a/b", "a/b"));
        assert!(m("a/b", "a/b"));
    }

    #[test]
    fn double_star_anywhere() {
        assert!(m("/a/**/b", "/a/b"));
        assert!(m("/a/**/b", "/a/x/y/b"));
        assert!(!m("/a/**/b", "/a/x/y/c"));
        assert!(m("/api/**", "/api"));
        assert!(m("/api/**", "/api/"));
        assert!(m("/api/**", "/api/x/y"));
        assert!(m("/**", "/"));
        assert!(m("/**/x/**/y", "/a/x/b/c/y"));
        assert!(!m("/**/x/**/y", "/a/y/b/c/x"));
        assert!(m("/**/**/a", "/a"));
        // The trailing slash also counts when the pattern's end is matched backwards
        // (spring-framework #27506, #30506).
        assert!(!m("/a/**/b", "/a/x/b/"));
        assert!(!m("/**/foo", "/en/foo/"));
        assert!(m("/**/foo/", "/en/foo/"));
        assert!(!m("/**/te%73t/", "/te%73t"));
        assert!(!m("**/test/*", "bla/test/"));
        assert!(m("**/test/", "bla/test/"));
        assert!(m("bla/test/*", "bla/test/"));
    }

    #[test]
    fn segment_globs() {
        assert!(m("/t?st", "/test"));
        assert!(!m("/t?st", "/tst"));
        assert!(m("/a*", "/abc"));
        assert!(m("/a*", "/a"));
        assert!(!m("/a*", "/ba"));
        assert!(m("/{v}", "/anything"));
        assert!(m("/{v:[a-z]+}", "/abc"));
        assert!(!m("/{v:[a-z]+}", "/ab1"));
        assert!(m(r"/{v:\d+}", "/12"));
        assert!(!m(r"/{v:\d+}", "/\u{663}"));
        assert!(m("/a/*", "/a/"));
        assert!(!m("/a/*", "/a"));
        assert!(!m("/*", "/a/b"));
        assert!(m("/a;v=1", "/a;v=1"));
        assert!(m("/a.b", "/a.b"));
        assert!(!m("/a.b", "/axb"));
    }
}
