//! The probe judge: every answer to a request sent `repeat` times must meet the expectation
//! (`crate::probe::judge` for one answer).

use std::collections::BTreeMap;

use super::spec::{CheckSpec, NoVerdict, Observe, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::backend::BackendKind;
use crate::probe::{Names, ProbeResponse, judge};
use crate::scenario::ast::request::{Expect, RequestSpec};

/// A request and its expectation, sent `repeat` times (each answer must pass).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeCheck {
    /// The request.
    pub request: RequestSpec,
    /// The expectation.
    pub expect: Expect,
    /// How many times to send it (default 1).
    pub repeat: u32,
    /// Requests each named upstream must receive per request sent (empty: not judged).
    pub attempts: BTreeMap<String, u32>,
}

/// Why `attempts` is not judged on `backend`: the upstreams' request journals are read
/// in-process only.
pub(crate) fn unreadable_journals(backend: BackendKind) -> String {
    format!(
        "`attempts` reads the upstreams' request journals, which the harness reads \
         in-process only, not on the {backend} backend"
    )
}

impl CheckSpec for ProbeCheck {
    fn skip_on(&self, backend: BackendKind) -> Option<String> {
        (!self.attempts.is_empty() && backend.containers()).then(|| unreadable_journals(backend))
    }

    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn expect(&self) -> Option<&Expect> {
        Some(&self.expect)
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.expectation(&self.expect, at);
        cx.min_count(self.repeat, at, "repeat");
        for name in self.attempts.keys() {
            cx.upstream(name, format!("{at}.attempts.{name}"));
        }
    }
}

/// The expectation each answer must meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeJudge<'a> {
    /// The expectation.
    pub expect: &'a Expect,
    /// Setup objects by id (for `selector` and `rule`).
    pub names: &'a Names,
}

impl Judge for ProbeJudge<'_> {
    /// Each answer, or why the request failed.
    type Observation = Vec<Result<ProbeResponse, String>>;

    fn judge(&self, answers: &Self::Observation) -> Verdict {
        let several = answers.len() > 1;
        let failures: Vec<String> = answers
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let miss = match a {
                    Ok(resp) => judge(self.expect, resp, self.names).err()?,
                    Err(e) => e.clone(),
                };
                Some(if several {
                    format!("attempt {} of {}: {miss}", i + 1, answers.len())
                } else {
                    miss
                })
            })
            .collect();
        let sent = u32::try_from(answers.len()).unwrap_or(u32::MAX);
        let passed = sent - u32::try_from(failures.len()).unwrap_or(u32::MAX);
        Verdict {
            failures,
            measurements: Measurements::Probe { sent, passed },
        }
    }
}

/// Where the requests each upstream received while one probe request was answered (`got`,
/// one map per request sent) differ from `want` (requests per upstream per request); empty
/// when they match.
pub(crate) fn attempt_misses(
    want: &BTreeMap<String, u32>,
    got: &[BTreeMap<String, u32>],
) -> Vec<String> {
    let several = got.len() > 1;
    got.iter()
        .enumerate()
        .filter_map(|(i, seen)| {
            let wrong: Vec<String> = want
                .iter()
                .filter_map(|(name, &n)| {
                    let seen = seen.get(name).copied().unwrap_or(0);
                    (seen != n).then(|| format!("{name} expected {n}, got {seen}"))
                })
                .collect();
            if wrong.is_empty() {
                return None;
            }
            let prefix = if several {
                format!("attempt {} of {}: ", i + 1, got.len())
            } else {
                String::new()
            };
            Some(format!(
                "{prefix}attempts (requests each upstream received): {}",
                wrong.join(", ")
            ))
        })
        .collect()
}

/// What one running gateway answered to a probe.
pub(crate) struct GatewayAnswers {
    /// The gateway's name when several run (a stale one is named), else none.
    pub gateway: Option<String>,
    /// Each answer, or why the request failed.
    pub answers: Vec<Result<ProbeResponse, String>>,
    /// Per request sent, how many requests each upstream named in `attempts` received.
    pub attempts: Vec<BTreeMap<String, u32>>,
}

/// What the probe asks of the runner: every running gateway must answer as expected.
pub(crate) trait ProbeCx {
    /// Setup objects by id (for `selector` and `rule`).
    fn names(&self) -> Names;

    /// Sends the probe `repeat` times through each running gateway.
    async fn answers(&mut self, spec: &ProbeCheck) -> Result<Vec<GatewayAnswers>, NoVerdict>;
}

impl<C: ProbeCx> Observe<C> for ProbeCheck {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let names = cx.names();
        let (mut failures, mut sent, mut passed) = (Vec::new(), 0, 0);
        for g in cx.answers(self).await? {
            let mut verdict = ProbeJudge {
                expect: &self.expect,
                names: &names,
            }
            .judge(&g.answers);
            verdict
                .failures
                .extend(attempt_misses(&self.attempts, &g.attempts));
            failures.extend(verdict.failures.into_iter().map(|f| match &g.gateway {
                Some(name) => format!("{name}: {f}"),
                None => f,
            }));
            if let Measurements::Probe { sent: s, passed: p } = verdict.measurements {
                (sent, passed) = (sent + s, passed + p);
            }
        }
        Ok(Verdict {
            failures,
            measurements: Measurements::Probe { sent, passed },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::from;
    use super::*;

    #[test]
    fn every_repeat_must_pass() {
        let expect = Expect {
            upstream: Some("alpha".into()),
            ..Default::default()
        };
        let names = Names::default();
        let j = ProbeJudge {
            expect: &expect,
            names: &names,
        };
        assert!(j.judge(&vec![from("alpha"), from("alpha")]).passed());
        let v = j.judge(&vec![from("alpha"), from("beta"), Err("refused".into())]);
        assert_eq!(v.failures.len(), 2);
        assert!(v.failures[0].starts_with("attempt 2 of 3: upstream: expected alpha, got beta"));
        assert_eq!(v.failures[1], "attempt 3 of 3: refused");
        assert_eq!(v.measurements, Measurements::Probe { sent: 3, passed: 1 });
    }

    #[test]
    fn attempts_must_match_per_request() {
        let map = |pairs: &[(&str, u32)]| -> BTreeMap<String, u32> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
        };
        let want = map(&[("broken", 1), ("alpha", 1)]);
        assert!(attempt_misses(&want, &[map(&[("broken", 1), ("alpha", 1)])]).is_empty());
        // The retry never reached broken: a gateway that skipped the first attempt fails.
        let misses = attempt_misses(&want, &[map(&[("broken", 0), ("alpha", 1)])]);
        assert_eq!(
            misses,
            ["attempts (requests each upstream received): broken expected 1, got 0"]
        );
        let misses = attempt_misses(
            &want,
            &[map(&[("broken", 1), ("alpha", 1)]), map(&[("alpha", 2)])],
        );
        assert_eq!(misses.len(), 1);
        assert!(misses[0].starts_with("attempt 2 of 2: "), "{misses:?}");
        assert!(attempt_misses(&BTreeMap::new(), &[map(&[("alpha", 9)])]).is_empty());
    }
}
