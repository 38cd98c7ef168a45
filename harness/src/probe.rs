//! Judging a gateway answer against an [`Expect`]: a pure verdict with a readable description
//! of every mismatch.

use std::collections::{BTreeSet, HashMap};

use model::GatewayError;

use crate::json_path::JsonPath;
use crate::scenario::Scenario;
use crate::scenario::ast::{AdminChange, Change, Expect, Route};
use crate::upstream::{Echo, UPSTREAM_HEADER};

/// The gateway's header naming the selector that matched.
pub const SELECTOR_ID_HEADER: &str = "x-gantry-selector-id";
/// The gateway's header naming the rule that matched.
pub const RULE_ID_HEADER: &str = "x-gantry-rule-id";

/// The setup objects' names by the ids the admin gave them, for `selector` and `rule`
/// expectations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Names {
    /// Selector id → name.
    pub selectors: HashMap<String, String>,
    /// Rule id → (selector name, rule name).
    pub rules: HashMap<String, (String, String)>,
    /// Whether a step of the case so far created a selector or changed one's conditions or
    /// plugin: a -102 miss then blames it ([`NO_RULE_HINT`]).
    pub selectors_moved: bool,
    /// `None`: the gateway names the matched selector and rule in headers. `Some`: it does
    /// not (a ShenYu): `rule` is not judged, and `selector` only when the upstream that
    /// answered identifies it ([`Owners::identifies`]); [`Names::unjudged`] lists the rest.
    pub headerless: Option<Owners>,
}

impl Names {
    /// The keys of `expect` a judge with these names cannot judge (none when the gateway
    /// names the matched selector and rule): `rule`, and `selector` unless its upstreams
    /// identify it.
    pub(crate) fn unjudged(&self, expect: &Expect) -> Vec<&'static str> {
        let Some(owners) = &self.headerless else {
            return Vec::new();
        };
        let selector = (expect.selector.as_ref()).is_some_and(|s| !owners.identifies(s));
        [
            selector.then_some("selector"),
            expect.rule.is_some().then_some("rule"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// `expect` without the keys [`Names::unjudged`] lists: what a judge with these names
    /// judges of it.
    pub(crate) fn judged_part(&self, expect: &Expect) -> Expect {
        let unjudged = self.unjudged(expect);
        let keep =
            |key: &str, value: &Option<String>| value.clone().filter(|_| !unjudged.contains(&key));
        Expect {
            selector: keep("selector", &expect.selector),
            rule: keep("rule", &expect.rule),
            ..expect.clone()
        }
    }
}

/// Why the keys `keys` ([`Names::unjudged`]) were not judged, naming the feature the target
/// lacks (`routing.routeHeaders`, in [`crate::conformance::unsupported_reason`]'s shape so
/// that a conformance report counts it unsupported); `what` says what became of the rest.
pub(crate) fn unjudged_reason(keys: &[&str], what: &str) -> String {
    let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    crate::conformance::unsupported_reason(
        &["routing.routeHeaders"],
        &format!(
            "{what}; not judged: {} (the target does not name the matched selector and rule: \
             no x-gantry-selector-id or x-gantry-rule-id header; a `selector` is judged by the \
             upstream that answered only when no other selector of the case routes to any of \
             its upstreams)",
            keys.join(", ")
        ),
    )
}

/// Which selectors of a case route to which upstreams, over the whole case (setup and every
/// step's `createSelector` and `updateSelector`): on a gateway that does not name the
/// matched selector, an answer from an upstream that only one selector ever routes to shows
/// that selector matched (a rule picks no upstream; the target's own selectors do not route
/// to the run's upstreams, whose ports are the run's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Owners {
    /// Upstream → the selectors that ever route to it.
    by_upstream: HashMap<String, BTreeSet<String>>,
    /// Selector → the upstreams it ever routes to.
    by_selector: HashMap<String, BTreeSet<String>>,
}

impl Owners {
    /// The routes of `scenario`'s selectors, over setup and every step.
    pub(crate) fn of(scenario: &Scenario) -> Owners {
        let mut owners = Owners::default();
        for sel in &scenario.setup.selectors {
            for u in &sel.upstreams {
                owners.insert(&sel.name, &u.upstream);
            }
        }
        for change in scenario.steps.iter().flat_map(|s| &s.changes) {
            let (name, upstreams) = match change {
                Change::Admin(AdminChange::CreateSelector(sel)) => (&sel.name, &sel.upstreams),
                Change::Admin(AdminChange::UpdateSelector(u)) => match &u.upstreams {
                    Some(ups) => (&u.name, ups),
                    None => continue,
                },
                _ => continue,
            };
            for u in upstreams {
                owners.insert(name, &u.upstream);
            }
        }
        owners
    }

    /// Records that `selector` routes to `upstream`.
    pub(crate) fn insert(&mut self, selector: &str, upstream: &str) {
        (self.by_upstream.entry(upstream.to_owned()).or_default()).insert(selector.to_owned());
        (self.by_selector.entry(selector.to_owned()).or_default()).insert(upstream.to_owned());
    }

    /// Whether an answering upstream shows whether `selector` matched: it routes to at least
    /// one upstream, and no other selector routes to any of them.
    pub(crate) fn identifies(&self, selector: &str) -> bool {
        self.by_selector.get(selector).is_some_and(|ups| {
            !ups.is_empty() && ups.iter().all(|u| self.owner(u) == Some(selector))
        })
    }

    /// The one selector that ever routes to `upstream` (`None`: none or several).
    pub(crate) fn owner(&self, upstream: &str) -> Option<&str> {
        let owners = self.by_upstream.get(upstream)?;
        match owners.len() {
            1 => owners.first().map(String::as_str),
            _ => None,
        }
    }
}

/// A gateway answer, as the probe saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResponse {
    /// HTTP status.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

impl ProbeResponse {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A one-line summary: status, upstream or error body (cut after
    /// [`SUMMARY_BODY_CHARS`] characters, the cut shown).
    pub fn summary(&self) -> String {
        let body = cut(&self.body, SUMMARY_BODY_CHARS);
        match self.header(UPSTREAM_HEADER) {
            Some(up) => format!("HTTP {} from upstream {up}: {body}", self.status),
            None => format!("HTTP {}: {body}", self.status),
        }
    }
}

impl ProbeResponse {
    /// The answer as gantry's gateway would have given it, for a target without gantry's
    /// extras: with no `x-gantry-upstream` header, the upstream named by an echo body is put
    /// in that header (the upstream's identity from its body); with `errors_with_200` (a
    /// ShenYu gateway), an HTTP 200 whose body is a gateway error gets the status gantry
    /// answers that error with ([`GatewayError::gantry_status`]), so a scenario's `status:
    /// 404, route: absent` holds for ShenYu's `200 {"code":-107,...}`. Anything else is left
    /// as it came.
    pub fn in_gantry_terms(mut self, errors_with_200: bool) -> ProbeResponse {
        if self.header(UPSTREAM_HEADER).is_none()
            && let Ok(echo) = serde_json::from_str::<Echo>(&self.body)
        {
            self.headers
                .push((UPSTREAM_HEADER.to_owned(), echo.upstream));
        }
        if errors_with_200
            && self.status == 200
            && let Some(status) = serde_json::from_str::<GatewayError>(&self.body)
                .ok()
                .and_then(|e| e.gantry_status())
        {
            self.status = status;
        }
        self
    }
}

/// How much of a body a failure message shows.
pub(crate) const SUMMARY_BODY_CHARS: usize = 300;

/// `text` up to `max` characters; a longer one ends with `… (N more bytes)`.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} more bytes)", &text[..at], text.len() - at),
    }
}

/// Checks every key of `expect` (`names` resolves the ids of `selector` and `rule`); `Err`
/// lists each mismatch and what was received.
pub(crate) fn judge(expect: &Expect, resp: &ProbeResponse, names: &Names) -> Result<(), String> {
    let mut misses = Vec::new();
    let gateway_error = serde_json::from_str::<GatewayError>(&resp.body).ok();
    let upstream = resp.header(UPSTREAM_HEADER);
    if let Some(status) = expect.status
        && status != resp.status
    {
        misses.push(format!("status: expected {status}, got {}", resp.status));
    }
    if let Some(want) = &expect.upstream
        && !want.accepts(upstream)
    {
        misses.push(format!(
            "upstream: expected {want}, got {}",
            upstream.unwrap_or("none")
        ));
    }
    for (name, want) in &expect.headers {
        let got = resp.header(name);
        if got != Some(want.as_str()) {
            let got = got.map_or_else(|| "none (no such header)".to_owned(), |v| format!("{v:?}"));
            misses.push(format!("headers.{name}: expected {want:?}, got {got}"));
        }
    }
    match expect.route {
        Some(Route::Present) if upstream.is_none() => {
            misses.push("route: expected present, but no upstream answered".to_owned());
        }
        Some(Route::Absent)
            if !gateway_error
                .as_ref()
                .is_some_and(GatewayError::is_route_missing) =>
        {
            misses.push("route: expected absent (gateway code -107 or -102)".to_owned());
        }
        _ => {}
    }
    if let Some(code) = expect.code {
        let got = gateway_error.as_ref().map(|e| e.code);
        if got != Some(code) {
            let got = got.map_or_else(|| "no gateway error body".to_owned(), |c| c.to_string());
            misses.push(format!("code: expected {code}, got {got}"));
        }
    }
    match (&expect.selector, &names.headerless) {
        (Some(want), Some(owners)) if owners.identifies(want) => {
            if let Some(miss) = selector_by_upstream(want, upstream, owners) {
                misses.push(miss);
            }
        }
        // Not judged: the caller reports it (`Names::unjudged`).
        (_, Some(_)) | (None, None) => {}
        (Some(want), None) => selector_by_header(want, resp, names, &mut misses),
    }
    if let (Some(want), None) = (&expect.rule, &names.headerless) {
        let got = resp.header(RULE_ID_HEADER);
        let rule = got.and_then(|id| names.rules.get(id));
        let matches = rule.is_some_and(|(sel, name)| {
            name == want && expect.selector.as_ref().is_none_or(|s| s == sel)
        });
        if !matches {
            let name = rule.map(|(sel, name)| format!("{sel}/{name}"));
            misses.push(format!(
                "rule: expected `{want}`, got {}",
                describe(got, name.as_deref())
            ));
        }
    }
    if let Some(fragment) = &expect.body_contains
        && !resp.body.contains(fragment.as_str())
    {
        misses.push(format!("bodyContains: {fragment:?} not in the body"));
    }
    if let Some(text) = &expect.body_not_contains
        && resp.body.contains(text.as_str())
    {
        misses.push(format!("bodyNotContains: {text:?} is in the body"));
    }
    pattern_misses(expect, resp, &mut misses);
    json_misses(expect, &resp.body, &mut misses);
    if let Some(received) = &expect.received {
        match serde_json::from_str::<Echo>(&resp.body) {
            Err(_) => misses.push("received: the body is not an upstream echo".to_owned()),
            Ok(echo) => {
                let fields = [
                    ("method", &received.method, &echo.method),
                    ("path", &received.path, &echo.path),
                    ("query", &received.query, &echo.query),
                ];
                for (name, want, got) in fields {
                    if let Some(want) = want
                        && want != got
                    {
                        misses.push(format!("received.{name}: expected {want:?}, got {got:?}"));
                    }
                }
                for (name, want) in &received.headers {
                    let got = echo
                        .headers
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v);
                    if got != Some(want) {
                        misses.push(format!(
                            "received.headers.{name}: expected {want:?}, got {got:?}"
                        ));
                    }
                }
            }
        }
    }
    if misses.is_empty() {
        return Ok(());
    }
    let hint = match gateway_error.map(|e| e.code) {
        Some(GatewayError::RULE_NOT_FOUND) if names.selectors_moved => NO_RULE_HINT,
        Some(GatewayError::RULE_NOT_FOUND) => NO_RULE,
        _ => "",
    };
    Err(format!(
        "{}; got {}{hint}",
        misses.join("; "),
        resp.summary()
    ))
}

/// The miss of `selector: want` judged by the gateway's `x-gantry-selector-id`, if any.
fn selector_by_header(want: &str, resp: &ProbeResponse, names: &Names, misses: &mut Vec<String>) {
    let got = resp.header(SELECTOR_ID_HEADER);
    let name = got.and_then(|id| names.selectors.get(id));
    if name.map(String::as_str) != Some(want) {
        misses.push(format!(
            "selector: expected `{want}`, got {}",
            describe(got, name.map(String::as_str))
        ));
    }
}

/// The miss of `selector: want` judged by the upstream that answered (`upstream`), on a
/// gateway that does not name the selector; `owners` identifies `want`.
fn selector_by_upstream(want: &str, upstream: Option<&str>, owners: &Owners) -> Option<String> {
    let got = match upstream {
        None => "no upstream answered".to_owned(),
        Some(up) => match owners.owner(up) {
            Some(owner) if owner == want => return None,
            Some(owner) => format!("upstream {up}, which only `{owner}` routes to"),
            None => format!("upstream {up}, which `{want}` never routes to"),
        },
    };
    Some(format!(
        "selector: expected `{want}` (judged by the upstream that answered: the target names \
         no selector), got {got}"
    ))
}

/// Added to a miss on a -102 answer.
const NO_RULE: &str = " (-102: a selector matched but none of its rules did)";

/// Added instead of [`NO_RULE`] once a step created a selector or changed one's conditions or
/// plugin: the usual cause when a route was moved.
const NO_RULE_HINT: &str = " (-102: a selector matched but none of its rules did; a step \
    created a selector or changed one's conditions or plugin: its rules' conditions usually \
    need changing too, with `updateRule`, or its rules had not reached the gateway yet, which \
    the admin publishes after the selector)";

/// The regular expressions of `bodyMatches` and `headersMatch` the answer misses, each naming
/// its pattern and the value it was matched against (the validator has compiled every
/// pattern; one that does not compile is a miss too).
fn pattern_misses(expect: &Expect, resp: &ProbeResponse, misses: &mut Vec<String>) {
    let matches = |pattern: &str, value: &str| {
        regex::Regex::new(pattern)
            .map(|re| re.is_match(value))
            .map_err(|e| format!("invalid regular expression /{pattern}/: {e}"))
    };
    if let Some(pattern) = &expect.body_matches {
        match matches(pattern, &resp.body) {
            Ok(true) => {}
            Ok(false) => misses.push(format!(
                "bodyMatches: /{pattern}/ does not match the body {:?}",
                cut(&resp.body, SUMMARY_BODY_CHARS)
            )),
            Err(e) => misses.push(format!("bodyMatches: {e}")),
        }
    }
    for (name, pattern) in &expect.headers_match {
        let miss = match resp.header(name) {
            None => format!("/{pattern}/ expected, got none (no such header)"),
            Some(value) => match matches(pattern, value) {
                Ok(true) => continue,
                Ok(false) => format!("/{pattern}/ does not match {value:?}"),
                Err(e) => e,
            },
        };
        misses.push(format!("headersMatch.{name}: {miss}"));
    }
}

/// The `json` expectations the body misses: a body that is not JSON, a path that names
/// nothing, or a value that differs.
fn json_misses(expect: &Expect, body: &str, misses: &mut Vec<String>) {
    if expect.json.is_empty() {
        return;
    }
    let doc = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(doc) => doc,
        Err(e) => {
            misses.push(format!("json: the body is not JSON ({e})"));
            return;
        }
    };
    for (path, want) in &expect.json {
        let found = path.parse::<JsonPath>().map(|p| p.find(&doc).cloned());
        match found {
            Ok(Some(got)) if &got == want => {}
            Ok(Some(got)) => misses.push(format!("json.{path}: expected {want}, got {got}")),
            Ok(None) => misses.push(format!(
                "json.{path}: expected {want}, but the path names nothing"
            )),
            Err(e) => misses.push(format!("json: {e}")),
        }
    }
}

/// `` `name` `` for a known id, `id <x> (not made by this scenario)` otherwise, `none` without one.
fn describe(id: Option<&str>, name: Option<&str>) -> String {
    match (id, name) {
        (_, Some(name)) => format!("`{name}`"),
        (Some(id), None) => format!("id {id} (not made by this scenario)"),
        (None, None) => "none (no such header)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::scenario::ast::{Received, UpstreamExpect};

    fn routed(upstream: &str, path: &str) -> ProbeResponse {
        let echo = Echo {
            upstream: upstream.to_owned(),
            method: "GET".to_owned(),
            path: path.to_owned(),
            query: "a=1".to_owned(),
            headers: BTreeMap::from([("x-user".to_owned(), "bob".to_owned())]),
            body: String::new(),
        };
        ProbeResponse {
            status: 200,
            headers: vec![(UPSTREAM_HEADER.to_owned(), upstream.to_owned())],
            body: serde_json::to_string(&echo).unwrap(),
        }
    }

    fn gateway_error(status: u16, err: &GatewayError) -> ProbeResponse {
        ProbeResponse {
            status,
            headers: vec![],
            body: serde_json::to_string(err).unwrap(),
        }
    }

    #[test]
    fn status_and_upstream_match() {
        let e = Expect {
            status: Some(200),
            upstream: Some("alpha".into()),
            ..Default::default()
        };
        assert_eq!(judge(&e, &routed("alpha", "/a"), &Names::default()), Ok(()));
        let miss = judge(&e, &routed("beta", "/a"), &Names::default()).unwrap_err();
        assert!(
            miss.starts_with("upstream: expected alpha, got beta; got HTTP 200 from upstream beta"),
            "{miss}"
        );
    }

    /// A ShenYu answer read in gantry's terms: the upstream from the echo body, a 200 error
    /// body with gantry's status; and the same answers judged without that reading fail.
    #[test]
    fn shenyu_answers_read_in_gantry_terms() {
        let absent = Expect {
            status: Some(404),
            route: Some(Route::Absent),
            code: Some(GatewayError::SELECTOR_NOT_FOUND),
            ..Default::default()
        };
        let shenyu = gateway_error(200, &GatewayError::selector_not_found("divide"));
        let miss = judge(
            &absent,
            &shenyu.clone().in_gantry_terms(false),
            &Names::default(),
        );
        assert!(
            miss.unwrap_err()
                .starts_with("status: expected 404, got 200")
        );
        let read = shenyu.in_gantry_terms(true);
        assert_eq!(read.status, 404);
        assert_eq!(judge(&absent, &read, &Names::default()), Ok(()));
        // A 200 from an upstream stays a 200, whatever the reading.
        let mut headerless = routed("alpha", "/a");
        headerless.headers.clear();
        let read = headerless.clone().in_gantry_terms(true);
        assert_eq!(read.status, 200);
        let upstream = Expect {
            upstream: Some("alpha".into()),
            ..Default::default()
        };
        assert!(judge(&upstream, &headerless, &Names::default()).is_err());
        assert_eq!(judge(&upstream, &read, &Names::default()), Ok(()));
        let wrong = Expect {
            upstream: Some("beta".into()),
            ..Default::default()
        };
        assert!(judge(&wrong, &read, &Names::default()).is_err());
        // A header already there is the upstream's word, not replaced by the body.
        let mut both = routed("alpha", "/a");
        both.headers = vec![(UPSTREAM_HEADER.to_owned(), "gamma".to_owned())];
        assert_eq!(
            both.in_gantry_terms(false).header(UPSTREAM_HEADER),
            Some("gamma")
        );
    }

    #[test]
    fn route_absent_means_107_or_102() {
        let e = Expect {
            route: Some(Route::Absent),
            ..Default::default()
        };
        assert_eq!(
            judge(
                &e,
                &gateway_error(404, &GatewayError::selector_not_found("divide")),
                &Names::default()
            ),
            Ok(())
        );
        assert_eq!(
            judge(
                &e,
                &gateway_error(404, &GatewayError::rule_not_found("divide")),
                &Names::default()
            ),
            Ok(())
        );
        let miss = judge(
            &e,
            &gateway_error(503, &GatewayError::no_healthy_upstream()),
            &Names::default(),
        )
        .unwrap_err();
        assert!(
            miss.starts_with("route: expected absent (gateway code -107 or -102); got HTTP 503"),
            "{miss}"
        );
        assert!(judge(&e, &routed("alpha", "/a"), &Names::default()).is_err());
    }

    #[test]
    fn route_present_needs_an_upstream() {
        let e = Expect {
            route: Some(Route::Present),
            ..Default::default()
        };
        assert_eq!(judge(&e, &routed("alpha", "/a"), &Names::default()), Ok(()));
        let miss = judge(
            &e,
            &gateway_error(404, &GatewayError::selector_not_found("divide")),
            &Names::default(),
        )
        .unwrap_err();
        assert!(miss.contains("route: expected present"), "{miss}");
    }

    #[test]
    fn a_long_body_is_cut_and_says_so() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("abcdef", 3), "abc… (3 more bytes)");
        assert_eq!(cut("ééé", 1), "é… (4 more bytes)");
    }

    #[test]
    fn code_and_body_contains() {
        let e = Expect {
            code: Some(-119),
            body_contains: Some("healthy".into()),
            ..Default::default()
        };
        assert_eq!(
            judge(
                &e,
                &gateway_error(503, &GatewayError::no_healthy_upstream()),
                &Names::default()
            ),
            Ok(())
        );
        let miss = judge(&e, &routed("alpha", "/a"), &Names::default()).unwrap_err();
        assert!(
            miss.contains("code: expected -119, got no gateway error body"),
            "{miss}"
        );
        assert!(
            miss.contains("bodyContains: \"healthy\" not in the body"),
            "{miss}"
        );
    }

    #[test]
    fn selector_and_rule_are_judged_by_name() {
        let names = Names {
            selectors: HashMap::from([("11".into(), "lb".into())]),
            rules: HashMap::from([
                ("21".into(), ("lb".into(), "first".into())),
                ("22".into(), ("lb".into(), "last".into())),
            ]),
            selectors_moved: false,
            headerless: None,
        };
        let mut resp = routed("alpha", "/a");
        resp.headers.push((SELECTOR_ID_HEADER.into(), "11".into()));
        resp.headers.push((RULE_ID_HEADER.into(), "22".into()));
        let e = Expect {
            selector: Some("lb".into()),
            rule: Some("last".into()),
            ..Default::default()
        };
        assert_eq!(judge(&e, &resp, &names), Ok(()));
        let e = Expect {
            rule: Some("first".into()),
            ..Default::default()
        };
        let miss = judge(&e, &resp, &names).unwrap_err();
        assert!(
            miss.starts_with("rule: expected `first`, got `lb/last`"),
            "{miss}"
        );
        resp.headers.retain(|(k, _)| k != RULE_ID_HEADER);
        resp.headers.push((RULE_ID_HEADER.into(), "99".into()));
        let miss = judge(&e, &resp, &names).unwrap_err();
        assert!(
            miss.starts_with("rule: expected `first`, got id 99 (not made by this scenario)"),
            "{miss}"
        );
        let miss = judge(&e, &routed("alpha", "/a"), &Names::default()).unwrap_err();
        assert!(
            miss.starts_with("rule: expected `first`, got none (no such header)"),
            "{miss}"
        );
    }

    #[test]
    fn received_headers_match_case_insensitively_and_all_misses_are_listed() {
        let mut r = Received {
            path: Some("/a".into()),
            query: Some("a=1".into()),
            ..Default::default()
        };
        r.headers.insert("X-User".into(), "bob".into());
        let e = Expect {
            received: Some(r.clone()),
            ..Default::default()
        };
        assert_eq!(judge(&e, &routed("alpha", "/a"), &Names::default()), Ok(()));
        r.method = Some("POST".into());
        r.headers.insert("X-User".into(), "alice".into());
        let miss = judge(
            &Expect {
                received: Some(r),
                ..Default::default()
            },
            &routed("alpha", "/a"),
            &Names::default(),
        )
        .unwrap_err();
        assert!(
            miss.contains("received.method: expected \"POST\", got \"GET\""),
            "{miss}"
        );
        assert!(
            miss.contains("received.headers.X-User: expected \"alice\", got Some(\"bob\")"),
            "{miss}"
        );
    }

    #[test]
    fn a_miss_on_rule_not_found_blames_a_moved_selector_only_after_one_moved() {
        let e = Expect {
            upstream: Some("alpha".into()),
            ..Default::default()
        };
        let no_rule = gateway_error(404, &GatewayError::rule_not_found("divide"));
        let moved = Names {
            selectors_moved: true,
            ..Names::default()
        };
        let miss = judge(&e, &no_rule, &moved).unwrap_err();
        assert!(miss.ends_with(NO_RULE_HINT), "{miss}");
        let names = Names::default();
        let miss = judge(&e, &no_rule, &names).unwrap_err();
        assert!(miss.ends_with(NO_RULE), "no step moved a selector: {miss}");
        assert!(!miss.contains("updateRule"), "{miss}");
        let no_selector = gateway_error(404, &GatewayError::selector_not_found("divide"));
        let miss = judge(&e, &no_selector, &names).unwrap_err();
        assert!(!miss.contains("updateRule"), "{miss}");
    }

    #[test]
    fn upstream_one_of_several_or_not_one() {
        let any = Expect {
            upstream: Some(UpstreamExpect::AnyOf(vec!["alpha".into(), "beta".into()])),
            ..Default::default()
        };
        let names = Names::default();
        assert_eq!(judge(&any, &routed("beta", "/a"), &names), Ok(()));
        let miss = judge(&any, &routed("gamma", "/a"), &names).unwrap_err();
        assert!(
            miss.starts_with("upstream: expected alpha or beta, got gamma"),
            "{miss}"
        );
        let not = Expect {
            upstream: Some(UpstreamExpect::NoneOf(vec!["alpha".into()])),
            ..Default::default()
        };
        assert_eq!(judge(&not, &routed("beta", "/a"), &names), Ok(()));
        let miss = judge(&not, &routed("alpha", "/a"), &names).unwrap_err();
        assert!(
            miss.starts_with("upstream: expected any upstream but alpha, got alpha"),
            "{miss}"
        );
        // No upstream answering is not "another upstream".
        let err = gateway_error(404, &GatewayError::selector_not_found("divide"));
        let miss = judge(&not, &err, &names).unwrap_err();
        assert!(miss.contains("got none"), "{miss}");
    }

    #[test]
    fn response_headers_and_a_text_the_body_must_not_contain() {
        let mut e = Expect {
            headers: BTreeMap::from([("X-Gantry-Upstream".into(), "alpha".into())]),
            body_not_contains: Some("secret".into()),
            ..Default::default()
        };
        let names = Names::default();
        assert_eq!(judge(&e, &routed("alpha", "/a"), &names), Ok(()));
        let miss = judge(&e, &routed("beta", "/secret"), &names).unwrap_err();
        assert!(
            miss.contains("headers.X-Gantry-Upstream: expected \"alpha\", got \"beta\""),
            "{miss}"
        );
        assert!(
            miss.contains("bodyNotContains: \"secret\" is in the body"),
            "{miss}"
        );
        e.headers.insert("x-missing".into(), "1".into());
        let miss = judge(&e, &routed("alpha", "/a"), &names).unwrap_err();
        assert!(
            miss.starts_with("headers.x-missing: expected \"1\", got none (no such header)"),
            "{miss}"
        );
    }

    #[test]
    fn json_paths_must_exist_and_hold_the_value() {
        let mut e = Expect {
            json: BTreeMap::from([
                ("$.path".into(), serde_json::json!("/a")),
                ("$.headers['x-user']".into(), serde_json::json!("bob")),
            ]),
            ..Default::default()
        };
        let names = Names::default();
        assert_eq!(judge(&e, &routed("alpha", "/a"), &names), Ok(()));
        let miss = judge(&e, &routed("alpha", "/b"), &names).unwrap_err();
        assert!(
            miss.starts_with("json.$.path: expected \"/a\", got \"/b\""),
            "{miss}"
        );
        e.json.insert("$.nope[0]".into(), serde_json::json!(1));
        let miss = judge(&e, &routed("alpha", "/a"), &names).unwrap_err();
        assert!(
            miss.starts_with("json.$.nope[0]: expected 1, but the path names nothing"),
            "{miss}"
        );
        let not_json = ProbeResponse {
            status: 200,
            headers: vec![],
            body: "plain".into(),
        };
        let miss = judge(&e, &not_json, &names).unwrap_err();
        assert!(miss.starts_with("json: the body is not JSON"), "{miss}");
    }

    #[test]
    fn body_and_header_patterns_must_match_and_a_miss_names_pattern_and_value() {
        let names = Names::default();
        let e = Expect {
            body_matches: Some(r#"^\{"code":-10[27],"#.into()),
            headers_match: BTreeMap::from([("Content-Type".into(), "^application/json".into())]),
            ..Default::default()
        };
        let mut no_selector = gateway_error(404, &GatewayError::selector_not_found("divide"));
        no_selector
            .headers
            .push(("content-type".into(), "application/json".into()));
        assert_eq!(judge(&e, &no_selector, &names), Ok(()));
        // An upstream's answer: the body is an echo, no content type at all.
        let miss = judge(&e, &routed("alpha", "/a"), &names).unwrap_err();
        assert!(
            miss.starts_with(r#"bodyMatches: /^\{"code":-10[27],/ does not match the body "{\"upstream\":\"alpha\""#),
            "{miss}"
        );
        assert!(
            miss.contains(
                "headersMatch.Content-Type: /^application/json/ expected, got none (no such header)"
            ),
            "{miss}"
        );
        let mut text = no_selector.clone();
        text.headers = vec![("content-type".into(), "text/plain".into())];
        let miss = judge(&e, &text, &names).unwrap_err();
        assert!(
            miss.starts_with(
                r#"headersMatch.Content-Type: /^application/json/ does not match "text/plain""#
            ),
            "{miss}"
        );
        let broken = Expect {
            body_matches: Some("(".into()),
            ..Default::default()
        };
        let miss = judge(&broken, &no_selector, &names).unwrap_err();
        assert!(
            miss.starts_with("bodyMatches: invalid regular expression /(/"),
            "{miss}"
        );
    }

    /// Routes of a case: `lb` over alpha and beta, `solo` over gamma, `shared` over beta.
    fn owners(with_shared: bool) -> Owners {
        let mut owners = Owners::default();
        owners.insert("lb", "alpha");
        owners.insert("lb", "beta");
        owners.insert("solo", "gamma");
        if with_shared {
            owners.insert("shared", "beta");
        }
        owners
    }

    #[test]
    fn an_upstream_only_one_selector_routes_to_identifies_it() {
        let o = owners(false);
        assert!(o.identifies("lb") && o.identifies("solo"));
        assert!(!o.identifies("nope"));
        assert_eq!(o.owner("beta"), Some("lb"));
        let o = owners(true);
        assert!(!o.identifies("lb") && !o.identifies("shared") && o.identifies("solo"));
        assert_eq!(o.owner("beta"), None);
        assert_eq!(o.owner("alpha"), Some("lb"));
    }

    /// On a gateway without route headers, `rule` is never judged and `selector` only
    /// through an upstream that identifies it; a wrong upstream still fails.
    #[test]
    fn without_route_headers_selector_is_judged_by_the_upstream_and_rule_not_at_all() {
        let names = Names {
            headerless: Some(owners(false)),
            ..Names::default()
        };
        let e = Expect {
            selector: Some("lb".into()),
            rule: Some("first".into()),
            ..Default::default()
        };
        assert_eq!(names.unjudged(&e), ["rule"]);
        assert_eq!(
            names.judged_part(&e),
            Expect {
                selector: Some("lb".into()),
                ..Default::default()
            }
        );
        // No header at all, yet the selector is judged: alpha is only lb's.
        assert_eq!(judge(&e, &routed("alpha", "/a"), &names), Ok(()));
        let miss = judge(&e, &routed("gamma", "/a"), &names).unwrap_err();
        assert!(
            miss.starts_with("selector: expected `lb` (judged by the upstream that answered: the target names no selector), got upstream gamma, which only `solo` routes to"),
            "{miss}"
        );
        let err = gateway_error(404, &GatewayError::selector_not_found("divide"));
        let miss = judge(&e, &err, &names).unwrap_err();
        assert!(miss.contains("got no upstream answered"), "{miss}");
        // beta shared with another selector: `lb` cannot be told apart, so it is not judged.
        let shared = Names {
            headerless: Some(owners(true)),
            ..Names::default()
        };
        assert_eq!(shared.unjudged(&e), ["selector", "rule"]);
        assert!(shared.judged_part(&e).is_empty());
        assert_eq!(judge(&e, &routed("gamma", "/a"), &shared), Ok(()));
        // With the headers (names.headerless None), the same answer fails for want of them.
        assert!(judge(&e, &routed("alpha", "/a"), &Names::default()).is_err());
        let reason = unjudged_reason(&["selector", "rule"], "partly judged");
        assert_eq!(
            crate::conformance::missing_features(&reason),
            ["routing.routeHeaders"]
        );
        assert!(
            reason.contains("not judged: `selector`, `rule`"),
            "{reason}"
        );
    }
}
