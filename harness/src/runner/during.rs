//! A step's `during` probe: one request sent back to back through the step, each answer
//! judged, reported as the check `steps[i].during`.

use model::lock::MutexExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Case, StepResult};
use crate::judge::Measurements;
use crate::probe::judge;
use crate::report::{CheckOutcome, CheckReport};
use crate::scenario::ast::{Probe, StepSpec};

/// What a step's `during` probe saw.
#[derive(Debug, Default)]
pub(super) struct During {
    sent: u32,
    failed: u32,
    /// The first few misses, with when they happened.
    first: Vec<String>,
    elapsed_ms: f64,
}

impl During {
    /// Why the probe to `path` fails its step: an answer missed, or none was sent (it then
    /// showed nothing about the step).
    fn failure(&self, path: &str) -> Option<String> {
        if self.sent == 0 {
            return Some(format!(
                "`during` sent no request to {path} in the {:.0} ms of the step (no gateway \
                 was running, or the step ended first), so it shows nothing",
                self.elapsed_ms
            ));
        }
        (self.failed > 0).then(|| {
            format!(
                "{} of {} answers during the step missed {path}; first: {}",
                self.failed,
                self.sent,
                self.first.join("; ")
            )
        })
    }
}

impl Case<'_> {
    /// Sends `probe` back to back until `done`, judging each answer as it comes; to each
    /// running gateway in turn (one going down is left out first, and the probes in flight to
    /// it answered); while none runs, it waits for one.
    pub(super) async fn during(&self, probe: &Probe, done: &AtomicBool) -> During {
        let names = self.names.locked().clone();
        let started = Instant::now();
        let mut during = During::default();
        while !done.load(Ordering::Relaxed) {
            let sending = self.in_flight.read().await;
            let running = self.running_gateways();
            let Some(&i) = running.get(during.sent as usize % running.len().max(1)) else {
                drop(sending);
                // No gateway to serve: poll for one to come back.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            during.sent += 1;
            let verdict = self
                .send(&self.gateways[i], &probe.request)
                .await
                .and_then(|resp| judge(&probe.expect, &resp, &names));
            if let Err(miss) = verdict {
                during.failed += 1;
                if during.first.len() < 3 {
                    let at_ms = started.elapsed().as_millis();
                    let on = if self.gateways.len() == 1 {
                        String::new()
                    } else {
                        format!(" on gateway[{i}]")
                    };
                    during.first.push(format!("at {at_ms} ms{on}: {miss}"));
                }
            }
        }
        during.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        during
    }

    /// Reports a step's `during` probe as a check of the step (`steps[i].during`); fails the
    /// step when an answer missed or none was sent (the step then showed nothing about it).
    pub(super) fn during_report(
        &self,
        st: &StepSpec,
        index: usize,
        probe: &Probe,
        during: &During,
    ) -> StepResult<()> {
        let passed = during.sent - during.failed;
        let failure = during.failure(&probe.request.path);
        self.step_check(CheckReport {
            name: format!("during step `{}`", st.name),
            path: format!("steps[{index}].during"),
            step: Some(st.name.clone()),
            kind: "probe",
            outcome: match failure {
                Some(why) => CheckOutcome::Failed(vec![why]),
                None => CheckOutcome::Passed,
            },
            elapsed_ms: during.elapsed_ms,
            measurements: Measurements::Probe {
                sent: during.sent,
                passed,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::During;

    #[test]
    fn a_during_probe_fails_on_a_miss_and_when_it_sent_nothing() {
        let nothing = During {
            elapsed_ms: 12.4,
            ..During::default()
        };
        assert_eq!(
            nothing.failure("/a").as_deref(),
            Some(
                "`during` sent no request to /a in the 12 ms of the step (no gateway was \
                 running, or the step ended first), so it shows nothing"
            )
        );
        let missed = During {
            sent: 5,
            failed: 1,
            first: vec!["at 3 ms: status: expected 200, got 404".into()],
            elapsed_ms: 40.0,
        };
        assert_eq!(
            missed.failure("/a").as_deref(),
            Some(
                "1 of 5 answers during the step missed /a; first: at 3 ms: status: expected \
                 200, got 404"
            )
        );
        let passed = During {
            sent: 5,
            ..During::default()
        };
        assert_eq!(passed.failure("/a"), None);
    }
}
