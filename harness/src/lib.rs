//! gantry's e2e engine: runs scenario files (docs/scenarios.md) against a fresh admin +
//! gateway + echo upstreams per sync mode, and reports per case.
//!
//! Entry points: [`discover`] finds and parses scenario files, [`prepare`] builds and locates
//! the binaries, [`run_case`] runs one scenario under one mode, and [`run_paths`] does all of it
//! for the `gantry` CLI. Layers: [`scenario`] (parse, validate) → `topology` on a `backend`
//! → `runner` (with `probe` verdicts and `wait` convergence) → [`report`].
//!
//! In a test of your own, [`Gantry`] starts a topology and hands out its admin client and
//! gateway address (`harness/examples/own_test.rs`).

// The library surface: what a user's own test or tool writes against, documented and kept
// stable: the facade ([`Gantry`]) with the clients it hands out ([`client`]), the scenario
// format ([`scenario`]), running cases ([`run_paths`], [`run_case`] and their options, plan and
// results), the reports ([`report`]) with their errors ([`error`]), and the reference model of
// ShenYu's matching ([`reference`]), the check kinds the scenario and report types hold
// ([`judge`]). Everything else is `pub(crate)`; a handful of engine types stay reachable
// through these handles (a `Backend`'s run, a `Topology`'s services) without being named.
pub mod client;
pub mod conformance;
pub mod error;
pub mod judge;
pub mod reference;
pub mod report;
pub mod scenario;

/// The `gantry` command line, for the binary (`src/main.rs`): only [`cli::main`] is public.
#[doc(hidden)]
pub mod cli;

#[doc(hidden)]
pub mod internals;

// The engine's rooms, private: what of them belongs to the surface is re-exported below, and
// what the engine's own white-box tests reach is re-exported in `internals`.
mod backend;
mod bench;
mod compose;
mod converge;
mod fault;
mod gantry;
mod images;
mod json_path;
mod k8s;
mod lower;
mod options;
mod partition;
mod plan;
mod probe;
mod run;
mod run_mode;
mod runner;
mod sim;
mod target;
mod topology;
mod upstream;
mod wait;

use std::path::{Path, PathBuf};

pub use backend::docker::EngineCheck;
pub use backend::{Backend, BackendKind, ExternalTarget};
pub use error::{BackendError, RunError, ScenarioError};
pub use gantry::{Gantry, GantryBuilder};
pub use options::{Env, ProcessEnv, RunOptions, external_target};
pub use partition::{BadPartition, Partition, Split};
pub use plan::{NotRun, Planned, count_cases, not_run, plan};
pub use report::{CaseId, CaseOutcome, CaseResult, Event};
pub use run::{RunSetupError, case_result, prepare, run_paths};
pub use run_mode::RunMode;
pub use runner::{ExpectedSkip, expected_skips, run_case};
pub use scenario::{CaseFile, Scenario, discover};
/// The testcontainers the docker backend runs on, for a container of your own beside a
/// [`Gantry`]'s (same version, same engine).
pub use testcontainers;
pub use topology::Topology;
pub use wait::{Converged, WaitTimeout};

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
