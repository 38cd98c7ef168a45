//! What a scenario upstream does besides echoing: the `behave` entries of a case file's
//! `upstreams` (docs/scenarios.md, "Upstream behaviour"). The first entry whose `path` and
//! `method` match a request decides the answer; a request no entry matches gets the echo.
//! How an entry is served is the upstream's business (`crate::upstream`).

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Headers a behaviour may not set: the harness's own (`x-gantry-*`) and those that frame
/// the message.
const RESERVED_HEADERS: &[&str] = &["content-length", "transfer-encoding", "connection"];

/// One entry of an upstream's `behave` list.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Behaviour {
    /// Only requests with exactly this path (default: any path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only requests with this method, upper case (default: any method).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Wait this long before answering (`2s`); without `status`, `body`, `headers` or
    /// `fault` the answer is then the echo.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "delay_text")]
    #[schemars(with = "Option<super::DurationText>")]
    pub delay: Option<Duration>,
    /// Answer with this status (200–599) instead of the echo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The answer's body (default empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The answer's headers (besides `x-gantry-upstream`, which every answer carries).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Drop the connection without answering: `close` (FIN) or `reset` (RST).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<UpstreamFault>,
}

/// How a faulty upstream ends a connection instead of answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamFault {
    /// Close the connection (FIN) without a response.
    Close,
    /// Reset the connection (RST) without a response.
    Reset,
}

impl Behaviour {
    /// What is wrong with this entry, as `(field, message)` pairs.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        if let Some(p) = &self.path
            && (!p.starts_with('/') || p.contains('?') || p.contains('#'))
        {
            problems.push((
                "path",
                format!("`{p}` must start with `/` and hold no query or fragment"),
            ));
        }
        if let Some(m) = &self.method
            && (m.is_empty() || !m.bytes().all(|b| b.is_ascii_uppercase()))
        {
            problems.push((
                "method",
                format!("`{m}` is not an upper-case method such as GET"),
            ));
        }
        if let Some(s) = self.status
            && !(200..=599).contains(&s)
        {
            problems.push(("status", format!("{s} is not a final status (200–599)")));
        }
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                problems.push(("headers", format!("`{name}` is not a header name")));
            } else if lower.starts_with("x-gantry-") || RESERVED_HEADERS.contains(&lower.as_str()) {
                problems.push((
                    "headers",
                    format!("`{name}` is reserved (x-gantry-*, framing headers)"),
                ));
            }
            if axum::http::HeaderValue::from_str(value).is_err() {
                problems.push(("headers", format!("the value of `{name}` is not valid")));
            }
        }
        let answers = self.status.is_some() || self.body.is_some() || !self.headers.is_empty();
        match self.fault {
            Some(_) if answers => problems.push((
                "fault",
                "a dropped connection has no `status`, `body` or `headers`".to_owned(),
            )),
            Some(_) if self.delay.is_some() => problems.push((
                "fault",
                "a dropped connection cannot be delayed (wiremock drops at once)".to_owned(),
            )),
            None if !answers && self.delay.is_none() => problems.push((
                "behave",
                "the entry does nothing: give `delay`, `status`, `body`, `headers` or `fault`"
                    .to_owned(),
            )),
            _ => {}
        }
        problems
    }
}

/// Whether any of `behaviours` resets connections (its listener then needs `SO_LINGER` 0).
pub fn resets(behaviours: &[Behaviour]) -> bool {
    behaviours
        .iter()
        .any(|b| b.fault == Some(UpstreamFault::Reset))
}

/// Problems of a whole `behave` list, as `(field path under the list, message)`: each
/// entry's, and an upstream that would both close and reset.
pub fn list_problems(behaviours: &[Behaviour]) -> Vec<(String, String)> {
    let mut problems: Vec<(String, String)> = behaviours
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            b.problems().into_iter().map(move |(field, message)| {
                let at = if field == "behave" {
                    format!("[{i}]")
                } else {
                    format!("[{i}].{field}")
                };
                (at, message)
            })
        })
        .collect();
    let closes = behaviours
        .iter()
        .position(|b| b.fault == Some(UpstreamFault::Close));
    if let (Some(i), true) = (closes, resets(behaviours)) {
        problems.push((
            format!("[{i}].fault"),
            "an upstream that resets resets every connection it drops: use `reset` or \
             `close`, not both (SO_LINGER is set on its listener)"
                .to_owned(),
        ));
    }
    problems
}

/// `delay` as humantime text (`2s`, `150ms`), both ways.
mod delay_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("invalid duration `{text}`: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(yaml: &str) -> Behaviour {
        serde_norway::from_str(yaml).unwrap()
    }

    fn fields(b: &Behaviour) -> Vec<&'static str> {
        b.problems().into_iter().map(|(f, _)| f).collect()
    }

    #[test]
    fn entries_read_from_yaml_and_round_trip_through_json() {
        let b = entry(
            "{ path: /fail, method: GET, status: 503, body: down, headers: { x-a: b }, delay: 150ms }",
        );
        assert_eq!(b.delay, Some(Duration::from_millis(150)));
        assert!(b.problems().is_empty());
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<Behaviour>(&json).unwrap(), b);
        assert!(serde_norway::from_str::<Behaviour>("{ fault: explode }").is_err());
        assert!(serde_norway::from_str::<Behaviour>("{ delay: soon }").is_err());
        assert!(serde_norway::from_str::<Behaviour>("{ stauts: 503 }").is_err());
    }

    #[test]
    fn problems_name_the_field() {
        assert_eq!(fields(&entry("{ status: 99 }")), ["status"]);
        assert_eq!(fields(&entry("{ path: fail, status: 503 }")), ["path"]);
        assert_eq!(fields(&entry("{ method: get, status: 503 }")), ["method"]);
        assert_eq!(
            fields(&entry("{ headers: { x-gantry-upstream: x } }")),
            ["headers"]
        );
        assert_eq!(
            fields(&entry("{ headers: { content-length: '3' } }")),
            ["headers"]
        );
        assert_eq!(fields(&entry("{ fault: reset, status: 503 }")), ["fault"]);
        assert_eq!(fields(&entry("{ fault: close, delay: 1s }")), ["fault"]);
        assert_eq!(fields(&entry("{ path: /x }")), ["behave"]);
        assert!(entry("{ delay: 2s }").problems().is_empty());
        assert!(entry("{ path: /r, fault: reset }").problems().is_empty());
    }

    #[test]
    fn an_upstream_closes_or_resets_not_both() {
        let list = [
            entry("{ path: /a, fault: close }"),
            entry("{ path: /b, fault: reset }"),
        ];
        let problems = list_problems(&list);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "[0].fault");
        let list = [entry("{ status: 99 }"), entry("{ path: /b }")];
        let at: Vec<String> = list_problems(&list).into_iter().map(|p| p.0).collect();
        assert_eq!(at, ["[0].status", "[1]"]);
    }
}
