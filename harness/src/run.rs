//! Running cases: preparing the backend, running the [`plan`](crate::plan::plan) and turning
//! each outcome into a [`CaseResult`].

use std::path::{Path, PathBuf};

use model::{SyncMode, SyncStyle};

use crate::backend::{self, Backend, BackendKind};
use crate::error::{self, BackendError, RunError, ScenarioError};
use crate::options::{RunOptions, external_target};
use crate::plan::{NotRun, Planned, plan};
use crate::report::{CaseId, CaseOutcome, CaseRecord, CaseResult, Event};
use crate::runner::run_case;
use crate::scenario::{self, CaseFile, Scenario, discover};
use crate::{RunMode, WORKSPACE_DIR, images, target};

/// Builds the binaries when asked (falling back to locating them when cargo is missing) and
/// returns a backend that runs them.
///
/// Docker: with `build`, runs the release build and rebuilds the images whose inputs changed;
/// without, only checks that the images exist (`gantry images` builds them).
pub fn prepare(opts: &RunOptions) -> Result<Backend, BackendError> {
    if opts.sync_style == SyncStyle::Full && opts.backend == BackendKind::External {
        return Err(BackendError::External {
            what: "choosing the sync style".into(),
            detail: "--sync-style full starts gateways with `--sync-style full`: it needs \
                     gateways of gantry's own (--backend host, docker or swarm)"
                .into(),
        });
    }
    Ok(prepare_backend(opts)?
        .with_gateway_args(opts.gateway_command_args())
        .with_admin_args(opts.admin_command_args()))
}

fn prepare_backend(opts: &RunOptions) -> Result<Backend, BackendError> {
    if opts.backend.containers() {
        return if opts.build {
            let dir = images::build_release(Path::new(WORKSPACE_DIR))?;
            Backend::new(opts.backend, dir)
        } else if opts.backend == BackendKind::Swarm {
            backend::DockerBackend::open_swarm(None).map(Backend::Docker)
        } else {
            backend::DockerBackend::open(None).map(Backend::Docker)
        };
    }
    if opts.build && opts.bin_dir.is_none() {
        backend::host::build_binaries(Path::new(WORKSPACE_DIR))?;
    }
    let dir = backend::host::default_bin_dir(opts.bin_dir.clone())?;
    let backend = Backend::new(opts.backend, dir.clone())?;
    // Never judge old code: binaries built next to the harness must be newer than the
    // workspace sources they come from (`cargo test` builds them; a manual run may not have).
    if opts.bin_dir.is_none() {
        backend::host::check_fresh(&dir, Path::new(WORKSPACE_DIR))?;
    }
    Ok(backend)
}

/// The result of one case run of the scenario in `file`, for the reporters.
pub fn case_result(
    file: &Path,
    scenario: &Scenario,
    mode: SyncMode,
    opts: &RunOptions,
    run: Result<CaseRecord, RunError>,
) -> CaseResult {
    let (outcome, record) = match run {
        Ok(record) => (CaseOutcome::Passed, record),
        Err(e) => {
            // What the admin refused is pointed at in the case file.
            let at = match &e.kind {
                error::RunErrorKind::Refused { at, .. } => {
                    scenario::locate(file, at).map(|(line, column)| {
                        let file = crate::report::place::shown_path(file);
                        format!("{file}:{line}:{column}: ")
                    })
                }
                _ => None,
            };
            let error = format!("{}{e}", at.unwrap_or_default());
            (CaseOutcome::Failed(error), e.record)
        }
    };
    let mut r = CaseResult::bare(
        CaseId::new(&scenario.name, mode),
        crate::report::place::shown_path(file),
        opts.backend.to_string(),
        opts.seed,
        outcome,
    );
    r.sync_style = opts.sync_style;
    r.run_mode = opts.run_mode;
    r.converge_ms = record.converge_ms;
    r.checks = record.checks;
    r.timings = record.timings;
    r.digests = record.digests;
    r
}

/// Discovers the scenarios under `paths` and runs the [`plan`], one case at a time: a
/// scenario × mode it declares runs; every other requested mode gets a skipped result saying
/// why (`not_run`); a file that does not parse is a failed result with mode `parse`.
pub async fn run_paths(
    paths: &[PathBuf],
    opts: &RunOptions,
    events: &(dyn Fn(Event) + Send + Sync),
) -> Result<Vec<CaseResult>, RunSetupError> {
    let files = discover(paths)?;
    let backend = match opts.backend {
        BackendKind::External => {
            Backend::External(target::external::connect(external_target(opts)?.clone()).await?)
        }
        _ => {
            let prep = opts.clone();
            tokio::task::spawn_blocking(move || prepare(&prep))
                .await
                .expect("prepare does not panic")?
        }
    };
    let caps = backend.capabilities();
    let mut results = Vec::new();
    for mut planned in plan(&files, opts) {
        // What only the probe of an external target could tell.
        if let Planned::Case { scenario, skip, .. } = &mut planned
            && skip.is_none()
        {
            *skip =
                target::external::capability_skip_reason(scenario, &caps).map(NotRun::Unavailable);
        }
        let bare = |id: CaseId, file: &CaseFile, outcome: CaseOutcome| {
            let mut r = CaseResult::bare(
                id,
                crate::report::place::shown_path(&file.path),
                opts.backend.to_string(),
                opts.seed,
                outcome,
            );
            r.run_mode = opts.run_mode;
            r
        };
        let r = match planned {
            Planned::Broken(file, e) => bare(
                CaseId::unparsed(file.stem()),
                file,
                CaseOutcome::Failed(e.to_string()),
            ),
            Planned::Case {
                file,
                scenario,
                mode,
                skip: Some(reason),
            } => bare(
                CaseId::new(&scenario.name, mode),
                file,
                CaseOutcome::Skipped(reason.to_string()),
            ),
            Planned::Case {
                file,
                scenario,
                mode,
                skip: None,
            } => run_repeated(&file.path, scenario, mode, &backend, opts, events).await,
        };
        events(Event::CaseFinished(r.clone()));
        results.push(r);
    }
    Ok(results)
}

/// Runs `scenario` (from `file`) under `mode` once, or N times under `--run-mode repeat:N`,
/// each on a fresh topology: the first failed run's result, its error saying how many runs
/// failed and which, else the last run's; its duration is that of every run.
async fn run_repeated(
    file: &Path,
    scenario: &Scenario,
    mode: SyncMode,
    backend: &Backend,
    opts: &RunOptions,
    events: &(dyn Fn(Event) + Send + Sync),
) -> CaseResult {
    let runs = match opts.run_mode {
        Some(RunMode::Repeat { runs }) => runs,
        _ => 1,
    };
    let started = std::time::Instant::now();
    let mut failed_runs = Vec::new();
    let mut kept: Option<CaseResult> = None;
    for run in 1..=runs {
        let outcome = run_case(scenario, mode, backend, opts, events).await;
        let r = case_result(file, scenario, mode, opts, outcome);
        if r.failed() {
            failed_runs.push(run.to_string());
        }
        if kept.as_ref().is_none_or(|k| !k.failed()) {
            kept = Some(r);
        }
    }
    let mut r = kept.expect("a case runs at least once");
    if let (CaseOutcome::Failed(error), true) = (&mut r.outcome, runs > 1) {
        *error = format!(
            "{} of {runs} runs failed (runs {}); the first: {error}",
            failed_runs.len(),
            failed_runs.join(", ")
        );
    }
    r.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    r
}

/// Why [`run_paths`] could not start running cases.
#[derive(Debug, thiserror::Error)]
pub enum RunSetupError {
    /// A path does not exist or cannot be read.
    #[error(transparent)]
    Discover(#[from] ScenarioError),
    /// The binaries cannot be built or found.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::options::FakeEnv;

    /// What the admin refused is reported at its line in the case file.
    #[test]
    fn a_refusal_points_into_the_case_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("refused.yaml");
        let src = "name: refused\nmodes: [websocket]\nupstreams: [alpha]\nsetup:\n  selectors:\n    - name: s\n      plugin: divide\n      upstreams: [{ upstream: alpha, weight: 5 }]\nwait:\n  probe: { request: { path: /x }, expect: { upstream: alpha } }\nchecks:\n  - { name: c, request: { path: /x }, expect: { upstream: alpha } }\n";
        std::fs::write(&file, src).unwrap();
        let scenario = scenario::parse_str(&file, src).unwrap();
        let error = RunError {
            case: "refused".into(),
            mode: SyncMode::Websocket,
            step: error::Step::Setup,
            kind: error::RunErrorKind::Refused {
                at: "setup.selectors[0].upstreams[0].weight".into(),
                message: "handle[0].weight: must be >= 0, got -1".into(),
                source: Box::new(error::ClientError::Status {
                    what: "POST /selector".into(),
                    status: 400,
                    body: String::new(),
                }),
            },
            logs: String::new(),
            record: CaseRecord::default(),
        };
        let opts = RunOptions::from_env(&FakeEnv(HashMap::new()));
        let r = case_result(&file, &scenario, SyncMode::Websocket, &opts, Err(error));
        let want = format!(
            "{}:8:46: refused@websocket failed at setup: setup.selectors[0].upstreams[0].weight: the admin refused it: handle[0].weight: must be >= 0, got -1",
            file.display()
        );
        assert_eq!(r.outcome, CaseOutcome::Failed(want));
    }

    #[test]
    fn missing_binaries_name_the_build_command() {
        let e = Backend::new(BackendKind::Host, PathBuf::from("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "binary not found: /nonexistent/gantry-admin (build it with `cargo build --workspace --bins`)"
        );
    }
}
