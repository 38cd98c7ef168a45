//! The burst judge: requests sent all at once, their answers counted per HTTP status, must
//! split exactly as expected (`{200: 3, 429: 2}`: three in, two denied by a concurrency
//! limit). A request that got no answer at all is a failure of its own.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, de};

use super::spec::{CheckSpec, MIN_COUNT, Measured, NoVerdict, Observe, ObserveCx, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::request::RequestSpec;

/// `burst:` send `requests` copies of `request` at once (each on its own connection) and count
/// the answers per HTTP status: the counts must be exactly `statuses`. Slow answers that keep
/// requests in flight come from the echo upstream's delay header
/// (`headers: { x-gantry-delay: alpha=2s }`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BurstSpec {
    /// The request.
    pub request: RequestSpec,
    /// How many copies are in flight at once (1 to 256).
    #[schemars(range(min = MIN_COUNT, max = MAX_BURST))]
    pub requests: u32,
    /// The expected number of answers per HTTP status, e.g. `{ 200: 3, 429: 2 }`; they add
    /// up to `requests`.
    pub statuses: BTreeMap<u16, u32>,
}

/// The expected answers per status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BurstJudge<'a> {
    /// Answers per HTTP status.
    pub statuses: &'a BTreeMap<u16, u32>,
}

/// What a burst got.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Requests sent.
    pub sent: u32,
    /// Answers per HTTP status.
    #[serde(deserialize_with = "statuses")]
    pub statuses: BTreeMap<u16, u32>,
    /// Requests without an answer.
    pub failed: u32,
}

/// Reads [`Stats::statuses`] from a JSON report, whose object keys are strings: inside the
/// internally tagged [`Measurements`] serde hands them over as strings, which it does not read
/// as numbers.
fn statuses<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u16, u32>, D::Error> {
    (BTreeMap::<String, u32>::deserialize(d)?.into_iter())
        .map(|(status, n)| match status.parse() {
            Ok(status) => Ok((status, n)),
            Err(_) => Err(de::Error::custom(format!(
                "`{status}` is not an HTTP status"
            ))),
        })
        .collect()
}

impl Judge for BurstJudge<'_> {
    /// Each request's status, or why it got none.
    type Observation = Vec<Result<u16, String>>;

    fn judge(&self, answers: &Self::Observation) -> Verdict {
        let mut stats = Stats {
            sent: u32::try_from(answers.len()).unwrap_or(u32::MAX),
            ..Stats::default()
        };
        let mut failures = Vec::new();
        for answer in answers {
            match answer {
                Ok(status) => *stats.statuses.entry(*status).or_default() += 1,
                Err(e) => {
                    stats.failed += 1;
                    failures.push(format!("a request got no answer: {e}"));
                }
            }
        }
        if stats.statuses != *self.statuses {
            failures.insert(
                0,
                format!(
                    "answers per status: expected {}, got {}",
                    show(self.statuses),
                    show(&stats.statuses)
                ),
            );
        }
        Verdict {
            failures,
            measurements: Measurements::Burst(stats),
        }
    }
}

/// `{200: 3, 429: 2}`.
fn show(statuses: &BTreeMap<u16, u32>) -> String {
    let parts: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}: {n}")).collect();
    format!("{{{}}}", parts.join(", "))
}

/// The most requests a burst check sends at once.
const MAX_BURST: u32 = 256;

impl CheckSpec for BurstSpec {
    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        if !(MIN_COUNT..=MAX_BURST).contains(&self.requests) {
            cx.problem(
                format!("{at}.requests"),
                format!(
                    "must be between {MIN_COUNT} and {MAX_BURST}, got {}",
                    self.requests
                ),
            );
        }
        for status in self.statuses.keys() {
            if !(100..=599).contains(status) {
                cx.problem(
                    format!("{at}.statuses.{status}"),
                    "not an HTTP status (100 to 599)".to_owned(),
                );
            }
        }
        let expected: u64 = self.statuses.values().map(|&n| u64::from(n)).sum();
        if expected != u64::from(self.requests) {
            cx.problem(
                format!("{at}.statuses"),
                format!(
                    "the counts add up to {expected}, but {} requests are sent",
                    self.requests
                ),
            );
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "{} sent at once: {}",
            self.sent,
            self.statuses
                .iter()
                .map(|(s, n)| format!("{n} × {s}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Every copy sent at once, each on its own connection.
impl<C: ObserveCx> Observe<C> for BurstSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let cx = &*cx;
        let answers =
            futures_util::future::join_all((0..self.requests).map(|_| cx.send(&self.request)))
                .await;
        let statuses: Vec<Result<u16, String>> =
            answers.into_iter().map(|a| a.map(|r| r.status)).collect();
        Ok(BurstJudge {
            statuses: &self.statuses,
        }
        .judge(&statuses))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_must_be_exact() {
        let expected = BTreeMap::from([(200, 3), (429, 2)]);
        let judge = BurstJudge {
            statuses: &expected,
        };
        let right = vec![Ok(200), Ok(429), Ok(200), Ok(429), Ok(200)];
        let verdict = judge.judge(&right);
        assert!(verdict.passed(), "{:?}", verdict.failures);
        assert_eq!(
            verdict.measurements,
            Measurements::Burst(Stats {
                sent: 5,
                statuses: expected.clone(),
                failed: 0
            })
        );
        // A limiter that lets everything through (or leaks a slot) fails.
        let all_in = vec![Ok(200); 5];
        assert_eq!(
            judge.judge(&all_in).failures,
            vec!["answers per status: expected {200: 3, 429: 2}, got {200: 5}".to_owned()]
        );
        let one_lost = vec![Ok(200), Ok(200), Ok(200), Ok(429), Err("reset".to_owned())];
        assert_eq!(
            judge.judge(&one_lost).failures,
            vec![
                "answers per status: expected {200: 3, 429: 2}, got {200: 3, 429: 1}".to_owned(),
                "a request got no answer: reset".to_owned()
            ]
        );
    }
}
