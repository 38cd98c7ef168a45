//! Spring 6.1's `PathPattern` (`PathPatternParser.defaultInstance`: case-sensitive, no optional
//! trailing separator): the gateway's `pathPattern` judge on `uri`, and the admin's check that such a
//! condition value parses.
//!
//! The pattern is parsed the way `InternalPathPatternParser` does (one pass over the chars;
//! a `PatternParseException` is an `IllegalArgumentException`, which ShenYu answers with HTTP
//! 400): separators, `/**` and `/{*var}` (only at the end), and per segment a literal, a
//! `?`-wildcarded text, a lone `*`, a whole-segment `{var}` / `{var:regex}`, or a regex for
//! anything mixed. Variable names must look like Java identifiers (`-` allowed after the first
//! char) and may be captured once per pattern.
//!
//! The path is walked like `PathContainer.parsePath` splits it: every `/` is a separator,
//! the text between two is a segment (empty ones are not elements), and a segment is matched
//! by its value: the part before `;` (matrix parameters), percent-decoded. Each element
//! follows its Spring class's `matches`, including where an empty segment value does not
//! match (`*` and `{var}` within a path, `{var}` anywhere, a regex segment with variables at
//! the end). Matching walks the path without collecting it and decodes only the segments it
//! compares.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// A parsed path pattern.
#[derive(Debug, Clone)]
pub struct PathPattern {
    elements: Vec<Element>,
}

#[derive(Debug, Clone)]
enum Element {
    /// `SeparatorPathElement`.
    Separator,
    /// `/**` at the end (`WildcardTheRestPathElement`) or `/{*var}` (`CaptureTheRestPathElement`,
    /// which replaces the separator before it): nothing more, or a separator and anything.
    Rest,
    /// `WildcardPathElement`: a segment that is exactly `*`.
    Wildcard,
    /// `LiteralPathElement`.
    Literal(String),
    /// `SingleCharWildcardedPathElement`: text with `?`, compared in UTF-16 units as Java does.
    SingleChar(Vec<u16>),
    /// `CaptureVariablePathElement`: a segment that is exactly `{var}` or `{var:regex}`.
    Capture(Option<Constraint>),
    /// `RegexPathElement`: any other segment with `*` or captures.
    Regex {
        /// The whole segment, anchored.
        re: Regex,
        /// Whether it captures variables (then an empty value does not match at the end).
        captures: bool,
    },
}

/// A `{var:regex}` constraint.
#[derive(Debug, Clone)]
enum Constraint {
    /// The anchored regex.
    Regex(Regex),
    /// The constraint has capturing groups: Spring throws `IllegalArgumentException` when it is
    /// matched (HTTP 400).
    HasGroups(String),
}

/// `RegexPathElement.GLOB_PATTERN`.
static GLOB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\?|\*|\{((?:\{[^/]+?\}|[^/{}]|\\[{}])+?)\}").expect("the glob pattern compiles")
});

/// What the parser has seen of the current segment (`InternalPathPatternParser`'s fields).
#[derive(Debug, Default)]
struct SegmentState {
    start: Option<usize>,
    single_chars: usize,
    wildcard: bool,
    capture_the_rest: bool,
    in_capture: bool,
    captures: usize,
    capture_start: Option<usize>,
}

/// The pattern being parsed.
struct Parser<'a> {
    pattern: &'a str,
    chars: Vec<char>,
    elements: Vec<Element>,
    names: Vec<String>,
}

impl PathPattern {
    /// Parses a pattern like `PathPatternParser.parse`.
    pub fn parse(pattern: &str) -> Result<PathPattern, String> {
        let mut p = Parser {
            pattern,
            chars: pattern.chars().collect(),
            elements: Vec::new(),
            names: Vec::new(),
        };
        p.run()?;
        Ok(PathPattern {
            elements: p.elements,
        })
    }

    /// `PathPattern.matches(PathContainer.parsePath(path))`; `Err` is Spring's
    /// `IllegalArgumentException` for a constraint regex with capturing groups.
    pub fn matches(&self, path: &str) -> Result<bool, String> {
        let Some(first) = self.elements.first() else {
            return Ok(path.is_empty());
        };
        if path.is_empty() {
            return Ok(matches!(first, Element::Rest));
        }
        let mut at = Cursor { path, pos: 0 };
        let last = self.elements.len() - 1;
        for (k, element) in self.elements.iter().enumerate() {
            let last = k == last;
            let item = at.peek();
            match element {
                Element::Separator => {
                    if item != Item::Separator {
                        return Ok(false);
                    }
                }
                Element::Rest => return Ok(matches!(item, Item::End | Item::Separator)),
                Element::Wildcard => match item {
                    // Past the end: only as the last element (`/a/*` matches `/a/`).
                    Item::End => return Ok(last),
                    Item::Separator => return Ok(false),
                    // Within a path `*` needs at least one char.
                    Item::Segment(raw) => {
                        if !last && value(raw).is_empty() {
                            return Ok(false);
                        }
                    }
                },
                Element::Literal(text) => match item {
                    Item::Segment(raw) if decode(value(raw)) == text.as_str() => {}
                    _ => return Ok(false),
                },
                Element::SingleChar(units) => match item {
                    Item::Segment(raw) if single_chars_match(units, &decode(value(raw))) => {}
                    _ => return Ok(false),
                },
                Element::Capture(constraint) => {
                    let Item::Segment(raw) = item else {
                        return Ok(false);
                    };
                    let v = decode(value(raw));
                    if v.is_empty() {
                        return Ok(false);
                    }
                    match constraint {
                        Some(Constraint::HasGroups(message)) => return Err(message.clone()),
                        Some(Constraint::Regex(re)) if !re.is_match(&v) => return Ok(false),
                        _ => {}
                    }
                }
                Element::Regex { re, captures } => {
                    // Spring matches a separator (or nothing, past the end) as an empty value.
                    let v = match item {
                        Item::Segment(raw) => decode(value(raw)),
                        _ => Cow::Borrowed(""),
                    };
                    if !re.is_match(&v) {
                        return Ok(false);
                    }
                    if last {
                        at.advance(item);
                        return Ok(at.peek() == Item::End && (!captures || !v.is_empty()));
                    }
                }
            }
            at.advance(item);
            if last {
                return Ok(at.peek() == Item::End);
            }
        }
        unreachable!("the last element returns")
    }
}

impl Parser<'_> {
    fn error(&self, message: impl std::fmt::Display) -> String {
        format!("invalid path pattern `{}`: {message}", self.pattern)
    }

    /// `InternalPathPatternParser.parse`.
    fn run(&mut self) -> Result<(), String> {
        let n = self.chars.len();
        let mut seg = SegmentState::default();
        let mut pos = 0;
        while pos < n {
            let ch = self.chars[pos];
            if ch == '/' {
                if let Some(start) = seg.start {
                    let element = self.create(&seg, start, pos)?;
                    self.push(element);
                    seg = SegmentState::default();
                }
                if self.peek_double_wildcard(pos)? {
                    // `/**` stands for its separator: nothing is replaced.
                    self.elements.push(Element::Rest);
                    pos += 2;
                } else {
                    self.push(Element::Separator);
                }
                pos += 1;
                continue;
            }
            if seg.start.is_none() {
                seg.start = Some(pos);
            }
            match ch {
                '?' => seg.single_chars += 1,
                '{' => {
                    if seg.in_capture {
                        return Err(self.error("Not allowed to nest variable captures"));
                    }
                    seg.in_capture = true;
                    seg.capture_start = Some(pos);
                }
                '}' => {
                    if !seg.in_capture {
                        return Err(self.error(
                            "Missing preceding open capture character before variable name '{'",
                        ));
                    }
                    seg.in_capture = false;
                    if seg.capture_the_rest && pos + 1 < n {
                        return Err(self.error(
                            "No more pattern data allowed after {*...} or ** pattern element",
                        ));
                    }
                    seg.captures += 1;
                }
                ':' if seg.in_capture && !seg.capture_the_rest => {
                    pos = self.skip_capture_regex(pos)?;
                    seg.in_capture = false;
                    seg.captures += 1;
                }
                '*' => {
                    if seg.in_capture && seg.capture_start.is_some_and(|s| s + 1 == pos) {
                        seg.capture_the_rest = true;
                    }
                    seg.wildcard = true;
                }
                _ => {}
            }
            if seg.in_capture {
                // Variable names are Java identifiers (`-` is allowed after the first char).
                let name_start = seg.capture_start.expect("in a capture")
                    + 1
                    + usize::from(seg.capture_the_rest);
                if pos == name_start && !java_identifier_start(ch) {
                    return Err(self.error(format_args!(
                        "Char '{ch}' not allowed at start of captured variable name"
                    )));
                }
                if pos > name_start && !java_identifier_part(ch) && ch != '-' {
                    return Err(self.error(format_args!(
                        "Char '{ch}' is not allowed in a captured variable name"
                    )));
                }
            }
            pos += 1;
        }
        if let Some(start) = seg.start {
            let element = self.create(&seg, start, n)?;
            self.push(element);
        }
        Ok(())
    }

    /// After a `/` at `pos`: whether `**` follows and ends the pattern; `/**/` is an error.
    fn peek_double_wildcard(&self, pos: usize) -> Result<bool, String> {
        let n = self.chars.len();
        if pos + 2 >= n || self.chars[pos + 1] != '*' || self.chars[pos + 2] != '*' {
            return Ok(false);
        }
        if pos + 3 < n && self.chars[pos + 3] == '/' {
            return Err(
                self.error("No more pattern data allowed after {*...} or ** pattern element")
            );
        }
        Ok(pos + 3 == n)
    }

    /// Skips a `{var:regex}` constraint from the `:` at `pos`; returns the position of its `}`.
    /// Nested `{…}` pairs and `\`-escaped chars (a `/` too) belong to the regex.
    fn skip_capture_regex(&self, pos: usize) -> Result<usize, String> {
        let start = pos + 1;
        let mut i = start;
        let mut depth = 0usize;
        let mut escaped = false;
        while i < self.chars.len() {
            let c = self.chars[i];
            if c == '\\' && !escaped {
                escaped = true;
                i += 1;
                continue;
            }
            if c == '{' && !escaped {
                depth += 1;
            } else if c == '}' && !escaped {
                if depth == 0 {
                    if i == start {
                        return Err(self.error("Missing regex constraint on capture"));
                    }
                    return Ok(i);
                }
                depth -= 1;
            }
            if c == '/' && !escaped {
                return Err(self.error("Expected close capture character after variable name }"));
            }
            escaped = false;
            i += 1;
        }
        Err(self.error("Expected close capture character after variable name }"))
    }

    /// `pushPathElement` for a segment's element: `{*var}` takes the place of the separator
    /// before it.
    fn push(&mut self, element: Element) {
        if matches!(element, Element::Rest)
            && matches!(self.elements.last(), Some(Element::Separator))
        {
            self.elements.pop();
        }
        self.elements.push(element);
    }

    /// `recordCapturedVariable`.
    fn record(&mut self, name: &str) -> Result<(), String> {
        if self.names.iter().any(|n| n == name) {
            return Err(self.error(format_args!(
                "Not allowed to capture '{name}' twice in the same pattern"
            )));
        }
        self.names.push(name.to_owned());
        Ok(())
    }

    /// `createPathElement` for the segment `chars[start..end]`.
    fn create(&mut self, seg: &SegmentState, start: usize, end: usize) -> Result<Element, String> {
        if seg.in_capture {
            return Err(self.error("Expected close capture character after variable name }"));
        }
        let text: String = self.chars[start..end].iter().collect();
        if seg.captures > 0 {
            if seg.captures == 1 && seg.capture_start == Some(start) && text.ends_with('}') {
                if seg.capture_the_rest {
                    return Ok(Element::Rest);
                }
                let inner = &text[1..text.len() - 1];
                let (name, constraint) = match inner.split_once(':') {
                    Some((name, c)) => (name, Some(c)),
                    None => (inner, None),
                };
                let constraint = match constraint {
                    None => None,
                    Some(c) => {
                        let (re, groups) = java_regex(c).map_err(|e| self.error(e))?;
                        Some(if groups == 0 {
                            Constraint::Regex(re)
                        } else {
                            Constraint::HasGroups(format!(
                                "No capture groups allowed in the constraint regex: {c}"
                            ))
                        })
                    }
                };
                self.record(name)?;
                return Ok(Element::Capture(constraint));
            }
            if seg.capture_the_rest {
                return Err(self.error("'{*...}' can only be preceded by a path separator"));
            }
            return self.regex_segment(&text);
        }
        if seg.wildcard {
            if end - start == 1 {
                return Ok(Element::Wildcard);
            }
            return self.regex_segment(&text);
        }
        if seg.single_chars > 0 {
            return Ok(Element::SingleChar(text.encode_utf16().collect()));
        }
        Ok(Element::Literal(text))
    }

    /// `RegexPathElement`: quoted text, `?` → `.`, `*` → `.*`, `{v}` → `(.*)`, `{v:re}` →
    /// `(re)`, compiled with `DOTALL`.
    fn regex_segment(&mut self, text: &str) -> Result<Element, String> {
        let mut body = String::new();
        let mut names: Vec<&str> = Vec::new();
        let mut end = 0;
        for caps in GLOB.captures_iter(text) {
            let m = caps.get(0).expect("group 0 is the match");
            body.push_str(&regex::escape(&text[end..m.start()]));
            match m.as_str() {
                "?" => body.push('.'),
                "*" => body.push_str(".*"),
                var => {
                    let inner = &var[1..var.len() - 1];
                    let name = match inner.split_once(':') {
                        None => {
                            body.push_str("(.*)");
                            caps.get(1).map_or(inner, |g| g.as_str())
                        }
                        Some((name, constraint)) => {
                            body.push('(');
                            body.push_str(constraint);
                            body.push(')');
                            name
                        }
                    };
                    if names.contains(&name) {
                        return Err(self.error(format_args!(
                            "Not allowed to capture '{name}' twice in the same pattern"
                        )));
                    }
                    names.push(name);
                }
            }
            end = m.end();
        }
        body.push_str(&regex::escape(&text[end..]));
        let (re, _) = java_regex(&body).map_err(|e| self.error(e))?;
        let captures = !names.is_empty();
        let names: Vec<String> = names.into_iter().map(str::to_owned).collect();
        for name in &names {
            self.record(name)?;
        }
        Ok(Element::Regex { re, captures })
    }
}

/// Compiles a `java.util.regex` pattern with `DOTALL` for whole-value matching (`matches()`),
/// approximated by the `regex` crate; also returns its number of capturing groups. The pattern
/// must compile on its own, so that anchoring cannot change how it parses.
fn java_regex(pattern: &str) -> Result<(Regex, usize), String> {
    let alone = Regex::new(&format!("(?s){pattern}")).map_err(|e| e.to_string())?;
    let anchored = Regex::new(&format!("(?s)^(?:{pattern})$")).map_err(|e| e.to_string())?;
    Ok((anchored, alone.captures_len() - 1))
}

/// `Character.isJavaIdentifierStart` on a UTF-16 char: exact for ASCII; beyond, letters,
/// letter numbers, currency symbols and connector punctuation, approximated with Rust's
/// Unicode properties. A char outside the BMP is two surrogates in Java: never an identifier.
fn java_identifier_start(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic() || c == '_' || c == '$';
    }
    c <= '\u{FFFF}'
        && (c.is_alphabetic()
            || matches!(c, '\u{A2}'..='\u{A5}' | '\u{20A0}'..='\u{20C0}' | '\u{FE69}' | '\u{FF04}'
                | '\u{FFE0}' | '\u{FFE1}' | '\u{FFE5}' | '\u{FFE6}' | '\u{203F}' | '\u{2040}'
                | '\u{2054}' | '\u{FE33}' | '\u{FE34}' | '\u{FE4D}'..='\u{FE4F}' | '\u{FF3F}'))
}

/// `Character.isJavaIdentifierPart` on a UTF-16 char: identifier starts, digits, and the
/// identifier-ignorable controls (exact for ASCII, approximated beyond).
fn java_identifier_part(c: char) -> bool {
    java_identifier_start(c)
        || c.is_ascii_digit()
        || matches!(c, '\u{0}'..='\u{8}' | '\u{E}'..='\u{1B}' | '\u{7F}'..='\u{9F}')
        || (!c.is_ascii() && c <= '\u{FFFF}' && c.is_numeric())
}

/// `SingleCharWildcardedPathElement`: same length in UTF-16 units, `?` matches any unit.
fn single_chars_match(pattern: &[u16], value: &str) -> bool {
    let mut units = value.encode_utf16();
    pattern
        .iter()
        .all(|&p| units.next().is_some_and(|u| p == u16::from(b'?') || p == u))
        && units.next().is_none()
}

/// One element of `PathContainer.parsePath(path)`, read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item<'p> {
    End,
    Separator,
    /// The raw segment, matrix parameters included (never empty).
    Segment(&'p str),
}

/// A position in the raw path.
struct Cursor<'p> {
    path: &'p str,
    pos: usize,
}

impl<'p> Cursor<'p> {
    fn peek(&self) -> Item<'p> {
        let rest = &self.path[self.pos..];
        match rest.as_bytes().first() {
            None => Item::End,
            Some(b'/') => Item::Separator,
            Some(_) => Item::Segment(rest.find('/').map_or(rest, |end| &rest[..end])),
        }
    }

    /// Moves past `item`, the element at the cursor (stays at the end).
    fn advance(&mut self, item: Item<'p>) {
        self.pos += match item {
            Item::End => 0,
            Item::Separator => 1,
            Item::Segment(s) => s.len(),
        };
    }
}

/// A segment's value before decoding: the part before its `;` matrix parameters.
fn value(raw: &str) -> &str {
    raw.find(';').map_or(raw, |end| &raw[..end])
}

/// Spring `StringUtils.uriDecode`, lenient: a bad escape is kept as written.
fn decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
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
    Cow::Owned(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn m(pattern: &str, path: &str) -> bool {
        PathPattern::parse(pattern)
            .unwrap()
            .matches(path)
            .unwrap_or_else(|e| panic!("{pattern} vs {path}: {e}"))
    }

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
        assert_eq!(m(pattern, path), want, "{pattern} vs {path}");
    }

    /// A segment that is only a matrix part (`;p`) has an empty value: `*` (within a path) and
    /// `{var}` (anywhere) need at least one char; `*` at the end, `**` and literals-free
    /// regex segments without variables do not (Spring's `WildcardPathElement`,
    /// `CaptureVariablePathElement`, `RegexPathElement`).
    #[rstest]
    #[case("/*/**", "/;p/http//x.y", false)]
    #[case("/*/a", "/;x/a", false)]
    #[case("/*/a", "/x;y/a", true)]
    #[case("/{v}/a", "/;x/a", false)]
    #[case("/{v}", "/;p", false)]
    #[case("/{v:.*}", "/;p", false)]
    #[case("/*", "/;p", true)]
    #[case("/a/*", "/a/;p", true)]
    #[case("/**", "/;p", true)]
    #[case("/{*rest}", "/;p", true)]
    #[case("/x*/a", "/;x/a", false)]
    #[case("/*x/a", "/x;q/a", true)]
    // A regex segment with variables needs a non-empty value at the end only.
    #[case("/x{v}", "/x", true)]
    #[case("/{v}t", "/t", true)]
    #[case("/{a}{b}", "/;p", false)]
    #[case("/{a}{b}/x", "/;p/x", true)]
    // `***` is a regex segment without variables: it matches an empty value, even past the
    // end of the path or on a separator (Spring reads both as "").
    #[case("/***", "/", true)]
    #[case("/***", "/;p", true)]
    #[case("/a/***/b", "/a//b", false)]
    #[case("/a/***/b", "/a///b", true)]
    // `?` matches one char (a UTF-16 unit), the segment must exist.
    #[case("/t?st", "/test", true)]
    #[case("/t?st", "/tst", false)]
    #[case("/t?st", "/t%0Ast", true)]
    #[case("/?", "/", false)]
    #[case("/?", "/;p", false)]
    #[case("/a?", "/a\u{1F600}", false)]
    #[case("/a??", "/a\u{1F600}", true)]
    // A trailing separator is significant at the end of every element.
    #[case("/a", "/a/", false)]
    #[case("/{v}", "/a/", false)]
    #[case("/a*", "/ab/", false)]
    #[case("/t?st", "/test/", false)]
    #[case("/a/", "/a/", true)]
    #[case("/a/", "/a", false)]
    #[case("/a/**", "/a/", true)]
    #[case("/a/{*rest}", "/a//", true)]
    #[case("//a", "//a", true)]
    #[case("/{v}t/{w}", "/at/b", true)]
    // An escaped `/` in a constraint belongs to the regex; `%2F` decodes into the value.
    #[case("/{v:a\\/b}", "/a%2Fb", true)]
    #[case("/{}", "/x", true)]
    #[case("/{:x}", "/x", true)]
    #[case("/{a-b}", "/x", true)]
    // `{*var}` is not recorded as a capture: its name may repeat another.
    #[case("/{v}/a/{*v}", "/x/a/y", true)]
    fn empty_segments_and_ends(#[case] pattern: &str, #[case] path: &str, #[case] want: bool) {
        assert_eq!(m(pattern, path), want, "{pattern} vs {path}");
    }

    #[rstest]
    #[case("/http/**/end")]
    #[case("/a/{*rest}/b")]
    #[case("/a/{id")]
    #[case("/a/id}")]
    // Variable names are Java identifiers, captured once per pattern.
    #[case("/{1x}")]
    #[case("/a/{1x}/b")]
    #[case("/x{1x}")]
    #[case("/{a b}")]
    #[case("/{a.b}")]
    #[case("/{-a}")]
    #[case("/{*1x}")]
    #[case("/{v}t/{v}")]
    #[case("/{v}/{v}")]
    #[case("/{v}_{v}")]
    #[case("/{v}/{v:[a-z]+}")]
    #[case("/{\u{1F600}}")]
    // Other parse errors.
    #[case("/{a{b}}")]
    #[case("/{v:}")]
    #[case("/a{*rest}")]
    #[case("/{v:(}")]
    #[case("/{v:a/b}")]
    fn parse_errors(#[case] pattern: &str) {
        assert!(PathPattern::parse(pattern).is_err(), "{pattern}");
    }

    #[test]
    fn constraint_groups_fail_when_matched() {
        let p = PathPattern::parse("/{v:(a|b)}").unwrap();
        assert!(p.matches("/a").is_err());
        // Not reached: an empty value or another segment fails first.
        assert!(!p.matches("/").unwrap());
        assert!(!p.matches("/;p").unwrap());
        assert!(m("/{v:(?:a|b)}", "/a"));
    }

    proptest! {
        #[test]
        fn double_star_matches_every_rooted_path(path in "/[a-z0-9/;%.=_-]{0,40}") {
            prop_assert!(PathPattern::parse("/**").unwrap().matches(&path).unwrap());
        }

        #[test]
        fn literal_pattern_matches_itself(segs in prop::collection::vec("[a-z0-9_.-]{1,8}", 1..5)) {
            let path = format!("/{}", segs.join("/"));
            prop_assert!(PathPattern::parse(&path).unwrap().matches(&path).unwrap());
        }

        /// `*` in the middle matches exactly the segments with a non-empty value.
        #[test]
        fn inner_wildcard_needs_a_value(seg in "[a-z]{0,3}(;[a-z]{0,2})?", rest in "[a-z]{1,3}") {
            prop_assume!(!seg.is_empty());
            let path = format!("/{seg}/{rest}");
            let want = !seg.starts_with(';');
            prop_assert_eq!(m("/*/**", &path), want, "{}", path);
            prop_assert_eq!(m(&format!("/*/{rest}"), &path), want, "{}", path);
        }
    }
}
