//! Docker-backed trials: every scenario × sync mode again as `<name>@<mode>@docker`, on
//! containers of the `gantry/*:dev` images (built on first use when missing or stale).
//!
//! Without a Docker engine they are ignored and a line on stderr says why; with
//! `GANTRY_REQUIRE_DOCKER=1` they fail instead. The zookeeper and etcd modes run their server
//! as a container too (`gantry/zookeeper:dev`, `gantry/etcd:dev`); a mode the docker backend
//! cannot run would be ignored, with a note.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use harness::backend::docker::EngineCheck;
use harness::{Backend, BackendKind, ProcessEnv, RunOptions, Scenario};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

/// The docker backend, prepared (static build, images) once, on first use.
#[derive(Debug)]
struct Shared {
    opts: RunOptions,
    engine: EngineCheck,
    backend: OnceLock<Result<Backend, String>>,
}

impl Shared {
    fn backend(&self) -> Result<&Backend, Failed> {
        if let EngineCheck::Required(why) | EngineCheck::Skip(why) = &self.engine {
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

/// `<name>@<mode>@docker` for every scenario under `dir` that parses (parse failures are
/// already trials of their own).
pub(crate) fn trials(dir: &str) -> Vec<Trial> {
    let Ok(files) = harness::discover(&[PathBuf::from(dir)]) else {
        return Vec::new();
    };
    let require = std::env::var("GANTRY_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let engine = EngineCheck::probe(require);
    let ignored = matches!(engine, EngineCheck::Skip(_));
    if let EngineCheck::Skip(why) = &engine {
        eprintln!("note: {why}");
    }
    let shared = Arc::new(Shared {
        // The images come from a static build in target/static, which the engine runs (a
        // no-op when nothing changed), rebuilding only images whose binary changed; with
        // GANTRY_BIN_DIR set it only checks that they exist.
        opts: RunOptions {
            backend: BackendKind::Docker,
            ..RunOptions::from_env(&ProcessEnv)
        },
        engine,
        backend: OnceLock::new(),
    });
    let mut trials = Vec::new();
    let mut unsupported = Vec::new();
    let mut host_only = Vec::new();
    for s in files.into_iter().filter_map(|f| f.scenario.ok()) {
        let s = Arc::new(s);
        if !s.backends.contains(&BackendKind::Docker) {
            // Listed as ignored, never passed: the scenario does not run on containers.
            for mode in &s.modes {
                host_only.push(format!("{}@{mode}@docker", s.name));
                trials.push(
                    Trial::test(format!("{}@{mode}@docker", s.name), || Ok(()))
                        .with_ignored_flag(true),
                );
            }
            continue;
        }
        for mode in s.modes.clone() {
            let supported = harness::backend::docker::supports(mode);
            if !supported {
                unsupported.push(format!("{}@{mode}@docker", s.name));
            }
            let (s, shared) = (Arc::clone(&s), Arc::clone(&shared));
            trials.push(
                Trial::test(format!("{}@{mode}@docker", s.name), move || {
                    run(&shared, &s, mode)
                })
                .with_ignored_flag(ignored || !supported),
            );
        }
    }
    if !host_only.is_empty() {
        eprintln!(
            "note: ignored, their scenarios declare no docker backend: {}",
            host_only.join(", ")
        );
    }
    if !unsupported.is_empty() && !ignored {
        eprintln!(
            "note: the docker backend cannot run these modes; ignored: {}",
            unsupported.join(", ")
        );
    }
    trials
}
