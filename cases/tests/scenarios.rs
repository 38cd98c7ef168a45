//! One trial per scenario × sync mode, named `<name>@<mode>`, each on a fresh topology; a file
//! that does not parse is one failing trial `<file stem>@parse`. A check the backend cannot
//! judge (e.g. `attempts` on docker) is an ignored trial `<name>@<mode>…::<path> `<check>``
//! beside its case's trial, which fails if the case skipped any other check. Files under
//! `cases/invalid/` must fail to parse with exactly the error in their sibling `.err` file.
//! Files under `cases/failing/` are scenarios that must fail when run (on the host backend, in
//! their first mode): each line of their `.err` file must appear in the error, so a runner
//! that stopped reporting a failure is seen failing; a first line `# gateway-args: …` starts
//! the gateway with those arguments (e.g. `--emulate-bug drop-deletes`), `# admin-args: …`
//! the admin, and such a case must
//! pass without them (`failing::<name>::without-bug`). A case whose server is missing is
//! ignored with the reason, unless `GANTRY_REQUIRE` names it. Files under `cases/regressions/`
//! are named regressions (docs/regressions.md): each must fail in every mode it declares with
//! the bug of its `regression.emulateBug` switched on (`regression::<name>`, every line of its
//! `.err` in the error) and pass without it (`regression::<name>::without-bug`);
//! `regression::docs` keeps docs/regressions.md equal to the table the files make
//! (`GANTRY_BLESS=1` rewrites it). With a Docker engine, every scenario × mode also runs on
//! containers as `<name>@<mode>@docker`.

mod docker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use harness::EngineCheck;
use harness::report::CheckOutcome;
use harness::scenario::ast::BugSwitch;
use harness::{Backend, ExpectedSkip, NotRun, Planned, ProcessEnv, RunMode, RunOptions, Scenario};
use libtest_mimic::{Arguments, Failed, Trial};
use model::SyncMode;

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
const INVALID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/invalid");
const FAILING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/failing");
const REGRESSIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/regressions");
const REGRESSIONS_DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/regressions.md");

/// One backend's options, prepared (binaries located, images built) once, on first use.
#[derive(Debug)]
struct Shared {
    opts: RunOptions,
    /// The docker engine's answer; `None` on the host backend.
    engine: Option<EngineCheck>,
    backend: OnceLock<Result<Backend, String>>,
}

impl Shared {
    fn new(opts: RunOptions, engine: Option<EngineCheck>) -> Arc<Self> {
        Arc::new(Self {
            opts: RunOptions {
                // Every mode a scenario declares is a trial; the plan says which do not run.
                modes: SyncMode::ALL.to_vec(),
                ..opts
            },
            engine,
            backend: OnceLock::new(),
        })
    }

    fn backend(&self) -> Result<&Backend, Failed> {
        if let Some(EngineCheck::Required(why) | EngineCheck::Skip(why)) = &self.engine {
            return Err(why.into());
        }
        self.backend
            .get_or_init(|| harness::prepare(&self.opts).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| e.into())
    }
}

/// Runs `scenario` under `mode`; the checks it skipped must be exactly `expected` (each one
/// shown as an ignored trial), so a skip nobody foresaw fails the trial instead of hiding
/// inside an `ok`.
fn run(
    shared: &Shared,
    scenario: &Scenario,
    mode: SyncMode,
    expected: &[ExpectedSkip],
) -> Result<(), Failed> {
    let backend = shared.backend()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let record = rt
        .block_on(harness::run_case(
            scenario,
            mode,
            backend,
            &shared.opts,
            &|_| {},
        ))
        .map_err(|e| {
            format!(
                "{e}\n(GANTRY_SEED={} repeats the harness's choices)",
                shared.opts.seed
            )
        })?;
    let skipped: Vec<(&str, &str)> = record
        .checks
        .iter()
        .filter_map(|c| match &c.outcome {
            CheckOutcome::Skipped(why) => Some((c.path.as_str(), why.as_str())),
            _ => None,
        })
        .collect();
    let foreseen: Vec<(&str, &str)> = expected
        .iter()
        .map(|e| (e.path.as_str(), e.why.as_str()))
        .collect();
    if skipped == foreseen {
        Ok(())
    } else {
        let list = |l: &[(&str, &str)]| {
            l.iter()
                .map(|(path, why)| format!("  {path}: {why}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        Err(format!(
            "the case passed, but it skipped other checks than foreseen\nskipped:\n{}\nforeseen:\n{}",
            list(&skipped),
            list(&foreseen)
        )
        .into())
    }
}

/// `<name>@<mode><suffix>` for every scenario × mode it declares, from the harness's own
/// [`harness::plan`] (the CLI's enumeration): a case the plan skips (backend not declared,
/// server missing) is an ignored trial with a note on stderr, never a passed one; a file that
/// does not parse is a failing trial `<stem>@parse` when `with_parse_failures`.
fn scenario_trials(shared: &Arc<Shared>, suffix: &str, with_parse_failures: bool) -> Vec<Trial> {
    let files = match harness::discover(&[PathBuf::from(SCENARIOS)]) {
        Ok(files) => files,
        Err(e) => return vec![Trial::test("discover", move || Err(e.to_string().into()))],
    };
    let engine_skips = matches!(shared.engine, Some(EngineCheck::Skip(_)));
    let mut trials = Vec::new();
    // Ignored trials grouped by why, for one note per reason.
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    for planned in harness::plan(&files, &shared.opts) {
        match planned {
            Planned::Broken(file, e) if with_parse_failures => {
                let e = e.to_string();
                trials.push(Trial::test(format!("{}@parse", file.stem()), move || {
                    Err(e.into())
                }));
            }
            Planned::Broken(..)
            | Planned::Case {
                skip: Some(NotRun::Mode { .. }),
                ..
            } => {}
            Planned::Case {
                scenario,
                mode,
                skip,
                ..
            } => {
                let name = format!("{}@{mode}{suffix}", scenario.name);
                let ignored = skip.is_some() || engine_skips;
                if let Some(why) = skip {
                    let why = why.to_string();
                    match notes.iter_mut().find(|(w, _)| *w == why) {
                        Some((_, names)) => names.push(name.clone()),
                        None => notes.push((why, vec![name.clone()])),
                    }
                }
                let expected = harness::expected_skips(scenario, shared.opts.backend);
                // Each check the backend cannot judge is an ignored trial of its own, named,
                // beside a case that runs.
                for e in expected.iter().filter(|_| !ignored) {
                    let check = format!("{name}::{} `{}`", e.path, e.name);
                    match notes.iter_mut().find(|(w, _)| *w == e.why) {
                        Some((_, names)) => names.push(check.clone()),
                        None => notes.push((e.why.clone(), vec![check.clone()])),
                    }
                    trials.push(Trial::test(check, || Ok(())).with_ignored_flag(true));
                }
                let (s, shared) = (scenario.clone(), Arc::clone(shared));
                trials.push(
                    Trial::test(name, move || run(&shared, &s, mode, &expected))
                        .with_ignored_flag(ignored),
                );
            }
        }
    }
    for (why, names) in notes {
        eprintln!("note: ignored ({why}): {}", names.join(", "));
    }
    trials
}

/// Files with `extension` in `dir`, sorted.
fn fixtures(dir: &str, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == extension))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A case that must fail when run with a planted bug: a `cases/failing/` file (its first mode;
/// the bug, if any, from a `# gateway-args:` or `# admin-args:` line of its leading comment,
/// the run mode from a `# run-mode:` line) or a `cases/regressions/` file (every mode it
/// declares; the bug from its `regression.emulateBug`).
struct PlantedCase {
    path: PathBuf,
    scenario: Scenario,
    /// The modes it runs in.
    modes: Vec<SyncMode>,
    /// The switch that plants the bug (none: the case fails as written).
    bug: BugArgs,
    /// The run mode it runs in, with and without its bug (`# run-mode: leak:4`).
    run_mode: Option<RunMode>,
    /// Every line of its `.err` file that is not blank: each must be in the error.
    expected: Vec<String>,
}

/// The arguments of the line of a failing case's leading comment that starts with `prefix`
/// (`# gateway-args: --emulate-bug drop-deletes`).
fn header_args(src: &str, prefix: &str) -> Vec<String> {
    (src.lines())
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(prefix))
        .map(|a| a.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Extra command-line arguments that plant a bug.
#[derive(Debug, Clone, Default)]
struct BugArgs {
    gateway: Vec<String>,
    admin: Vec<String>,
}

impl BugArgs {
    fn is_empty(&self) -> bool {
        self.gateway.is_empty() && self.admin.is_empty()
    }
}

impl std::fmt::Display for BugArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.admin.is_empty() {
            parts.push(format!("admin {}", self.admin.join(" ")));
        }
        if !self.gateway.is_empty() {
            parts.push(format!("gateway {}", self.gateway.join(" ")));
        }
        f.write_str(&parts.join(", "))
    }
}

/// Which directory a [`PlantedCase`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planted {
    /// `cases/failing/`: the harness's own tests of its failure reports.
    Failing,
    /// `cases/regressions/`: named regressions of known gateway bugs.
    Regression,
}

impl Planted {
    /// The directory and the trials' name prefix.
    fn dir_and_prefix(self) -> (&'static str, &'static str) {
        match self {
            Planted::Failing => (FAILING, "failing"),
            Planted::Regression => (REGRESSIONS, "regression"),
        }
    }
}

impl PlantedCase {
    fn read(path: &Path, planted: Planted) -> Result<PlantedCase, Failed> {
        let src = std::fs::read_to_string(path)?;
        let err = std::fs::read_to_string(path.with_extension("err"))
            .map_err(|e| format!("{}: {e}", path.with_extension("err").display()))?;
        let scenario = harness::scenario::parse_str(path, &src)?;
        let (modes, bug, run_mode) = match planted {
            Planted::Failing => {
                let first = scenario.modes.first().copied();
                let bug = BugArgs {
                    gateway: header_args(&src, "# gateway-args:"),
                    admin: header_args(&src, "# admin-args:"),
                };
                let run_mode = match header_args(&src, "# run-mode:").as_slice() {
                    [] => None,
                    [mode] => {
                        Some(mode.parse::<RunMode>().map_err(|e| {
                            format!("{}: `# run-mode: {mode}`: {e}", path.display())
                        })?)
                    }
                    more => {
                        let more = more.join(" ");
                        return Err(
                            format!("{}: `# run-mode: {more}`: one mode", path.display()).into(),
                        );
                    }
                };
                (vec![first.unwrap_or(SyncMode::Websocket)], bug, run_mode)
            }
            Planted::Regression => {
                let regression = scenario.regression.as_ref().ok_or_else(|| {
                    format!(
                        "{}: a regression case needs a `regression:` block",
                        path.display()
                    )
                })?;
                let mut bug = BugArgs::default();
                let args = regression.emulate_bug.args();
                match regression.emulate_bug {
                    BugSwitch::Gateway(_) => bug.gateway = args,
                    BugSwitch::Admin(_) => bug.admin = args,
                }
                (scenario.modes.clone(), bug, None)
            }
        };
        Ok(PlantedCase {
            path: path.to_owned(),
            modes,
            scenario,
            bug,
            run_mode,
            expected: err
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.trim_end().to_owned())
                .collect(),
        })
    }

    /// Runs it under `mode` on the host backend, with `bug` planted: the run's error, if any
    /// (the outer error: the backend could not start it).
    fn run(
        &self,
        shared: &Shared,
        mode: SyncMode,
        bug: &BugArgs,
    ) -> Result<Result<(), String>, Failed> {
        let backend = (shared.backend()?.clone())
            .with_gateway_args(bug.gateway.clone())
            .with_admin_args(bug.admin.clone());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let opts = RunOptions {
            run_mode: self.run_mode.or(shared.opts.run_mode),
            ..shared.opts.clone()
        };
        Ok(rt
            .block_on(harness::run_case(
                &self.scenario,
                mode,
                &backend,
                &opts,
                &|_| {},
            ))
            .map(drop)
            .map_err(|e| e.to_string()))
    }

    /// Without its bug, it must pass in each of `modes`.
    fn passes_without_bug(&self, shared: &Shared, modes: &[SyncMode]) -> Result<(), Failed> {
        for &mode in modes {
            self.run(shared, mode, &BugArgs::default())?.map_err(|e| {
                format!(
                    "without `{}` the case must pass, but it failed ({mode}):\n{e}",
                    self.bug
                )
            })?;
        }
        Ok(())
    }

    /// With its bug, it must fail in each of `modes`, every expected line in the error.
    fn fails_with_bug(&self, shared: &Shared, modes: &[SyncMode]) -> Result<(), Failed> {
        for &mode in modes {
            let error = match self.run(shared, mode, &self.bug)? {
                Ok(()) => {
                    return Err(format!(
                        "the scenario passed ({mode}, with `{}`), but it must fail",
                        self.bug
                    )
                    .into());
                }
                Err(e) => e,
            };
            let missing: Vec<&str> = (self.expected.iter())
                .map(String::as_str)
                .filter(|l| !error.contains(l))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "{} ({mode}): the failure does not say:\n{}\nit says:\n{error}",
                    self.path.display(),
                    missing.join("\n")
                )
                .into());
            }
        }
        Ok(())
    }
}

/// `cases/failing/<name>.yaml` must fail when run, with every line of `<name>.err` in its
/// error (`failing::<name>`); one that plants its bug with a `# gateway-args:` (or
/// `# admin-args:`) switch must
/// pass without it (`failing::<name>::without-bug`), so that it is the bug it fails on.
/// `cases/regressions/<name>.yaml` likewise, in every mode it declares, its bug planted by
/// its `regression.emulateBug` (`regression::<name>`, `regression::<name>::without-bug`). A
/// mode whose server (or component) is missing is left out, with the reason on stderr, unless
/// `GANTRY_REQUIRE` names it; a case with no mode left is ignored.
fn planted_trials(shared: &Arc<Shared>, planted: Planted) -> Vec<Trial> {
    let (dir, prefix) = planted.dir_and_prefix();
    let mut trials = Vec::new();
    for path in fixtures(dir, "yaml") {
        let stem = path.file_stem().unwrap_or_default().display().to_string();
        let name = format!("{prefix}::{stem}");
        let case = match PlantedCase::read(&path, planted) {
            Ok(case) => Arc::new(case),
            Err(e) => {
                let e = format!("{}: {e:?}", path.display());
                trials.push(Trial::test(name, move || Err(e.into())));
                continue;
            }
        };
        let mut modes = Vec::new();
        for &mode in &case.modes {
            match harness::not_run(&case.scenario, mode, &shared.opts) {
                Some(why) => eprintln!("note: ignored ({why}): {name} in {mode}"),
                None => modes.push(mode),
            }
        }
        let (ignored, modes) = (modes.is_empty(), Arc::new(modes));
        if !case.bug.is_empty() {
            let (case, shared, modes) = (Arc::clone(&case), Arc::clone(shared), Arc::clone(&modes));
            trials.push(
                Trial::test(format!("{name}::without-bug"), move || {
                    case.passes_without_bug(&shared, &modes)
                })
                .with_ignored_flag(ignored),
            );
        }
        let shared = Arc::clone(shared);
        trials.push(
            Trial::test(name, move || case.fails_with_bug(&shared, &modes))
                .with_ignored_flag(ignored),
        );
    }
    trials
}

/// The generated part of docs/regressions.md: everything after this line is the table of
/// `cases/regressions/`.
const REGRESSIONS_MARKER: &str = "<!-- generated from cases/regressions/*.yaml by \
cases/tests/scenarios.rs (`regression::docs`); rewrite with GANTRY_BLESS=1 -->";

/// docs/regressions.md, as the files in `cases/regressions/` make it: its text up to
/// [`REGRESSIONS_MARKER`], then the table.
fn regressions_doc(committed: &str) -> Result<String, Failed> {
    let head = committed
        .find(REGRESSIONS_MARKER)
        .map(|at| &committed[..at])
        .ok_or_else(|| format!("{REGRESSIONS_DOC} lacks the line {REGRESSIONS_MARKER}"))?;
    let mut cases = Vec::new();
    for path in fixtures(REGRESSIONS, "yaml") {
        let src = std::fs::read_to_string(&path)?;
        let scenario = harness::scenario::parse_str(&path, &src)?;
        let stem = path.file_stem().unwrap_or_default().display().to_string();
        cases.push((stem, scenario));
    }
    let mut rows = Vec::new();
    for (stem, scenario) in &cases {
        let regression = (scenario.regression.as_ref())
            .ok_or_else(|| format!("cases/regressions/{stem}.yaml has no `regression:` block"))?;
        rows.push((stem.as_str(), scenario.modes.as_slice(), regression));
    }
    Ok(format!(
        "{head}{REGRESSIONS_MARKER}\n\n{}",
        harness::scenario::ast::regressions_table(rows)
    ))
}

/// `regression::docs`: docs/regressions.md is generated from the files; `GANTRY_BLESS=1`
/// rewrites it.
fn regressions_doc_trial() -> Trial {
    Trial::test("regression::docs", || {
        let committed = std::fs::read_to_string(REGRESSIONS_DOC)
            .map_err(|e| format!("{REGRESSIONS_DOC}: {e}"))?;
        let want = regressions_doc(&committed)?;
        if want == committed {
            return Ok(());
        }
        if std::env::var_os("GANTRY_BLESS").is_some() {
            std::fs::write(REGRESSIONS_DOC, want)?;
            return Ok(());
        }
        Err(format!(
            "{REGRESSIONS_DOC} differs from what cases/regressions/ makes it; rewrite it with \
             GANTRY_BLESS=1 target/debug/deps/scenarios-* regression::docs\nwant:\n{want}"
        )
        .into())
    })
}

/// `cases/invalid/<name>.yaml` must fail with the text of `<name>.err`.
fn invalid_trials() -> Vec<Trial> {
    fixtures(INVALID, "yaml")
        .into_iter()
        .map(|path| {
            let stem = path.file_stem().unwrap_or_default().display().to_string();
            Trial::test(format!("invalid::{stem}"), move || {
                check_invalid(&path, &stem)
            })
        })
        .collect()
}

fn check_invalid(path: &Path, stem: &str) -> Result<(), Failed> {
    let src = std::fs::read_to_string(path)?;
    let expected = std::fs::read_to_string(path.with_extension("err"))?;
    let shown = Path::new("cases/invalid").join(format!("{stem}.yaml"));
    match harness::scenario::parse_str(&shown, &src) {
        Ok(_) => Err("parsed, but it must fail".into()),
        Err(e) if e.to_string() == expected.trim_end() => Ok(()),
        Err(e) => Err(format!("expected:\n{}\ngot:\n{e}", expected.trim_end()).into()),
    }
}

fn main() {
    let args = Arguments::from_args();
    // `cargo test --workspace` has just built the binaries (admin and gateway have
    // integration tests, so cargo builds their bins); a nested `cargo build` here would
    // re-resolve features without dev-dependencies and rebuild dozens of crates.
    let shared = Shared::new(
        RunOptions {
            build: false,
            ..RunOptions::from_env(&ProcessEnv)
        },
        None,
    );
    let mut trials = scenario_trials(&shared, "", true);
    trials.extend(scenario_trials(&docker::shared(), "@docker", false));
    trials.extend(invalid_trials());
    trials.extend(planted_trials(&shared, Planted::Failing));
    trials.extend(planted_trials(&shared, Planted::Regression));
    trials.push(regressions_doc_trial());
    libtest_mimic::run(&args, trials).exit();
}
