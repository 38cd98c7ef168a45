//! The events a run emits and the per-case result every reporter consumes.

use serde::Serialize;

use crate::error::Step;

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A case (scenario × mode) started.
    CaseStarted {
        /// `<name>@<mode>`.
        id: String,
    },
    /// A case entered a step.
    StepStarted {
        /// `<name>@<mode>`.
        id: String,
        /// The step.
        step: Step,
    },
    /// A case finished.
    CaseFinished(CaseResult),
}

/// The result of one case, or of one scenario file that does not parse (mode `parse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// Scenario name, or the file stem for a file that does not parse.
    pub case: String,
    /// Sync mode, or `parse`.
    pub mode: String,
    /// Whether it passed.
    pub passed: bool,
    /// Time from the end of setup to the first pass of the final wait streak.
    pub converge_ms: Option<u64>,
    /// Why it failed.
    pub error: Option<String>,
    /// Why it did not run (its sync mode's server is not installed); not a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl CaseResult {
    /// `<case>@<mode>`.
    pub fn id(&self) -> String {
        format!("{}@{}", self.case, self.mode)
    }

    /// Whether it failed (neither passed nor skipped).
    pub fn failed(&self) -> bool {
        !self.passed && self.skipped.is_none()
    }
}
