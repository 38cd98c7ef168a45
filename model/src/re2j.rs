//! The regex dialect of ShenYu's `regex` operator: **re2j** 1.8 (`com.google.re2j.Pattern.
//! compile(p)`, parser flags `RE2.PERL`), and its translation to the Rust `regex` crate.
//!
//! [`translate`] reads a pattern the way re2j's `Parser.parseInternal` does and either fails
//! where re2j throws `PatternSyntaxException` (ShenYu answers HTTP 500) or returns a pattern for
//! the `regex` crate that matches exactly the same strings. The admin uses it to refuse regexes
//! ShenYu could never compile, the gateway to compile the ones it evaluates.
//!
//! What re2j accepts differs from Rust's `regex` both ways, and so does what the same text
//! means; the translation handles each difference from re2j's parser source:
//! - flags: only `i`, `m`, `s`, `U` (Rust also takes `x`, `u`, `R`); `(?)` and repeated flags
//!   are fine in re2j, and a flag group does not stop a repetition from applying to what came
//!   before it (`a(?i)*`, and `a*(?i)?` is `(a*)?`, not a lazy star);
//! - named groups `(?P<n>…)` / `(?<n>…)` with names of `[A-Za-z0-9_]` only (Rust also takes
//!   letters beyond ASCII, `.`, `[`, `]`, and refuses a leading digit): emitted unnamed;
//! - repetition: stacked operators (`a**`, `a{2}{3}`, even `a{*`: re2j counts a `{` that is
//!   not a repeat as one) and counts over 1000 are errors; a `{` that is not `{n}`, `{n,}` or
//!   `{n,m}` (decimal, no leading zero) is a literal (`a{,3}`, `a{01}`);
//! - escapes: `\d \s \w \b` and the POSIX classes are ASCII (Rust: Unicode); `\Q…\E`, octal
//!   (`\012`, `\0`) and an escaped non-ASCII char are literals (Rust refuses them); `\C`,
//!   `\u`, `\U`, back-references and any other escaped ASCII letter or digit are errors; `\<`
//!   and `\>` are the literal chars (Rust: word-boundary assertions);
//! - classes: `[` inside a class is a literal unless it starts `[:name:]`, and `&&`, `--`,
//!   `~~` are literal chars (Rust: nested classes and set operations); `[:name:]` must be a
//!   POSIX class and `\p{…}` a name from re2j's tables (general categories, scripts, `Any`);
//!   Rust's loose names (`\p{greek}`, `\p{Letter}`, `\p{gc=L}`) are errors.
//!
//! Not covered: the Unicode version of re2j's category and script tables (older than Rust's),
//! so a char assigned since then is classified differently.

/// re2j's `UnicodeTables.CATEGORIES` names.
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// re2j's `UnicodeTables.SCRIPTS` names.
const SCRIPTS: &[&str] = &[
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Batak",
    "Bengali",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Cham",
    "Cherokee",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Egyptian_Hieroglyphs",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Greek",
    "Gujarati",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanunoo",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Katakana",
    "Kayah_Li",
    "Kharoshthi",
    "Khmer",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Malayalam",
    "Mandaic",
    "Meetei_Mayek",
    "Mongolian",
    "Myanmar",
    "New_Tai_Lue",
    "Nko",
    "Ogham",
    "Ol_Chiki",
    "Old_Italic",
    "Old_Persian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Oriya",
    "Osmanya",
    "Phags_Pa",
    "Phoenician",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Shavian",
    "Sinhala",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Tamil",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Ugaritic",
    "Unknown",
    "Vai",
    "Yi",
];

/// re2j's `CharGroup.PERL_GROUPS` (`\d`, `\s`, `\w`; upper case negates), as ranges.
fn perl_group(c: char) -> Option<(&'static [(u32, u32)], bool)> {
    const DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
    const SPACE: &[(u32, u32)] = &[(0x9, 0xa), (0xc, 0xd), (0x20, 0x20)];
    const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)];
    Some(match c {
        'd' => (DIGIT, false),
        'D' => (DIGIT, true),
        's' => (SPACE, false),
        'S' => (SPACE, true),
        'w' => (WORD, false),
        'W' => (WORD, true),
        _ => return None,
    })
}

/// re2j's `CharGroup.POSIX_GROUPS` (`alnum` … `xdigit`), as ranges.
fn posix_group(name: &str) -> Option<&'static [(u32, u32)]> {
    Some(match name {
        "alnum" => &[(0x30, 0x39), (0x41, 0x5a), (0x61, 0x7a)],
        "alpha" => &[(0x41, 0x5a), (0x61, 0x7a)],
        "ascii" => &[(0x0, 0x7f)],
        "blank" => &[(0x9, 0x9), (0x20, 0x20)],
        "cntrl" => &[(0x0, 0x1f), (0x7f, 0x7f)],
        "digit" => &[(0x30, 0x39)],
        "graph" => &[(0x21, 0x7e)],
        "lower" => &[(0x61, 0x7a)],
        "print" => &[(0x20, 0x7e)],
        "punct" => &[(0x21, 0x2f), (0x3a, 0x40), (0x5b, 0x60), (0x7b, 0x7e)],
        "space" => &[(0x9, 0xd), (0x20, 0x20)],
        "upper" => &[(0x41, 0x5a)],
        "word" => &[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)],
        "xdigit" => &[(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
        _ => return None,
    })
}

/// re2j's `Unknown` script table (surrogates left out: a Rust string has none).
const UNKNOWN: &[(u32, u32)] = &[(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)];
/// Every char.
const ANY: &[(u32, u32)] = &[(0, 0x10FFFF)];
/// No char (`[^\x{0}-\x{10FFFF}]`): re2j's surrogate literals and `\p{Cs}` (a Rust string holds
/// no surrogates).
const NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";

/// Translates a re2j pattern into `regex` crate syntax with the same meaning (see the module
/// docs); `Err` carries re2j's `PatternSyntaxException` message. The result is a complete
/// expression: it can be wrapped (`^(?:…)$`) without changing how it parses.
pub fn translate(pattern: &str) -> Result<String, String> {
    let mut t = Translator {
        chars: pattern.chars().collect(),
        pos: 0,
        out: String::with_capacity(pattern.len() + 8),
        pending_flags: String::new(),
        groups: Vec::new(),
        top: 0,
        top_is_repeat: false,
        names: Vec::new(),
        can_repeat: false,
        last_repeat: None,
    };
    t.run().map_err(|e| match e.at {
        Some(at) => format!("error parsing regexp: {}: `{at}`", e.what),
        None => format!("error parsing regexp: {}", e.what),
    })?;
    Ok(t.out)
}

/// A `PatternSyntaxException`: what, and the text it names.
struct Error {
    what: &'static str,
    at: Option<String>,
}

fn error(what: &'static str, at: impl Into<String>) -> Error {
    Error {
        what,
        at: Some(at.into()),
    }
}

const INVALID_CHAR_RANGE: &str = "invalid character class range";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_PAREN: &str = "missing closing )";
const INTERNAL_ERROR: &str = "regexp/syntax: internal error";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const DUPLICATE_NAMED_CAPTURE: &str = "duplicate capture group name";

struct Translator {
    chars: Vec<char>,
    pos: usize,
    out: String,
    /// Flag groups (`(?i)`) not written yet: re2j's flags change no parse-stack entry, so a
    /// repetition right after one applies to what came before it; they are written before
    /// the next thing that is not a repetition.
    pending_flags: String,
    /// Where each open group starts in `out`.
    groups: Vec<usize>,
    /// Where the expression on top of re2j's parse stack (the one a repetition applies to)
    /// starts in `out`.
    top: usize,
    /// Whether that expression already ends with a repetition (only possible with a flag
    /// group in between, `a*(?i)?`): the next one must not read as a lazy or nested operator.
    top_is_repeat: bool,
    names: Vec<String>,
    /// Whether the top of re2j's parse stack is an expression (not empty, `(` or `|`).
    can_repeat: bool,
    /// Where the previous item started if it was a repetition (or a literal `{`, which re2j
    /// counts as one).
    last_repeat: Option<usize>,
}

impl Translator {
    fn rest(&self) -> String {
        self.chars[self.pos.min(self.chars.len())..]
            .iter()
            .collect()
    }

    fn from(&self, start: usize) -> String {
        self.chars[start..self.pos.min(self.chars.len())]
            .iter()
            .collect()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn looking_at(&self, s: &str) -> bool {
        (self.pos..)
            .zip(s.chars())
            .all(|(i, c)| self.chars.get(i) == Some(&c))
    }

    /// Writes the pending flag groups.
    fn flush(&mut self) {
        self.out.push_str(&self.pending_flags);
        self.pending_flags.clear();
    }

    /// Writes `s`, an expression a repetition can apply to.
    fn atom(&mut self, s: &str) {
        self.flush();
        self.top = self.out.len();
        self.out.push_str(s);
        self.top_is_repeat = false;
        self.can_repeat = true;
    }

    fn literal(&mut self, c: u32) {
        let mut s = String::new();
        push_literal(&mut s, c);
        self.atom(&s);
    }

    /// Opens a group with `s` (`(`, `(?i:`).
    fn open(&mut self, s: &str) {
        self.flush();
        self.groups.push(self.out.len());
        self.out.push_str(s);
        self.can_repeat = false;
    }

    /// `Parser.parseInternal`.
    fn run(&mut self) -> Result<(), Error> {
        while let Some(c) = self.peek() {
            let start = self.pos;
            let mut repeat = false;
            match c {
                '(' if self.looking_at("(?") => self.perl_flags()?,
                '(' => {
                    self.open("(");
                    self.pos += 1;
                }
                '|' => {
                    self.flush();
                    self.out.push('|');
                    self.can_repeat = false;
                    self.pos += 1;
                }
                ')' => {
                    let Some(start) = self.groups.pop() else {
                        return Err(error(INTERNAL_ERROR, "stack underflow"));
                    };
                    self.flush();
                    self.out.push(')');
                    self.top = start;
                    self.top_is_repeat = false;
                    self.can_repeat = true;
                    self.pos += 1;
                }
                '^' | '$' | '.' => {
                    self.atom(&c.to_string());
                    self.pos += 1;
                }
                '[' => {
                    let class = self.class()?;
                    self.atom(&class);
                }
                '*' | '+' | '?' => {
                    self.pos += 1;
                    self.repeat(&c.to_string(), start)?;
                    repeat = true;
                }
                '{' => {
                    repeat = true;
                    match self.parse_repeat()? {
                        Some(op) => self.repeat(&op, start)?,
                        None => {
                            // Not a repeat: a literal `{` (still counted as a repeat above).
                            self.pos = start + 1;
                            self.literal(u32::from('{'));
                        }
                    }
                }
                '\\' => self.escape()?,
                _ => {
                    self.pos += 1;
                    self.literal(u32::from(c));
                }
            }
            self.last_repeat = repeat.then_some(start);
        }
        if !self.groups.is_empty() {
            return Err(error(MISSING_PAREN, self.chars.iter().collect::<String>()));
        }
        self.flush();
        Ok(())
    }

    /// `Parser.repeat` for the operator `op` (already read from `start`): an optional `?`
    /// (non-greedy) follows; stacked repetitions and a missing argument are errors.
    fn repeat(&mut self, op: &str, start: usize) -> Result<(), Error> {
        let mut op = op.to_owned();
        if self.peek() == Some('?') {
            self.pos += 1;
            op.push('?');
        }
        if let Some(previous) = self.last_repeat {
            return Err(error(INVALID_REPEAT_OP, self.from(previous)));
        }
        if !self.can_repeat {
            return Err(error(MISSING_REPEAT_ARGUMENT, self.from(start)));
        }
        // Written before pending flags: it applies to the expression before them.
        if self.top_is_repeat {
            self.out.insert_str(self.top, "(?:");
            self.out.push(')');
        }
        self.out.push_str(&op);
        self.top_is_repeat = true;
        Ok(())
    }

    /// `Parser.parseRepeat` at `{`: `Ok(Some(op))` for `{n}`, `{n,}`, `{n,m}` (decimal, no
    /// leading zeros), `Ok(None)` when the text has another shape, `Err` for counts over
    /// 1000 or `min > max`.
    fn parse_repeat(&mut self) -> Result<Option<String>, Error> {
        let start = self.pos;
        self.pos += 1;
        let min = self.parse_int();
        if min == -1 {
            return Ok(None);
        }
        let max = match self.peek() {
            None => return Ok(None),
            Some(',') => {
                self.pos += 1;
                match self.peek() {
                    None => return Ok(None),
                    Some('}') => -1,
                    Some(_) => match self.parse_int() {
                        -1 => return Ok(None),
                        max => max,
                    },
                }
            }
            Some(_) => min,
        };
        if self.peek() != Some('}') {
            return Ok(None);
        }
        self.pos += 1;
        if !(0..=1000).contains(&min) || max == -2 || max > 1000 || (max >= 0 && min > max) {
            return Err(error(INVALID_REPEAT_SIZE, self.from(start)));
        }
        Ok(Some(match max {
            -1 => format!("{{{min},}}"),
            max if max == min => format!("{{{min}}}"),
            max => format!("{{{min},{max}}}"),
        }))
    }

    /// `Parser.parseInt`: a non-negative decimal number; -1 for a bad shape (no digits, a
    /// leading zero), -2 for more than eight digits.
    fn parse_int(&mut self) -> i64 {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits = self.from(start);
        if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
            return -1;
        }
        if digits.len() > 8 {
            return -2;
        }
        digits.parse().expect("at most eight digits")
    }

    /// `Parser.parsePerlFlags` at `(?`: a named group, a non-capturing group with or without
    /// flags, or a flag change.
    fn perl_flags(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let named = if self.looking_at("(?P<") {
            Some(4)
        } else if self.looking_at("(?<") {
            Some(3)
        } else {
            None
        };
        if let Some(begin) = named {
            let from = start + begin;
            let Some(end) = self.chars[from..].iter().position(|&c| c == '>') else {
                return Err(error(INVALID_NAMED_CAPTURE, self.rest()));
            };
            let end = from + end;
            let name: String = self.chars[from..end].iter().collect();
            if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                let shown: String = self.chars[start..=end].iter().collect();
                return Err(error(INVALID_NAMED_CAPTURE, shown));
            }
            if self.names.contains(&name) {
                return Err(error(DUPLICATE_NAMED_CAPTURE, name));
            }
            self.names.push(name);
            self.pos = end + 1;
            // The name matters to nobody here: an ordinary group (numbered the same).
            self.open("(");
            return Ok(());
        }
        self.pos += 2;
        let (mut on, mut off) = (String::new(), String::new());
        let mut negated = false;
        let mut saw_flag = false;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                'i' | 'm' | 's' | 'U' => {
                    let set = if negated { &mut off } else { &mut on };
                    if !set.contains(c) {
                        set.push(c);
                    }
                    saw_flag = true;
                }
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                }
                ':' | ')' if !negated || saw_flag => {
                    // A flag turned off after being turned on stays off.
                    on.retain(|c| !off.contains(c));
                    let mut flags = on;
                    if !off.is_empty() {
                        flags.push('-');
                        flags.push_str(&off);
                    }
                    if c == ':' {
                        self.open(&format!("(?{flags}:"));
                    } else if !flags.is_empty() {
                        self.pending_flags.push_str(&format!("(?{flags})"));
                    }
                    return Ok(());
                }
                _ => break,
            }
        }
        Err(error(INVALID_PERL_OP, self.from(start)))
    }

    /// A `\` outside a class: Perl extensions (`\A \b \B \z \Q…\E`, `\C` refused), Unicode
    /// and Perl classes, then `Parser.parseEscape`.
    fn escape(&mut self) -> Result<(), Error> {
        let start = self.pos;
        match self.chars.get(self.pos + 1) {
            Some('A') => self.atom(r"\A"),
            Some('z') => self.atom(r"\z"),
            // ASCII word boundaries.
            Some('b') => self.atom(r"(?-u:\b)"),
            Some('B') => self.atom(r"(?-u:\B)"),
            Some('C') => return Err(error(INVALID_ESCAPE, r"\C")),
            Some('Q') => {
                self.pos += 2;
                let rest = self.rest();
                let literal = rest.find("\\E").map_or(rest.as_str(), |end| &rest[..end]);
                let n = literal.chars().count();
                for c in literal.chars() {
                    self.literal(u32::from(c));
                }
                self.pos = (self.pos + n + 2).min(self.chars.len());
                return Ok(());
            }
            Some('p' | 'P') => {
                let class = self.unicode_class()?;
                self.atom(&class);
                return Ok(());
            }
            Some(&c) => {
                if let Some((ranges, negated)) = perl_group(c) {
                    self.atom(&class_of(ranges, negated));
                } else {
                    let c = self.parse_escape()?;
                    self.literal(c);
                    return Ok(());
                }
            }
            None => return Err(error(TRAILING_BACKSLASH, "").without_input()),
        }
        self.pos = start + 2;
        Ok(())
    }

    /// `Parser.parseEscape` at `\`: the escaped char.
    fn parse_escape(&mut self) -> Result<u32, Error> {
        let start = self.pos;
        self.pos += 1;
        let Some(c) = self.peek() else {
            return Err(error(TRAILING_BACKSLASH, "").without_input());
        };
        self.pos += 1;
        let octal = |c: Option<char>| c.and_then(|c| c.to_digit(8));
        let bad = |t: &Self| Err(error(INVALID_ESCAPE, t.from(start)));
        match c {
            // Octal: `\0`, or `\1`–`\7` followed by an octal digit (a lone digit would be a
            // back-reference); up to three digits.
            '0'..='7' => {
                if c != '0' && octal(self.peek()).is_none() {
                    return bad(self);
                }
                let mut r = c.to_digit(8).expect("octal digit");
                for _ in 1..3 {
                    let Some(d) = octal(self.peek()) else { break };
                    r = r * 8 + d;
                    self.pos += 1;
                }
                Ok(r)
            }
            'x' => {
                let Some(c) = self.peek() else {
                    return bad(self);
                };
                self.pos += 1;
                if c == '{' {
                    let mut r: u32 = 0;
                    let mut digits = 0;
                    loop {
                        let Some(c) = self.peek() else {
                            return bad(self);
                        };
                        self.pos += 1;
                        if c == '}' {
                            break;
                        }
                        let Some(v) = c.to_digit(16) else {
                            return bad(self);
                        };
                        r = r * 16 + v;
                        if r > 0x10FFFF {
                            return bad(self);
                        }
                        digits += 1;
                    }
                    if digits == 0 {
                        return bad(self);
                    }
                    return Ok(r);
                }
                let x = c.to_digit(16);
                let Some(c) = self.peek() else {
                    return bad(self);
                };
                self.pos += 1;
                match (x, c.to_digit(16)) {
                    (Some(x), Some(y)) => Ok(x * 16 + y),
                    _ => bad(self),
                }
            }
            'a' => Ok(7),
            'f' => Ok(0xC),
            'n' => Ok(0xA),
            'r' => Ok(0xD),
            't' => Ok(9),
            'v' => Ok(0xB),
            // Any other escaped char that is not an ASCII letter or digit is itself.
            c if !c.is_ascii_alphanumeric() => Ok(u32::from(c)),
            _ => bad(self),
        }
    }

    /// `Parser.parseUnicodeClass` at `\p` / `\P`: a class (`\p{…}` or a nested `[…]`).
    fn unicode_class(&mut self) -> Result<String, Error> {
        let start = self.pos;
        let mut negated = self.chars[self.pos + 1] == 'P';
        self.pos += 2;
        let Some(c) = self.peek() else {
            return Err(error(INVALID_CHAR_RANGE, self.from(start)));
        };
        self.pos += 1;
        let mut name = if c == '{' {
            let Some(end) = self.chars[self.pos..].iter().position(|&c| c == '}') else {
                self.pos = start;
                return Err(error(INVALID_CHAR_RANGE, self.rest()));
            };
            let name: String = self.chars[self.pos..self.pos + end].iter().collect();
            self.pos += end + 1;
            name
        } else {
            c.to_string()
        };
        if let Some(rest) = name.strip_prefix('^') {
            negated = !negated;
            name = rest.to_owned();
        }
        Ok(match name.as_str() {
            "Any" => class_of(ANY, negated),
            "Cs" if negated => class_of(ANY, false),
            "Cs" => NOTHING.to_owned(),
            "Unknown" => class_of(UNKNOWN, negated),
            n if CATEGORIES.contains(&n) || SCRIPTS.contains(&n) => {
                format!("\\{}{{{n}}}", if negated { 'P' } else { 'p' })
            }
            _ => return Err(error(INVALID_CHAR_RANGE, self.from(start))),
        })
    }

    /// `Parser.parseClass` at `[`: the class, rewritten with every char escaped.
    fn class(&mut self) -> Result<String, Error> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::from("[");
        if self.peek() == Some('^') {
            out.push('^');
            self.pos += 1;
        }
        let mut first = true;
        while self.peek() != Some(']') || first {
            first = false;
            if self.looking_at("[:") {
                let rest = self.rest();
                if let Some(end) = rest.find(":]") {
                    let name = &rest[..end + 2];
                    let (inner, negated) = match name[2..end].strip_prefix('^') {
                        Some(inner) => (inner, true),
                        None => (&name[2..end], false),
                    };
                    let Some(ranges) = posix_group(inner) else {
                        return Err(error(INVALID_CHAR_RANGE, name));
                    };
                    out.push_str(&class_of(ranges, negated));
                    self.pos += name.chars().count();
                    continue;
                }
            }
            if self.looking_at("\\p") || self.looking_at("\\P") {
                out.push_str(&self.unicode_class()?);
                continue;
            }
            if self.peek() == Some('\\')
                && let Some((ranges, negated)) =
                    self.chars.get(self.pos + 1).and_then(|&c| perl_group(c))
            {
                out.push_str(&class_of(ranges, negated));
                self.pos += 2;
                continue;
            }
            let item = self.pos;
            let lo = self.class_char(start)?;
            let mut hi = lo;
            if self.peek() == Some('-') {
                self.pos += 1;
                if self.peek() == Some(']') {
                    // `[a-]`: the `-` is the next item.
                    self.pos -= 1;
                } else {
                    hi = self.class_char(start)?;
                    if hi < lo {
                        return Err(error(INVALID_CHAR_RANGE, self.from(item)));
                    }
                }
            }
            push_range(&mut out, lo, hi);
        }
        self.pos += 1;
        out.push(']');
        Ok(out)
    }

    /// `Parser.parseClassChar`: an escape or any char.
    fn class_char(&mut self, class_start: usize) -> Result<u32, Error> {
        match self.peek() {
            None => Err(error(MISSING_BRACKET, self.from(class_start))),
            Some('\\') => self.parse_escape(),
            Some(c) => {
                self.pos += 1;
                Ok(u32::from(c))
            }
        }
    }
}

impl Error {
    /// re2j's one-argument `PatternSyntaxException`: no input in the message.
    fn without_input(mut self) -> Self {
        self.at = None;
        self
    }
}

/// A nested class of `ranges` (Rust nests classes, inside a class too).
fn class_of(ranges: &[(u32, u32)], negated: bool) -> String {
    let mut s = String::from(if negated { "[^" } else { "[" });
    for &(lo, hi) in ranges {
        push_range(&mut s, lo, hi);
    }
    s.push(']');
    s
}

/// A class item for `lo..=hi`, escaped; surrogates (which re2j takes as code points) match
/// nothing in a Rust string and are left out.
fn push_range(out: &mut String, lo: u32, hi: u32) {
    let (lo, hi) = (
        if (0xD800..=0xDFFF).contains(&lo) {
            0xE000
        } else {
            lo
        },
        if (0xD800..=0xDFFF).contains(&hi) {
            0xD7FF
        } else {
            hi
        },
    );
    if lo > hi {
        out.push_str(NOTHING);
        return;
    }
    out.push_str(&format!(r"\x{{{lo:X}}}"));
    if hi != lo {
        out.push_str(&format!(r"-\x{{{hi:X}}}"));
    }
}

/// A literal char: letters, digits and `_` as they are, anything else hex-escaped (so nothing
/// reads as Rust syntax); a surrogate matches nothing.
fn push_literal(out: &mut String, c: u32) {
    match char::from_u32(c) {
        Some(c) if c.is_alphanumeric() || c == '_' => out.push(c),
        Some(_) => out.push_str(&format!(r"\x{{{c:X}}}")),
        None => out.push_str(NOTHING),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    // Flags: only i, m, s, U.
    #[case("(?x)a b")]
    #[case("(?u)a")]
    #[case("(?R)a")]
    #[case("(?i-x)a")]
    #[case("(?i-)a")]
    #[case("(?-)a")]
    #[case("(?i--s)a")]
    #[case("(?P=n)")]
    #[case("(?#c)")]
    #[case("(?")]
    #[case("(?i")]
    // Look-around, atomic groups, bad names.
    #[case("a(?=b)")]
    #[case("a(?!b)")]
    #[case("(?<=a)b")]
    #[case("(?<!a)b")]
    #[case("(?>a)")]
    #[case("(?P<a.b>x)")]
    #[case("(?<é>x)")]
    #[case("(?P<>x)")]
    #[case("(?P<n>a)(?P<n>b)")]
    #[case("(?P<n")]
    // Escapes.
    #[case(r"\C")]
    #[case(r"\u0041")]
    #[case(r"\U00000041")]
    #[case(r"\e")]
    #[case(r"\h")]
    #[case(r"\Z")]
    #[case(r"\G")]
    #[case(r"\k<n>")]
    #[case(r"\1")]
    #[case(r"(a)\1")]
    #[case(r"\8")]
    #[case(r"\18")]
    #[case(r"\x")]
    #[case(r"\xg1")]
    #[case(r"\x{}")]
    #[case(r"\x{110000}")]
    #[case(r"\x{41")]
    #[case("a\\")]
    #[case(r"\pX")]
    #[case(r"\p{greek}")]
    #[case(r"\p{Letter}")]
    #[case(r"\p{gc=L}")]
    #[case(r"\p{Alphabetic}")]
    #[case(r"\p{Greek")]
    #[case(r"\p")]
    // Repetition.
    #[case("a**")]
    #[case("a*??")]
    #[case("a+*")]
    #[case("a{2}{3}")]
    #[case("a{2}*")]
    #[case("a{*")]
    #[case("a{{2}")]
    #[case("a{1001}")]
    #[case("a{2,1}")]
    #[case("a{0,1001}")]
    #[case("a{123456789}")]
    #[case("*a")]
    #[case("(*a)")]
    #[case("a|*")]
    #[case("(?i)*a")]
    // Groups and classes.
    #[case("(a")]
    #[case("a)")]
    #[case("(a))")]
    #[case("[a")]
    #[case("[]")]
    #[case("[^]")]
    #[case("[z-a]")]
    #[case("[[:foo:]]")]
    #[case("[[:alpha:]")]
    #[case("[[:a]b:]")]
    #[case(r"[\b]")]
    #[case(r"[\Q]")]
    #[case(r"[\z]")]
    #[case(r"[a-\d]")]
    fn re2j_rejects(#[case] pattern: &str) {
        let result = translate(pattern);
        assert!(result.is_err(), "{pattern} → {result:?}");
        assert!(
            result.unwrap_err().starts_with("error parsing regexp: "),
            "{pattern}"
        );
    }

    #[rstest]
    #[case("a|b", "a|b")]
    #[case("(?ii)a(?i-s:b)", "(?i)a(?i-s:b)")]
    #[case("(?i-i)a", "(?-i)a")]
    #[case("(?)a", "a")]
    #[case("a(?i)*", "a*(?i)")]
    #[case("a{2}(?m)?", "(?:a{2})?(?m)")]
    #[case("a*(?i)+(?s)?", "(?:(?:a*)+)?(?i)(?s)")]
    #[case("(ab)(?i)*", "(ab)*(?i)")]
    #[case("(?P<n>a)(?<m>b)", "(a)(b)")]
    #[case(
        r"\d\W",
        r"[\x{30}-\x{39}][^\x{30}-\x{39}\x{41}-\x{5A}\x{5F}\x{61}-\x{7A}]"
    )]
    #[case(r"\bx\B", r"(?-u:\b)x(?-u:\B)")]
    #[case(r"\<a.b\>", r"\x{3C}a.b\x{3E}")]
    #[case(r"\Qa.\E+", r"a\x{2E}+")]
    #[case("[a&&[b]", r"[\x{61}\x{26}\x{26}\x{5B}\x{62}]")]
    #[case("a{,3}b{01}", r"a\x{7B}\x{2C}3\x{7D}b\x{7B}01\x{7D}")]
    #[case("a{2,}?b{3,3}", "a{2,}?b{3}")]
    #[case(r"\p{Greek}\PL\p{^Lu}", r"\p{Greek}\P{L}\P{Lu}")]
    fn translations(#[case] pattern: &str, #[case] want: &str) {
        assert_eq!(translate(pattern).unwrap(), want, "{pattern}");
    }

    #[test]
    fn messages_follow_re2j() {
        assert_eq!(
            translate("(?x)a").unwrap_err(),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?x`"
        );
        assert_eq!(
            translate("a**").unwrap_err(),
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(
            translate("a\\").unwrap_err(),
            "error parsing regexp: trailing backslash at end of expression"
        );
    }
}
