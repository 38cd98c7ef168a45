//! A run's plan: which scenario × mode runs, which is skipped and why, which file is broken.

use model::SyncMode;

use crate::backend::{self, BackendKind};
use crate::error::ScenarioError;
use crate::options::{ProcessEnv, RunOptions};
use crate::scenario::{self, CaseFile, Scenario};
use crate::target;

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

    /// `<case>@<mode>@<backend>` (`<file stem>@parse@<backend>` for a broken file): what
    /// `gantry list` prints, the test's name, and what `--partition hash:K/N` hashes.
    pub fn name(&self, backend: BackendKind) -> String {
        match self {
            Planned::Broken(file, _) => format!("{}@parse@{backend}", file.stem()),
            Planned::Case { scenario, mode, .. } => format!("{}@{mode}@{backend}", scenario.name),
        }
    }
}

/// What `run_paths` reports for `files` under `opts`, in order: every scenario whose name
/// contains `opts.filter` (every one without a filter) under every requested mode, and every
/// file that does not parse (whose stem contains the filter); of those, only the shard
/// `opts.partition` names, when it names one. The single enumeration the CLI's `run`, `list`
/// and progress totals use.
pub fn plan<'a>(files: &'a [CaseFile], opts: &RunOptions) -> Vec<Planned<'a>> {
    let whole = whole_plan(files, opts);
    match opts.partition {
        None => whole,
        Some(partition) => whole
            .into_iter()
            .enumerate()
            .filter(|(i, p)| partition.takes(*i, &p.name(opts.backend)))
            .map(|(_, p)| p)
            .collect(),
    }
}

/// [`plan`] before the partition: the scenarios the filter and the profile (`--profile`: every
/// feature a scenario names is in it) take.
fn whole_plan<'a>(files: &'a [CaseFile], opts: &RunOptions) -> Vec<Planned<'a>> {
    let wanted = |name: &str| opts.filter.as_deref().is_none_or(|f| name.contains(f));
    let mut out = Vec::new();
    for file in files {
        match &file.scenario {
            Err(e) if wanted(&file.stem()) => out.push(Planned::Broken(file, e)),
            Err(_) => {}
            Ok(s) if wanted(&s.name) && opts.features.in_profile(&s.features) => {
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
    /// The case needs features the run does not test (`--supported-features`,
    /// `--exempt-features`); the reason names them
    /// ([`crate::conformance::unsupported_reason`]).
    #[error("{0}")]
    Features(String),
    /// The backend cannot run the case here (the mode's server or a component it asks for is
    /// missing and not required).
    #[error("{0}")]
    Unavailable(String),
    /// The case cannot mean anything under the run mode (`--run-mode`): it opts out
    /// (`runModes:`), or (under `leak`) a step restarts the processes whose growth is judged.
    #[error("not run under `--run-mode {mode}`: {reason}")]
    RunMode {
        /// The run mode.
        mode: crate::RunMode,
        /// Why.
        reason: String,
    },
}

/// Why `scenario` × `mode` is not run under `opts`: the scenario does not declare the backend
/// or the mode, it needs a feature the run does not test, or the backend cannot run the mode
/// here (on the host backend, the mode's server or a component the case asks for is missing
/// and `GANTRY_REQUIRE` does not name it, or a disk fault needs root). `None` when it runs.
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
    if let Some(why) = opts.features.skip_reason(&scenario.features) {
        return Some(NotRun::Features(why));
    }
    if let Some(mode) = opts.run_mode
        && let Some(reason) = run_mode_skip(scenario, mode, opts.backend)
    {
        return Some(NotRun::RunMode { mode, reason });
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
            .or_else(|| {
                (scenario
                    .steps
                    .iter()
                    .any(scenario::ast::StepSpec::fills_disk))
                .then(crate::fault::disk_skip_reason)
                .flatten()
            })
            .map(NotRun::Unavailable),
        BackendKind::Docker | BackendKind::Swarm => (!backend::docker::supports(mode)).then(|| {
            NotRun::Unavailable(format!(
                "the {} backend cannot run mode `{mode}`",
                opts.backend
            ))
        }),
        BackendKind::External => target::external::skip_reason(scenario).map(NotRun::Unavailable),
    }
}

/// Why `scenario` does not run under run mode `mode`: its own `runModes` opt-out, or, under
/// `leak`, a backend other than the host's (the readings come from /proc), a gateway or admin
/// a step stops, kills, starts or restarts, or a late gateway (the process whose RSS and fds
/// are judged across runs would start over within a run).
fn run_mode_skip(
    scenario: &Scenario,
    mode: crate::RunMode,
    backend: BackendKind,
) -> Option<String> {
    use scenario::ast::{Change, Fault, FaultAction, Target};
    if let Some((key, why)) = scenario.run_modes.reason(mode) {
        return Some(format!("{why} (runModes.{key})"));
    }
    let replaces_a_process = |c: &Change| {
        matches!(
            c,
            Change::Fault(Fault::Process(
                FaultAction::Stop | FaultAction::Kill | FaultAction::Start | FaultAction::Restart,
                Target::Admin(_) | Target::Gateway(_),
            ))
        )
    };
    if matches!(mode, crate::RunMode::Slice { .. })
        && (backend != BackendKind::Host || scenario.topology.admins > 1)
    {
        return Some(
            "the slicer sits on the gateway's one sync connection: host backend, one admin only"
                .to_owned(),
        );
    }
    let leak = matches!(mode, crate::RunMode::Leak { .. });
    if leak && backend != BackendKind::Host {
        return Some(
            "the processes' RSS and open fds are read from /proc: host backend only".to_owned(),
        );
    }
    let replaced = scenario
        .steps
        .iter()
        .any(|st| st.changes.iter().any(replaces_a_process));
    (leak && (replaced || !scenario.topology.late.is_empty())).then(|| {
        "a step starts or ends an admin or gateway process: the process whose RSS and open \
         fds are judged across runs would start over within a run"
            .to_owned()
    })
}

/// The results `run_paths` will report for `files`, per mode (`parse` for files that do
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
    use std::path::Path;

    use super::*;
    use crate::options::FakeEnv;

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

    /// A case opting out of a run mode is skipped under it with its reason; under `leak`, a
    /// case that restarts its gateway is skipped, and every case off the host backend.
    #[test]
    fn run_modes_skip_the_cases_that_opt_out() {
        let src = "
name: restarts
modes: [websocket]
runModes: { restart: counts per connection }
upstreams: [alpha]
setup:
  selectors:
    - { name: s, plugin: divide, upstreams: [{ upstream: alpha }], rules: [{ name: r }] }
wait:
  probe: { request: { path: /x }, expect: { upstream: alpha } }
checks:
  - { name: c, request: { path: /x }, expect: { status: 200 } }
steps:
  - name: restart
    changes: [{ restart: gateway }]
    wait: { probe: { request: { path: /x }, expect: { upstream: alpha } } }
";
        let s = scenario::parse_str(Path::new("x.yaml"), src).unwrap();
        let mut opts = RunOptions::from_env(&FakeEnv(HashMap::new()));
        let why = |opts: &RunOptions| not_run(&s, SyncMode::Websocket, opts).map(|n| n.to_string());
        for (mode, want) in [
            (crate::RunMode::Slice { every_ms: 1 }, None),
            (crate::RunMode::Repeat { runs: 2 }, None),
            (
                crate::RunMode::Restart,
                Some(
                    "not run under `--run-mode restart`: counts per connection (runModes.restart)",
                ),
            ),
            (
                crate::RunMode::Leak { runs: 5 },
                Some(
                    "not run under `--run-mode leak:5`: a step starts or ends an admin or \
                     gateway process: the process whose RSS and open fds are judged across \
                     runs would start over within a run",
                ),
            ),
        ] {
            opts.run_mode = Some(mode);
            assert_eq!(why(&opts).as_deref(), want, "{mode}");
        }
        let empty = src.replace("counts per connection", "\"\"");
        let e = scenario::parse_str(Path::new("x.yaml"), &empty)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("say why the case cannot run under `--run-mode restart`"),
            "{e}"
        );
    }

    /// `--profile` leaves out the cases with a feature outside it; `--exempt-features` and
    /// `--supported-features` skip those needing another, naming it.
    #[test]
    fn features_select_and_skip_cases() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases/scenarios");
        let files = crate::discover(&[dir]).unwrap();
        let mut opts = RunOptions::from_env(&FakeEnv(HashMap::new()));
        let names = |opts: &RunOptions| -> Vec<String> {
            plan(&files, opts)
                .iter()
                .map(|p| p.name(opts.backend))
                .collect()
        };
        let all = names(&opts);
        opts.features.profile = Some("core".parse().unwrap());
        let core = names(&opts);
        assert!(core.len() < all.len() && core.contains(&"starts_with@websocket@host".into()));
        assert!(!core.iter().any(|n| n.starts_with("fault_")), "{core:?}");
        opts.features.exempt = ["routing.methods".to_owned()].into();
        let skipped = (plan(&files, &opts).into_iter())
            .filter_map(|p| match p {
                Planned::Case {
                    scenario,
                    skip: Some(NotRun::Features(why)),
                    ..
                } => Some((scenario.name.clone(), why)),
                _ => None,
            })
            .collect::<Vec<_>>();
        assert!(
            skipped.iter().any(|(n, why)| n == "method_get"
                && crate::conformance::missing_features(why) == ["routing.methods"]),
            "{skipped:?}"
        );
        assert!(!skipped.iter().any(|(n, _)| n == "starts_with"));
    }

    /// The workspace's scenarios under every mode, on each backend, split 4 ways: every
    /// entry of the whole plan is in exactly one shard, and each shard keeps the plan's order.
    #[rstest::rstest]
    fn shards_of_the_workspace_plan_are_disjoint_and_whole(
        #[values(BackendKind::Host, BackendKind::Docker)] backend: BackendKind,
        #[values("hash:{}/4", "count:{}/4")] split: &str,
    ) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases/scenarios");
        let files = crate::discover(&[dir]).unwrap();
        let mut opts = RunOptions::from_env(&FakeEnv(HashMap::new()));
        opts.backend = backend;
        opts.modes = SyncMode::ALL.to_vec();
        let whole: Vec<String> = plan(&files, &opts)
            .iter()
            .map(|p| p.name(backend))
            .collect();
        assert!(whole.len() > 100, "{} entries", whole.len());
        let mut seen: Vec<String> = Vec::new();
        for k in 1..=4 {
            opts.partition = Some(split.replace("{}", &k.to_string()).parse().unwrap());
            let shard: Vec<String> = plan(&files, &opts)
                .iter()
                .map(|p| p.name(backend))
                .collect();
            assert!(!shard.is_empty(), "shard {k} is empty");
            let in_order: Vec<&String> = whole.iter().filter(|n| shard.contains(n)).collect();
            assert_eq!(
                in_order,
                shard.iter().collect::<Vec<_>>(),
                "shard {k} out of order"
            );
            seen.extend(shard);
        }
        seen.sort();
        let mut expected = whole;
        expected.sort();
        assert_eq!(seen, expected, "the shards together are not the whole plan");
    }
}
