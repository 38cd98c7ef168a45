//! The log check at the end of a case: what each admin and gateway logged from the moment
//! the topology was up (their first start's lines are not the case's) to the end of the
//! case, teardown included and shutdown not, judged against `expectLogs`
//! ([`crate::judge::logs`]). Host backend only: a container's log is a bounded buffer and an
//! external service's is not gantry's to read, so there the check is reported skipped.

use std::time::Instant;

use model::SyncMode;

use super::Case;
use crate::backend::Service;
use crate::error::RunErrorKind;
use crate::judge::Measurements;
use crate::judge::logs::{ServiceLog, judge, warnings};
use crate::options::RunOptions;
use crate::report::events::LOGS_CHECK;
use crate::report::{CheckOutcome, CheckReport, Event};
use crate::run_mode::RunMode;
use crate::scenario::ast::LogRole;
use crate::topology::Topology;

/// Where each admin's and gateway's log stood when the case started, by role and index;
/// `None` when the backend does not judge logs.
pub(super) struct LogMarks(Option<Vec<(LogRole, usize, u64)>>);

/// Each admin's and gateway's log, with its role and index.
fn services(topo: &Topology) -> impl Iterator<Item = (LogRole, usize, &Service)> {
    let admins = topo.admins().iter().enumerate();
    let gateways = topo.gateways().iter().enumerate();
    (admins.map(|(i, s)| (LogRole::Admin, i, s)))
        .chain(gateways.map(|(i, s)| (LogRole::Gateway, i, s)))
}

impl LogMarks {
    /// Where each log of `topo` stands now.
    pub(super) fn take(topo: &Topology) -> Self {
        let marks = services(topo)
            .map(|(role, i, s)| s.log_len().map(|len| (role, i, len)))
            .collect();
        LogMarks(marks)
    }
}

/// Why the log check is skipped off the host backend (what its report says).
pub(super) const LOGS_OFF_HOST: &str =
    "the backend's service logs are not judged (host backend only)";

/// Why the log check is skipped for a whole run, if it is: `--allow-logs`, or
/// `--run-mode restart`, whose own gateway restarts end sync sessions that the admin and the
/// gateway log and that no case can declare.
pub(super) fn skipped_for_run(opts: &RunOptions) -> Option<&'static str> {
    if opts.allow_logs {
        Some("--allow-logs")
    } else if opts.run_mode == Some(RunMode::Restart) {
        Some(
            "--run-mode restart: the run mode's own gateway restarts log ended sync sessions, \
             which no case declares",
        )
    } else {
        None
    }
}

impl Case<'_> {
    /// Reads what each service logged since `marks`, judges it against the case's
    /// `expectLogs` for `mode` and records the check (skipped for the reason `skip` gives, or
    /// where logs are not judged); an error lists what is wrong.
    pub(super) fn judge_logs(
        &self,
        marks: &LogMarks,
        skip: Option<&'static str>,
        mode: SyncMode,
    ) -> Result<(), RunErrorKind> {
        let started = Instant::now();
        let outcome = match (&marks.0, skip) {
            (_, Some(why)) => CheckOutcome::Skipped(why.into()),
            (None, None) => CheckOutcome::Skipped(LOGS_OFF_HOST.into()),
            (Some(marks), None) => match self.read_logs(marks) {
                Ok(logs) => match judge(&logs, &self.scenario.expect_logs, mode) {
                    failures if failures.is_empty() => CheckOutcome::Passed,
                    failures => CheckOutcome::Failed(failures),
                },
                Err(e) => CheckOutcome::Failed(vec![e.to_string()]),
            },
        };
        let report = CheckReport {
            name: "service logs".into(),
            path: "expectLogs".into(),
            step: None,
            kind: LOGS_CHECK,
            outcome: outcome.clone(),
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
            measurements: Measurements::None,
        };
        (self.events)(Event::CheckFinished {
            id: self.id.clone(),
            check: report.clone(),
        });
        self.record(|r| r.checks.push(report));
        match outcome {
            CheckOutcome::Failed(failures) => Err(RunErrorKind::Logs(failures)),
            CheckOutcome::Passed | CheckOutcome::Skipped(_) => Ok(()),
        }
    }

    /// The WARN and ERROR lines each service logged since its mark.
    fn read_logs(
        &self,
        marks: &[(LogRole, usize, u64)],
    ) -> Result<Vec<ServiceLog>, crate::error::BackendError> {
        let count = |role| match role {
            LogRole::Admin => self.topo.admins().len(),
            LogRole::Gateway => self.topo.gateways().len(),
        };
        let mut logs = Vec::new();
        for ((role, index, service), (_, _, offset)) in services(self.topo).zip(marks) {
            let Some(text) = service.log_since(*offset) else {
                continue;
            };
            logs.push(ServiceLog {
                role,
                index,
                name: if count(role) == 1 {
                    role.name().to_owned()
                } else {
                    format!("{}[{index}]", role.name())
                },
                lines: warnings(&text?),
            });
        }
        Ok(logs)
    }
}
