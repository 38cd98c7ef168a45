//! One trial per scenario × sync mode, named `<name>@<mode>`, each on a fresh topology; a file
//! that does not parse is one failing trial `<file stem>@parse`. Files under `cases/invalid/`
//! must fail to parse with exactly the error in their sibling `.err` file. Files under
//! `cases/failing/` are scenarios that must fail when run (on the host backend, in their first
//! mode):
//! each line of their `.err` file must appear in the error, so a runner that stopped reporting
//! a failure is seen failing; a first line `# gateway-args: …` starts the gateway with those
//! arguments (e.g. `--emulate-bug drop-deletes`). With a Docker engine, every scenario × mode
//! also runs on containers as `<name>@<mode>@docker`.

mod docker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use harness::backend::docker::EngineCheck;
use harness::{Backend, NotRun, Planned, ProcessEnv, RunOptions, Scenario};
use libtest_mimic::{Arguments, Failed, Trial};
use model::SyncMode;

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
const INVALID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/invalid");
const FAILING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/failing");

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

fn run(shared: &Shared, scenario: &Scenario, mode: SyncMode) -> Result<(), Failed> {
    let backend = shared.backend()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(harness::run_case(
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
    Ok(())
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
                let (s, shared) = (scenario.clone(), Arc::clone(shared));
                trials.push(
                    Trial::test(name, move || run(&shared, &s, mode)).with_ignored_flag(ignored),
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

/// `cases/failing/<name>.yaml` must fail when run, with every line of `<name>.err` in its
/// error.
fn failing_trials(shared: &Arc<Shared>) -> Vec<Trial> {
    fixtures(FAILING, "yaml")
        .into_iter()
        .map(|path| {
            let stem = path.file_stem().unwrap_or_default().display().to_string();
            let shared = Arc::clone(shared);
            Trial::test(format!("failing::{stem}"), move || {
                check_failing(&shared, &path)
            })
        })
        .collect()
}

fn check_failing(shared: &Shared, path: &Path) -> Result<(), Failed> {
    let src = std::fs::read_to_string(path)?;
    let expected = std::fs::read_to_string(path.with_extension("err"))?;
    let scenario = harness::scenario::parse_str(path, &src)?;
    let gateway_args: Vec<String> = src
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# gateway-args:"))
        .map(|a| a.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let backend = shared.backend()?.clone().with_gateway_args(gateway_args);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(harness::run_case(
        &scenario,
        scenario
            .modes
            .first()
            .copied()
            .unwrap_or(SyncMode::Websocket),
        &backend,
        &shared.opts,
        &|_| {},
    ));
    let error = match outcome {
        Ok(_) => return Err("the scenario passed, but it must fail".into()),
        Err(e) => e.to_string(),
    };
    let missing: Vec<&str> = expected
        .lines()
        .filter(|l| !l.trim().is_empty() && !error.contains(l.trim_end()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the failure does not say:\n{}\nit says:\n{error}",
            missing.join("\n")
        )
        .into())
    }
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
    trials.extend(failing_trials(&shared));
    libtest_mimic::run(&args, trials).exit();
}
