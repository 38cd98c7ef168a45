//! Checks a backend cannot judge, known from the scenario and the backend alone (each kind
//! says which through `CheckSpec::skip_on`): [`expected_skips`] lists them before a case runs
//! so that a test runner can show them (as ignored tests) instead of letting them vanish inside
//! a passing case.

use crate::backend::BackendKind;
use crate::scenario::Scenario;

/// A check that `backend` will skip, with where it is in its file and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedSkip {
    /// Its field path (`checks[2]`, `steps[0].checks[1]`), as its report's `path`.
    pub path: String,
    /// Its name.
    pub name: String,
    /// Why it is skipped: the text its report carries.
    pub why: String,
}

/// Every check of `scenario` that `backend` skips whatever happens in the run (the docker
/// backend: `attempts` and `hash`; an external target: `hash`; off the host backend, the
/// service-log check every case ends with). Skips that depend on what an external target
/// answers (its config digest, its route headers) are not predicted; the host backend skips
/// nothing.
pub fn expected_skips(scenario: &Scenario, backend: BackendKind) -> Vec<ExpectedSkip> {
    if backend == BackendKind::Host {
        return Vec::new();
    }
    let top = scenario
        .checks
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("checks[{i}]"), c));
    let steps = scenario.steps.iter().enumerate().flat_map(|(s, step)| {
        (step.checks.iter().enumerate()).map(move |(i, c)| (format!("steps[{s}].checks[{i}]"), c))
    });
    let logs = ExpectedSkip {
        path: "expectLogs".into(),
        name: "service logs".into(),
        why: super::logs::LOGS_OFF_HOST.into(),
    };
    top.chain(steps)
        .filter_map(|(path, c)| {
            let why = c.kind.spec().skip_on(backend)?;
            Some(ExpectedSkip {
                path,
                name: c.name.clone(),
                why,
            })
        })
        .chain([logs])
        .collect()
}
