//! An admin's refusal of a selector or rule a case file asked for, pointed back at the case
//! file: the admin's field names (`handle[1].weight`, `selectorConditions[0].operator`) become
//! the case file's (`upstreams[1].weight`, `conditions[0].operator`) under the object's own
//! path (`setup.selectors[2]`), which the report then locates (`file:line:col`).

use crate::error::{ClientError, RunErrorKind};
use crate::scenario::ast::{RuleSpec, UpdateRule};

/// What was refused: a selector, or a rule with the case file's key for its handle
/// (`handle`, `contextPath` or `rateLimiter`).
pub(super) enum Refused {
    /// A selector.
    Selector,
    /// A rule.
    Rule(&'static str),
}

impl Refused {
    /// A rule created from `rule`.
    pub(super) fn rule(rule: &RuleSpec) -> Refused {
        Refused::Rule(handle_key(
            rule.context_path.is_some(),
            rule.rate_limiter.is_some(),
        ))
    }

    /// A rule updated by `u`.
    pub(super) fn rule_update(u: &UpdateRule) -> Refused {
        Refused::Rule(handle_key(
            u.context_path.is_some(),
            u.rate_limiter.is_some(),
        ))
    }
}

fn handle_key(context_path: bool, rate_limiter: bool) -> &'static str {
    match (context_path, rate_limiter) {
        (true, _) => "contextPath",
        (false, true) => "rateLimiter",
        (false, false) => "handle",
    }
}

/// The error for `error` answered to the request made from the case object at `at`: a
/// [`RunErrorKind::Refused`] naming the case file's field when the admin answered 4xx with a
/// field message, else `error` unchanged.
pub(super) fn refused(at: &str, what: &Refused, error: ClientError) -> RunErrorKind {
    let Some(message) = refusal(&error) else {
        return error.into();
    };
    let field = match message.split_once(": ") {
        Some((field, _)) if !field.contains(' ') => case_field(field, what),
        _ => String::new(),
    };
    let at = if field.is_empty() {
        at.to_owned()
    } else {
        format!("{at}.{field}")
    };
    RunErrorKind::Refused {
        at,
        message,
        source: Box::new(error),
    }
}

/// The admin's message when `error` is a refusal: an HTTP 4xx (gantry's admin), or an HTTP
/// 200 whose envelope has a failure code and a message (ShenYu's admin).
fn refusal(error: &ClientError) -> Option<String> {
    let message = |body: &str| {
        serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
    };
    match error {
        ClientError::Status { status, body, .. } if (400..500).contains(status) => {
            Some(message(body).unwrap_or_else(|| body.clone()))
        }
        ClientError::Body { body, .. } => message(body),
        _ => None,
    }
}

/// The case file's name for the admin's request field `field`.
fn case_field(field: &str, what: &Refused) -> String {
    let renamed = |from: &str, to: &str| {
        field
            .strip_prefix(from)
            .filter(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
            .map(|rest| format!("{to}{rest}"))
    };
    let mapped = match what {
        Refused::Selector => {
            renamed("selectorConditions", "conditions").or_else(|| renamed("handle", "upstreams"))
        }
        Refused::Rule(key) => {
            renamed("ruleConditions", "conditions").or_else(|| renamed("handle", key))
        }
    };
    mapped.unwrap_or_else(|| field.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(body: &str) -> ClientError {
        ClientError::Status {
            what: "POST /selector".into(),
            status: 400,
            body: body.into(),
        }
    }

    fn rule(src: &str) -> RuleSpec {
        serde_norway::from_str(src).unwrap()
    }

    #[test]
    fn admin_fields_become_the_case_files() {
        let cases = [
            (
                "handle[1].weight",
                Refused::Selector,
                "setup.selectors[2].upstreams[1].weight",
            ),
            (
                "selectorConditions[0].operator",
                Refused::Selector,
                "setup.selectors[2].conditions[0].operator",
            ),
            ("name", Refused::Selector, "setup.selectors[2].name"),
        ];
        for (field, what, want) in cases {
            let body = format!(r#"{{"code":400,"message":"{field}: must be >= 0, got -1"}}"#);
            match refused("setup.selectors[2]", &what, status(&body)) {
                RunErrorKind::Refused { at, message, .. } => {
                    assert_eq!(at, want);
                    assert_eq!(message, format!("{field}: must be >= 0, got -1"));
                }
                other => panic!("{other}"),
            }
        }
        let divide = rule("name: r");
        let limiter = rule(
            "name: r\nrateLimiter: { algorithmName: tokenBucket, replenishRate: 1, burstCapacity: 1 }",
        );
        for (spec, want) in [
            (&divide, "x.handle.retry"),
            (&limiter, "x.rateLimiter.retry"),
        ] {
            let body = r#"{"message":"handle.retry: must be within 0..=10, got 11"}"#;
            match refused("x", &Refused::rule(spec), status(body)) {
                RunErrorKind::Refused { at, .. } => assert_eq!(at, want),
                other => panic!("{other}"),
            }
        }
        let body = r#"{"message":"ruleConditions[1].paramValue: must not be blank"}"#;
        match refused("x", &Refused::rule(&divide), status(body)) {
            RunErrorKind::Refused { at, .. } => assert_eq!(at, "x.conditions[1].paramValue"),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn other_failures_stay_what_they_were() {
        let server = ClientError::Status {
            what: "POST /selector".into(),
            status: 500,
            body: "boom".into(),
        };
        assert!(matches!(
            refused("x", &Refused::Selector, server),
            RunErrorKind::Client(_)
        ));
        match refused("x", &Refused::Selector, status("not json at all")) {
            RunErrorKind::Refused { at, .. } => assert_eq!(at, "x"),
            other => panic!("{other}"),
        }
        // ShenYu's admin refuses with HTTP 200 and a failure code.
        let shenyu = ClientError::Body {
            what: "POST /selector".into(),
            detail: "code 500".into(),
            body: r#"{"code":500,"message":"handle[0].weight: bad"}"#.into(),
        };
        match refused("x", &Refused::Selector, shenyu) {
            RunErrorKind::Refused { at, .. } => assert_eq!(at, "x.upstreams[0].weight"),
            other => panic!("{other}"),
        }
    }
}
