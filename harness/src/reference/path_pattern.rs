//! Spring 6.1 `PathPattern` (`PathPatternParser.defaultInstance`: case-sensitive, no optional
//! trailing slash) matched against `PathContainer.parsePath(path)`: the `pathPattern` operator
//! on `uri` (semantics §5.2).
//!
//! The path is split into separators and segments; empty segments are not elements (so `//a`
//! is two separators then `a`, and differs from `/a`); each segment is percent-decoded and its
//! `;matrix` part removed before matching. The pattern is parsed into elements the way
//! Spring's `InternalPathPatternParser` does (literal, `?`-wildcarded, `*`, `{var}`,
//! `{var:regex}`, mixed regex segments, and `/**` or `/{*var}` only at the end); a pattern it
//! rejects is an [`Error::Parse`] (`PatternParseException`, an `IllegalArgumentException`:
//! HTTP 400).

use regex::Regex;

use super::dialect::{self, Dialect, Flavor};

/// Why matching failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// `PatternParseException` (or another `IllegalArgumentException`): HTTP 400.
    Parse(String),
    /// The path has a bad `%` escape (`IllegalArgumentException`): HTTP 400.
    Decode(String),
    /// A construct this model does not know.
    Unmodelled(String),
}

/// `PathPatternParser.defaultInstance.parse(pattern).matches(PathContainer.parsePath(path))`.
pub(crate) fn matches(pattern: &str, path: &str) -> Result<bool, Error> {
    let elements = parse(pattern)?;
    let container = parse_path(path)?;
    if container.is_empty() {
        // An empty path matches only what can bind to nothing.
        return Ok(elements.is_empty()
            || matches!(
                elements[0],
                Element::WildcardTheRest | Element::CaptureTheRest
            ));
    }
    if elements.is_empty() {
        return Ok(false);
    }
    Matcher {
        pattern: &elements,
        path: &container,
    }
    .at(0, 0)
}

/// One element of a parsed path: a separator or a segment's decoded value (matrix removed).
#[derive(Debug, Clone, PartialEq, Eq)]
enum PathElement {
    Separator,
    Segment(String),
}

/// `PathContainer.parsePath(path)` with `Options.HTTP_PATH`.
fn parse_path(path: &str) -> Result<Vec<PathElement>, Error> {
    let mut out = Vec::new();
    let mut rest = path;
    if let Some(after) = rest.strip_prefix('/') {
        out.push(PathElement::Separator);
        rest = after;
    }
    while !rest.is_empty() {
        let (segment, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        if !segment.is_empty() {
            let value = segment.split_once(';').map_or(segment, |(v, _)| v);
            out.push(PathElement::Segment(uri_decode(value)?));
        }
        match tail {
            Some(t) => {
                out.push(PathElement::Separator);
                rest = t;
            }
            None => break,
        }
    }
    Ok(out)
}

/// Spring `StringUtils.uriDecode(s, UTF-8)`: `%XX` → byte (bad or short escapes are
/// errors), `+` stays, bytes read as UTF-8 with replacement characters.
fn uri_decode(s: &str) -> Result<String, Error> {
    if !s.contains('%') {
        return Ok(s.to_owned());
    }
    let b = s.as_bytes();
    let mut bytes = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: Option<&u8>| c.and_then(|&c| (c as char).to_digit(16));
            match (hex(b.get(i + 1)), hex(b.get(i + 2))) {
                (Some(h), Some(l)) => bytes.push(u8::try_from(h * 16 + l).expect("two hex digits")),
                _ => {
                    return Err(Error::Decode(format!(
                        "Invalid encoded sequence \"{}\"",
                        &s[i..]
                    )));
                }
            }
            i += 3;
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A pattern element (Spring's `PathElement` subclasses).
#[derive(Debug)]
enum Element {
    /// `/`.
    Separator,
    /// A segment of plain text.
    Literal(String),
    /// A segment of text and `?` (one char each).
    SingleChar(Vec<Option<char>>),
    /// A segment that is exactly `*`.
    Wildcard,
    /// `/**` at the end (the separator belongs to it).
    WildcardTheRest,
    /// `/{*var}` at the end (the separator belongs to it).
    CaptureTheRest,
    /// A segment that is exactly `{var}` or `{var:regex}`.
    Capture(Option<Regex>),
    /// Any other segment with `*`, `?` or captures, as one regex.
    Regex { re: Regex, captures: bool },
}

/// `InternalPathPatternParser.parse`.
fn parse(pattern: &str) -> Result<Vec<Element>, Error> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out: Vec<Element> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut seg = SegmentState::default();
    let mut pos = 0;
    let bad = |msg: String| Err(Error::Parse(format!("`{pattern}`: {msg}")));
    while pos < chars.len() {
        let ch = chars[pos];
        if ch == '/' {
            if let Some(start) = seg.start {
                push(
                    &mut out,
                    segment(&chars, start, pos, &seg, &mut names, pattern)?,
                    pattern,
                )?;
                seg = SegmentState::default();
            }
            // `/**` is the end-of-pattern element; `/**/…` is an error.
            if chars.get(pos + 1) == Some(&'*') && chars.get(pos + 2) == Some(&'*') {
                if chars.get(pos + 3) == Some(&'/') {
                    return bad(
                        "No more pattern data allowed after {*...} or ** pattern element".into(),
                    );
                }
                if pos + 3 == chars.len() {
                    push(&mut out, Element::WildcardTheRest, pattern)?;
                    pos += 3;
                    continue;
                }
            }
            push(&mut out, Element::Separator, pattern)?;
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
                    return bad("Not allowed to nest variable captures".into());
                }
                seg.in_capture = true;
                seg.capture_start = Some(pos);
            }
            '}' => {
                if !seg.in_capture {
                    return bad(
                        "Missing preceding open capture character before variable name'{'".into(),
                    );
                }
                seg.in_capture = false;
                if seg.capture_the_rest && pos + 1 < chars.len() {
                    return bad(
                        "No more pattern data allowed after {*...} or ** pattern element".into(),
                    );
                }
                seg.captures += 1;
            }
            ':' if seg.in_capture => {
                pos = skip_capture_regex(&chars, pos, pattern)?;
                seg.in_capture = false;
                seg.captures += 1;
            }
            '*' => {
                if seg.in_capture && seg.capture_start == Some(pos - 1) {
                    seg.capture_the_rest = true;
                }
                seg.wildcard = true;
            }
            _ => {}
        }
        if seg.in_capture {
            // Variable names are Java identifiers.
            let first =
                seg.capture_start.expect("in a capture") + 1 + usize::from(seg.capture_the_rest);
            if pos == first && !java_identifier_start(ch) {
                return bad(format!(
                    "Char '{ch}' not allowed at start of captured variable name"
                ));
            }
            if pos > first && !java_identifier_part(ch) {
                return bad(format!(
                    "Char '{ch}' is not allowed in a captured variable name"
                ));
            }
        }
        pos += 1;
    }
    if let Some(start) = seg.start {
        push(
            &mut out,
            segment(&chars, start, pos, &seg, &mut names, pattern)?,
            pattern,
        )?;
    }
    Ok(out)
}

/// What the parser has seen of the current segment.
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

/// Appends `e`; nothing may follow `/**` or `/{*var}`, and `{*var}` takes over the separator
/// before it.
fn push(out: &mut Vec<Element>, e: Element, pattern: &str) -> Result<(), Error> {
    if matches!(
        out.last(),
        Some(Element::WildcardTheRest | Element::CaptureTheRest)
    ) {
        return Err(Error::Parse(format!(
            "`{pattern}`: No more pattern data allowed after {{*...}} or ** pattern element"
        )));
    }
    if matches!(e, Element::CaptureTheRest) && matches!(out.last(), Some(Element::Separator)) {
        out.pop();
    }
    out.push(e);
    Ok(())
}

/// Skips a `{var:regex}` constraint from the `:` at `pos`; returns the position of its `}`.
/// Nested `{…}` pairs and `\`-escaped chars are part of the regex.
fn skip_capture_regex(chars: &[char], pos: usize, pattern: &str) -> Result<usize, Error> {
    let start = pos + 1;
    let mut i = start;
    let mut depth = 0usize;
    let mut escaped = false;
    while i < chars.len() {
        let c = chars[i];
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
                    return Err(Error::Parse(format!(
                        "`{pattern}`: Missing regex constraint on capture"
                    )));
                }
                return Ok(i);
            }
            depth -= 1;
        }
        if c == '/' && !escaped {
            return Err(Error::Parse(format!(
                "`{pattern}`: Expected close capture character after variable name '}}'"
            )));
        }
        escaped = false;
        i += 1;
    }
    Err(Error::Parse(format!(
        "`{pattern}`: Expected close capture character after variable name '}}'"
    )))
}

/// `createPathElement` for the segment `chars[start..end]`.
fn segment(
    chars: &[char],
    start: usize,
    end: usize,
    seg: &SegmentState,
    names: &mut Vec<String>,
    pattern: &str,
) -> Result<Element, Error> {
    if seg.in_capture {
        return Err(Error::Parse(format!(
            "`{pattern}`: Expected close capture character after variable name '}}'"
        )));
    }
    let text: String = chars[start..end].iter().collect();
    let mut record = |name: &str| {
        if names.iter().any(|n| n == name) {
            return Err(Error::Parse(format!(
                "`{pattern}`: Not allowed to capture '{name}' twice in the same pattern"
            )));
        }
        names.push(name.to_owned());
        Ok(())
    };
    if seg.captures > 0 {
        if seg.captures == 1 && seg.capture_start == Some(start) && text.ends_with('}') {
            if seg.capture_the_rest {
                return Ok(Element::CaptureTheRest);
            }
            let inner = &text[1..text.len() - 1];
            let (name, constraint) = match inner.split_once(':') {
                Some((n, c)) => (n, Some(c)),
                None => (inner, None),
            };
            let re = match constraint {
                Some(c) => Some(dialect::full_match(c, Flavor::Java).map_err(|e| match e {
                    Dialect::Syntax(m) => Error::Parse(m),
                    Dialect::Unmodelled(m) => Error::Unmodelled(m),
                })?),
                None => None,
            };
            record(name)?;
            return Ok(Element::Capture(re));
        }
        if seg.capture_the_rest {
            return Err(Error::Parse(format!(
                "`{pattern}`: '{{*...}}' can only be preceded by a path separator"
            )));
        }
        let (re, vars) = regex_segment(&text, pattern)?;
        for v in &vars {
            record(v)?;
        }
        return Ok(Element::Regex {
            re,
            captures: !vars.is_empty(),
        });
    }
    if seg.wildcard {
        if end - start == 1 {
            return Ok(Element::Wildcard);
        }
        let (re, _) = regex_segment(&text, pattern)?;
        return Ok(Element::Regex {
            re,
            captures: false,
        });
    }
    if seg.single_chars > 0 {
        return Ok(Element::SingleChar(
            text.chars().map(|c| (c != '?').then_some(c)).collect(),
        ));
    }
    Ok(Element::Literal(text))
}

/// `RegexPathElement`'s regex: quoted text, `?` → `.`, `*` → `.*`, `{v}` → `(.*)`,
/// `{v:re}` → `(re)`; a name used twice in the segment is a parse error. Returns the regex
/// and the variable names.
fn regex_segment(text: &str, pattern: &str) -> Result<(Regex, Vec<String>), Error> {
    let glob = Regex::new(r"\?|\*|\{((?:\{[^/]+?\}|[^/{}]|\\[{}])+?)\}")
        .expect("the glob pattern compiles");
    let mut body = String::from("(?s)");
    let mut names: Vec<String> = Vec::new();
    let mut end = 0;
    for m in glob.find_iter(text) {
        body.push_str(&regex::escape(&text[end..m.start()]));
        match m.as_str() {
            "?" => body.push('.'),
            "*" => body.push_str(".*"),
            var => {
                let inner = &var[1..var.len() - 1];
                let (name, constraint) = match inner.split_once(':') {
                    Some((n, c)) => (n, Some(c)),
                    None => (inner, None),
                };
                if names.iter().any(|n| n == name) {
                    return Err(Error::Parse(format!(
                        "`{pattern}`: Not allowed to capture '{name}' twice in the same pattern"
                    )));
                }
                names.push(name.to_owned());
                match constraint {
                    None => body.push_str("(.*)"),
                    Some(c) => {
                        let c = dialect::translate(c, Flavor::Java).map_err(|e| match e {
                            Dialect::Syntax(m) => Error::Parse(m),
                            Dialect::Unmodelled(m) => Error::Unmodelled(m),
                        })?;
                        body.push('(');
                        body.push_str(&c);
                        body.push(')');
                    }
                }
            }
        }
        end = m.end();
    }
    body.push_str(&regex::escape(&text[end..]));
    let re = dialect::whole(&body, text).map_err(|e| match e {
        Dialect::Syntax(m) => Error::Parse(m),
        Dialect::Unmodelled(m) => Error::Unmodelled(m),
    })?;
    Ok((re, names))
}

/// `Character.isJavaIdentifierStart` for the chars a pattern plausibly holds (letters, `_`,
/// `$`, and other Unicode letters).
fn java_identifier_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

/// `Character.isJavaIdentifierPart`, approximately: identifier starts plus digits.
fn java_identifier_part(c: char) -> bool {
    java_identifier_start(c) || c.is_numeric()
}

/// Matching state: the pattern's elements against the path's.
struct Matcher<'a> {
    pattern: &'a [Element],
    path: &'a [PathElement],
}

impl Matcher<'_> {
    fn len(&self) -> usize {
        self.path.len()
    }

    fn is_separator(&self, i: usize) -> bool {
        matches!(self.path.get(i), Some(PathElement::Separator))
    }

    /// `pathElementValue`: a segment's value, `""` for a separator or past the end.
    fn value(&self, i: usize) -> &str {
        match self.path.get(i) {
            Some(PathElement::Segment(v)) => v,
            _ => "",
        }
    }

    /// After a one-segment element matched at `i` (so the path continues at `i + 1`).
    fn then(&self, e: usize, i: usize) -> Result<bool, Error> {
        if e + 1 == self.pattern.len() {
            Ok(i + 1 == self.len())
        } else {
            self.at(e + 1, i + 1)
        }
    }

    /// Whether pattern element `e` and everything after it match the path from `i`.
    fn at(&self, e: usize, i: usize) -> Result<bool, Error> {
        let last = e + 1 == self.pattern.len();
        match &self.pattern[e] {
            Element::Separator => {
                if !self.is_separator(i) {
                    return Ok(false);
                }
                if last {
                    Ok(i + 1 == self.len())
                } else {
                    self.at(e + 1, i + 1)
                }
            }
            Element::Literal(text) => match self.path.get(i) {
                Some(PathElement::Segment(v)) if v == text => self.then(e, i),
                _ => Ok(false),
            },
            Element::SingleChar(chars) => match self.path.get(i) {
                Some(PathElement::Segment(v))
                    if v.chars().count() == chars.len()
                        && v.chars().zip(chars).all(|(c, p)| p.is_none_or(|p| p == c)) =>
                {
                    self.then(e, i)
                }
                _ => Ok(false),
            },
            Element::Wildcard => {
                // Past the end there is no segment; a separator never matches `*`.
                let segment = match self.path.get(i) {
                    None => None,
                    Some(PathElement::Separator) => return Ok(false),
                    Some(PathElement::Segment(v)) => Some(v.as_str()),
                };
                let next = if segment.is_some() { i + 1 } else { i };
                if last {
                    Ok(next == self.len())
                } else if segment.is_none_or(str::is_empty) {
                    // Within a path a `*` needs at least one char.
                    Ok(false)
                } else {
                    self.at(e + 1, next)
                }
            }
            Element::WildcardTheRest | Element::CaptureTheRest => {
                Ok(i >= self.len() || self.is_separator(i))
            }
            Element::Capture(constraint) => {
                if i >= self.len() {
                    return Ok(false);
                }
                let value = self.value(i);
                if value.is_empty() {
                    return Ok(false);
                }
                if let Some(re) = constraint {
                    if dialect::group_count(re) != 0 {
                        return Err(Error::Parse(format!(
                            "No capture groups allowed in the constraint regex: {re}"
                        )));
                    }
                    if !re.is_match(value) {
                        return Ok(false);
                    }
                }
                self.then(e, i)
            }
            Element::Regex { re, captures } => {
                let value = self.value(i);
                if !re.is_match(value) {
                    return Ok(false);
                }
                if last {
                    Ok(i + 1 >= self.len() && (!captures || !value.is_empty()))
                } else {
                    self.at(e + 1, i + 1)
                }
            }
        }
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
        // The PathPattern column of the table in semantics §5.2.
        assert!(m("/http/**", "/http"));
        assert!(!m("/http/test", "/http/test/"));
        assert!(m("/http/*", "/http/"));
        assert!(matches!(
            matches("/http/**/end", "/http/a/end"),
            Err(Error::Parse(_))
        ));
        assert!(m("/http/test", "/http/te%73t"));
        assert!(m("/http/test", "/http/test;v=1"));
        assert!(!m("/http/test", "//http/test"));
        assert!(!m("/HTTP/**", "/http/a"));
    }

    #[test]
    fn decoding_and_matrix() {
        assert!(!m("/te%20st", "/te%20st"));
        assert!(m("/te st", "/te%20st"));
        assert!(!m("/a/b", "/a%2Fb"));
        assert!(m("/{v}", "/a%2Fb"));
        assert!(m("/a;b", "/a%3Bb"));
        assert!(m("/a", "/a;x=1;y=2"));
        // A segment that is only a matrix part is a segment with an empty value: `*` and
        // `{v}` need at least one char within a path.
        assert!(!m("/{v}/a", "/;x/a"));
        assert!(!m("/*/a", "/;x/a"));
        assert!(!m("/*/**", "/;p/http//x.y"));
        assert!(!m("/{v}", "/;p"));
        assert!(m("/*", "/;p"));
        assert!(m("/**", "/;p"));
        assert!(matches!(matches("/a", "/%zz"), Err(Error::Decode(_))));
        assert!(matches!(matches("/a", "/a%4"), Err(Error::Decode(_))));
    }

    #[test]
    fn rest_elements() {
        assert!(m("/http/{*rest}", "/http"));
        assert!(m("/http/{*rest}", "/http/"));
        assert!(m("/http/{*rest}", "/http/a/b"));
        assert!(!m("/http/{*rest}", "/httpx"));
        assert!(m("/**", "/"));
        assert!(m("/{*rest}", "/a/b"));
        assert!(m("/http/**", "/http//a"));
        assert!(matches!(
            matches("/{*rest}/a", "/x/a"),
            Err(Error::Parse(_))
        ));
        assert!(matches!(matches("/a{*rest}", "/ax"), Err(Error::Parse(_))));
        assert!(m("/a/**x", "/a/yx"));
    }

    #[test]
    fn wildcards_and_captures() {
        assert!(m("/*", "/"));
        assert!(m("/*", "/a"));
        assert!(!m("/*", "/a/"));
        assert!(!m("/*/b", "//b"));
        assert!(m("/*/b", "/a/b"));
        assert!(m("/t?st", "/test"));
        assert!(!m("/t?st", "/tst"));
        assert!(m("/a*", "/a"));
        assert!(m("/a*", "/abc"));
        assert!(!m("/a*", "/"));
        assert!(m("/{v}", "/x"));
        assert!(!m("/{v}", "/"));
        assert!(m("/{v:[a-z]+}", "/abc"));
        assert!(!m("/{v:[a-z]+}", "/ab1"));
        assert!(m("/{v}t", "/at"));
        assert!(!m("/{v}t", "/t;x=1/"));
        assert!(m("/x{v}", "/x"));
        assert!(!m("/x{v}", "/x/"));
        assert!(m("/a/", "/a/"));
        assert!(!m("/a/", "/a"));
        assert!(m("//a", "//a"));
    }

    #[test]
    fn parse_errors() {
        for p in [
            "/{v}/{v}", "/{v}_{v}", "/{1x}", "/{a-b}", "/{v", "/v}", "/{v:}", "/{a{b}}",
        ] {
            assert!(
                matches!(matches(p, "/a"), Err(Error::Parse(_))),
                "{p} must not parse"
            );
        }
        assert!(m("/{a}{b}", "/xy"));
        assert!(matches!(matches("/{v:(a|b)}", "/a"), Err(Error::Parse(_))));
        assert!(!m("/{v:(a|b)}", "/"));
    }
}
