//! End-to-end property tests of the predicate judges: proptest generates divide rules (every
//! operator × the param types a plain HTTP client can drive, `and`/`or`, 1–3 conditions) and
//! requests (missing, blank and whitespace values, odd paths and queries), pushes a batch of
//! them through the admin to a live gateway, and compares what the gateway answers with the
//! harness's independent reference model ([`harness::reference`], written from the ShenYu
//! semantics, not from the gateway).
//!
//! Isolation: each case is one custom divide selector whose only condition is
//! `header x-gantry-case = <tag>` (a tag never reused within a run) with the echo upstream
//! `alpha`, and one rule carrying the generated conditions and match mode; its requests carry
//! `x-gantry-case: <tag>`. So the gateway's answer is the rule's verdict: HTTP 200 from
//! `alpha` (match), 404 with code -102 (no match), or 400 / 500 (a condition failed).
//!
//! One proptest case is a batch of up to [`BATCH`] cases: created through the admin, awaited
//! (the gateway's digest equals the admin's), probed (up to [`REQUESTS`] requests each,
//! concurrently), deleted, awaited again. A failure shrinks the batch to a minimal case. The
//! gateway's answers are remembered per case, so a shrink step that only drops cases re-pushes
//! nothing and one that simplifies a case pushes just that case; the final minimal batch is
//! then pushed once more on its own, without the memory, and the message says whether it
//! reproduced alone.
//!
//! Knobs (environment): `GANTRY_PROPTEST_SEED` (decimal or `0x…`) fixes the seed of every
//! trial, else each trial has its own constant seed; the seed is printed and every failure
//! names it. `GANTRY_PROPTEST_BATCHES` overrides [`BATCHES`] (longer explorations).
//! `GANTRY_PROPTEST_DIVERGENCES=1` also generates the inputs on which today's gateway is known
//! to differ from ShenYu (`DIVERGENCES`, empty at present); off by default so that the suite is
//! green until they are fixed.
//!
//! Budget, measured on the 2-core build machine (debug build, `cargo test --workspace --test
//! it -- predicates`, the five trials two at a time): [`BATCHES`] = 30 batches of 1–[`BATCH`] =
//! 48 cases, 1–[`REQUESTS`] = 3 requests each, about 600–850 cases and 1,300–1,700 requests per
//! mode: websocket 15.6 s, http 16.5 s, etcd 26.3 s, zookeeper 31.3 s (topology start
//! included), the planted-bug trial 6.0 s including shrinking; 49 s for the five trials. A
//! failure's shrinking is bounded by 400 iterations and 20 s. Longer explorations
//! (`GANTRY_PROPTEST_BATCHES=250`–`400`, ~60,000 cases over all modes) found nothing beyond
//! the `DIVERGENCES`.
//!
//! Generators and what they leave out (and why):
//! - param types `uri`, `header`, `query`, `cookie`, `req_method`, `domain`, `ip`, `host`.
//!   Not `post` (a `ShenyuContext` field: the harness cannot know gantry's context values
//!   independently), not `path`/`form-data` (the admin refuses them). `ip`/`host` see the
//!   socket peer `127.0.0.1`; no request carries `X-Forwarded-For` (the model does not cover
//!   ShenYu's resolver).
//! - operators: all eleven. Not `>`/`<`/`SpEL`/`Groovy` or unknown names: the admin refuses
//!   them, so the "unknown operator → 400" path is not reachable end to end.
//! - values the admin accepts only: non-blank values (by Rust's `trim`) except for `isBlank`;
//!   `TimeBefore`/`TimeAfter` values that parse (padded with spaces or tabs only, since the
//!   admin trims with Rust's `trim`); `regex` values in re2j syntax (the admin refuses what
//!   re2j cannot compile, such as `(?x)`, so ShenYu's HTTP 500 for it is not reachable end to
//!   end; the gateway's unit tests cover it); `pathPattern` on
//!   `uri` that Spring's parser accepts, `**` / `{*var}` last. A rule may have no condition
//!   (`and` of nothing matches, `or` of nothing does not). An admin refusal fails the property
//!   with the admin's message.
//! - times are years away from now, so no verdict can flip during a run.
//! - paths: only characters that reach the gateway unchanged (no `.`/`..` segments, no raw
//!   spaces or non-ASCII; checked before sending), nothing the gateway's firewall refuses
//!   (`;`, `%3B`, `%2F`, `%25`, backslashes: its edge tests cover the 400), valid `%` escapes
//!   only (the semantics leave Spring's handling of invalid ones in paths unspecified);
//!   queries may carry an invalid escape (`%zz`: every `query` condition evaluated then fails
//!   with HTTP 400).
//! - header values are ASCII without surrounding spaces (HTTP strips them) except the
//!   whitespace-only ones, which arrive blank either way; no `HEAD` (no body to read the code
//!   from); cookies are one `Cookie` line of `name=value` pairs with token characters.

use crate::live::DivideTopology;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt, stream};
use harness::internals::lower::{custom_selector, divide_rule};
use harness::reference::{Outcome, PlantedBug, Reference, Request};
use libtest_mimic::{Failed, Trial};
use model::{ConditionData, ConditionDto, MatchMode, SyncMode};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

/// Proptest cases (batches) per mode.
const BATCHES: u32 = 30;
/// At most this many rule cases per batch (one selector + rule each).
const BATCH: usize = 48;
/// At most this many requests per rule case.
const REQUESTS: usize = 3;
/// Admin calls and requests in flight at once.
const IN_FLIGHT: usize = 4;
/// The header that routes a request to its case's selector.
const TAG: &str = "x-gantry-case";

// ---------------------------------------------------------------------------------------------
// What is generated.

/// One rule condition, as sent to the admin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Cond {
    param_type: &'static str,
    operator: &'static str,
    param_name: String,
    param_value: String,
}

/// One request: everything but `Host` and the tag is in `headers`, in sending order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Req {
    method: &'static str,
    path: String,
    query: Option<String>,
    host: &'static str,
    headers: Vec<(&'static str, String)>,
}

/// One rule and the requests sent to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Case {
    or: bool,
    conditions: Vec<Cond>,
    requests: Vec<Req>,
}

mod pools {
    //! Small shared pools, so that condition values and request values collide often. Each
    //! pool's first entry is the simplest (proptest shrinks towards it).

    pub(super) const PARAM_TYPES: &[(u32, &str)] = &[
        (3, "header"),
        (3, "uri"),
        (3, "query"),
        (2, "cookie"),
        (1, "req_method"),
        (1, "domain"),
        (1, "ip"),
        (1, "host"),
    ];
    pub(super) const OPERATORS: &[&str] = &[
        "=",
        "contains",
        "startsWith",
        "endsWith",
        "match",
        "exclude",
        "pathPattern",
        "regex",
        "isBlank",
        "TimeBefore",
        "TimeAfter",
    ];
    pub(super) const HEADER_NAMES: &[&str] = &["x-a", "X-A", "x-b", " x-a"];
    pub(super) const QUERY_NAMES: &[&str] = &["q", "Q", "r", " q"];
    pub(super) const COOKIE_NAMES: &[&str] = &["c", "C", "d"];
    /// For `uri` and the client/method/domain types the name only matters to the time judges.
    pub(super) const OTHER_NAMES: &[&str] = &["/", "", " ", "x"];

    pub(super) const WORDS: &[&str] = &[
        "a", "ab", "b", "test", "Test", "1", "12", "a b", "2010", "/a/**",
    ];
    pub(super) const URI_VALUES: &[&str] = &[
        "/a", "/", "/a/", "/test", "/te%73t", "a", "test", "/a;v=1", "//a", ";v=1", "%2F", "/a/**",
    ];
    pub(super) const METHOD_VALUES: &[&str] =
        &["GET", "POST", "get", "G", "ET", "PUT", "DELETE", "PATCH"];
    pub(super) const DOMAIN_VALUES: &[&str] = &[
        "example.com",
        "Example.COM",
        "localhost",
        "127.0.0.1",
        "example",
        ".com",
        "Example.COM:8080",
        "com",
    ];
    pub(super) const CLIENT_VALUES: &[&str] = &[
        "127.0.0.1",
        "127.0.0",
        ".1",
        "localhost",
        "10.0.0.1",
        "0:0:0:0:0:0:0:1",
        "1",
    ];
    /// Around string values: Java's trim strips ≤ U+0020 (so `\u{1}` too) but not U+00A0 or
    /// U+2003, which Rust's `trim` does strip.
    pub(super) const PADS: &[(&str, &str)] = &[
        ("", ""),
        (" ", " "),
        ("\t", ""),
        ("\u{1}", ""),
        ("\u{a0}", ""),
        ("", "\u{2003}"),
    ];
    /// Around time values: only what the admin's Rust `trim` also strips.
    pub(super) const TIME_PADS: &[(&str, &str)] = &[("", ""), (" ", " "), ("\t", "")];
    /// Around regexes and Ant patterns.
    pub(super) const PATTERN_PADS: &[(&str, &str)] = &[("", ""), (" ", " "), ("\u{1}", "")];
    /// Years away from now; `2018-02-30` is read as Feb 28, `24:00:00` as the next midnight.
    pub(super) const TIMES: &[&str] = &[
        "2000-01-01 00:00:00",
        "2099-12-31 23:59:59",
        "2010-06-15 12:00:00",
        "2090-01-01 00:00:00",
        "2018-02-30 10:00:00",
        "2021-12-31 24:00:00",
    ];
    pub(super) const REGEXES: &[&str] = &[
        "a",
        "ab",
        "a.*",
        "[a-z]+",
        r"\d+",
        "(?i)test",
        "te(s|x)t",
        ".*b",
        "a|b",
        r"\w+",
        r"\s*a",
        "[A-Z]+",
        "G.T",
        r"127\.0\.0\.1",
        r"\D+",
        "[[:alpha:]]+",
        "a{2}",
        "Example.*",
    ];
    pub(super) const URI_REGEXES: &[&str] = &[
        "/a.*",
        "/[a-z/]+",
        "/te(s|%73)t",
        ".*",
        "/.*;v=1",
        "/a/?",
        "//.*",
        r"/\w+",
    ];
    pub(super) const ANT_SEGMENTS: &[&str] = &[
        "a",
        "b",
        "test",
        "te%73t",
        "*",
        "?",
        "**",
        "a*",
        "{v}",
        "{v:[a-z]+}",
        "t?st",
        "a;v=1",
        "http",
        "x.y",
        "te st",
    ];
    /// Patterns Spring cannot parse (`{1x}`, a variable captured twice) are refused by the
    /// admin (ShenYu's gateway answers 400 to every request reaching them), so the pool has
    /// none and `path_pattern` never repeats a variable; the parser's unit tests cover them.
    pub(super) const PATH_PATTERN_SEGMENTS: &[&str] = &[
        "a",
        "b",
        "test",
        "te st",
        "te%73t",
        "*",
        "?",
        "a*",
        "{v}",
        "{w:[a-z]+}",
        "t?st",
        "http",
        "{v}t",
        "x.y",
        "a;v=1",
    ];
    pub(super) const PATH_PATTERN_TAILS: &[&str] = &["", "/**", "/{*rest}", "/"];

    pub(super) const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH"];
    /// No `;`, `%3B`, `%2F`, `\`, `%5C` or `%25`: the gateway refuses paths with them before
    /// routing (HTTP 400, as Spring Security's `StrictHttpFirewall` would; ShenYu routes them),
    /// which its edge tests cover.
    pub(super) const PATH_SEGMENTS: &[&str] = &[
        "a", "b", "test", "te%73t", "http", "te%20st", "Test", "x.y", "12",
    ];
    pub(super) const QUERY_ENTRIES: &[&str] = &[
        "q=a",
        "q=ab",
        "q=",
        "q",
        "Q=a",
        "r=1",
        "q=a+b",
        "q=%20",
        "q=%C2%A0",
        "q=%E2%80%83",
        "q=%0B",
        "q=%1C",
        "q=%C2%85",
        "q=%D9%A3",
        "q=a=b",
        "=x",
        "+q=a",
        "%71=test",
        "q=2010-06-15+12:00:00",
        "q=2090-01-01%2000:00:00",
        "q=Test",
        "q=12",
        "r=%zz",
    ];
    pub(super) const HEADER_VALUES: &[&str] = &[
        "a",
        "",
        " ",
        "ab",
        "b",
        "Test",
        "a b",
        "test",
        "1",
        "12",
        "2010-06-15 12:00:00",
        "2090-01-01 00:00:00",
        "2018-02-28 10:00:00",
        "garbage",
        "/a/**",
    ];
    pub(super) const COOKIE_VALUES: &[&str] = &["a", "", "ab", "1", "Test", "12"];
    pub(super) const HOSTS: &[&str] = &[
        "example.com",
        "Example.COM:8080",
        "localhost",
        "127.0.0.1",
        "alpha.test:9",
    ];
}

/// Pool entries on which today's gateway differs from ShenYu (each a gateway bug or gap, not a
/// model choice). They are generated only with `GANTRY_PROPTEST_DIVERGENCES=1`; remove an
/// entry here once the gateway handles it. Empty at present: the four reported with issue 10
/// (`r=%zz`: a bad query escape anywhere; `{1x}` and a repeated `{v}` in a path pattern;
/// `(?x)a b`: re2j-only regex syntax, now refused by the admin and left out of the pool; `;p`:
/// a path segment that is only a matrix part) are fixed.
const DIVERGENCES: &[&str] = &[];

fn divergences_on() -> bool {
    std::env::var("GANTRY_PROPTEST_DIVERGENCES").is_ok_and(|v| v == "1")
}

/// `entries` without the [`DIVERGENCES`] (unless they are on).
fn pool(entries: &'static [&'static str]) -> Vec<&'static str> {
    let on = divergences_on();
    entries
        .iter()
        .copied()
        .filter(|e| on || !DIVERGENCES.contains(e))
        .collect()
}

fn padded(
    values: &'static [&'static str],
    pads: &'static [(&'static str, &'static str)],
) -> BoxedStrategy<String> {
    (select(pool(values)), select(pads))
        .prop_map(|(v, (before, after))| format!("{before}{v}{after}"))
        .boxed()
}

/// An Ant pattern: usually absolute, 0–3 segments, maybe a trailing slash.
fn ant_pattern() -> BoxedStrategy<String> {
    (
        prop::bool::weighted(0.9),
        prop::collection::vec(select(pools::ANT_SEGMENTS), 0..=3),
        any::<bool>(),
        select(pools::PATTERN_PADS),
    )
        .prop_map(|(absolute, segs, trailing, (before, after))| {
            let mut p = segs.join("/");
            if absolute {
                p.insert(0, '/');
            }
            if trailing && !p.ends_with('/') {
                p.push('/');
            }
            if p.is_empty() {
                p.push('*');
            }
            format!("{before}{p}{after}")
        })
        .boxed()
}

/// A Spring path pattern the admin accepts: absolute, `**` / `{*rest}` only last.
fn path_pattern() -> BoxedStrategy<String> {
    (
        prop::collection::vec(select(pool(pools::PATH_PATTERN_SEGMENTS)), 0..=3),
        select(pools::PATH_PATTERN_TAILS),
        select(pools::TIME_PADS),
    )
        .prop_map(|(segs, tail, (before, after))| {
            // A variable is captured once (twice is a Spring parse error the admin refuses).
            let mut names = Vec::new();
            let mut p: String = segs
                .iter()
                .filter(|s| match variable(s) {
                    Some(name) if names.contains(&name) => false,
                    Some(name) => {
                        names.push(name);
                        true
                    }
                    None => true,
                })
                .map(|s| format!("/{s}"))
                .collect();
            p.push_str(tail);
            if p.is_empty() {
                p.push('/');
            }
            format!("{before}{p}{after}")
        })
        .boxed()
}

/// The variable a pattern segment captures (`{v}t` → `v`, `{w:[a-z]+}` → `w`).
fn variable(segment: &str) -> Option<&str> {
    let inner = segment.split_once('{')?.1;
    inner.split([':', '}']).next()
}

fn param_name(param_type: &'static str) -> BoxedStrategy<String> {
    let names = match param_type {
        "header" => pools::HEADER_NAMES,
        "query" => pools::QUERY_NAMES,
        "cookie" => pools::COOKIE_NAMES,
        _ => pools::OTHER_NAMES,
    };
    select(names).prop_map(str::to_owned).boxed()
}

fn param_value(param_type: &'static str, operator: &'static str) -> BoxedStrategy<String> {
    let uri = param_type == "uri";
    match operator {
        "isBlank" => select(&["", " ", "a"][..]).prop_map(str::to_owned).boxed(),
        "TimeBefore" | "TimeAfter" => padded(pools::TIMES, pools::TIME_PADS),
        "regex" if uri => padded(pools::URI_REGEXES, pools::PATTERN_PADS),
        "regex" => padded(pools::REGEXES, pools::PATTERN_PADS),
        "match" | "exclude" if uri => ant_pattern(),
        "pathPattern" if uri => path_pattern(),
        _ => {
            let values = match param_type {
                "uri" => pools::URI_VALUES,
                "req_method" => pools::METHOD_VALUES,
                "domain" => pools::DOMAIN_VALUES,
                "ip" | "host" => pools::CLIENT_VALUES,
                _ => pools::WORDS,
            };
            padded(values, pools::PADS)
        }
    }
}

fn condition() -> impl Strategy<Value = Cond> {
    let types: Vec<_> = pools::PARAM_TYPES
        .iter()
        .map(|&(w, t)| (w, Just(t).boxed()))
        .collect();
    (
        prop::strategy::Union::new_weighted(types),
        select(pools::OPERATORS),
    )
        .prop_flat_map(|(param_type, operator)| {
            (param_name(param_type), param_value(param_type, operator)).prop_map(
                move |(param_name, param_value)| Cond {
                    param_type,
                    operator,
                    param_name,
                    param_value,
                },
            )
        })
}

/// A path: `/` or `//` first, 0–3 segments joined by `/` (sometimes `//`), maybe a trailing
/// slash.
fn path() -> impl Strategy<Value = String> {
    (
        prop::bool::weighted(0.15),
        prop::collection::vec(
            (
                select(pool(pools::PATH_SEGMENTS)),
                prop::bool::weighted(0.1),
            ),
            0..=3,
        ),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(double_lead, segs, trailing)| {
            let mut p = String::from(if double_lead { "//" } else { "/" });
            for (i, (seg, double)) in segs.iter().enumerate() {
                if i > 0 {
                    p.push_str(if *double { "//" } else { "/" });
                }
                p.push_str(seg);
            }
            if trailing && !p.ends_with('/') {
                p.push('/');
            }
            p
        })
}

fn request() -> impl Strategy<Value = Req> {
    let query = prop::option::weighted(
        0.7,
        (
            prop::collection::vec(select(pool(pools::QUERY_ENTRIES)), 1..=3),
            prop::bool::weighted(0.1),
        )
            .prop_map(|(entries, sloppy)| entries.join(if sloppy { "&&" } else { "&" })),
    );
    let x_a = prop::option::weighted(
        0.6,
        (
            select(&["x-a", "X-A"][..]),
            select(pools::HEADER_VALUES),
            prop::option::weighted(0.15, select(pools::HEADER_VALUES)),
        ),
    );
    let x_b = prop::option::weighted(0.4, select(pools::HEADER_VALUES));
    let cookie = prop::option::weighted(
        0.5,
        prop::collection::vec(
            (select(pools::COOKIE_NAMES), select(pools::COOKIE_VALUES)),
            1..=3,
        ),
    );
    (
        select(pools::METHODS),
        path(),
        query,
        select(pools::HOSTS),
        x_a,
        x_b,
        cookie,
    )
        .prop_map(|(method, path, query, host, x_a, x_b, cookie)| {
            let mut headers = Vec::new();
            if let Some((name, first, second)) = x_a {
                headers.push((name, first.to_owned()));
                if let Some(second) = second {
                    headers.push((name, second.to_owned()));
                }
            }
            if let Some(v) = x_b {
                headers.push(("x-b", v.to_owned()));
            }
            if let Some(pairs) = cookie {
                let line: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
                headers.push(("cookie", line.join("; ")));
            }
            Req {
                method,
                path,
                query,
                host,
                headers,
            }
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        any::<bool>(),
        prop::collection::vec(condition(), 0..=3),
        prop::collection::vec(request(), 1..=REQUESTS),
    )
        .prop_map(|(or, conditions, requests)| Case {
            or,
            conditions,
            requests,
        })
}

fn batch() -> impl Strategy<Value = Vec<Case>> {
    prop::collection::vec(case(), 1..=BATCH)
}

// ---------------------------------------------------------------------------------------------
// What the gateway answered.

/// A gateway answer, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Match,
    NoMatch,
    Error { status: u16, message: String },
    Other { status: u16, body: String },
}

impl Seen {
    fn agrees(&self, expected: &Outcome) -> bool {
        match (self, expected) {
            (Seen::Match, Outcome::Match) | (Seen::NoMatch, Outcome::NoMatch) => true,
            (Seen::Error { status, .. }, Outcome::Error { status: want, .. }) => status == want,
            _ => false,
        }
    }
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seen::Match => f.write_str("match (HTTP 200 from the upstream)"),
            Seen::NoMatch => f.write_str("no match (HTTP 404, code -102)"),
            Seen::Error { status, message } => write!(f, "error HTTP {status} ({message})"),
            Seen::Other { status, body } => write!(f, "unexpected HTTP {status}: {body}"),
        }
    }
}

fn classify(status: u16, upstream: Option<&str>, body: &str) -> Seen {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let code = json.as_ref().and_then(|j| j["code"].as_i64());
    let message = json
        .as_ref()
        .and_then(|j| j["message"].as_str())
        .unwrap_or_default()
        .to_owned();
    match (status, upstream, code) {
        (200, Some("alpha"), _) => Seen::Match,
        (404, _, Some(-102)) => Seen::NoMatch,
        (400 | 500, None, Some(c)) if c == i64::from(status) => Seen::Error { status, message },
        _ => Seen::Other {
            status,
            body: body.chars().take(300).collect(),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The live topology.

struct Live {
    base: DivideTopology,
    next_tag: Cell<u64>,
    /// The gateway's answers per case (all its requests), from earlier pushes.
    memo: RefCell<HashMap<Case, Vec<Seen>>>,
    /// Cases and requests sent, for the summary.
    pushed: Cell<(usize, usize)>,
    /// Answers seen: match, no match, 400, 500.
    tally: Cell<[usize; 4]>,
}

impl Live {
    async fn start(mode: SyncMode) -> Result<Live, Failed> {
        Ok(Live {
            base: DivideTopology::start(mode).await?,
            next_tag: Cell::new(1),
            memo: RefCell::new(HashMap::new()),
            pushed: Cell::new((0, 0)),
            tally: Cell::new([0; 4]),
        })
    }

    /// The gateway's answers for every case of `batch`: remembered ones, and the others
    /// pushed and probed now (all of them when `fresh`).
    async fn observe(&self, batch: &[Case], fresh: bool) -> Result<Vec<Vec<Seen>>, String> {
        let mut todo: Vec<&Case> = Vec::new();
        {
            let memo = self.memo.borrow();
            for c in batch {
                if (fresh || !memo.contains_key(c)) && !todo.contains(&c) {
                    todo.push(c);
                }
            }
        }
        let mut seen_now = HashMap::new();
        if !todo.is_empty() {
            let answers = self.push_and_probe(&todo).await?;
            for (c, a) in todo.iter().zip(answers) {
                seen_now.insert((*c).clone(), a);
            }
        }
        let mut memo = self.memo.borrow_mut();
        let out = batch
            .iter()
            .map(|c| {
                seen_now
                    .get(c)
                    .or_else(|| memo.get(c))
                    .cloned()
                    .expect("every case was observed")
            })
            .collect();
        if !fresh {
            memo.extend(seen_now);
        }
        Ok(out)
    }

    async fn push_and_probe(&self, cases: &[&Case]) -> Result<Vec<Vec<Seen>>, String> {
        let first = self.next_tag.get();
        self.next_tag.set(first + cases.len() as u64);
        let tagged: Vec<(u64, &Case)> = (first..).zip(cases.iter().copied()).collect();
        let ids: Vec<String> = stream::iter(tagged.iter().map(|&(tag, c)| self.create(tag, c)))
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let result = async {
            self.base
                .converge(ids.len(), "after creating the batch")
                .await?;
            let probes = tagged
                .iter()
                .flat_map(|&(tag, c)| c.requests.iter().map(move |r| self.probe(tag, r)));
            let answers: Vec<Seen> = stream::iter(probes)
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
            let (n, r) = self.pushed.get();
            self.pushed.set((n + cases.len(), r + answers.len()));
            let mut tally = self.tally.get();
            for a in &answers {
                match a {
                    Seen::Match => tally[0] += 1,
                    Seen::NoMatch => tally[1] += 1,
                    Seen::Error { status: 400, .. } => tally[2] += 1,
                    Seen::Error { .. } => tally[3] += 1,
                    Seen::Other { .. } => {}
                }
            }
            self.tally.set(tally);
            let mut answers = answers.into_iter();
            Ok(cases
                .iter()
                .map(|c| answers.by_ref().take(c.requests.len()).collect())
                .collect())
        }
        .await;
        if !ids.is_empty() {
            self.base
                .admin
                .delete_selectors(&ids)
                .await
                .map_err(|e| format!("deleting the batch: {e}"))?;
        }
        self.base.converge(0, "after deleting the batch").await?;
        result
    }

    /// Creates case `c`'s selector (tagged `tag`) and rule; returns the selector id.
    async fn create(&self, tag: u64, c: &Case) -> Result<String, String> {
        let refused = |what: &str, e: &dyn std::fmt::Display| {
            format!(
                "the admin refused the {what} of a generated case (the generators must only \
                 produce configs the admin accepts): {e}\n{}",
                describe_case(Some(tag), c)
            )
        };
        let selector = custom_selector(
            &self.base.plugin_id,
            &format!("prop-{tag}"),
            &self.base.handle,
            vec![ConditionDto::new("header", "=", TAG, &tag.to_string())],
        );
        let id = self
            .base
            .admin
            .create_selector(&selector)
            .await
            .map_err(|e| refused("selector", &e))?;
        let conditions = c
            .conditions
            .iter()
            .map(|k| ConditionDto::new(k.param_type, k.operator, &k.param_name, &k.param_value))
            .collect();
        let mode = if c.or { MatchMode::Or } else { MatchMode::And };
        let rule = divide_rule(&id, &format!("prop-{tag}-rule"), mode, conditions);
        if let Err(e) = self.base.admin.create_rule(&rule).await {
            // Do not leave the selector behind.
            let _ = self
                .base
                .admin
                .delete_selectors(std::slice::from_ref(&id))
                .await;
            return Err(refused("rule", &e));
        }
        Ok(id)
    }

    async fn probe(&self, tag: u64, r: &Req) -> Result<Seen, String> {
        let target = target(r);
        let url = reqwest::Url::parse(&format!("{}{target}", self.base.topo.gateway().url()))
            .map_err(|e| format!("bad target {target:?}: {e}"))?;
        if url.path() != r.path || url.query() != r.query.as_deref() {
            return Err(format!(
                "harness generator bug: the client would send {:?}?{:?}, not {target:?}",
                url.path(),
                url.query()
            ));
        }
        let method = reqwest::Method::from_bytes(r.method.as_bytes()).map_err(|e| e.to_string())?;
        let mut req = self
            .base
            .http
            .request(method, url)
            .header("host", r.host)
            .header(TAG, tag.to_string());
        for (name, value) in &r.headers {
            req = req.header(*name, value);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| format!("{} {target}: {e}", r.method))?;
        let status = resp.status().as_u16();
        let upstream = resp
            .headers()
            .get(harness::internals::upstream::UPSTREAM_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp
            .text()
            .await
            .map_err(|e| format!("{} {target}: {e}", r.method))?;
        Ok(classify(status, upstream.as_deref(), &body))
    }
}

fn target(r: &Req) -> String {
    match &r.query {
        Some(q) => format!("{}?{q}", r.path),
        None => r.path.clone(),
    }
}

/// The request as the gateway sees it (header values lose surrounding spaces in HTTP).
fn reference_request(tag: u64, r: &Req) -> Request {
    let mut req = Request::new(r.method, &target(r))
        .with_header("host", r.host)
        .with_header(TAG, &tag.to_string());
    for (name, value) in &r.headers {
        req = req.with_header(name, value.trim_matches([' ', '\t']));
    }
    req
}

fn conditions(c: &Case) -> Vec<ConditionData> {
    c.conditions
        .iter()
        .map(|k| ConditionData::new(k.param_type, k.operator, &k.param_name, &k.param_value))
        .collect()
}

fn describe_case(tag: Option<u64>, c: &Case) -> String {
    let mut s = format!(
        "  rule (matchMode {}), conditions:\n",
        if c.or { "or" } else { "and" }
    );
    for (i, k) in c.conditions.iter().enumerate() {
        let _ = writeln!(
            s,
            "    [{i}] paramType {:?} paramName {:?} operator {:?} paramValue {:?}",
            k.param_type, k.param_name, k.operator, k.param_value
        );
    }
    if let Some(tag) = tag {
        let _ = write!(s, "  (selector: header {TAG} = {tag})");
    }
    s.trim_end().to_owned()
}

fn describe_request(r: &Req) -> String {
    format!(
        "{} {:?} host {:?} headers {:?}",
        r.method,
        target(r),
        r.host,
        r.headers
    )
}

/// Compares the gateway's answers with the model's; `Err` describes every disagreement.
fn compare(model: &Reference, batch: &[Case], seen: &[Vec<Seen>]) -> Result<(), String> {
    let mut out = String::new();
    let mut bad = 0;
    for (i, (c, answers)) in batch.iter().zip(seen).enumerate() {
        let conds = conditions(c);
        let mut lines = String::new();
        for (r, got) in c.requests.iter().zip(answers) {
            // The tag is irrelevant to the rule (no generated condition reads it).
            let want = model.rule(i32::from(c.or), &conds, &reference_request(0, r));
            if !got.agrees(&want) {
                let _ = write!(
                    lines,
                    "  request: {}\n    gateway:   {got}\n    reference: {want}\n",
                    describe_request(r)
                );
            }
        }
        if !lines.is_empty() {
            bad += 1;
            if bad <= 5 {
                let _ = write!(
                    out,
                    "case {i} of {}:\n{}\n{lines}",
                    batch.len(),
                    describe_case(None, c)
                );
            }
        }
    }
    if bad == 0 {
        return Ok(());
    }
    Err(format!(
        "{bad} of {} cases disagree with the reference model:\n{out}",
        batch.len()
    ))
}

// ---------------------------------------------------------------------------------------------
// The property.

/// How a property run ended.
struct RunResult {
    /// `Err(message)` when the property failed.
    verdict: Result<(), String>,
    /// The minimal failing batch, when it failed.
    minimal: Option<Vec<Case>>,
    seed: u64,
    elapsed: Duration,
    pushed: (usize, usize),
    tally: [usize; 4],
}

/// The seed of `trial`: `GANTRY_PROPTEST_SEED`, else a constant per trial name.
pub(crate) fn seed_for(trial: &str) -> u64 {
    if let Ok(s) = std::env::var("GANTRY_PROPTEST_SEED") {
        let s = s.trim();
        let parsed = match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        };
        if let Ok(seed) = parsed {
            return seed;
        }
        eprintln!("note: GANTRY_PROPTEST_SEED={s:?} is not a number; using the default");
    }
    // A constant per trial (FNV-1a of its name), so each mode explores different cases.
    trial.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn run_property(mode: SyncMode, trial: &str, model: &Reference) -> Result<RunResult, Failed> {
    let seed = seed_for(trial);
    eprintln!("{trial}: seed {seed:#x} (GANTRY_PROPTEST_SEED={seed:#x} reruns it)");
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let live = rt.block_on(Live::start(mode))?;
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let batches = std::env::var("GANTRY_PROPTEST_BATCHES")
        .ok()
        .and_then(|b| b.trim().parse().ok())
        .unwrap_or(BATCHES);
    let config = Config {
        cases: batches,
        failure_persistence: None,
        max_shrink_iters: 400,
        max_shrink_time: 20_000,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let result = runner.run(&batch(), |cases| {
        let seen = rt
            .block_on(live.observe(&cases, false))
            .map_err(TestCaseError::fail)?;
        compare(model, &cases, &seen).map_err(TestCaseError::fail)
    });
    let (verdict, minimal) = match result {
        Ok(()) => (Ok(()), None),
        Err(TestError::Abort(why)) => (Err(format!("proptest aborted: {why}")), None),
        Err(TestError::Fail(why, minimal)) => {
            // Push the minimal batch once more, alone and without the remembered answers.
            let fresh = match rt.block_on(live.observe(&minimal, true)) {
                Ok(seen) => match compare(model, &minimal, &seen) {
                    Err(_) => "yes, it fails the same way when pushed alone".to_owned(),
                    Ok(()) => {
                        "NO: pushed alone it passes (the failure needed other cases of its batch)"
                            .to_owned()
                    }
                },
                Err(e) => format!("could not re-push it: {e}"),
            };
            let shown: String = minimal.iter().map(|c| format!("{c:#?}\n")).collect();
            (
                Err(format!(
                    "{trial}: the gateway disagrees with the reference model \
                     (seed {seed:#x}; rerun with GANTRY_PROPTEST_SEED={seed:#x}).\n\
                     Minimal failing case, shrunk to {} case(s):\n{why}\n\
                     Reproduced on a fresh push: {fresh}\n\
                     As generated:\n{shown}",
                    minimal.len()
                )),
                Some(minimal),
            )
        }
    };
    let pushed = live.pushed.get();
    let tally = live.tally.get();
    drop(live);
    Ok(RunResult {
        verdict,
        minimal,
        seed,
        elapsed: started.elapsed(),
        pushed,
        tally,
    })
}

impl RunResult {
    fn summary(&self, trial: &str) -> String {
        let [m, n, e400, e500] = self.tally;
        format!(
            "{trial}: {} cases, {} requests pushed in {:.1} s (answers: {m} match, {n} no match, \
             {e400} HTTP 400, {e500} HTTP 500)",
            self.pushed.0,
            self.pushed.1,
            self.elapsed.as_secs_f64()
        )
    }
}

fn predicates(mode: SyncMode) -> Result<(), Failed> {
    let trial = format!("predicates@{mode}");
    let r = run_property(mode, &trial, &Reference::new())?;
    eprintln!("{}", r.summary(&trial));
    r.verdict.map_err(Failed::from)
}

/// The property must fail when the reference model is wrong: with a planted bug it must
/// report a shrunk case and its seed.
fn planted_bug(mode: SyncMode) -> Result<(), Failed> {
    let trial = format!("predicates_planted_bug@{mode}");
    let model = Reference::with_planted_bug(PlantedBug::ExcludeMatchesMissingValue);
    let r = run_property(mode, &trial, &model)?;
    eprintln!("{}", r.summary(&trial));
    let message = match r.verdict {
        Ok(()) => {
            return Err("the property passed with a planted bug in the reference model".into());
        }
        Err(m) => m,
    };
    println!("{trial}: the planted bug was caught; the property's failure message:\n{message}");
    let minimal = r.minimal.ok_or("the failure carries no minimal case")?;
    let seed = format!("{:#x}", r.seed);
    let checks = [
        (message.contains(&seed), "the message names the seed"),
        (minimal.len() == 1, "the batch shrank to one case"),
        (
            minimal[0]
                .conditions
                .iter()
                .any(|c| c.operator == "exclude"),
            "the minimal case has an exclude condition",
        ),
        (
            message.contains("Minimal failing case") && message.contains("\"exclude\""),
            "the message shows the minimal case",
        ),
    ];
    crate::all_hold(&checks, &message)
}

/// The trials: `predicates@<mode>` for every sync mode (ignored, with a note on stderr, when
/// the mode's server is not installed, unless `GANTRY_REQUIRE` names it), then
/// `predicates_planted_bug@websocket`.
pub(crate) fn trials() -> Vec<Trial> {
    let mut trials = crate::per_mode("predicates", predicates);
    trials.push(Trial::test("predicates_planted_bug@websocket", || {
        planted_bug(SyncMode::Websocket)
    }));
    trials
}
