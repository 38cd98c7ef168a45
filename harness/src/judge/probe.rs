//! The probe judge: every answer to a request sent `repeat` times must meet the expectation
//! ([`crate::probe::judge`] for one answer).

use super::{Judge, Measurements, Verdict};
use crate::probe::{Names, ProbeResponse, judge};
use crate::scenario::ast::Expect;

/// The expectation each answer must meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeJudge<'a> {
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
}
