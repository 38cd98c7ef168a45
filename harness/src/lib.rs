//! gantry's e2e engine: runs scenario files (docs/scenarios.md) against a fresh admin +
//! gateway + echo upstreams per sync mode, and reports per case.
//!
//! Entry points: [`discover`] finds and parses scenario files, [`prepare`] builds and locates
//! the binaries, [`run_case`] runs one scenario under one mode, and [`run_paths`] does all of it
//! for the `gantry` CLI. Layers: [`scenario`] (parse, validate) → [`topology`] on a [`backend`]
//! → [`runner`] (with [`probe`] verdicts and [`wait`] convergence) → [`report`].
//!
//! In a test of your own, [`Gantry`] starts a topology and hands out its admin client and
//! gateway address (`harness/examples/own_test.rs`).

pub mod backend;
pub mod bench;
pub mod client;
pub mod compose;
pub mod converge;
pub mod error;
pub mod fault;
pub mod gantry;
pub mod images;
pub mod json_path;
pub mod judge;
pub mod lower;
pub mod probe;
pub mod reference;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod target;
pub mod topology;
pub mod upstream;
pub mod wait;

use std::path::{Path, PathBuf};

use model::SyncMode;

pub use backend::{Backend, BackendKind};
pub use error::{BackendError, RunError, ScenarioError};
pub use gantry::{Gantry, GantryBuilder};
pub use report::{CaseResult, Event};
pub use runner::{CaseOutcome, ExpectedSkip, expected_skips, run_case};
pub use scenario::{CaseFile, Scenario, discover};
/// The testcontainers the docker backend runs on, for a container of your own beside a
/// [`Gantry`]'s (same version, same engine).
pub use testcontainers;

/// The workspace root this harness was built in.
pub const WORKSPACE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The default scenario directory: the workspace's `cases/scenarios`, else `./cases/scenarios`.
pub fn default_scenario_dir() -> PathBuf {
    let built_in = Path::new(WORKSPACE_DIR).join("cases/scenarios");
    if built_in.is_dir() {
        built_in
    } else {
        PathBuf::from("cases/scenarios")
    }
}

/// Reads environment variables; a trait so option parsing is testable.
pub trait Env {
    /// The variable's value, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

/// A fixed environment, for tests of option parsing.
#[cfg(test)]
pub(crate) struct FakeEnv(pub(crate) std::collections::HashMap<&'static str, &'static str>);

#[cfg(test)]
impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| (*v).to_owned())
    }
}

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// What the engine needs to run cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// The backend.
    pub backend: BackendKind,
    /// Requested sync modes; a scenario runs under its own modes ∩ these.
    pub modes: Vec<SyncMode>,
    /// Where the binaries are (`GANTRY_BIN_DIR`); `None` locates them next to the harness.
    pub bin_dir: Option<PathBuf>,
    /// Run `cargo build --workspace --bins` first (off with `--no-build` or `GANTRY_BIN_DIR`).
    pub build: bool,
    /// Keep the temp dirs (`GANTRY_KEEP=1`).
    pub keep: bool,
    /// Seed of the harness's random choices (the hash judge's client addresses); from
    /// `GANTRY_SEED`, else drawn at start. Every result reports it, so a run can be repeated.
    pub seed: u64,
    /// Extra arguments for every gateway started (`--gateway-arg`).
    pub gateway_args: Vec<String>,
    /// Only scenarios whose name contains this (`--filter`).
    pub filter: Option<String>,
    /// Show the service logs of every failure, not only when a process died (`--verbose`).
    pub verbose: bool,
    /// The admin and gateway of `--backend external`.
    pub external: Option<backend::ExternalTarget>,
}

impl RunOptions {
    /// Defaults (host backend, websocket, build first) adjusted by `GANTRY_BIN_DIR`,
    /// `GANTRY_KEEP` and `GANTRY_SEED`.
    pub fn from_env(env: &dyn Env) -> Self {
        let bin_dir = env
            .var("GANTRY_BIN_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        Self {
            backend: BackendKind::Host,
            modes: vec![SyncMode::Websocket],
            build: bin_dir.is_none(),
            bin_dir,
            keep: env.var("GANTRY_KEEP").is_some_and(|v| v == "1"),
            seed: env
                .var("GANTRY_SEED")
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(rand::random),
            gateway_args: Vec::new(),
            filter: None,
            verbose: false,
            external: None,
        }
    }
}

/// Builds the binaries when asked (falling back to locating them when cargo is missing) and
/// returns a backend that runs them.
///
/// Docker: with `build`, runs the static build and rebuilds the images whose binary changed;
/// without, only checks that the images exist (`gantry images` builds them).
pub fn prepare(opts: &RunOptions) -> Result<Backend, BackendError> {
    Ok(prepare_backend(opts)?.with_gateway_args(opts.gateway_args.clone()))
}

fn prepare_backend(opts: &RunOptions) -> Result<Backend, BackendError> {
    if opts.backend == BackendKind::Docker {
        return if opts.build {
            let dir = images::build_static(Path::new(WORKSPACE_DIR))?;
            Backend::new(BackendKind::Docker, dir)
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
    outcome: Result<CaseOutcome, RunError>,
) -> CaseResult {
    let mut r = CaseResult::bare(
        scenario.name.clone(),
        mode.to_string(),
        file.display().to_string(),
        opts.backend.to_string(),
        opts.seed,
    );
    let record = match outcome {
        Ok(o) => {
            r.passed = true;
            o.record
        }
        Err(e) => {
            // What the admin refused is pointed at in the case file.
            let at = match &e.kind {
                error::RunErrorKind::Refused { at, .. } => scenario::locate(file, at)
                    .map(|(line, column)| format!("{}:{line}:{column}: ", file.display())),
                _ => None,
            };
            r.error = Some(format!("{}{e}", at.unwrap_or_default()));
            e.record
        }
    };
    r.converge_ms = record.converge_ms;
    r.checks = record.checks;
    r.timings = record.timings;
    r.digests = record.digests;
    r
}

/// One entry of a run's plan: a file that does not parse, or a scenario × requested mode that
/// runs or is skipped (and why).
#[derive(Debug)]
pub enum Planned<'a> {
    /// A file that does not parse: a failed result with mode `parse`.
    Broken(&'a CaseFile, &'a ScenarioError),
    /// A scenario under one requested mode.
    Case {
        /// Its file.
        file: &'a CaseFile,
        /// The scenario.
        scenario: &'a Scenario,
        /// The mode.
        mode: SyncMode,
        /// Why it does not run ([`not_run`]); `None` when it runs.
        skip: Option<NotRun>,
    },
}

impl Planned<'_> {
    /// `parse` or the mode's name: what the result's `mode` will be.
    pub fn mode(&self) -> String {
        match self {
            Planned::Broken(..) => "parse".to_owned(),
            Planned::Case { mode, .. } => mode.to_string(),
        }
    }
}

/// What [`run_paths`] reports for `files` under `opts`, in order: every scenario whose name
/// contains `opts.filter` (every one without a filter) under every requested mode, and every
/// file that does not parse (whose stem contains the filter). The single enumeration the CLI's
/// `run`, `list` and progress totals use.
pub fn plan<'a>(files: &'a [CaseFile], opts: &RunOptions) -> Vec<Planned<'a>> {
    let wanted = |name: &str| opts.filter.as_deref().is_none_or(|f| name.contains(f));
    let mut out = Vec::new();
    for file in files {
        match &file.scenario {
            Err(e) if wanted(&file.stem()) => out.push(Planned::Broken(file, e)),
            Err(_) => {}
            Ok(s) if wanted(&s.name) => {
                for mode in &opts.modes {
                    out.push(Planned::Case {
                        file,
                        scenario: s,
                        mode: *mode,
                        skip: not_run(s, *mode, opts),
                    });
                }
            }
            Ok(_) => {}
        }
    }
    out
}

/// Discovers the scenarios under `paths` and runs the [`plan`], one case at a time: a
/// scenario × mode it declares runs; every other requested mode gets a skipped result saying
/// why ([`not_run`]); a file that does not parse is a failed result with mode `parse`.
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
        let bare = |case: String, file: &CaseFile, mode: String| {
            CaseResult::bare(
                case,
                mode,
                file.path.display().to_string(),
                opts.backend.to_string(),
                opts.seed,
            )
        };
        let r = match planned {
            Planned::Broken(file, e) => {
                let mut r = bare(file.stem(), file, "parse".into());
                r.error = Some(e.to_string());
                r
            }
            Planned::Case {
                file,
                scenario,
                mode,
                skip: Some(reason),
            } => {
                let mut r = bare(scenario.name.clone(), file, mode.to_string());
                r.skipped = Some(reason.to_string());
                r
            }
            Planned::Case {
                file,
                scenario,
                mode,
                skip: None,
            } => {
                let started = std::time::Instant::now();
                let outcome = run_case(scenario, mode, &backend, opts, events).await;
                let mut r = case_result(&file.path, scenario, mode, opts, outcome);
                r.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
                r
            }
        };
        events(Event::CaseFinished(r.clone()));
        results.push(r);
    }
    Ok(results)
}

/// Why a scenario × mode is not run under some [`RunOptions`] ([`not_run`]). Such a case is
/// reported as skipped, never as passed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRun {
    /// The scenario does not declare the backend.
    #[error("backend `{backend}` not declared (backends: [{declared}])")]
    Backend {
        /// The backend asked for.
        backend: BackendKind,
        /// The backends the scenario declares, comma-separated.
        declared: String,
    },
    /// The scenario does not declare the mode.
    #[error("mode `{mode}` not declared (modes: [{declared}])")]
    Mode {
        /// The mode asked for.
        mode: SyncMode,
        /// The modes the scenario declares, comma-separated.
        declared: String,
    },
    /// The backend cannot run the case here (the mode's server or a component it asks for is
    /// missing and not required).
    #[error("{0}")]
    Unavailable(String),
}

/// Why `scenario` × `mode` is not run under `opts`: the scenario does not declare the backend
/// or the mode, or the backend cannot run the mode here (on the host backend, the mode's
/// server or a component the case asks for is missing and `GANTRY_REQUIRE` does not name it).
/// `None` when it runs.
pub fn not_run(scenario: &Scenario, mode: SyncMode, opts: &RunOptions) -> Option<NotRun> {
    let list = |items: Vec<String>| items.join(", ");
    if !scenario.backends.contains(&opts.backend) {
        return Some(NotRun::Backend {
            backend: opts.backend,
            declared: list(scenario.backends.iter().map(ToString::to_string).collect()),
        });
    }
    if !scenario.modes.contains(&mode) {
        return Some(NotRun::Mode {
            mode,
            declared: list(scenario.modes.iter().map(ToString::to_string).collect()),
        });
    }
    match opts.backend {
        BackendKind::Host => backend::component::skip_reason(&ProcessEnv, mode)
            .or_else(|| {
                scenario
                    .components
                    .iter()
                    .find_map(|&c| backend::component::redis::skip_reason(&ProcessEnv, c))
            })
            .or_else(|| {
                (scenario.topology.storage == scenario::ast::Storage::Postgres)
                    .then(|| backend::component::postgres::skip_reason(&ProcessEnv))
                    .flatten()
            })
            .map(NotRun::Unavailable),
        BackendKind::Docker => (!backend::docker::supports(mode))
            .then(|| NotRun::Unavailable(format!("the docker backend cannot run mode `{mode}`"))),
        BackendKind::External => target::external::skip_reason(scenario).map(NotRun::Unavailable),
    }
}

/// The target of `--backend external`, or why there is none.
pub fn external_target(opts: &RunOptions) -> Result<&backend::ExternalTarget, BackendError> {
    opts.external
        .as_ref()
        .ok_or_else(|| BackendError::External {
            what: "choosing the target".into(),
            detail: "--backend external needs --admin-url and --gateway-url".into(),
        })
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

/// The results [`run_paths`] will report for `files`, per mode (`parse` for files that do
/// not parse), in order of first appearance.
pub fn count_cases(files: &[CaseFile], opts: &RunOptions) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = Vec::new();
    for p in plan(files, opts) {
        let mode = p.mode();
        match counts.iter_mut().find(|(m, _)| *m == mode) {
            Some((_, n)) => *n += 1,
            None => counts.push((mode, 1)),
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::FakeEnv;

    #[test]
    fn env_sets_bin_dir_and_keep() {
        let o = RunOptions::from_env(&FakeEnv(HashMap::new()));
        assert!(o.build && !o.keep && o.bin_dir.is_none());
        let o = RunOptions::from_env(&FakeEnv(HashMap::from([
            ("GANTRY_BIN_DIR", "/x"),
            ("GANTRY_KEEP", "1"),
        ])));
        assert_eq!(
            (o.build, o.keep, o.bin_dir),
            (false, true, Some(PathBuf::from("/x")))
        );
    }

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
            record: report::CaseRecord::default(),
        };
        let opts = RunOptions::from_env(&FakeEnv(HashMap::new()));
        let r = case_result(&file, &scenario, SyncMode::Websocket, &opts, Err(error));
        let want = format!(
            "{}:8:46: refused@websocket failed at setup: setup.selectors[0].upstreams[0].weight: the admin refused it: handle[0].weight: must be >= 0, got -1",
            file.display()
        );
        assert_eq!(r.error.as_deref(), Some(want.as_str()));
    }

    #[test]
    fn cases_not_run_say_why_and_are_counted() {
        let src = "
name: host_only
modes: [websocket, http]
backends: [host]
upstreams: [alpha]
setup:
  selectors:
    - name: s
      plugin: divide
      upstreams: [{ upstream: alpha }]
      rules: [{ name: r }]
wait:
  probe: { request: { path: /x }, expect: { upstream: alpha } }
checks:
  - { name: c, request: { path: /x }, expect: { status: 200 } }
";
        let s = scenario::parse_str(Path::new("x.yaml"), src).unwrap();
        let mut opts = RunOptions::from_env(&FakeEnv(HashMap::new()));
        assert_eq!(not_run(&s, SyncMode::Websocket, &opts), None);
        let why = |opts: &RunOptions, mode| not_run(&s, mode, opts).map(|n| n.to_string());
        assert_eq!(
            why(&opts, SyncMode::Etcd).as_deref(),
            Some("mode `etcd` not declared (modes: [websocket, http])")
        );
        opts.backend = BackendKind::Docker;
        assert_eq!(
            why(&opts, SyncMode::Websocket).as_deref(),
            Some("backend `docker` not declared (backends: [host])")
        );
        let files = vec![
            CaseFile {
                path: "a.yaml".into(),
                scenario: Ok(s),
            },
            CaseFile {
                path: "b.yaml".into(),
                scenario: Err(ScenarioError::Io {
                    file: "b.yaml".into(),
                    message: "gone".into(),
                }),
            },
        ];
        opts.backend = BackendKind::Host;
        opts.modes = vec![SyncMode::Websocket, SyncMode::Etcd];
        assert_eq!(
            count_cases(&files, &opts),
            vec![
                ("websocket".into(), 1),
                ("etcd".into(), 1),
                ("parse".into(), 1)
            ]
        );
        opts.filter = Some("host_".into());
        assert_eq!(
            count_cases(&files, &opts),
            vec![("websocket".into(), 1), ("etcd".into(), 1)]
        );
        opts.filter = Some("nothing".into());
        assert!(plan(&files, &opts).is_empty());
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
