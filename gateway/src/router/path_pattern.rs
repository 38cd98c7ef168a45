//! Spring 6.1's `PathPattern` (`PathPatternParser.defaultInstance`: case-sensitive, no optional
//! trailing separator), used by `pathPattern` on `uri`.
//!
//! The path is split like `PathContainer.parsePath`: separators are kept, empty segments are
//! not, each segment is percent-decoded and loses its `;matrix` part. The pattern is parsed
//! into separators and segment elements; `**` and `{*var}` may only come last (anywhere else
//! is a parse error, which ShenYu answers with HTTP 400).

use regex::Regex;

/// A parsed path pattern.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    elements: Vec<Element>,
}

#[derive(Debug, Clone)]
enum Element {
    Separator,
    /// `/**` or `/{*var}` at the end: the rest of the path, including nothing.
    Rest,
    /// A whole `*` segment.
    Wildcard,
    Literal(String),
    /// `?` wildcards, `{var}`, `{var:regex}` or partial `*`.
    Regex(Regex),
}

/// A parsed request path.
#[derive(Debug)]
enum PathElement {
    Separator,
    Segment(String),
}

impl PathPattern {
    /// Parses a pattern like `PathPatternParser.parse`.
    pub(crate) fn parse(pattern: &str) -> Result<PathPattern, String> {
        let mut elements = Vec::new();
        let parts: Vec<&str> = pattern.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                elements.push(Element::Separator);
            }
            if part.is_empty() {
                continue;
            }
            let last = i == parts.len() - 1;
            let rest = *part == "**" || (part.starts_with("{*") && part.ends_with('}'));
            if rest {
                if !last {
                    return Err(format!(
                        "No more pattern data allowed after {{*...}} or ** pattern element: `{pattern}`"
                    ));
                }
                if matches!(elements.last(), Some(Element::Separator)) {
                    elements.pop();
                }
                elements.push(Element::Rest);
            } else if *part == "*" {
                elements.push(Element::Wildcard);
            } else {
                elements.push(segment(part, pattern)?);
            }
        }
        Ok(PathPattern { elements })
    }

    /// Whether the whole path matches.
    pub(crate) fn matches(&self, path: &str) -> bool {
        let path = parse_path(path);
        let mut i = 0;
        let n = self.elements.len();
        for (k, element) in self.elements.iter().enumerate() {
            let last = k + 1 == n;
            match element {
                Element::Separator => match path.get(i) {
                    Some(PathElement::Separator) => i += 1,
                    _ => return false,
                },
                Element::Rest => {
                    return matches!(path.get(i), None | Some(PathElement::Separator));
                }
                Element::Wildcard => match path.get(i) {
                    Some(PathElement::Segment(_)) => i += 1,
                    Some(PathElement::Separator) => return false,
                    None if last => {}
                    None => return false,
                },
                Element::Literal(l) => match path.get(i) {
                    Some(PathElement::Segment(s)) if s == l => i += 1,
                    _ => return false,
                },
                Element::Regex(re) => match path.get(i) {
                    Some(PathElement::Segment(s)) if re.is_match(s) => i += 1,
                    _ => return false,
                },
            }
        }
        i == path.len()
    }
}

/// Compiles one pattern segment that is not `*`, `**` or `{*var}`.
fn segment(part: &str, pattern: &str) -> Result<Element, String> {
    if !part.contains(['?', '*', '{', '}']) {
        return Ok(Element::Literal(part.to_owned()));
    }
    let mut re = String::from("^(?:");
    let mut chars = part.char_indices().peekable();
    let mut literal_start = 0;
    let literal =
        |re: &mut String, from: usize, to: usize| re.push_str(&regex::escape(&part[from..to]));
    while let Some((i, c)) = chars.next() {
        match c {
            '?' | '*' => {
                literal(&mut re, literal_start, i);
                re.push_str(if c == '?' { "." } else { ".*" });
                literal_start = i + 1;
            }
            '{' => {
                literal(&mut re, literal_start, i);
                let mut depth = 1;
                let mut end = None;
                for (j, d) in chars.by_ref() {
                    match d {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = Some(j);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let end = end.ok_or_else(|| {
                    format!("Expected close capture character after variable name }}: `{pattern}`")
                })?;
                let var = &part[i + 1..end];
                if var.starts_with('*') {
                    return Err(format!(
                        "Char '*' not allowed at start of captured variable name: `{pattern}`"
                    ));
                }
                match var.split_once(':') {
                    Some((name, custom)) if !name.is_empty() => {
                        re.push('(');
                        re.push_str(custom);
                        re.push(')');
                    }
                    None if !var.is_empty() => re.push_str("((?s:.+))"),
                    _ => return Err(format!("Missing variable name in `{pattern}`")),
                }
                literal_start = end + 1;
            }
            '}' => {
                return Err(format!(
                    "Missing preceding open capture character before variable name{{: `{pattern}`"
                ));
            }
            _ => {}
        }
    }
    literal(&mut re, literal_start, part.len());
    re.push_str(")$");
    Regex::new(&re)
        .map(Element::Regex)
        .map_err(|e| format!("invalid pattern `{pattern}`: {e}"))
}

fn parse_path(path: &str) -> Vec<PathElement> {
    let mut out = Vec::new();
    for (i, part) in path.split('/').enumerate() {
        if i > 0 {
            out.push(PathElement::Separator);
        }
        if !part.is_empty() {
            let value = part.split(';').next().unwrap_or("");
            out.push(PathElement::Segment(percent_decode(value)));
        }
    }
    out
}

/// Spring `StringUtils.uriDecode`, lenient: a bad escape is kept as written.
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case("/http/**", "/http", true)]
    #[case("/http/test", "/http/test/", false)]
    #[case("/http/*", "/http/", true)]
    #[case("/http/test", "/http/te%73t", true)]
    #[case("/http/test", "/http/test;v=1", true)]
    #[case("/http/test", "//http/test", false)]
    #[case("/HTTP/**", "/http/a", false)]
    #[case("/a/{*rest}", "/a/b/c", true)]
    #[case("/http/{*rest}", "/http", true)]
    #[case("/te%20st", "/te%20st", false)]
    #[case("/te st", "/te%20st", true)]
    #[case("/a/*", "/a/b/c", false)]
    #[case("/a/*/c", "/a/b/c", true)]
    #[case("/a/{id}", "/a/42", true)]
    #[case("/a/{id:\\d+}", "/a/x", false)]
    #[case("/a/b?", "/a/bc", true)]
    #[case("/a/*.json", "/a/x.json", true)]
    #[case("a/b", "/a/b", false)]
    #[case("/**", "/", true)]
    #[case("/http/**", "/httpx", false)]
    fn path_pattern_table(#[case] pattern: &str, #[case] path: &str, #[case] want: bool) {
        assert_eq!(
            PathPattern::parse(pattern).unwrap().matches(path),
            want,
            "{pattern} vs {path}"
        );
    }

    #[rstest]
    #[case("/http/**/end")]
    #[case("/a/{*rest}/b")]
    #[case("/a/{id")]
    #[case("/a/id}")]
    fn parse_errors(#[case] pattern: &str) {
        assert!(PathPattern::parse(pattern).is_err(), "{pattern}");
    }

    proptest! {
        #[test]
        fn double_star_matches_every_rooted_path(path in "/[a-z0-9/;%.=_-]{0,40}") {
            prop_assert!(PathPattern::parse("/**").unwrap().matches(&path));
        }

        #[test]
        fn literal_pattern_matches_itself(segs in prop::collection::vec("[a-z0-9_.-]{1,8}", 1..5)) {
            let path = format!("/{}", segs.join("/"));
            prop_assert!(PathPattern::parse(&path).unwrap().matches(&path));
        }
    }
}
