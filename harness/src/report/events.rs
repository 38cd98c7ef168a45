//! The events a run emits and the per-case result every reporter consumes: the contract
//! between the runner and the reporters (nextest's `TestEvent`). Measurements are typed
//! ([`Measurements`]), so a reporter never parses a string.

use serde::Serialize;

use crate::error::Step;
use crate::judge::Measurements;

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq)]
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
    /// A check was judged (or skipped).
    CheckFinished {
        /// `<name>@<mode>`.
        id: String,
        /// Its verdict and measurements.
        check: CheckReport,
    },
    /// A case finished.
    CaseFinished(CaseResult),
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "detail")]
pub enum CheckOutcome {
    /// The judge found nothing wrong.
    Passed,
    /// Every way the observation was wrong.
    Failed(Vec<String>),
    /// It could not run here, and why (never counted as passed).
    Skipped(String),
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct CheckReport {
    /// The check's name.
    pub name: String,
    /// Where it is in its scenario file, as a field path (`checks[2]`, `steps[0].checks[1]`).
    pub path: String,
    /// The scenario step it belongs to (none: the top-level checks).
    pub step: Option<String>,
    /// `probe`, `distribution`, `roundRobin`, `hash`, `steer` or `latency`.
    pub kind: &'static str,
    /// How it ended.
    pub outcome: CheckOutcome,
    /// Time spent observing and judging, ms.
    pub elapsed_ms: f64,
    /// What it measured.
    pub measurements: Measurements,
}

/// One admin change's times, ms after the admin's 2xx.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct ChangeTiming {
    /// `setup`, `step <name>` or `teardown`.
    pub change: String,
    /// To the gateway swapping in the config that holds it (0 when that happened before the
    /// harness saw the 2xx); `None` when the gateway does not say (no config digest).
    pub applied_ms: Option<f64>,
    /// To the first pass of its wait's streak (quantised by the wait's `interval`).
    pub probe_ms: f64,
    /// To the harness seeing the admin's and the gateway's digests equal (after the wait).
    pub converged_ms: f64,
}

/// The digests admin and gateway last agreed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FinalDigests {
    /// The admin's.
    pub admin: String,
    /// The gateway's.
    pub gateway: String,
}

/// What a case run recorded, passed or failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct CaseRecord {
    /// Time from the end of setup to the first pass of the wait streak, once it converged.
    pub converge_ms: Option<u64>,
    /// Every check judged, in order.
    pub checks: Vec<CheckReport>,
    /// Every change timed (setup, steps, teardown).
    pub timings: Vec<ChangeTiming>,
    /// The digests at the last agreement.
    pub digests: Option<FinalDigests>,
}

/// The result of one case, or of one scenario file that does not parse (mode `parse`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct CaseResult {
    /// Scenario name, or the file stem for a file that does not parse.
    pub case: String,
    /// Sync mode, or `parse`.
    pub mode: String,
    /// The scenario file.
    pub file: String,
    /// `host` or `docker`.
    pub backend: String,
    /// The seed of the harness's random choices (hash judge clients).
    pub seed: u64,
    /// Whether it passed.
    pub passed: bool,
    /// How long the case took, start to stop, ms (0 when it did not run).
    pub duration_ms: f64,
    /// Time from the end of setup to the first pass of the wait streak (kept when a later
    /// step failed).
    pub converge_ms: Option<u64>,
    /// Why it failed.
    pub error: Option<String>,
    /// Why it did not run (its sync mode's server is not installed); not a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Every check's verdict and measurements.
    pub checks: Vec<CheckReport>,
    /// Sync latency of every change the case made.
    pub timings: Vec<ChangeTiming>,
    /// The digests admin and gateway last agreed on.
    pub digests: Option<FinalDigests>,
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

    /// A result that carries only its verdict (a parse failure, a skip): nothing ran.
    pub fn bare(case: String, mode: String, file: String, backend: String, seed: u64) -> Self {
        Self {
            case,
            mode,
            file,
            backend,
            seed,
            passed: false,
            duration_ms: 0.0,
            converge_ms: None,
            error: None,
            skipped: None,
            checks: Vec::new(),
            timings: Vec::new(),
            digests: None,
        }
    }
}
