//! The events a run emits and the per-case result every reporter consumes: the contract
//! between the runner and the reporters (nextest's `TestEvent`). Measurements are typed
//! ([`Measurements`]), so a reporter never parses a string.

use std::fmt;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Step;
use crate::judge::{JUDGE_KEYS, Measurements};

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A case (scenario × mode) started.
    CaseStarted {
        /// The case.
        id: CaseId,
    },
    /// A case entered a step.
    StepStarted {
        /// The case.
        id: CaseId,
        /// The step.
        step: Step,
    },
    /// A check was judged (or skipped).
    CheckFinished {
        /// The case.
        id: CaseId,
        /// Its verdict and measurements.
        check: CheckReport,
    },
    /// A case finished.
    CaseFinished(CaseResult),
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "detail")]
pub enum CheckOutcome {
    /// The judge found nothing wrong.
    Passed,
    /// Every way the observation was wrong.
    Failed(Vec<String>),
    /// It could not run here, and why (never counted as passed).
    Skipped(String),
}

/// A check kind's name. An alias only so that serde's derive does not take the field for a
/// string borrowed from the input (it does so for every field written `&str`, which would
/// make `CheckReport` readable only from `'static` input); [`known_kind`] reads it.
type KindName = &'static str;

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct CheckReport {
    /// The check's name.
    pub name: String,
    /// Where it is in its scenario file, as a field path (`checks[2]`, `steps[0].checks[1]`).
    pub path: String,
    /// The scenario step it belongs to (none: the top-level checks).
    pub step: Option<String>,
    /// `probe`, a judge's key (`distribution`, `roundRobin`, ...), or `digest`, `isolation`
    /// or `logs` (the runner's own checks); reading a report back fails on any other.
    #[serde(deserialize_with = "known_kind")]
    pub kind: KindName,
    /// How it ended.
    pub outcome: CheckOutcome,
    /// Time spent observing and judging, ms.
    pub elapsed_ms: f64,
    /// What it measured.
    pub measurements: Measurements,
}

/// One admin change's times, ms after the admin's 2xx.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct ChangeTiming {
    /// `setup`, `step <name>` or `teardown`.
    pub change: String,
    /// To the gateway swapping in the config that holds it (0 when that happened before the
    /// harness saw the 2xx); `None` when the gateway does not say (no config digest).
    pub applied_ms: Option<f64>,
    /// **Live**: to the end of the first pass of its wait's final streak, i.e. to the harness
    /// seeing the gateway serve the change (quantised by the wait's `interval`).
    pub probe_ms: f64,
    /// **Digests equal**: to the harness seeing the admin's and the gateway's config digests
    /// equal after the wait, i.e. the gateway holding the admin's whole config (the end of the
    /// change; at least `probe_ms`).
    pub converged_ms: f64,
}

/// The digests admin and gateway last agreed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalDigests {
    /// The admin's.
    pub admin: String,
    /// The gateway's.
    pub gateway: String,
}

/// The kind of the runner's own digest-equality check (skipped on a target without a config
/// digest).
pub(crate) const DIGEST_CHECK: &str = "digest";
/// The kind of the runner's own check of a step's `isolated`.
pub(crate) const ISOLATION_CHECK: &str = "isolation";
/// The kind of the runner's own check of the service logs against `expectLogs`.
pub(crate) const LOGS_CHECK: &str = "logs";
/// The kinds of the checks the runner reports for itself, beside the probe and the judges.
const RUNNER_CHECK_KINDS: &[&str] = &[DIGEST_CHECK, ISOLATION_CHECK, LOGS_CHECK];

/// Every kind a [`CheckReport`] can have: `probe`, the judges' keys, the runner's own.
fn check_kinds() -> impl Iterator<Item = &'static str> {
    std::iter::once("probe").chain(JUDGE_KEYS.iter().chain(RUNNER_CHECK_KINDS).copied())
}

/// Reads [`CheckReport::kind`] as the `&'static` name of a known kind; fails on any other.
fn known_kind<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let name = String::deserialize(d)?;
    check_kinds().find(|k| *k == name).ok_or_else(|| {
        let known: Vec<&str> = check_kinds().collect();
        serde::de::Error::custom(format!(
            "unknown check kind `{name}` (known: {})",
            known.join(", ")
        ))
    })
}

/// What a case run recorded, passed or failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct CaseRecord {
    /// **Setup live**: ms from setup's last admin 2xx to the start of the first pass of the
    /// wait's final streak (the wait's probes pass), once they did; see [`ChangeTiming`] for the
    /// setup change's other times.
    pub converge_ms: Option<u64>,
    /// Every check judged, in order.
    pub checks: Vec<CheckReport>,
    /// Every change timed (setup, steps, teardown).
    pub timings: Vec<ChangeTiming>,
    /// The digests at the last agreement.
    pub digests: Option<FinalDigests>,
}

/// Which case: a scenario under a sync mode, or a scenario file that does not parse (mode
/// `parse`). Shown as `<case>@<mode>`, the name a filter selects it by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CaseId {
    /// Scenario name, or the file stem for a file that does not parse.
    pub case: String,
    /// Sync mode, or `parse`.
    pub mode: String,
}

impl CaseId {
    /// The mode of a file that does not parse.
    pub const PARSE: &str = "parse";

    /// The case `case` under `mode`.
    pub fn new(case: impl Into<String>, mode: impl fmt::Display) -> Self {
        Self {
            case: case.into(),
            mode: mode.to_string(),
        }
    }

    /// The result's id for a scenario file (named by its stem) that does not parse.
    pub fn unparsed(stem: impl Into<String>) -> Self {
        Self::new(stem, Self::PARSE)
    }

    /// Whether it stands for a file that does not parse rather than a run.
    pub fn is_parse(&self) -> bool {
        self.mode == Self::PARSE
    }
}

impl fmt::Display for CaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.case, self.mode)
    }
}

/// How a case ended: exactly one of these, so a result can never be both passed and failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseOutcome {
    /// Every step and check held.
    Passed,
    /// Why it failed (for a file that does not parse, the parse error).
    Failed(String),
    /// Why it did not run (its sync mode's server is not installed, the backend does not
    /// declare it...); not a failure.
    Skipped(String),
}

impl CaseOutcome {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        matches!(self, Self::Passed)
    }

    /// Why it failed, if it did.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Why it did not run, if it did not.
    pub fn skipped(&self) -> Option<&str> {
        match self {
            Self::Skipped(why) => Some(why),
            _ => None,
        }
    }
}

/// The result of one case, or of one scenario file that does not parse (mode `parse`).
///
/// In the JSON report the id and outcome are written flat, as they always were: `case`,
/// `mode`, `passed`, `error` (null unless failed) and `skipped` (only when skipped); reading
/// it back takes exactly one of passed, an error and a skip reason.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "FlatResult")]
pub struct CaseResult {
    /// Which case.
    pub id: CaseId,
    /// The scenario file.
    pub file: String,
    /// `host` or `docker`.
    pub backend: String,
    /// How the gateways took changes (`incremental` or `full`, `--sync-style`).
    pub sync_style: model::SyncStyle,
    /// The seed of the harness's random choices (hash judge clients).
    pub seed: u64,
    /// The run mode it ran under (`--run-mode`), if any; under `repeat:N` and `leak:N` the
    /// result stands for all N runs (passed only when every run passed).
    pub run_mode: Option<crate::RunMode>,
    /// How it ended.
    pub outcome: CaseOutcome,
    /// How long the case took, start to stop, ms (0 when it did not run).
    pub duration_ms: f64,
    /// **Setup live**: ms from setup's last admin 2xx to the start of the first pass of the
    /// wait's final streak (the wait's probes pass); kept when a later step failed. Not
    /// digest equality: that is the `converged_ms` of the `setup` timing.
    pub converge_ms: Option<u64>,
    /// Every check's verdict and measurements.
    pub checks: Vec<CheckReport>,
    /// Sync latency of every change the case made.
    pub timings: Vec<ChangeTiming>,
    /// The digests admin and gateway last agreed on.
    pub digests: Option<FinalDigests>,
}

impl CaseResult {
    /// Whether it failed (neither passed nor skipped).
    pub fn failed(&self) -> bool {
        matches!(self.outcome, CaseOutcome::Failed(_))
    }

    /// A result that carries only its verdict (a parse failure, a skip): nothing ran.
    pub fn bare(
        id: CaseId,
        file: String,
        backend: String,
        seed: u64,
        outcome: CaseOutcome,
    ) -> Self {
        Self {
            id,
            file,
            backend,
            sync_style: model::SyncStyle::Incremental,
            seed,
            run_mode: None,
            outcome,
            duration_ms: 0.0,
            converge_ms: None,
            checks: Vec::new(),
            timings: Vec::new(),
            digests: None,
        }
    }
}

impl Serialize for CaseResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize_flat(s, &self.file, &self.checks)
    }
}

impl CaseResult {
    /// The flat form [`Serialize`] writes, with the file named `file` and `checks` in place of
    /// the checks (the JSON report names the file from the workspace root and adds where each
    /// failed check is).
    pub(crate) fn serialize_flat<S: serde::Serializer>(
        &self,
        s: S,
        file: &str,
        checks: &impl Serialize,
    ) -> Result<S::Ok, S::Error> {
        let skipped = self.outcome.skipped();
        let mut st = s.serialize_struct("CaseResult", 14 + usize::from(skipped.is_some()))?;
        st.serialize_field("case", &self.id.case)?;
        st.serialize_field("mode", &self.id.mode)?;
        st.serialize_field("file", file)?;
        st.serialize_field("backend", &self.backend)?;
        st.serialize_field("sync_style", &self.sync_style)?;
        st.serialize_field("seed", &self.seed)?;
        st.serialize_field("run_mode", &self.run_mode.map(|m| m.to_string()))?;
        st.serialize_field("passed", &self.outcome.passed())?;
        st.serialize_field("duration_ms", &self.duration_ms)?;
        st.serialize_field("converge_ms", &self.converge_ms)?;
        st.serialize_field("error", &self.outcome.error())?;
        if let Some(why) = skipped {
            st.serialize_field("skipped", why)?;
        } else {
            st.skip_field("skipped")?;
        }
        st.serialize_field("checks", checks)?;
        st.serialize_field("timings", &self.timings)?;
        st.serialize_field("digests", &self.digests)?;
        st.end()
    }
}

/// A [`CaseResult`] as the JSON report writes it: id and outcome flat.
#[derive(Deserialize)]
struct FlatResult {
    case: String,
    mode: String,
    file: String,
    backend: String,
    /// Absent in reports of before `--sync-style`: incremental.
    #[serde(default = "incremental")]
    sync_style: model::SyncStyle,
    seed: u64,
    /// Absent in reports of before `--run-mode`: none.
    #[serde(default)]
    run_mode: Option<String>,
    passed: bool,
    duration_ms: f64,
    converge_ms: Option<u64>,
    error: Option<String>,
    skipped: Option<String>,
    checks: Vec<CheckReport>,
    timings: Vec<ChangeTiming>,
    digests: Option<FinalDigests>,
}

fn incremental() -> model::SyncStyle {
    model::SyncStyle::Incremental
}

impl TryFrom<FlatResult> for CaseResult {
    type Error = String;

    fn try_from(r: FlatResult) -> Result<Self, String> {
        let id = CaseId::new(r.case, r.mode);
        let outcome = match (r.passed, r.error, r.skipped) {
            (true, None, None) => CaseOutcome::Passed,
            (false, Some(error), None) => CaseOutcome::Failed(error),
            (false, None, Some(why)) => CaseOutcome::Skipped(why),
            (passed, error, skipped) => {
                return Err(format!(
                    "case `{id}`: `passed: {passed}` with error {error:?} and skipped {skipped:?} \
                     (a result is passed, or has an error, or is skipped)"
                ));
            }
        };
        let run_mode = (r.run_mode.map(|m| m.parse()).transpose())
            .map_err(|e| format!("case `{id}`: run_mode: {e}"))?;
        Ok(Self {
            id,
            file: r.file,
            backend: r.backend,
            sync_style: r.sync_style,
            seed: r.seed,
            run_mode,
            outcome,
            duration_ms: r.duration_ms,
            converge_ms: r.converge_ms,
            checks: r.checks,
            timings: r.timings,
            digests: r.digests,
        })
    }
}
