//! Judges: one module per check kind (docs/scenarios.md, "Checks"). Each holds what the check
//! expects, derived from the scenario's config, and implements [`Judge`]: a pure verdict over
//! what was observed, with the measurements that go into the reports either way. The runner
//! gathers the observations ([`crate::runner`]); a judge never sends a request, so each one is
//! tested by feeding it a right and a wrong observation.
//!
//! Adding a judge: a [`crate::scenario::ast::CheckKind`] variant, a module here, a
//! [`Measurements`] variant, and one arm where the runner observes.

pub mod burst;
pub mod churn;
pub mod distribution;
pub mod hash;
pub mod latency;
pub mod probe;
pub mod round_robin;
pub mod steer;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::probe::ProbeResponse;
use crate::upstream::UPSTREAM_HEADER;

/// A verdict over observations.
pub trait Judge {
    /// What the judge looks at.
    type Observation;

    /// Passes, or lists every way the observation is wrong; measures either way.
    fn judge(&self, observation: &Self::Observation) -> Verdict;
}

/// A judge's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Every way the observation differs from the expectation (empty: passed).
    pub failures: Vec<String>,
    /// What was measured.
    pub measurements: Measurements,
}

impl Verdict {
    /// Whether nothing failed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// What a check measured, by kind (in the event stream and the JSON report).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Measurements {
    /// A probe: how many answers passed of how many sent.
    Probe {
        /// Requests sent.
        sent: u32,
        /// Answers that met the expectation.
        passed: u32,
    },
    /// The χ² goodness-of-fit test.
    Distribution(distribution::Stats),
    /// The round-robin cycle.
    RoundRobin(round_robin::Stats),
    /// Per-client upstreams against the hash ring.
    Hash(hash::Stats),
    /// Shares under a slow upstream.
    Steer(steer::Stats),
    /// Sync latency quantiles.
    Latency(latency::Stats),
    /// Answers per status of requests sent at once.
    Burst(burst::Stats),
    /// A stable route's answers and latency without and during churn.
    Churn(churn::Stats),
    /// Nothing was measured (the check was skipped or could not observe).
    None,
}

/// Answers counted by the upstream that gave them; answers no upstream gave are counted by a
/// short description (`HTTP 503 code -119`), so a judge can name them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests answered by each upstream.
    pub upstreams: BTreeMap<String, u64>,
    /// Answers without an upstream, by description.
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    /// Counts one answer.
    pub fn add(&mut self, answer: &Result<ProbeResponse, String>) {
        let key = match answer {
            Ok(resp) => match resp.header(UPSTREAM_HEADER) {
                Some(up) => {
                    *self.upstreams.entry(up.to_owned()).or_default() += 1;
                    return;
                }
                None => describe_error(resp),
            },
            Err(e) => format!("request failed: {e}"),
        };
        *self.errors.entry(key).or_default() += 1;
    }

    /// Every answer counted.
    pub fn total(&self) -> u64 {
        self.upstreams.values().sum::<u64>() + self.errors.values().sum::<u64>()
    }

    /// A failure naming the answers no upstream gave, if any.
    pub fn error_failure(&self) -> Option<String> {
        (!self.errors.is_empty()).then(|| {
            let list: Vec<String> = self
                .errors
                .iter()
                .map(|(what, n)| format!("{n} × {what}"))
                .collect();
            format!("answers without an upstream: {}", list.join(", "))
        })
    }
}

/// `HTTP 503 code -119` for a gateway error, else `HTTP <status>`.
fn describe_error(resp: &ProbeResponse) -> String {
    match serde_json::from_str::<model::GatewayError>(&resp.body) {
        Ok(e) => format!("HTTP {} code {}", resp.status, e.code),
        Err(_) => format!("HTTP {}", resp.status),
    }
}

/// `n / total` (0 when nothing was counted).
pub(crate) fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 / total as f64
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// An answer from upstream `name`.
    pub(crate) fn from(name: &str) -> Result<ProbeResponse, String> {
        Ok(ProbeResponse {
            status: 200,
            headers: vec![(UPSTREAM_HEADER.to_owned(), name.to_owned())],
            body: "{}".to_owned(),
        })
    }

    /// Counts with `n` answers from each upstream.
    pub(crate) fn counts(by: &[(&str, u64)]) -> Counts {
        Counts {
            upstreams: by.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
            errors: BTreeMap::new(),
        }
    }

    #[test]
    fn counts_split_upstreams_from_errors() {
        let mut c = Counts::default();
        c.add(&from("alpha"));
        c.add(&from("alpha"));
        c.add(&Ok(ProbeResponse {
            status: 503,
            headers: vec![],
            body: r#"{"code":-119,"message":"no healthy upstream"}"#.to_owned(),
        }));
        c.add(&Err("connection refused".to_owned()));
        assert_eq!(c.upstreams["alpha"], 2);
        assert_eq!(c.total(), 4);
        assert_eq!(
            c.error_failure().unwrap(),
            "answers without an upstream: 1 × HTTP 503 code -119, 1 × request failed: connection refused"
        );
    }
}
