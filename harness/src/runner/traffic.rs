//! The scenario's background `traffic`: each one sent from the start of step `from` to the
//! end of step `until` (its checks included) by the engine of `during`, judged as one check
//! (`traffic[i]`), each miss attributed to the step under way when its request was sent.

use std::time::Instant;

use tokio::sync::watch;

use super::during::{Naming, Sent, created_without_rules_yet};
use super::{Case, StepResult};
use crate::error::{RunErrorKind, Step};
use crate::judge::Measurements;
use crate::report::{CheckOutcome, CheckReport, Event};
use crate::scenario::ast::{StepSpec, Traffic};

/// Where the steps stand, as background traffic watches them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Phase {
    /// Steps begun (step `begun - 1` is under way).
    pub(super) begun: usize,
    /// Steps ended, their checks included.
    pub(super) ended: usize,
    /// The steps are over (all done, or one failed).
    pub(super) over: bool,
}

impl Phase {
    /// Whether traffic over steps `from..=until` has started.
    fn started(self, from: usize) -> bool {
        self.begun > from
    }

    /// Whether traffic over steps `from..=until` is over.
    fn done(self, until: usize) -> bool {
        self.over || self.ended > until
    }
}

impl Case<'_> {
    /// Sends `traffic` while `phase` is in its steps; `None` when its first step never began
    /// (an earlier one failed).
    pub(super) async fn background(
        &self,
        traffic: &Traffic,
        mut phase: watch::Receiver<Phase>,
    ) -> Option<Sent> {
        let index = |name: &str| self.scenario.steps.iter().position(|s| s.name == name);
        // Validation makes sure both name steps.
        let (from, until) = (index(&traffic.from)?, index(&traffic.until)?);
        let now = *phase.wait_for(|p| p.started(from) || p.over).await.ok()?;
        if !now.started(from) {
            return None;
        }
        let over = |_| phase.borrow().done(until);
        let step = || phase.borrow().begun.saturating_sub(1);
        let span = super::during::Span {
            started: Instant::now(),
            over: &over,
            step: &step,
        };
        Some(self.send_load(&traffic.load, &span).await)
    }

    /// The steps `traffic` spans (none when a name is unknown, which validation refuses).
    fn spanned(&self, traffic: &Traffic) -> &[StepSpec] {
        let steps = &self.scenario.steps;
        let index = |name: &str| steps.iter().position(|s| s.name == name);
        match (index(&traffic.from), index(&traffic.until)) {
            (Some(from), Some(until)) if from <= until => &steps[from..=until],
            _ => &[],
        }
    }

    /// Reports each background traffic as a check (`traffic[i]`): failed when an answer
    /// missed, an upstream answered out of order or none was sent, skipped when its first
    /// step never began; the failures of all of them, if any.
    pub(super) fn traffic_reports(&self, seen: Vec<Option<Sent>>) -> StepResult<()> {
        let steps: Vec<&str> = (self.scenario.steps.iter())
            .map(|s| s.name.as_str())
            .collect();
        let gateway = |i| self.gateway_name(i);
        let mut failed = Vec::new();
        for (i, (traffic, sent)) in self.scenario.traffic.iter().zip(seen).enumerate() {
            let naming = Naming {
                label: format!("traffic `{}`", traffic.name),
                what: format!("of traffic `{}`", traffic.name),
                path: &traffic.load.probe.request.path,
                steps: Some(steps.clone()),
                gateway: &gateway,
            };
            let (outcome, elapsed_ms, measurements) = match &sent {
                None => (
                    CheckOutcome::Skipped(format!(
                        "step `{}` never began (an earlier step failed)",
                        traffic.from
                    )),
                    0.0,
                    Measurements::None,
                ),
                Some(sent) => {
                    let mut failures = sent.failures(&naming, traffic.load.order.as_ref());
                    let spanned = self.spanned(traffic);
                    failures.extend(created_without_rules_yet(sent, spanned));
                    let measured = Measurements::Probe {
                        sent: sent.sent,
                        passed: sent.sent - sent.missed,
                    };
                    match failures.is_empty() {
                        true => (CheckOutcome::Passed, sent.elapsed_ms, measured),
                        false => {
                            let why = failures.join("; ");
                            failed.push(format!("  traffic `{}` {why}", traffic.name));
                            (CheckOutcome::Failed(failures), sent.elapsed_ms, measured)
                        }
                    }
                }
            };
            let report = CheckReport {
                name: format!(
                    "traffic `{}` (steps `{}` to `{}`)",
                    traffic.name, traffic.from, traffic.until
                ),
                path: format!("traffic[{i}]"),
                step: None,
                kind: "probe",
                outcome,
                elapsed_ms,
                measurements,
            };
            (self.events)(Event::CheckFinished {
                id: self.id.clone(),
                check: report.clone(),
            });
            self.record(|r| r.checks.push(report));
        }
        match failed.is_empty() {
            true => Ok(()),
            false => Err((Step::Steps, RunErrorKind::ChecksFailed(failed))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Phase;

    #[test]
    fn traffic_runs_from_the_start_of_its_first_step_to_the_end_of_its_last() {
        let at = |begun, ended| Phase {
            begun,
            ended,
            over: false,
        };
        // Over steps 1..=2.
        assert!(!at(1, 0).started(1));
        assert!(at(2, 1).started(1));
        assert!(!at(3, 2).done(2));
        assert!(at(3, 3).done(2));
        assert!(
            Phase {
                over: true,
                ..at(2, 1)
            }
            .done(2)
        );
    }
}
