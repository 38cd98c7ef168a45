//! An independent reference model of ShenYu's rule matching, written from the semantics
//! document (`shenyu-semantics.md` §1–§6) and **not** from the gateway's code: what a divide
//! rule's conditions and match mode decide for a request — it matches, it does not, or the
//! evaluation fails with an HTTP status.
//!
//! The entry points are [`Reference::rule`] and, for the choice among several selectors and
//! rules (§1), [`Reference::choose`] (`choice`). The pieces, one per file: [`Request`] (the request
//! shape), `param` (value extraction, §3) with `query` (Spring query parsing), `judge` (the
//! operators, §2/§4) with `java` (trim and isBlank), `time` (dates), `dialect` (re2j and
//! java.util.regex on the Rust engine), `ant_path` (`AntPathMatcher`, §5.1) and
//! `path_pattern` (`PathPattern`, §5.2).
//!
//! Where gantry deliberately differs from ShenYu (README, "Compatibility notes"), the model
//! follows gantry: errors carry real HTTP statuses (400 / 500 rather than ShenYu's 200 with a
//! code), and `TimeAfter` with an empty `paramName` compares the current time.
//!
//! Outside the model (answered [`Outcome::Unmodelled`], never guessed): `X-Forwarded-For`
//! for `ip`/`host`, a few regex constructs whose dialect behaviour is not documented
//! (`\b`, `\Q…\E`, back-references, class set operations).

mod ant_path;
mod choice;
mod dialect;
mod java;
mod judge;
mod param;
mod path_pattern;
mod query;
mod request;
mod time;

use std::fmt;

use chrono::NaiveDateTime;
use model::ConditionData;

pub use choice::{Choice, DEFAULT_RULE_ID, Rule, Selector};
pub use request::Request;

use judge::Judge;

/// What the gateway should do with a request, for one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The rule matches: the upstream answers (HTTP 200 from the echo upstream).
    Match,
    /// The rule does not match: HTTP 404 with code -102 (the rule is the selector's only one).
    NoMatch,
    /// Evaluating a condition failed: HTTP 400 (ShenYu's `IllegalArgumentException`s: unknown
    /// names, path-pattern parse errors, bad `%` escapes) or 500 (everything else).
    Error {
        /// The HTTP status.
        status: u16,
        /// What failed (ShenYu's exception, roughly).
        reason: String,
    },
    /// The request or condition uses something the model does not cover.
    Unmodelled {
        /// What.
        reason: String,
    },
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Match => f.write_str("match (HTTP 200 from the upstream)"),
            Outcome::NoMatch => f.write_str("no match (HTTP 404, code -102)"),
            Outcome::Error { status, reason } => write!(f, "error HTTP {status} ({reason})"),
            Outcome::Unmodelled { reason } => write!(f, "not modelled: {reason}"),
        }
    }
}

/// A deliberate mistake in the model, to prove that a property comparing it with the gateway
/// fails when the two disagree. Only the planted-bug test uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// `exclude` answers true when the request value is missing or blank (ShenYu: false, like
    /// every operator but `isBlank`).
    ExcludeMatchesMissingValue,
    /// [`Reference::choose`] takes selectors and rules in the order given, not by `sort`.
    IgnoresSort,
}

/// Why a condition could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// An exception ShenYu's error handler turns into this HTTP status.
    Status { status: u16, message: String },
    /// Outside the model.
    Unmodelled(String),
}

impl Failure {
    fn bad_request(message: String) -> Self {
        Failure::Status {
            status: 400,
            message,
        }
    }

    fn internal(message: String) -> Self {
        Failure::Status {
            status: 500,
            message,
        }
    }

    #[cfg(test)]
    fn status(&self) -> Option<u16> {
        match self {
            Failure::Status { status, .. } => Some(*status),
            Failure::Unmodelled(_) => None,
        }
    }
}

impl From<Failure> for Outcome {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Status { status, message } => Outcome::Error {
                status,
                reason: message,
            },
            Failure::Unmodelled(reason) => Outcome::Unmodelled { reason },
        }
    }
}

/// The reference model.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    bug: Option<PlantedBug>,
    now: Option<NaiveDateTime>,
}

impl Reference {
    /// The faithful model; time conditions compare with the local clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// The model with `bug` planted (for the test that proves a disagreement is caught).
    pub fn with_planted_bug(bug: PlantedBug) -> Self {
        Self {
            bug: Some(bug),
            now: None,
        }
    }

    /// The model with a fixed "now" (the gateway's local time) for time conditions.
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
    }

    fn now(&self) -> NaiveDateTime {
        self.now
            .unwrap_or_else(|| chrono::Local::now().naive_local())
    }

    /// What a rule with `conditions` and `match_mode` (0 and, 1 or, anything else and) decides
    /// for `req`, conditions evaluated left to right with short-circuit (§6): a condition after
    /// the deciding one is never evaluated, so its errors do not surface. An empty list
    /// matches in `and` mode and not in `or` mode.
    pub fn rule(&self, match_mode: i32, conditions: &[ConditionData], req: &Request) -> Outcome {
        let or = match_mode == 1;
        for c in conditions {
            match self.condition(c, req) {
                Ok(hit) if hit == or => return if or { Outcome::Match } else { Outcome::NoMatch },
                Ok(_) => {}
                Err(f) => return f.into(),
            }
        }
        if or { Outcome::NoMatch } else { Outcome::Match }
    }

    /// One condition (`PredicateJudgeFactory.judge(c, extract(c))`, §2): the value is extracted
    /// first (unknown param types fail here), a blank operator is false, the operator is
    /// looked up (unknown ones fail even when the value is missing), a blank value is false
    /// for every operator but `isBlank`, then the judge decides.
    fn condition(&self, c: &ConditionData, req: &Request) -> Result<bool, Failure> {
        let real = param::extract(&c.param_type, &c.param_name, req)?;
        if java::is_blank(Some(&c.operator)) {
            return Ok(false);
        }
        let judge = Judge::lookup(&c.operator)?;
        if judge != Judge::IsBlank && java::is_blank(real.as_deref()) {
            let planted =
                judge == Judge::Exclude && self.bug == Some(PlantedBug::ExcludeMatchesMissingValue);
            return Ok(planted);
        }
        judge.judge(c, real.as_deref(), self.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(t: &str, op: &str, name: &str, value: &str) -> ConditionData {
        ConditionData::new(t, op, name, value)
    }

    fn req() -> Request {
        Request::new("GET", "/a/b?q=1").with_header("x-a", "yes")
    }

    fn model() -> Reference {
        Reference::new().at(time::parse("2026-06-01 12:00:00").unwrap())
    }

    #[test]
    fn and_or_short_circuit() {
        let hit = c("header", "=", "x-a", "yes");
        let miss = c("header", "=", "x-a", "no");
        let boom = c("header", "TimeBefore", "x-a", "2030-01-01 00:00:00");
        let m = model();
        assert_eq!(
            m.rule(0, &[hit.clone(), miss.clone()], &req()),
            Outcome::NoMatch
        );
        assert_eq!(
            m.rule(0, &[miss.clone(), boom.clone()], &req()),
            Outcome::NoMatch
        );
        assert!(matches!(
            m.rule(0, &[hit.clone(), boom.clone()], &req()),
            Outcome::Error { status: 500, .. }
        ));
        assert_eq!(
            m.rule(1, &[hit.clone(), boom.clone()], &req()),
            Outcome::Match
        );
        assert!(matches!(
            m.rule(1, &[miss.clone(), boom], &req()),
            Outcome::Error { status: 500, .. }
        ));
        assert_eq!(
            m.rule(1, std::slice::from_ref(&miss), &req()),
            Outcome::NoMatch
        );
        // Any match mode but 1 is `and`.
        assert_eq!(m.rule(7, &[hit, miss], &req()), Outcome::NoMatch);
        assert_eq!(m.rule(0, &[], &req()), Outcome::Match);
        assert_eq!(m.rule(1, &[], &req()), Outcome::NoMatch);
    }

    #[test]
    fn missing_values_are_false_except_for_is_blank() {
        let m = model();
        for op in [
            "=",
            "contains",
            "exclude",
            "match",
            "regex",
            "TimeBefore",
            "pathPattern",
        ] {
            assert_eq!(
                m.rule(0, &[c("header", op, "x-b", "a")], &req()),
                Outcome::NoMatch,
                "{op}"
            );
        }
        assert_eq!(
            m.rule(0, &[c("header", "isBlank", "x-b", "")], &req()),
            Outcome::Match
        );
        assert_eq!(
            m.rule(0, &[c("query", "isBlank", "r", "")], &req()),
            Outcome::Match
        );
        assert_eq!(
            m.rule(0, &[c("query", "isBlank", "q", "")], &req()),
            Outcome::NoMatch
        );
        // The operator is looked up before the blank check.
        assert!(matches!(
            m.rule(0, &[c("header", ">", "x-b", "a")], &req()),
            Outcome::Error { status: 400, .. }
        ));
        assert_eq!(
            m.rule(0, &[c("header", " ", "x-a", "a")], &req()),
            Outcome::NoMatch
        );
    }

    #[test]
    fn planted_bug_flips_exclude_on_missing_values() {
        let cond = [c("header", "exclude", "x-b", "a")];
        assert_eq!(model().rule(0, &cond, &req()), Outcome::NoMatch);
        let buggy = Reference::with_planted_bug(PlantedBug::ExcludeMatchesMissingValue);
        assert_eq!(buggy.rule(0, &cond, &req()), Outcome::Match);
    }
}
