//! Checks a backend cannot judge, known from the scenario and the backend alone: what a
//! check skipped for one of these reasons says, and [`expected_skips`], which lists them before
//! a case runs so that a test runner can show them (as ignored tests) instead of letting them
//! vanish inside a passing case.

use crate::backend::BackendKind;
use crate::scenario::Scenario;
use crate::scenario::ast::CheckKind;

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

/// Why `attempts` is not judged on `backend`: the upstreams' request journals are read
/// in-process only.
pub(super) fn unreadable_journals(backend: BackendKind) -> String {
    format!(
        "`attempts` reads the upstreams' request journals, which the harness reads \
         in-process only, not on the {backend} backend"
    )
}

/// Why the hash judge does not run on `backend`, if it does not: it sends from distinct
/// loopback addresses (127.0.0.x), which a gateway in a container sees as one address, and an
/// external one may (behind a container's published port or a proxy: the compose pair does).
pub(super) fn no_client_addresses(backend: BackendKind) -> Option<String> {
    match backend {
        BackendKind::Host => None,
        BackendKind::Docker => Some(format!(
            "the hash judge needs distinct client addresses, but on the {backend} backend the \
             gateway sees the container network's address for every client"
        )),
        BackendKind::External => Some(
            "the hash judge needs distinct client addresses, which an external gateway behind \
             a container's published port or a proxy does not see (it sees one address for \
             every client); it is not run against an external target"
                .to_owned(),
        ),
    }
}

/// Every check of `scenario` that `backend` skips whatever happens in the run (the docker
/// backend: `attempts` and `hash`; an external target: `hash`). Skips that depend on what an
/// external target answers (its config digest, its route headers) are not predicted; the host
/// backend skips nothing.
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
    top.chain(steps)
        .filter_map(|(path, c)| {
            let why = match &c.kind {
                CheckKind::Probe(p) if !p.attempts.is_empty() && backend == BackendKind::Docker => {
                    unreadable_journals(backend)
                }
                CheckKind::Hash(_) => no_client_addresses(backend)?,
                _ => return None,
            };
            Some(ExpectedSkip {
                path,
                name: c.name.clone(),
                why,
            })
        })
        .collect()
}
