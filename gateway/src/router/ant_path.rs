//! Spring's `AntPathMatcher` (defaults: separator `/`, case-sensitive, tokens not trimmed), used
//! by `match` and `exclude` on `uri`. Works on the raw path; empty segments are dropped.
//!
//! The algorithm is Spring's `doMatch`, ported step by step; each pattern segment is compiled
//! once (a literal, or a regex built like `AntPathStringMatcher`).

use std::sync::LazyLock;

use regex::Regex;

/// A compiled Ant-style pattern.
#[derive(Debug, Clone)]
pub(crate) struct AntPattern {
    leading_slash: bool,
    trailing_slash: bool,
    dirs: Vec<Seg>,
}

#[derive(Debug, Clone)]
enum Seg {
    DoubleStar,
    Literal(String),
    Glob(Regex),
}

static GLOB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\?|\*|\{((?:\{[^/]+?\}|[^/{}]|\\[{}])+?)\}").expect("static regex compiles")
});

impl Seg {
    fn compile(segment: &str) -> Result<Seg, String> {
        if segment == "**" {
            return Ok(Seg::DoubleStar);
        }
        let mut re = String::from("^(?:");
        let mut end = 0;
        let mut globbed = false;
        for m in GLOB.captures_iter(segment) {
            let whole = m.get(0).expect("group 0 always exists");
            globbed = true;
            re.push_str(&regex::escape(&segment[end..whole.start()]));
            match whole.as_str() {
                "?" => re.push('.'),
                "*" => re.push_str(".*"),
                _ => {
                    let var = &m[1];
                    match var.split_once(':') {
                        Some((_, custom)) => {
                            re.push('(');
                            re.push_str(custom);
                            re.push(')');
                        }
                        None => re.push_str("((?s:.*))"),
                    }
                }
            }
            end = whole.end();
        }
        if !globbed {
            return Ok(Seg::Literal(segment.to_owned()));
        }
        re.push_str(&regex::escape(&segment[end..]));
        re.push_str(")$");
        Regex::new(&re)
            .map(Seg::Glob)
            .map_err(|e| format!("invalid pattern segment `{segment}`: {e}"))
    }

    fn matches(&self, s: &str) -> bool {
        match self {
            Seg::DoubleStar => false,
            Seg::Literal(l) => l == s,
            Seg::Glob(re) => re.is_match(s),
        }
    }

    fn is_double_star(&self) -> bool {
        matches!(self, Seg::DoubleStar)
    }
}

impl AntPattern {
    /// Compiles a pattern; fails only on an invalid `{name:regex}`.
    pub(crate) fn compile(pattern: &str) -> Result<AntPattern, String> {
        let dirs = pattern
            .split('/')
            .filter(|s| !s.is_empty())
            .map(Seg::compile)
            .collect::<Result<_, _>>()?;
        Ok(AntPattern {
            leading_slash: pattern.starts_with('/'),
            trailing_slash: pattern.ends_with('/'),
            dirs,
        })
    }

    /// Whether the whole path matches (Spring `AntPathMatcher.match`).
    pub(crate) fn matches(&self, path: &str) -> bool {
        if path.starts_with('/') != self.leading_slash {
            return false;
        }
        let patt = &self.dirs;
        let path_dirs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let path_trailing = path.ends_with('/');
        let only_double_stars = |from: usize, to: isize| {
            (from as isize..=to).all(|i| patt[i as usize].is_double_star())
        };

        let (mut ps, mut pe) = (0isize, patt.len() as isize - 1);
        let (mut ss, mut se) = (0isize, path_dirs.len() as isize - 1);

        // Up to the first `**`.
        while ps <= pe && ss <= se {
            let p = &patt[ps as usize];
            if p.is_double_star() {
                break;
            }
            if !p.matches(path_dirs[ss as usize]) {
                return false;
            }
            ps += 1;
            ss += 1;
        }
        if ss > se {
            if ps > pe {
                return self.trailing_slash == path_trailing;
            }
            if ps == pe && is_star(&patt[ps as usize]) && path_trailing {
                return true;
            }
            return only_double_stars(ps as usize, pe);
        } else if ps > pe {
            return false;
        }

        // Up to the last `**`.
        while ps <= pe && ss <= se {
            let p = &patt[pe as usize];
            if p.is_double_star() {
                break;
            }
            if !p.matches(path_dirs[se as usize]) {
                return false;
            }
            if pe == patt.len() as isize - 1 && self.trailing_slash != path_trailing {
                return false;
            }
            pe -= 1;
            se -= 1;
        }
        if ss > se {
            return only_double_stars(ps as usize, pe);
        }

        while ps != pe && ss <= se {
            let mut tmp = -1isize;
            for i in ps + 1..=pe {
                if patt[i as usize].is_double_star() {
                    tmp = i;
                    break;
                }
            }
            if tmp == ps + 1 {
                ps += 1;
                continue;
            }
            let pat_len = tmp - ps - 1;
            let str_len = se - ss + 1;
            let mut found = -1isize;
            'outer: for i in 0..=(str_len - pat_len) {
                for j in 0..pat_len {
                    let sub_pat = &patt[(ps + j + 1) as usize];
                    let sub_str = path_dirs[(ss + i + j) as usize];
                    if !sub_pat.matches(sub_str) {
                        continue 'outer;
                    }
                }
                found = ss + i;
                break;
            }
            if found == -1 {
                return false;
            }
            ps = tmp;
            ss = found + pat_len;
        }
        only_double_stars(ps as usize, pe)
    }
}

/// Whether a segment is exactly `*` (Spring compares the pattern text).
fn is_star(seg: &Seg) -> bool {
    matches!(seg, Seg::Glob(re) if re.as_str() == "^(?:.*)$")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("/http/**", "/http", true)]
    #[case("/http/test", "/http/test/", false)]
    #[case("/http/*", "/http/", true)]
    #[case("/http/**/end", "/http/a/end", true)]
    #[case("/http/test", "/http/te%73t", false)]
    #[case("/http/test", "/http/test;v=1", false)]
    #[case("/http/test", "//http/test", true)]
    #[case("/HTTP/**", "/http/a", false)]
    #[case("/a/**", "/a/b/c", true)]
    #[case("/a/*", "/a/b/c", false)]
    #[case("/api/**", "/api", true)]
    #[case("/api/**", "/api/", true)]
    #[case("/api/**", "/api/x/y", true)]
    #[case("/a/**/b", "/a/b", true)]
    #[case("/a/**/b", "/a/x/y/b", true)]
    #[case("/a/**/b", "/a/x/y/c", false)]
    #[case("/a/b", "/a/b/", false)]
    #[case("a/b", "/a/b", false)]
    #[case("/a/?c", "/a/bc", true)]
    #[case("/a/?c", "/a/bbc", false)]
    #[case("/a/{id}", "/a/42", true)]
    #[case("/a/{id:\\d+}", "/a/42", true)]
    #[case("/a/{id:\\d+}", "/a/x", false)]
    #[case("/a/*.html", "/a/index.html", true)]
    #[case("/a/*.html", "/a/index.htm", false)]
    #[case("/**/x/**/y", "/p/x/q/r/y", true)]
    #[case("/**", "/", true)]
    fn ant_path_table(#[case] pattern: &str, #[case] path: &str, #[case] want: bool) {
        assert_eq!(
            AntPattern::compile(pattern).unwrap().matches(path),
            want,
            "{pattern} vs {path}"
        );
    }

    proptest::proptest! {
        #[test]
        fn double_star_matches_every_rooted_path(path in "/[a-z0-9/;%.=_-]{0,40}") {
            proptest::prop_assert!(AntPattern::compile("/**").unwrap().matches(&path));
        }

        #[test]
        fn empty_segments_do_not_matter(segs in proptest::collection::vec("[a-z]{1,4}", 1..5)) {
            let pattern = AntPattern::compile(&format!("/{}", segs.join("/"))).unwrap();
            let doubled = format!("//{}", segs.join("//"));
            proptest::prop_assert!(pattern.matches(&doubled));
        }
    }

    #[test]
    fn bad_custom_regex_fails_to_compile() {
        assert!(AntPattern::compile("/a/{id:(}").is_err());
    }
}
