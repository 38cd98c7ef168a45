//! One trial per scenario × sync mode, named `<name>@<mode>`, each on a fresh topology; a file
//! that does not parse is one failing trial `<file stem>@parse`. Files under `cases/invalid/`
//! must fail to parse with exactly the error in their sibling `.err` file. Files under
//! `cases/failing/` are scenarios that must fail when run (on the host backend, websocket):
//! each line of their `.err` file must appear in the error, so a runner that stopped reporting
//! a failure is seen failing; a first line `# gateway-args: …` starts the gateway with those
//! arguments (e.g. `--emulate-bug drop-deletes`). With a Docker engine, every scenario × mode
//! also runs on containers as `<name>@<mode>@docker`.

mod docker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use harness::{Backend, ProcessEnv, RunOptions, Scenario};
use libtest_mimic::{Arguments, Failed, Trial};
use model::SyncMode;

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
const INVALID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/invalid");
const FAILING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/failing");

/// Builds and locates the binaries once, on first use.
#[derive(Debug)]
struct Shared {
    opts: RunOptions,
    backend: OnceLock<Result<Backend, String>>,
}

impl Shared {
    fn backend(&self) -> Result<&Backend, Failed> {
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

fn scenario_trials(shared: &Arc<Shared>) -> Vec<Trial> {
    let files = match harness::discover(&[PathBuf::from(SCENARIOS)]) {
        Ok(files) => files,
        Err(e) => return vec![Trial::test("discover", move || Err(e.to_string().into()))],
    };
    let mut trials = Vec::new();
    let mut skipped_modes = Vec::new();
    for file in files {
        match file.scenario {
            Err(e) => trials.push(Trial::test(
                format!(
                    "{}@parse",
                    file.path.file_stem().unwrap_or_default().display()
                ),
                move || Err(e.to_string().into()),
            )),
            Ok(s) if !s.backends.contains(&harness::BackendKind::Host) => {
                // Listed, never passed: the scenario does not run on this backend.
                eprintln!(
                    "note: `{}@<mode>` trials are ignored: the scenario declares backends {:?}",
                    s.name, s.backends
                );
                for mode in &s.modes {
                    trials.push(
                        Trial::test(format!("{}@{mode}", s.name), || Ok(()))
                            .with_ignored_flag(true),
                    );
                }
            }
            Ok(s) => {
                let s = Arc::new(s);
                for mode in s.modes.clone() {
                    let (s, shared) = (Arc::clone(&s), Arc::clone(shared));
                    // A mode whose server (ZooKeeper, etcd) is missing is ignored, not failed,
                    // unless GANTRY_REQUIRE names it.
                    let skip = harness::backend::middleware::skip_reason(&ProcessEnv, mode);
                    if let Some(reason) = &skip
                        && !skipped_modes.contains(&mode)
                    {
                        skipped_modes.push(mode);
                        eprintln!("note: every `@{mode}` trial is ignored: {reason}");
                    }
                    trials.push(
                        Trial::test(format!("{}@{mode}", s.name), move || run(&shared, &s, mode))
                            .with_ignored_flag(skip.is_some()),
                    );
                }
            }
        }
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
        SyncMode::Websocket,
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
    let shared = Arc::new(Shared {
        // `cargo test --workspace` has just built the binaries (admin and gateway have
        // integration tests, so cargo builds their bins); a nested `cargo build` here would
        // re-resolve features without dev-dependencies and rebuild dozens of crates.
        opts: RunOptions {
            build: false,
            ..RunOptions::from_env(&ProcessEnv)
        },
        backend: OnceLock::new(),
    });
    let mut trials = scenario_trials(&shared);
    trials.extend(docker::trials(SCENARIOS));
    trials.extend(invalid_trials());
    trials.extend(failing_trials(&shared));
    libtest_mimic::run(&args, trials).exit();
}
